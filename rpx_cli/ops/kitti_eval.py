"""The KITTI object benchmark's AP, as ``kitti_object_eval_python`` (OpenPCDet, mmdet3d,
second.pytorch; checked by its authors against the official ``evaluate_object.cpp``)
computes it, vectorised over frames and score thresholds (no numba, no loop over boxes).

For one class, one difficulty and one overlap (``bbox``, ``bev`` or ``3d``,
:mod:`rpx_cli.ops.kitti_overlaps`) with its threshold ``min_overlap``:

1. **Which boxes count** (:func:`ignored_gt`, :func:`ignored_det`). A GT of the class is
   *valid* (0) unless it is too hard for the difficulty — occlusion above the level's
   maximum, truncation above it, or a 2D height (``y2 − y1``) of at most the minimum (easy:
   height > 40 px, occluded ≤ 0, truncated ≤ 0.15; moderate: > 25, ≤ 1, ≤ 0.3; hard: > 25,
   ≤ 2, ≤ 0.5) — then it is *ignored* (1), as is a GT of the neighbouring class (``Van``
   for ``Car``, ``Person_sitting`` for ``Pedestrian``); any other GT is *out* (−1). A
   detection lower than the minimum height (``|y2 − y1| <`` it) is ignored (1) whatever its
   class, one of the class is valid (0), any other out (−1). Names compare lowercased.
   ``DontCare`` GT are out; their 2D boxes are the frame's don't-care regions.
2. **Matching**, per frame, GT in file order (out ones skipped): each GT takes one
   untaken detection (not out) whose overlap is strictly above ``min_overlap``. To find the
   score thresholds (:func:`tp_scores`: every detection, ``thresh = 0`` in the reference)
   it takes the highest-scored one; to count at a threshold ``t`` (:func:`counts`:
   detections scored ``>= t`` only) the valid one of largest overlap, else the first
   ignored one. A valid GT left alone is a miss (fn); a pair with an ignored side is taken
   silently; a valid pair is a TP. Valid detections left untaken are FPs, except (2D only)
   those covering a don't-care region by more than ``min_overlap`` of their own area.
   Ties go to the first detection in file order.
3. **Thresholds** (:func:`sample_thresholds`, the reference's ``get_thresholds``): the TP
   scores in descending order, one kept each time the recall passes the next of 41 points
   0, 1/40, …, 1 (the score nearer to it on either side).
4. **Curves and AP** (:func:`average_precision`): precision ``tp / (tp + fp)``, recall and
   the orientation similarity ``Σ_TP (1 + cos Δα) / 2 / (tp + fp)`` at each threshold,
   each made non-increasing (the maximum to its right) on 41 slots (zero past the last
   threshold); AP_R40 is the mean of slots 1..40, AP_R11 of slots 0, 4, …, 40. A class
   with no valid GT has no threshold: AP 0, as the reference.

Step 2 is sequential per frame (a GT's choice removes a detection for the next). It runs
as one vectorised step per GT rank: the k-th GT of every frame at once, against its
candidate detections, for every threshold at once (:func:`greedy`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rpx_cli.ops.kitti_overlaps import Pairs

N_SAMPLE_PTS = 41
NO_DETECTION = -10000000.0


@dataclass(frozen=True)
class Difficulty:
    name: str
    min_height: float  # a GT counts when taller than this (px); a detection when not shorter
    max_occlusion: int
    max_truncation: float


DIFFICULTIES = (Difficulty("easy", 40, 0, 0.15), Difficulty("moderate", 25, 1, 0.3),
                Difficulty("hard", 25, 2, 0.5))


@dataclass
class Table:
    """Every frame's boxes of one side, flattened in frame order (``frame`` sorted, each
    frame's boxes in file order). ``cls`` codes the lowercased names (``-1``: none of the
    evaluated ones or their neighbours); ``dontcare`` marks the GT named ``DontCare``."""

    frame: np.ndarray  # (N,) int64
    cls: np.ndarray  # (N,) int64
    dontcare: np.ndarray  # (N,) bool
    truncated: np.ndarray
    occluded: np.ndarray
    alpha: np.ndarray
    bbox: np.ndarray  # (N, 4)
    score: np.ndarray | None  # detections only


def ignored_gt(gt: Table, cls: int, neighbour: int, level: Difficulty) -> np.ndarray:
    """0 valid, 1 ignored (too hard, or the neighbouring class), −1 out."""
    height = gt.bbox[:, 3] - gt.bbox[:, 1]
    hard = (gt.occluded > level.max_occlusion) | (gt.truncated > level.max_truncation) | \
        (height <= level.min_height)
    own = gt.cls == cls
    out = np.full(gt.cls.size, -1, np.int64)
    out[own | ((gt.cls == neighbour) & (neighbour >= 0))] = 1
    out[own & ~hard] = 0
    return out


def ignored_det(det: Table, cls: int, level: Difficulty) -> np.ndarray:
    """0 valid, 1 ignored (lower than the minimum height, any class), −1 out."""
    out = np.where(det.cls == cls, 0, -1)
    out[np.abs(det.bbox[:, 3] - det.bbox[:, 1]) < level.min_height] = 1
    return out


@dataclass
class Candidates:
    """The GT that take part (not out, with at least one candidate: the others take nothing
    and change nothing), by rank in their frame among those, each with its candidate
    detections (overlap above the threshold, detection not out) padded to ``K``; and the
    valid GT without a candidate (misses at every threshold)."""

    gt: np.ndarray  # (G,) GT indices, sorted by (rank, index)
    rank_start: np.ndarray  # (R + 1,) where each rank's GT start in ``gt``
    rank_width: np.ndarray  # (R,) the most candidates of a GT of each rank
    det: np.ndarray  # (G, K) detection indices, -1 padding, each row in detection order
    overlap: np.ndarray  # (G, K), -inf padding
    lonely: np.ndarray  # valid GT without a candidate


def candidates(pairs: Pairs, min_overlap: float, gt_ignore: np.ndarray, det_ignore: np.ndarray,
               gt_frame: np.ndarray) -> Candidates:
    keep = (pairs.overlap > min_overlap) & (det_ignore[pairs.det] != -1) & \
        (gt_ignore[pairs.gt] != -1)
    d, g, o = pairs.det[keep], pairs.gt[keep], pairs.overlap[keep]
    has = np.zeros(gt_ignore.size, bool)
    has[g] = True
    taking = np.flatnonzero(has)
    lonely = np.flatnonzero(~has & (gt_ignore == 0))
    frame = gt_frame[taking]
    first = np.searchsorted(frame, frame)  # each frame's first taking GT (frames sorted)
    rank = np.arange(taking.size) - first
    order = np.lexsort((taking, rank))
    gts, ranks = taking[order], rank[order]
    rank_start = np.searchsorted(ranks, np.arange((int(ranks.max()) + 2) if ranks.size else 1))
    row = np.full(gt_ignore.size, -1, np.int64)
    row[gts] = np.arange(gts.size)
    r = row[g]
    order = np.lexsort((d, r))
    r, d, o = r[order], d[order], o[order]
    counts = np.bincount(r, minlength=gts.size)
    width = int(counts.max()) if counts.size else 0
    slot = np.arange(r.size) - np.repeat(np.cumsum(counts) - counts, counts)
    det = np.full((gts.size, width), -1, np.int64)
    overlap = np.full((gts.size, width), -np.inf)
    det[r, slot] = d
    overlap[r, slot] = o
    rank_width = np.maximum.reduceat(counts, rank_start[:-1]) if gts.size else np.zeros(0, np.int64)
    return Candidates(gts, rank_start, rank_width, det, overlap, lonely)


@dataclass
class Outcome:
    """Per threshold (rows) and GT (columns of ``Candidates.gt``): the detection taken
    (−1 none) and whether the pair is a TP; and which detections were taken."""

    chosen: np.ndarray  # (T, G) int64
    tp: np.ndarray  # (T, G) bool
    taken: np.ndarray  # (T, N_det) bool


def greedy(c: Candidates, gt_ignore: np.ndarray, det_ignore: np.ndarray, score: np.ndarray,
           thresholds: np.ndarray | None) -> Outcome:
    """Step 2 for every GT rank in turn. ``thresholds`` None: the threshold-finding pass
    (every detection; the highest score wins); else one row per threshold (detections
    scored ``>= t``; the valid detection of largest overlap wins, else the first ignored)."""
    n_t = 1 if thresholds is None else thresholds.size
    n_g, n_d = c.gt.size, score.size
    chosen = np.full((n_t, n_g), -1, np.int64)
    taken = np.zeros((n_t, n_d + 1), bool)  # the last column: the padding's
    taken[:, n_d] = True
    det_score = np.append(score, -np.inf)
    det_ign = np.append(det_ignore, -1)
    t_col = np.arange(n_t)[:, None, None]
    for lo, hi, width in zip(c.rank_start[:-1].tolist(), c.rank_start[1:].tolist(),
                             c.rank_width.tolist(), strict=True):
        cand = c.det[lo:hi, :width]  # (m, K), -1 -> the padding column n_d
        cand = np.where(cand < 0, n_d, cand)
        s, ign = det_score[cand], det_ign[cand]
        free = ~taken[t_col, cand[None]]  # (T, m, K)
        if thresholds is None:
            free &= (s > NO_DETECTION)[None]
            pick = np.where(free, s[None], -np.inf).argmax(axis=-1)
            found = _at(free, pick)
        else:
            free &= s[None] >= thresholds[:, None, None]
            valid = free & (ign == 0)[None]
            best = np.where(valid, c.overlap[lo:hi, :width][None], -np.inf).argmax(axis=-1)
            ignored = free & (ign == 1)[None]
            first = ignored.argmax(axis=-1)
            has_valid = _at(valid, best)
            pick = np.where(has_valid, best, first)
            found = has_valid | _at(ignored, first)
        det = np.where(found, cand[np.arange(hi - lo)[None, :], pick], -1)
        chosen[:, lo:hi] = det
        rows, cols = np.nonzero(found)
        taken[rows, det[rows, cols]] = True
    valid_pair = (chosen >= 0) & (gt_ignore[c.gt] == 0)[None] & (det_ign[chosen] == 0)
    return Outcome(chosen, valid_pair, taken[:, :n_d])


def _at(mask: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``mask[..., index]`` along the last axis (one value per row)."""
    return np.take_along_axis(mask, index[..., None], axis=-1)[..., 0]


