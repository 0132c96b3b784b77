"""Rotated boxes (``--geometry rotated``), as detectron2's ``RotatedBoxes``.

An object is ``"bbox": [xc, yc, w, h, angle]`` in pixels: ``w`` along the box's x axis at
angle 0, the angle counter-clockwise on screen (image y pointing down), in degrees
(``--angle-unit rad``: radians); it is kept as the rectangle ``[xc, yc, w, h, −angle]``
(radians, y up). Two are compared by IoU = ``inter / (area_dt + area_gt − inter)`` of the
rectangles (over the detection's own area for a crowd region), the intersections of every
frame computed at once (:mod:`rpx_cli.ops.rectangles`: boxes at angle 0 by the box formula,
so ``--geometry rotated`` at angle 0 equals ``--geometry box`` number for number). Area
``w · h``. detectron2's ``pairwise_iou_rotated`` tests are the reference. No TIDE.
"""

from __future__ import annotations

from typing import Any

from rpx_cli.io.shapes import ROTATED
from rpx_cli.tasks.detection.parts import register_kind
from rpx_cli.tasks.detection.shapes import RectangleKind


@register_kind
class Rotated(RectangleKind):
    name, rank, iou_type, geometry = "rotated", 1, "bbox", "rotated"
    noun = "box"
    layout = ROTATED

    def normalise(self, out: dict[str, Any], given: dict[str, Any]) -> None:
        super().normalise(out, given)
        out["angle_unit"] = given["angle_unit"]
