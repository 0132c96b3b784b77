"""COCO polygons as run-length masks, exactly as pycocotools' ``rleFrPoly`` makes them, and
the bounds a polygon must keep to be rasterised at all.

``rleFrPoly`` scales the vertices by 5 (``int(5 x + .5)``, C's truncation), walks every edge
one step at a time along its longer axis (``max(|dx|, |dy|) + 1`` points, the other
coordinate ``int(s + slope · t + .5)``), keeps a point where the walk crosses a pixel
column's centre inside the image (its row: the lower of the two points, scaled back,
clipped to ``[0, h]`` and rounded up), and reads the sorted crossings as the boundaries of
the runs (two crossings at one pixel cancel). Parts of one object are merged as ``rleMerge``
(union). The native core (``rpx_cli/csrc/rle.c``) does the same in C; the functions here
are its numpy twins (``reference_*``), which the tests compare bit for bit with it and with
pycocotools.

**Bounds** (:func:`polygon_problem`, checked on both paths before anything is
rasterised — pycocotools crashes on a coordinate of 1e8 and needs memory in proportion to
a polygon's perimeter): every coordinate within :data:`OUTSIDE` image sizes of the image
(plus :data:`SLACK` pixels), and the walk at most :func:`max_points` points.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

OUTSIDE = 4
"""How many image widths (heights) a vertex may lie left of (above) the image, or right of
(below) it."""
SLACK = 64.0
"""Pixels a vertex may lie beyond that, whatever the image size."""
MAX_SIDE_STEPS = 1280
"""The walk's budget per pixel of ``h + w`` (5 steps a pixel: 256 image perimeters)."""
MAX_STEPS = 1 << 25
"""The walk's budget whatever the image size (pycocotools holds 16 bytes a step)."""
MAX_PIXELS = (1 << 31) - 1
"""The most pixels a mask may have: COCO's RLE tools count runs in 32 bits (a sum of two
runs must not wrap)."""

_INT_MIN = -(1 << 31)


def max_points(h: int, w: int, vertices: int) -> int:
    """The most points the walk of a polygon of ``vertices`` vertices may take at (h, w)."""
    return min(MAX_SIDE_STEPS * (h + w), MAX_STEPS) + vertices


def _to_int(values: np.ndarray) -> np.ndarray:
    """C's ``(int)`` as x86-64 computes it: truncation; INT_MIN for NaN or out of range."""
    inside = (values > -2147483649.0) & (values < 2147483648.0)
    return np.where(inside, np.trunc(np.where(inside, values, 0.0)), _INT_MIN).astype(np.int64)


def scaled_vertices(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``int(5 x + .5)`` and ``int(5 y + .5)`` of a flat ``[x1, y1, x2, y2, ...]``."""
    xy = np.asarray(xy, np.float64)
    return _to_int(5.0 * xy[0::2] + 0.5), _to_int(5.0 * xy[1::2] + 0.5)


def walk_length(xy: np.ndarray) -> int:
    """The number of points ``rleFrPoly`` walks for the polygon ``xy``."""
    x, y = scaled_vertices(xy)
    dx = np.abs(np.roll(x, -1) - x)
    dy = np.abs(np.roll(y, -1) - y)
    return int(np.maximum(dx, dy).sum() + x.size)


def polygon_problem(xy: np.ndarray, h: int, w: int) -> str | None:
    """Why the polygon ``xy`` (flat, finite) cannot be rasterised at (h, w), or None."""
    xy = np.asarray(xy, np.float64)
    x, y = xy[0::2], xy[1::2]
    for values, size, axis in ((x, w, "x"), (y, h, "y")):
        low, high = -OUTSIDE * size - SLACK, (OUTSIDE + 1) * size + SLACK
        outside = (values < low) | (values > high)
        if outside.any():
            value = float(values[np.argmax(outside)])
            return (f"a vertex at {axis} = {value:g} lies more than {OUTSIDE} image "
                    f"{'widths' if axis == 'x' else 'heights'} outside the {h}×{w} image "
                    f"(rpx rasterises {axis} within [{low:g}, {high:g}])")
    steps = walk_length(xy)
    budget = max_points(h, w, x.size)
    if steps > budget:
        return (f"its outline is {steps} steps of 1/5 pixel long, more than the {budget} a "
                f"polygon of {x.size} vertices in a {h}×{w} image may have")
    return None


def flatten(objects: list[list[list[float]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Objects' polygons (each a list of flat ``[x1, y1, ...]`` lists) as one coordinate
    array ``xy``, each polygon's first vertex (``vertex_starts``, P + 1) and each object's
    first polygon (``polygon_starts``, N + 1)."""
    rings = list(chain.from_iterable(objects))
    vertex_starts = np.zeros(len(rings) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, rings), np.int64, count=len(rings)) // 2, out=vertex_starts[1:])
    polygon_starts = np.zeros(len(objects) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, objects), np.int64, count=len(objects)), out=polygon_starts[1:])
    xy = np.fromiter(chain.from_iterable(rings), np.float64, count=2 * int(vertex_starts[-1]))
    return xy, vertex_starts, polygon_starts


