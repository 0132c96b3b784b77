"""Rotated rectangles in the plane — rotated boxes (detectron2's ``RotatedBoxes``) and the
Birds-Eye-View footprints of cuboids: every frame's intersections at once, without shapely
and without a Python loop over pairs.

A rectangle is ``[cx, cy, length, width, yaw]`` (float64): the centre, its extent along the
heading and across it, and the heading in radians, counter-clockwise from +x in a frame
whose y axis points up (``rpx_cli.io.shapes`` turns a detectron2 angle into ``-angle``:
detectron2's own corners are the rotation by ``-angle`` in the y-up sense, see
``get_rotated_vertices`` in its ``box_iou_rotated_utils.h``).

:func:`table_overlaps` takes the rectangles of many frames and returns every (prediction,
GT) pair of a frame whose intersection has a positive area:

1. the pairs of each frame are generated in chunks (a frame of 500 × 500 is one chunk of
   250,000 pairs) and screened with the rectangles' axis-aligned bounding boxes;
2. pairs of two axis-aligned rectangles (yaw exactly 0) get the box formula —
   ``(min(x2) − max(x1)) · (min(y2) − max(y1))`` with ``x1 = cx − l/2``, ``x2 = cx + l/2`` —
   the exact area, which makes ``--geometry rotated`` at angle 0 equal to ``--geometry box``
   number for number;
3. the others get :func:`rectangle_intersection` (about 0.4 µs a pair), except pairs whose
   edges are within 1e-4 rad of parallel (there, edges may lie on one another), which get
   the Sutherland–Hodgman clipper of detection3d's footprints
   (:func:`rpx_cli.ops.boxes3d.convex_intersection_area`, about 5 µs a pair), also the
   reference the fast kernel is tested against.

Computed for all frames at once in the summary (not per pair in the workers): batches of
thousands of pairs cost a tenth of a per-frame call's overhead.
"""

from __future__ import annotations

import numpy as np

from rpx_cli.ops.boxes3d import bev_corners, convex_intersection_area

# pairs generated per chunk (bounding-box screen) and clipped per batch (cache-sized)
_CHUNK = 1 << 18
_BATCH = 1 << 15
# relative angle (sin or cos) below which two rectangles' edges count as parallel: near it,
# the kernel's error grows as 1e-16 / angle of the area (measured: 2e-11 at 1e-5 rad for two
# rectangles sharing a side line), so it hands those pairs to the clipper
_PARALLEL = 1e-4


def rectangles_of(shapes: np.ndarray) -> np.ndarray:
    """``shapes`` as (N, 5) float64 rectangles."""
    return np.asarray(shapes, np.float64).reshape(-1, 5)


def area(shapes: np.ndarray) -> np.ndarray:
    """``length · width`` of each rectangle."""
    return shapes[:, 2] * shapes[:, 3]


def corners(shapes: np.ndarray) -> np.ndarray:
    """(N, 4, 2) corners, counter-clockwise (y up)."""
    return bev_corners(shapes[:, :2], shapes[:, [3, 2]], shapes[:, 4])


def half_extents(shapes: np.ndarray) -> np.ndarray:
    """(N, 2) half width and half height of each rectangle's axis-aligned bounding box."""
    c, s = np.abs(np.cos(shapes[:, 4])), np.abs(np.sin(shapes[:, 4]))
    hl, hw = shapes[:, 2] / 2, shapes[:, 3] / 2
    return np.stack([hl * c + hw * s, hl * s + hw * c], axis=1)


# --- many frames ----------------------------------------------------------------------------


