"""The scores of ``rpx eval segmentation3d`` (:mod:`rpx_cli.tasks.segmentation3d` has the
task and its protocols): a scan's mIoU and accuracy per range bucket, a bucket's dataset
means and the per-class figures, under the autoware or semantickitti averaging."""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.ops.confusion import (
    AVERAGES,
    average_scores,
    class_scores,
)
from rpx_cli.tasks.base import Params

PER_CLASS = ("iou", "precision", "recall", "f1")


def averaging(scored: np.ndarray, protocol: str) -> dict[str, Any]:
    """``average_scores`` arguments of a protocol."""
    if protocol == "semantickitti":
        return {"averaged": scored, "accuracy": "predicted"}
    return {"averaged": None, "accuracy": "labelled"}


def scan_scores(gt_values: np.ndarray, pred_values: np.ndarray, matrices: list[np.ndarray],
                params: Params) -> list[tuple[float | None, float | None]]:
    """``(miou, acc)`` of a scan's dense matrices over ``gt_values`` x ``pred_values`` (the
    scan, then each range bucket) under the protocol; None without a labelled point. The
    class axis is every label of either side (and ``0 .. num_classes - 1``)."""
    num_classes = params["num_classes"]
    classes = np.union1d(gt_values, pred_values)
    if num_classes is not None:
        classes = np.union1d(classes, np.arange(num_classes, dtype=np.int64))
    rows = np.searchsorted(classes, gt_values)
    cols = np.searchsorted(classes, pred_values)
    scored = ~np.isin(classes, np.asarray(params["ignore_index"], dtype=np.int64))
    if num_classes is not None:
        scored &= (classes >= 0) & (classes < num_classes)
    how = averaging(scored, params["protocol"])
    out: list[tuple[float | None, float | None]] = []
    for matrix in matrices:  # the scan and its few ranges
        if not matrix.any():
            out.append((None, None))
            continue
        dense = np.zeros((classes.size, classes.size), dtype=np.int64)
        dense[np.ix_(rows, cols)] = matrix
        means = average_scores(class_scores(dense), **how)
        out.append((means["miou"], means["acc"]))
    return out


def bucket_metrics(matrix: np.ndarray, scored: np.ndarray, protocol: str,
                   tail: str) -> dict[str, Any]:
    """The dataset means of one bucket's matrix, keys suffixed with ``tail``."""
    scores = class_scores(matrix)
    means = average_scores(scores, **averaging(scored, protocol))
    out = {f"{key}{tail}": means[key] for key in AVERAGES}
    out[f"n_labelled{tail}"] = int(scores.support.sum())
    return out


def class_metrics(matrix: np.ndarray, scored: np.ndarray,
                  protocol: str) -> dict[int, dict[str, Any]]:
    """Per class (index into the class axis): ``iou``, ``precision``, ``recall``, ``f1``
    and ``support``. Null for an ignored class (not scored) and in an empty bucket; under
    autoware also null for a class without GT support (it is left out of the means); under
    semantickitti such a class scores 0."""
    scores = class_scores(matrix)
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
