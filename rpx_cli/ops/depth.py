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

Per-pixel terms are float64, or float32 when that holds the inputs exactly (see
:class:`PixelTerms`); sums are accumulated in float64. Either way the metrics agree with a
plain float64 implementation to ~1e-7 or better, and delta counts are exact: the
comparison is the reference's own expression ``max(p/g, g/p) < T``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from rpx_cli.errors import InputError

METRICS = ("absrel", "sqrel", "rmse", "rmse_log", "log10", "silog", "delta1", "delta2", "delta3")
PRED_FLOOR = 1e-6
DELTA_THRESHOLDS = (1.25, 1.25**2, 1.25**3)
_LN10 = math.log(10.0)


@dataclass(frozen=True, slots=True)
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

    def __post_init__(self) -> None:  # counts may arrive as floats from a stats matrix
        for name in ("n", "delta1", "delta2", "delta3"):
            object.__setattr__(self, name, int(getattr(self, name)))

    def as_tuple(self) -> tuple[float, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)


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


def _total(values: np.ndarray) -> float:
    """Σ values accumulated in float64.

    float32 input is summed in blocks of 1024 (numpy's pairwise float32 reduction, error
    ~1e-8 relative) and the block sums in float64: as fast as a plain float32 sum and
    within ~1e-8 of an exact float64 sum. float64 input: numpy's pairwise sum.
    """
    if values.dtype != np.float32:
        return float(values.sum())
    whole = values.size // 1024 * 1024
    total = float(values[whole:].sum(dtype=np.float64))
    if whole:
        total += float(values[:whole].reshape(-1, 1024).sum(axis=1).sum(dtype=np.float64))
    return total


