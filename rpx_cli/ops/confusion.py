"""Confusion matrices of label maps, and the classification metrics derived from them.

A frame's confusion is kept sparse — the labels present in its GT and in its prediction
and a small dense count matrix between them — so frames with different label sets pool
exactly (integer counts) into one dataset matrix of any size.

Shared by 2D and 3D segmentation: per frame :func:`frame_confusion` (or
:func:`interval_confusions`, one matrix per distance interval of a point cloud), then
:func:`add_confusions` (the exact, associative sum), :func:`dense_matrix` over the class
axis with the ``"other"`` column, :func:`confusion_scores` and :func:`average_scores` (the
averaging rule: over classes with GT support, or over a given set of classes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from rpx_cli import native
from rpx_cli.errors import InputError
from rpx_cli.ops.reduce import prf_arrays

OTHER = "other"  # the column of predicted labels outside the known classes
# classes of a dense confusion matrix (segmentation, segmentation3d, classification): a
# 4,096 x 4,096 int64 matrix is 134 MB, one per range band; SemanticKITTI has 20 classes,
# ADE20K 150, LVIS 1,203, ImageNet-1k 1,000 — 65,536 labels would be 34 GB
MAX_CLASSES = 4096


class TooManyLabels(ValueError):
    """A frame with more than :data:`MAX_CLASSES` distinct GT or predicted labels
    (``side``: ``"gt"`` or ``"pred"``, the file at fault)."""

    def __init__(self, side: str, count: int) -> None:
        self.side = side
        what = "GT" if side == "gt" else "predicted"
        super().__init__(f"{count:,} distinct {what} labels in one frame: a confusion matrix "
                         f"holds at most {MAX_CLASSES:,} classes")


def check_label_pairs(gt: int, pred: int) -> None:
    """:class:`TooManyLabels` when a frame's GT (first) or predictions hold more than
    :data:`MAX_CLASSES` distinct labels (so no frame's matrix passes its square)."""
    if gt > MAX_CLASSES:
        raise TooManyLabels("gt", gt)
    if pred > MAX_CLASSES:
        raise TooManyLabels("pred", pred)


_DIRECT_CODES = 1 << 16  # label pairs below 256 x 256 are counted without compaction
_MAX_DENSE_COUNTS = 1 << 20  # interval_confusions: labels index themselves up to this many bins


@dataclass(frozen=True)
class FrameConfusion:
    """Counts of (GT label, predicted label) over a frame's labelled pixels."""

    gt_labels: np.ndarray  # (k,) int64, sorted
    pred_labels: np.ndarray  # (m,) int64, sorted
    counts: np.ndarray  # (k, m) int64

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def __reduce__(self) -> tuple:
        # a worker's result to the parent: raw bytes pickle in half the time of three arrays
        return (_frame_of_bytes, tuple((bytearray(np.ascontiguousarray(a)), a.dtype.str, a.shape)
                                       for a in (self.gt_labels, self.pred_labels, self.counts)))

    @classmethod
    def trimmed(cls, gt_values: np.ndarray, pred_values: np.ndarray,
                counts: np.ndarray) -> FrameConfusion:
        """From a dense ``counts`` over ``gt_values`` x ``pred_values``: only the rows and
        columns that hold a count (the canonical form every frame is kept in)."""
        rows = counts.any(axis=1)
        cols = counts[rows].any(axis=0)
        return cls(gt_values[rows].astype(np.int64, copy=False),
                   pred_values[cols].astype(np.int64, copy=False),
                   counts[np.ix_(rows, cols)].astype(np.int64, copy=False))



def _frame_of_bytes(*parts: tuple[bytearray, str, tuple[int, ...]]) -> FrameConfusion:
    """The inverse of :meth:`FrameConfusion.__reduce__` (writable arrays over the bytes)."""
    return FrameConfusion(*(np.frombuffer(data, np.dtype(dtype)).reshape(shape)
                            for data, dtype, shape in parts))


def encode_confusion(confusion: FrameConfusion) -> list[list[int]]:
    """A frame's confusion as JSON: ``[gt labels, predicted labels, counts]``."""
    return [confusion.gt_labels.tolist(), confusion.pred_labels.tolist(),
            confusion.counts.tolist()]


def decode_confusion(data: list[list[int]]) -> FrameConfusion:
    """The inverse of :func:`encode_confusion`; a ``ValueError`` for counts that are not
    integers >= 0 (a state read back that was edited)."""
    gt, pred, counts = data
    given = np.asarray(counts, np.float64)
    if given.size and (not (given >= 0).all() or (given != np.floor(given)).any()):
        raise ValueError("a confusion matrix holds a count that is not an integer >= 0")
    return FrameConfusion(np.asarray(gt, np.int64), np.asarray(pred, np.int64),
                          given.astype(np.int64).reshape(len(gt), len(pred)))

def trim(confusion: FrameConfusion) -> FrameConfusion:
    """The canonical form of ``confusion``: the rows and columns that hold a count."""
    return FrameConfusion.trimmed(confusion.gt_labels, confusion.pred_labels, confusion.counts)


EMPTY = FrameConfusion(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.int64))


