"""The classification figures (``rpx eval classification``): rows, ``aggregate`` and
``dataset`` from the columns (:mod:`rpx_cli.tasks.classification.columns`) — single-label
(accuracy, top-k, P/R/F1 per class and their macro/weighted means, balanced accuracy,
AP/mAP, ECE) and multi-label (subset accuracy, Hamming loss, per-class P/R/F1, AP/mAP),
with scikit-learn's definitions."""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.ops.classification import (
    RECALL_GRID,
    average_precision,
    calibration,
    confusion_counts,
    count_scores,
    positive_points,
    pr_curves,
    top1,
    true_rank,
)
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.classification.columns import Columns

# --- the figures ---------------------------------------------------------------------------------


def _per_class(classes: list[str], figures: Any, ap: np.ndarray | None) -> dict[str, Any]:
    support = figures.support
    columns = [figures.precision.tolist(), figures.recall.tolist(), figures.f1.tolist(),
               support.tolist()]
    out = {label: {"precision": p, "recall": r, "f1": f, "support": s}
           for label, p, r, f, s in zip(classes, *columns, strict=True)}
    if ap is not None:
        for label, value in zip(classes, ap.tolist(), strict=True):
            out[label]["ap"] = None if value != value else value
    return out


def _averages(figures: Any, prefix: str = "") -> dict[str, float]:
    support = figures.support.astype(np.float64)
    total = support.sum()
    out = {}
    for key in ("precision", "recall", "f1"):
        values = getattr(figures, key)
        out[f"macro_{key}"] = float(values.mean()) if values.size else None
        out[f"weighted_{key}"] = float(np.sum(values * support) / total) if total else 0.0
    return out


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def _map(ap: np.ndarray) -> float | None:
    return mean_present(ap)


def _curves(classes: list[str], scores: np.ndarray, positive: np.ndarray,
            points: tuple | None) -> dict[str, Any]:
    """``dataset.curves``: the recall grid and, per class, the interpolated precision and
    the score at each recall point (null for a class without GT support)."""
    precision, score = pr_curves(scores, positive, points)
    per_class: dict[str, Any] = {}
    for label, p, s in zip(classes, precision.tolist(), score.tolist(), strict=True):
        per_class[label] = None if p[0] != p[0] else {
            "precision": p, "score": [None if v in (np.inf, -np.inf) else v for v in s]}
    return {"recall": RECALL_GRID.tolist(), "per_class": per_class}


