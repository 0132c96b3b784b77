"""The KITTI object benchmark over every class, difficulty and overlap: the AP table and the
per-frame counts, from two flattened :class:`~rpx_cli.ops.kitti_eval.Table` s and the boxes'
geometry.

For each evaluated class, each overlap (``bbox``, ``bev``, ``3d``; ``aos`` rides on
``bbox``'s matching, as the reference computes it) with the class's threshold, and each
difficulty: the thresholds from the TP scores (:func:`~rpx_cli.ops.kitti_eval.tp_scores`,
:func:`~rpx_cli.ops.kitti_eval.sample_thresholds`), the counts at them, the curves and the
AP (:mod:`rpx_cli.ops.kitti_eval` has every convention). The loops here are over classes,
difficulties and overlaps (at most 6 × 3 × 3); everything inside is vectorised over boxes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rpx_cli.ops import kitti_eval as ke
from rpx_cli.ops import kitti_overlaps as ko

METRICS = ("bbox", "bev", "3d")  # the overlaps; "aos" is computed with bbox


@dataclass
class Geometry:
    """The 3D columns of one side (camera frame), flattened like its table."""

    location: np.ndarray  # (N, 3)
    hwl: np.ndarray  # (N, 3)
    rotation_y: np.ndarray  # (N,)


@dataclass
class ClassSpec:
    """One evaluated class: its code in the tables, its neighbour's (−1 none) and its
    threshold per overlap."""

    name: str
    code: int
    neighbour: int
    min_overlap: Mapping[str, float]


@dataclass
class FrameCounts:
    """TP, FP and misses per frame, summed over the classes (``rows_at``), and which
    detections and GT are TPs there."""

    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    det_tp: np.ndarray
    gt_tp: np.ndarray

    @classmethod
    def zeros(cls, n_frames: int, n_det: int, n_gt: int) -> FrameCounts:
        return cls(*(np.zeros(n_frames, np.int64) for _ in range(3)), np.zeros(n_det, bool),
                   np.zeros(n_gt, bool))

    def add(self, result: ke.Counts, column: int) -> None:
        self.tp += result.frame_tp[column]
        self.fp += result.frame_fp[column]
        self.fn += result.frame_fn[column]
        self.det_tp |= result.det_tp
        self.gt_tp |= result.gt_tp


def overlaps(gt: ke.Table, det: ke.Table, gt_geo: Geometry, det_geo: Geometry,
             n_frames: int) -> dict[str, ko.Pairs]:
    """The three overlaps of every same-frame pair (DontCare GT included, as the reference
    computes them; they are out of every class)."""
    out = {"bbox": ko.bbox_overlaps(det.bbox, det.frame, gt.bbox, gt.frame, n_frames)}
    keep = ~gt.dontcare  # DontCare have no 3D box (sizes -1): they never match anyway
    index = np.flatnonzero(keep)
    det_rect = ko.footprints(det_geo.location, det_geo.hwl, det_geo.rotation_y)
    gt_rect = ko.footprints(gt_geo.location[keep], gt_geo.hwl[keep], gt_geo.rotation_y[keep])
    inter = ko.bev_intersections(det_rect, det.frame, gt_rect, gt.frame[keep], n_frames)
    inter = ko.Pairs(inter.det, index[inter.gt], inter.overlap)
    all_rect = np.zeros((gt.frame.size, 5))
    all_rect[keep] = gt_rect
    out["bev"] = ko.bev_overlaps(inter, det_rect, all_rect)
    out["3d"] = ko.box3d_overlaps(inter, det_geo.location, det_geo.hwl, gt_geo.location,
                                  gt_geo.hwl)
    return out


def benchmark(gt: ke.Table, det: ke.Table, pairs: Mapping[str, ko.Pairs], dontcare: ko.Pairs,
              classes: Sequence[ClassSpec], recall_points: int, compute_aos: bool,
              rows_at: tuple[str, str, float] | None, n_frames: int):
    """``(table, frame_counts)``: ``table[class][key]`` with ``<metric>_<difficulty>`` APs
    (``aos_*`` None without orientations) and ``n_gt_<difficulty>`` (valid GT); the
    per-frame counts at ``rows_at`` = (metric, difficulty, score threshold), summed over
    the classes (None when not asked)."""
    table: dict[str, dict[str, float | int | None]] = {}
    frames = FrameCounts.zeros(n_frames, det.frame.size, gt.frame.size)
    for spec in classes:
        entry: dict[str, float | int | None] = {}
        for level in ke.DIFFICULTIES:
            gt_ignore = ke.ignored_gt(gt, spec.code, spec.neighbour, level)
            det_ignore = ke.ignored_det(det, spec.code, level)
            n_valid = int(np.count_nonzero(gt_ignore == 0))
            entry[f"n_gt_{level.name}"] = n_valid
            for metric in METRICS:
                th = spec.min_overlap[metric]
                c = ke.candidates(pairs[metric], th, gt_ignore, det_ignore, gt.frame)
                scores = ke.tp_scores(c, gt_ignore, det_ignore, det.score)
                thresholds = ke.sample_thresholds(scores, n_valid)
                wanted = rows_at is not None and rows_at[:2] == (metric, level.name)
                if wanted:
                    thresholds = np.append(thresholds, rows_at[2])
                covered = None
                if metric == "bbox":
                    covered = np.zeros(det.frame.size, bool)
                    covered[dontcare.det[dontcare.overlap > th]] = True
                result = ke.counts(c, gt, det, gt_ignore, det_ignore, thresholds, covered,
                                   n_frames if wanted else None)
                if wanted:
                    frames.add(result, -1)
                    result = ke.Counts(result.tp[:-1], result.fp[:-1], result.fn[:-1],
                                       result.similarity[:-1])
                curves = ke.curve(result)
                entry[f"{metric}_{level.name}"] = _number(
                    ke.average_precision(curves.precision, recall_points))
                if metric == "bbox":
                    entry[f"aos_{level.name}"] = _number(
                        ke.average_precision(curves.aos, recall_points)) if compute_aos else None
        table[spec.name] = entry
    return table, frames if rows_at is not None else None


def _number(value: float) -> float | None:
    return None if value != value else float(value)


def frame_counts(gt: ke.Table, det: ke.Table, pairs: Mapping[str, ko.Pairs],
                 classes: Sequence[ClassSpec], rows_at: tuple[str, str, float],
                 n_frames: int) -> FrameCounts:
    """The per-frame counts alone (no AP): the matching at ``rows_at`` = (metric,
    difficulty, score threshold), summed over the classes."""
    metric, level_name, threshold = rows_at
    level = next(level for level in ke.DIFFICULTIES if level.name == level_name)
    frames = FrameCounts.zeros(n_frames, det.frame.size, gt.frame.size)
    for spec in classes:
        gt_ignore = ke.ignored_gt(gt, spec.code, spec.neighbour, level)
        det_ignore = ke.ignored_det(det, spec.code, level)
        c = ke.candidates(pairs[metric], spec.min_overlap[metric], gt_ignore, det_ignore, gt.frame)
        result = ke.counts(c, gt, det, gt_ignore, det_ignore, np.array([threshold]), None, n_frames)
        frames.add(result, 0)
    return frames