class PixelTerms:
    """Per-pixel terms of one frame, reduced over its valid pixels or a subset (a band).

    ``pred`` and ``gt`` are 1-D, both float64 or both float32, ``pred`` already clipped.
    Invalid pixels must hold ``pred == gt == 1`` ("neutral": every term is exactly 0 and
    the ratio exactly 1) and be False in ``valid``; ``valid`` None means every pixel is
    valid. Neutralising with ``np.where`` is ~4x cheaper than compressing the valid pixels
    out when holes come in regions, as sensor dropouts do.

    Use float32 only when it holds the prediction exactly (a float32 or float16 source) and
    the GT exactly or to one rounding (integer millimetres / scale, with ``gt_exact``):
    every term then has a relative error of a few float32 ulps and the metrics agree with
    float64 to ~1e-7 for realistic errors, at half the memory traffic.
    - log terms use ``log1p((p − g)/g)`` (accurate when p ≈ g), and ``log(p/g)`` where
      p < g/2 (where log1p's argument would be near −1);
    - deltas are decided in float32 unless a pixel lies within 4e-7 (relative) of a
      threshold, where the reference expression is re-evaluated in float64: exact counts.
    """

    _AMBIGUOUS = 4e-7

    def __init__(self, pred: np.ndarray, gt: np.ndarray, valid: np.ndarray | None = None, *,
                 gt_exact: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        """``gt_exact(index)``: the float64 GT at flat ``index`` when float32 ``gt`` is a
        rounded copy (integer millimetres / scale); ``pred`` must be exact in float32."""
        if pred.dtype != gt.dtype or pred.dtype not in (np.float32, np.float64):
            raise TypeError("pred and gt must both be float32 or both float64")
        self.pred, self.gt, self.valid = pred, gt, valid
        self.gt_exact = gt_exact or (lambda index: gt[index].astype(np.float64))
        self.n = pred.size if valid is None else int(np.count_nonzero(valid))
        diff = pred - gt
        rel = diff / gt
        ratio = pred / gt
        if pred.dtype == np.float32:
            with np.errstate(divide="ignore"):  # rel = -1 where p << g: replaced just below
                log_ratio = np.log1p(rel)
            far = ratio < np.float32(0.5)
            if far.any():
                log_ratio[far] = np.log(ratio[far])
        else:
            log_ratio = np.log(ratio)
        self.worst = np.maximum(ratio, gt / pred)  # max(p/g, g/p), the reference's expression
        self.sq_err = diff * diff
        self.sq_rel = np.multiply(diff, rel, out=diff)
        self.abs_rel = np.abs(rel, out=rel)
        self.log_ratio = log_ratio
        self.abs_log = np.abs(log_ratio)

    def _count_within(self, threshold: float, mask: np.ndarray | None) -> int:
        """Pixels of ``mask`` (all valid ones when None) with max(p/g, g/p) < threshold."""
        worst = self.worst

        def below(limit: float) -> int:
            hit = worst < worst.dtype.type(limit)
            return int(np.count_nonzero(hit if mask is None else hit & mask))

        neutral = 0 if mask is not None or self.valid is None else self.worst.size - self.n
        if worst.dtype == np.float64:
            return below(threshold) - neutral
        low, high = below(threshold * (1 - self._AMBIGUOUS)), below(threshold * (1 + self._AMBIGUOUS))
        if low == high:  # no pixel near the threshold: float32 decided every one exactly
            return low - neutral
        near = (worst >= np.float32(threshold * (1 - self._AMBIGUOUS))) & (
            worst < np.float32(threshold * (1 + self._AMBIGUOUS)))
        if mask is not None:
            near &= mask
        index = np.flatnonzero(near)
        p = self.pred[index].astype(np.float64)
        g = self.gt_exact(index)
        return low + int(np.count_nonzero(np.maximum(p / g, g / p) < threshold)) - neutral

    def sums(self, band: np.ndarray | None = None) -> DepthSums:
        """Sums over the valid pixels, or over the valid pixels where ``band`` is True."""
        mask = self.valid if band is None else (band if self.valid is None else band & self.valid)
        n = self.n if band is None else int(np.count_nonzero(mask))
        if n == 0:
            return DepthSums()
        if band is None:  # neutral pixels add exactly 0 to every plain sum
            pick = lambda values: values  # noqa: E731
        else:
            weight = band.astype(self.gt.dtype)
            pick = lambda values: values * weight  # noqa: E731
        log_sum = _total(pick(self.log_ratio))
        centred = self.log_ratio - self.log_ratio.dtype.type(log_sum / n)
        if mask is not None:
            centred *= mask
        return DepthSums(
            n=n,
            abs_rel=_total(pick(self.abs_rel)),
            sq_rel=_total(pick(self.sq_rel)),
            sq_err=_total(pick(self.sq_err)),
            log_sum=log_sum,
            log_m2=_total(centred * centred),
            abs_log=_total(pick(self.abs_log)),
            delta1=self._count_within(DELTA_THRESHOLDS[0], mask),
            delta2=self._count_within(DELTA_THRESHOLDS[1], mask),
            delta3=self._count_within(DELTA_THRESHOLDS[2], mask),
        )


# --- depth bands --------------------------------------------------------------------------


def band_suffix(low: float, high: float | None) -> str:
    """autoware-ml style: ``0p3m_1m``, ``2p5m_inf``, ``minus1m_0m``."""

    def name(value: float) -> str:
        return f"{value:g}".replace("-", "minus").replace(".", "p") + "m"

    return f"{name(low)}_{'inf' if high is None else name(high)}"


def band_mask(gt: np.ndarray, low: float, high: float | None) -> np.ndarray:
    """True where ``low <= g < high`` (min inclusive, max exclusive); compared in float64 so
    the edges are exact for float32 depth too."""
    inside = np.greater_equal(gt, np.float64(low))
    if high is not None:
        inside &= np.less(gt, np.float64(high))
    return inside


# --- alignment (relative-depth models) ----------------------------------------------------


def align(pred: np.ndarray, gt: np.ndarray, method: str) -> tuple[np.ndarray, float | None,
                                                                  float | None]:
    """Fit the prediction to GT (the valid pixels given) and apply the fit: returns
    ``(aligned, scale, shift)``.

    - ``median``: ``p · median(g) / median(p)`` (shift None);
    - ``ls_affine``: least squares of ``s·p + t`` onto g;
    - ``ls_disparity``: least squares of ``s/p + t`` onto ``1/g``, mapped back to depth
      ``1 / max(s/p + t, 1e-6)`` (a non-positive fitted disparity would be a depth at or
      beyond infinity). ``1/p`` uses ``max(p, 1e-6)``.

    A degenerate fit (a constant prediction) keeps scale 0 and the mean as shift.
    """
    if method == "none" or pred.size == 0:
        return pred, None, None
    scale, shift = fit_alignment(pred, gt, method)
    return apply_alignment(pred, method, scale, shift), scale, shift


def fit_alignment(pred: np.ndarray, gt: np.ndarray, method: str) -> tuple[float, float | None]:
    if method == "median":
        median_pred = float(np.median(pred))
        if not median_pred > 0:
            raise InputError(f"median alignment needs a positive median prediction, got {median_pred:g}")
        return float(np.median(gt)) / median_pred, None
    if method == "ls_affine":
        return _least_squares(pred, gt)
    if method == "ls_disparity":
        return _least_squares(1.0 / np.maximum(pred, PRED_FLOOR), 1.0 / gt)
    raise ValueError(f"unknown alignment {method!r}")


def apply_alignment(pred: np.ndarray, method: str, scale: float, shift: float | None) -> np.ndarray:
    if method == "median":
        return pred * scale
    if method == "ls_affine":
        return pred * scale + shift
    if method == "ls_disparity":
        return 1.0 / np.maximum(scale / np.maximum(pred, PRED_FLOOR) + shift, PRED_FLOOR)
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
