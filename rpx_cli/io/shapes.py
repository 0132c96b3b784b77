"""Detection objects beyond axis-aligned boxes: rotated boxes, cuboids and polygons.

The per-stem JSON is laid out as for boxes (:mod:`rpx_cli.io.boxes`): a list of objects with
``"label"``, ``"score"`` (predictions), ``"iscrowd"`` and ``"area"`` (GT, optional), or
columns ``{"boxes": [...], "labels": [...], "scores": [...], "iscrowd"?, "areas"?}``. The
geometry is the object's own fields (in the columns, each ``boxes`` item is that value):

- ``rotated``: ``"bbox": [xc, yc, w, h, angle]``, detectron2's ``RotatedBoxes``: ``w`` along
  the box's x axis at angle 0, the angle counter-clockwise on screen (image y pointing
  down), in degrees (``angle_unit="rad"``: radians). Kept as a rectangle
  ``[xc, yc, w, h, -angle in radians]`` (see :mod:`rpx_cli.ops.rectangles`).
- ``cuboid``: ``"center": [x, y, z], "size": [l, w, h]`` and ``"yaw"`` (radians,
  counter-clockwise about +z, 0 along +x) or ``"rotation": [w, x, y, z]`` (a quaternion,
  reduced to its yaw as the nuScenes devkit does: pitch and roll ignored). Kept as its
  Birds-Eye-View footprint ``[x, y, l, w, yaw]``.
- ``polygon``: ``"polygons": [part, ...]``, a multi-polygon per object; a part is a ring
  ``[[x, y], ...]`` or ``{"exterior": ring, "holes": [ring, ...]}``. A ring may repeat its
  first point at the end. Kept as a :class:`PolygonSet`; the repair and the areas need
  shapely and happen when the pair is evaluated (:mod:`rpx_cli.ops.polygons`).

The area of an object is its geometry's (a GT ``area`` field, when given, is used for the
COCO area ranges, as for boxes). Every problem is an :class:`~rpx_cli.errors.InputError`
naming the file and the object index: a value of the wrong length for the geometry, a
non-finite number, a size <= 0, a ring of fewer than 3 points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.boxes import Boxes, object_attributes
from rpx_cli.io.boxes import _columns as box_columns
from rpx_cli.io.boxes3d import quaternion_yaw
from rpx_cli.io.json import loads_json
from rpx_cli.io.values import MAX_MAGNITUDE, MIN_EXTENT, beyond

SHAPE_GEOMETRIES = ("rotated", "cuboid", "polygon")
ANGLE_UNITS = ("deg", "rad")
_NUMBER = {int, float}


# --- polygons as flat arrays -----------------------------------------------------------------


@dataclass
class PolygonSet:
    """The polygons of N objects in flat arrays: object ``i``'s parts are
    ``object_start[i]:object_start[i + 1]``, part ``p``'s rings
    ``part_start[p]:part_start[p + 1]`` (the first is the exterior, the rest holes), ring
    ``r``'s points ``coords[ring_start[r]:ring_start[r + 1]]``, closed (the last repeats the
    first), as shapely's ``from_ragged_array`` takes them."""

    coords: np.ndarray  # (V, 2) float64
    ring_start: np.ndarray  # (R + 1,) int64
    part_start: np.ndarray  # (P + 1,) int64
    object_start: np.ndarray  # (N + 1,) int64

    def __len__(self) -> int:
        return int(self.object_start.size - 1)

    @classmethod
    def empty(cls) -> PolygonSet:
        zero = np.zeros(1, np.int64)
        return cls(np.zeros((0, 2)), zero, zero.copy(), zero.copy())

    def __getitem__(self, index: Any) -> PolygonSet:
        """The objects ``index`` (a boolean mask, integer indices or a slice), in order."""
        objects = np.arange(len(self))[index]
        parts, object_start = _spans(self.object_start, objects)
        rings, part_start = _spans(self.part_start, parts)
        points, ring_start = _spans(self.ring_start, rings)
        return PolygonSet(self.coords[points], ring_start, part_start, object_start)


