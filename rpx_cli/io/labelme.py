"""LabelMe: one JSON per image, ``{"shapes": [{"label", "points", "shape_type"}, ...],
"imageWidth", "imageHeight"}`` (pixels). ``rectangle`` (two opposite corners) is a box,
``polygon`` a ring; a prediction's shape carries a ``"score"``. Under a kind built from
boxes a polygon is its bounding box (as labelme2coco does); under one built from polygons a
rectangle is its four corners. Other shape types (``circle``, ``line``, ``linestrip``,
``point``, ``mask``) cannot be expressed: they are skipped and counted."""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError
from rpx_cli.io.json import loads_json
from rpx_cli.io.objects import BOX, POLYGON, Objects, bounding_boxes

SHAPE_TYPES = ("rectangle", "polygon")


def read_labelme(data: Any, path: str, *, prediction: bool,
                 form: str) -> tuple[Objects, dict[str, int]]:
    """``(objects in form BOX or POLYGON, {shape type: number skipped})``."""
    document = loads_json(data, path)
    if not isinstance(document, dict) or not isinstance(document.get("shapes"), list):
        raise InputError('expected a LabelMe document {"shapes": [...], "imageWidth", '
                         '"imageHeight"}', path=path)
    size = None
    if isinstance(document.get("imageWidth"), int) and isinstance(document.get("imageHeight"), int):
        size = (document["imageHeight"], document["imageWidth"])
    labels, rings, scores, where, skipped = [], [], [], [], {}
    for index, shape in enumerate(document["shapes"]):
        at = f"shape {index}"
        if not isinstance(shape, dict):
            raise InputError(f"{at}: expected an object", path=path)
        kind = shape.get("shape_type") or "polygon"
        if kind not in SHAPE_TYPES:
            name = str(kind)
            skipped[name] = skipped.get(name, 0) + 1
            continue
        label = shape.get("label")
        if not isinstance(label, str) or not label:
            raise InputError(f"{at}: 'label' must be a non-empty string", path=path)
        try:
            points = np.asarray(shape.get("points"), np.float64)
        except (TypeError, ValueError):
            points = np.zeros((0,))
        if points.ndim != 2 or points.shape[1] != 2 or not np.isfinite(points).all():
            raise InputError(f"{at}: 'points' must be [[x, y], ...] of finite numbers", path=path)
        if kind == "rectangle":
            if len(points) != 2:
                raise InputError(f"{at}: a rectangle has 2 points, got {len(points)}", path=path)
            (x1, y1), (x2, y2) = points.min(axis=0), points.max(axis=0)
            ring = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]])
        else:
            if len(points) < 3:
                raise InputError(f"{at}: a polygon needs at least 3 points, got {len(points)}",
                                 path=path)
            ring = points
        if prediction:
            score = shape.get("score")
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise InputError(f"{at}: a prediction needs a numeric 'score' ({SWAP_HINT})", path=path)
            scores.append(float(score))
        labels.append(label)
        rings.append(([ring], kind == "rectangle"))
        where.append(at)
    polygons = [parts for parts, _ in rings]
    objects = Objects(form, labels, np.asarray(scores, np.float64) if prediction else None,
                      boxes=bounding_boxes(polygons), lines=where, size=size)
    if form == POLYGON:
        objects.polygons = polygons
    elif form != BOX:
        raise ValueError(form)
    return objects, skipped
