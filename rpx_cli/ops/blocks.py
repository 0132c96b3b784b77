"""Block reductions of 2-D maps (saliency macroblocks, CTUs)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def block_grid(shape: tuple[int, ...], block: int) -> tuple[int, int]:
    """Number of whole blocks along each axis; partial edge blocks are cropped."""
    return shape[0] // block, shape[1] // block


def block_sums(array: np.ndarray, block: int, *, dtype: type | np.dtype) -> np.ndarray:
    """Sum of every whole ``block`` x ``block`` tile, accumulated in ``dtype``.

    Rows first: ``(hb, block, W)`` summed over the block rows, then ``(hb, wb, block)`` over
    the block columns. numpy reduces poorly over a short contiguous inner axis, so this is
    ~3x faster than ``reshape(hb, b, wb, b).sum(axis=(1, 3))`` on full-HD masks and needs
    no copy of the input (the crop is a view).
    """
    hb, wb = block_grid(array.shape, block)
    cropped = array[: hb * block, : wb * block]
    rows = cropped.reshape(hb, block, wb * block).sum(axis=1, dtype=dtype)
    return rows.reshape(hb, wb, block).sum(axis=2)


def reference_block_sums(array: np.ndarray, block: int, *, dtype: type | np.dtype) -> np.ndarray:
    """:func:`block_sums` written plainly (one reshape, one reduction over both block
    axes): the readable reference a test compares the fast one with."""
    hb, wb = block_grid(array.shape, block)
    tiles = array[: hb * block, : wb * block].reshape(hb, block, wb, block)
    return tiles.sum(axis=(1, 3), dtype=dtype)


def integer_sum_threshold(threshold: float, count: int, divisor: float) -> int:
    """Smallest integer sum S with ``S / (count * divisor) >= threshold``, exactly.

    For integer-valued masks this turns "block mean >= threshold" into an exact integer
    comparison, so a block whose mean equals the threshold is on whatever the summation
    order (a float mean can round either way).
    """
    return math.ceil(Fraction(threshold) * count * Fraction(divisor))
