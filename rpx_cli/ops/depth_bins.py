"""The error by depth's bins: quarter octaves of depth, edges ``2^(k/4)`` m for
k = −40 … 40, a depth's bin read from its float's exponent and mantissa bits
(:func:`depth_bins`), and the per-frame :class:`DepthHistogram` the ``by_depth`` family
sums (:mod:`rpx_cli.ops.depth` fills it; ``reference_histogram`` there is the plain
version it is tested against)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_BINS = 80  # quarter octaves from 2^-10 m to 2^10 m
BIN_OFFSET = 40  # the bin of [1, 2^(1/4)) m
EDGES = 2.0 ** (np.arange(-BIN_OFFSET, N_BINS - BIN_OFFSET + 1) / 4.0)
# per float type: the int type of its bits, its mantissa bits, its exponent bias
_LAYOUT = {np.dtype(np.float32): (np.int32, 23, 127),
           np.dtype(np.float64): (np.int64, 52, 1023)}


def _quarter_bits(dtype: np.dtype) -> tuple[int, ...]:
    """The mantissa bits of 2^(q/4), q = 1, 2, 3, rounded to ``dtype``."""
    view, bits, _ = _LAYOUT[dtype]
    mask = (1 << bits) - 1
    return tuple(int(np.array(2.0 ** (q / 4), dtype=dtype).view(view)) & mask for q in (1, 2, 3))


@dataclass
class DepthHistogram:
    """The error by depth of a set of pixels: ``counts[i, j]`` pixels with the GT in bin i
    and the prediction in bin j (int64, :data:`N_BINS` square), and per GT bin the sums of
    ``|p − g| / g`` (``abs_rel``) and ``(p − g)²`` (``sq_err``)."""

    counts: np.ndarray
    abs_rel: np.ndarray
    sq_err: np.ndarray

    @classmethod
    def empty(cls) -> DepthHistogram:
        return cls(np.zeros((N_BINS, N_BINS), np.int64), np.zeros(N_BINS), np.zeros(N_BINS))


def depth_bins(values: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """The bin of each positive ``values`` (float32 or float64) into ``out`` (an intp array;
    ``scratch`` likewise): ``4 × exponent + #{q: mantissa >= 2^(q/4)}``, shifted so that
    [1, 2^(1/4)) m is :data:`BIN_OFFSET`, clipped to the outer bins. Equal to
    ``searchsorted(EDGES in that precision, values, "right") − 1`` clipped, without a search."""
    view, bits, bias = _LAYOUT[values.dtype]
    raw = values.view(view)
    np.right_shift(raw, bits, out=out)  # the biased exponent (the sign bit is 0)
    np.left_shift(out, 2, out=out)
    np.bitwise_and(raw, (1 << bits) - 1, out=scratch)
    for threshold in _quarter_bits(values.dtype):
        np.add(out, scratch >= threshold, out=out)
    np.subtract(out, 4 * bias - BIN_OFFSET, out=out)
    return np.clip(out, 0, N_BINS - 1, out=out)