def tp_scores(c: Candidates, gt_ignore: np.ndarray, det_ignore: np.ndarray,
              score: np.ndarray) -> np.ndarray:
    """The scores of the TPs of the threshold-finding pass."""
    outcome = greedy(c, gt_ignore, det_ignore, score, None)
    return score[outcome.chosen[0][outcome.tp[0]]]


def sample_thresholds(scores: np.ndarray, num_gt: int,
                      num_sample_pts: int = N_SAMPLE_PTS) -> np.ndarray:
    """The reference's ``get_thresholds``: walking the scores in descending order, keep
    score ``i`` (recall ``(i + 1) / num_gt``) unless the next one's recall is nearer the
    current recall point, which then moves on by ``1 / (num_sample_pts − 1)``; the last
    score is always kept. One search per kept score, not a loop over scores."""
    scores = np.sort(scores)[::-1]
    n = scores.size
    if not n:
        return scores
    i = np.arange(n)
    left, right = (i + 1) / num_gt, np.where(i < n - 1, (i + 2) / num_gt, (i + 1) / num_gt)
    kept, at, current = [], 0, 0.0
    step = 1 / (num_sample_pts - 1.0)
    while at < n:
        skip = ((right[at:] - current) < (current - left[at:])) & (i[at:] < n - 1)
        stop = np.flatnonzero(~skip)
        at += int(stop[0])  # the last score never skips
        kept.append(at)
        current += step
        at += 1
    return scores[np.array(kept, np.int64)]


