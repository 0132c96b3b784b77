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

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.objects import BOX, QUAD, Objects
from rpx_cli.io.shapes import ROTATED
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import register_kind
from rpx_cli.tasks.detection.shapes import RectangleKind


@register_kind
class Rotated(RectangleKind):
    name, rank, iou_type, geometry = "rotated", 1, "bbox", "rotated"
    title = "rotated boxes"
    noun = "box"
    layout = ROTATED
    forms = (QUAD, BOX)

    def normalise(self, out: dict[str, Any], given: dict[str, Any]) -> None:
        super().normalise(out, given)
        out["angle_unit"] = given["angle_unit"]

    def build(self, objects: Objects, path: str, *, prediction: bool, params: Params) -> Boxes:
        """Four corners as the rectangle they form (a quad that is not a rectangle within
        :data:`RECTANGLE_TOLERANCE` of its side is the line's input error): centre, ``w`` =
        |p1 − p0|, ``h`` = |p2 − p1|, the angle of p0 → p1 counter-clockwise on screen; a
        box is the rectangle at angle 0."""
        if objects.form == QUAD:
            rows = rectangles_of_quads(objects.quads, path, objects)
        else:
            xyxy = objects.boxes.reshape(-1, 4)
            rows = np.stack([(xyxy[:, 0] + xyxy[:, 2]) / 2, (xyxy[:, 1] + xyxy[:, 3]) / 2,
                             xyxy[:, 2] - xyxy[:, 0], xyxy[:, 3] - xyxy[:, 1],
                             np.zeros(len(xyxy))], axis=1)
        area = objects.given_area()
        area = np.where(np.isnan(area), rows[:, 2] * rows[:, 3], area)
        return Boxes(rows, list(objects.labels), None if not prediction else
                     np.asarray(objects.scores, np.float64), objects.crowds().copy(), area,
                     **objects.flags(prediction=prediction))


RECTANGLE_TOLERANCE = 1e-3  # of the longer side: how far four corners may be from a rectangle


def rectangles_of_quads(quads: np.ndarray, path: str, objects: Objects) -> np.ndarray:
    """``[xc, yc, w, h, -angle]`` (the kept form: radians, y up) of (N, 4, 2) corners."""
    quads = np.asarray(quads, np.float64).reshape(-1, 4, 2)
    p0, p1, p2, p3 = quads[:, 0], quads[:, 1], quads[:, 2], quads[:, 3]
    side_w, side_h = p1 - p0, p2 - p1
    w, h = np.hypot(*side_w.T), np.hypot(*side_h.T)
    scale = np.maximum(np.maximum(w, h), 1e-12)
    skew = np.abs(np.einsum("ij,ij->i", side_w, side_h)) / np.maximum(w * h, 1e-300)
    gap = np.hypot(*(p0 + p2 - p1 - p3).T) / scale
    bad = np.flatnonzero((gap > RECTANGLE_TOLERANCE) | (skew > RECTANGLE_TOLERANCE)
                         | (np.minimum(w, h) <= 0))
    if bad.size:
        raise InputError("the four corners do not form a rectangle (within "
                         f"{RECTANGLE_TOLERANCE:g} of its side): --geometry rotated needs one; "
                         "--geometry polygon reads any quadrilateral",
                         path=f"{path}:{objects.where(int(bad[0]))}")
    centre = quads.mean(axis=1)
    # counter-clockwise on screen is atan2(-dy, dx); the kept angle is its negative
    kept = np.arctan2(side_w[:, 1], side_w[:, 0])
    return np.stack([centre[:, 0], centre[:, 1], w, h, kept], axis=1)
