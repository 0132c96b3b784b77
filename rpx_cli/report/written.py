"""Rows of a report copied as rpx wrote them, instead of parsed and serialised again.

``rpx merge`` writes the rows its parts already hold. The parts are parsed (the merge
needs their statistics, and a part that is not valid JSON is refused), but writing 100,000
parsed rows again costs as much as reading them: when a part's rows are laid out exactly
as :func:`rpx_cli.report.serialize.dumps` writes an indented report — each row an object
opening on a line of its own at four spaces and closing at four spaces, nothing else in
the ``rows`` array at that depth (JSON strings cannot hold a raw newline) — each row's
bytes are cut out of the part and the merged array is written as one
:class:`orjson.Fragment`. In an indented report the rows sit at the same depth as in the
part, so the bytes are the ones ``dumps`` would write for the parsed rows (sorted keys,
orjson's float form).

:func:`written_rows` is the readable reference's fast twin: ``dumps`` of the parsed rows,
which :func:`rpx_cli.run.merge.merge_reports` falls back to whenever a part is not in
that layout (written with ``--compact``, re-indented by a tool, rows without a row per
piece).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

_KEY = b'\n  "rows": [\n    {\n'  # a top-level key of an indented report, a non-empty array
_BETWEEN = b"\n    },\n    {\n"  # one row closes, the next opens (both at depth 2)
_END = b"\n    }\n  ]"  # the last row closes, then the array


def written_rows(data: bytes, count: int) -> list[bytes] | None:
    """The ``count`` rows of the indented report ``data`` as written: the inside of each
    row's braces exactly as it stands at the rows' depth; None when the report is not laid
    out so or its rows array does not split into ``count`` objects."""
    if count == 0 or not data.startswith(b'{\n  "'):
        return None
    start = data.find(_KEY)
    if start < 0:
        return None
    start += len(_KEY)
    end = data.find(_END, start)
    if end < 0:
        return None
    bodies = data[start:end].split(_BETWEEN)
    if len(bodies) != count:
        return None
    return bodies


def rows_fragment(rows: Sequence[bytes]) -> orjson.Fragment:
    """The ``rows`` array of an indented report made of rows from :func:`written_rows`
    (one join, no per-row copy), for ``dumps`` (indented) to write unchanged."""
    return orjson.Fragment(b"[\n    {\n" + _BETWEEN.join(rows) + _END)
