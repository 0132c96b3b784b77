"""The similarity of a detection run's objects, as every view asks it: what a similarity
kind (``rpx_cli.tasks.detection.kinds``) gives the views for a table of frames.

Every detection view (greedy rows and pooled, the Aquarium confusion matrix, COCO AP, TIDE)
asks a :class:`Geometry` four things about its objects, whatever they are:

- ``area(dt)``: each detection's area (COCO's area ranges for detections);
- ``similarity(dt, gt)``: the :data:`~rpx_cli.ops.matching.Similarity` closure
  :func:`~rpx_cli.ops.matching.greedy_match` takes (IoU, or intersection over the
  detection's area for a crowd region, as pycocotools);
- ``matrix(dt, gt)``: the (D, G) IoU matrix of one frame (the optimal matcher);
- ``pairs(dt, gt, crowd=...)``: IoU (or intersection over the detection's area) of
  ``dt[i]`` with ``gt[i]``.

Three implementations:

- :data:`BOXES`: ``[x, y, w, h]`` boxes, IoU by pycocotools' formula (``ops.boxes``,
  ``ops.coco``), computed where a view asks;
- :class:`OverlapTable`: rotated boxes, cuboid footprints, polygons and masks, whose
  intersections the kind computed once — for every frame at once in the summary
  (rectangles, masks) or per frame in the workers, kept with the frame (polygons,
  :class:`~rpx_cli.io.box_table.Overlaps`). The views then see objects as integer ids and
  look the intersections up: IoU = ``inter / (area_dt + area_gt − inter)``, 0 for a pair
  that does not intersect. The lookup serves every view, so an intersection is computed
  once however many views use it;
- :class:`~rpx_cli.ops.oks.OksGeometry`: keypoints, OKS computed for the pairs a view asks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from rpx_cli import native
from rpx_cli.errors import MissingExtra
from rpx_cli.ops.boxes import iou_pairs, iou_xywh
from rpx_cli.ops.coco import iou_similarity
from rpx_cli.ops.matching import Similarity, empty_flags


class Geometry(Protocol):
    """What the detection views need to know about their objects' shapes."""

    def area(self, dt: np.ndarray) -> np.ndarray: ...

    def similarity(self, dt: np.ndarray, gt: np.ndarray) -> Similarity: ...

    def matrix(self, dt: np.ndarray, gt: np.ndarray) -> np.ndarray: ...

    def pairs(self, dt: np.ndarray, gt: np.ndarray, *, crowd: bool = False) -> np.ndarray: ...


class BoxGeometry:
    """Axis-aligned ``[x, y, w, h]`` boxes: pycocotools' IoU, operation for operation."""

    # its similarity is ops.coco.iou_similarity: the native core's box matcher
    # (ops.coco.match_boxes) may compute it inside the greedy walk
    xywh_iou = True

    def area(self, dt: np.ndarray) -> np.ndarray:
        return dt[:, 2] * dt[:, 3]

    def similarity(self, dt: np.ndarray, gt: np.ndarray) -> Similarity:
        return iou_similarity(dt, gt)

    def matrix(self, dt: np.ndarray, gt: np.ndarray) -> np.ndarray:
        return iou_xywh(dt, gt)

    def pairs(self, dt: np.ndarray, gt: np.ndarray, *, crowd: bool = False) -> np.ndarray:
        return iou_pairs(dt, gt, crowd=crowd)


BOXES = BoxGeometry()


