"""Folded statistics (``Stat(..., merge=)``): one value per table, exact under any split."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rpx_cli.tasks.stats import Collector, Stat, StatTable


def _add(a: list[int], b: list[int]) -> list[int]:
    return [x + y for x, y in zip(a, b, strict=True)]


DECLARED = (Stat("n"), Stat("counts", encode=list, decode=list, merge=_add))


def _table(values: list[int]) -> StatTable:
    collector = Collector(DECLARED)
    for value in values:
        collector.add({"n": value, "counts": [value, 1]})
    return collector.table()


def test_a_folded_statistic_is_one_value_for_all_pairs() -> None:
    table = _table([1, 2, 3])
    assert len(table) == 3
    assert table["n"].tolist() == [1, 2, 3]
    assert table["counts"] == [6, 3]


def test_an_empty_table_folds_to_none() -> None:
    table = StatTable.empty(DECLARED)
    assert table["counts"] is None and len(table) == 0
    assert StatTable.decode(DECLARED, json.loads(json.dumps(table.encode())), 0)["counts"] is None


def test_parts_concatenated_equal_the_whole_and_survive_json() -> None:
    whole = _table([1, 2, 3, 4, 5])
    parts = [_table([1, 4]), StatTable.empty(DECLARED), _table([2, 3, 5])]
    decoded = [StatTable.decode(DECLARED, json.loads(json.dumps(p.encode())), len(p))
               for p in parts]
    merged = StatTable.concat(DECLARED, decoded).take([0, 2, 3, 1, 4])
    assert merged["counts"] == whole["counts"] == [15, 5]
    assert len(merged) == 5


def test_a_folded_statistic_can_be_reordered_but_not_sliced() -> None:
    table = _table([1, 2, 3])
    assert table.take(np.array([2, 0, 1]))["counts"] == [6, 3]
    with pytest.raises(ValueError, match="folded"):
        table.take([0, 1])


def test_a_folded_statistic_needs_a_codec() -> None:
    with pytest.raises(ValueError, match="encode and decode"):
        Stat("counts", merge=_add)
