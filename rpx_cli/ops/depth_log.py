"""The depth kernel's log ratio d = ln(p/g) in float32, from arithmetic numpy vectorises on
every CPU.

Why not numpy's transcendental ufuncs: float32 ``log1p`` (like ``expm1``, ``log2``,
``log10``, ``arctan2``, ``power``) has a SIMD loop only with AVX-512 (SVML); on AVX2 CPUs,
Apple Silicon and the x86-64 baseline it is a scalar loop — 3.7 ms for a 480×640 frame on
an AVX2 EPYC against 0.5 ms for ``log``. Float32 ``log`` is vectorised for AVX2 and
AVX-512 only, and its error (up to ~4 ulps) varies smoothly with the argument: correlated
with d, which silog does not forgive (below). :func:`log_ratio32` uses only ``add``,
``subtract``, ``multiply``, ``divide`` (IEEE, correctly rounded, vectorised everywhere) and
integer bit operations: the same passes, and the same bits, on every CPU.

The method (fdlibm's / musl's ``logf``, fed the ratio with care). With ``q = p/g`` and
``r = (p − g)/g`` each rounded once to float32 (p − g is exact when g/2 ≤ p ≤ 2g,
Sterbenz):

- q = m · 2^k with m in [√½, √2), read from q's bits; f = m − 1, exact;
- where k = 0, m = q and f = q − 1 carries q's rounding (~6e-8 absolute: all of d when
  p ≈ g), so f is replaced there by r, which holds p/g − 1 to an ulp. (``log1p(r)``
  everywhere would fail for p << g, where r rounds to −1; f from m has no such case.)
- ln(1 + f) = f − f²/2 + s (f²/2 + R(s²)), s = f / (2 + f), R fdlibm's minimax
  polynomial: within 1 ulp;
- d = k · LN2_HI + (k · LN2_LO + ln(1 + f)): ln 2 split so that k · LN2_HI is exact, the
  small parts added first;
- p = g gives r = 0, f = 0 and d = 0 exactly;
- a ratio outside float32's normal range [2^−126, 2^127) gives a wrong d (the bits hold
  no m and k there); the kernel's other float32 terms, (p − g)² and (p − g)/g, overflow
  there anyway (a depth beyond ~1e30 m or below ~1e-30 m), as they did before.

Accuracy: within about an ulp of d, with rounding errors that do not follow d. That
matters for silog, a centred moment: when every prediction is ≈ c · g, d's mean cancels
and only its spread is left, so an error that drifts with d by a fraction of an ulp shows
(numpy's float32 ``log`` of q: ~5e-6 relative on silog for predictions e^−3 times the GT
with 0.3 % noise); this form stays at the level that rounding d itself to float32 costs.
:func:`reference_log_ratio` is the float64 formula it is tested against.
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


def log_ratio32(q: np.ndarray, r: np.ndarray, *, out: np.ndarray,
                scratch: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """ln(p/g) of every pixel into ``out`` (float32), from ``q = p/g`` and ``r = (p − g)/g``
    (float32, p and g positive, q within float32's normal range). ``scratch``: four float32
    arrays of the same size. Within about an ulp of ln p − ln g (see the module
    docstring)."""
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
    k_float = a
    np.copyto(k_float, k, casting="unsafe")
    f += np.multiply(k_float, LN2_LO, out=b)  # + k ln 2, the small part first
    k_float *= LN2_HI
    f += k_float
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


def reference_log_ratio(pred: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """ln p − ln g in float64: what :func:`log_ratio32` approximates."""
    return np.log(np.asarray(pred, np.float64)) - np.log(np.asarray(gt, np.float64))
