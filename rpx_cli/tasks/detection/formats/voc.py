"""PASCAL VOC: one annotation XML per image (:mod:`rpx_cli.io.voc`), boxes in VOC's
1-based inclusive pixels read as ``[xmin − 1, ymin − 1, xmax, ymax]``; ``difficult``
objects are ignored GT in every view. A prediction file is the same XML with a ``score``
in each object. Boxes only (and the kinds built from boxes: rotated boxes at angle 0,
polygons and masks of the box's corners)."""

from __future__ import annotations

from typing import Any

from rpx_cli.io.objects import BOX, Objects
from rpx_cli.io.voc import read_voc
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.formats.labels import LabelFormat
from rpx_cli.tasks.detection.parts import register_format


@register_format
class Voc(LabelFormat):
    name, rank, title = "voc", 3, "VOC"
    suffixes = (".xml",)
    forms = (BOX,)

    def sniff(self, head: bytes, name: str) -> bool:
        return name.lower().endswith(".xml") and b"<annotation" in head and b"<annotations" not in head

    def objects(self, data: Any, path: str, *, prediction: bool, form: str,
                params: Params) -> tuple[Objects, dict[str, int]]:
        return read_voc(data, path, prediction=prediction), {}
