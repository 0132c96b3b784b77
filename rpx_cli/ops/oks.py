"""Object keypoint similarity (``--iou-type keypoints``), as pycocotools' ``computeOks``.

For a detection ``d`` and a GT ``g`` with keypoint sigmas ``σ`` (COCO's 17 by default):

    e_i = (dx_i² + dy_i²) / (2σ_i)² / (area_g + ε) / 2,        OKS = mean over i of exp(−e_i)

over the GT's visible points (``v > 0``). A GT without a visible point uses every point,
with ``dx_i`` the distance of the detection's point outside the GT box grown by its size on
each side (``[x − w, x + 2w] × [y − h, y + 2h]``), 0 inside. ``ε`` is ``np.spacing(1)``.
The operations are pycocotools' in its order, and each pair's mean sums the same values in
the same order (the visible points, packed), so the similarities are equal bit for bit.

:class:`OksGeometry` serves every detection view (:mod:`rpx_cli.ops.geometry`'s protocol):
objects are ids, and the similarity of any pairs the views ask for is computed then,
vectorised over the pairs. A crowd GT is compared as any other (pycocotools ignores it, and
lets it match many detections, but computes OKS alike).
"""

from __future__ import annotations

import numpy as np

from rpx_cli import native
from rpx_cli.ops.matching import Similarity, empty_flags

COCO_SIGMAS = np.array([.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07, 1.07,
                        .87, .87, .89, .89]) / 10.0
"""pycocotools' ``Params.kpt_oks_sigmas`` (the COCO person skeleton, 17 points)."""
COCO_SKELETON = ((15, 13), (13, 11), (16, 14), (14, 12), (11, 12), (5, 11), (6, 12), (5, 6), (5, 7),
                 (6, 8), (7, 9), (8, 10), (1, 2), (0, 1), (0, 2), (1, 3), (2, 4), (3, 5), (4, 6))
"""The person category's ``skeleton`` of COCO's keypoint files, its points counted from 0."""