def frame_confusion(gt: np.ndarray, pred: np.ndarray, ignore: tuple[int, ...] = ()) -> FrameConfusion:
    """Count label pairs with ``np.bincount`` (no loop over classes or pixels).

    Pixels whose GT label is in ``ignore`` are excluded from everything. Labels of 8-bit maps
    are counted directly in a 256 x 256 code space; other label maps are first mapped to
    the dense indices of the labels present.
    """
    gt, pred = gt.ravel(), pred.ravel()
    if gt.dtype == pred.dtype == np.uint8:
        return _confusion_8bit(gt, pred, ignore)
    gt_values, gt_index = _compact(gt)
    pred_values, pred_index = _compact(pred)
    check_label_pairs(gt_values.size, pred_values.size)
    width = pred_values.size
    codes = gt_index.astype(np.intp) * width + pred_index
    counts = np.bincount(codes, minlength=gt_values.size * width).reshape(gt_values.size, width)
    if ignore:
        keep = ~np.isin(gt_values, np.asarray(ignore, dtype=np.int64))
        gt_values, counts = gt_values[keep], counts[keep]
    present_rows = counts.any(axis=1)
    present_cols = counts.any(axis=0)
    return FrameConfusion(gt_values[present_rows], pred_values[present_cols],
                          counts[np.ix_(present_rows, present_cols)])


def reference_confusion(gt: np.ndarray, pred: np.ndarray,
                        ignore: tuple[int, ...] = ()) -> FrameConfusion:
    """:func:`frame_confusion` written plainly: the labels present, one dense
    ``bincount(gt_index * m + pred_index)`` over the pixels whose GT is not ignored. The
    readable reference a test compares the fast paths (8-bit codes, compaction) with."""
    gt, pred = gt.ravel().astype(np.int64), pred.ravel().astype(np.int64)
    keep = ~np.isin(gt, np.asarray(ignore, dtype=np.int64))
    gt, pred = gt[keep], pred[keep]
    gt_labels, gt_index = np.unique(gt, return_inverse=True)
    pred_labels, pred_index = np.unique(pred, return_inverse=True)
    counts = np.bincount(gt_index * pred_labels.size + pred_index,
                         minlength=gt_labels.size * pred_labels.size)
    return FrameConfusion(gt_labels, pred_labels, counts.reshape(gt_labels.size, pred_labels.size))