class OverlapTable:
    """IoU from intersections computed beforehand, for objects given as ids.

    ``pred_area`` (D,) and ``gt_area`` (G,) are every object's area (the geometry's); the
    pairs ``(pred[k], gt[k])`` intersect in ``inter[k] > 0``; any other pair reads as 0 (it
    does not intersect, or — for polygons — no view's result depends on it). The
    views hand in detection ids and GT ids (``np.arange(D)`` / ``np.arange(G)`` taken,
    filtered and reordered as they go). The IoU is computed as :mod:`rpx_cli.ops.boxes` does
    for boxes, ``where(inter > 0, inter / union, 0)`` with ``union = da + ga − inter`` (``da``
    for a crowd region), so axis-aligned boxes give the same numbers either way.
    """

    def __init__(self, pred_area: np.ndarray, gt_area: np.ndarray, pred: np.ndarray,
                 gt: np.ndarray, inter: np.ndarray) -> None:
        self.pred_area = np.asarray(pred_area, np.float64)
        self.gt_area = np.asarray(gt_area, np.float64)
        self._n_gt = max(int(self.gt_area.size), 1)
        keys = np.asarray(pred, np.int64) * self._n_gt + np.asarray(gt, np.int64)
        order = np.argsort(keys, kind="stable")
        self._keys = keys[order]
        self._inter = np.asarray(inter, np.float64)[order]

    @classmethod
    def from_frames(cls, frames: Sequence[Any]) -> OverlapTable:
        """The table of frames' :class:`~rpx_cli.io.box_table.Overlaps`, ids numbered as
        :meth:`~rpx_cli.io.box_table.FrameTable.from_frames` lays the objects out (frame by
        frame, in order)."""
        parts = [frame.overlaps for frame in frames]
        d_counts = np.fromiter((part.pred_area.size for part in parts), np.int64, count=len(parts))
        g_counts = np.fromiter((part.gt_area.size for part in parts), np.int64, count=len(parts))
        d_off = np.cumsum(d_counts) - d_counts
        g_off = np.cumsum(g_counts) - g_counts

        def cat(arrays: list[np.ndarray], dtype) -> np.ndarray:
            return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)

        return cls(cat([part.pred_area for part in parts], np.float64),
                   cat([part.gt_area for part in parts], np.float64),
                   cat([part.pred + d_off[i] for i, part in enumerate(parts)], np.int64),
                   cat([part.gt + g_off[i] for i, part in enumerate(parts)], np.int64),
                   cat([part.inter for part in parts], np.float64))

    def intersection(self, dt: np.ndarray, gt: np.ndarray) -> np.ndarray:
        """Intersection areas of detection ids ``dt`` with GT ids ``gt`` (broadcast)."""
        query = np.asarray(dt, np.int64) * self._n_gt + np.asarray(gt, np.int64)
        if not self._keys.size:
            return np.zeros(query.shape)
        at = np.minimum(np.searchsorted(self._keys, query), self._keys.size - 1)
        return np.where(self._keys[at] == query, self._inter[at], 0.0)

    def iou(self, dt: np.ndarray, gt: np.ndarray, crowd: np.ndarray | bool = False) -> np.ndarray:
        """IoU of ids ``dt`` with ids ``gt`` (broadcast); where ``crowd``, intersection over
        the detection's area."""
        inter = self.intersection(dt, gt)
        da, ga = self.pred_area[dt], self.gt_area[gt]
        union = np.where(crowd, da, da + ga - inter)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(inter > 0, inter / union, 0.0)

    def area(self, dt: np.ndarray) -> np.ndarray:
        return self.pred_area[dt]

    def native_greedy_match(self, dt: np.ndarray, dt_group: np.ndarray, gt: np.ndarray,
                            gt_group: np.ndarray, gt_crowd: np.ndarray, gt_area: np.ndarray,
                            ranges: np.ndarray,
                            thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``greedy_match``'s ``(matched, ignored)`` under :meth:`similarity`, ``>=`` and ties
        to the last GT (``ops.coco.match``'s call: ``dt``, ``gt`` ids, groups sorted,
        ``gt_area`` the areas the ranges test), from the native core's
        ``coco_match_overlaps`` (``rpx_cli/csrc/coco_overlaps.c``: each IoU read from this
        table inside the greedy walk, as :meth:`iou` computes it; its groups split among
        :func:`rpx_cli.native.threads` threads); the same arrays bit for bit
        (``tests/test_native_coco_overlaps.py``). None when the native core is not in use."""
        core = native.core()
        if core is None:
            return None
        matched, ignored = empty_flags(dt_group.size, ranges, thresholds)
        f64, i64 = np.float64, np.int64
        core.coco_match_overlaps(
            self._keys, self._inter, self._n_gt, np.ascontiguousarray(self.pred_area),
            np.ascontiguousarray(self.gt_area),
            np.ascontiguousarray(dt, i64), np.ascontiguousarray(gt, i64),
            np.ascontiguousarray(dt_group, i64), np.ascontiguousarray(gt_group, i64),
            np.ascontiguousarray(gt_crowd, np.bool_), np.ascontiguousarray(gt_area, f64),
            np.ascontiguousarray(ranges, f64), np.ascontiguousarray(thresholds, f64),
            matched, ignored, native.threads())
        return matched, ignored

    def similarity(self, dt: np.ndarray, gt: np.ndarray) -> Similarity:
        def similarity(dets: np.ndarray, slots: np.ndarray, crowd: np.ndarray) -> np.ndarray:
            return self.iou(dt[dets][:, None], np.take(gt, slots), crowd)

        return similarity

    def matrix(self, dt: np.ndarray, gt: np.ndarray) -> np.ndarray:
        return self.iou(dt[:, None], gt[None, :])

    def pairs(self, dt: np.ndarray, gt: np.ndarray, *, crowd: bool = False) -> np.ndarray:
        return self.iou(dt, gt, crowd)


def settled_entries(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int], iou: np.ndarray,
                    exact: np.ndarray, compute: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Make one frame's optimal assignment (Aquarium's confusion matrix) need only exact IoUs,
    computing as few as it takes.

    Entry ``k`` of a (D, G) matrix is at ``(rows[k], cols[k])`` and holds ``iou[k]``: the exact
    IoU where ``exact[k]``, else an upper bound of it; entries not listed are exactly 0. The
    maximum-total assignment (:func:`rpx_cli.ops.assignment.solver`, as
    :func:`rpx_cli.ops.matching.optimal_match` solves it) is computed with the bounds in
    place; the bounded entries it uses are made exact with ``compute(indices) -> IoU`` and
    it is solved again, until it uses none. That assignment is then optimal for the exact
    matrix (its total is exact; any other's is at most its total with bounds) and for the
    matrix with every still-bounded entry read as 0 (lower still): those entries can be left
    out and the summary's assignment, on exact values and zeros, reaches the same optimum.
    ``iou`` is updated in place; returns the updated ``exact`` mask."""
    exact = exact.copy()
    if exact.all() or not iou.size:
        return exact
    from rpx_cli.ops.assignment import solver

    solve = solver()
    flat = rows.astype(np.int64) * shape[1] + cols
    order = np.argsort(flat, kind="stable")
    while True:
        weights = np.zeros(shape)
        weights[rows, cols] = iou
        r, c = solve(weights, maximize=True)
        chosen = r.astype(np.int64) * shape[1] + c
        at = np.searchsorted(flat[order], chosen)
        at = np.minimum(at, order.size - 1)
        listed = flat[order][at] == chosen
        used = order[at[listed]]
        pending = used[~exact[used]]
        if not pending.size:
            return exact
        iou[pending] = compute(pending)
        exact[pending] = True


INSTALL_GEOMETRY = "pip install 'rpx-eval[geometry]'"


def require_shapely() -> None:
    """Raise :class:`~rpx_cli.errors.MissingExtra` unless shapely >= 2 can be imported."""
    try:
        import shapely
    except ImportError:
        raise MissingExtra("--geometry polygon needs shapely >= 2, which is not installed: "
                           f"{INSTALL_GEOMETRY}") from None
    major = str(getattr(shapely, "__version__", "0")).split(".")[0]
    if not major.isdigit() or int(major) < 2:
        raise MissingExtra(f"--geometry polygon needs shapely >= 2 (found {shapely.__version__}): "
                           f"{INSTALL_GEOMETRY}")
