"""The third declared part of ``rpx eval detection`` (:mod:`rpx_cli.tasks.detection.parts`
has the others and the registries): how detections are written on disk, a
:class:`DetectionFormat` per ``--pred-format``/``--gt-format``, and what a format and a kind
share (:func:`form_for`, :func:`object_attributes`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rpx_cli.errors import ParameterError
from rpx_cli.io.boxes import Boxes
from rpx_cli.tasks.base import FileInput, Params
from rpx_cli.tasks.stats import Stat

if TYPE_CHECKING:
    from rpx_cli.io.objects import Objects
    from rpx_cli.tasks.detection.parts import DetectionProtocol, SimilarityKind


class DetectionFormat:
    """How detections are written on disk — one per ``--pred-format``/``--gt-format`` (rpx,
    coco, yolo, voc, kitti, dota, labelme, cvat, openimages): how its files are recognised
    (:meth:`sniff`, :meth:`sniff_set`), how a GT and a prediction record become objects
    (:meth:`read` for one image's file; :meth:`read_set` for a side held by files of the
    whole set — one file, or a folder of per-class files —, paired with the other side by
    stem; :meth:`read_files` for files that replace both folders, COCO's), which kinds it
    can express (:attr:`forms`, :meth:`expresses`, :meth:`form_for`) and what it provides a
    protocol (:attr:`provides`). A format whose objects are normalised needs image sizes
    (:attr:`needs_sizes`)."""

    name: ClassVar[str]
    rank: ClassVar[int]
    title: ClassVar[str] = ""  # as messages name its files ("YOLO")
    suffixes: ClassVar[tuple[str, ...]] = ()  # one file per image: the files read
    # files that hold every image: per role, the suffixes of the one file (CVAT's XML, Open
    # Images' CSV) or of a folder's per-class files (VOC results, DOTA Task1)
    set_suffixes: ClassVar[tuple[str, ...]] = ()
    file_options: ClassVar[tuple[str, ...]] = ()  # COCO's files of the whole set: their options
    provides: ClassVar[frozenset[str]] = frozenset()
    forms: ClassVar[tuple[str, ...]] = ()  # the io.objects forms its files hold
    needs_sizes: ClassVar[bool] = False

    def sniff(self, head: bytes, name: str) -> bool:
        """Whether a file whose first bytes are ``head`` is in this format."""
        raise NotImplementedError

    def set_members(self, names: list[str]) -> list[str]:
        """Of ``names`` (a folder's files with a :attr:`set_suffixes` suffix, relative
        paths, or the one file given), those that hold the set in this format (default: all
        of them; VOC's results files, DOTA's ``Task1_<class>.txt``)."""
        return [name for name in names if name.lower().endswith(self.set_suffixes)] \
            if self.set_suffixes else []

    def sniff_set(self, names: list[str], head: bytes) -> bool:
        """Whether files ``names`` (:meth:`set_members`; the first one's first bytes
        ``head``) hold this format's set (default: no)."""
        return False

    def expresses(self, kind: SimilarityKind) -> bool:
        return any(form in self.forms for form in kind.forms)

    def form_for(self, kind: SimilarityKind) -> str:
        """The form this format hands ``kind`` its objects in (:func:`form_for`)."""
        return form_for(kind, self)

    def read(self, data: Any, path: str, *, prediction: bool, kind: SimilarityKind,
             params: Params) -> Boxes:
        """One image's file as :class:`Boxes` of ``kind``."""
        raise NotImplementedError

    def read_set(self, files: Mapping[str, bytes], path: str, *, prediction: bool, form: str,
                 params: Params, size: Callable[[str], tuple[int, int]]
                 ) -> dict[str, tuple[Objects, dict[str, int]]]:
        """A side held by files of the whole set: ``files`` (relative path — or the file's
        name, when ``path`` is the one file — to its bytes, :meth:`set_members`) as
        ``{stem: (objects in form, {what was skipped: count})}``; a prediction set lists
        the images with detections. ``size(stem)``: the image's ``(height, width)``
        (``--image-size``, ``--images-dir``) for normalised coordinates. Malformed is an
        :class:`~rpx_cli.errors.InputError` naming ``file:line``."""
        raise NotImplementedError(f"{self.name} is read one file per image")

    def read_files(self, files: Mapping[str, str], params: Params, kind: SimilarityKind,
                   protocol: DetectionProtocol, declared: tuple[Stat, ...]) -> FileInput:
        """Files holding every image (``files``: option name -> path)."""
        raise NotImplementedError


def form_for(kind: SimilarityKind, fmt: DetectionFormat) -> str:
    """The form ``fmt`` hands ``kind`` its objects in: the first of the kind's
    :attr:`~SimilarityKind.forms` the format writes (a :class:`ParameterError` naming both
    when there is none)."""
    for form in kind.forms:
        if form in fmt.forms:
            return form
    raise ParameterError(f"{fmt.title} files cannot hold what {kind.flag} evaluates "
                         f"({' or '.join(kind.forms) or 'cuboids'}; they hold "
                         f"{', '.join(fmt.forms)})")


def object_attributes(objects: Objects, index: int) -> dict[str, Any]:
    """Object ``index``'s label, score, crowd flag and given area as rpx's per-stem JSON
    writes them."""
    out: dict[str, Any] = {"label": objects.labels[index]}
    if objects.scores is not None:
        out["score"] = float(objects.scores[index])
    if objects.crowd is not None and objects.crowd[index]:
        out["iscrowd"] = 1
    if objects.area is not None and not np.isnan(objects.area[index]):
        out["area"] = float(objects.area[index])
    return out
