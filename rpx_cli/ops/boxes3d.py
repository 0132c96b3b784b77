"""Geometry of 3D boxes, vectorised over boxes and over (box, box) pairs.

A box is a centre ``(x, y, z)``, a size ``(w, l, h)`` in the nuScenes order (width across
the heading, length along it, height) and a yaw about +z (radians, counter-clockwise,
0 = +x; nuScenes quaternions are reduced to it when read, by
:func:`rpx_cli.io.boxes3d.quaternion_yaw`). Every function works on whole arrays: there
is no Python loop over boxes or pairs.

- :func:`angle_diff` / :func:`yaw_diff`: the devkit's smallest signed angle from one yaw to
  another with a period (2π, or π for symmetric objects such as barriers);
- :func:`center_distance`, :func:`velocity_l2`, :func:`scale_iou`: the devkit's TP-error
  measures (BEV centre distance, velocity error, the IoU of the sizes with centres and
  yaws aligned);
- :func:`bev_iou` / :func:`iou3d`: IoU of rotated footprints (Birds-Eye View), and 3D IoU =
  BEV intersection × z overlap over the union of volumes. The footprint intersection is a
  Sutherland–Hodgman clip of one rectangle by the four edges of the other, done for every
  pair at once (:func:`convex_intersection_area`); pairs whose circumscribed circles do not
  meet are 0 without clipping.
"""

from __future__ import annotations

import numpy as np

TWO_PI = 2.0 * np.pi


# --- angles -----------------------------------------------------------------------------------


def angle_diff(x: np.ndarray, y: np.ndarray, period: np.ndarray | float) -> np.ndarray:
    """The devkit's ``angle_diff``: the signed smallest angle from ``y`` to ``x`` for the
    given period, ``(x − y + period/2) mod period − period/2``, shifted into (−π, π]."""
    diff = np.mod(x - y + period / 2, period) - period / 2
    return np.where(diff > np.pi, diff - TWO_PI, diff)


def yaw_diff(gt_yaw: np.ndarray, pred_yaw: np.ndarray, period: np.ndarray | float = TWO_PI) -> np.ndarray:
    """``|angle_diff(gt, pred, period)|``: in [0, π] for 2π, [0, π/2] for π (the devkit's
    ``yaw_diff``, AOE)."""
    return np.abs(angle_diff(gt_yaw, pred_yaw, period))


def heading_accuracy(gt_yaw: np.ndarray, pred_yaw: np.ndarray) -> np.ndarray:
    """Waymo's heading accuracy ``clip(1 − |Δyaw| / π, 0, 1)`` with Δyaw the full heading
    difference (period 2π): 1 for the same heading, 0.5 at 90°, 0 when reversed."""
    return np.clip(1.0 - yaw_diff(gt_yaw, pred_yaw) / np.pi, 0.0, 1.0)


# --- TP errors ----------------------------------------------------------------------------------


def center_distance(a_xy: np.ndarray, b_xy: np.ndarray) -> np.ndarray:
    """BEV (x, y) distance between box centres, element-wise over ``(..., 2)`` arrays."""
    d = np.asarray(a_xy, dtype=np.float64) - np.asarray(b_xy, dtype=np.float64)
    return np.sqrt(d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1])


