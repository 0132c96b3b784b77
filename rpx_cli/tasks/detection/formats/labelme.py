"""LabelMe (:mod:`rpx_cli.io.labelme`): one JSON per image, ``rectangle`` and ``polygon``
shapes in pixels with the image's size; under boxes a polygon is its bounding box, under
polygons and masks a rectangle its four corners. Other shape types are skipped and
counted per type (``labelme_circle``, ``labelme_line``, ...: ``inputs.<side>.skipped``)."""

from __future__ import annotations

from typing import Any

from rpx_cli.io.labelme import read_labelme
from rpx_cli.io.objects import BOX, POLYGON, Objects
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.formats.labels import LabelFormat
from rpx_cli.tasks.detection.parts import register_format


@register_format
class LabelMe(LabelFormat):
    name, rank, title = "labelme", 6, "LabelMe"
    suffixes = (".json",)
    forms = (BOX, POLYGON)

    def sniff(self, head: bytes, name: str) -> bool:
        return name.lower().endswith(".json") and b'"shapes"' in head

    def objects(self, data: Any, path: str, *, prediction: bool, form: str,
                params: Params) -> tuple[Objects, dict[str, int]]:
        objects, skipped = read_labelme(data, path, prediction=prediction, form=form)
        return objects, {f"labelme_{shape_type}": n for shape_type, n in skipped.items()}
