"""3D detection metrics over all samples at once: matching, AP, APH and TP errors under the
nuScenes devkit's or autoware-ml's conventions.

The flow (one call of :func:`score` per range window; steps 2 to 5 are
:mod:`rpx_cli.ops.detection3d_curves`):

1. **matching** (:func:`match`): per (sample, class) group, greedy by descending score —
   :func:`rpx_cli.ops.matching.greedy_match`, vectorised over every group and threshold at
   once. Each prediction takes the best untaken GT of its group that passes the test
   (``distance < th`` under nuScenes, ``<=`` under autoware-ml, ``IoU >= th`` under IoU
   matching); among GT at the same distance the first listed wins (the devkit's strict
   ``<`` while scanning, autoware-ml's ``argmin``). Score ties: the devkit sorts
   ``(score, index)`` pairs and reverses them, so the *later*-listed prediction comes
   first; autoware-ml's stable ``sort(reverse=True)`` keeps the *earlier* one first. The
   index is the prediction's place over all samples in stem order.
2. **curves** (per class and threshold, predictions of the class over all samples in that
   order): ``precision = cum TP / (cum TP + cum FP)``, ``recall = cum TP / n_gt``, read on
   101 recall points with ``numpy.interp(..., right=0)`` — raw (the devkit's
   ``accumulate``) or after the monotone envelope ``max(p[i:])`` (autoware-ml).
3. **AP** = ``mean(max(p[r > min_recall] − min_precision, 0)) / (1 − min_precision)`` over
   the points past ``round(100 min_recall)`` (the devkit's ``calc_ap``). **APH**: the same
   curve with every TP counted as its heading accuracy (``precision_h = Σ acc / (TP + FP)``
   at the same recall).
4. **TP errors** (ATE, ASE, AOE, AVE, AAE):

   - ``nuscenes`` (the devkit's ``accumulate`` + ``calc_tp``, at the TP threshold): the
     cumulative mean (NaN-aware; all NaN → 1) of each error over the matches, re-sampled on
     the 101-point confidence curve, averaged from the point past ``min_recall`` up to the
     last point with a non-zero confidence; 1 when that range is empty or the class has no
     GT or no match;
   - ``autoware`` (autoware-ml's ``select_recall_tp_errors``): per (class, threshold) curve
     the mean over the first ``floor(n_gt × (round(100 min_recall) + 1) / 100)`` matches in
     score order (NaN left out; 1 when every value is NaN); a curve that selects no match
     has no error. A missing velocity counts 1 and the attribute error is always 1, as
     autoware-ml reports them.

5. **curves** (:func:`nuscenes_curve`, :func:`autoware_curve`; ``dataset.curves``): per
   class and threshold, 101 points on the recall grid — ``precision`` (as the protocol
   reads it for AP), ``confidence`` (the score where each recall is reached) and the five
   TP errors as they vary with recall, under the devkit's names (``trans_err``,
   ``scale_err``, ``orient_err``, ``vel_err``, ``attr_err``):

   - ``nuscenes``: the devkit's ``DetectionMetricData`` from ``accumulate`` exactly (its
     ``no_predictions()`` — precision and confidence 0, errors 1 — for a class without GT
     or without a match);
   - ``autoware``: the envelope precision autoware-ml's AP reads, the confidence read as
     the devkit reads it, and at recall point ``i`` each error as autoware-ml's
     ``select_recall_tp_errors`` takes it for a recall target there: the mean over the
     first ``floor(n_gt × i / 100)`` matches (NaN left out; 1 when all are NaN); null where
     that selects no match or more matches than the curve has (past its highest recall).

Everything is float64; the per-class loops run over classes × thresholds (tens), each a
numpy pass over that class's predictions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from rpx_cli.ops.boxes3d import center_distance, heading_accuracy, scale_iou, velocity_l2, yaw_diff
from rpx_cli.ops.detection3d_curves import (
    ERRORS,
    Scoring,
    TPErrors,
    ap_defined,
    autoware_curve,
    curve_ap,
    mean_or_one,
    no_predictions,
    nuscenes_curve,
    nuscenes_tp_errors,
    selected_matches,
)
from rpx_cli.ops.matching import Rule, greedy_match

# --- inputs ----------------------------------------------------------------------------------


@dataclass
class Side:
    """The boxes of one side (GT or predictions) of every sample, flat, in sample order and
    input order within a sample. ``cls`` and ``attribute`` are global codes (-1: no
    attribute)."""

    sample: np.ndarray  # (N,) int64
    cls: np.ndarray  # (N,) int64
    center: np.ndarray  # (N, 3)
    size: np.ndarray  # (N, 3) w, l, h
    yaw: np.ndarray  # (N,)
    velocity: np.ndarray  # (N, 2), NaN unknown
    attribute: np.ndarray  # (N,) int64
    num_pts: np.ndarray  # (N,) int64
    distance: np.ndarray  # (N,)
    score: np.ndarray | None = None  # (N,) predictions

    def __len__(self) -> int:
        return int(self.sample.size)

    def take(self, index: np.ndarray) -> Side:
        return Side(self.sample[index], self.cls[index], self.center[index], self.size[index],
                    self.yaw[index], self.velocity[index], self.attribute[index],
                    self.num_pts[index], self.distance[index],
                    None if self.score is None else self.score[index])

    def where(self, keep: np.ndarray) -> Side:
        return self if keep.all() else self.take(np.flatnonzero(keep))


@dataclass
class Matching:
    """:func:`match`'s result, in the predictions' own order: ``matched`` (D, T) and the
    index of the GT taken (-1 when unmatched)."""

    matched: np.ndarray
    gt: np.ndarray


def match(gt: Side, pred: Side, n_classes: int, similarity: Callable[[np.ndarray, np.ndarray], np.ndarray],
          thresholds: Sequence[float], rule: Rule, *, later_first: bool) -> Matching:
    """Greedy matching in every (sample, class) group at every threshold at once.

    ``similarity(pred_index (n,), gt_index (n, width))`` gives the values of those pairs
    (distances or IoUs, by ``rule``); indices are into ``pred`` and ``gt``.
    """
    D = len(pred)
    group = pred.sample * n_classes + pred.cls
    position = np.arange(D)
    order = np.lexsort((-position if later_first else position, -pred.score, group))
    g_group = gt.sample * n_classes + gt.cls
    gorder = np.argsort(g_group, kind="stable")

    def values(dets: np.ndarray, slots: np.ndarray, crowd: np.ndarray) -> np.ndarray:
        return similarity(order[dets], gorder[slots])

    result = greedy_match(group[order], g_group[gorder], values, np.asarray(thresholds, np.float64),
                          rule, ties="first", return_gt=True)
    matched = np.empty_like(result.matched)
    matched[order] = result.matched
    taken = np.full_like(result.gt, -1)
    if gorder.size:
        taken[order] = np.where(result.gt >= 0, gorder[np.maximum(result.gt, 0)], -1)
    return Matching(matched, taken)


def distance_similarity(gt: Side, pred: Side) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """BEV centre distance of prediction and GT pairs (the devkit's ``center_distance``)."""
    def values(p: np.ndarray, g: np.ndarray) -> np.ndarray:
        return center_distance(pred.center[p, None, :2], gt.center[g, :2])
    return values


def iou_similarity(gt: Side, pred: Side, kind: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """BEV footprint IoU (``kind="bev-iou"``) or 3D IoU (``"iou3d"``) of the pairs."""
    from rpx_cli.ops.boxes3d import bev_iou, iou3d

    fn = bev_iou if kind == "bev-iou" else iou3d

    def values(p: np.ndarray, g: np.ndarray) -> np.ndarray:
        width = g.shape[1]
        pp = np.repeat(p, width)
        gg = g.ravel()
        return fn(pred.center[pp], pred.size[pp], pred.yaw[pp],
                  gt.center[gg], gt.size[gg], gt.yaw[gg]).reshape(g.shape)
    return values


# --- one view -------------------------------------------------------------------------------------


@dataclass
class ClassResult:
    n_gt: int
    n_pred: int
    ap: list[float | None]  # per threshold
    aph: list[float | None]
    errors: dict[str, float | None]  # at the TP threshold (per_class)
    # autoware: the errors of every (threshold) curve that selected matches
    curve_errors: list[dict[str, float | None]] = field(default_factory=list)
    # per threshold: the curves on the recall grid (nuscenes_curve / autoware_curve), when
    # asked for; None for a class left out (autoware: neither GT nor predictions)
    curves: list[dict[str, list[float | None]] | None] = field(default_factory=list)


def pair_errors(gt: Side, pred: Side, p: np.ndarray, g: np.ndarray, period: np.ndarray,
                style: TPErrors) -> dict[str, np.ndarray]:
    """The five TP errors of the matched pairs (``pred[p]``, ``gt[g]``), as ``style``
    measures them."""
    trans = center_distance(pred.center[p, :2], gt.center[g, :2])
    vel = velocity_l2(pred.velocity[p], gt.velocity[g])
    scale = 1.0 - scale_iou(gt.size[g], pred.size[p])
    orient = yaw_diff(gt.yaw[g], pred.yaw[p], period)
    if style is TPErrors.AUTOWARE:
        vel = np.where(np.isnan(vel), 1.0, vel)  # no velocity: error 1, as autoware-ml
        attr = np.ones(p.size)
    else:
        gt_attr = gt.attribute[g]
        attr = np.where(gt_attr < 0, np.nan, 1.0 - (gt_attr == pred.attribute[p]))
    return {"ATE": trans, "ASE": scale, "AOE": orient, "AVE": vel, "AAE": attr}


def score(gt: Side, pred: Side, matching: Matching, class_names: Sequence[str],
          thresholds: Sequence[float], tp_column: int, c: Scoring, *,
          curves: bool = False) -> list[ClassResult]:
    """Per class: AP and APH per threshold (``thresholds`` are the matching's first columns)
    and TP errors, scored as ``c`` says; with ``curves`` the curves per threshold too."""
    K = len(class_names)
    n_gt = np.bincount(gt.cls, minlength=K)
    D = len(pred)
    position = np.arange(D)
    order = np.lexsort((-position if c.later_first else position, -pred.score, pred.cls))
    bounds = np.searchsorted(pred.cls[order], np.arange(K + 1))
    matched = matching.matched[order]
    taken = matching.gt[order]
    ranked = order
    T = len(thresholds)
    out = []
    for k, name in enumerate(class_names):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        npos, npred = int(n_gt[k]), hi - lo
        if npos == 0 and npred == 0 and c.absent_null:
            out.append(ClassResult(0, 0, [None] * T, [None] * T, dict.fromkeys(ERRORS),
                                   curves=[None] * T if curves else []))
            continue
        period = np.pi if name in c.pi_period else 2 * np.pi
        exempt = c.exempt.get(name, ())
        aps, aphs, curve_errors, class_curves = [], [], [], []
        autoware = c.tp_errors is TPErrors.AUTOWARE
        # the reported thresholds, then the TP threshold's column when it is not one of them
        for t in range(max(T, tp_column + 1)):
            tp = matched[lo:hi, t]
            if npos == 0:  # predictions only: AP 0 under both protocols, no match to measure
                zero = 0.0 if ap_defined(c.min_recall) else None
                aps.append(zero)
                aphs.append(zero)
                curve_errors.append({})
                if curves and t < T:
                    class_curves.append(no_predictions(None if autoware else 1.0))
                continue
            if t < T:
                aps.append(curve_ap(tp, npos, c))
                p, g = ranked[lo:hi][tp], taken[lo:hi, t][tp]
                weights = np.zeros(npred)
                weights[tp] = heading_accuracy(gt.yaw[g], pred.yaw[p])
                aphs.append(curve_ap(tp, npos, c, weights))
                if curves:
                    build = autoware_curve if autoware else nuscenes_curve
                    class_curves.append(build(tp, pred.score[ranked[lo:hi]], npos, c,
                                              pair_errors(gt, pred, p, g, period, c.tp_errors)))
            if c.tp_errors is TPErrors.AUTOWARE:
                chosen = selected_matches(tp, npos, c.min_recall)
                if chosen.size:
                    at = ranked[lo:hi][chosen]
                    errs = pair_errors(gt, pred, at, taken[lo:hi, t][chosen], period, TPErrors.AUTOWARE)
                    curve_errors.append({e: None if e in exempt else mean_or_one(v)
                                         for e, v in errs.items()})
                else:
                    curve_errors.append({})
        errors: dict[str, float | None]
        if c.tp_errors is TPErrors.AUTOWARE:
            at_tp = curve_errors[tp_column]
            errors = dict(at_tp) if at_tp else dict.fromkeys(ERRORS)
            kept = [e for e in curve_errors[:T] if e]  # the means: reported thresholds only
        else:
            tp = matched[lo:hi, tp_column]
            p, g = ranked[lo:hi][tp], taken[lo:hi, tp_column][tp]
            errs = pair_errors(gt, pred, p, g, period, TPErrors.NUSCENES)
            errors = dict(nuscenes_tp_errors(tp, pred.score[ranked[lo:hi]], npos, errs, c.min_recall))
            kept = []
        for error in exempt:
            errors[error] = None
        out.append(ClassResult(npos, npred, aps[:T], aphs[:T], errors, kept, class_curves))
    return out


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """``numpy.mean`` of the defined values (the devkit's ``nanmean``); None when none is."""
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def summary(results: Sequence[ClassResult], c: Scoring) -> dict[str, float | None]:
    """mAP, mAPH, the mean TP errors and NDS over the classes' results."""
    class_ap = [mean_or_none(r.ap) for r in results]
    class_aph = [mean_or_none(r.aph) for r in results]
    out: dict[str, float | None] = {"mAP": mean_or_none(class_ap), "mAPH": mean_or_none(class_aph)}
    if c.tp_errors is TPErrors.AUTOWARE:
        curves = [e for r in results for e in r.curve_errors]
        means = {e: mean_or_none([curve[e] for curve in curves]) for e in ERRORS}
    else:
        means = {e: mean_or_none([r.errors[e] for r in results]) for e in ERRORS}
    for e in ERRORS:
        out[f"m{e}"] = means[e]
    if out["mAP"] is None:
        out["NDS"] = None
    else:
        # an undefined mean error scores 0, as the devkit's max(0.0, nan) does
        scores = [0.0 if means[e] is None else max(0.0, 1.0 - means[e]) for e in ERRORS]
        out["NDS"] = float(5 * out["mAP"] + np.sum(scores)) / 10.0
    return out
