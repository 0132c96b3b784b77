"""Polygons of many objects as flat arrays (:class:`PolygonSet`), and how they are read from
a per-stem file: ``"polygons": [part, ...]``, a multi-polygon per object; a part is a ring
``[[x, y], ...]`` or ``{"exterior": ring, "holes": [ring, ...]}``. A ring may repeat its
first point at the end. The repair and the areas need shapely and happen when the pair is
evaluated (:mod:`rpx_cli.ops.polygons`). Every problem is an
:class:`~rpx_cli.errors.InputError` naming the file, the object, the polygon and the ring: a
ring of fewer than 3 points, a non-finite coordinate, one beyond ±1e12, more than
:data:`MAX_POLYGON_VERTICES` vertices in one object.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.values import MAX_MAGNITUDE, MIN_EXTENT, NUMBER_TYPES, beyond, shown


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


# --- polygons ------------------------------------------------------------------------------------


# vertices of one object's polygons (every ring of every part)
MAX_POLYGON_VERTICES = 100_000


def read_polygons(objects: list[dict[str, Any]], path: str,
                  options: Any = None) -> tuple[PolygonSet, np.ndarray]:
    """The objects' polygons and their areas (NaN: the repaired polygon's, once evaluated)."""
    return _polygons(objects, path), np.full(len(objects), np.nan)


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
    closed = lengths > 1  # (an empty ring has no first point: refused below, as short)
    closed[closed] = (coords[first[closed]] == coords[last[closed]]).all(axis=1)
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
    if not set(map(type, numbers)) <= NUMBER_TYPES:
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
                             f'{{"exterior", "holes"}} objects, got {shown(polygons)}', path=path)
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
                    raise InputError(f"{at} must be a list of [x, y] points, got {shown(ring)}", path=path)
                for point in ring:
                    if not (isinstance(point, list) and len(point) == 2
                            and all(type(v) in NUMBER_TYPES for v in point)):
                        raise InputError(f"{at}: points must be [x, y] (two numbers), got "
                                         f"{shown(point)}", path=path)
                    coords.append(point)
                ring_lengths.append(len(ring))
    return (np.asarray(coords, np.float64).reshape(-1, 2), ring_lengths, rings_per_part,
            parts_per_object)
