"""The three overlaps of the KITTI object benchmark, for every frame at once, as sparse
(detection, GT, overlap) triples of the pairs of one frame whose overlap is positive.

Boxes are KITTI's camera-frame columns (:mod:`rpx_cli.io.kitti_labels`), flattened over the
frames in frame order (``frame`` sorted, each frame's boxes in file order). As
``kitti_object_eval_python`` (``eval.py``: ``image_box_overlap``, ``bev_box_overlap``,
``d3_box_overlap``) defines them:

- ``bbox`` (2D): ``iw · ih / (area_d + area_g − iw · ih)`` with ``iw = min(x2) − max(x1)``,
  ``ih = min(y2) − max(y1)``, no "+1" pixel;
- ``bev``: the IoU of the footprints in the ground plane (camera x, z): a rectangle centred
  at ``(x, z)`` with its length ``l`` along ``(cos ry, −sin ry)`` and its width ``w`` across —
  in :mod:`rpx_cli.ops.rectangles`' terms ``[x, z, l, w, −ry]``, whose intersection kernel
  computes it (the reference clips polygons in float32 on a GPU; this is float64, so the two
  agree except where an overlap is within float32 rounding, about 1e-7, of a threshold);
- ``3d``: the footprint intersection times the vertical overlap ``min(y_d, y_g) −
  max(y_d − h_d, y_g − h_g)`` (y points down, the location is the bottom), over the union of
  the volumes ``l · h · w``.

:func:`dontcare_cover` is the 2D overlap of a detection with a ``DontCare`` region over the
detection's own area (the reference's ``criterion=0``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rpx_cli.ops import rectangles


@dataclass
class Pairs:
    """Overlapping (detection, GT) pairs of the same frame: indices and overlap."""

    det: np.ndarray  # (P,) int64
    gt: np.ndarray  # (P,) int64
    overlap: np.ndarray  # (P,) float64, > 0

    @classmethod
    def empty(cls) -> Pairs:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))


def frame_pairs(a_frame: np.ndarray, b_frame: np.ndarray, n_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (a, b) index pair of the same frame (frames sorted), frame by frame, each
    frame's pairs in a-major order."""
    b_start = np.searchsorted(b_frame, np.arange(n_frames + 1))
    per_a = np.diff(b_start)[a_frame]  # each a pairs with every b of its frame
    total = int(per_a.sum())
    a = np.repeat(np.arange(a_frame.size), per_a)
    offset = np.arange(total) - np.repeat(np.cumsum(per_a) - per_a, per_a)
    b = b_start[a_frame[a]] + offset
    return a.astype(np.int64), b.astype(np.int64)


def bbox_overlaps(det_box: np.ndarray, det_frame: np.ndarray, gt_box: np.ndarray,
                  gt_frame: np.ndarray, n_frames: int) -> Pairs:
    """2D IoU of every same-frame pair that intersects (``iw > 0`` and ``ih > 0``)."""
    d, g = frame_pairs(det_frame, gt_frame, n_frames)
    p, q = det_box[d], gt_box[g]
    iw = np.minimum(p[:, 2], q[:, 2]) - np.maximum(p[:, 0], q[:, 0])
    ih = np.minimum(p[:, 3], q[:, 3]) - np.maximum(p[:, 1], q[:, 1])
    keep = (iw > 0) & (ih > 0)
    p, q, iw, ih = p[keep], q[keep], iw[keep], ih[keep]
    inter = iw * ih
    q_area = (q[:, 2] - q[:, 0]) * (q[:, 3] - q[:, 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        overlap = inter / ((p[:, 2] - p[:, 0]) * (p[:, 3] - p[:, 1]) + q_area - inter)
    return Pairs(d[keep], g[keep], overlap)


def dontcare_cover(det_box: np.ndarray, det_frame: np.ndarray, dc_box: np.ndarray,
                   dc_frame: np.ndarray, n_frames: int) -> Pairs:
    """``intersection / area of the detection`` of every same-frame (detection, DontCare
    region) pair that intersects; ``gt`` indexes the regions."""
    d, g = frame_pairs(det_frame, dc_frame, n_frames)
    p, q = det_box[d], dc_box[g]
    iw = np.minimum(p[:, 2], q[:, 2]) - np.maximum(p[:, 0], q[:, 0])
    ih = np.minimum(p[:, 3], q[:, 3]) - np.maximum(p[:, 1], q[:, 1])
    keep = (iw > 0) & (ih > 0)
    p = p[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        cover = iw[keep] * ih[keep] / ((p[:, 2] - p[:, 0]) * (p[:, 3] - p[:, 1]))
    return Pairs(d[keep], g[keep], cover)


def footprints(location: np.ndarray, hwl: np.ndarray, rotation_y: np.ndarray) -> np.ndarray:
    """``[x, z, l, w, −ry]``: the ground-plane rectangles of camera-frame boxes."""
    return np.column_stack([location[:, 0], location[:, 2], hwl[:, 2], hwl[:, 1], -rotation_y])


def bev_intersections(det_rect: np.ndarray, det_frame: np.ndarray, gt_rect: np.ndarray,
                      gt_frame: np.ndarray, n_frames: int) -> Pairs:
    """The footprint intersection areas (``overlap``) of every same-frame pair that
    intersects, pairs in (detection, GT) order."""
    d, g, inter = rectangles.table_overlaps(det_rect, gt_rect, det_frame, gt_frame, n_frames)
    order = np.lexsort((g, d))
    return Pairs(d[order], g[order], inter[order])


def bev_overlaps(inter: Pairs, det_rect: np.ndarray, gt_rect: np.ndarray) -> Pairs:
    """BEV IoU from the footprint intersections."""
    d, g = inter.det, inter.gt
    union = gt_rect[g, 2] * gt_rect[g, 3] + det_rect[d, 2] * det_rect[d, 3] - inter.overlap
    return Pairs(d, g, inter.overlap / union)


def box3d_overlaps(inter: Pairs, det_location: np.ndarray, det_hwl: np.ndarray,
                   gt_location: np.ndarray, gt_hwl: np.ndarray) -> Pairs:
    """3D IoU from the footprint intersections: pairs whose vertical extents overlap."""
    d, g = inter.det, inter.gt
    yd, yg, hd, hg = det_location[d, 1], gt_location[g, 1], det_hwl[d, 0], gt_hwl[g, 0]
    iw = np.minimum(yd, yg) - np.maximum(yd - hd, yg - hg)
    keep = iw > 0
    d, g, iw = d[keep], g[keep], iw[keep]
    inc = iw * inter.overlap[keep]
    vd = det_hwl[d, 2] * det_hwl[d, 0] * det_hwl[d, 1]
    vg = gt_hwl[g, 2] * gt_hwl[g, 0] * gt_hwl[g, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        overlap = inc / (vd + vg - inc)
    return Pairs(d, g, overlap)