def oks_pairs(dt: np.ndarray, gt: np.ndarray, gt_area: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
    """OKS of ``dt[i]`` with ``gt[i]``. Rows are ``[x1, y1, v1, ..., bx, by, bw, bh, ...]``
    (:mod:`rpx_cli.io.instances`); ``gt_area`` (P,)."""
    k = sigmas.size
    out = np.zeros(dt.shape[0])
    if not out.size:
        return out
    variances = (sigmas * 2) ** 2
    xg, yg, vg = gt[:, 0:3 * k:3], gt[:, 1:3 * k:3], gt[:, 2:3 * k:3]
    xd, yd = dt[:, 0:3 * k:3], dt[:, 1:3 * k:3]
    visible = vg > 0
    k1 = np.count_nonzero(visible, axis=1)
    bx, by, bw, bh = (gt[:, 3 * k + j][:, None] for j in range(4))
    x0, x1 = bx - bw, bx + bw * 2
    y0, y1 = by - bh, by + bh * 2
    zero = np.zeros_like(xd)
    outside_x = np.maximum(zero, x0 - xd) + np.maximum(zero, xd - x1)
    outside_y = np.maximum(zero, y0 - yd) + np.maximum(zero, yd - y1)
    some = (k1 > 0)[:, None]
    dx = np.where(some, xd - xg, outside_x)
    dy = np.where(some, yd - yg, outside_y)
    e = (dx ** 2 + dy ** 2) / variances / (gt_area[:, None] + np.spacing(1)) / 2
    terms = np.exp(-e)
    # every point counts where none is visible (or all are); else the visible ones, packed
    # to the left in their order so that each row sums exactly what pycocotools sums
    everything = (k1 == 0) | (k1 == k)
    if everything.any():
        out[everything] = np.sum(terms[everything], axis=1) / k
    for count in np.unique(k1[~everything]).tolist():
        rows = np.flatnonzero((k1 == count) & ~everything)
        packed = terms[rows][visible[rows]].reshape(rows.size, count)
        out[rows] = np.sum(packed, axis=1) / count
    return out


def reference_oks(dt: np.ndarray, gt: np.ndarray, gt_area: float, sigmas: np.ndarray) -> float:
    """``computeOks`` for one pair, line for line (the test reference of :func:`oks_pairs`)."""
    k = sigmas.size
    variances = (sigmas * 2) ** 2
    g = gt[:3 * k]
    xg, yg, vg = g[0::3], g[1::3], g[2::3]
    k1 = np.count_nonzero(vg > 0)
    bb = gt[3 * k:3 * k + 4]
    x0, x1 = bb[0] - bb[2], bb[0] + bb[2] * 2
    y0, y1 = bb[1] - bb[3], bb[1] + bb[3] * 2
    d = dt[:3 * k]
    xd, yd = d[0::3], d[1::3]
    if k1 > 0:
        dx, dy = xd - xg, yd - yg
    else:
        z = np.zeros(k)
        dx = np.max((z, x0 - xd), axis=0) + np.max((z, xd - x1), axis=0)
        dy = np.max((z, y0 - yd), axis=0) + np.max((z, yd - y1), axis=0)
    e = (dx ** 2 + dy ** 2) / variances / (gt_area + np.spacing(1)) / 2
    if k1 > 0:
        e = e[vg > 0]
    return float(np.sum(np.exp(-e)) / e.shape[0])


_BLOCK = 1 << 16  # pairs per block of OksGeometry.oks


class OksGeometry:
    """OKS for objects given as ids (``pred``, ``gt``: keypoint rows; ``gt_area``: the GT
    areas OKS scales by; ``pred_area``: the detections' areas for COCO's ranges).

    ``floor``: the lowest threshold any greedy view tests (``min(--iou-threshold, 0.5)``).
    :meth:`similarity` and :meth:`pairs` (the greedy matchers and the crowd test) then read
    a pair as 0 when an upper bound of its OKS is below it — such a pair can never match, so
    no result changes — and compute the rest exactly. The bound: every point of the
    detection lies outside the gap between the detection's extent and the GT's visible
    extent (its grown box without visible points), so each ``e_i`` is at least
    ``gap² / max(2σ)² / (area + ε) / 2``. :meth:`matrix` and :meth:`pairs` (the confusion's
    assignment, where every value counts) are exact."""

    def __init__(self, pred: np.ndarray, gt: np.ndarray, pred_area: np.ndarray,
                 gt_area: np.ndarray, sigmas: np.ndarray, floor: float | None = None) -> None:
        self.pred, self.gt = pred, gt
        self.pred_area, self.gt_area = pred_area, gt_area
        self.sigmas = np.asarray(sigmas, np.float64)
        self.floor = floor
        k = self.sigmas.size
        self._scale = float(((self.sigmas * 2) ** 2).max()) if k else 1.0
        self._boxes: tuple[np.ndarray, np.ndarray] | None = None  # (made on the first bound)

    def _extents(self) -> tuple[np.ndarray, np.ndarray]:
        """The detections' point extents and the GT's visible extents (their grown boxes
        without visible points), ``[x0, y0, x1, y1]``: what :meth:`bound` compares. Made
        when first asked (the native OKS matcher needs no bound)."""
        if self._boxes is not None:
            return self._boxes
        k, pred, gt = self.sigmas.size, self.pred, self.gt
        if pred.size:
            x, y = pred[:, 0:3 * k:3], pred[:, 1:3 * k:3]
            dt_box = np.stack([x.min(axis=1), y.min(axis=1), x.max(axis=1), y.max(axis=1)], axis=1)
        else:
            dt_box = np.zeros((0, 4))
        if gt.size:
            x, y, v = gt[:, 0:3 * k:3], gt[:, 1:3 * k:3], gt[:, 2:3 * k:3] > 0
            seen = v.any(axis=1)
            bx, by, bw, bh = (gt[:, 3 * k + j] for j in range(4))
            gt_box = np.stack([
                np.where(seen, np.where(v, x, np.inf).min(axis=1), bx - bw),
                np.where(seen, np.where(v, y, np.inf).min(axis=1), by - bh),
                np.where(seen, np.where(v, x, -np.inf).max(axis=1), bx + bw * 2),
                np.where(seen, np.where(v, y, -np.inf).max(axis=1), by + bh * 2)], axis=1)
        else:
            gt_box = np.zeros((0, 4))
        self._boxes = dt_box, gt_box
        return self._boxes

    def bound(self, dt: np.ndarray, gt: np.ndarray) -> np.ndarray:
        """An upper bound of the OKS of ``dt[i]`` with ``gt[i]`` (ids)."""
        dt_box, gt_box = self._extents()
        a, b = dt_box[dt], gt_box[gt]
        gap_x = np.maximum(0.0, np.maximum(a[:, 0] - b[:, 2], b[:, 0] - a[:, 2]))
        gap_y = np.maximum(0.0, np.maximum(a[:, 1] - b[:, 3], b[:, 1] - a[:, 3]))
        e = (gap_x ** 2 + gap_y ** 2) / self._scale / (self.gt_area[gt] + np.spacing(1)) / 2
        return np.exp(-e) * (1 + 1e-9)

    def oks(self, dt: np.ndarray, gt: np.ndarray, *, exact: bool = False) -> np.ndarray:
        dt, gt = np.broadcast_arrays(np.asarray(dt, np.int64), np.asarray(gt, np.int64))
        d, g = dt.ravel(), gt.ravel()
        out = np.zeros(d.size)
        # in blocks: a bucket of the greedy matcher can hold millions of pairs, and each
        # pair's rows are gathered (bounded temporaries are reused, not faulted in anew)
        for start in range(0, d.size, _BLOCK):
            dd, gg = d[start:start + _BLOCK], g[start:start + _BLOCK]
            todo = np.arange(dd.size) if exact or self.floor is None else \
                np.flatnonzero(self.bound(dd, gg) >= self.floor)
            if todo.size:
                out[start + todo] = oks_pairs(self.pred[dd[todo]], self.gt[gg[todo]],
                                              self.gt_area[gg[todo]], self.sigmas)
        return out.reshape(dt.shape)

    def area(self, dt: np.ndarray) -> np.ndarray:
        return self.pred_area[dt]

    def similarity(self, dt: np.ndarray, gt: np.ndarray) -> Similarity:
        def similarity(dets: np.ndarray, slots: np.ndarray, crowd: np.ndarray) -> np.ndarray:
            return self.oks(dt[dets][:, None], np.take(gt, slots))

        return similarity

    def matrix(self, dt: np.ndarray, gt: np.ndarray) -> np.ndarray:
        return self.oks(dt[:, None], gt[None, :], exact=True)

    def pairs(self, dt: np.ndarray, gt: np.ndarray, *, crowd: bool = False) -> np.ndarray:
        """Exact, except for the crowd test (``crowd``), which compares with the threshold."""
        return self.oks(dt, gt, exact=not crowd)

    def native_greedy_match(self, dt: np.ndarray, dt_group: np.ndarray, gt: np.ndarray,
                            gt_group: np.ndarray, gt_crowd: np.ndarray, gt_area: np.ndarray,
                            ranges: np.ndarray,
                            thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``greedy_match``'s ``(matched, ignored)`` under :meth:`similarity`, ``>=`` and ties
        to the last GT (``ops.coco.match``'s call: ``dt``, ``gt`` ids, groups sorted,
        ``gt_area`` the areas the ranges test), from the native core's ``coco_match_oks``
        (``rpx_cli/csrc/coco_oks.c``: each OKS computed inside the greedy walk, exactly, as
        :func:`oks_pairs` computes it); the same arrays bit for bit
        (``tests/test_native_coco_oks.py``). None when the native core is not in use (or a
        side has no rows): ``greedy_match`` then walks with :meth:`similarity`."""
        core = native.core()
        k = self.sigmas.size
        width = 3 * k + 5
        if core is None or not k or self.pred.ndim != 2 or self.gt.ndim != 2 or \
                not len(self.pred) or not len(self.gt) or self.pred.shape[1] != width or \
                self.gt.shape[1] != width:
            return None
        matched, ignored = empty_flags(dt_group.size, ranges, thresholds)
        f64, i64 = np.float64, np.int64
        core.coco_match_oks(
            width, np.ascontiguousarray(self.pred, f64), np.ascontiguousarray(dt, i64),
            np.ascontiguousarray(self.gt, f64), np.ascontiguousarray(gt, i64),
            np.ascontiguousarray(self.gt_area, f64), np.ascontiguousarray((self.sigmas * 2) ** 2),
            np.ascontiguousarray(dt_group, i64), np.ascontiguousarray(gt_group, i64),
            np.ascontiguousarray(gt_crowd, np.bool_), np.ascontiguousarray(gt_area, f64),
            np.ascontiguousarray(ranges, f64), np.ascontiguousarray(thresholds, f64),
            matched, ignored, native.threads())
        return matched, ignored
