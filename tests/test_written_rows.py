"""Rows taken as written (``rpx_cli.report.written``) against ``dumps`` of the parsed rows:
the merged ``rows`` array cut from parts and joined equals the one ``dumps`` writes."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.report.serialize import dumps
from rpx_cli.report.written import rows_fragment, written_rows

# keys and strings that look like the layout's markers once escaped (a raw newline cannot
# appear inside a JSON string)
TEXT = st.text(alphabet=st.sampled_from(['a', 'é', '\n', ' ', '{', '}', ',', '"', '\\', '\udcff',
                                         ']', '[']), max_size=12) | st.just("rows")
VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-2**60, 2**60)
    | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8)
ROW = st.dictionaries(TEXT, VALUE, min_size=1, max_size=5)


def report(rows) -> dict:
    return {"aggregate": {"rows": 1}, "n_pairs": 3, "rows": rows, "zz": [{"a": 1}]}


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.lists(ROW, max_size=4), min_size=1, max_size=4), seed=st.randoms())
def test_rows_as_written_equal_dumps_of_the_parsed_rows(parts, seed) -> None:
    written, parsed = [], []
    for rows in parts:
        data = dumps(report(rows))
        again = orjson.loads(data)["rows"]  # rows as a merge reads them (escapes applied)
        found = written_rows(data, len(again))
        if not again:
            assert found is None
            continue
        assert found is not None and len(found) == len(again)
        written += found
        parsed += again
    order = list(range(len(parsed)))
    seed.shuffle(order)
    if not order:
        return
    expected = dumps(report([parsed[i] for i in order]))
    got = dumps(report(rows_fragment([written[i] for i in order])), parsed=("rows",))
    assert got == expected


def test_other_layouts_are_not_taken() -> None:
    rows = [{"stem": "a", "x": 1.5}, {"stem": "b", "x": {"y": [1, 2]}}]
    data = dumps(report(rows))
    assert written_rows(data, 2) is not None
    assert written_rows(data, 3) is None  # a row per piece or nothing
    assert written_rows(dumps(report(rows), compact=True), 2) is None
    for empty in ([{}, {}], [rows[0], {}], [{}, rows[0]], [rows[0], {}, rows[1]]):
        assert written_rows(dumps(report(empty)), len(empty)) is None  # `{}`: another layout
    assert written_rows(dumps(report([])), 0) is None
