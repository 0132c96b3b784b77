"""The stable order COCO's evaluation sorts its detections by: key ascending, then score
descending, ties in input order — ``np.lexsort((-score, key))``.

:func:`stable_order` runs the native core's ``stable_order`` (``rpx_cli/csrc/order.c``, a
radix sort over the bits that differ) when it is in use, else ``np.lexsort`` itself, its
twin: the same order exactly (``tests/test_native_order.py``)."""

from __future__ import annotations

import numpy as np

from rpx_cli import native


def stable_order(key: np.ndarray, score: np.ndarray) -> np.ndarray:
    """(n,) int64: the indices of ``key`` (n,) int ascending, then ``score`` (n,) float
    descending (-0.0 ties with 0.0; NaN last), equal pairs in index order."""
    core = native.core()
    if core is None:
        return np.lexsort((-np.asarray(score, np.float64), key))
    order = np.empty(len(key), np.int64)
    core.stable_order(np.ascontiguousarray(key, np.int64), np.ascontiguousarray(score, np.float64),
                      order)
    return order
