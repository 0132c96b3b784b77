"""The native stable order (rpx_cli/csrc/order.c) against its twin, np.lexsort((-score, key)):
the same permutation exactly, ties in input order, the two zeros equal, NaN last."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.ops.order import stable_order

core = pytest.importorskip("rpx_cli._native")

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCORES = st.sampled_from([0.0, -0.0, 0.5, 0.25, 1.0, -1.0, 1e-300, 5e-324, -5e-324, 1e300,
                          np.inf, -np.inf, np.nan, -np.nan, 0.1 + 0.2, 0.3])
KEYS = st.one_of(st.integers(0, 5), st.integers(-(2**63), 2**63 - 1))


def natively(key: np.ndarray, score: np.ndarray) -> np.ndarray:
    order = np.full(key.size, -1, np.int64)
    core.stable_order(key, score, order)
    return order


@SETTINGS
@given(st.lists(st.tuples(KEYS, st.one_of(SCORES, st.floats(allow_nan=True))), max_size=60))
def test_the_kernel_is_lexsort(pairs) -> None:
    key = np.array([k for k, _ in pairs], np.int64)
    score = np.array([s for _, s in pairs], np.float64)
    assert natively(key, score).tolist() == np.lexsort((-score, key)).tolist()


def test_the_order_by_hand() -> None:
    """Keys 1, 0, 1, 0, 1 with scores 0.5, 0.5, 0.9, -0.0, 0.5: key 0 first (0.5 before 0.0:
    indices 1, 3), then key 1 by score descending (0.9 at 2), the tie at 0.5 in input order
    (0, 4)."""
    key = np.array([1, 0, 1, 0, 1], np.int64)
    score = np.array([0.5, 0.5, 0.9, -0.0, 0.5])
    assert natively(key, score).tolist() == [1, 3, 2, 0, 4]


def test_zeros_tie_and_nan_comes_last() -> None:
    score = np.array([np.nan, 0.0, -0.0, 0.0, -np.nan, -np.inf])
    assert natively(np.zeros(6, np.int64), score).tolist() == [1, 2, 3, 5, 0, 4]


def test_a_large_run_equals_lexsort() -> None:
    rng = np.random.default_rng(7)
    key = rng.integers(0, 5000 * 80, 200_000)
    for score in (rng.random(key.size), rng.random(key.size).astype(np.float32).astype(np.float64),
                  np.round(rng.random(key.size), 2), np.zeros(key.size)):
        assert (natively(key, score) == np.lexsort((-score, key))).all()


def test_the_python_face_takes_either_path(monkeypatch) -> None:
    key = np.array([2, 1, 2, 1], np.int64)
    score = np.array([0.1, 0.2, 0.3, 0.2])
    monkeypatch.setenv("RPX_NATIVE", "0")
    off = stable_order(key, score)
    monkeypatch.setenv("RPX_NATIVE", "1")
    assert stable_order(key, score).tolist() == off.tolist() == [1, 3, 2, 0]


@pytest.mark.parametrize("args, error", [
    ((np.zeros(3, np.int64), np.zeros(2), np.zeros(3, np.int64)), ValueError),  # a score short
    ((np.zeros(3, np.int64), np.zeros(3), np.zeros(4, np.int64)), ValueError),  # order too long
    ((np.zeros(3, np.int32), np.zeros(3), np.zeros(3, np.int64)), TypeError),  # keys not int64
    ((np.zeros(3, np.int64), np.zeros(3, np.float32), np.zeros(3, np.int64)), TypeError),
    ((np.zeros(3, np.int64), np.zeros(3), b"\0" * 24), TypeError),  # order not writable
])
def test_the_kernel_refuses_malformed_arguments(args, error) -> None:
    with pytest.raises(error):
        core.stable_order(*args)


def test_nothing_to_order() -> None:
    assert natively(np.zeros(0, np.int64), np.zeros(0)).tolist() == []
