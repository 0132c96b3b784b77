"""3D detection curves: precision on the 101-point recall grid, AP, the TP errors (the
nuScenes devkit's ``accumulate``/``calc_ap``/``calc_tp`` and autoware-ml's
``select_recall_tp_errors``), and the curves ``dataset.curves`` reports. The conventions
are described in :mod:`rpx_cli.ops.detection3d` (steps 2 to 5 of its flow)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

RECALL_GRID = np.linspace(0.0, 1.0, 101)
ERRORS = ("ATE", "ASE", "AOE", "AVE", "AAE")
# the devkit's DetectionMetricData names of the errors (the keys of a curve)
CURVE_ERRORS = {"ATE": "trans_err", "ASE": "scale_err", "AOE": "orient_err", "AVE": "vel_err",
                "AAE": "attr_err"}


class TPErrors(Enum):
    """How TP errors are taken (``--tp-errors``; the value is the flag's spelling)."""

    NUSCENES = "nuscenes"  # the devkit's accumulate + calc_tp at the TP threshold
    AUTOWARE = "autoware"  # autoware-ml's select_recall_tp_errors, per (class, threshold) curve


@dataclass(frozen=True)
class Scoring:
    """How curves, AP and TP errors are scored: the part of a protocol's conventions
    :func:`score` and :func:`summary` need (the task reads the whole protocol into its
    ``Conventions``, which holds one of these; see ``docs/detection3d.md``)."""

    later_first: bool  # score ties: the later-listed prediction ranks first (nuScenes)
    envelope: bool  # monotone precision envelope before the 101 points (autoware-ml)
    absent_null: bool  # a class with neither GT nor predictions is null (autoware-ml), else 0
    tp_errors: TPErrors
    pi_period: frozenset[str] = frozenset()  # classes whose AOE period is π (nuScenes: barrier)
    exempt: dict[str, tuple[str, ...]] = field(default_factory=dict)  # class -> undefined errors
    min_recall: float = 0.1
    min_precision: float = 0.1



def ap_defined(min_recall: float) -> bool:
    """Whether a recall point lies past ``min_recall`` on the 101-point grid: from 0.995 on
    (``round(100 min_recall) + 1 > 100``) the devkit's ``calc_ap`` averages an empty slice,
    NaN — AP is then undefined (None), as are mAP and NDS, while TP errors are 1.0 (its
    ``calc_tp``)."""
    return round(100 * min_recall) + 1 <= 100


def unit(value: float) -> float:
    """A ratio clamped to [0, 1]: float64 rounding of a perfect curve's AP — (1 − 0.1) /
    (1 − 0.1) summed over 90 points — gives 1.0000000000000004, which a gate ``mAP<=1``
    would fail; a ratio never leaves [0, 1]."""
    return min(max(value, 0.0), 1.0)


def calc_ap(precision: np.ndarray, min_recall: float, min_precision: float) -> float | None:
    """The devkit's ``calc_ap`` on a 101-point precision curve (None where it is NaN: no
    recall point past ``min_recall``), clamped to [0, 1] (:func:`unit`)."""
    if not ap_defined(min_recall):
        return None
    prec = np.copy(precision)[round(100 * min_recall) + 1:]
    prec -= min_precision
    prec[prec < 0] = 0
    return unit(float(np.mean(prec)) / (1.0 - min_precision))


def precision_curve(tp: np.ndarray, npos: int, c: Scoring,
                    weights: np.ndarray | None = None) -> np.ndarray | None:
    """The 101-point precision curve AP reads, from the TP flags of one class at one
    threshold in rank order (``tp`` bool, every prediction of the class); with ``weights``
    (the heading accuracy of each TP) the heading-weighted one. None without a TP (AP 0:
    the devkit's ``no_predictions()``, autoware-ml's all-zero precision). ``npos`` > 0."""
    if tp.size == 0 or not tp.any():
        return None
    cum_tp = np.cumsum(tp).astype(float)
    cum_fp = np.cumsum(~tp).astype(float)
    numerator = cum_tp if weights is None else np.cumsum(np.where(tp, weights, 0.0))
    precision = np.clip(numerator / (cum_fp + cum_tp), 0.0, 1.0)  # summed heading weights
    recall = cum_tp / float(npos)
    if c.envelope:
        precision = np.maximum.accumulate(precision[::-1])[::-1]
    return np.interp(RECALL_GRID, recall, precision, right=0)


def curve_ap(tp: np.ndarray, npos: int, c: Scoring,
             weights: np.ndarray | None = None) -> float | None:
    """AP (with ``weights``: APH) of one class at one threshold (:func:`precision_curve`);
    None (the devkit's NaN) when no recall point lies past ``min_recall``."""
    if not ap_defined(c.min_recall):
        return None
    precision = precision_curve(tp, npos, c, weights)
    return 0.0 if precision is None else calc_ap(precision, c.min_recall, c.min_precision)


def cummean(x: np.ndarray) -> np.ndarray:
    """The devkit's ``cummean``: the running mean ignoring NaN; all NaN → ones."""
    if np.isnan(x).sum() == len(x):
        return np.ones(len(x))
    sum_vals = np.nancumsum(x.astype(float))
    count_vals = np.cumsum(~np.isnan(x))
    return np.divide(sum_vals, count_vals, out=np.zeros_like(sum_vals), where=count_vals != 0)


def nuscenes_tp_errors(tp: np.ndarray, scores: np.ndarray, npos: int, errors: dict[str, np.ndarray],
                       min_recall: float) -> dict[str, float]:
    """The devkit's ``accumulate`` (TP-error part) and ``calc_tp`` for one class at the TP
    threshold. ``tp``/``scores``: every prediction of the class in rank order; ``errors``:
    each error per match, in that order."""
    if npos == 0 or not tp.any():
        return dict.fromkeys(errors, 1.0)
    cum_tp = np.cumsum(tp).astype(float)
    recall = cum_tp / float(npos)
    conf = np.interp(RECALL_GRID, recall, scores, right=0)
    match_conf = scores[tp]
    nonzero = np.nonzero(conf)[0]
    last = nonzero[-1] if len(nonzero) else 0
    first = round(100 * min_recall) + 1
    out = {}
    for name, values in errors.items():
        curve = np.interp(conf[::-1], match_conf[::-1], cummean(values)[::-1])[::-1]
        out[name] = 1.0 if last < first else float(np.mean(curve[first:last + 1]))
    return out


def confidence_curve(tp: np.ndarray, scores: np.ndarray, npos: int) -> np.ndarray:
    """The devkit's confidence curve: the score where each of the 101 recall points is
    reached (``np.interp(..., right=0)``), from the TP flags and scores in rank order."""
    recall = np.cumsum(tp).astype(float) / float(npos)
    return np.interp(RECALL_GRID, recall, scores, right=0)


def _listed(values: np.ndarray) -> list[float | None]:
    return [None if v != v else v for v in values.tolist()]


def no_predictions(error: float | None = 1.0) -> dict[str, list[float | None]]:
    """The devkit's ``DetectionMetricData.no_predictions()`` (errors ``error``: 1 as the
    devkit has them, None for autoware-ml's curves, which have no error to measure)."""
    zeros = [0.0] * RECALL_GRID.size
    return {"recall": RECALL_GRID.tolist(), "precision": zeros, "confidence": list(zeros),
            **{name: [error] * RECALL_GRID.size for name in CURVE_ERRORS.values()}}


def nuscenes_curve(tp: np.ndarray, scores: np.ndarray, npos: int, c: Scoring,
                   errors: dict[str, np.ndarray]) -> dict[str, list[float | None]]:
    """The devkit's ``accumulate`` output (``DetectionMetricData``) of one class at one
    threshold: ``tp``/``scores`` of every prediction of the class in rank order, ``errors``
    each TP error per match in that order (:func:`pair_errors`, nuScenes style)."""
    precision = precision_curve(tp, npos, c) if npos else None
    if precision is None:
        return no_predictions()
    conf = confidence_curve(tp, scores, npos)
    match_conf = scores[tp]
    out = {"recall": RECALL_GRID.tolist(), "precision": _listed(precision),
           "confidence": _listed(conf)}
    for error, name in CURVE_ERRORS.items():
        resampled = np.interp(conf[::-1], match_conf[::-1], cummean(errors[error])[::-1])[::-1]
        out[name] = _listed(resampled)
    return out


def autoware_curve(tp: np.ndarray, scores: np.ndarray, npos: int, c: Scoring,
                   errors: dict[str, np.ndarray]) -> dict[str, list[float | None]]:
    """autoware-ml's view of one class at one threshold on the recall grid (see the module
    docstring): ``errors`` each TP error per match in rank order (autoware-ml style)."""
    precision = precision_curve(tp, npos, c) if npos else None
    if precision is None:
        return no_predictions(None)
    out = {"recall": RECALL_GRID.tolist(), "precision": _listed(precision),
           "confidence": _listed(confidence_curve(tp, scores, npos))}
    n_match = int(np.count_nonzero(tp))
    # matches selected at recall point i: floor(npos × i / 100), as select_recall_tp_errors
    # computes it for a recall target whose (round(100 r) + 1) / 100 is i / 100
    take = np.floor(npos * (np.arange(RECALL_GRID.size) / 100.0)).astype(np.int64)
    defined = (take >= 1) & (take <= n_match)
    at = np.clip(take - 1, 0, max(n_match - 1, 0))
    for error, name in CURVE_ERRORS.items():
        values = errors[error]
        valid = ~np.isnan(values)
        counts = np.cumsum(valid)
        sums = np.cumsum(np.where(valid, values, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            means = np.where(counts > 0, sums / np.maximum(counts, 1), 1.0)
        out[name] = [None if not ok else v for ok, v in zip(defined.tolist(), means[at].tolist(),
                                                            strict=True)]
    return out


def selected_matches(tp: np.ndarray, npos: int, min_recall: float) -> np.ndarray:
    """autoware-ml's ``select_recall_tp_errors``: positions (in rank order) of the first
    ``floor(npos × (round(100 min_recall) + 1) / 100)`` true positives."""
    effective = (round(100 * min_recall) + 1) / 100.0
    return np.flatnonzero(tp)[:int(np.floor(npos * effective))]


def mean_or_one(values: np.ndarray) -> float:
    valid = values[~np.isnan(values)]
    return float(np.mean(valid)) if valid.size else 1.0
