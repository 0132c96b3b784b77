"""Resizing a map to another grid (``--resize-pred``), pixel-centre convention.

A destination pixel i samples the source at ``(i + 0.5) · in / out − 0.5`` (OpenCV's
``INTER_LINEAR`` / PyTorch ``align_corners=False``). ``nearest`` takes
``floor((i + 0.5) · in / out)``; ``bilinear`` interpolates separably, clamping at the
border. Both are vectorised (index arithmetic, no loop over pixels).
"""

from __future__ import annotations

import numpy as np

RESIZE_METHODS = ("nearest", "bilinear")


def resize(array: np.ndarray, shape: tuple[int, int], method: str) -> np.ndarray:
    if array.shape == shape:
        return array
    if method == "nearest":
        rows = _nearest(array.shape[0], shape[0])
        cols = _nearest(array.shape[1], shape[1])
        return array[np.ix_(rows, cols)]
    if method == "bilinear":
        data = array.astype(np.float64)
        data = _linear_axis(data, shape[0], axis=0)
        return _linear_axis(data, shape[1], axis=1)
    raise ValueError(f"unknown resize method {method!r}")


def _nearest(size_in: int, size_out: int) -> np.ndarray:
    index = np.floor((np.arange(size_out) + 0.5) * (size_in / size_out)).astype(np.int64)
    return np.minimum(index, size_in - 1)


def _linear_axis(data: np.ndarray, size_out: int, axis: int) -> np.ndarray:
    size_in = data.shape[axis]
    position = (np.arange(size_out) + 0.5) * (size_in / size_out) - 0.5
    position = np.clip(position, 0.0, size_in - 1)
    low = np.floor(position).astype(np.int64)
    high = np.minimum(low + 1, size_in - 1)
    frac = position - low
    shape = [1, 1]
    shape[axis] = size_out
    frac = frac.reshape(shape)
    return np.take(data, low, axis=axis) * (1.0 - frac) + np.take(data, high, axis=axis) * frac
