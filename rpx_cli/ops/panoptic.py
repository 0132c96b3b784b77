"""Panoptic quality (Kirillov et al., 2019) as panopticapi's ``pq_compute`` forms it.

Per image, :func:`overlap_counts` gives every segment's area and every GT x prediction
intersection from one pass over the pixels: each side's ids are turned into compact
indices by a lookup table (``0`` = an id the JSON does not list, ``1`` = VOID, id 0,
``2 + i`` = the JSON's segment ``i``), and one ``np.bincount`` of the combined index counts
the pixels of every (GT, prediction) pair — the areas are its row and column sums.
:func:`reference_overlap_counts` is the same from ``np.unique`` of 64-bit codes
(panopticapi's way), which a test compares. With the native core, the counting is one pass
in C (``panoptic_overlaps``: runs of equal pairs, each run's ids found by binary search in
the sorted segment ids); the numpy form below is its twin.

:func:`match_image` is panopticapi's matching on those counts, vectorised over the pairs:

- a GT segment and a prediction of the same category match when IoU > 0.5 (strict), with
  ``IoU = I / (area_pred + area_gt - I - void_pred)`` — the prediction's pixels on VOID are
  left out of the union; a crowd GT never matches. IoU > 0.5 makes matches one-to-one.
- unmatched non-crowd GT segments are false negatives;
- an unmatched prediction is a false positive unless more than half of its pixels lie on
  VOID or on the crowd region of its category (panopticapi takes the *last* crowd segment
  of a category listed in ``segments_info``; so does this).

PQ of a class = Σ IoU(TP) / (TP + FP/2 + FN/2), SQ = Σ IoU(TP) / TP (0 without a TP),
RQ = TP / (TP + FP/2 + FN/2); a mean over classes takes the classes with TP + FP + FN > 0.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from rpx_cli import native

UNKNOWN, VOID = 0, 1  # compact indices before the segments' (2 + i)
_ID_SPACE = 256 ** 3
_tables = threading.local()


def _lookup_table() -> np.ndarray:
    """This thread's id -> compact index table (2^24 uint16, zero but where an image's
    segments are being indexed; pages are touched only where ids fall)."""
    table = getattr(_tables, "table", None)
    if table is None:
        table = _tables.table = np.zeros(_ID_SPACE, np.uint16)
    return table


def _compact(ids: np.ndarray, segment_ids: np.ndarray, table: np.ndarray) -> np.ndarray:
    table[0] = VOID
    table[segment_ids] = np.arange(2, segment_ids.size + 2, dtype=np.uint16)
    try:
        return np.take(table, ids)
    finally:
        table[0] = 0
        table[segment_ids] = 0


def overlap_counts(gt_ids: np.ndarray, pred_ids: np.ndarray, gt_segments: np.ndarray,
                   pred_segments: np.ndarray) -> np.ndarray:
    """``counts[a, b]``: the pixels whose GT id has compact index ``a`` and prediction id
    compact index ``b`` (0: an id neither JSON lists, 1: VOID, 2 + i: segment i of that
    side's list). Both id maps are ``(H, W)`` integers < 256³ of one shape; the segment ids
    are distinct integers 1 .. 256³-1 (at most 65,533 a side).

    Counted by runs: along the rows of panoptic maps most pixels repeat the (GT,
    prediction) pair of the pixel before, so the pixels where either id changes start the
    runs (two comparison passes), the ids of each run are looked up once and its length is
    added once (``np.bincount`` by pixel would wait on the counter it just incremented, and
    the lookups would touch every pixel): 10 -> 3 ms on a 1024x512 image of ~40 segments.
    Maps whose runs average under 8 pixels (noise) are counted pixel by pixel."""
    n_gt, n_pred = gt_segments.size + 2, pred_segments.size + 2
    if max(n_gt, n_pred) > np.iinfo(np.uint16).max:
        raise ValueError("more than 65,533 segments in one image")
    core = native.core()
    if core is not None and gt_ids.dtype == pred_ids.dtype == np.dtype("<u4"):
        counts = np.zeros((n_gt, n_pred), np.int64)
        sides = []
        for segments in (gt_segments, pred_segments):
            order = np.argsort(segments, kind="stable").astype(np.int64)
            sides += [np.ascontiguousarray(segments[order], np.int64), order]
        core.panoptic_overlaps(np.ascontiguousarray(gt_ids), np.ascontiguousarray(pred_ids),
                               *sides, counts)
        return counts
    gt_flat, pred_flat = gt_ids.ravel(), pred_ids.ravel()
    n = gt_flat.size
    lengths = None
    if n > 1:
        change = gt_flat[1:] != gt_flat[:-1]
        change |= pred_flat[1:] != pred_flat[:-1]
        starts = np.flatnonzero(change)
        if starts.size * 8 <= n:
            starts += 1
            starts = np.concatenate([np.zeros(1, starts.dtype), starts])
            lengths = np.diff(starts, append=n)
            gt_flat, pred_flat = gt_flat[starts], pred_flat[starts]
    table = _lookup_table()
    gt_index = _compact(gt_flat, gt_segments, table)
    pred_index = _compact(pred_flat, pred_segments, table)
    dtype = np.uint32 if n_gt * n_pred < 2 ** 32 else np.uint64
    code = np.multiply(gt_index, n_pred, dtype=dtype)
    code += pred_index
    if lengths is None:
        return np.bincount(code, minlength=n_gt * n_pred).reshape(n_gt, n_pred)
    counts = np.bincount(code, weights=lengths, minlength=n_gt * n_pred)  # exact: < 2^53
    return counts.astype(np.int64).reshape(n_gt, n_pred)


def reference_overlap_counts(gt_ids: np.ndarray, pred_ids: np.ndarray, gt_segments: np.ndarray,
                             pred_segments: np.ndarray) -> np.ndarray:
    """:func:`overlap_counts` as panopticapi counts: ``np.unique`` of ``gt·256³ + pred``."""
    codes, counts = np.unique(gt_ids.astype(np.uint64) * _ID_SPACE + pred_ids.astype(np.uint64),
                              return_counts=True)
    out = np.zeros((gt_segments.size + 2, pred_segments.size + 2), np.int64)

    def index(ids: np.ndarray, segments: np.ndarray) -> np.ndarray:
        where = {int(s): 2 + i for i, s in enumerate(segments)}
        where[0] = VOID
        return np.array([where.get(int(i), UNKNOWN) for i in ids], np.int64)

    np.add.at(out, (index(codes // _ID_SPACE, gt_segments), index(codes % _ID_SPACE, pred_segments)),
              counts)
    return out


@dataclass(frozen=True)
class ImageResult:
    """One image's counts per category index (the classes with TP + FP + FN > 0 only):
    ``category``, ``tp``, ``fp``, ``fn`` (int64) and ``iou`` (Σ IoU of the TPs, float64)."""

    category: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    iou: np.ndarray


def match_image(counts: np.ndarray, gt_category: np.ndarray, gt_crowd: np.ndarray,
                gt_area: np.ndarray, pred_category: np.ndarray, n_categories: int) -> ImageResult:
    """panopticapi's TP/FP/FN and IoU sums of one image, from :func:`overlap_counts`.

    ``gt_area``: the GT segments' areas (panopticapi takes the GT JSON's ``area``; the
    prediction's are its pixel counts, the column sums). Category values are indices
    ``0 .. n_categories-1``."""
    inter = counts[2:, 2:].astype(np.int64)  # (GT segments, predictions)
    pred_area = counts[:, 2:].sum(axis=0, dtype=np.int64)
    pred_void = counts[VOID, 2:].astype(np.int64)
    candidate = (inter > 0) & (gt_category[:, None] == pred_category[None, :]) & ~gt_crowd[:, None]
    g, p = np.nonzero(candidate)
    overlap = inter[g, p]
    iou = overlap / (pred_area[p] + gt_area[g] - overlap - pred_void[p])
    hit = iou > 0.5
    g, p, iou = g[hit], p[hit], iou[hit]
    k = n_categories
    tp = np.bincount(gt_category[g], minlength=k)
    # float64 even without a match (bincount of nothing is int64 whatever its weights)
    iou_sum = np.bincount(gt_category[g], weights=iou, minlength=k).astype(np.float64)
    gt_matched = np.zeros(gt_category.size, bool)
    gt_matched[g] = True
    pred_matched = np.zeros(pred_category.size, bool)
    pred_matched[p] = True
    fn = np.bincount(gt_category[~gt_matched & ~gt_crowd], minlength=k)
    # the last crowd segment of each category (panopticapi's dict, overwritten in order)
    last_crowd = np.full(k, -1, np.int64)
    crowd_index = np.flatnonzero(gt_crowd)
    np.maximum.at(last_crowd, gt_category[crowd_index], crowd_index)
    loose = np.flatnonzero(~pred_matched)
    crowd_of = last_crowd[pred_category[loose]]
    on_crowd = np.zeros(loose.size, np.int64)  # (an image without GT segments has no row)
    has_crowd = crowd_of >= 0
    on_crowd[has_crowd] = inter[crowd_of[has_crowd], loose[has_crowd]]
    excused = pred_void[loose] + on_crowd
    # "more than half on VOID or crowd" (panopticapi's intersection / area > 0.5, exact)
    false = loose[2 * excused <= pred_area[loose]]
    fp = np.bincount(pred_category[false], minlength=k)
    present = np.flatnonzero(tp + fp + fn)
    return ImageResult(present, tp[present].astype(np.int64), fp[present].astype(np.int64),
                       fn[present].astype(np.int64), iou_sum[present])


@dataclass(frozen=True)
class Quality:
    """PQ, SQ, RQ per class (NaN where TP + FP + FN = 0)."""

    pq: np.ndarray
    sq: np.ndarray
    rq: np.ndarray

    @classmethod
    def of(cls, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, iou: np.ndarray) -> Quality:
        tp, fp, fn, iou = (np.asarray(x, np.float64) for x in (tp, fp, fn, iou))
        seen = (tp + fp + fn) > 0
        denominator = np.where(seen, tp + 0.5 * fp + 0.5 * fn, 1.0)
        pq = np.where(seen, iou / denominator, np.nan)
        sq = np.where(seen, np.divide(iou, tp, out=np.zeros_like(iou), where=tp > 0), np.nan)
        rq = np.where(seen, tp / denominator, np.nan)
        return cls(pq, sq, rq)

    def means(self, among: np.ndarray | None = None) -> tuple[float | None, float | None,
                                                              float | None, int]:
        """The means over the classes with TP + FP + FN > 0 (of ``among``, a mask), and
        how many there are; None for no such class."""
        seen = ~np.isnan(self.pq)
        if among is not None:
            seen &= among
        n = int(np.count_nonzero(seen))
        if not n:
            return None, None, None, 0
        return (float(self.pq[seen].sum() / n), float(self.sq[seen].sum() / n),
                float(self.rq[seen].sum() / n), n)