def single_label_figures(columns: Columns, params: Params, wanted: set[str]):
    classes, n = columns.classes, len(columns)
    n_classes = len(classes)
    truth = np.argmax(columns.gt, axis=1)
    if columns.form == "scores":
        assert columns.scores is not None
        pred = np.where(columns.has_table, top1(columns.scores), -1)
        confidence = np.where(columns.has_table,
                              columns.scores[np.arange(n), np.maximum(pred, 0)], np.nan)
    else:
        has = columns.given.any(axis=1)
        pred = np.where(has, np.argmax(columns.given, axis=1), -1)
        confidence = columns.score
    correct = pred == truth
    n_missing = int(np.count_nonzero(pred < 0))
    values: dict[str, list[Any]] = {}
    aggregate: dict[str, Any] = {"n_samples": n}
    dataset: dict[str, Any] = {"n_samples": n, "n_classes": n_classes, "n_missing": n_missing}
    ranks = None
    if columns.form == "scores":
        assert columns.scores is not None
        ranks = np.where(columns.has_table, true_rank(columns.scores, truth), n_classes)
    if "rows" in wanted:
        values["label"] = [classes[k] for k in truth.tolist()]
        values["predicted"] = [classes[k] if k >= 0 else None for k in pred.tolist()]
        values["correct"] = correct.astype(np.int64).tolist()
        aggregate["correct"] = _mean(correct.astype(np.float64))
        if ranks is not None:
            for k in params["top_k"]:
                hits = ranks < k
                values[f"correct_top{k}"] = hits.astype(np.int64).tolist()
                aggregate[f"correct_top{k}"] = _mean(hits.astype(np.float64))
        if columns.form in ("scores", "score"):
            values["confidence"] = [None if c != c else c for c in confidence.tolist()]
            aggregate["confidence"] = mean_present(confidence)
    matrix = confusion_counts(truth, pred, n_classes)
    tp = np.diagonal(matrix).astype(np.int64)
    support = np.bincount(truth, minlength=n_classes)
    predicted = matrix.sum(axis=0)
    figures = count_scores(tp, predicted - tp, support - tp)
    ap = points = None
    if "ranking" in wanted and ranks is not None:
        assert columns.scores is not None
        for k in params["top_k"]:
            dataset[f"top{k}_accuracy"] = _mean((ranks < k).astype(np.float64))
        points = positive_points(columns.scores, columns.gt)
        ap = average_precision(columns.scores, columns.gt, points)
        dataset["mAP"] = _map(ap)
    if "curves" in wanted and columns.form == "scores":
        assert columns.scores is not None
        dataset["curves"] = _curves(classes, columns.scores, columns.gt, points)
    if "report" in wanted:
        dataset["accuracy"] = _mean(correct.astype(np.float64))
        supported = support > 0
        dataset["balanced_accuracy"] = float(figures.recall[supported].mean())
        dataset.update(_averages(figures))
        confusion: dict[str, Any] = {"labels": classes, "matrix": matrix.tolist()}
        if n_missing:
            confusion["no_prediction"] = np.bincount(truth[pred < 0],
                                                     minlength=n_classes).tolist()
        dataset["confusion"] = confusion
    if "report" in wanted or ap is not None:
        per_class = _per_class(classes, figures, ap)
        if "report" not in wanted:
            per_class = {label: {"ap": entry["ap"]} for label, entry in per_class.items()}
        dataset["per_class"] = per_class
    if "calibration" in wanted and columns.form in ("scores", "score"):
        scored = ~np.isnan(confidence)
        conf = confidence[scored]
        if conf.size and ((conf < 0.0) | (conf > 1.0)).any():
            dataset["ece"] = None
            dataset.setdefault("null_reasons", {})["ece"] = (
                "confidences outside [0, 1] (logits?): calibration needs probabilities")
        elif conf.size:
            result = calibration(conf, correct[scored], params["ece_bins"])
            dataset["ece"] = result.ece
            dataset["calibration"] = {
                "edges": result.edges.tolist(), "count": result.count.tolist(),
                "accuracy": [None if v != v else v for v in result.accuracy.tolist()],
                "confidence": [None if v != v else v for v in result.confidence.tolist()],
                "n_scored": int(conf.size)}
        else:
            dataset["ece"] = None
            dataset.setdefault("null_reasons", {})["ece"] = "no prediction has a confidence"
    return values, aggregate, dataset


def multi_label_figures(columns: Columns, params: Params, wanted: set[str]):
    classes, n = columns.classes, len(columns)
    truth = columns.gt
    if columns.form == "scores":
        assert columns.scores is not None
        predicted = (columns.scores >= params["threshold"]) & columns.has_table[:, None]
    else:
        predicted = columns.given
    wrong = truth != predicted
    label_errors = np.count_nonzero(wrong, axis=1)
    exact = label_errors == 0
    values: dict[str, list[Any]] = {}
    aggregate: dict[str, Any] = {"n_samples": n}
    dataset: dict[str, Any] = {"n_samples": n, "n_classes": len(classes)}
    if "rows" in wanted:
        values["correct"] = exact.astype(np.int64).tolist()
        values["label_errors"] = label_errors.tolist()
        aggregate["correct"] = _mean(exact.astype(np.float64))
        aggregate["label_errors"] = _mean(label_errors.astype(np.float64))
    tp = np.count_nonzero(truth & predicted, axis=0)
    fp = np.count_nonzero(~truth & predicted, axis=0)
    fn = np.count_nonzero(truth & ~predicted, axis=0)
    figures = count_scores(tp, fp, fn)
    ap = points = None
    if "ranking" in wanted and columns.form == "scores":
        assert columns.scores is not None
        points = positive_points(columns.scores, truth)
        ap = average_precision(columns.scores, truth, points)
        dataset["mAP"] = _map(ap)
    if "curves" in wanted and columns.form == "scores":
        assert columns.scores is not None
        dataset["curves"] = _curves(classes, columns.scores, truth, points)
    if "report" in wanted:
        micro = count_scores(tp.sum(keepdims=True), fp.sum(keepdims=True), fn.sum(keepdims=True))
        dataset.update({"micro_precision": float(micro.precision[0]),
                        "micro_recall": float(micro.recall[0]), "micro_f1": float(micro.f1[0])})
        dataset.update(_averages(figures))
        dataset["hamming_loss"] = float(np.count_nonzero(wrong) / wrong.size) if wrong.size else None
        dataset["subset_accuracy"] = _mean(exact.astype(np.float64))
    if "report" in wanted or ap is not None:
        per_class = _per_class(classes, figures, ap)
        if "report" not in wanted:
            per_class = {label: {"ap": entry["ap"]} for label, entry in per_class.items()}
        dataset["per_class"] = per_class
    return values, aggregate, dataset
