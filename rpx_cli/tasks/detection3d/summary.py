"""The figures of ``rpx eval detection3d`` over all samples at once
(:mod:`rpx_cli.tasks.detection3d` has the task): the samples matched per band (the whole
range, then each ``--range``), per-class AP, APH and TP errors, the dataset's mAP, NDS, mAPH
and mean TP errors, and the rows with their means (``aggregate``) and pooled counts
(``dataset.pooled``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.ops import detection3d as d3
from rpx_cli.ops.boxes3d import center_distance
from rpx_cli.ops.depth import band_suffix
from rpx_cli.ops.reduce import mean_present, prf, prf_arrays
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection3d.params import ERRORS, match_thresholds, threshold_key
from rpx_cli.tasks.detection3d.samples import (
    SamplePair,
    base_filter,
    column,
    conventions,
    flatten,
    in_band,
    vocabulary,
)

ROW_KEYS = ("tp", "fp", "fn", "n_gt", "n_pred", "mean_center_error", "precision", "recall", "f1")


def summarize_pairs(pairs: list[SamplePair], params: Params, wanted: set[str]):
    """``({"aggregate": ..., "dataset": ...}, rows)`` of all samples' box pairs (in stem
    order), with the ``--metrics`` families in ``wanted``."""
    n = len(pairs)
    classes = params["class_names"] or vocabulary(pairs)
    gt, pred = flatten(pairs, classes)
    gt, pred = base_filter(gt, pred, classes, params)
    c = conventions(params)
    thresholds = match_thresholds(params)
    match_ths = list(thresholds)
    if params["match"] == "center":
        tp_column = column(match_ths, params["tp_threshold"])
        rule = "<" if params["dist_rule"] == "lt" else "<="
    else:
        tp_column, rule = 0, ">="
    views = [("", None)] + [(f"_{band_suffix(lo, hi)}", (lo, hi)) for lo, hi in params["ranges"]]
    dataset: dict[str, Any] = {"per_class": {name: {} for name in classes}}
    aggregate: dict[str, Any] = {"n_samples": n}
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for suffix, band in views:
        g, p = (gt, pred) if band is None else (in_band(gt, band), in_band(pred, band))
        similarity = d3.distance_similarity(g, p) if params["match"] == "center" else \
            d3.iou_similarity(g, p, params["match"])
        matching = d3.match(g, p, len(classes), similarity, match_ths, rule,
                            later_first=c.later_first)
        if "rows" in wanted:
            _rows(g, p, matching, tp_column, n, params, suffix, rows, aggregate, dataset)
        dataset[f"n_gt{suffix}"] = len(g)
        dataset[f"n_pred{suffix}"] = len(p)
        results = d3.score(g, p, matching, classes, thresholds, tp_column, c) \
            if wanted & {"ap", "tp", "aph"} else None
        for k, name in enumerate(classes):
            entry = dataset["per_class"][name]
            entry[f"n_gt{suffix}"] = int(np.count_nonzero(g.cls == k))
            entry[f"n_pred{suffix}"] = int(np.count_nonzero(p.cls == k))
            if results is None:
                continue
            r = results[k]
            if "ap" in wanted:
                entry[f"AP{suffix}"] = d3.mean_or_none(r.ap)
                for t, value in zip(thresholds, r.ap, strict=True):
                    entry[f"AP_{threshold_key(t, params['match'])}{suffix}"] = value
            if "aph" in wanted:
                entry[f"APH{suffix}"] = d3.mean_or_none(r.aph)
                for t, value in zip(thresholds, r.aph, strict=True):
                    entry[f"APH_{threshold_key(t, params['match'])}{suffix}"] = value
            if "tp" in wanted:
                for e in ERRORS:
                    entry[f"{e}{suffix}"] = r.errors[e]
        if results is not None:
            figures = d3.summary(results, c)
            keys = (["mAP", "NDS"] if "ap" in wanted else []) + \
                (["mAPH"] if "aph" in wanted else []) + \
                ([f"m{e}" for e in ERRORS] if "tp" in wanted else [])
            for key in keys:
                dataset[f"{key}{suffix}"] = figures[key]
    dataset["classes"] = list(classes)
    return {"aggregate": aggregate, "dataset": dataset}, rows


def _rows(g: d3.Side, p: d3.Side, matching: d3.Matching, tp_column: int, n: int,
          params: Params, suffix: str, rows: list[dict[str, Any]], aggregate: dict[str, Any],
          dataset: dict[str, Any]) -> None:
    """One band's rows (``suffix`` on every key) at the TP threshold's column, their means
    into ``aggregate`` and their pooled counts into ``dataset``."""
    keep = p.score >= params["conf_threshold"]
    hit = matching.matched[:, tp_column] & keep
    tp = np.bincount(p.sample[hit], minlength=n)
    n_pred = np.bincount(p.sample[keep], minlength=n)
    n_gt = np.bincount(g.sample, minlength=n)
    fp, fn = n_pred - tp, n_gt - tp
    taken = matching.gt[hit, tp_column]
    dist = center_distance(p.center[hit, :2], g.center[taken, :2])
    dist_sum = np.bincount(p.sample[hit], weights=dist, minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_error = np.where(tp > 0, dist_sum / np.maximum(tp, 1), np.nan)
    figures = prf_arrays(tp, fp, fn)
    columns = {"tp": tp.tolist(), "fp": fp.tolist(), "fn": fn.tolist(), "n_gt": n_gt.tolist(),
               "n_pred": n_pred.tolist(),
               "mean_center_error": [None if v != v else v for v in mean_error.tolist()],
               **{k: figures[k].tolist() for k in ("precision", "recall", "f1")}}
    for key in ROW_KEYS:
        for row, value in zip(rows, columns[key], strict=True):
            row[f"{key}{suffix}"] = value
    for key in ("precision", "recall", "f1"):
        aggregate[f"{key}{suffix}"] = mean_present(figures[key])
    aggregate[f"mean_center_error{suffix}"] = mean_present(mean_error)
    totals = [int(x.sum()) for x in (tp, fp, fn)]
    dataset[f"pooled{suffix}"] = {**prf(*totals), "tp": totals[0], "fp": totals[1],
                                  "fn": totals[2]}
