"""``rpx eval detection``: three views of the same detections, each labelled.

- **Rows (RPX)** and ``dataset.pooled``: at ``--conf-threshold`` (a detection is kept when
  score >= threshold) and ``--iou-threshold``, detections in descending score order (stable
  for ties) each take the best-IoU unmatched GT of the same label, accepted when
  IoU >= threshold (ties: the last GT, as pycocotools). Rows: ``precision``, ``recall``,
  ``f1``, ``tp``, ``fp``, ``fn``, ``n_gt``, ``n_pred``; both empty → 1/1/1, predictions but
  no GT → 0/0/0, GT but no prediction → 0/0/0. ``aggregate`` is the per-image mean (macro),
  ``dataset.pooled`` the same figures from summed counts (micro).
- **``dataset.confusion`` (Aquarium)**: after the confidence threshold, per image a
  class-agnostic optimal one-to-one matching maximising total IoU
  (``scipy.optimize.linear_sum_assignment``); pairs below the IoU threshold are unmatched;
  unmatched GT → (class, background), unmatched detection → (background, class). Per class
  precision = M[c,c] / column sum, recall = M[c,c] / row sum, F1; 0/0 = 0.
- **``dataset.coco``**: pycocotools' COCOeval (bbox, 10 IoU thresholds, 101 recall points,
  maxDets 1/10/100, areas from the GT ``area`` field or the box area) on every detection —
  no confidence threshold — with images numbered 1..N in stem order. ``coco.curves`` keeps
  the precision/recall curves behind AP (pycocotools' ``eval["precision"]`` and
  ``eval["scores"]`` at area all, maxDets 100) so users can plot them.
- **``dataset.pooled.by_confidence``**: the pooled P/R/F1 at 101 confidence thresholds
  0, 0.01, ..., 1 (the same matching as ``pooled``; greedy matching by descending score
  never changes for the detections above a threshold, so each point is exactly what
  ``--conf-threshold`` at that value gives).
- **``dataset.errors``** (``--metrics errors``, not run by default): TIDE's breakdown of
  AP50 by error type, equal to tidecv (``rpx_cli.ops.tide``).

Three declared parts (:mod:`rpx_cli.tasks.detection.parts`) make a run, and every view
asks them: the *similarity kind* (``--iou-type``/``--geometry``: boxes, rotated boxes,
polygons, cuboids, masks, keypoints; ``kinds/``) says how objects are read and compared
(IoU or OKS) in every view; the *protocol* (``--protocol coco|lvis``; ``protocols/``) which
objects take part and how the AP view is computed; the *format* (rpx's per-stem JSON, COCO
files; ``formats/``) how the files become objects.

Crowd GT (``iscrowd``) is honoured in every view as COCO does: a detection that lands on
a crowd region of its class (intersection over its own area >= the IoU threshold) and matches no
regular GT is ignored — neither a true nor a false positive — and crowd regions are never
missed. A crowd region whose scope is every class (KITTI's ``DontCare``,
``Boxes.every_class``) excuses a detection of any class: each pair makes it one crowd region
per class its detections have (``Boxes.scoped``), so every view honours it unchanged.

A frame whose GT file is empty is a labelled empty frame (its detections are false
positives) unless ``--skip-empty-gt``, which leaves such frames out of rows, pooled and
confusion (not COCO), as Aquarium does by default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.boxes import Boxes, apply_class_map
from rpx_cli.io.discover import Pair
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.shapes import ANGLE_UNITS
from rpx_cli.io.skipped import skip_note
from rpx_cli.io.values import area_problem
from rpx_cli.ops.coco import STAT_NAMES
from rpx_cli.ops.tide import ERROR_TYPES
from rpx_cli.params.parsers import LABEL_MAP, parse_image_size, parse_kpt_shape, parse_ultralytics_version
from rpx_cli.params.parsers import sigmas as parse_sigmas
from rpx_cli.params.pictures import IMAGES_DIR, KEEP_WORST
from rpx_cli.tasks.base import (
    Evaluated,
    FileInput,
    MetricInfo,
    Option,
    PairsRead,
    Params,
    Sample,
    SetInput,
    Task,
    Warn,
    probability,
)
from rpx_cli.tasks.detection import bulk, sets
from rpx_cli.tasks.detection.params import check, check_parts, normalise
from rpx_cli.tasks.detection.parts import (
    COCO_SECTION,
    DEFAULT_GEOMETRY,
    DEFAULT_IOU_TYPE,
    DEFAULT_PROTOCOL,
    FORMATS,
    GEOMETRIES,
    IOU_TYPES,
    PROTOCOL_SECTIONS,
    PROTOCOLS,
    files_format,
    folder_format,
    kind_of,
    protocol_of,
)
from rpx_cli.tasks.detection.sets import CLASS_MAP_EMPTIED
from rpx_cli.tasks.detection.sniff import AUTO, settle_formats
from rpx_cli.tasks.detection.summary import ROW_KEYS, summarize_frames
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

_NUMBERS = {"type": "array", "items": {"type": ["number", "null"]}}
_COUNTS = {"type": "array", "items": {"type": "integer", "minimum": 0}}
_CURVE = {"type": "object", "required": ["precision"],
          "properties": {"precision": _NUMBERS, "score": _NUMBERS}}


# the operating point's figures, after the protocol's in every headline
SHARED_HEADLINE = ("dataset.pooled.precision", "dataset.pooled.recall", "dataset.pooled.f1",
                   "aggregate.f1", "dataset.errors.ap50")


def _content(value: Any) -> Any:
    """A file's bytes, or the in-memory document ``Evaluator.update`` passed."""
    return value.tobytes() if hasattr(value, "tobytes") else value


