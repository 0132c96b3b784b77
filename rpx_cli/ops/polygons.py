"""Multi-polygons with shapely 2's array functions: repair, areas, one frame's intersections.

Imported only for ``--geometry polygon`` (shapely is the optional extra ``rpx-eval[geometry]``;
:func:`rpx_cli.ops.geometry.kernel` checks it first). Every function works on whole arrays of
geometries: no Python loop over objects or pairs.

Repair (:func:`prepare`), as Aquarium does before its shapely IoU:

1. each part (an exterior ring and its holes) becomes a polygon; an invalid one (a bowtie, a
   self-touching corner, a hole outside its shell, a ring collapsed to a line) is repaired
   with ``make_valid`` — never ``buffer(0)``, which keeps one lobe of a bowtie and drops the
   other;
2. of what ``make_valid`` returns, only polygons are kept: the lines and points a collapsed
   ring leaves are dropped;
3. an object's pieces are unioned when they overlap (a multi-polygon whose parts overlap is
   invalid, and ``make_valid`` on it would remove the overlap rather than keep it).

An object "needed a repair" when its parts as given do not form a valid multi-polygon.

IoU (:func:`overlaps`): pairs whose bounding boxes overlap, then ``intersects``, then the
area of ``intersection``; the union is ``area(A) + area(B) − area(A ∩ B)``.
"""

from __future__ import annotations

import numpy as np
import shapely
from shapely.errors import GEOSException

from rpx_cli.errors import InputError

# intersections are computed frame by frame, in the worker processes (shapely's time is per
# pair of polygons: the workers share it)
PER_FRAME = True
_POLYGON, _MULTIPOLYGON, _COLLECTION = 3, 6, 7
EMPTY = shapely.Polygon()


def prepare(polygons) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(geometries, areas, repaired)`` of a :class:`~rpx_cli.io.shapes.PolygonSet`: one
    valid Polygon or MultiPolygon (or an empty polygon) per object, its area, and whether
    it needed a repair."""
    n = len(polygons)
    if not n:
        return np.empty(0, object), np.zeros(0), np.zeros(0, bool)
    per_object = np.diff(polygons.object_start)
    object_of_part = np.repeat(np.arange(n), per_object)
    parts = shapely.from_ragged_array(shapely.GeometryType.POLYGON, polygons.coords,
                                      (polygons.ring_start, polygons.part_start))
    valid = shapely.is_valid(parts)
    out = np.full(n, EMPTY, dtype=object)
    repaired = np.zeros(n, bool)
    # the common case: an object of one valid part is that polygon
    simple = valid & (per_object[object_of_part] == 1)
    out[object_of_part[simple]] = parts[simple]
    if not simple.all():
        rest = ~simple
        _assemble(parts[rest], valid[rest], object_of_part[rest], out, repaired)
    return out, shapely.area(out), repaired


def _assemble(parts: np.ndarray, valid: np.ndarray, owner: np.ndarray, out: np.ndarray,
              repaired: np.ndarray) -> None:
    """Objects of several parts or of invalid ones: each invalid part made valid, the
    polygons kept, an object's pieces unioned where they overlap; written into ``out`` and
    ``repaired`` at the objects ``owner`` names."""
    if not valid.all():
        parts = parts.copy()
        parts[~valid] = shapely.make_valid(parts[~valid])
        repaired[owner[~valid]] = True
    pieces, part_of_piece = _polygons_of(parts)
    object_of_piece = owner[part_of_piece]
    count = np.bincount(object_of_piece, minlength=out.size)
    single = count[object_of_piece] == 1
    out[object_of_piece[single]] = pieces[single]
    several = np.flatnonzero(count > 1)
    if several.size:
        rank = np.full(out.size, -1, np.int64)
        rank[several] = np.arange(several.size)
        multi = shapely.multipolygons(pieces[~single], indices=rank[object_of_piece[~single]])
        overlapping = ~shapely.is_valid(multi)
        if overlapping.any():
            multi[overlapping] = shapely.union_all(multi[overlapping][:, None], axis=1)
            repaired[several[overlapping]] = True
        out[several] = multi


def _polygons_of(geometries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The non-empty polygons in ``geometries`` (multi-polygons and collections opened up,
    lines and points dropped), with the index of the geometry each came from."""
    index = np.arange(geometries.size)
    while True:
        kind = shapely.get_type_id(geometries)
        nested = (kind == _MULTIPOLYGON) | (kind == _COLLECTION)
        if not nested.any():
            break
        flat, at = shapely.get_parts(geometries[nested], return_index=True)
        geometries = np.concatenate([geometries[~nested], flat])
        index = np.concatenate([index[~nested], index[nested][at]])
        order = np.argsort(index, kind="stable")
        geometries, index = geometries[order], index[order]
    keep = (shapely.get_type_id(geometries) == _POLYGON) & ~shapely.is_empty(geometries)
    return geometries[keep], index[keep]


def portable(geometries: np.ndarray) -> np.ndarray:
    """WKB bytes of each geometry (an object array): what a frame keeps and carries between
    processes (pickling shapely objects is ~20x slower)."""
    if not geometries.size:
        return np.empty(0, object)
    return shapely.to_wkb(geometries)


def area(geometries: np.ndarray) -> np.ndarray:
    return shapely.area(geometries)


def candidates(pred: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pred index, gt index, bound)``: the pairs whose bounding boxes overlap (a (D, G)
    broadcast; every other pair has no intersection) and an upper bound of each pair's
    intersection area, ``min(area A, area B, area of the bounding boxes' intersection)``."""
    empty = np.zeros(0, np.int64)
    if not (pred.size and gt.size):
        return empty, empty.copy(), np.zeros(0)
    bp, bg = shapely.bounds(pred), shapely.bounds(gt)  # NaN for an empty geometry: no pair
    d, g = np.nonzero((bp[:, None, 0] < bg[None, :, 2]) & (bg[None, :, 0] < bp[:, None, 2])
                      & (bp[:, None, 1] < bg[None, :, 3]) & (bg[None, :, 1] < bp[:, None, 3]))
    width = np.minimum(bp[d, 2], bg[g, 2]) - np.maximum(bp[d, 0], bg[g, 0])
    height = np.minimum(bp[d, 3], bg[g, 3]) - np.maximum(bp[d, 1], bg[g, 1])
    bound = np.minimum(np.minimum(shapely.area(pred[d]), shapely.area(gt[g])), width * height)
    return d, g, bound


def intersection_areas(pred: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """Area of ``pred[i] ∩ gt[i]``: ``intersects`` first (cheap), ``intersection`` on the
    pairs that meet."""
    out = np.zeros(pred.size)
    if not pred.size:
        return out
    meet = np.flatnonzero(shapely.intersects(pred, gt))
    try:
        out[meet] = shapely.area(shapely.intersection(pred[meet], gt[meet]))
    except GEOSException as exc:
        raise InputError(f"shapely could not intersect two of the polygons ({exc})") from None
    return out


def overlaps(pred: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pred index, gt index, intersection area)`` of every pair with a positive
    intersection."""
    d, g, _ = candidates(pred, gt)
    inter = intersection_areas(pred[d], gt[g])
    keep = inter > 0
    return d[keep], g[keep], inter[keep]
