"""COCO's accumulation: the matched detections of every category read as precision, recall
and scores per (IoU threshold, recall point, category, area range, maxDets), equal to
pycocotools' ``COCOeval.accumulate`` (and ``LVISEval``'s).

:func:`accumulate` runs the native core's ``coco_accumulate`` (``rpx_cli/csrc/coco_eval.c``,
one pass per cell with the GIL released) when it is in use, else its numpy twin
:func:`reference_accumulate` (a loop over categories, maxDets and area ranges, vectorised
over the detections); both give the same numbers bit for bit
(``tests/test_native_coco_eval.py``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rpx_cli import native

EPS = np.spacing(1)  # pycocotools' precision denominator: tp + fp + eps


class Accumulated(NamedTuple):
    """pycocotools' ``eval["precision"]`` (T, R, K, A, M), ``eval["recall"]`` (T, K, A, M)
    and ``eval["scores"]`` (T, R, K, A, M); -1 in a cell whose category has no regular GT
    in that area range."""

    precision: np.ndarray
    recall: np.ndarray
    scores: np.ndarray


def accumulate(matched: np.ndarray, ignored: np.ndarray, rank: np.ndarray, score: np.ndarray,
               bounds: np.ndarray, regular: np.ndarray, max_dets: tuple[int, ...],
               recall_points: np.ndarray, order: np.ndarray | None = None) -> Accumulated:
    """Precision, recall and scores of every cell.

    The detections are in category order (category ``k`` is ``bounds[k]:bounds[k + 1]``),
    score descending within a category (pycocotools' ties: image, then rank); ``rank`` (D,)
    is each one's rank in its (image, category) group (it counts under maxDets ``m`` when
    ``rank < max_dets[m]``; every detection counts under the last); ``score`` (D,) its score.
    ``matched`` and ``ignored`` (D, A * T) bool, column ``a * T + t``: the detection took a
    GT / is ignored in area range ``a`` at threshold ``t``; a true positive is matched and
    not ignored, a false positive neither. ``regular`` (A, K) int: the regular GT of each
    category per range. ``recall_points`` (R,) ascending. ``order`` (N,) int: the rows of
    ``matched``, ``ignored``, ``rank`` and ``score`` in that category order (a row may come
    more than once), when they are not in it themselves: the same as passing them gathered
    by ``order``, without copying them."""
    A, K = regular.shape
    T, M, R = matched.shape[1] // max(A, 1), len(max_dets), recall_points.size
    core = native.core()
    if core is None:
        if order is not None:
            matched, ignored, rank, score = matched[order], ignored[order], rank[order], score[order]
        return reference_accumulate(matched, ignored, rank, score, bounds, regular, max_dets,
                                    recall_points)
    precision = np.empty((T, R, K, A, M))
    recall = np.empty((T, K, A, M))
    scores = np.empty((T, R, K, A, M))
    core.coco_accumulate(
        np.ascontiguousarray(matched, np.bool_), np.ascontiguousarray(ignored, np.bool_),
        np.ascontiguousarray(rank, np.int64), np.ascontiguousarray(score, np.float64),
        None if order is None else np.ascontiguousarray(order, np.int64),
        np.ascontiguousarray(bounds, np.int64), np.ascontiguousarray(regular, np.int64),
        np.asarray(max_dets, np.int64), np.ascontiguousarray(recall_points, np.float64),
        T, A, precision, recall, scores, native.threads())
    return Accumulated(precision, recall, scores)


def reference_accumulate(matched: np.ndarray, ignored: np.ndarray, rank: np.ndarray,
                         score: np.ndarray, bounds: np.ndarray, regular: np.ndarray,
                         max_dets: tuple[int, ...], recall_points: np.ndarray) -> Accumulated:
    """:func:`accumulate`'s numpy twin: per category, maxDets and area range, the cell's
    detections (those under the maxDets) handed to :func:`_cell`."""
    A, K = regular.shape
    T, M, R = matched.shape[1] // max(A, 1), len(max_dets), recall_points.size
    precision = -np.ones((T, R, K, A, M))
    scores = -np.ones((T, R, K, A, M))
    recall = -np.ones((T, K, A, M))
    # (areas * thresholds, detections), contiguous along the detections to run sums fast
    tps = np.ascontiguousarray((matched & ~ignored).T)
    igs = np.ascontiguousarray(ignored.T)
    for k in range(K):
        lo, hi = bounds[k], bounds[k + 1]
        for m, max_det in enumerate(max_dets):
            if max_det >= max_dets[-1]:  # detections past the last were dropped already
                tp, ig, ss = tps[:, lo:hi], igs[:, lo:hi], score[lo:hi]
            else:
                sel = lo + np.flatnonzero(rank[lo:hi] < max_det)
                tp, ig, ss = tps[:, sel], igs[:, sel], score[sel]
            for a in np.flatnonzero(regular[:, k]).tolist():
                cells = slice(a * T, (a + 1) * T)
                _cell(tp[cells], ig[cells], int(regular[a, k]), ss, recall_points,
                      precision[:, :, k, a, m], recall[:, k, a, m], scores[:, :, k, a, m])
    return Accumulated(precision, recall, scores)


def _cell(tps, igs, regular, det_scores, recall_points, precision_out, recall_out, scores_out) -> None:
    """One (category, area, maxDets) cell, pycocotools' accumulate read at the true
    positives only: recall only rises there, and precision's running maximum from the
    right is always attained at one of them (a false positive lowers precision, an ignored
    detection repeats it), so the values — the same divisions — are bit for bit the same.
    ``tps``: (thresholds, detections); ``igs``: the ignored detections, likewise;
    ``det_scores``: the detections' scores (descending).

    Scores (pycocotools' ``eval["scores"]``): the score of the detection where each recall
    point is first reached — a true positive, except at recall 0, which every detection
    reaches: there it is the first detection's score, whatever it is.
    """
    for t in range(tps.shape[0]):
        at = np.flatnonzero(tps[t])
        recall_out[t] = at.size / regular
        before = np.arange(at.size)  # true positives before each
        # false positives before each true positive: the rest of what precedes it
        fp = (at - before - np.searchsorted(np.flatnonzero(igs[t]), at)).astype(np.float64)
        tp = before + 1.0
        pr = tp / (fp + tp + EPS)
        rc = tp / regular
        envelope = np.maximum.accumulate(pr[::-1])[::-1]
        inds = np.searchsorted(rc, recall_points, side="left")
        inside = inds < at.size
        q = np.zeros(recall_points.size)
        q[inside] = envelope[inds[inside]]
        precision_out[t] = q
        ss = np.zeros(recall_points.size)
        ss[inside] = det_scores[at[inds[inside]]]
        if det_scores.size:
            ss[0] = det_scores[0]  # rc >= 0 holds at the very first detection
        scores_out[t] = ss
