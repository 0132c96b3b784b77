"""Rotated rectangles in the plane: rotated boxes (detectron2's ``RotatedBoxes``) and the
Birds-Eye-View footprints of cuboids, one frame's intersections at once.

A rectangle is ``[cx, cy, length, width, yaw]`` (float64): the centre, its extent along the
heading and across it, and the heading in radians, counter-clockwise from +x in a frame
whose y axis points up (``rpx_cli.io.shapes`` turns a detectron2 angle into ``-angle``, as
detectron2's own corners are the rotation by ``-angle`` in the y-up sense; see
``get_rotated_vertices`` in its ``box_iou_rotated_utils.h``). There is no shapely here and
no Python loop over pairs:

1. every (prediction, GT) pair of the frame is screened with the rectangles' axis-aligned
   bounding boxes, then with the separating-axis test on the four edge normals (both
   slightly widened: a pair they keep may still turn out not to intersect, never the
   reverse);
2. pairs of two axis-aligned rectangles (yaw exactly 0) get the box formula —
   ``(min(x2) − max(x1)) · (min(y2) − max(y1))`` with ``x1 = cx − l/2``, ``x2 = cx + l/2`` —
   the exact area, which makes ``--geometry rotated`` at angle 0 equal to ``--geometry box``
   number for number;
3. the others are clipped with the Sutherland–Hodgman clipper of detection3d's footprints
   (:func:`rpx_cli.ops.boxes3d.convex_intersection_area`), all pairs in one call.
"""

from __future__ import annotations

import numpy as np

from rpx_cli.ops.boxes3d import bev_corners, convex_intersection_area

# the screens keep pairs within this relative margin (rounding in the screens must never
# drop a pair that intersects; a kept pair that does not is clipped to 0)
_SLACK = 1e-9


def prepare(shapes: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    """``(rectangles, areas, None)``: nothing to repair."""
    shapes = np.asarray(shapes, np.float64).reshape(-1, 5)
    return shapes, area(shapes), None


def portable(shapes: np.ndarray) -> np.ndarray:
    return shapes


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


def overlaps(pred: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pred index, gt index, intersection area)`` of every pair of ``pred`` (D, 5) and
    ``gt`` (G, 5) rectangles whose intersection has a positive area."""
    d, g = candidates(pred, gt)
    inter = intersection_areas(pred[d], gt[g])
    keep = inter > 0
    return d[keep], g[keep], inter[keep]


def candidates(pred: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs that may intersect: bounding boxes first (a (D, G) broadcast), then the
    separating-axis test on the pairs left."""
    pred, gt = np.asarray(pred, np.float64).reshape(-1, 5), np.asarray(gt, np.float64).reshape(-1, 5)
    if not (len(pred) and len(gt)):
        empty = np.zeros(0, np.int64)
        return empty, empty.copy()
    ep, eg = half_extents(pred), half_extents(gt)
    reach = (ep[:, None, :] + eg[None, :, :]) * (1 + _SLACK)
    gap = np.abs(pred[:, None, :2] - gt[None, :, :2])
    d, g = np.nonzero((gap[..., 0] <= reach[..., 0]) & (gap[..., 1] <= reach[..., 1]))
    if d.size:
        apart = separated(pred[d], gt[g])
        d, g = d[~apart], g[~apart]
    return d, g


def separated(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether rectangles ``a[i]`` and ``b[i]`` are separated along one of their four edge
    normals (the separating-axis theorem: then they do not intersect), with a small margin."""
    delta = b[:, :2] - a[:, :2]
    out = np.zeros(a.shape[0], bool)
    for one, other in ((a, b), (b, a)):
        c, s = np.cos(one[:, 4]), np.sin(one[:, 4])
        oc, os_ = np.cos(other[:, 4]), np.sin(other[:, 4])
        for ux, uy, half in ((c, s, one[:, 2] / 2), (-s, c, one[:, 3] / 2)):
            # the other rectangle's half extent along (ux, uy)
            along = np.abs(ux * oc + uy * os_) * other[:, 2] / 2
            across = np.abs(-ux * os_ + uy * oc) * other[:, 3] / 2
            distance = np.abs(delta[:, 0] * ux + delta[:, 1] * uy)
            out |= distance > (half + along + across) * (1 + _SLACK) + 1e-12
    return out


def intersection_areas(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection area of rectangles ``a[i]`` and ``b[i]``."""
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
    rotated = np.flatnonzero(~aligned)
    if rotated.size:
        inter[rotated] = convex_intersection_area(corners(a[rotated]), corners(b[rotated]))
    return inter
