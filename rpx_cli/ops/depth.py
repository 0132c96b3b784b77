"""Monocular depth error metrics from sufficient statistics.

For valid pixels (GT finite, > 0, inside the caps) with prediction p (clipped below at
1e-6) and ground truth g, and d = ln p − ln g:

=========  ======================================  =====================================
absrel     mean(|p − g| / g)                        lower is better
sqrel      mean((p − g)² / g)                       Eigen et al. convention (not / g²)
rmse       sqrt(mean((p − g)²))                     metres
rmse_log   sqrt(mean(d²))
log10      mean(|log10 p − log10 g|) = mean(|d|) / ln 10
silog      sqrt(mean(d²) − mean(d)²)                unscaled (no ×100, λ = 1)
delta_k    mean(max(p/g, g/p) < 1.25^k), k = 1..3   strict "<"
=========  ======================================  =====================================

Every metric is a function of a few sums over pixels (:class:`DepthSums`), so a frame's
row, a depth band and the dataset (all frames' pixels pooled) are the same computation on
different sums. silog uses the centred second moment of d (Chan et al. pairwise
combination), not ``Σd² − (Σd)²/n``, so a constant log-ratio gives exactly 0.

Per-pixel terms are float64 (``np.dot`` reductions): they agree with a plain float64
implementation to ~1e-12, and the delta comparisons use the reference's own expression
``max(p/g, g/p) < T`` so a pixel on a threshold is never counted differently.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from rpx_cli.errors import InputError

METRICS = ("absrel", "sqrel", "rmse", "rmse_log", "log10", "silog", "delta1", "delta2", "delta3")
PRED_FLOOR = 1e-6
DELTA_THRESHOLDS = (1.25, 1.25**2, 1.25**3)
_LN10 = math.log(10.0)


@dataclass(frozen=True)
class DepthSums:
    """Sufficient statistics of one set of pixels."""

    n: int = 0
    abs_rel: float = 0.0  # Σ |p − g| / g
    sq_rel: float = 0.0  # Σ (p − g)² / g
    sq_err: float = 0.0  # Σ (p − g)²
    log_sum: float = 0.0  # Σ d
    log_m2: float = 0.0  # Σ (d − mean d)²
    abs_log: float = 0.0  # Σ |d|
    delta1: int = 0
    delta2: int = 0
    delta3: int = 0

    def as_dict(self) -> dict[str, float | int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def combine(parts: Sequence[DepthSums]) -> DepthSums:
    """Pool pixel sets: exact for counts, ``math.fsum`` for sums (order-independent), and the
    pairwise formula for the centred moment: M2 = Σ M2_i + Σ n_i (mean_i − mean)²."""
    parts = [part for part in parts if part.n]
    if not parts:
        return DepthSums()
    n = sum(part.n for part in parts)
    log_sum = math.fsum(part.log_sum for part in parts)
    mean = log_sum / n
    m2 = math.fsum(
        [part.log_m2 for part in parts] + [part.n * (part.log_sum / part.n - mean) ** 2 for part in parts]
    )
    return DepthSums(
        n=n,
        abs_rel=math.fsum(part.abs_rel for part in parts),
        sq_rel=math.fsum(part.sq_rel for part in parts),
        sq_err=math.fsum(part.sq_err for part in parts),
        log_sum=log_sum,
        log_m2=m2,
        abs_log=math.fsum(part.abs_log for part in parts),
        delta1=sum(part.delta1 for part in parts),
        delta2=sum(part.delta2 for part in parts),
        delta3=sum(part.delta3 for part in parts),
    )


def finalize(sums: DepthSums) -> dict[str, float | None]:
    """The metrics of a pixel set; every metric is None when it has no pixel."""
    n = sums.n
    if n == 0:
        return dict.fromkeys(METRICS)
    return {
        "absrel": sums.abs_rel / n,
        "sqrel": sums.sq_rel / n,
        "rmse": math.sqrt(sums.sq_err / n),
        "rmse_log": math.sqrt((sums.log_m2 + sums.log_sum * sums.log_sum / n) / n),
        "log10": sums.abs_log / n / _LN10,
        "silog": math.sqrt(max(sums.log_m2 / n, 0.0)),
        "delta1": sums.delta1 / n,
        "delta2": sums.delta2 / n,
        "delta3": sums.delta3 / n,
    }


class PixelTerms:
    """Per-pixel terms of one frame's valid pixels, reduced over any subset (a depth band).

    ``pred`` and ``gt`` are 1-D float64 arrays of the valid pixels; ``pred`` already clipped.
    """

    def __init__(self, pred: np.ndarray, gt: np.ndarray) -> None:
        diff = pred - gt
        rel = diff / gt
        ratio = pred / gt
        log_ratio = np.log(ratio)
        worst = np.maximum(ratio, gt / pred)  # the reference's max(p/g, g/p), bit for bit
        self.n = pred.size
        self.gt = gt
        self.abs_rel = np.abs(rel)
        self.sq_rel = diff * rel
        self.sq_err = diff * diff
        self.log_ratio = log_ratio
        self.abs_log = np.abs(log_ratio)
        self.within = [worst < threshold for threshold in DELTA_THRESHOLDS]

    def sums(self, weight: np.ndarray | None = None) -> DepthSums:
        """Sums over all pixels (``weight`` None) or over those where ``weight`` is 1."""
        if weight is None:
            n = self.n
            if n == 0:
                return DepthSums()
            log_sum = float(self.log_ratio.sum())
            centred = self.log_ratio - log_sum / n
            return DepthSums(
                n=n,
                abs_rel=float(self.abs_rel.sum()),
                sq_rel=float(self.sq_rel.sum()),
                sq_err=float(self.sq_err.sum()),
                log_sum=log_sum,
                log_m2=float(np.dot(centred, centred)),
                abs_log=float(self.abs_log.sum()),
                delta1=int(np.count_nonzero(self.within[0])),
                delta2=int(np.count_nonzero(self.within[1])),
                delta3=int(np.count_nonzero(self.within[2])),
            )
        mask = weight.astype(bool)
        n = int(np.count_nonzero(mask))
        if n == 0:
            return DepthSums()
        log_sum = float(np.dot(self.log_ratio, weight))
        centred = (self.log_ratio - log_sum / n) * weight
        return DepthSums(
            n=n,
            abs_rel=float(np.dot(self.abs_rel, weight)),
            sq_rel=float(np.dot(self.sq_rel, weight)),
            sq_err=float(np.dot(self.sq_err, weight)),
            log_sum=log_sum,
            log_m2=float(np.dot(centred, centred)),
            abs_log=float(np.dot(self.abs_log, weight)),
            delta1=int(np.count_nonzero(self.within[0] & mask)),
            delta2=int(np.count_nonzero(self.within[1] & mask)),
            delta3=int(np.count_nonzero(self.within[2] & mask)),
        )


# --- depth bands --------------------------------------------------------------------------


def band_suffix(low: float, high: float | None) -> str:
    """autoware-ml style: ``0p3m_1m``, ``2p5m_inf``, ``minus1m_0m``."""

    def name(value: float) -> str:
        return f"{value:g}".replace("-", "minus").replace(".", "p") + "m"

    return f"{name(low)}_{'inf' if high is None else name(high)}"


def band_weight(gt: np.ndarray, low: float, high: float | None) -> np.ndarray:
    """1.0 where ``low <= g < high`` (min inclusive, max exclusive), else 0.0."""
    inside = gt >= low
    if high is not None:
        inside &= gt < high
    return inside.astype(np.float64)


# --- alignment (relative-depth models) ----------------------------------------------------


def align(pred: np.ndarray, gt: np.ndarray, method: str) -> tuple[np.ndarray, float | None,
                                                                  float | None]:
    """Fit the prediction to GT on the valid pixels; returns (aligned, scale, shift).

    - ``median``: ``p · median(g) / median(p)`` (shift None);
    - ``ls_affine``: least squares of ``s·p + t`` onto g;
    - ``ls_disparity``: least squares of ``s/p + t`` onto ``1/g``, mapped back to depth
      ``1 / max(s/p + t, 1e-6)`` (a non-positive fitted disparity would be a depth at or
      beyond infinity). ``1/p`` uses ``max(p, 1e-6)``.

    A degenerate fit (a constant prediction) keeps scale 0 and the mean as shift.
    """
    if method == "none" or pred.size == 0:
        return pred, None, None
    if method == "median":
        median_pred = float(np.median(pred))
        if not median_pred > 0:
            raise InputError(f"median alignment needs a positive median prediction, got {median_pred:g}")
        scale = float(np.median(gt)) / median_pred
        return pred * scale, scale, None
    if method == "ls_affine":
        scale, shift = _least_squares(pred, gt)
        return pred * scale + shift, scale, shift
    if method == "ls_disparity":
        disparity = 1.0 / np.maximum(pred, PRED_FLOOR)
        scale, shift = _least_squares(disparity, 1.0 / gt)
        fitted = np.maximum(disparity * scale + shift, PRED_FLOOR)
        return 1.0 / fitted, scale, shift
    raise ValueError(f"unknown alignment {method!r}")


def _least_squares(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Minimise Σ (s·x + t − y)², centred for accuracy."""
    x_mean, y_mean = float(x.mean()), float(y.mean())
    xc = x - x_mean
    var = float(np.dot(xc, xc))
    if var == 0.0:
        return 0.0, y_mean
    scale = float(np.dot(xc, y - y_mean)) / var
    return scale, y_mean - scale * x_mean


def pooled(rows_sums: Iterable[DepthSums]) -> dict[str, float | None]:
    return finalize(combine(list(rows_sums)))
