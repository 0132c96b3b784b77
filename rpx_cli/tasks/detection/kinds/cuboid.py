"""Cuboids compared by their Birds-Eye-View footprints (``--geometry cuboid``), as Aquarium
does.

An object is ``"center": [x, y, z], "size": [l, w, h]`` and ``"yaw"`` (radians,
counter-clockwise about +z, 0 along +x) or ``"rotation": [w, x, y, z]`` (a quaternion
reduced to its yaw as the nuScenes devkit does: pitch and roll ignored); it is kept as its
footprint ``[x, y, l, w, yaw]``. Two are compared by the IoU of the footprints (height
ignored), computed for every frame at once (:mod:`rpx_cli.ops.rectangles`). Area ``l · w``.
No TIDE.
"""

from __future__ import annotations

from rpx_cli.io.shapes import CUBOID
from rpx_cli.tasks.detection.parts import register_kind
from rpx_cli.tasks.detection.shapes import RectangleKind


@register_kind
class Cuboid(RectangleKind):
    name, rank, iou_type, geometry = "cuboid", 3, "bbox", "cuboid"
    title = "cuboids"
    layout = CUBOID