def first_problem(xy: np.ndarray, vertex_starts: np.ndarray, hw: np.ndarray) -> tuple[int, str] | None:
    """The first polygon (of ``vertex_starts``; ``hw`` its image's (h, w), P × 2) that
    breaks the bounds, and why; None when every one keeps them. Vectorised over all."""
    if vertex_starts.size < 2:
        return None
    k = np.diff(vertex_starts)
    h = np.repeat(hw[:, 0], k).astype(np.float64)
    w = np.repeat(hw[:, 1], k).astype(np.float64)
    x, y = xy[0::2], xy[1::2]
    out = (x < -OUTSIDE * w - SLACK) | (x > (OUTSIDE + 1) * w + SLACK) | \
        (y < -OUTSIDE * h - SLACK) | (y > (OUTSIDE + 1) * h + SLACK)
    bad = np.zeros(k.size, bool)
    if out.any():
        bad[np.searchsorted(vertex_starts, np.flatnonzero(out), side="right") - 1] = True
    sx, sy = scaled_vertices(xy)
    following = np.arange(1, sx.size + 1)
    following[vertex_starts[1:] - 1] = vertex_starts[:-1]  # the last vertex closes on the first
    step = np.maximum(np.abs(sx[following] - sx), np.abs(sy[following] - sy)) + 1
    walked = np.add.reduceat(step, vertex_starts[:-1]) if step.size else np.zeros(0, np.int64)
    budget = np.minimum(MAX_SIDE_STEPS * (hw[:, 0] + hw[:, 1]), MAX_STEPS) + k
    bad |= walked > budget
    if not bad.any():
        return None
    q = int(np.argmax(bad))
    a, b = int(vertex_starts[q]), int(vertex_starts[q + 1])
    return q, polygon_problem(xy[2 * a:2 * b], int(hw[q, 0]), int(hw[q, 1])) or "out of bounds"


def reference_polygon(xy: np.ndarray, h: int, w: int) -> np.ndarray:
    """``rleFrPoly`` of the flat polygon ``xy`` at (h, w): its runs (int64), with numpy over
    the walk's points (the zero-length runs merged as the C loop merges them)."""
    x, y = scaled_vertices(xy)
    k = x.size
    xs, ys = x, y
    xe, ye = np.roll(x, -1), np.roll(y, -1)
    dx, dy = np.abs(xe - xs), np.abs(ys - ye)
    along_x = dx >= dy
    flip = (along_x & (xs > xe)) | (~along_x & (ys > ye))
    xs, xe = np.where(flip, xe, xs), np.where(flip, xs, xe)
    ys, ye = np.where(flip, ye, ys), np.where(flip, ys, ye)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(along_x, (ye - ys).astype(np.float64) / dx,
                         (xe - xs).astype(np.float64) / dy)
    steps = np.maximum(dx, dy)
    n = steps + 1
    edge = np.repeat(np.arange(k), n)
    d = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    t = np.where(flip[edge], steps[edge] - d, d)
    tf = t.astype(np.float64)
    with np.errstate(invalid="ignore"):
        u = np.where(along_x[edge], t + xs[edge], _to_int(xs[edge] + slope[edge] * tf + 0.5))
        v = np.where(along_x[edge], _to_int(ys[edge] + slope[edge] * tf + 0.5), t + ys[edge])
    moved = np.flatnonzero(u[1:] != u[:-1]) + 1
    up = u[moved] < u[moved - 1]
    xd = np.where(up, u[moved], u[moved] - 1).astype(np.float64)
    xd = (xd + 0.5) / 5.0 - 0.5
    keep = (np.floor(xd) == xd) & (xd >= 0) & (xd <= float(w - 1))
    yd = np.minimum(v[moved], v[moved - 1]).astype(np.float64)
    yd = (yd + 0.5) / 5.0 - 0.5
    yd = np.ceil(np.clip(yd, 0.0, float(h)))
    at = (xd[keep].astype(np.int64) * h + yd[keep].astype(np.int64)) % (1 << 32)
    a = np.sort(np.concatenate([at, [(h * w) % (1 << 32)]]))
    a = np.diff(a, prepend=0)
    return _merge_zero_runs(a)


def _merge_zero_runs(a: np.ndarray) -> np.ndarray:
    """``rleFrPoly``'s last loop: a zero difference drops out and the next one is added to
    the run before it (boundaries that coincide cancel)."""
    zeros = np.flatnonzero(a[1:] == 0) + 1
    if not zeros.size:
        return a.astype(np.int64)
    out = [int(a[0])]
    j = 1
    while j < a.size:  # only where two crossings coincide (rare): not a loop over pixels
        if a[j] > 0:
            out.append(int(a[j]))
            j += 1
        else:
            j += 1
            if j < a.size:
                out[-1] += int(a[j])
                j += 1
    return np.asarray(out, np.int64)


def reference_merge(masks: list[np.ndarray], intersect: bool = False) -> np.ndarray:
    """``rleMerge`` of masks (their runs) of one size: the union (or intersection), as the C
    walk emits it (a run ends wherever the merged value changes)."""
    if len(masks) == 1:
        return np.asarray(masks[0], np.int64)
    out = np.asarray(masks[0], np.int64)
    for other in masks[1:]:
        out = _merge_two(out, np.asarray(other, np.int64), intersect)
    return out


def _merge_two(a: np.ndarray, b: np.ndarray, intersect: bool) -> np.ndarray:
    """pycocotools' run walk over two masks, transcribed (one step per run boundary of
    either: a reference, never on a hot path)."""
    if not a.size or not b.size:
        return np.zeros(0, np.int64)
    A, B = a.tolist(), b.tolist()
    ca, cb, cc, ct = A[0], B[0], 0, 1
    v = va = vb = False
    i = j = 1
    out = []
    while ct > 0:
        c = min(ca, cb)
        cc += c
        ca -= c
        advanced = False
        if not ca and i < len(A):
            ca, va, i, advanced = A[i], not va, i + 1, True
        cb -= c
        if not cb and j < len(B):
            cb, vb, j, advanced = B[j], not vb, j + 1, True
        ct = ca + cb
        before = v
        v = (va and vb) if intersect else (va or vb)
        if v != before or ct == 0:
            out.append(cc)
            cc = 0
        if not advanced and c == 0:
            break
    return np.asarray(out, np.int64)
