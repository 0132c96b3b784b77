"""The depth kernel's log ratio ln(p/g) in float32, from ufuncs numpy vectorises on every CPU.

Why not ``log1p``: numpy's float32 ``log1p`` (like ``expm1``, ``log2``, ``log10``,
``arctan2``, ``power``) has a SIMD loop only with AVX-512 (Intel's SVML); on AVX2 CPUs,
Apple Silicon and the x86-64 baseline it is a scalar loop, ~7x slower than ``log``. ``log``,
``add``, ``subtract``, ``multiply``, ``divide`` and the integer bit operations are
vectorised everywhere, so :func:`log_ratio32` uses only those.

Given ``q = p/g`` and ``r = (p − g)/g``, each rounded once to float32 (p − g is exact when
g/2 ≤ p ≤ 2g, Sterbenz), with q = m · 2^k, m in [√½, √2) (exponent and mantissa read
from q's bits):

    ln(p/g) = k · ln 2  +  ln(m) · r / (q − 1)

- **k · ln 2** is added as ``k · LN2_HI + k · LN2_LO`` (ln 2 split so that ``k · LN2_HI``
  is exact), the small part first: the float32 ``log`` is then only asked for ln m,
  |ln m| ≤ 0.35, where its error (numpy's AVX2 loop: up to ~4 ulps, varying smoothly with
  the mantissa) is a few 1e-9 absolute instead of a few ulps of the whole ln(p/g). Without
  the split, a frame whose predictions are all ~e^±3 times the GT (wrong units) gets
  errors correlated with d, and silog (a centred moment: d's mean cancels) loses up to
  ~5e-6 relative; with it, every key stays at the level that rounding d itself to
  float32 costs.
- **r / (q − 1)** is Goldberg's way of computing ``log1p(r)`` with ``log``
  ("What every computer scientist should know about floating-point arithmetic", 1991,
  theorem 4), with q itself as the "1 + r": where k = 0 (q in [√½, √2)) q − 1 is exact,
  ``ln(q)/(q − 1)`` is a smooth function taken within an ulp of the true ratio, and r
  holds the ratio's distance from 1 to an ulp or two, so p ≈ g keeps full relative
  accuracy (``log(q)`` alone would be off by q's rounding, ~6e-8 absolute: all of ln(p/g)
  when p ≈ g). Elsewhere the factor is 1 to a few ulps and multiplies only ln m.
  Unlike ``log1p(r)`` it needs no case for p << g (where r rounds to −1).
- **q = 1** only when p = g (a correctly rounded quotient of two different floats is never
  exactly 1), where r = 0: adding 2^−60 to q − 1 (which leaves every nonzero q − 1, at
  least 2^−24 in size, unchanged) makes the factor 0 / 2^−60 = 0 instead of 0 / 0, so
  identical depths give exactly 0.
- **q outside [2^−126, 2^127)** (p/g below float32's normal range or near its top: the
  bits do not hold m and k there) are recomputed in float64 from p and g; no realistic
  frame has one.

:func:`reference_log_ratio` is the plain float64 formula it is tested against.
"""

from __future__ import annotations

import math

import numpy as np

LN2_HI = np.float32(0.693145751953125)  # ln 2 to 15 bits: k · LN2_HI is exact for |k| < 2^8
LN2_LO = np.float32(math.log(2.0) - 0.693145751953125)
# ln(1 + f) = f − f²/2 + s (f²/2 + R), s = f / (2 + f), R = z (LG1 + z (LG2 + z (LG3 + z LG4))),
# z = s²: the minimax coefficients of fdlibm's / musl's logf (error < 1 ulp on [√½, √2))
LG1, LG2, LG3, LG4 = (np.float32(0xAAAAAA * 2.0**-24), np.float32(0xCCCE13 * 2.0**-25),
                      np.float32(0x91E9EE * 2.0**-25), np.float32(0xF89E26 * 2.0**-26))
_SQRT_HALF_BITS = 0x3F3504F3  # float32 bits of √½ (rounded): the mantissa range's lower end
_MANTISSA = 0x007FFFFF
_ONE, _TWO, _HALF = np.float32(1), np.float32(2), np.float32(0.5)
_LOWEST, _HIGHEST = np.float32(2.0**-126), np.float32(2.0**127)


def log_ratio32(q: np.ndarray, r: np.ndarray, pred: np.ndarray, gt: np.ndarray, *,
                out: np.ndarray, scratch: tuple[np.ndarray, ...]) -> np.ndarray:
    """ln(p/g) of every pixel into ``out`` (float32), from ``q = p/g`` and ``r = (p − g)/g``
    (float32, p and g positive and finite); ``pred`` and ``gt`` (the same pixels, p
    clipped) are read only for ratios outside float32's normal range. ``scratch``: four
    float32 arrays of the same size. Within about an ulp of the float64 value (see the
    module docstring)."""
    a, b, c, d = scratch
    shifted = np.subtract(q.view(np.int32), _SQRT_HALF_BITS, out=c.view(np.int32))
    bits = np.bitwise_and(shifted, _MANTISSA, out=out.view(np.int32))
    bits += _SQRT_HALF_BITS  # the bits of m = q / 2^k, in [√½, √2)
    f = out
    f -= _ONE  # m − 1, exact
    k = np.right_shift(shifted, 23, out=shifted)  # floor(log2(q / √½))
    # where k = 0, m = q and f = q − 1 exactly: take r instead (q's rounding undone)
    near = np.equal(k, 0, out=a, casting="unsafe")  # 1.0 where k = 0, else 0.0
    correction = np.subtract(r, f, out=b)
    correction *= near
    f += correction  # f + (r − f) = r exactly where k = 0
    _log1p_reduced(f, a, b, d)  # ln m, into f
    k_float = np.copyto(a, k, casting="unsafe") or a
    f += np.multiply(k_float, LN2_LO, out=b)  # + k ln 2, the small part first
    k_float *= LN2_HI
    f += k_float
    if not (np.min(q) >= _LOWEST and np.max(q) < _HIGHEST):
        _outside(q, pred, gt, out)
    return out


def _log1p_reduced(f: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """ln(1 + f) into ``f``, for f in [√½ − 1, √2 − 1) (given exactly), within 1 ulp:
    s = f / (2 + f), ln(1 + f) = 2 atanh(s) = f − f²/2 + s (f²/2 + R(s²)), R the minimax
    polynomial :data:`LG1` … :data:`LG4`. ``a``, ``b``, ``c``: scratch."""
    s = np.add(f, _TWO, out=a)
    np.divide(f, s, out=s)
    z = np.multiply(s, s, out=b)
    poly = np.multiply(z, LG4, out=c)
    for coefficient in (LG3, LG2, LG1):
        poly += coefficient
        poly *= z
    half_square = np.multiply(f, f, out=b)
    half_square *= _HALF
    poly += half_square
    poly *= s
    poly -= half_square
    f += poly


def _outside(q: np.ndarray, pred: np.ndarray, gt: np.ndarray, out: np.ndarray) -> None:
    """The pixels whose ratio lies outside [2^−126, 2^127): ln(p/g) in float64, rounded."""
    index = np.flatnonzero((q < _LOWEST) | ~(q < _HIGHEST))
    p = np.asarray(pred[index], np.float64)
    g = np.asarray(gt[index], np.float64)
    out[index] = np.log(p) - np.log(g)


def reference_log_ratio(pred: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """ln p − ln g in float64: what :func:`log_ratio32` approximates."""
    return np.log(np.asarray(pred, np.float64)) - np.log(np.asarray(gt, np.float64))
