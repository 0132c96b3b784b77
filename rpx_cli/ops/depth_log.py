"""The depth kernel's log ratio d = ln(p/g) in float32, from arithmetic numpy vectorises on
every CPU.

Why not numpy's transcendental ufuncs: float32 ``log1p`` (like ``expm1``, ``log2``,
``log10``, ``arctan2``, ``power``) has a SIMD loop only with AVX-512 (SVML); on AVX2 CPUs,
Apple Silicon and the x86-64 baseline it is a scalar loop — 1.5 to 4 ms for a 480×640
frame on an AVX2 EPYC, depending on the values, against 0.5 ms for ``log``. Float32
``log`` is vectorised for AVX2 and AVX-512 only, and its error (up to ~4 ulps) varies
smoothly with the argument: correlated with d, which silog does not forgive (below).
:func:`log_ratio32` uses only ``add``, ``subtract``, ``multiply``, ``divide`` (IEEE,
correctly rounded, vectorised everywhere) and integer bit operations: the same passes,
and the same bits, on every CPU.

The method (the reduction of fdlibm's ``logf``, fed the ratio with care). With ``q = p/g`` and
``r = (p − g)/g`` each rounded once to float32 (p − g is exact when g/2 ≤ p ≤ 2g,
Sterbenz):

- a ratio in [√½, √2] (nearly every pixel of a useful prediction) is 1 + f with f = r,
  accurate to an ulp however close p is to g: ln(1 + r) directly (12 passes);
- any other (p << g, p >> g) is split: q = m · 2^k with m in [√½, √2), read from q's
  bits, f = m − 1, exact (``log1p(r)`` would fail for p << g, where r rounds to −1) —
  for the few such pixels of a chunk, gathered; for all of them when they are many;
- in the split, where k = 0, m = q and f = q − 1 carries q's rounding (~6e-8 absolute:
  all of d when p ≈ g), so f is r there too: a pixel gets the same bits by either route;
- ln(1 + f) = 2 atanh(s) = f − s (f − R(s²)), s = f / (2 + f), R a three-term minimax
  polynomial (:data:`B1` … :data:`B3`): within 1 ulp, and as often above as below;
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

# ln 2 = LN2_HI + LN2_LO, LN2_HI to 15 bits: k · LN2_HI is exact for |k| < 2^8. Both are
# scaled by 2^−23 to multiply k · 2^23, the exponent as it sits in the bits (exactly)
LN2_HI = np.float32(0.693145751953125 * 2.0**-23)
LN2_LO = np.float32((math.log(2.0) - 0.693145751953125) * 2.0**-23)
# R(z) = (2 atanh(s) − 2s) / s = 2 (z/3 + z²/5 + ...), z = s², s in [−(3 − 2√2), 3 − 2√2]
# (|f| up to √2 − 1): a minimax fit z (B1 + z (B2 + z B3)) off by < 2e-9 (Lawson's
# iteration on Chebyshev nodes), so s · R is exact to a few 1e-10 of ln(1 + f)
B1, B2, B3 = np.float32(0.6666677594184875), np.float32(0.3997754156589508), np.float32(0.29871729016304016)
_SQRT_HALF_BITS = 0x3F3504F3  # float32 bits of √½ (rounded): the mantissa range's lower end
_EXPONENT = -0x00800000  # 0xFF800000 as int32: sign and exponent bits
_ONE, _TWO = np.float32(1), np.float32(2)
_Z_MAX = np.float32((3 - 2 * math.sqrt(2)) ** 2)  # s² where 1 + f is √½ or √2
_SPLIT_ALL = 8  # with more than 1/8 of a chunk's ratios outside [√½, √2], split every one


def log_ratio32(q: np.ndarray, r: np.ndarray, *, out: np.ndarray,
                scratch: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                outside: np.ndarray) -> np.ndarray:
    """ln(p/g) of every pixel into ``out`` (float32), from ``q = p/g`` and ``r = (p − g)/g``
    (float32, p and g positive, q within float32's normal range). ``scratch``: four float32
    arrays of the same size; ``outside``: a bool array of that size. Within about an ulp of
    ln p − ln g (see the module docstring).

    Ratios in [√½, √2] (most, for any useful prediction) take ln(1 + r) directly; the
    others are split into exponent and mantissa (:func:`_split_log_ratio`): gathered when
    they are few, every pixel of the chunk when they are many. A ratio gets the same bits
    either way (where k = 0 the split uses r itself)."""
    a, b, c, _ = scratch
    s = np.add(r, _TWO, out=a)
    np.divide(r, s, out=s)
    z = np.multiply(s, s, out=b)
    far = np.greater(z, _Z_MAX, out=outside)  # 1 + r outside [√½, √2]
    n_far = int(np.count_nonzero(far))
    if n_far * _SPLIT_ALL > r.size:
        return _split_log_ratio(q, r, out=out, scratch=scratch)
    _log1p_reduced(r, s, z, out=out, scratch=c)
    if n_far:
        index = np.flatnonzero(far)
        few = q[index]
        out[index] = _split_log_ratio(few, r[index], out=np.empty_like(few),
                                      scratch=tuple(np.empty_like(few) for _ in range(4)))
    return out


def _log1p_reduced(f: np.ndarray, s: np.ndarray, z: np.ndarray, *, out: np.ndarray,
                   scratch: np.ndarray) -> None:
    """ln(1 + f) = 2 atanh(s) = 2s + s R(z) = f − s (f − R(z)) into ``out``, given
    s = f / (2 + f) and z = s², for 1 + f in [√½, √2] (|s| ≤ 3 − 2√2). ``out`` may be f."""
    poly = np.multiply(z, B3, out=scratch)
    poly += B2
    poly *= z
    poly += B1
    poly *= z
    np.subtract(f, poly, out=poly)
    poly *= s
    np.subtract(f, poly, out=out)


def _split_log_ratio(q: np.ndarray, r: np.ndarray, *, out: np.ndarray,
                     scratch: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """ln(p/g) = k ln 2 + ln(1 + f), q = 2^k (1 + f) with 1 + f in [√½, √2) read from q's
    bits, and f = r itself where k = 0."""
    a, b, c, d = scratch
    bits = q.view(np.int32)
    shifted = np.subtract(bits, _SQRT_HALF_BITS, out=c.view(np.int32))
    k_bits = np.bitwise_and(shifted, _EXPONENT, out=d.view(np.int32))  # k · 2^23
    np.subtract(bits, k_bits, out=out.view(np.int32))  # the bits of m = q / 2^k, in [√½, √2)
    f = out
    f -= _ONE  # m − 1, exact
    # where k = 0, m = q and f = q − 1 exactly: take r instead (q's rounding undone)
    near = np.equal(k_bits, 0, out=a, casting="unsafe")  # 1.0 where k = 0, else 0.0
    correction = np.subtract(r, f, out=b)
    correction *= near
    f += correction  # f + (r − f) = r exactly where k = 0
    s = np.add(f, _TWO, out=a)
    np.divide(f, s, out=s)
    z = np.multiply(s, s, out=b)
    _log1p_reduced(f, s, z, out=f, scratch=c)
    # + k ln 2, the small part first
    k = a
    np.copyto(k, k_bits, casting="unsafe")  # k · 2^23, exact in float32
    f += np.multiply(k, LN2_LO, out=b)
    k *= LN2_HI
    f += k
    return out


def reference_log_ratio(pred: np.ndarray, gt: np.ndarray) -> np.ndarray:
    """ln p − ln g in float64: what :func:`log_ratio32` approximates."""
    return np.log(np.asarray(pred, np.float64)) - np.log(np.asarray(gt, np.float64))
