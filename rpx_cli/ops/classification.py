"""Classification kernels on arrays: ranks and top-k, confusion counts, per-class
precision/recall/F1, one-vs-rest average precision, expected calibration error.

Classes are columns ``0..C-1`` in *class order* (the order that breaks ties: the class
listed first in ``--class-names``, else the smallest label). Everything is vectorised over
samples and classes; the only loops are over bisection steps and calibration bins' edges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def top1(scores: np.ndarray) -> np.ndarray:
    """Arg-max per row; ties go to the first column (class order)."""
    return np.argmax(scores, axis=1) if scores.shape[1] else np.zeros(scores.shape[0], np.int64)


def true_rank(scores: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """0-based rank of each row's true class when the classes are sorted by descending
    score, ties in class order: ``#{c: s_c > s_t} + #{c < t: s_c == s_t}``.

    ``truth[i]`` in class order; the sample is in the top k when ``rank < k``. (scikit-learn's
    ``top_k_accuracy_score`` breaks ties the other way: the highest index first.)"""
    n, n_classes = scores.shape
    rows = np.arange(n)
    own = scores[rows, truth][:, None]
    above = np.count_nonzero(scores > own, axis=1)
    before = np.arange(n_classes)[None, :] < truth[:, None]
    tied_before = np.count_nonzero((scores == own) & before, axis=1)
    return above + tied_before


def confusion_counts(truth: np.ndarray, pred: np.ndarray, n_classes: int) -> np.ndarray:
    """(C, C) int64 counts, rows true class, columns predicted; ``pred < 0`` (no
    prediction) is not counted here."""
    kept = pred >= 0
    cells = truth[kept].astype(np.int64) * n_classes + pred[kept]
    return np.bincount(cells, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


@dataclass
class CountScores:
    """Per-class precision, recall and F1 from TP/FP/FN counts (a sample without a
    prediction is a false negative and in no confusion cell); every 0/0 is 0
    (scikit-learn's ``zero_division=0``, Aquarium). The per-class scores of a confusion
    matrix, IoU included, are :class:`rpx_cli.ops.confusion.ConfusionScores`."""

    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray

    @property
    def support(self) -> np.ndarray:
        return self.tp + self.fn


def count_scores(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> CountScores:
    """Precision TP/(TP+FP), recall TP/(TP+FN), F1 2TP/(2TP+FP+FN) (the harmonic mean of the
    two, written from counts), each 0 when its denominator is 0."""
    tp, fp, fn = (np.asarray(x, dtype=np.int64) for x in (tp, fp, fn))
    return CountScores(tp, fp, fn, _ratio(tp, tp + fp), _ratio(tp, tp + fn),
                       _ratio(2 * tp, 2 * tp + fp + fn))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(num.shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def average_precision(scores: np.ndarray, positive: np.ndarray, points: tuple | None = None) -> np.ndarray:
    """One-vs-rest average precision of every column (NaN for a column with no positive).

    AP = sum over distinct thresholds t of (R(t) - R(t_prev)) * P(t), precision and recall
    counted over every sample with score >= t — tied scores enter together, as
    ``sklearn.metrics.average_precision_score`` (no interpolation). Equivalently the mean,
    over the positives i of a class, of ``#{positives >= s_i} / #{samples >= s_i}``.

    Vectorised: each column is sorted once (``np.sort`` along the samples), the positives'
    counts come from a bisection over all positives at once and from their own sorted
    order, so no Python loop runs over samples or classes.
    """
    n_classes = scores.shape[1]
    ap = np.full(n_classes, np.nan)
    cols, _, at_least, positives_at_least = points or positive_points(scores, positive)
    if not cols.size:
        return ap
    precision = positives_at_least / at_least
    totals = np.bincount(cols, minlength=n_classes)
    sums = np.bincount(cols, weights=precision, minlength=n_classes)
    present = totals > 0
    ap[present] = sums[present] / totals[present]
    return ap


def positive_points(scores: np.ndarray, positive: np.ndarray) -> tuple:
    """``(cols, values, at_least, positives_at_least)``: for every positive (sample, class)
    its class, its score, the samples of the class scored at least as high, and the
    positives among them — the precision-recall point of the threshold at its score (what
    :func:`average_precision` and :func:`pr_curves` read; computed once for both)."""
    n = scores.shape[0]
    rows, cols = np.nonzero(positive)
    if not rows.size:
        empty = np.zeros(0, np.int64)
        return cols, np.zeros(0), empty, empty
    values = scores[rows, cols]
    ordered = np.sort(scores.T, axis=1)  # (C, n), each class ascending
    # samples of the class with a score >= the positive's: n - (first index >= value)
    at_least = n - _segment_left(ordered, cols, values)
    # positives of the class with a score >= the positive's, from the positives sorted by
    # (class, score): the end of the class's run minus the first of the tie group
    order = np.lexsort((values, cols))
    c_sorted, v_sorted = cols[order], values[order]
    group_start = np.searchsorted(c_sorted, c_sorted, side="left")
    group_end = np.searchsorted(c_sorted, c_sorted, side="right")
    key_change = np.ones(order.size, dtype=bool)
    key_change[1:] = (c_sorted[1:] != c_sorted[:-1]) | (v_sorted[1:] != v_sorted[:-1])
    tie_first = np.maximum.accumulate(np.where(key_change, np.arange(order.size), 0))
    positives_at_least = np.empty(order.size, dtype=np.int64)
    positives_at_least[order] = group_end - tie_first
    del group_start
    return cols, values, at_least, positives_at_least


RECALL_GRID = np.linspace(0.0, 1.0, 101)


def pr_curves(scores: np.ndarray, positive: np.ndarray,
              points: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One-vs-rest precision-recall curves of every column on the 101-point recall grid:
    ``(precision, score)``, each (C, 101), NaN for a class with no positive.

    The points are scikit-learn's ``precision_recall_curve`` (one per distinct score:
    precision and recall over the samples scored at least that high); at recall r the
    curve holds the highest precision of a point with recall >= r (the interpolated
    precision COCO reads) and the score of the first point reaching r (the highest
    threshold that keeps recall >= r). Only the positives' scores are points that matter
    (a negative lowers precision and leaves recall), so they are the points used; the
    running maximum within each class is exact (integer ranks, no offsets added to floats).
    """
    n_classes = scores.shape[1]
    precision_out = np.full((n_classes, RECALL_GRID.size), np.nan)
    score_out = np.full((n_classes, RECALL_GRID.size), np.nan)
    cols, values, at_least, hits = points or positive_points(scores, positive)
    if not cols.size:
        return precision_out, score_out
    order = np.lexsort((-values, cols))  # per class, the highest score first
    cols, values, hits, at_least = cols[order], values[order], hits[order], at_least[order]
    npos = np.bincount(cols, minlength=n_classes)
    recall = hits / npos[cols]
    precision = hits / at_least
    # the best precision from each point on to the end of its class: a running maximum over
    # the reversed points, each class's ranks lifted above every class after it
    levels, rank = np.unique(precision, return_inverse=True)
    lifted = (n_classes - cols).astype(np.int64) * levels.size + rank
    best = np.maximum.accumulate(lifted[::-1])[::-1] - (n_classes - cols).astype(np.int64) * levels.size
    envelope = levels[best]
    present = np.flatnonzero(npos)
    starts = np.searchsorted(cols, present, side="left")
    ends = np.searchsorted(cols, present, side="right")
    queries = np.tile(RECALL_GRID, present.size)
    first = _first_at_least(recall, np.repeat(starts, RECALL_GRID.size),
                            np.repeat(ends, RECALL_GRID.size), queries)
    precision_out[present] = envelope[first].reshape(present.size, -1)
    score_out[present] = values[first].reshape(present.size, -1)
    # recall 0 is kept by every threshold: the highest is the class's top score, negative or not
    score_out[present, 0] = scores[:, present].max(axis=0)
    return precision_out, score_out


def _first_at_least(ascending: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    values: np.ndarray) -> np.ndarray:
    """For every query, the first index in ``[lo, hi)`` whose ``ascending`` value is >= its
    value (``hi`` when none): ``np.searchsorted`` on each segment, all at once."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        below = active & (ascending[np.minimum(mid, ascending.size - 1)] < values)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(active & ~below, mid, hi)


def _segment_left(ordered: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.searchsorted(ordered[r], v, side="left")`` for every (r, v) pair at once: a
    bisection over all queries together (about log2(n) vectorised steps)."""
    n = ordered.shape[1]
    lo = np.zeros(values.size, dtype=np.int64)
    hi = np.full(values.size, n, dtype=np.int64)
    flat = ordered.reshape(-1)
    base = rows.astype(np.int64) * n
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        go_right = active & (flat[base + np.minimum(mid, n - 1)] < values)
        lo = np.where(go_right, mid + 1, lo)
        hi = np.where(active & ~go_right, mid, hi)


@dataclass
class Calibration:
    """Expected calibration error and its reliability table (per bin: samples, mean
    accuracy, mean confidence; NaN for an empty bin)."""

    ece: float
    edges: np.ndarray
    count: np.ndarray
    accuracy: np.ndarray
    confidence: np.ndarray


def calibration(confidence: np.ndarray, correct: np.ndarray, n_bins: int) -> Calibration:
    """ECE = sum over bins b of (n_b / N) * |accuracy_b - confidence_b| over ``n_bins``
    equal-width bins of [0, 1]; bin b is (b/B, (b+1)/B] with edges computed as ``b / B``,
    and a confidence of exactly 0 falls in the first bin (Guo et al. 2017, the torchmetrics
    convention). ``confidence`` must lie in [0, 1]."""
    edges = np.arange(n_bins + 1, dtype=np.float64) / n_bins
    which = np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, n_bins - 1)
    count = np.bincount(which, minlength=n_bins)
    hits = np.bincount(which, weights=correct.astype(np.float64), minlength=n_bins)
    conf = np.bincount(which, weights=confidence, minlength=n_bins)
    with np.errstate(divide="ignore", invalid="ignore"):
        accuracy = np.where(count > 0, hits / count, np.nan)
        mean_conf = np.where(count > 0, conf / count, np.nan)
    total = confidence.size
    filled = count > 0
    ece = float(np.sum(count[filled] / total * np.abs(accuracy[filled] - mean_conf[filled]))) \
        if total else float("nan")
    return Calibration(ece, edges, count, accuracy, mean_conf)