def table_overlaps(pred: np.ndarray, gt: np.ndarray, pred_frame: np.ndarray, gt_frame: np.ndarray,
                   n_frames: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pred index, gt index, intersection area)`` of every pair of the same frame whose
    rectangles intersect with a positive area. ``pred_frame``/``gt_frame`` are sorted."""
    pred, gt = np.asarray(pred, np.float64).reshape(-1, 5), np.asarray(gt, np.float64).reshape(-1, 5)
    d_start = np.searchsorted(pred_frame, np.arange(n_frames + 1))
    g_start = np.searchsorted(gt_frame, np.arange(n_frames + 1))
    d_count, g_count = np.diff(d_start), np.diff(g_start)
    # work units: a frame's predictions in blocks of at most _CHUNK pairs each
    block = np.maximum(_CHUNK // np.maximum(g_count, 1), 1)
    n_blocks = np.where(g_count > 0, -(-d_count // block), 0)
    unit_frame = np.repeat(np.arange(n_frames), n_blocks)
    first = np.repeat(np.cumsum(n_blocks) - n_blocks, n_blocks)
    unit_lo = d_start[unit_frame] + (np.arange(unit_frame.size) - first) * block[unit_frame]
    unit_hi = np.minimum(unit_lo + block[unit_frame], d_start[unit_frame + 1])
    unit_size = (unit_hi - unit_lo) * g_count[unit_frame]
    extents_p, extents_g = half_extents(pred), half_extents(gt)
    out_d, out_g, out_inter = [], [], []
    ends = np.cumsum(unit_size)
    lo = 0
    while lo < unit_frame.size:
        # as many units as fit in a chunk (at least one)
        hi = max(int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + _CHUNK, side="right")), lo + 1)
        sizes = unit_size[lo:hi]
        local = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        unit = np.repeat(np.arange(lo, hi), sizes)
        n_gt = g_count[unit_frame[unit]]
        d = unit_lo[unit] + local // n_gt
        g = g_start[unit_frame[unit]] + local % n_gt
        reach = (extents_p[d] + extents_g[g]) * (1 + 1e-9)
        near = (np.abs(pred[d, 0] - gt[g, 0]) <= reach[:, 0]) & (np.abs(pred[d, 1] - gt[g, 1]) <= reach[:, 1])
        d, g = d[near], g[near]
        for k in range(0, d.size, _BATCH):
            dd, gg = d[k:k + _BATCH], g[k:k + _BATCH]
            inter = intersection_areas(pred[dd], gt[gg])
            keep = inter > 0
            out_d.append(dd[keep])
            out_g.append(gg[keep])
            out_inter.append(inter[keep])
        lo = hi
    if not out_d:
        empty = np.zeros(0, np.int64)
        return empty, empty.copy(), np.zeros(0)
    return np.concatenate(out_d), np.concatenate(out_g), np.concatenate(out_inter)


def overlaps(pred: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`table_overlaps` of one frame."""
    pred, gt = np.asarray(pred, np.float64).reshape(-1, 5), np.asarray(gt, np.float64).reshape(-1, 5)
    return table_overlaps(pred, gt, np.zeros(len(pred), np.int64), np.zeros(len(gt), np.int64), 1)


# --- pairs ------------------------------------------------------------------------------------