def _spans(start: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The items of the ``chosen`` groups (group ``k`` holds ``start[k]:start[k + 1]``) and
    the new offsets of those groups."""
    lo, hi = start[chosen], start[chosen + 1]
    counts = hi - lo
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    items = np.repeat(lo - offsets[:-1], counts) + np.arange(offsets[-1])
    return items.astype(np.int64), offsets


# --- reading -------------------------------------------------------------------------------------


def parse_shapes(data: bytes, path: str, *, prediction: bool, geometry: str,
                 angle_unit: str = "deg") -> Boxes:
    """Parse and validate one per-stem JSON file of ``geometry`` objects (rotated, cuboid,
    polygon) into :class:`~rpx_cli.io.boxes.Boxes` whose ``box`` holds the shapes."""
    if geometry not in SHAPE_GEOMETRIES:
        raise ValueError(f"geometry must be one of {', '.join(SHAPE_GEOMETRIES)}, got {geometry!r}")
    if angle_unit not in ANGLE_UNITS:
        raise ValueError(f"angle unit must be deg or rad, got {angle_unit!r}")
    document = loads_json(data, path)
    if isinstance(document, dict) and ("boxes" in document or "labels" in document):
        objects = _from_columns(document, path, geometry)
    elif isinstance(document, list):
        objects = document
    else:
        raise InputError(f"expected a list of objects or {{\"boxes\", \"labels\", \"scores\"}} "
                         f"({_FIELDS[geometry]} for --geometry {geometry})", path=path)
    if objects and set(map(type, objects)) != {dict}:
        index = next(i for i, item in enumerate(objects) if not isinstance(item, dict))
        raise InputError(f"object {index}: expected an object, got {type(objects[index]).__name__}",
                         path=path)
    labels, scores, crowd, given = _attributes(objects, path, prediction)
    if geometry == "rotated":
        shapes = _rotated(objects, path, angle_unit)
        area = shapes[:, 2] * shapes[:, 3]
    elif geometry == "cuboid":
        shapes = _cuboids(objects, path)
        area = shapes[:, 2] * shapes[:, 3]
    else:
        shapes = _polygons(objects, path)
        area = np.full(len(objects), np.nan)  # the repaired polygon's, once evaluated
    if given is not None:
        area = np.where(np.isnan(given), area, given)
    return Boxes(shapes, labels, scores, crowd, area)


_FIELDS = {"rotated": '"bbox": [xc, yc, w, h, angle]',
           "cuboid": '"center": [x, y, z], "size": [l, w, h], "yaw" or "rotation"',
           "polygon": '"polygons": [[[x, y], ...], ...]'}


def _from_columns(document: dict[str, Any], path: str, geometry: str) -> list[dict[str, Any]]:
    objects = box_columns(document, path)
    key = {"rotated": "bbox", "polygon": "polygons"}.get(geometry)
    for index, item in enumerate(objects):
        value = item.pop("bbox")
        if key is not None:
            item[key] = value
        elif isinstance(value, dict):
            item.update({k: v for k, v in value.items() if k in ("center", "size", "yaw", "rotation")})
        else:
            raise InputError(f'object {index}: each "boxes" item must be {{{_FIELDS[geometry]}}} '
                             f"for --geometry cuboid, got {_short(value)}", path=path)
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
        if not set(map(type, scores)) <= _NUMBER:
            return None
        values = np.array(scores, np.float64)
        if not ((values >= 0) & (values <= 1)).all():  # NaN fails too
            return None
        return labels, values, np.zeros(n, bool), None
    crowd = list(map(dict.get, objects, repeat("iscrowd"), repeat(0)))
    if not set(map(type, crowd)) <= {int, bool} or not set(crowd) <= {0, 1}:
        return None  # the checked path names the object
    given = list(map(dict.get, objects, repeat("area")))
    if not set(map(type, given)) <= {*_NUMBER, type(None)}:
        return None
    missing = np.array([value is None for value in given], bool)
    area = np.array([math.nan if value is None else value for value in given], np.float64)
    if not (missing | (np.isfinite(area) & (area >= 0))).all():
        return None
    return labels, None, np.array(crowd, bool), area


# --- rotated boxes -------------------------------------------------------------------------------


def _rotated(objects: list[dict[str, Any]], path: str, angle_unit: str) -> np.ndarray:
    n = len(objects)
    values = None
    try:
        raw = list(map(itemgetter("bbox"), objects))
    except KeyError:
        raw = None
    if raw is not None:
        values = _numbers(raw, 5)
    if values is None or not np.isfinite(values).all() or not (values[:, 2:4] >= MIN_EXTENT).all() \
            or beyond(values[:, :4]).any():
        for index, item in enumerate(objects):
            where = f"object {index}"
            if "bbox" not in item:
                raise InputError(f"{where}: missing 'bbox' [xc, yc, w, h, angle]", path=path)
            box = item["bbox"]
            if not (isinstance(box, list) and len(box) == 5 and all(type(v) in _NUMBER for v in box)):
                raise InputError(f"{where}: 'bbox' must be five numbers [xc, yc, w, h, angle] for "
                                 f"--geometry rotated, got {_short(box)}", path=path)
            if not all(math.isfinite(v) for v in box):
                raise InputError(f"{where}: 'bbox' has a non-finite number: {_short(box)}", path=path)
            if any(abs(v) > MAX_MAGNITUDE for v in box[:4]):
                raise InputError(f"{where}: 'bbox' has a value beyond ±{MAX_MAGNITUDE:g} (pixels): "
                                 f"{_short(box)}", path=path)
            if not (box[2] >= MIN_EXTENT and box[3] >= MIN_EXTENT):
                raise InputError(f"{where}: the width and height must be at least {MIN_EXTENT:g} "
                                 f"(pixels), got w={box[2]!r}, h={box[3]!r}", path=path)
        values = np.array([item["bbox"] for item in objects], np.float64).reshape(n, 5)
    angle = values[:, 4] if angle_unit == "rad" else np.deg2rad(values[:, 4])
    values[:, 4] = -angle  # detectron2's corners are the rotation by -angle (y up)
    return values


# --- cuboids -------------------------------------------------------------------------------------


def _cuboids(objects: list[dict[str, Any]], path: str) -> np.ndarray:
    """Footprints ``[x, y, l, w, yaw]``."""
    n = len(objects)
    center = size = yaw = None
    try:
        center = _numbers(list(map(itemgetter("center"), objects)), 3)
        size = _numbers(list(map(itemgetter("size"), objects)), 3)
        if not any("rotation" in item for item in objects):
            yaws = list(map(itemgetter("yaw"), objects))
            if set(map(type, yaws)) <= _NUMBER:
                yaw = np.array(yaws, np.float64)
        elif not any("yaw" in item for item in objects):
            quaternion = _numbers(list(map(itemgetter("rotation"), objects)), 4)
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
            if not (isinstance(value, list) and len(value) == 3 and all(type(v) in _NUMBER for v in value)):
                raise InputError(f"{where}: '{key}' must be three numbers {names}, got {_short(value)}",
                                 path=path)
            if not all(math.isfinite(v) for v in value):
                raise InputError(f"{where}: '{key}' has a non-finite number: {_short(value)}", path=path)
        for key in ("center", "size"):
            if any(abs(v) > MAX_MAGNITUDE for v in item[key]):
                raise InputError(f"{where}: '{key}' has a value beyond ±{MAX_MAGNITUDE:g}: "
                                 f"{_short(item[key])}", path=path)
        if not all(v >= MIN_EXTENT for v in item["size"]):
            raise InputError(f"{where}: every size must be at least {MIN_EXTENT:g}, got "
                             f"{_short(item['size'])}", path=path)
        has_yaw, has_rotation = "yaw" in item, "rotation" in item
        if has_yaw == has_rotation:
            raise InputError(f"{where}: give 'yaw' (radians) or 'rotation' [w, x, y, z], "
                             f"{'not both' if has_yaw else 'neither is given'}", path=path)
        if has_yaw:
            yaw = item["yaw"]
            if type(yaw) not in _NUMBER or not math.isfinite(yaw):
                raise InputError(f"{where}: 'yaw' must be a finite number (radians), got {_short(yaw)}",
                                 path=path)
        else:
            q = item["rotation"]
            if not (isinstance(q, list) and len(q) == 4 and all(type(v) in _NUMBER for v in q)):
                raise InputError(f"{where}: 'rotation' must be four numbers [w, x, y, z], "
                                 f"got {_short(q)}", path=path)
            if not all(math.isfinite(v) for v in q) or not any(q):
                raise InputError(f"{where}: 'rotation' must be a finite non-zero quaternion, "
                                 f"got {_short(q)}", path=path)
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


# --- polygons ------------------------------------------------------------------------------------


# vertices of one object's polygons (every ring of every part)
MAX_POLYGON_VERTICES = 100_000


def _polygons(objects: list[dict[str, Any]], path: str) -> PolygonSet:
    flat = _polygons_fast(objects)
    if flat is None:
        flat = _polygons_checked(objects, path)
    coords, ring_lengths, rings_per_part, parts_per_object = flat
    bad = ~np.isfinite(coords).all(axis=1)
    ring_start = np.concatenate([[0], np.cumsum(ring_lengths)]).astype(np.int64)
    part_start = np.concatenate([[0], np.cumsum(rings_per_part)]).astype(np.int64)
    object_start = np.concatenate([[0], np.cumsum(parts_per_object)]).astype(np.int64)

    def locate(ring: int) -> str:
        part = int(np.searchsorted(part_start, ring, side="right") - 1)
        obj = int(np.searchsorted(object_start, part, side="right") - 1)
        return (f"object {obj}: ring {ring - part_start[part]} of polygon "
                f"{part - object_start[obj]}")

    if bad.any():
        ring = int(np.searchsorted(ring_start, np.argmax(bad), side="right") - 1)
        raise InputError(f"{locate(ring)} has a non-finite coordinate", path=path)
    far = beyond(coords).any(axis=1)
    if far.any():
        ring = int(np.searchsorted(ring_start, np.argmax(far), side="right") - 1)
        raise InputError(f"{locate(ring)} has a coordinate beyond ±{MAX_MAGNITUDE:g} (pixels)",
                         path=path)
    # a ring may repeat its first point at the end: drop it (shapely closes every ring)
    lengths = np.diff(ring_start)
    first, last = ring_start[:-1], ring_start[1:] - 1
    closed = (lengths > 1) & (coords[first] == coords[np.maximum(last, 0)]).all(axis=1)
    if closed.any():
        keep = np.ones(coords.shape[0], bool)
        keep[last[closed]] = False
        coords = coords[keep]
        lengths = lengths - closed
        ring_start = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    short = np.flatnonzero(lengths < 3)
    if short.size:
        ring = int(short[0])
        raise InputError(f"{locate(ring)} has {int(lengths[ring])} point(s) (a repeated first point not "
                         "counted); a ring needs at least 3", path=path)
    # a ring's width and height: 0 (collapsed: repaired away) or at least MIN_EXTENT
    if coords.shape[0]:
        starts = ring_start[:-1]
        extent = np.maximum.reduceat(coords, starts) - np.minimum.reduceat(coords, starts)
        tiny = np.flatnonzero(((extent > 0) & (extent < MIN_EXTENT)).any(axis=1))
        if tiny.size:
            ring = int(tiny[0])
            raise InputError(f"{locate(ring)} is {extent[ring, 0]:g} wide and {extent[ring, 1]:g} "
                             f"high: a ring spans 0 or at least {MIN_EXTENT:g} in x and y", path=path)
    # the vertices of each object: at most MAX_POLYGON_VERTICES, so that every repair and
    # intersection is bounded (real annotation polygons have at most a few thousand)
    per_object = np.diff(ring_start[part_start[object_start]])
    many = np.flatnonzero(per_object > MAX_POLYGON_VERTICES)
    if many.size:
        raise InputError(f"object {int(many[0])}: {int(per_object[many[0]]):,} polygon vertices, "
                         f"more than {MAX_POLYGON_VERTICES:,} (simplify it)", path=path)
    # every ring closed (its first point repeated at the end): the form shapely builds from
    closing = np.insert(np.arange(coords.shape[0]), ring_start[1:], ring_start[:-1])
    return PolygonSet(np.ascontiguousarray(coords[closing], np.float64),
                      ring_start + np.arange(ring_start.size), part_start, object_start)


def _polygons_fast(objects: list[dict[str, Any]]):
    """``(coords, ring lengths, rings per part, parts per object)`` pulled out with C-level
    ``map``/``chain``; None when anything needs a closer look."""
    try:
        polygons = list(map(itemgetter("polygons"), objects))
    except KeyError:
        return None
    if polygons and set(map(type, polygons)) != {list}:
        return None
    parts_per_object = list(map(len, polygons))
    if 0 in parts_per_object:
        return None
    parts = list(chain.from_iterable(polygons))
    kinds = set(map(type, parts))
    if kinds <= {list}:
        rings, rings_per_part = parts, [1] * len(parts)
    else:
        if not kinds <= {list, dict}:
            return None
        rings, rings_per_part = [], []
        for part in parts:  # the {"exterior", "holes"} form: one step per part, not per point
            if type(part) is list:
                rings.append(part)
                rings_per_part.append(1)
                continue
            holes = part.get("holes", [])
            if "exterior" not in part or type(holes) is not list or not part.keys() <= {"exterior", "holes"}:
                return None
            rings.append(part["exterior"])
            rings.extend(holes)
            rings_per_part.append(1 + len(holes))
    if rings and set(map(type, rings)) != {list}:
        return None
    points = list(chain.from_iterable(rings))
    if points and (set(map(type, points)) != {list} or set(map(len, points)) != {2}):
        return None
    numbers = list(chain.from_iterable(points))
    if not set(map(type, numbers)) <= _NUMBER:
        return None
    coords = np.array(numbers, np.float64).reshape(-1, 2)
    return coords, list(map(len, rings)), rings_per_part, parts_per_object


def _polygons_checked(objects: list[dict[str, Any]], path: str):
    coords, ring_lengths, rings_per_part, parts_per_object = [], [], [], []
    for index, item in enumerate(objects):
        where = f"object {index}"
        polygons = item.get("polygons")
        if polygons is None:
            raise InputError(f"{where}: missing 'polygons' (a list of rings [[x, y], ...] or "
                             '{"exterior": ring, "holes": [ring, ...]})', path=path)
        if not isinstance(polygons, list) or not polygons:
            raise InputError(f"{where}: 'polygons' must be a non-empty list of rings or "
                             f'{{"exterior", "holes"}} objects, got {_short(polygons)}', path=path)
        parts_per_object.append(len(polygons))
        for p, part in enumerate(polygons):
            if isinstance(part, dict):
                if "exterior" not in part or not part.keys() <= {"exterior", "holes"}:
                    raise InputError(f'{where}: polygon {p} must be {{"exterior": ring, "holes": '
                                     f"[ring, ...]}}, got keys {sorted(part)}", path=path)
                holes = part.get("holes", [])
                if not isinstance(holes, list):
                    raise InputError(f"{where}: polygon {p}: 'holes' must be a list of rings", path=path)
                rings = [part["exterior"], *holes]
            else:
                rings = [part]
            rings_per_part.append(len(rings))
            for r, ring in enumerate(rings):
                at = f"{where}: ring {r} of polygon {p}"
                if not isinstance(ring, list):
                    raise InputError(f"{at} must be a list of [x, y] points, got {_short(ring)}", path=path)
                for point in ring:
                    if not (isinstance(point, list) and len(point) == 2
                            and all(type(v) in _NUMBER for v in point)):
                        raise InputError(f"{at}: points must be [x, y] (two numbers), got "
                                         f"{_short(point)}", path=path)
                    coords.append(point)
                ring_lengths.append(len(ring))
    return (np.asarray(coords, np.float64).reshape(-1, 2), ring_lengths, rings_per_part,
            parts_per_object)


# --- helpers -------------------------------------------------------------------------------------


def _numbers(rows: list[Any], width: int) -> np.ndarray | None:
    """(n, width) float64 from a list of lists of numbers; None if anything else."""
    if rows and (set(map(type, rows)) != {list} or set(map(len, rows)) != {width}):
        return None
    flat = list(chain.from_iterable(rows))
    if not set(map(type, flat)) <= _NUMBER:
        return None
    return np.array(flat, np.float64).reshape(len(rows), width)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
