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

Per-pixel terms are float64, or float32 when that holds the inputs (see
:class:`~rpx_cli.ops.depth_kernel.DepthKernel`, which computes the sums of a frame: the native
core's one pass, or numpy chunks); sums are accumulated in float64. Either way the metrics agree with a
plain float64 implementation to ~1e-7 or better, and delta counts are exact: the
comparison is the reference's own expression ``max(p/g, g/p) < T``.

The error by depth (:class:`DepthHistogram`, the ``by_depth`` family): quarter-octave bins
of depth, edges ``2^(k/4)`` m for k = −40 … 40 (1 mm to 1,024 m; the first bin also takes
what lies below, the last what lies above), per GT bin the pixels and the sums of
``|p − g| / g`` and ``(p − g)²``, and the pixels per (GT bin, predicted bin). A depth's
bin is read from its float's exponent and mantissa bits (:func:`depth_bins`), exactly the
bin of ``edges[k] <= depth < edges[k + 1]`` with the edges rounded to the precision the
kernel works in; :func:`reference_histogram` is the readable version.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rpx_cli.ops.depth_bins import EDGES, N_BINS, DepthHistogram

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
    spread = [part.log_sum / part.n - mean for part in parts]
    m2 = math.fsum([part.log_m2 for part in parts]
                   + [part.n * (d * d) for part, d in zip(parts, spread, strict=True)])
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


def combine_columns(stats: np.ndarray) -> DepthSums:
    """:func:`combine` of many rows given as a matrix (one :class:`DepthSums` per row, in
    field order): the same arithmetic, without a Python object per row."""
    stats = stats[stats[:, 0] > 0]
    if not len(stats):
        return DepthSums()
    n_i, log_sum_i = stats[:, 0], stats[:, 4]
    n = int(n_i.sum())
    log_sum = math.fsum(log_sum_i.tolist())
    spread = log_sum_i / n_i - log_sum / n
    m2 = math.fsum(stats[:, 5].tolist() + (n_i * (spread * spread)).tolist())
    column = lambda k: math.fsum(stats[:, k].tolist())  # noqa: E731
    return DepthSums(n, column(1), column(2), column(3), log_sum, m2, column(6),
                     int(stats[:, 7].sum()), int(stats[:, 8].sum()), int(stats[:, 9].sum()))


def finalize_columns(stats: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`finalize` of every row of a statistics matrix, NaN where a row is empty: the
    same operations in the same order, so each value equals the row's own."""
    n, abs_rel, sq_rel, sq_err, log_sum, log_m2, abs_log, d1, d2, d3 = (stats[:, k] for k in range(10))
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "absrel": abs_rel / n,
            "sqrel": sq_rel / n,
            "rmse": np.sqrt(sq_err / n),
            "rmse_log": np.sqrt((log_m2 + log_sum * log_sum / n) / n),
            "log10": abs_log / n / _LN10,
            "silog": np.sqrt(np.maximum(log_m2 / n, 0.0)),
            "delta1": d1 / n,
            "delta2": d2 / n,
            "delta3": d3 / n,
        }


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


def reference_histogram(pred: np.ndarray, gt: np.ndarray, dtype: type = np.float64) -> DepthHistogram:
    """:class:`DepthHistogram` of one frame written plainly: the valid pixels (GT finite and >
    0), the prediction clipped at 1e-6, bins by ``np.searchsorted`` over the edges in
    ``dtype``, sums with ``np.bincount``. The reference :class:`DepthKernel` is compared
    with; not used in a run."""
    p = np.asarray(pred, dtype=np.float64).ravel()
    g = np.asarray(gt, dtype=np.float64).ravel()
    valid = np.isfinite(g) & (g > 0)
    p, g = np.maximum(p[valid], PRED_FLOOR), g[valid]
    edges = EDGES.astype(dtype)
    gb = np.clip(np.searchsorted(edges, g.astype(dtype), side="right") - 1, 0, N_BINS - 1)
    pb = np.clip(np.searchsorted(edges, p.astype(dtype), side="right") - 1, 0, N_BINS - 1)
    counts = np.bincount(gb * N_BINS + pb, minlength=N_BINS * N_BINS).reshape(N_BINS, N_BINS)
    return DepthHistogram(counts, np.bincount(gb, weights=np.abs(p - g) / g, minlength=N_BINS),
                          np.bincount(gb, weights=(p - g) ** 2, minlength=N_BINS))


def reference_metrics(pred: np.ndarray, gt: np.ndarray) -> dict[str, float | None]:
    """The metrics of one frame written as the formulas in this module's docstring, plain
    float64 numpy over the valid pixels (GT finite and > 0; prediction clipped at 1e-6):
    the readable reference that :class:`DepthKernel` must agree with (a test compares
    them). Not used in a run: it allocates a temporary per term."""
    p = np.asarray(pred, dtype=np.float64).ravel()
    g = np.asarray(gt, dtype=np.float64).ravel()
    valid = np.isfinite(g) & (g > 0)
    p, g = np.maximum(p[valid], PRED_FLOOR), g[valid]
    if not g.size:
        return dict.fromkeys(METRICS)
    d = np.log(p) - np.log(g)
    ratio = np.maximum(p / g, g / p)
    return {
        "absrel": float(np.mean(np.abs(p - g) / g)),
        "sqrel": float(np.mean((p - g) ** 2 / g)),
        "rmse": float(np.sqrt(np.mean((p - g) ** 2))),
        "rmse_log": float(np.sqrt(np.mean(d**2))),
        "log10": float(np.mean(np.abs(np.log10(p) - np.log10(g)))),
        "silog": float(np.sqrt(max(np.mean(d**2) - np.mean(d) ** 2, 0.0))),
        **{f"delta{k}": float(np.mean(ratio < t)) for k, t in enumerate(DELTA_THRESHOLDS, 1)},
    }
