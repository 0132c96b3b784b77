"""Detection objects whose shape is not an axis-aligned box, in per-stem files: rotated
boxes, cuboids and polygons (:mod:`rpx_cli.io.polygon_set`).

The per-stem JSON is laid out as for boxes (:mod:`rpx_cli.io.boxes`): a list of objects with
``"label"``, ``"score"`` (predictions), ``"iscrowd"`` and ``"area"`` (GT, optional), or
columns ``{"boxes": [...], "labels": [...], "scores": [...], "iscrowd"?, "areas"?}``. The
shape is the object's own fields (in the columns, each ``boxes`` item is that value); a
:class:`ShapeLayout` says which, and how they are read:

- :data:`ROTATED`: ``"bbox": [xc, yc, w, h, angle]``, detectron2's ``RotatedBoxes``: ``w``
  along the box's x axis at angle 0, the angle counter-clockwise on screen (image y pointing
  down), in degrees (``angle_unit="rad"``: radians). Kept as a rectangle
  ``[xc, yc, w, h, -angle in radians]`` (see :mod:`rpx_cli.ops.rectangles`).
- :data:`CUBOID`: ``"center": [x, y, z], "size": [l, w, h]`` and ``"yaw"`` (radians,
  counter-clockwise about +z, 0 along +x) or ``"rotation": [w, x, y, z]`` (a quaternion,
  reduced to its yaw as the nuScenes devkit does: pitch and roll ignored). Kept as its
  Birds-Eye-View footprint ``[x, y, l, w, yaw]``.
- :data:`POLYGON`: ``"polygons": [part, ...]``, kept as a
  :class:`~rpx_cli.io.polygon_set.PolygonSet`.

The area of an object is its shape's (a GT ``area`` field, when given, is used for the
COCO area ranges, as for boxes). Every problem is an :class:`~rpx_cli.errors.InputError`
naming the file and the object index: a value of the wrong length for the shape, a
non-finite number, a size <= 0, a ring of fewer than 3 points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.boxes import Boxes, object_attributes
from rpx_cli.io.boxes import _columns as box_columns
from rpx_cli.io.boxes3d import quaternion_yaw
from rpx_cli.io.json import loads_json
from rpx_cli.io.polygon_set import read_polygons
from rpx_cli.io.values import MAX_MAGNITUDE, MIN_EXTENT, NUMBER_TYPES, beyond, number_rows, shown

ANGLE_UNITS = ("deg", "rad")


@dataclass(frozen=True)
class ShapeLayout:
    """Where one kind of shape is in a per-stem file, and how it is read.

    ``fields``: the fields, as messages show them; ``flag``: the ``--geometry`` that reads
    it; ``column``: the key a ``"boxes"`` column item becomes in each object (None: the item
    is an object of the fields ``keys``); ``read(objects, path, options)``: the shapes and
    their areas (NaN where only the evaluated shape knows it)."""

    fields: str
    flag: str
    column: str | None
    read: Callable[[list[dict[str, Any]], str, Mapping[str, Any]], tuple[Any, np.ndarray]]
    keys: tuple[str, ...] = ()


def parse_shapes(data: bytes, path: str, *, prediction: bool, layout: ShapeLayout,
                 options: Mapping[str, Any] | None = None) -> Boxes:
    """Parse and validate one per-stem JSON file of ``layout``'s objects into
    :class:`~rpx_cli.io.boxes.Boxes` whose ``shape`` holds the shapes (``options``: the
    run's parameters the layout reads, e.g. ``angle_unit``)."""
    document = loads_json(data, path)
    if isinstance(document, dict) and ("boxes" in document or "labels" in document):
        objects = _from_columns(document, path, layout)
    elif isinstance(document, list):
        objects = document
    else:
        raise InputError(f"expected a list of objects or {{\"boxes\", \"labels\", \"scores\"}} "
                         f"({layout.fields} for --geometry {layout.flag})", path=path)
    if objects and set(map(type, objects)) != {dict}:
        index = next(i for i, item in enumerate(objects) if not isinstance(item, dict))
        raise InputError(f"object {index}: expected an object, got {type(objects[index]).__name__}",
                         path=path)
    labels, scores, crowd, given = _attributes(objects, path, prediction)
    shapes, area = layout.read(objects, path, options or {})
    if given is not None:
        area = np.where(np.isnan(given), area, given)
    return Boxes(shapes, labels, scores, crowd, area)


def _from_columns(document: dict[str, Any], path: str, layout: ShapeLayout) -> list[dict[str, Any]]:
    objects = box_columns(document, path)
    for index, item in enumerate(objects):
        value = item.pop("bbox")
        if layout.column is not None:
            item[layout.column] = value
        elif isinstance(value, dict):
            item.update({k: v for k, v in value.items() if k in layout.keys})
        else:
            raise InputError(f'object {index}: each "boxes" item must be {{{layout.fields}}} '
                             f"for --geometry {layout.flag}, got {shown(value)}", path=path)
    return objects


def _attributes(objects: list[dict[str, Any]], path: str,
                prediction: bool) -> tuple[list[str], np.ndarray | None, np.ndarray, np.ndarray | None]:
    """``(labels, scores, crowd, given area)`` (NaN where GT gives no area; None for
    predictions, whose area is always their geometry's)."""
    fast = _attributes_fast(objects, prediction)
    if fast is not None:
        return fast
    labels, scores, crowd, area = [], [], [], []
    for index, item in enumerate(objects):
        label, score, flag, given = object_attributes(item, f"object {index}", path, prediction)
        labels.append(label)
        scores.append(score)
        crowd.append(flag)
        area.append(math.nan if given is None else float(given))
    n = len(objects)
    if prediction:
        return labels, np.asarray(scores, np.float64), np.zeros(n, bool), None
    return labels, None, np.asarray(crowd, bool), np.asarray(area, np.float64)


def _attributes_fast(objects: list[dict[str, Any]], prediction: bool):
    n = len(objects)
    try:
        labels = list(map(itemgetter("label"), objects))
        scores = list(map(itemgetter("score"), objects)) if prediction else None
    except KeyError:
        return None
    kinds = set(map(type, labels))
    if not kinds <= {str, int}:
        return None
    labels = list(map(str, labels)) if int in kinds else labels
    if prediction:
        if not set(map(type, scores)) <= NUMBER_TYPES:
            return None
        values = np.array(scores, np.float64)
        if not (np.abs(values) <= MAX_MAGNITUDE).all():  # NaN fails too
            return None
        return labels, values, np.zeros(n, bool), None
    crowd = list(map(dict.get, objects, repeat("iscrowd"), repeat(0)))
    if not set(map(type, crowd)) <= {int, bool} or not set(crowd) <= {0, 1}:
        return None  # the checked path names the object
    given = list(map(dict.get, objects, repeat("area")))
    if not set(map(type, given)) <= {*NUMBER_TYPES, type(None)}:
        return None
    missing = np.array([value is None for value in given], bool)
    area = np.array([math.nan if value is None else value for value in given], np.float64)
    if not (missing | (np.isfinite(area) & (area >= 0))).all():
        return None
    return labels, None, np.array(crowd, bool), area


# --- rotated boxes -------------------------------------------------------------------------------


def _rotated(objects: list[dict[str, Any]], path: str,
             options: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Rectangles ``[xc, yc, w, h, -angle in radians]`` and their areas."""
    angle_unit = options.get("angle_unit", "deg")
    if angle_unit not in ANGLE_UNITS:
        raise ValueError(f"angle unit must be deg or rad, got {angle_unit!r}")
    n = len(objects)
    values = None
    try:
        raw = list(map(itemgetter("bbox"), objects))
    except KeyError:
        raw = None
    if raw is not None:
        values = number_rows(raw, 5)
    if values is None or not np.isfinite(values).all() or not (values[:, 2:4] >= MIN_EXTENT).all() \
            or beyond(values[:, :4]).any():
        for index, item in enumerate(objects):
            where = f"object {index}"
            if "bbox" not in item:
                raise InputError(f"{where}: missing 'bbox' [xc, yc, w, h, angle]", path=path)
            box = item["bbox"]
            if not (isinstance(box, list) and len(box) == 5 and all(type(v) in NUMBER_TYPES for v in box)):
                raise InputError(f"{where}: 'bbox' must be five numbers [xc, yc, w, h, angle] for "
                                 f"--geometry rotated, got {shown(box)}", path=path)
            if not all(math.isfinite(v) for v in box):
                raise InputError(f"{where}: 'bbox' has a non-finite number: {shown(box)}", path=path)
            if any(abs(v) > MAX_MAGNITUDE for v in box[:4]):
                raise InputError(f"{where}: 'bbox' has a value beyond ±{MAX_MAGNITUDE:g} (pixels): "
                                 f"{shown(box)}", path=path)
            if not (box[2] >= MIN_EXTENT and box[3] >= MIN_EXTENT):
                raise InputError(f"{where}: the width and height must be at least {MIN_EXTENT:g} "
                                 f"(pixels), got w={box[2]!r}, h={box[3]!r}", path=path)
        values = np.array([item["bbox"] for item in objects], np.float64).reshape(n, 5)
    angle = values[:, 4] if angle_unit == "rad" else np.deg2rad(values[:, 4])
    values[:, 4] = -angle  # detectron2's corners are the rotation by -angle (y up)
    return values, values[:, 2] * values[:, 3]


# --- cuboids -------------------------------------------------------------------------------------


def _cuboids(objects: list[dict[str, Any]], path: str,
             options: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Footprints ``[x, y, l, w, yaw]`` and their areas."""
    shapes = _footprints(objects, path)
    return shapes, shapes[:, 2] * shapes[:, 3]


def _footprints(objects: list[dict[str, Any]], path: str) -> np.ndarray:
    n = len(objects)
    center = size = yaw = None
    try:
        center = number_rows(list(map(itemgetter("center"), objects)), 3)
        size = number_rows(list(map(itemgetter("size"), objects)), 3)
        if not any("rotation" in item for item in objects):
            yaws = list(map(itemgetter("yaw"), objects))
            if set(map(type, yaws)) <= NUMBER_TYPES:
                yaw = np.array(yaws, np.float64)
        elif not any("yaw" in item for item in objects):
            quaternion = number_rows(list(map(itemgetter("rotation"), objects)), 4)
            if quaternion is not None and np.isfinite(quaternion).all() and \
                    np.einsum("ij,ij->i", quaternion, quaternion).all():
                yaw = quaternion_yaw(quaternion)
    except KeyError:
        pass
    if center is None or size is None or yaw is None or not (
            np.isfinite(center).all() and np.isfinite(size).all() and np.isfinite(yaw).all()
            and (size >= MIN_EXTENT).all() and not beyond(center).any()
            and not beyond(size).any()):
        return _cuboids_checked(objects, path)
    return np.column_stack([center[:, :2], size[:, :2], yaw]) if n else np.zeros((0, 5))


def _cuboids_checked(objects: list[dict[str, Any]], path: str) -> np.ndarray:
    rows, quaternions, which = [], [], []
    for index, item in enumerate(objects):
        where = f"object {index}"
        for key, names in (("center", "[x, y, z]"), ("size", "[l, w, h]")):
            value = item.get(key)
            if value is None:
                raise InputError(f"{where}: missing '{key}' {names}", path=path)
            if not (isinstance(value, list) and len(value) == 3
                    and all(type(v) in NUMBER_TYPES for v in value)):
                raise InputError(f"{where}: '{key}' must be three numbers {names}, got {shown(value)}",
                                 path=path)
            if not all(math.isfinite(v) for v in value):
                raise InputError(f"{where}: '{key}' has a non-finite number: {shown(value)}", path=path)
        for key in ("center", "size"):
            if any(abs(v) > MAX_MAGNITUDE for v in item[key]):
                raise InputError(f"{where}: '{key}' has a value beyond ±{MAX_MAGNITUDE:g}: "
                                 f"{shown(item[key])}", path=path)
        if not all(v >= MIN_EXTENT for v in item["size"]):
            raise InputError(f"{where}: every size must be at least {MIN_EXTENT:g}, got "
                             f"{shown(item['size'])}", path=path)
        has_yaw, has_rotation = "yaw" in item, "rotation" in item
        if has_yaw == has_rotation:
            raise InputError(f"{where}: give 'yaw' (radians) or 'rotation' [w, x, y, z], "
                             f"{'not both' if has_yaw else 'neither is given'}", path=path)
        if has_yaw:
            yaw = item["yaw"]
            if type(yaw) not in NUMBER_TYPES or not math.isfinite(yaw):
                raise InputError(f"{where}: 'yaw' must be a finite number (radians), got {shown(yaw)}",
                                 path=path)
        else:
            q = item["rotation"]
            if not (isinstance(q, list) and len(q) == 4 and all(type(v) in NUMBER_TYPES for v in q)):
                raise InputError(f"{where}: 'rotation' must be four numbers [w, x, y, z], "
                                 f"got {shown(q)}", path=path)
            if not all(math.isfinite(v) for v in q) or not any(q):
                raise InputError(f"{where}: 'rotation' must be a finite non-zero quaternion, "
                                 f"got {shown(q)}", path=path)
            quaternions.append(q)
            which.append(index)
            yaw = 0.0
        x, y, _ = item["center"]
        length, width, _ = item["size"]
        rows.append([x, y, length, width, yaw])
    out = np.asarray(rows, np.float64).reshape(-1, 5)
    if which:
        out[which, 4] = quaternion_yaw(np.asarray(quaternions, np.float64))
    return out


ROTATED = ShapeLayout('"bbox": [xc, yc, w, h, angle]', "rotated", "bbox", _rotated)
CUBOID = ShapeLayout('"center": [x, y, z], "size": [l, w, h], "yaw" or "rotation"', "cuboid", None,
                     _cuboids, keys=("center", "size", "yaw", "rotation"))
POLYGON = ShapeLayout('"polygons": [[[x, y], ...], ...]', "polygon", "polygons", read_polygons)
