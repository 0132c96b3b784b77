"""KITTI object labels for 2D detection (:mod:`rpx_cli.io.kitti_objects`): one ``.txt`` per
frame, the 2D box ``x1 y1 x2 y2`` (pixels) of each object, class = ``type``; a prediction
line adds its score. A GT ``DontCare`` region is an ignore region of every class (a crowd
region whose scope is every class: ``Objects.every_class``); a ``DontCare`` prediction is
skipped and counted. Boxes only (and the kinds built from boxes)."""

from __future__ import annotations

from typing import Any

from rpx_cli.io.kitti_objects import read_kitti_2d
from rpx_cli.io.objects import BOX, Objects
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.formats.labels import LabelFormat, first_line, is_number
from rpx_cli.tasks.detection.parts import register_format


@register_format
class Kitti(LabelFormat):
    name, rank, title = "kitti", 4, "KITTI"
    suffixes = (".txt",)
    forms = (BOX,)

    def sniff(self, head: bytes, name: str) -> bool:
        """``.txt`` whose first line is a type then 14 or 15 numbers."""
        fields = first_line(head)
        return (name.lower().endswith(".txt") and len(fields) in (15, 16)
                and not is_number(fields[0]) and all(is_number(f) for f in fields[1:]))

    def objects(self, data: Any, path: str, *, prediction: bool, form: str,
                params: Params) -> tuple[Objects, dict[str, int]]:
        objects, skipped = read_kitti_2d(data, path, prediction=prediction)
        return objects, {"kitti_dontcare_prediction": skipped}
