"""Numbers from untrusted files: numbers only, finite, and within a physical magnitude.

JSON readers take arrays of numbers through :func:`json_numbers`, which never converts a
string or a boolean (numpy would read ``[true, 0, 0]`` as ``[1, 0, 0]`` and ``"2"`` as 2).
:data:`MAX_MAGNITUDE` bounds coordinates (pixels), depths and translations (metres): no
camera, image or scene comes near 1e12 in either unit, and below it every squared
difference, sum over a billion terms and mean stays finite in float64 (and every per-pixel
depth term in float32), so a metric can never overflow into a report. A value beyond it is
an input error naming the file. Depths have a floor too (:data:`MIN_DEPTH`, the prediction
clip of the depth metrics): a GT depth of 5e-324 m would make relative errors infinite.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np

MAX_MAGNITUDE = 1e12
MIN_DEPTH = 1e-6


def json_numbers(value: Any, ndim: int) -> np.ndarray | None:
    """``value`` (lists nested ``ndim`` deep) as float64 when every leaf is a JSON number
    (an int or a float, never a bool or a string) and the nesting is regular; else None."""
    leaves = value
    try:
        if not isinstance(value, list):
            return None
        for _ in range(ndim - 1):
            if not all(type(item) is list for item in leaves):
                return None
            leaves = list(chain.from_iterable(leaves))
    except TypeError:
        return None
    if not set(map(type, leaves)) <= {int, float}:
        return None
    try:
        array = np.asarray(value, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):  # ragged, or an int beyond float64
        return None
    return array if array.ndim == ndim else None


def beyond(values: np.ndarray, limit: float = MAX_MAGNITUDE) -> np.ndarray:
    """Where ``|values| > limit`` (NaN is not beyond: callers check finiteness first)."""
    return np.abs(values) > limit
