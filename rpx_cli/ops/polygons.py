"""Multi-polygons with shapely 2's array functions: repair, areas, one frame's intersections.

Imported only for ``--geometry polygon`` (shapely is the optional extra ``rpx-eval[geometry]``;
the polygon kind, ``rpx_cli.tasks.detection.kinds.polygon``, checks it first). Every
function works on whole arrays of geometries: no Python loop over objects or pairs.

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

_POLYGON, _MULTIPOLYGON, _COLLECTION = 3, 6, 7
EMPTY = shapely.Polygon()


# make_valid's time grows with the square of a part's self-intersections (a ring of 500
# random-order vertices: ~55,000 crossings, minutes): a part is repaired only below these
# (measured: 1,000 crossings repair in ~0.3 s; real annotations have a handful)
MAX_SELF_INTERSECTIONS = 1_000
# edge pairs whose x-extents overlap, tested for crossings (real polygons of <= 2,000
# ordered vertices have at most 2 million pairs in all; a pathological ring more)
MAX_EDGE_PAIRS = 50_000_000
_CHUNK = 2_000_000


class RepairTooCostly(ValueError):
    """An invalid part whose repair would not end in reasonable time (``obj``: its object)."""

    def __init__(self, obj: int, message: str) -> None:
        super().__init__(message)
        self.obj = obj


def self_intersections(coords: np.ndarray, ring_start: np.ndarray, cap: int) -> int:
    """The proper crossings between the edges of one part's closed rings (``coords`` with
    ``ring_start`` bounds, each ring's last point repeating its first), counted until
    ``cap`` is passed (then ``cap + 1``). Edges are swept by x (sorted by their left end;
    each is tested with those starting before it ends), in chunks: a ring whose crossings
    pass ``cap`` is found in the first chunk, whatever its size. Raises ValueError past
    :data:`MAX_EDGE_PAIRS` candidate pairs."""
    last = np.zeros(coords.shape[0], bool)
    last[ring_start[1:] - 1] = True  # a ring's closing point starts no edge
    start = np.flatnonzero(~last)
    a, b = coords[start], coords[start + 1]
    xmin, xmax = np.minimum(a[:, 0], b[:, 0]), np.maximum(a[:, 0], b[:, 0])
    order = np.argsort(xmin, kind="stable")
    a, b, xmax = a[order], b[order], xmax[order]
    ends = np.searchsorted(xmin[order], xmax, side="right")
    per_edge = np.maximum(ends - np.arange(ends.size) - 1, 0)
    if int(per_edge.sum()) > MAX_EDGE_PAIRS:
        raise ValueError(f"{int(per_edge.sum()):,} pairs of edges overlap in x, more than "
                         f"{MAX_EDGE_PAIRS:,}")
    found, first = 0, 0
    cumulative = np.cumsum(per_edge)
    while first < per_edge.size:
        stop = int(np.searchsorted(cumulative, cumulative[first] - per_edge[first] + _CHUNK,
                                   side="right"))
        stop = max(stop, first + 1)
        rows = np.arange(first, stop)
        counts = per_edge[first:stop]
        i = np.repeat(rows, counts)
        j = i + 1 + (np.arange(i.size) - np.repeat(np.cumsum(counts) - counts, counts))
        found += _crossings(a[i], b[i], a[j], b[j])
        if found > cap:
            return cap + 1
        first = stop
    return found


def _crossings(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> int:
    """How many segments ab cross cd properly (each one's ends strictly on both sides)."""
    def side(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
        return np.sign((q[:, 0] - p[:, 0]) * (r[:, 1] - p[:, 1])
                       - (q[:, 1] - p[:, 1]) * (r[:, 0] - p[:, 0]))
    apart = (np.maximum(a[:, 1], b[:, 1]) < np.minimum(c[:, 1], d[:, 1])) | \
        (np.maximum(c[:, 1], d[:, 1]) < np.minimum(a[:, 1], b[:, 1]))
    crossing = (side(a, b, c) * side(a, b, d) < 0) & (side(c, d, a) * side(c, d, b) < 0)
    return int(np.count_nonzero(crossing & ~apart))


def _check_repair_cost(polygons, parts: np.ndarray, owner: np.ndarray) -> None:
    """Every part about to be repaired (``parts``: indices into ``polygons``' parts,
    ``owner``: their objects) crosses itself at most :data:`MAX_SELF_INTERSECTIONS`
    times; else :class:`RepairTooCostly` naming the object."""
    for part, obj in zip(parts.tolist(), owner.tolist(), strict=True):
        rings = slice(polygons.part_start[part], polygons.part_start[part + 1] + 1)
        bounds = polygons.ring_start[rings]
        coords = polygons.coords[bounds[0]:bounds[-1]]
        try:
            count = self_intersections(coords, bounds - bounds[0], MAX_SELF_INTERSECTIONS)
        except ValueError as exc:
            raise RepairTooCostly(obj, f"its rings are too tangled to repair ({exc})") from None
        if count > MAX_SELF_INTERSECTIONS:
            raise RepairTooCostly(obj, f"its rings cross themselves more than "
                                       f"{MAX_SELF_INTERSECTIONS:,} times: too tangled to repair "
                                       "(points out of order?)")


def prepare(polygons) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(geometries, areas, repaired)`` of a :class:`~rpx_cli.io.shapes.PolygonSet`: one
    valid Polygon or MultiPolygon (or an empty polygon) per object, its area, and whether
    it needed a repair. An invalid part that crosses itself more than
    :data:`MAX_SELF_INTERSECTIONS` times raises :class:`RepairTooCostly` before any repair."""
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
    if not valid.all():
        broken = np.flatnonzero(~valid)
        _check_repair_cost(polygons, broken, object_of_part[broken])
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
