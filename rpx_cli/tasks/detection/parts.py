"""The three declared parts of ``rpx eval detection``: what an object is (a
:class:`SimilarityKind`), how a benchmark scores them (a :class:`DetectionProtocol`) and how
they are written on disk (a :class:`DetectionFormat`).

Each part is a small object in a module of its own (``kinds/``, ``protocols/``,
``formats/``), registered like a task (:func:`register_kind`, :func:`register_protocol`,
:func:`register_format`); every view (rows, pooled, confusion, COCO, LVIS, TIDE, curves,
worst frames) and every reader asks the run's parts and never compares a name. The flags
that choose them (``--iou-type``, ``--geometry``, ``--protocol``) take their choices from
the registries, and :func:`kind_of` / :func:`protocol_of` turn a run's parameters into
its parts. ``docs/architecture.md`` ("Detection as parts") walks through adding one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.boxes import Boxes
from rpx_cli.tasks.base import MetricInfo, Params

# the formats' part lives in its own module; named here too, with the other two
from rpx_cli.tasks.detection.format_part import DetectionFormat as DetectionFormat
from rpx_cli.tasks.detection.format_part import form_for as form_for
from rpx_cli.tasks.detection.format_part import object_attributes as object_attributes
from rpx_cli.tasks.detection.part_registry import Registry as Registry
from rpx_cli.tasks.stats import Stat

if TYPE_CHECKING:
    from rpx_cli.io.box_table import Frame, FrameTable
    from rpx_cli.io.coco_files import CocoFiles
    from rpx_cli.io.coco_objects import ObjectField
    from rpx_cli.io.objects import Objects
    from rpx_cli.ops.coco import CocoParams
    from rpx_cli.ops.geometry import Geometry

COCO_SECTION = "coco"  # dataset.coco: the COCO view (pycocotools), whatever the protocol
# the options only some protocols read (param -> flag): DetectionProtocol.options
PROTOCOL_OPTIONS = {"max_dets": "--max-dets", "ultralytics_version": "--ultralytics-version",
                    "oi_hierarchy": "--oi-hierarchy", "oi_image_labels": "--oi-image-labels"}


class SimilarityKind:
    """What an object is, and so how two are compared — one per ``--iou-type`` /
    ``--geometry`` (box, rotated, polygon, cuboid, mask, keypoints).

    A kind reads its objects from rpx's per-stem JSON (:meth:`read_rpx`) and names the
    field that holds them in a COCO file (:attr:`coco_field`, None when COCO cannot hold
    it); prepares each pair in the workers (:meth:`pair`: repairs, rasterised masks, per-frame
    intersections) into the frame the statistics keep (:meth:`statistics` says how a
    ``--shard`` part writes it); and gives the views, over every frame at once, the
    similarity they match on (:meth:`similarity`: IoU, or OKS). It says what the views and
    pages call its objects (:attr:`noun`), which COCO summary applies under ``--protocol
    coco`` (:attr:`coco_params`) and how it changes ``metric_info``."""

    name: ClassVar[str]
    rank: ClassVar[int]  # its place among the flags' choices
    iou_type: ClassVar[str]  # the --iou-type that chooses it
    geometry: ClassVar[str | None] = None  # and the --geometry (None: the iou type alone)
    title: ClassVar[str] = "boxes"  # what views name the run by ("detection · masks · LVIS")
    noun: ClassVar[str] = "box"  # "no GT {noun} in this area range", pages' labels
    measure: ClassVar[str] = "IoU"  # the similarity's name on pages (OKS for keypoints)
    # TIDE (--metrics errors) runs on it; else the refusal (a ParameterError's text)
    tide: ClassVar[bool] = False
    no_tide: ClassVar[str] = ("--metrics errors (TIDE) is for axis-aligned boxes; --geometry "
                              "{name} supports rows, pooled, confusion and coco")
    draws_frames: ClassVar[bool] = False  # the worst frames' boxes on the page
    # a detection's area for COCO's area ranges is the one read with it (pycocotools'
    # loadRes for masks and keypoints), not its shape's
    area_given: ClassVar[bool] = False
    coco_field: ClassVar[ObjectField | None] = None  # the COCO field holding it
    # the forms of a labelling format's objects it is built from (rpx_cli.io.objects: box,
    # quad, polygon, keypoints), the one it prefers first; () : no such format expresses it
    forms: ClassVar[tuple[str, ...]] = ()

    # --- parameters ------------------------------------------------------------------------

    def normalise(self, out: dict[str, Any], given: Mapping[str, Any]) -> None:
        """Record in ``out`` (the report's ``params``) what this kind's run depends on;
        ``given``: the kind's options as resolved (``geometry``, ``angle_unit``,
        ``oks_sigmas``). Default: nothing beyond the shared parameters."""

    def check(self, params: Params) -> None:
        """Refuse what no run of this kind can do: a missing extra, TIDE."""
        if "errors" in (params.get("metrics") or ()) and not self.tide:
            raise ParameterError(self.no_tide.format(name=self.name))

    def metric_info(self, info: dict[str, MetricInfo], params: Params) -> None:
        """Adjust the task's ``metric_info`` in place (default: as it is)."""

    # --- per pair ---------------------------------------------------------------------------

    def read_rpx(self, data: Any, path: str, *, prediction: bool, params: Params) -> Boxes:
        """One per-stem file of rpx's JSON (docs/detection.md) as :class:`Boxes`."""
        raise NotImplementedError

    def build(self, objects: Objects, path: str, *, prediction: bool, params: Params) -> Boxes:
        """A labelling format's objects (:class:`~rpx_cli.io.objects.Objects`, in one of
        :attr:`forms`) as this kind's :class:`Boxes` — the same shapes its rpx JSON reader
        makes of the same objects. Default: written as rpx's per-stem objects
        (:meth:`rpx_objects`) and read by :meth:`read_rpx`."""
        from rpx_cli.io.memory import InMemory

        document = InMemory(self.rpx_objects(objects, path))
        boxes = self.read_rpx(document, path, prediction=prediction, params=self.build_params(params))
        for key, column in objects.flags(prediction=prediction).items():
            if column is not None:
                setattr(boxes, key, column)
        return boxes

    def rpx_objects(self, objects: Objects, path: str) -> Any:
        """``objects`` as the per-stem JSON :meth:`read_rpx` reads (in memory)."""
        raise NotImplementedError

    def build_params(self, params: Params) -> Params:
        """The parameters :meth:`read_rpx` reads the documents of :meth:`rpx_objects` with."""
        return params

    def coco_shapes(self, boxes: Boxes, *, prediction: bool) -> list[dict[str, Any]]:
        """Each object's shape as a COCO file writes it (:attr:`coco_field`, and what goes
        with it): what ``rpx convert --to coco`` writes."""
        raise NotImplementedError(f"COCO files cannot hold what {self.flag} evaluates")

    def empty(self, gt: Boxes) -> Boxes:
        """A prediction with no object, against ``gt`` (``--missing empty``, a broken file)."""
        empty = Boxes.empty(with_scores=True)
        empty.shape = gt.shape[:0]
        return empty

    def statistics(self) -> tuple[Stat, ...]:
        """The per-pair statistics: the frame (and the kind's own counts)."""
        from rpx_cli.tasks.detection.frames import frame_stat

        return (frame_stat(),)

    def pair(self, pred: Boxes, gt: Boxes, params: Params, *, pred_path: str | None,
             gt_path: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """One pair made ready for the statistics: ``(statistics, row extras)``."""
        from rpx_cli.io.box_table import Frame

        return {"frame": Frame(gt, pred)}, {}

    def pair_all(self, table: FrameTable) -> dict[str, Any] | None:
        """What :meth:`pair` makes of every frame, for a whole set read at once (``table``,
        frames in pair order): the statistics' columns. None (the default): the kind does
        work per frame (repairs, rasterisation, size checks), so its frames are made pair
        by pair."""
        return None

    def aggregate(self, stats: Any) -> dict[str, Any]:
        """The kind's own ``aggregate`` keys over every frame (default: none)."""
        return {}

    def frame_objects(self, shapes: np.ndarray) -> dict[str, list]:
        """What the page draws of objects ``shapes`` among the worst frames (``--keep-worst``):
        ``box`` (``[x, y, w, h]`` px) and what the kind adds (default: the shapes as boxes)."""
        return {"box": np.asarray(shapes, np.float64).tolist()}

    def frame_skeleton(self, params: Params) -> list[list[int]] | None:
        """The pairs of point indices the page joins by lines (keypoints), or None."""
        return None

    # --- over every frame --------------------------------------------------------------------

    def similarity(self, table: FrameTable, frames: list[Frame] | FrameTable,
                   params: Params) -> tuple[Geometry, FrameTable]:
        """What the views compare objects with, and the table they see (objects as ids
        where the similarity looks intersections up)."""
        raise NotImplementedError

    def gt_ignore(self, table: FrameTable) -> np.ndarray | None:
        """GT ignored though not crowd (keypoints without a visible point); None: none."""
        return None

    @property
    def coco_params(self) -> CocoParams:
        """pycocotools' summary of this kind under ``--protocol coco``."""
        from rpx_cli.ops.coco import BOX_PARAMS

        return BOX_PARAMS

    def check_files(self, coco: CocoFiles, gt_file: str, dt_file: str, params: Params) -> None:
        """COCO files read with :attr:`coco_field`, made ready in place (masks rasterised)."""

    def prepare_coco_gt(self) -> Callable[[Any, np.ndarray | None, str], Callable[[], Any]] | None:
        """The part of :meth:`check_files`' work on a COCO GT's shapes that may start as soon
        as the GT file is read (``load_coco``'s ``prepare_gt``: it returns the function that
        finishes it); None: none."""
        return None

    @property
    def flag(self) -> str:
        """The flag that chooses it, as messages name it."""
        return f"--iou-type {self.iou_type}" if self.geometry is None else f"--geometry {self.geometry}"


class DetectionProtocol:
    """How a benchmark scores detections — one per ``--protocol`` (coco, lvis, voc07, voc,
    dota, ultralytics): which objects take part (:meth:`frames`), how its AP view is
    computed (:meth:`evaluate`, written under ``dataset.<section>``: ``dataset.coco`` for
    COCO and LVIS, ``dataset.voc07`` …), its keys and headline, what ``metric_info`` says
    of them, and what it needs of the files (:attr:`needs`).

    The ``--metrics`` family of its view is named like its section; a protocol whose section
    is not COCO's runs its own view by default and the COCO view only when ``--metrics``
    names ``coco`` (:meth:`families`)."""

    name: ClassVar[str]
    rank: ClassVar[int]
    section: ClassVar[str] = "coco"  # dataset.<section>: where evaluate's figures go
    # the figures of dataset.<section> a reader looks at first (the task adds its own)
    headline: ClassVar[tuple[str, ...]] = ("AP", "AP50", "AP75")
    # pages: the view's title ("PASCAL VOC 2007 (11-point AP)"), what its curves are drawn at
    title: ClassVar[str] = ""
    label: ClassVar[str] = ""  # what views name the run by ("detection · masks · LVIS")
    # a view of its own (section not COCO's): the match its curves are drawn at, the
    # per-class AP its pages chart
    curves_at: ClassVar[str] = ""
    class_ap: ClassVar[str] = "AP"
    iou_types: ClassVar[tuple[str, ...] | None] = None  # the kinds it scores (None: every one)
    kinds: ClassVar[tuple[str, ...] | None] = None  # ... or by kind name (None: by iou type)
    iou_types_text: ClassVar[str] = ""  # what it scores, as its refusal says
    tide: ClassVar[bool] = True
    no_tide: ClassVar[str] = ""
    # its view is COCOeval's over each image's matches and nothing else (no per-image data
    # of its own): `rpx compare` pools a resample's images without summarising it anew
    # (tasks/detection/resample.py)
    pools_image_matches: ClassVar[bool] = False
    options: ClassVar[tuple[str, ...]] = ()  # the PROTOCOL_OPTIONS it reads
    needs: ClassVar[frozenset[str]] = frozenset()  # what a format must provide
    needs_text: ClassVar[str] = ""  # why, when a format does not
    memory_text: ClassVar[str] = ""  # why, to an Evaluator (samples in memory)
    # it scores group-of boxes (Open Images' IsGroupOf; Boxes.group); without it a format
    # skips them and counts them (inexpressible is a counted skip: docs/formats.md)
    group_of: ClassVar[bool] = False

    def normalise(self, out: dict[str, Any], given: Mapping[str, Any]) -> None:
        """Record the protocol options (``given``: :data:`PROTOCOL_OPTIONS` as resolved,
        None where not given) in ``out``: each given one (:meth:`check` refuses those that
        are not the protocol's own, :attr:`options`)."""
        for name, value in given.items():
            if value is not None:
                out[name] = value

    def check(self, params: Params, kind: SimilarityKind) -> None:
        """Refuse a kind the protocol does not score, another protocol's option, and TIDE
        where it has none."""
        for name, flag in PROTOCOL_OPTIONS.items():
            if name not in self.options and params.get(name) is not None:
                owners = [part.name for part in PROTOCOLS.values() if name in part.options]
                raise ParameterError(f"{flag} is an option of --protocol {' or '.join(owners)}, "
                                     f"not of --protocol {self.name}")
        if (self.iou_types is not None and kind.iou_type not in self.iou_types) or \
                (self.kinds is not None and kind.name not in self.kinds):
            raise ParameterError(f"--protocol {self.name} evaluates {self.iou_types_text}")
        if "errors" in (params.get("metrics") or ()) and not self.tide:
            raise ParameterError(self.no_tide)

    def metric_info(self, info: dict[str, MetricInfo], params: Params) -> None:
        """Adjust the task's ``metric_info`` in place."""

    def check_format(self, fmt: DetectionFormat, path: str) -> None:
        """Refuse a format that lacks what the protocol needs (an input error naming it)."""
        if not self.needs <= fmt.provides:
            raise InputError(self.needs_text, path=path)

    def check_memory(self, fmt: DetectionFormat) -> None:
        """Refuse samples given in memory in ``fmt`` when it lacks what the protocol needs:
        the ``Evaluator``'s :class:`ParameterError` (:attr:`memory_text`), at construction."""
        if not self.needs <= fmt.provides:
            raise ParameterError(self.memory_text or self.needs_text)

    def cap(self, table: FrameTable, params: Params) -> FrameTable:
        """The detections that exist for the protocol, as they are read (default: all)."""
        return table

    def frames(self, table: FrameTable, params: Params) -> FrameTable:
        """The objects every view sees (default: :meth:`cap`)."""
        return self.cap(table, params)

    def file_params(self, coco: CocoFiles, gt_file: str) -> dict[str, Any]:
        """What the protocol reads of COCO files into ``params`` (default: nothing)."""
        return {}

    def coco_params(self, kind: SimilarityKind, params: Params) -> CocoParams:
        """The COCO-style summary of ``dataset.coco`` under it (its maxDets are the pages'):
        the kind's (:attr:`SimilarityKind.coco_params`) unless the protocol fixes its own."""
        return kind.coco_params

    def evaluate(self, table: FrameTable, similarity: Geometry, kind: SimilarityKind,
                 params: Params, gt_ignore: np.ndarray | None = None) -> dict[str, Any]:
        """``dataset.<section>``: its AP figures, per class, curves (``gt_ignore``: GT
        ignored though not crowd — the kind's and the files' — or None)."""
        raise NotImplementedError

    def warnings(self, params: Params) -> list[str]:
        """What the report's ``warnings`` say of a run under it (default: nothing)."""
        return []

    def families(self, names: tuple[str, ...],
                 optional: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(the --metrics families a run under it can choose, those it runs by default)``
        out of the task's ``names`` (every protocol's section among them) and ``optional``
        (those no run does by default): the other protocols' sections are not its to run,
        and COCO's view is a default only where it is the protocol's own."""
        others = set(PROTOCOL_SECTIONS.values()) - {self.section, COCO_SECTION}
        available = tuple(name for name in names if name not in others)
        left_out = {*optional, *({COCO_SECTION} - {self.section})}
        return available, tuple(name for name in available if name not in left_out)


# --- the registries -----------------------------------------------------------------------------

# Every part by name, in rank order — the module of that name under ``kinds/``,
# ``protocols/``, ``formats/`` — with what the command line asks of a part before the run
# has chosen it: a kind's ``--iou-type`` and ``--geometry`` (None: the iou type alone), a
# protocol's report section. A run imports only the parts it asks for (the others' readers
# and views cost a COCO run ~35 ms of its start-up: issue 43; part_registry.py);
# tests/test_detection_parts.py holds these equal to the parts' own attributes and to the
# folders' modules.
KIND_CHOICES: dict[str, tuple[str, str | None]] = {
    "box": ("bbox", "box"), "rotated": ("bbox", "rotated"), "polygon": ("bbox", "polygon"),
    "cuboid": ("bbox", "cuboid"), "mask": ("segm", None), "keypoints": ("keypoints", None)}
PROTOCOL_SECTIONS: dict[str, str] = {
    "coco": COCO_SECTION, "lvis": COCO_SECTION, "voc07": "voc07", "voc": "voc", "dota": "dota",
    "ultralytics": "ultralytics", "openimages": "openimages"}
FORMAT_NAMES = ("rpx", "coco", "yolo", "voc", "kitti", "dota", "labelme", "cvat", "openimages")

K = TypeVar("K", bound=type)


KINDS: Registry[SimilarityKind] = Registry("kinds", KIND_CHOICES)
PROTOCOLS: Registry[DetectionProtocol] = Registry("protocols", PROTOCOL_SECTIONS)
FORMATS: Registry[DetectionFormat] = Registry("formats", FORMAT_NAMES)


def register_kind(cls: K) -> K:
    """Class decorator: a similarity kind (its ``--iou-type``/``--geometry`` choices too)."""
    KINDS.add(cls)
    return cls


def register_protocol(cls: K) -> K:
    """Class decorator: a ``--protocol``."""
    PROTOCOLS.add(cls)
    return cls


def register_format(cls: K) -> K:
    """Class decorator: a detection file format."""
    FORMATS.add(cls)
    return cls


def load_parts() -> None:
    """Import every part (each registers itself): what a run does for the parts it uses."""
    for registry in (KINDS, PROTOCOLS, FORMATS):
        for name in registry:
            registry[name]


# the flags' choices, in the parts' ranks; the defaults are the first (boxes, COCO)
IOU_TYPES = tuple(dict.fromkeys(iou_type for iou_type, _ in KIND_CHOICES.values()))
GEOMETRIES = tuple(geometry for _, geometry in KIND_CHOICES.values() if geometry is not None)
DEFAULT_IOU_TYPE, DEFAULT_GEOMETRY = IOU_TYPES[0], GEOMETRIES[0]
DEFAULT_PROTOCOL = next(iter(PROTOCOLS))


def kind_of(params: Params) -> SimilarityKind:
    """The run's similarity kind: the one its ``--iou-type`` chooses, or among several (boxes
    of each geometry) the one its ``--geometry`` chooses. A geometry other than the default
    with an iou type of a single kind (masks, keypoints) is a :class:`ParameterError`."""
    iou_type = params.get("iou_type", DEFAULT_IOU_TYPE)
    geometry = params.get("geometry", DEFAULT_GEOMETRY)
    candidates = [name for name, (its_type, _) in KIND_CHOICES.items() if its_type == iou_type]
    if not candidates:
        raise ParameterError(f"--iou-type: {iou_type!r} is not one of {', '.join(IOU_TYPES)}")
    if len(candidates) == 1 and KIND_CHOICES[candidates[0]][1] is None:
        if geometry != DEFAULT_GEOMETRY:
            raise ParameterError(f"--iou-type {iou_type} and --geometry {geometry} do not go "
                                 "together: masks and keypoints are their own geometry")
        return KINDS[candidates[0]]
    for name in candidates:
        if KIND_CHOICES[name][1] == geometry:
            return KINDS[name]
    raise ParameterError(f"--geometry: {geometry!r} is not one of {', '.join(GEOMETRIES)}")


def protocol_of(params: Params) -> DetectionProtocol:
    """The run's ``--protocol``."""
    name = params.get("protocol", DEFAULT_PROTOCOL)
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ParameterError(f"--protocol: {name!r} is not one of {', '.join(PROTOCOLS)}") from None


def folder_format(params: Params, role: str) -> DetectionFormat:
    """The format of one side's folder (``role``: ``gt`` or ``pred``): the one
    ``params[role + "_format"]`` names, else — not given, or ``auto`` not settled from a
    folder (a reader called on one file) — the first format read from folders (rpx's)."""
    fmt = FORMATS.get(params.get(f"{role}_format"))
    if fmt is not None:
        return fmt
    return next(fmt for fmt in FORMATS.values() if fmt.suffixes)


def files_format(files: Mapping[str, Any]) -> DetectionFormat:
    """The format whose files ``files`` (option name -> path) are."""
    for fmt in FORMATS.values():
        if fmt.file_options and set(fmt.file_options) == set(files):
            return fmt
    raise ParameterError(f"no detection format reads the files {', '.join(sorted(files))}")
