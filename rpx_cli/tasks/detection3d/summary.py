"""The figures of ``rpx eval detection3d`` over all samples at once
(:mod:`rpx_cli.tasks.detection3d` has the task): the samples matched per band (the whole
range, then each ``--range``), per-class AP, APH and TP errors, the dataset's mAP, NDS, mAPH
and mean TP errors, and the rows with their means (``aggregate``) and pooled counts
(``dataset.pooled``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT
from rpx_cli.ops import detection3d as d3
from rpx_cli.ops.boxes3d import center_distance
from rpx_cli.ops.reduce import mean_present, prf, prf_arrays, worst_order
from rpx_cli.params.pictures import MAX_FRAME_BOXES
from rpx_cli.params.values import Band, banded
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection3d.params import ERRORS, Conventions
from rpx_cli.tasks.detection3d.samples import (
    SamplePair,
    base_filter,
    flatten,
    in_band,
    vocabulary,
)

ROW_KEYS = ("tp", "fp", "fn", "n_gt", "n_pred", "mean_center_error", "precision", "recall", "f1")


def column(thresholds: list[float], value: float) -> int:
    """The column of ``value`` among the match thresholds, appended when not there."""
    if value not in thresholds:
        thresholds.append(value)
    return thresholds.index(value)


def summarize_pairs(pairs: list[SamplePair], params: Params, bands: list[Band], wanted: set[str]):
    """``({"aggregate": ..., "dataset": ...}, rows)`` of all samples' box pairs (in stem
    order) over the whole range and each of ``bands``, with the ``--metrics`` families in
    ``wanted``."""
    n = len(pairs)
    c = Conventions.of(params)
    classes = params["class_names"] or vocabulary(pairs)
    gt, pred = flatten(pairs, classes)
    warnings = [] if len(gt) or not len(pred) else [
        f"no GT box in any of the {n} sample(s) while the predictions hold {len(pred)}: "
        f"{SWAP_HINT}"]
    gt, pred, filtered = base_filter(gt, pred, classes, params["class_range"], c)
    warnings += filtered
    warnings += band_warnings(gt, bands)
    thresholds = [t.value for t in c.thresholds]
    match_ths = list(thresholds)  # and the TP threshold's column when it is not one of them
    tp_column = column(match_ths, c.tp_threshold.value)
    dataset: dict[str, Any] = {"per_class": {name: {} for name in classes}}
    aggregate: dict[str, Any] = {"n_samples": n}
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for band in [None, *bands]:
        g, p = (gt, pred) if band is None else (in_band(gt, band), in_band(pred, band))
        similarity = d3.distance_similarity(g, p) if c.by_distance else \
            d3.iou_similarity(g, p, c.match)
        matching = d3.match(g, p, len(classes), similarity, match_ths, c.match_rule,
                            later_first=c.scoring.later_first)
        if "rows" in wanted:
            _rows(g, p, matching, tp_column, n, params["conf_threshold"], band, rows, aggregate,
                  dataset)
        if band is None and params.get("keep_worst"):
            frames = worst_frames(g, p, matching, tp_column, n, params, classes, c)
        dataset[banded("n_gt", band)] = len(g)
        dataset[banded("n_pred", band)] = len(p)
        results = d3.score(g, p, matching, classes, thresholds, tp_column, c.scoring,
                           curves="curves" in wanted) \
            if wanted & {"ap", "tp", "aph", "curves"} else None
        for k, name in enumerate(classes):
            entry = dataset["per_class"][name]
            entry[banded("n_gt", band)] = int(np.count_nonzero(g.cls == k))
            entry[banded("n_pred", band)] = int(np.count_nonzero(p.cls == k))
            if results is None:
                continue
            r = results[k]
            if "ap" in wanted:
                entry[banded("AP", band)] = d3.mean_or_none(r.ap)
                for t, value in zip(c.thresholds, r.ap, strict=True):
                    entry[banded(t.key("AP"), band)] = value
            if "aph" in wanted:
                entry[banded("APH", band)] = d3.mean_or_none(r.aph)
                for t, value in zip(c.thresholds, r.aph, strict=True):
                    entry[banded(t.key("APH"), band)] = value
            if "tp" in wanted:
                for e in ERRORS:
                    entry[banded(e, band)] = r.errors[e]
        if results is not None and "curves" in wanted:
            dataset[banded("curves", band)] = {
                name: {t.token: curve for t, curve in zip(c.thresholds, r.curves, strict=True)}
                for name, r in zip(classes, results, strict=True)}
        if results is not None and wanted & {"ap", "tp", "aph"}:
            figures = d3.summary(results, c.scoring)
            keys = (["mAP", "NDS"] if "ap" in wanted else []) + \
                (["mAPH"] if "aph" in wanted else []) + \
                ([f"m{e}" for e in ERRORS] if "tp" in wanted else [])
            for key in keys:
                dataset[banded(key, band)] = figures[key]
    dataset["classes"] = list(classes)
    if "rows" in wanted and len(pred) and not np.any(pred.score >= params["conf_threshold"]):
        warnings.append(f"--conf-threshold {params['conf_threshold']:g} removed every prediction "
                        f"from the rows ({len(pred)} before, 0 after): every row's tp is 0")
    sections: dict[str, Any] = {"aggregate": aggregate, "dataset": dataset}
    if warnings:
        sections["warnings"] = warnings
    if params.get("keep_worst"):
        sections["worst_frames"] = frames
    return sections, rows


def worst_frames(g: d3.Side, p: d3.Side, matching: d3.Matching, tp_column: int, n: int,
                 params: Params, classes: list[str], c: Conventions) -> dict[str, Any]:
    """The ``--keep-worst`` samples worst by their row's F1 (at the TP threshold and the
    confidence threshold, as the rows), each with its evaluated boxes for the page's
    bird's-eye view: footprints ``[x, y, w, l, yaw]`` (m, rad), labels, scores, and whether
    each matched at the TP threshold (the whole range's matching). At most
    ``MAX_FRAME_BOXES`` boxes a side (the highest-scored predictions)."""
    keep = p.score >= params["conf_threshold"]
    hit = matching.matched[:, tp_column] & keep
    tp = np.bincount(p.sample[hit], minlength=n)
    fp = np.bincount(p.sample[keep], minlength=n) - tp
    fn = np.bincount(g.sample, minlength=n) - tp
    f1 = prf_arrays(tp, fp, fn)["f1"]
    gt_hit = np.zeros(len(g), bool)
    gt_hit[matching.gt[hit, tp_column]] = True
    frames = []
    for index in worst_order(f1, "higher")[:params["keep_worst"]].tolist():
        gi = np.flatnonzero(g.sample == index)[:MAX_FRAME_BOXES]
        pi = np.flatnonzero(p.sample == index)
        pi = pi[np.argsort(-p.score[pi], kind="stable")][:MAX_FRAME_BOXES]
        frames.append({"index": index, "value": float(f1[index]),
                       "gt": _footprints(g, gi, classes) | {"matched": gt_hit[gi].tolist()},
                       "pred": _footprints(p, pi, classes) | {
                           "score": p.score[pi].tolist(), "matched": hit[pi].tolist()}})
    return {"metric": "f1", "direction": "higher", "ranked": n,
            "match": c.tp_threshold.label, "conf_threshold": params["conf_threshold"],
            "frames": frames}


def _footprints(side: d3.Side, index: np.ndarray, classes: list[str]) -> dict[str, Any]:
    boxes = np.column_stack([side.center[index, :2], side.size[index, :2], side.yaw[index]])
    return {"label": [classes[k] for k in side.cls[index].tolist()], "box": boxes.tolist()}


def band_warnings(gt: d3.Side, bands: list[Band]) -> list[str]:
    """A ``--range`` band that holds none of the run's GT boxes: its figures are 0 or null."""
    empty = [band for band in bands if not len(in_band(gt, band))]
    if not len(gt) or not empty:
        return []
    return [f"--range {band.label} holds no GT box (of the {len(gt)} the other filters keep): "
            "its figures are 0 or null" for band in empty]


def _rows(g: d3.Side, p: d3.Side, matching: d3.Matching, tp_column: int, n: int,
          conf_threshold: float, band: Band | None, rows: list[dict[str, Any]],
          aggregate: dict[str, Any], dataset: dict[str, Any]) -> None:
    """One band's rows (every key :func:`banded`) at the TP threshold's column, their means
    into ``aggregate`` and their pooled counts into ``dataset``."""
    keep = p.score >= conf_threshold
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
            row[banded(key, band)] = value
    for key in ("precision", "recall", "f1"):
        aggregate[banded(key, band)] = mean_present(figures[key])
    aggregate[banded("mean_center_error", band)] = mean_present(mean_error)
    totals = [int(x.sum()) for x in (tp, fp, fn)]
    dataset[banded("pooled", band)] = {**prf(*totals), "tp": totals[0], "fp": totals[1],
                                  "fn": totals[2]}
