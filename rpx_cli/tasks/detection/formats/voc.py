"""PASCAL VOC (:mod:`rpx_cli.io.voc`): one annotation XML per image, boxes in VOC's 1-based
inclusive pixels read as ``[xmin − 1, ymin − 1, xmax, ymax]``; ``difficult`` objects are
ignored GT in every view. Predictions: the same XML with a ``score`` in each object, or the
devkit's per-class results files — a folder of ``comp4_det_test_<class>.txt`` (or
``<class>.txt``) files of ``image_id score xmin ymin xmax ymax`` lines, the same coordinate
rule — that hold the whole set (an image no file names has no detection). Boxes only (and
the kinds built from boxes: rotated boxes at angle 0, polygons and masks of the box's
corners)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rpx_cli.io.objects import BOX, Objects
from rpx_cli.io.voc import read_voc, read_voc_many, read_voc_results
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.formats.labels import LabelFormat, first_line, is_number
from rpx_cli.tasks.detection.parts import register_format


@register_format
class Voc(LabelFormat):
    name, rank, title = "voc", 3, "VOC"
    suffixes = (".xml",)
    set_suffixes = (".txt",)  # the devkit's per-class results files
    forms = (BOX,)

    def sniff(self, head: bytes, name: str) -> bool:
        return name.lower().endswith(".xml") and b"<annotation" in head and b"<annotations" not in head

    def objects(self, data: Any, path: str, *, prediction: bool, form: str,
                params: Params) -> tuple[Objects, dict[str, int]]:
        return read_voc(data, path, prediction=prediction), {}

    def read_many(self, datas: list[bytes], paths: list[str], *, prediction: bool, form: str,
                  params: Params) -> tuple[Objects, np.ndarray, list[dict[str, int]]] | None:
        """Every file parsed as one document (:func:`~rpx_cli.io.voc.read_voc_many`); what
        that leaves to a closer look, file by file."""
        found = read_voc_many(datas, prediction=prediction)
        if found is not None:
            return found[0], found[1], [{} for _ in datas]
        return super().read_many(datas, paths, prediction=prediction, form=form, params=params)

    def sniff_set(self, names: list[str], head: bytes) -> bool:
        """``.txt`` lines of an image id, a score and a box in (1-based) pixels: a corner
        beyond 1 (YOLO's normalised lines never are)."""
        fields = first_line(head)
        return (len(fields) == 6 and all(is_number(f) for f in fields[1:])
                and max(float(f) for f in fields[2:]) > 1)

    def read_set(self, files: Mapping[str, bytes], path: str, *, prediction: bool, form: str,
                 params: Params, size: Callable[[str], tuple[int, int]]
                 ) -> dict[str, tuple[Objects, dict[str, int]]]:
        if not prediction:
            raise_gt_results(path, self.title)
        return {stem: (objects, {}) for stem, objects in read_voc_results(files, path).items()}


def raise_gt_results(path: str, title: str) -> None:
    from rpx_cli.errors import SWAP_HINT, InputError

    raise InputError(f"{title} results files hold predictions (with scores), not GT "
                     f"({SWAP_HINT})", path=path)