@register_task
class Detection(Task):
    name = "detection"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("precision", "recall", "f1", "tp", "fp", "fn", "n_gt", "n_pred"),
              "aggregate": ("precision", "recall", "f1", "n_frames"),
              "dataset": ("", "pooled", "confusion", "coco")}
    primary_metric = "f1"
    headline = ("dataset.coco.AP", "dataset.coco.AP50", "dataset.coco.AP75", *SHARED_HEADLINE)
    page_view = "pr_curves"
    suffixes = (".json",)
    inputs_may_be_files = True  # a CVAT XML, an Open Images CSV
    help = ("Object detection: per-image P/R/F1 at an operating point, the Aquarium confusion "
            "matrix, and COCO AP/AR equal to pycocotools.")
    formats = (
        'One JSON per stem (GT without "score"), a list of objects or columns:\n'
        '  [{"bbox": [x1, y1, x2, y2], "label": "cup", "score": 0.9}, ...]\n'
        '  {"boxes": [[x1, y1, x2, y2], ...], "labels": ["cup", ...], "scores": [0.9, ...]}\n'
        'Labels are strings or ints; --box-format xywh reads [x, y, w, h]; GT may add "iscrowd".\n'
        'Or two COCO files instead of the folders: --coco-gt instances.json --coco-dt results.json.\n'
        '--geometry rotated: "bbox": [xc, yc, w, h, angle] (detectron2; --angle-unit deg|rad).\n'
        '--geometry polygon: "polygons": [ring, ...] or [{"exterior": ring, "holes": [ring]}, ...],\n'
        '  a ring [[x, y], ...]; needs shapely (pip install \'rpx-eval[geometry]\').\n'
        '--geometry cuboid: "center": [x, y, z], "size": [l, w, h], "yaw" (rad) or "rotation" [w,x,y,z].\n'
        '--iou-type segm: {"size": [h, w], "objects": [{"segmentation": polygons or RLE, "label",\n'
        '  "score"}, ...]} or COCO files (needs pycocotools: pip install \'rpx-eval[coco]\').\n'
        '--iou-type keypoints: objects with "keypoints": [x1, y1, v1, ...] (GT: "bbox", "area",\n'
        '  "num_keypoints" optional) or COCO files; --oks-sigmas for skeletons other than COCO\'s.\n'
        '--protocol lvis: LVIS files (--coco-gt/--coco-dt; categories need "frequency").\n'
        'Labelling tools\' files where they lie (auto by default; docs/formats.md): YOLO, VOC XML\n'
        '  and results files, KITTI, DOTA and Task1, LabelMe, a CVAT XML or an Open Images CSV\n'
        '  (a file of the whole set: --gt-dir annotations.xml).'
    )
    example = (
        'rpx eval detection --pred-dir fixtures/detection/shelf/pred \\\n'
        '    --gt-dir fixtures/detection/shelf/gt --conf-threshold 0.4 | jq .dataset.pooled\n'
        'rpx eval detection --coco-gt fixtures/detection/coco/instances.json \\\n'
        '    --coco-dt fixtures/detection/coco/results.json | jq .dataset.coco.AP50\n'
        'rpx eval detection --geometry rotated --pred-dir fixtures/detection/aerial/pred \\\n'
        '    --gt-dir fixtures/detection/aerial/gt | jq .dataset.coco.AP\n'
        'rpx eval detection --iou-type segm --coco-gt fixtures/detection/masks/instances.json \\\n'
        '    --coco-dt fixtures/detection/masks/results.json | jq .dataset.coco.AP\n'
        'rpx eval detection --iou-type keypoints --oks-sigmas 0.25,0.25,0.5,0.5,0.35 \\\n'
        '    --box-format xywh --pred-dir fixtures/detection/hands/pred \\\n'
        '    --gt-dir fixtures/detection/hands/gt | jq .dataset.coco.AP\n'
        'rpx eval detection --protocol lvis --coco-gt fixtures/detection/lvis/lvis_val.json \\\n'
        '    --coco-dt fixtures/detection/lvis/results.json | jq .dataset.coco.APr'
    )
    metrics = {
        "precision": MetricInfo("higher", "TP / (TP + FP) at the operating point (IoU >= threshold, "
                                "score >= conf threshold, greedy by descending score, stable ties)"),
        "recall": MetricInfo("higher", "TP / (TP + FN) at the operating point"),
        "f1": MetricInfo("higher", "2PR / (P + R); both empty = 1, 0/0 = 0"),
        "tp": MetricInfo("higher", "true positives"),
        "fp": MetricInfo("lower", "false positives"),
        "fn": MetricInfo("lower", "missed GT boxes"),
        "n_gt": MetricInfo("none", "GT boxes (crowd regions excluded)"),
        "n_pred": MetricInfo("none", "detections at or above the confidence threshold"),
        **{name: MetricInfo("higher", "pycocotools COCOeval bbox: 10 IoU thresholds .50:.05:.95, "
                            "101-point interpolated precision, maxDets 1/10/100, areas from the GT "
                            "'area' field or the box") for name in STAT_NAMES},
        "AP": MetricInfo("higher", "COCO AP (and per class): pycocotools COCOeval bbox, "
                         "IoU .50:.05:.95, 101 recall points, maxDets 100"),
        **{name: MetricInfo("lower", f"TIDE dAP of {name} errors at IoU 0.5 (tidecv, 0-1 scale): "
                            "the AP50 gained by fixing them") for name in ERROR_TYPES},
        "ap50": MetricInfo("higher", "TIDE's own AP at IoU 0.5 (tidecv's matching and means, 0-1), "
                           "the base of dataset.errors"),
    }
    # the views, then each protocol's own (dataset.<section>: coco for COCO and LVIS)
    families = {"rows": (ROW_KEYS, ()), "pooled": ((), ("dataset.pooled",)),
                "confusion": ((), ("dataset.confusion",)), COCO_SECTION: ((), ("dataset.coco",)),
                **{section: ((), (f"dataset.{section}",)) for section in PROTOCOL_SECTIONS.values()},
                "errors": ((), ("dataset.errors",))}
    optional_families = ("errors",)
    report_properties = {"dataset": {"type": "object", "properties": {
        "pooled": {"type": "object", "properties": {"by_confidence": {
            "type": "object", "description": "Pooled P/R/F1 at conf_threshold 0, 0.01, ..., 1.",
            "required": ["conf_threshold", "tp", "fp", "precision", "recall", "f1"],
            "properties": {"conf_threshold": _NUMBERS, "tp": _COUNTS, "fp": _COUNTS,
                           "precision": _NUMBERS, "recall": _NUMBERS, "f1": _NUMBERS}}}},
        "coco": {"type": "object", "properties": {"curves": {
            "type": "object", "description": "pycocotools' precision (and score) at each of the "
            "101 recall points, area all, maxDets 100; null where pycocotools has -1.",
            "required": ["recall"],
            "properties": {"recall": _NUMBERS},
            "additionalProperties": {"type": "object", "properties": {
                "overall": _CURVE, "per_class": {"type": "object", "additionalProperties": _CURVE}}}}}},
        "errors": {"type": "object", "description": "TIDE: AP50 gained by fixing each error type.",
                   "required": ["ap50", "counts"],
                   "properties": {"counts": {"type": "object", "additionalProperties": {
                       "type": "integer", "minimum": 0}}},
                   "additionalProperties": {"type": ["number", "null", "object"]}},
    }}}
    options = (
        Option("box_format", "--box-format", "choice", "xyxy", choices=("xyxy", "xywh"),
               help="Boxes in per-stem files are [x1, y1, x2, y2] or [x, y, w, h]."),
        Option("geometry", "--geometry", "choice", DEFAULT_GEOMETRY, choices=GEOMETRIES,
               help="What an object is, and so how IoU is computed in every view: axis-aligned "
                    "boxes, rotated boxes [xc, yc, w, h, angle] (detectron2's convention), "
                    "multi-polygons (needs rpx-eval[geometry]) or cuboids (Birds-Eye-View "
                    "footprint IoU)."),
        Option("angle_unit", "--angle-unit", "choice", "deg", choices=ANGLE_UNITS,
               help="Unit of the rotated boxes' angle (--geometry rotated)."),
        Option("iou_type", "--iou-type", "choice", DEFAULT_IOU_TYPE, choices=IOU_TYPES,
               help="pycocotools' iouType: boxes, instance masks (polygons or RLE; mask IoU; needs "
                    "rpx-eval[coco]) or keypoints (OKS, maxDets 20), in every view."),
        Option("oks_sigmas", "--oks-sigmas", "parsed", None, parse=parse_sigmas,
               metavar="FILE|LIST",
               help="Per-keypoint OKS sigmas (--iou-type keypoints) as a comma list or a file; "
                    "default COCO's 17 person keypoints."),
        Option("protocol", "--protocol", "choice", DEFAULT_PROTOCOL, choices=tuple(PROTOCOLS),
               help="The benchmark's own AP (docs/protocols.md), under dataset.<protocol>: "
                    "COCO as pycocotools (dataset.coco), LVIS' federated evaluation (LVISEval "
                    "0.5.3, LVIS files; dataset.coco), PASCAL VOC 2007 11-point or 2010+ "
                    "all-point AP (the devkit's voc_eval), DOTA task 1 (polygons), what "
                    "`yolo val` prints (Ultralytics), or the Open Images challenge metric "
                    "(hotcoco's oid_style)."),
        Option("max_dets", "--max-dets", "int", None, minimum=1, metavar="N",
               help="--protocol lvis: detections kept per image, highest scores first "
                    "(default 300)."),
        Option("ultralytics_version", "--ultralytics-version", "parsed", None,
               parse=parse_ultralytics_version, metavar="VERSION",
               help="--protocol ultralytics: the Ultralytics release whose `yolo val` rules to "
                    "follow (default 8.3.0, the YOLOv8/YOLO11 releases': matching by IoU, AP "
                    "ramping to recall 1; 8.4.37 closes the curve at the last recall, 8.4.176 "
                    "matches by confidence)."),
        Option("oi_hierarchy", "--oi-hierarchy", "file", None, metavar="FILE",
               help="--protocol openimages: the challenge's class hierarchy JSON (LabelName, "
                    "Subcategory): GT and predictions count for every ancestor class too."),
        Option("oi_image_labels", "--oi-image-labels", "file", None, metavar="FILE",
               help="--protocol openimages: image-level labels CSV (ImageID,Source,LabelName,"
                    "Confidence: 1 verified present, 0 verified absent); only an image's "
                    "verified classes are scored on it (else every class, with a warning)."),
        Option("iou_threshold", "--iou-threshold", "parsed", 0.5, parse=probability("IoU threshold"),
               metavar="T", help="IoU a match needs (>=), for rows, pooled and confusion."),
        Option("conf_threshold", "--conf-threshold", "parsed", 0.0,
               parse=probability("confidence threshold"), metavar="S",
               help="Keep detections with score >= S for rows, pooled and confusion (COCO AP "
                    "always uses every detection)."),
        Option("class_map", "--class-map", "file", None, metavar="FILE", recorded=LABEL_MAP,
               help="JSON {raw label: evaluated label, or null to drop}, applied to GT and "
                    "predictions first."),
        Option("skip_empty_gt", "--skip-empty-gt", "flag", False,
               help="Leave frames with an empty GT file out of rows, pooled and confusion "
                    "(Aquarium's default); COCO always counts them."),
        KEEP_WORST, IMAGES_DIR,
        Option("pred_format", "--pred-format", "choice", AUTO, choices=(AUTO, *FORMATS),
               help="The predictions' file format (docs/formats.md): auto decides from the "
                    "files' suffixes and first bytes and records the decision in params."),
        Option("gt_format", "--gt-format", "choice", AUTO, choices=(AUTO, *FORMATS),
               help="The ground truth's file format, as --pred-format (each side its own)."),
        Option("image_size", "--image-size", "parsed", None, parse=parse_image_size,
               metavar="W,H",
               help="Every image's size in pixels, for normalised formats (YOLO) and masks of "
                    "formats that give no size (else --images-dir: image headers by stem)."),
        Option("data_yaml", "--data-yaml", "file", None, metavar="FILE",
               help="Ultralytics data.yaml: the class names ('names') and kpt_shape of YOLO "
                    "files."),
        Option("class_names", "--class-names", "file", None, metavar="FILE",
               help="Class names of YOLO class ids (one per line or a JSON list), instead of "
                    "--data-yaml's."),
        Option("kpt_shape", "--kpt-shape", "parsed", None, parse=parse_kpt_shape,
               metavar="K,2|K,3", help="YOLO pose keypoints per object and values per point "
                                       "(else data.yaml's kpt_shape)."),
        Option("oi_class_descriptions", "--oi-class-descriptions", "file", None, metavar="FILE",
               help="Open Images class-descriptions CSV (LabelName,DisplayName): the names of "
                    "the class ids of Open Images CSVs (else the ids are the labels)."),
    )
    # the files of the formats that hold every image (COCO's instances and results)
    file_inputs = (
        Option("coco_gt", "--coco-gt", "file", None, urls=True, metavar="FILE",
               help="COCO instances JSON (images, annotations, categories) instead of --gt-dir; "
                    "stems come from file_name."),
        Option("coco_dt", "--coco-dt", "file", None, urls=True, metavar="FILE",
               help="COCO results JSON [{image_id, category_id, bbox, score}] instead of "
                    "--pred-dir."),
    )

    def family_choice(self, params: Params) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The protocol's view runs by default, the other protocols' are not this run's to
        choose (COCO's view is one family more under the others)."""
        return protocol_of(params).families(tuple(self.families), self.optional_families)

    def accepts_family(self, family: str, params: Params) -> bool:
        """One of the protocol's families that the run's parts do not refuse (TIDE is not
        for keypoints, nor under LVIS)."""
        try:
            check_parts({**params, "metrics": [family]})
        except ParameterError:
            return False
        return family in self.family_choice(params)[0]

    def evaluated(self, params: Mapping[str, Any]) -> Evaluated:
        """``detection · <the kind's title> · <the protocol's label>``, the kind's measure
        (IoU, OKS), the maxDets of ``dataset.coco`` (the COCO view: the protocol's own,
        else COCO's) and the protocol's own view when it has one (``dataset.voc07``)."""
        try:
            kind, protocol = kind_of(params), protocol_of(params)
        except ParameterError:  # a hand-edited report: the task's name alone
            return Evaluated(self.name)
        own = protocol.section != COCO_SECTION
        view = PROTOCOLS[DEFAULT_PROTOCOL] if own else protocol
        return Evaluated(f"{self.name} · {kind.title} · {protocol.label}", kind.measure,
                         view.coco_params(kind, params).max_dets[-1],
                         view=protocol.section if own else None, view_label=protocol.label,
                         view_at=protocol.curves_at, view_ap=protocol.class_ap)

    def headline_for(self, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The protocol's headline figures (``dataset.<section>.<figure>``), then the
        operating point's."""
        protocol = PROTOCOLS.get(params.get("protocol", DEFAULT_PROTOCOL)) or PROTOCOLS[DEFAULT_PROTOCOL]
        return (*(f"dataset.{protocol.section}.{figure}" for figure in protocol.headline),
                *SHARED_HEADLINE)

    def headline_variants(self) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        return [({"protocol": name}, self.headline_for({"protocol": name})) for name in PROTOCOLS]

    def normalise_params(self, params: Params) -> dict[str, Any]:
        """``geometry`` is recorded unless it is ``box`` (so box reports stay as they were),
        ``angle_unit`` only for rotated boxes, ``box_format`` only for boxes."""
        return normalise(params)

    def validate_params(self, params: Params) -> None:
        check(params)

    def statistics(self, params: Params) -> tuple[Stat, ...]:
        """The frames, written as the run's similarity kind writes its objects (polygons:
        the objects repaired too)."""
        return kind_of(params).statistics()

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        info = dict(self.metrics)
        kind_of(params).metric_info(info, params)
        protocol_of(params).metric_info(info, params)
        return info

    # --- per pair ---------------------------------------------------------------------

    def check_in_memory(self, params: Params) -> None:
        """A protocol that needs what in-memory samples (per-stem structures) do not carry
        (LVIS' category table) is refused when the Evaluator is made."""
        protocol = protocol_of(params)
        for role in ("pred", "gt"):
            protocol.check_memory(folder_format(params, role))

    def settle_inputs(self, params: Params, inputs: Mapping[str, str | None]) -> dict[str, Any]:
        """``--pred-format``/``--gt-format auto`` decided from each folder's files."""
        return settle_formats(params, dict(inputs))

    def suffixes_for(self, params: Params, role: str) -> tuple[str, ...]:
        """Each side's files are its format's (``.txt`` for YOLO, ``.xml`` for VOC)."""
        return folder_format(params, role).suffixes

    def read_sets(self, params: Params, inputs: Mapping[str, str]) -> dict[str, SetInput]:
        """The sides held by files of the whole set (:mod:`~rpx_cli.tasks.detection.sets`)."""
        return sets.read_sets(params, inputs)

    def given(self, record: Any, path: str, params: Params, warn: Warn, *, role: str = "gt",
              stem: str = "") -> Boxes:
        return sets.given(record, path, params, warn, role=role, stem=stem)

    def read_pairs(self, pairs: Sequence[Pair], params: Params) -> PairsRead | None:
        """Label files of every pair parsed together into one table
        (:mod:`~rpx_cli.tasks.detection.bulk`)."""
        return bulk.read_pairs(pairs, params, self.statistics(params))

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Boxes:
        fmt = folder_format(params, role)
        protocol_of(params).check_format(fmt, path)

        def skipped(what: str, count: int) -> None:
            warn(skip_note(role, what, count), path)

        boxes = fmt.read(_content(buffer.read(path)), path, prediction=role == "pred",
                         kind=kind_of(params), params=params, skipped=skipped)
        problem = area_problem(boxes.area, "object") if role == "pred" else None
        if problem is not None:
            raise InputError(problem, path=path)
        mapped = apply_class_map(boxes, params.get("class_map"))
        if role == "gt" and len(boxes) and not len(mapped):
            warn(CLASS_MAP_EMPTIED, path)
        return mapped

    def warning_text(self, kind: str, paths: list[str]) -> str:
        if kind == CLASS_MAP_EMPTIED:
            return (f"--class-map removed every GT box of {len(paths)} file(s) (e.g. {paths[0]}): "
                    "they are scored as images without any object")
        return super().warning_text(kind, paths)

    def empty_prediction(self, gt: Boxes, params: Params) -> Boxes:
        return kind_of(params).empty(gt)

    def evaluate(self, pred: Boxes, gt: Boxes, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        n_pred = int(np.count_nonzero(pred.scores >= params["conf_threshold"])) if len(pred) else 0
        counted = ~gt.crowd & ~gt.ignored()
        if gt.group is not None:  # group-of boxes (--protocol openimages): regions, as crowd
            counted &= ~gt.group
        row = {"n_gt": int(np.count_nonzero(counted)), "n_pred": n_pred}
        gt = gt.scoped(pred.labels)  # regions of every class: one per class detected here
        values, extra = kind_of(params).pair(pred, gt, params, pred_path=pred_path,
                                             gt_path=gt_path)
        return Sample({**row, **extra}, values)

    def read_files(self, files: Mapping[str, str], params: Params) -> FileInput:
        """Files that hold every image (COCO's ``--coco-gt``/``--coco-dt``), read by their
        format straight into a flat table (no per-image objects)."""
        return files_format(files).read_files(files, params, kind_of(params), protocol_of(params),
                                              self.statistics(params))

    # --- over all frames ----------------------------------------------------------------

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        return self.summarize_rows(stats, params)[0]

    def summarize_rows(self, stats: StatTable, params: Params):
        return summarize_frames(stats, params, self.families, self.optional_families)

    def resampler(self, stats: StatTable, params: Params, paths: Sequence[str]):
        """``rpx compare``'s fast route to the pooled figures of resamples of the frames
        (:mod:`~rpx_cli.tasks.detection.resample`), or None."""
        from rpx_cli.tasks.detection.resample import resampler

        return resampler(stats, params, paths)
