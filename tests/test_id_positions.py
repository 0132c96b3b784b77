"""io/id_positions.py: the table path and the binary search give np.searchsorted's answer."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.io.id_positions import positions

INT64 = st.integers(-(2**63), 2**63 - 1)


def searched(ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The plain definition: a binary search, -1 where the id is not there."""
    at = np.searchsorted(ids, values)
    found = (at < ids.size) & (ids[np.minimum(at, max(ids.size - 1, 0))] == values if ids.size else False)
    return np.where(found, at, -1)


@settings(max_examples=300, deadline=None)
@given(st.sets(st.one_of(st.integers(-5, 40), INT64), max_size=30),
       st.lists(st.one_of(st.integers(-8, 45), INT64), max_size=40))
def test_positions_are_the_binary_searchs(ids, values) -> None:
    ids = np.array(sorted(ids), np.int64)
    values = np.array(values, np.int64)
    assert positions(ids, values).tolist() == searched(ids, values).tolist()


def test_by_hand() -> None:
    """COCO-like ids 1, 2, 5 (a table of 5 values) and a spread one (a binary search)."""
    assert positions(np.array([1, 2, 5]), np.array([5, 1, 3, 0, 6, 2])).tolist() == [2, 0, -1, -1, -1, 1]
    spread = np.array([-(2**62), 0, 2**62])
    assert positions(spread, np.array([2**62, 7, -(2**62)])).tolist() == [2, -1, 0]


def test_float_values_are_searched() -> None:
    assert positions(np.array([1, 2, 5]), np.array([2.0, 2.5, np.nan])).tolist() == [1, -1, -1]