def velocity_l2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Velocity error (m/s), NaN when either velocity is unknown (NaN)."""
    return center_distance(a, b)


def scale_iou(a_size: np.ndarray, b_size: np.ndarray) -> np.ndarray:
    """The devkit's ``scale_iou``: IoU of two boxes with the same centre and yaw, i.e.
    ``Π min(sizes) / (Π a + Π b − Π min(sizes))`` (products in w·l·h order)."""
    a, b = np.asarray(a_size, np.float64), np.asarray(b_size, np.float64)
    m = np.minimum(a, b)
    inter = m[..., 0] * m[..., 1] * m[..., 2]
    va = a[..., 0] * a[..., 1] * a[..., 2]
    vb = b[..., 0] * b[..., 1] * b[..., 2]
    return inter / (va + vb - inter)


# --- footprints and IoU -------------------------------------------------------------------------


def bev_corners(center_xy: np.ndarray, size_wl: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """The four footprint corners (N, 4, 2), counter-clockwise: front-left, back-left,
    back-right, front-right (length along the heading, width across it)."""
    center_xy = np.asarray(center_xy, np.float64).reshape(-1, 2)
    half_w = np.asarray(size_wl, np.float64).reshape(-1, 2)[:, 0] / 2
    half_l = np.asarray(size_wl, np.float64).reshape(-1, 2)[:, 1] / 2
    yaw = np.asarray(yaw, np.float64).reshape(-1)
    c, s = np.cos(yaw), np.sin(yaw)
    local = np.stack([np.stack([half_l, half_w], -1), np.stack([-half_l, half_w], -1),
                      np.stack([-half_l, -half_w], -1), np.stack([half_l, -half_w], -1)], axis=1)
    x = local[..., 0] * c[:, None] - local[..., 1] * s[:, None]
    y = local[..., 0] * s[:, None] + local[..., 1] * c[:, None]
    return np.stack([x + center_xy[:, None, 0], y + center_xy[:, None, 1]], axis=-1)


def convex_intersection_area(subject: np.ndarray, clip: np.ndarray) -> np.ndarray:
    """Area of the intersection of convex polygons, pair by pair (Sutherland–Hodgman).

    ``subject`` and ``clip`` are (P, 4, 2) counter-clockwise quadrilaterals. The subject is
    clipped by the half-plane left of each clip edge in turn, for all P pairs at once: the
    polygons are kept padded in a (P, M, 2) array with a vertex count per pair, and after
    each edge the kept vertices are moved to the front (a stable sort of the keep mask).
    The area is the shoelace formula over the counted vertices.
    """
    subject = np.asarray(subject, np.float64)
    clip = np.asarray(clip, np.float64)
    P = subject.shape[0]
    if P == 0:
        return np.zeros(0)
    # a local origin (the clip polygon's first corner) keeps the shoelace sums small
    origin = clip[:, :1, :]
    verts = subject - origin
    clip = clip - origin
    count = np.full(P, 4, np.int64)
    rows = np.arange(P)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(4):
            e0 = clip[:, k, :][:, None, :]
            edge = (clip[:, (k + 1) % 4, :] - clip[:, k, :])[:, None, :]
            M = verts.shape[1]
            slot = np.arange(M)[None, :]
            valid = slot < count[:, None]
            following = (slot + 1) % np.maximum(count, 1)[:, None]
            rel = verts - e0
            side = edge[..., 0] * rel[..., 1] - edge[..., 1] * rel[..., 0]  # > 0: inside
            side_next = side[rows, following]
            nxt = verts[rows, following]
            inside, inside_next = side >= 0, side_next >= 0
            keep = valid & inside
            crossing = valid & (inside != inside_next)
            t = side / (side - side_next)
            cut = verts + t[..., None] * (nxt - verts)
            out = np.stack([verts, cut], axis=2).reshape(P, 2 * M, 2)
            ok = np.stack([keep, crossing], axis=2).reshape(P, 2 * M)
            count = ok.sum(axis=1)
            order = np.argsort(~ok, axis=1, kind="stable")[:, :max(int(count.max()), 1)]
            verts = np.take_along_axis(out, order[..., None], axis=1)
        M = verts.shape[1]
        slot = np.arange(M)[None, :]
        valid = slot < count[:, None]
        following = (slot + 1) % np.maximum(count, 1)[:, None]
        nxt = verts[rows, following]
        terms = verts[..., 0] * nxt[..., 1] - nxt[..., 0] * verts[..., 1]
        area = 0.5 * np.where(valid, terms, 0.0).sum(axis=1)
    return np.where(count >= 3, np.maximum(area, 0.0), 0.0)


def _footprint_intersection(a_xy, a_wl, a_yaw, b_xy, b_wl, b_yaw) -> np.ndarray:
    """Intersection areas of footprints a[i] and b[i]; pairs too far apart to meet are 0
    without clipping (centre distance >= the sum of the half-diagonals)."""
    a_xy, b_xy = np.asarray(a_xy, np.float64), np.asarray(b_xy, np.float64)
    a_wl, b_wl = np.asarray(a_wl, np.float64), np.asarray(b_wl, np.float64)
    reach = 0.5 * (np.hypot(a_wl[:, 0], a_wl[:, 1]) + np.hypot(b_wl[:, 0], b_wl[:, 1]))
    near = np.flatnonzero(center_distance(a_xy, b_xy) < reach)
    inter = np.zeros(a_xy.shape[0])
    if near.size:
        inter[near] = convex_intersection_area(
            bev_corners(a_xy[near], a_wl[near], np.asarray(a_yaw)[near]),
            bev_corners(b_xy[near], b_wl[near], np.asarray(b_yaw)[near]))
    return inter


def bev_iou(a_center, a_size, a_yaw, b_center, b_size, b_yaw) -> np.ndarray:
    """IoU of the footprints of boxes a[i] and b[i] (N pairs): rotated rectangles of
    size (w, l) in the XY plane."""
    a_center, b_center = np.asarray(a_center, np.float64), np.asarray(b_center, np.float64)
    a_size, b_size = np.asarray(a_size, np.float64), np.asarray(b_size, np.float64)
    inter = _footprint_intersection(a_center[:, :2], a_size[:, :2], a_yaw,
                                    b_center[:, :2], b_size[:, :2], b_yaw)
    union = a_size[:, 0] * a_size[:, 1] + b_size[:, 0] * b_size[:, 1] - inter
    return np.where(inter > 0, inter / union, 0.0)


def iou3d(a_center, a_size, a_yaw, b_center, b_size, b_yaw) -> np.ndarray:
    """3D IoU of boxes a[i] and b[i]: footprint intersection × overlap of the z extents
    ``[z − h/2, z + h/2]``, over the union of the volumes (yaw-only boxes)."""
    a_center, b_center = np.asarray(a_center, np.float64), np.asarray(b_center, np.float64)
    a_size, b_size = np.asarray(a_size, np.float64), np.asarray(b_size, np.float64)
    top = np.minimum(a_center[:, 2] + a_size[:, 2] / 2, b_center[:, 2] + b_size[:, 2] / 2)
    bottom = np.maximum(a_center[:, 2] - a_size[:, 2] / 2, b_center[:, 2] - b_size[:, 2] / 2)
    overlap = np.maximum(top - bottom, 0.0)
    inter = np.zeros(a_center.shape[0])
    both = np.flatnonzero(overlap > 0)
    if both.size:
        inter[both] = _footprint_intersection(
            a_center[both, :2], a_size[both, :2], np.asarray(a_yaw)[both],
            b_center[both, :2], b_size[both, :2], np.asarray(b_yaw)[both]) * overlap[both]
    va = a_size[:, 0] * a_size[:, 1] * a_size[:, 2]
    vb = b_size[:, 0] * b_size[:, 1] * b_size[:, 2]
    return np.where(inter > 0, inter / (va + vb - inter), 0.0)
