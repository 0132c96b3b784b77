"""The scores of ``rpx eval segmentation3d`` (:mod:`rpx_cli.tasks.segmentation3d` has the
task and its protocols): a scan's mIoU and accuracy per range bucket, a bucket's dataset
means and the per-class figures, under the autoware or semantickitti averaging."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from rpx_cli.ops.confusion import (
    AVERAGES,
    average_scores,
    confusion_scores,
    not_in,
)
from rpx_cli.params.values import Band, banded
from rpx_cli.tasks.base import Params

PER_CLASS = ("iou", "precision", "recall", "f1")


def averaging(scored: np.ndarray, protocol: str) -> dict[str, Any]:
    """``average_scores`` arguments of a protocol."""
    if protocol == "semantickitti":
        return {"averaged": scored, "accuracy": "predicted"}
    return {"averaged": None, "accuracy": "labelled"}


def scan_scores(gt_values: np.ndarray, pred_values: np.ndarray, matrices: np.ndarray,
                params: Params) -> list[tuple[float | None, float | None]]:
    """``(miou, acc)`` of a scan's dense matrices ``matrices[t]`` over ``gt_values`` x
    ``pred_values`` (the scan, then each range bucket) under the protocol; None without a
    labelled point. The class axis is every label of either side (and ``0 ..
    num_classes - 1``). The same figures as :func:`average_scores` of :func:`confusion_scores`
    of each matrix (the same float operations in the same order), for all buckets at once."""
    size, at, scored = _class_axis(gt_values.astype(np.int64).tobytes(),
                                   pred_values.astype(np.int64).tobytes(),
                                   params["num_classes"], tuple(params["ignore_index"]))
    dense = np.zeros((matrices.shape[0], size, size), dtype=np.int64)
    dense[(slice(None), *at)] = matrices
    # confusion_scores' support, TP, predictions and IoU of every bucket at once, by its
    # operations (the precision, recall and F1 it also computes are not needed here)
    tp = np.diagonal(dense, axis1=-2, axis2=-1).astype(np.float64)
    support = dense.sum(axis=-1).astype(np.float64)
    predicted = dense.sum(axis=-2).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(support + predicted - tp > 0, tp / (support + predicted - tp), 0.0)
    # sums of counts are exact in float64, so their order does not matter; each mean of
    # IoUs is np.mean's sum of the selected values (np.add.reduce) over their number
    if params["protocol"] == "semantickitti":
        averaged = np.broadcast_to(scored, tp.shape)
        among = np.where(averaged, predicted, 0.0).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            acc = np.where(among > 0, np.where(averaged, tp, 0.0).sum(axis=1) / among, 0.0)
    else:  # autoware: the classes with GT support
        averaged = support > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            acc = tp.sum(axis=1) / support.sum(axis=1)
    counts = np.count_nonzero(averaged, axis=1).tolist()
    defined = (support.sum(axis=1) > 0).tolist()
    out: list[tuple[float | None, float | None]] = []
    for t, (count, labelled) in enumerate(zip(counts, defined, strict=True)):
        if not labelled or not count:  # the scan and its few ranges
            out.append((None, None))
            continue
        out.append((float(np.add.reduce(iou[t][averaged[t]]) / count), float(acc[t])))
    return out


@lru_cache(maxsize=64)
def _class_axis(gt_values: bytes, pred_values: bytes, num_classes: int | None,
                ignore: tuple[int, ...]) -> tuple[int, tuple[Any, Any], np.ndarray]:
    """A scan's class axis (see :func:`scan_scores`): its size, the index of the (GT,
    predicted) values' block of a matrix on it (slices where the positions run on), and
    which classes are scored. Scans of one dataset mostly share their label values, so this
    is worked out once for each set of them."""
    gt, pred = np.frombuffer(gt_values, np.int64), np.frombuffer(pred_values, np.int64)
    parts = [gt, pred] if num_classes is None else [gt, pred, np.arange(num_classes, dtype=np.int64)]
    classes = np.sort(np.concatenate(parts))  # their union (np.union1d imports numpy.ma: 17 ms)
    first = np.ones(classes.size, dtype=bool)
    first[1:] = classes[1:] != classes[:-1]
    classes = classes[first]
    scored = not_in(classes, ignore)
    if num_classes is not None:
        scored &= (classes >= 0) & (classes < num_classes)
    rows, cols = np.searchsorted(classes, gt), np.searchsorted(classes, pred)
    return classes.size, _block(rows, cols), scored


def _block(rows: np.ndarray, cols: np.ndarray) -> tuple[Any, Any]:
    """``(rows, cols)`` as the index of a block of the last two axes: a slice for positions
    that run on by one (a view's assignment, not a scatter), arrays broadcast otherwise."""
    def run(at: np.ndarray) -> slice | None:
        if at.size and at[-1] - at[0] == at.size - 1:  # sorted and distinct: consecutive
            return slice(int(at[0]), int(at[-1]) + 1)
        return None

    row_run, col_run = run(rows), run(cols)
    if row_run is not None and col_run is not None:
        return row_run, col_run
    if row_run is not None:
        return row_run, cols
    if col_run is not None:
        return rows, col_run
    return rows[:, None], cols[None, :]


def bucket_metrics(matrix: np.ndarray, scored: np.ndarray, protocol: str,
                   band: Band | None) -> dict[str, Any]:
    """The dataset means of one bucket's matrix (the scan's when ``band`` is None, else the
    band's keys)."""
    scores = confusion_scores(matrix)
    means = average_scores(scores, **averaging(scored, protocol))
    out = {banded(key, band): means[key] for key in AVERAGES}
    out[banded("n_labelled", band)] = int(scores.support.sum())
    return out


def class_metrics(matrix: np.ndarray, scored: np.ndarray,
                  protocol: str) -> dict[int, dict[str, Any]]:
    """Per class (index into the class axis): ``iou``, ``precision``, ``recall``, ``f1``
    and ``support``. Null for an ignored class (not scored) and in an empty bucket; under
    autoware also null for a class without GT support (it is left out of the means); under
    semantickitti such a class scores 0."""
    scores = confusion_scores(matrix)
    empty = scores.support.sum() == 0
    out = {}
    for c in range(scored.size):  # one dict per class: the report's shape
        support = int(scores.support[c])
        undefined = empty or not scored[c] or (protocol == "autoware" and support == 0)
        values: dict[str, Any] = dict.fromkeys(PER_CLASS) if undefined else {
            "iou": float(scores.iou[c]), "precision": float(scores.precision[c]),
            "recall": float(scores.recall[c]), "f1": float(scores.f1[c])}
        values["support"] = support
        out[c] = values
    return out
