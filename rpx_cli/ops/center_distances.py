"""Planar centre distances exactly as the nuScenes tracking devkit computes them.

The devkit's ``TrackingEvaluation.accumulate_threshold`` measures a frame's GT centres ``X``
(n x 2) against its predicted centres ``Y`` (m x 2) with scikit-learn's
``euclidean_distances``, which expands the square instead of subtracting::

    d = sqrt(max((-2 * (X @ Y.T) + |x|^2) + |y|^2, 0))        # |x|^2 = x0*x0 + x1*x1

and then tests ``d >= 2 m`` (no match). The expansion cancels: for centres a few hundred
metres from the origin (nuScenes' global frame) ``d`` is off by ~1e-10 m from the true
distance, and a box 2 m away may land on either side of the threshold. To decide every match
as the devkit does, rpx computes the same expression with the same roundings. The only
machine-dependent part is the dot product ``x . y`` of BLAS's matrix product: OpenBLAS's
kernels round it by shape — a matrix product (n > 1 and m > 1) as ``fma(x1, y1, x0 y0)``, a
matrix-vector product (one side a single box) as ``fma(x0, y0, x1 y1)``, a single pair as
``x0 y0 + x1 y1``. :func:`devkit_distances` returns all three; the caller picks one per pair
from the frame's shape (which varies with the score threshold, so one pair can be matched at
one threshold and not at another, as in the devkit).

:func:`fma` is a correctly rounded fused multiply-add in numpy (Boldo and Melquiond,
"Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd",
IEEE TC 2008: the exact product by Veltkamp splitting, an exact sum, rounding to odd, one
final rounding). :func:`dot_kernels` checks once per process, on random centres, which
formula this machine's BLAS follows for each shape; where none does (another BLAS), that
shape's dot product is the plain sum, which agrees with the devkit to ~1e-10 m.
:func:`reference_distances` is the devkit's own call (scikit-learn's formula, numpy's
matrix product), the readable reference the tests compare with.
"""

from __future__ import annotations

from functools import cache

import numpy as np

# Veltkamp's splitting constant for float64: 2^27 + 1
_SPLIT = 134217729.0
KERNELS = ("gemm", "gemv", "dot")  # n > 1 and m > 1 / one side a single box / a single pair


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``s = fl(a + b)`` and the exact error ``t``: ``a + b == s + t`` (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``p = fl(a * b)`` and the exact error ``e``: ``a * b == p + e`` (Dekker; exact for
    |a|, |b| < 1e150)."""
    p = a * b
    ca = _SPLIT * a
    ah = ca - (ca - a)
    al = a - ah
    cb = _SPLIT * b
    bh = cb - (cb - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _round_to_odd_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a + b`` rounded to odd: exact when representable, else the neighbour of the exact
    sum whose last significand bit is 1."""
    s, t = _two_sum(a, b)
    even = (s.view(np.int64) & 1) == 0
    step = (t != 0) & even
    if step.any():
        s = np.where(step, np.nextafter(s, np.where(t > 0, np.inf, -np.inf)), s)
    return s


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once (a fused multiply-add), elementwise, in float64."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    uh, ul = _two_product(a, b)
    th, tl = _two_sum(c, uh)
    return th + _round_to_odd_sum(tl, ul)


def _dots(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The three roundings of ``x . y`` for rows of ``x`` and ``y`` (k x 2 each)."""
    x0, x1, y0, y1 = x[:, 0], x[:, 1], y[:, 0], y[:, 1]
    return {"gemm_fma": fma(x1, y1, x0 * y0), "gemv_fma": fma(x0, y0, x1 * y1),
            "plain": x0 * y0 + x1 * y1}


@cache
def dot_kernels() -> dict[str, str]:
    """Which rounding of ``x . y`` this machine's ``X @ Y.T`` uses, per shape (kernel name
    -> ``gemm_fma`` | ``gemv_fma`` | ``plain``), found on random centres like nuScenes'."""
    rng = np.random.default_rng(20190501)
    shapes = {"gemm": (5, 7), "gemv": (1, 6), "dot": (1, 1)}
    found = {}
    for kernel, (n, m) in shapes.items():
        agree = {"gemm_fma": True, "gemv_fma": True, "plain": True}
        for _ in range(40):
            x = rng.uniform(-2000, 2000, (n, 2))
            y = x[rng.integers(0, n, m)] + rng.normal(0, 1.5, (m, 2))
            for xx, yy in ((x, y), (y, x)):  # the matrix-vector kernel both ways round
                product = xx @ yy.T
                i, j = np.divmod(np.arange(product.size), product.shape[1])
                for name, values in _dots(xx[i], yy[j]).items():
                    agree[name] &= bool(np.array_equal(values, product.ravel()))
        found[kernel] = next((name for name in ("gemm_fma", "gemv_fma", "plain") if agree[name]),
                             "plain")
    return found


def devkit_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Distances of the pairs ``(x[k], y[k])`` (k x 2 centres each) as scikit-learn's
    ``euclidean_distances`` gives them inside an ``n x m`` frame matrix: a (3, k) array, one
    row per BLAS kernel of :data:`KERNELS` (``gemm``: n > 1 and m > 1; ``gemv``: n == 1 or
    m == 1, not both; ``dot``: n == m == 1)."""
    x = np.asarray(x, np.float64).reshape(-1, 2)
    y = np.asarray(y, np.float64).reshape(-1, 2)
    xx = np.einsum("ij,ij->i", x, x)
    yy = np.einsum("ij,ij->i", y, y)
    dots = _dots(x, y)
    kernels = dot_kernels()
    out = np.empty((3, x.shape[0]))
    for row, kernel in enumerate(KERNELS):
        squared = -2 * dots[kernels[kernel]]
        squared += xx
        squared += yy
        np.maximum(squared, 0, out=squared)
        np.sqrt(squared, out=out[row])
    return out


def kernel_index(n_gt: np.ndarray, n_pred: np.ndarray) -> np.ndarray:
    """The row of :func:`devkit_distances` for frames of ``n_gt`` GT and ``n_pred`` predicted
    boxes (both >= 1)."""
    single = (np.asarray(n_gt) == 1).astype(np.int64) + (np.asarray(n_pred) == 1)
    return single  # 0: gemm, 1: gemv, 2: dot


def reference_distances(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The devkit's frame matrix (n x m): scikit-learn's formula with numpy's matrix product
    on this machine, for the tests."""
    x = np.asarray(x, np.float64).reshape(-1, 2)
    y = np.asarray(y, np.float64).reshape(-1, 2)
    squared = -2 * (x @ y.T)
    squared += np.einsum("ij,ij->i", x, x)[:, None]
    squared += np.einsum("ij,ij->i", y, y)[None, :]
    np.maximum(squared, 0, out=squared)
    return np.sqrt(squared)