def interval_confusions(gt: np.ndarray, pred: np.ndarray, interval: np.ndarray | None,
                        n_intervals: int = 1,
                        ignore: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The confusion of the points in each interval (``interval[i]`` in ``[0, n_intervals)``,
    e.g. a band of distances; None: one interval), in one ``np.bincount``: ``(gt_values,
    pred_values, counts)`` with ``counts[k]`` the dense (GT x predicted) matrix of interval
    ``k``. Points whose GT label is in ``ignore`` are left out (their rows are dropped).
    Small non-negative labels are their own indices (``values`` = ``0 .. max``, some rows
    or columns may be empty); other labels are first mapped to the dense indices of the
    labels present. One code per point, ``(interval * G + gt) * P + pred``. Sums over
    ``counts[a:b]`` are the matrices of unions of intervals (a range of distances), exactly.
    """
    gt, pred = gt.ravel(), pred.ravel()
    if interval is None:
        n_intervals = 1
    gt_values, gt_index = _dense_index(gt)
    pred_values, pred_index = _dense_index(pred)
    if n_intervals * gt_values.size * pred_values.size > _MAX_DENSE_COUNTS:
        gt_values, gt_index = _compact(gt)  # large label values: only those present
        pred_values, pred_index = _compact(pred)
    rows, cols = gt_values.size, pred_values.size
    check_label_pairs(rows, cols)
    size = n_intervals * rows * cols
    # the narrowest code type (half the memory traffic of uint32 for a lidar scan's ~2,000)
    wide = np.uint16 if size <= 1 << 16 else np.uint32 if size <= 1 << 32 else np.intp
    if interval is None:
        codes = gt_index.astype(wide)
    else:
        codes = interval.astype(wide)
        codes *= rows
        np.add(codes, gt_index, out=codes, casting="unsafe")  # indices are >= 0
    codes *= cols
    np.add(codes, pred_index, out=codes, casting="unsafe")
    counts = np.bincount(codes, minlength=size).reshape(n_intervals, rows, cols)
    if ignore:
        keep = not_in(gt_values, ignore)
        gt_values, counts = gt_values[keep], counts[:, keep]
    return gt_values, pred_values, counts


def not_in(values: np.ndarray, excluded: Sequence[int]) -> np.ndarray:
    """``~np.isin(values, excluded)`` for the few labels of a class axis and an ignore list:
    one broadcast comparison (``np.isin`` costs ~30 us a call on arrays this small)."""
    if not len(excluded):
        return np.ones(values.shape, dtype=bool)
    return (values[:, None] != np.asarray(excluded, dtype=np.int64)[None, :]).all(axis=1)


def _dense_index(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values, index)`` for :func:`interval_confusions`: small non-negative integer labels
    (below 4096, after one ``max`` pass) are their own index into ``0 .. max``; others are
    compacted to the labels present (:func:`_compact`), as are both sides when the dense
    matrices would exceed ``_MAX_DENSE_COUNTS`` bins."""
    if labels.dtype.kind in "ui" and labels.size and (labels.dtype.kind == "u"
                                                      or labels.min() >= 0):
        high = int(labels.max())
        if high < 4096:
            return np.arange(high + 1, dtype=np.int64), labels
    return _compact(labels)


def reference_interval_confusions(gt: np.ndarray, pred: np.ndarray, interval: np.ndarray,
                                  n_intervals: int,
                                  ignore: tuple[int, ...] = ()) -> list[FrameConfusion]:
    """:func:`interval_confusions` written plainly: for each interval, the points in it
    through :func:`reference_confusion`."""
    gt, pred, interval = gt.ravel(), pred.ravel(), interval.ravel()
    return [reference_confusion(gt[interval == k], pred[interval == k], ignore)
            for k in range(n_intervals)]


def add_confusions(a: FrameConfusion, b: FrameConfusion) -> FrameConfusion:
    """``a + b``: the counts of both, over the union of their labels (exact integer sums;
    associative and commutative; neither argument is changed)."""
    if not b.counts.size:
        return a
    if not a.counts.size:
        return b
    if np.array_equal(a.gt_labels, b.gt_labels) and np.array_equal(a.pred_labels, b.pred_labels):
        return FrameConfusion(a.gt_labels, a.pred_labels, a.counts + b.counts)
    gt_labels = np.union1d(a.gt_labels, b.gt_labels)
    pred_labels = np.union1d(a.pred_labels, b.pred_labels)
    counts = np.zeros((gt_labels.size, pred_labels.size), dtype=np.int64)
    for part in (a, b):
        rows = np.searchsorted(gt_labels, part.gt_labels)
        cols = np.searchsorted(pred_labels, part.pred_labels)
        counts[np.ix_(rows, cols)] += part.counts
    return FrameConfusion(gt_labels, pred_labels, counts)


def sum_confusions(frames: Iterable[FrameConfusion]) -> FrameConfusion:
    """The sum of every frame's counts (:data:`EMPTY` for none): one matrix over the union of
    the frames' labels, allocated once (adding pairwise would allocate every growing union)."""
    parts = [frame for frame in frames if frame.counts.size]
    if not parts:
        return EMPTY
    first = parts[0]
    if all(np.array_equal(first.gt_labels, part.gt_labels)
           and np.array_equal(first.pred_labels, part.pred_labels) for part in parts[1:]):
        return FrameConfusion(first.gt_labels, first.pred_labels,
                              np.sum([part.counts for part in parts], axis=0, dtype=np.int64))
    gt_labels, pred_labels = label_union(parts)
    counts = np.zeros((gt_labels.size, pred_labels.size), dtype=np.int64)
    for part in parts:
        rows = np.searchsorted(gt_labels, part.gt_labels)
        cols = np.searchsorted(pred_labels, part.pred_labels)
        counts[np.ix_(rows, cols)] += part.counts
    return FrameConfusion(gt_labels, pred_labels, counts)


def label_union(frames: Sequence[FrameConfusion]) -> tuple[np.ndarray, np.ndarray]:
    """The sorted GT labels and the sorted predicted labels of all ``frames``."""
    if not frames:
        return EMPTY.gt_labels, EMPTY.pred_labels
    return (np.unique(np.concatenate([frame.gt_labels for frame in frames])),
            np.unique(np.concatenate([frame.pred_labels for frame in frames])))


def class_axis(frames: Sequence[FrameConfusion], num_classes: int | None) -> np.ndarray:
    """The classes of a dataset matrix over ``frames``: ``0 .. num_classes - 1``, else the
    non-negative labels that occur in their GT or predictions (at most :data:`MAX_CLASSES`:
    an :class:`~rpx_cli.errors.InputError` past it, raised before any matrix of the union is
    allocated)."""
    if num_classes is not None:
        return np.arange(num_classes, dtype=np.int64)
    labels = np.union1d(*label_union(frames))
    labels = labels[labels >= 0]
    if labels.size > MAX_CLASSES:
        raise InputError(f"the GT and predicted labels of all frames make {labels.size:,} "
                         f"classes, more than {MAX_CLASSES:,} (a dense confusion matrix each); "
                         "predicted labels past --num-classes count as 'other'")
    return labels


def has_other(confusion: FrameConfusion, classes: np.ndarray) -> bool:
    """Whether some prediction falls outside ``classes`` (the ``"other"`` column)."""
    return bool(np.any(~np.isin(confusion.pred_labels, classes)))


def dense_matrix(confusion: FrameConfusion, classes: np.ndarray, *, other: bool) -> np.ndarray:
    """The (C, C) matrix over ``classes`` (rows GT, columns predicted), with a last column of
    the predictions outside the classes when ``other`` (counted there, never dropped).
    Every GT label must be one of ``classes``."""
    matrix = np.zeros((classes.size, classes.size + (1 if other else 0)), dtype=np.int64)
    if not confusion.counts.size:
        return matrix
    rows = np.searchsorted(classes, confusion.gt_labels)
    if np.any(rows >= classes.size) or np.any(classes[np.minimum(rows, classes.size - 1)]
                                              != confusion.gt_labels):
        raise ValueError("a GT label is not one of the classes")
    cols = np.searchsorted(classes, confusion.pred_labels)
    known = (cols < classes.size) & (classes[np.minimum(cols, classes.size - 1)]
                                     == confusion.pred_labels)
    if not other and not known.all():
        raise ValueError("a predicted label is not one of the classes (other=False)")
    cols = np.where(known, cols, classes.size)  # outside the classes: the "other" column
    np.add.at(matrix, (rows[:, None], cols[None, :]), confusion.counts)
    return matrix


def _confusion_8bit(gt: np.ndarray, pred: np.ndarray, ignore: tuple[int, ...]) -> FrameConfusion:
    """8-bit maps: one uint16 code per pixel (gt << 8 | pred), counted by :func:`code_counts`
    — or, with the native core, the same counts by ``label_pair_counts`` (its twin)."""
    core = native.core()
    if core is not None:  # one pass over the runs in C (label_pair_counts)
        counts = np.zeros((256, 256), np.int64)
        core.label_pair_counts(np.ascontiguousarray(gt), np.ascontiguousarray(pred), counts)
    else:
        codes = gt.astype(np.uint16)
        codes <<= 8
        codes |= pred
        counts = code_counts(codes, 1 << 16).reshape(256, 256)
    for label in ignore:
        if 0 <= label < 256:
            counts[label] = 0
    rows = np.flatnonzero(counts.any(axis=1))
    cols = np.flatnonzero(counts[rows].any(axis=0))
    return FrameConfusion(rows.astype(np.int64), cols.astype(np.int64),
                          counts[np.ix_(rows, cols)])


def code_counts(codes: np.ndarray, size: int) -> np.ndarray:
    """``np.bincount(codes, minlength=size)`` (int64) of a flat array, counted by runs when
    label maps make them long: a run of equal codes adds its length once.

    ``np.bincount`` increments one counter per pixel, and along a label map's rows most
    increments hit the counter just incremented, so each waits for the last (~1.5 ns a
    pixel here). Counting the runs — one comparison pass, then one weighted count per run —
    is ~5x faster on region-like maps (~7,000 runs in a 480x640 frame); maps with runs
    shorter than 8 pixels on average (noise) are counted directly."""
    n = codes.size
    changes = np.flatnonzero(codes[1:] != codes[:-1])
    if changes.size * 8 > n or n == 0:
        return np.bincount(codes, minlength=size)
    starts = np.empty(changes.size + 1, np.intp)
    starts[0] = 0
    np.add(changes, 1, out=starts[1:])
    lengths = np.diff(starts, append=n)
    counts = np.bincount(codes[starts], weights=lengths, minlength=size)  # exact: < 2^53
    return counts.astype(np.int64)


def _compact(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values, index)``: the label values present (sorted) and each pixel's index into
    them. 8-bit labels are their own index over all 256 values (no pass over the pixels)."""
    if labels.dtype == np.uint8:
        return np.arange(256, dtype=np.int64), labels
    if labels.dtype.kind in "ui" and labels.size:
        low, high = int(labels.min()), int(labels.max())
        if low >= 0 and high < 256:  # wide storage, few labels: the direct 8-bit path
            return np.arange(256, dtype=np.int64), labels.astype(np.uint8)
        if low >= 0 and high < _DIRECT_CODES:
            present = np.bincount(labels, minlength=high + 1) > 0
            values = np.flatnonzero(present)
            lut = (np.cumsum(present) - 1).astype(np.uint16)
            return values.astype(np.int64), lut[labels]
    values, index = np.unique(labels, return_inverse=True)
    return values.astype(np.int64), index.reshape(-1)


@dataclass(frozen=True)
class ConfusionScores:
    """Per-class figures from a confusion matrix (rows GT, columns predicted): support, TP,
    IoU, precision, recall, F1 and the predictions of each class."""

    support: np.ndarray  # GT pixels per class
    tp: np.ndarray
    iou: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    predicted: np.ndarray  # pixels predicted as the class (among those with a GT class)


def confusion_scores(matrix: np.ndarray) -> ConfusionScores:
    """IoU = TP / (TP + FP + FN), precision = TP / (TP + FP), recall = TP / (TP + FN),
    F1 = 2PR / (P + R); a 0/0 is 0 (a class that is never predicted has precision 0).

    ``matrix`` is (C, C) or (C, C + 1) with a last "other" column of predictions outside the
    classes: those pixels are false negatives of their GT class, never dropped. A stack of
    matrices (..., C, C) gives stacked figures (..., C), each equal to its matrix's.
    """
    classes = matrix.shape[-2]
    tp = np.diagonal(matrix[..., :classes], axis1=-2, axis2=-1).astype(np.float64)
    support = matrix.sum(axis=-1).astype(np.float64)
    predicted = matrix[..., :classes].sum(axis=-2).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(support + predicted - tp > 0, tp / (support + predicted - tp), 0.0)
    scores = prf_arrays(tp, predicted - tp, support - tp, empty=None)
    return ConfusionScores(support, tp, iou, scores["precision"], scores["recall"], scores["f1"],
                       predicted)


AVERAGES = ("miou", "fwiou", "acc", "mprecision", "mrecall", "mf1")


def average_scores(scores: ConfusionScores, averaged: np.ndarray | None = None, *,
                   accuracy: str = "labelled") -> dict[str, float | None]:
    """The dataset figures of a confusion matrix, under an averaging rule.

    ``miou``, ``mprecision``, ``mrecall``, ``mf1``: means of the per-class values over the
    classes ``averaged`` (a boolean mask; default: the classes with GT support, as
    autoware-ml; SemanticKITTI's ``np_ioueval`` averages over every class it does not
    ignore, an absent class scoring 0). ``fwiou``: sum over the supported classes of
    support share x IoU. ``acc``: ``"labelled"`` = correct / labelled (autoware-ml);
    ``"predicted"`` = correct / points predicted as an averaged class (``np_ioueval``'s
    ``getacc``: a labelled point predicted as an ignored class or outside the classes
    leaves the denominator), 0 when nothing was. All None without a labelled point or
    without a class to average over.
    """
    supported = scores.support > 0
    if averaged is None:
        averaged = supported
    total = float(scores.support.sum())
    if total == 0 or not averaged.any():
        return dict.fromkeys(AVERAGES)
    if accuracy == "labelled":
        acc = float(scores.tp.sum() / total)
    elif accuracy == "predicted":
        predicted = float(scores.predicted[averaged].sum())
        acc = float(scores.tp[averaged].sum() / predicted) if predicted else 0.0
    else:
        raise ValueError(f"accuracy must be 'labelled' or 'predicted', got {accuracy!r}")
    return {
        "miou": float(scores.iou[averaged].mean()),
        "fwiou": float(np.sum(scores.support[supported] / total * scores.iou[supported])),
        "acc": acc,
        "mprecision": float(scores.precision[averaged].mean()),
        "mrecall": float(scores.recall[averaged].mean()),
        "mf1": float(scores.f1[averaged].mean()),
    }