@dataclass
class Counts:
    """Per threshold: TPs, FPs, misses and the orientation similarity summed over frames;
    and per frame (``frame_*``, (T, n_frames)) when asked."""

    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    similarity: np.ndarray
    frame_tp: np.ndarray | None = None
    frame_fp: np.ndarray | None = None
    frame_fn: np.ndarray | None = None
    det_tp: np.ndarray | None = None  # (N_det,) bool: a TP at the last threshold
    gt_tp: np.ndarray | None = None  # (N_gt,) bool: matched by a TP at the last threshold


def counts(c: Candidates, gt: Table, det: Table, gt_ignore: np.ndarray, det_ignore: np.ndarray,
           thresholds: np.ndarray, dontcare: np.ndarray | None, n_frames: int | None = None) -> Counts:
    """Step 2 at each of ``thresholds``. ``dontcare``: (N_det,) bool, the detections that
    cover a don't-care region by more than the threshold (2D only), not FPs when left
    untaken. ``n_frames``: also count per frame."""
    score = det.score
    outcome = greedy(c, gt_ignore, det_ignore, score, thresholds)
    tp = outcome.tp.sum(axis=1)
    taking = gt_ignore[c.gt] == 0
    fn_mask = (outcome.chosen < 0) & taking[None]
    fn = fn_mask.sum(axis=1) + c.lonely.size
    free = ~outcome.taken & (det_ignore == 0)[None] & (score[None] >= thresholds[:, None])
    if dontcare is not None:
        free &= ~dontcare[None]
    fp = free.sum(axis=1)
    det_alpha = np.append(det.alpha, 0.0)  # the last: no detection's
    delta = gt.alpha[c.gt][None] - det_alpha[outcome.chosen]
    # summed exactly (fsum, a loop over the thresholds): the frames' order changes no bit
    terms = np.where(outcome.tp, (1.0 + np.cos(delta)) / 2.0, 0.0)
    similarity = np.array([math.fsum(row) for row in terms.tolist()], np.float64).reshape(-1)
    result = Counts(tp, fp, fn, similarity)
    if n_frames is not None:
        def per_frame(mask: np.ndarray, frame: np.ndarray) -> np.ndarray:
            rows, cols = np.nonzero(mask)
            out = np.zeros((mask.shape[0], n_frames), np.int64)
            np.add.at(out, (rows, frame[cols]), 1)
            return out

        result.frame_tp = per_frame(outcome.tp, gt.frame[c.gt])
        result.frame_fn = per_frame(fn_mask, gt.frame[c.gt]) + \
            np.bincount(gt.frame[c.lonely], minlength=n_frames)[None]
        result.frame_fp = per_frame(free, det.frame)
        last = outcome.tp[-1]
        result.det_tp = np.zeros(det.frame.size, bool)
        result.det_tp[outcome.chosen[-1][last]] = True
        result.gt_tp = np.zeros(gt.frame.size, bool)
        result.gt_tp[c.gt[last]] = True
    return result


@dataclass
class Curve:
    """The 41-slot non-increasing precision, recall and orientation-similarity curves."""

    precision: np.ndarray
    recall: np.ndarray
    aos: np.ndarray


def curve(result: Counts) -> Curve:
    """Step 4's curves from the counts at the sampled thresholds (NaN where ``tp + fp``
    is 0, as the reference's division gives)."""
    arrays = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for num, den in ((result.tp, result.tp + result.fp), (result.tp, result.tp + result.fn),
                         (result.similarity, result.tp + result.fp)):
            slots = np.zeros(N_SAMPLE_PTS)
            slots[:num.size] = np.asarray(num, np.float64)[:N_SAMPLE_PTS] / den[:N_SAMPLE_PTS]
            arrays.append(np.maximum.accumulate(slots[::-1])[::-1])  # NaN propagates
    return Curve(*arrays)


def average_precision(values: np.ndarray, recall_points: int) -> float:
    """AP_R40 (``recall_points`` 40: slots 1..40) or AP_R11 (11: slots 0, 4, …, 40) of a
    41-slot curve, summed in slot order as the reference, as a fraction."""
    picked = values[1:] if recall_points == 40 else values[::4]
    total = 0.0
    for value in picked.tolist():
        total = total + value
    return total / recall_points