def intersection_areas(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection area of rectangles ``a[i]`` and ``b[i]``: the box formula for two
    axis-aligned ones, :func:`rectangle_intersection` where no edges are near parallel, the
    Sutherland–Hodgman clipper where some are."""
    inter = np.zeros(a.shape[0])
    if not inter.size:
        return inter
    aligned = (a[:, 4] == 0) & (b[:, 4] == 0)
    if aligned.any():
        p, q = a[aligned], b[aligned]
        w = np.minimum(p[:, 0] + p[:, 2] / 2, q[:, 0] + q[:, 2] / 2) - \
            np.maximum(p[:, 0] - p[:, 2] / 2, q[:, 0] - q[:, 2] / 2)
        h = np.minimum(p[:, 1] + p[:, 3] / 2, q[:, 1] + q[:, 3] / 2) - \
            np.maximum(p[:, 1] - p[:, 3] / 2, q[:, 1] - q[:, 3] / 2)
        inter[aligned] = np.where((w > 0) & (h > 0), w * h, 0.0)
    rest = np.flatnonzero(~aligned)
    if rest.size:
        fast, parallel = rectangle_intersection(a[rest], b[rest])
        inter[rest] = fast
        slow = rest[parallel]
        if slow.size:
            inter[slow] = convex_intersection_area(corners(a[slow]), corners(b[slow]))
    return inter


def rectangle_intersection(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(areas, parallel)``: the intersection area of rectangles ``a[i]`` and ``b[i]`` by
    Green's theorem, and where it cannot be trusted (edges within 1e-4 rad of parallel,
    which may lie on one another: use the clipper there).

    The area of A ∩ B is ``½ ∮ (x dy − y dx)`` around its boundary, which is made of the
    parts of A's edges inside B and the parts of B's edges inside A. Each part is found with
    a Liang–Barsky clip of an edge ``p + t d`` against the other rectangle as an axis-aligned
    box in that rectangle's own frame (``t`` in ``[lo, hi]``), and adds
    ``½ (hi − lo) · cross(p, d)`` — a cross product about one point (A's centre), so the two
    frames may be mixed. Where two edges are exactly collinear both would be counted; their
    rectangles have edges within 1e-4 rad of parallel and are flagged."""
    ca, sa, cb, sb = np.cos(a[:, 4]), np.sin(a[:, 4]), np.cos(b[:, 4]), np.sin(b[:, 4])
    c, s = cb * ca + sb * sa, sb * ca - cb * sa  # the angle from A to B
    parallel = np.minimum(np.abs(c), np.abs(s)) < _PARALLEL
    dx, dy = b[:, 0] - a[:, 0], b[:, 1] - a[:, 1]
    half_la, half_wa, half_lb, half_wb = a[:, 2] / 2, a[:, 3] / 2, b[:, 2] / 2, b[:, 3] / 2
    # B's edges in A's frame, about A's centre, clipped to A
    part_b = _clipped_edges(ca * dx + sa * dy, -sa * dx + ca * dy, c * half_lb, s * half_lb,
                            -s * half_wb, c * half_wb, half_la, half_wa, 0.0, 0.0)
    # A's edges in B's frame, clipped to B; cross products about A's centre (offset below)
    qx, qy = -(cb * dx + sb * dy), sb * dx - cb * dy
    part_a = _clipped_edges(qx, qy, c * half_la, -s * half_la, s * half_wa, c * half_wa,
                            half_lb, half_wb, qx, qy)
    return np.maximum(part_a + part_b, 0.0), parallel


def _clipped_edges(ox, oy, ux, uy, vx, vy, hx, hy, cx, cy) -> np.ndarray:
    """``Σ ½ (hi − lo) · cross(p − c, d)`` over the edges ``p + t d`` of the rectangle with
    centre ``o`` and half axes ``u``, ``v`` (corners ``o ± u ± v``, counter-clockwise),
    clipped to the box ``|x| <= hx``, ``|y| <= hy`` (Liang–Barsky); all (P,) arrays."""
    # corners o+u+v, o-u+v, o-u-v, o+u-v and the edges between them
    px = np.stack([ox + ux + vx, ox - ux + vx, ox - ux - vx, ox + ux - vx], axis=1)
    py = np.stack([oy + uy + vy, oy - uy + vy, oy - uy - vy, oy + uy - vy], axis=1)
    ex = np.stack([-2 * ux, -2 * vx, 2 * ux, 2 * vx], axis=1)
    ey = np.stack([-2 * uy, -2 * vy, 2 * uy, 2 * vy], axis=1)
    hx, hy = np.asarray(hx)[:, None], np.asarray(hy)[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ix, iy = 1.0 / ex, 1.0 / ey
        t1, t2 = (-hx - px) * ix, (hx - px) * ix
        t3, t4 = (-hy - py) * iy, (hy - py) * iy
        lo = np.maximum(np.maximum(np.minimum(t1, t2), np.minimum(t3, t4)), 0.0)
        hi = np.minimum(np.minimum(np.maximum(t1, t2), np.maximum(t3, t4)), 1.0)
        length = np.where(hi > lo, hi - lo, 0.0)  # NaN (an edge parallel to an axis): 0
        rx, ry = px - np.asarray(cx)[..., None], py - np.asarray(cy)[..., None]
        return 0.5 * (length * (rx * ey - ry * ex)).sum(axis=1)
