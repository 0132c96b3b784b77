"""Issue 31.13: `rpx report`, `show` and `compare` check a document against its kind's JSON
Schema before building anything from it: valid JSON of another shape is one line naming
the file and the wrong key (exit 1), never an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXTURES

DEPTH = json.loads((FIXTURES / "depth" / "indoor" / "expected.json").read_text())


def _with(path: str, value) -> dict:
    report = json.loads(json.dumps(DEPTH))
    node = report
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    return report


CASES = {
    "a-list": ([1, 2], "is not an rpx report (a JSON object)"),
    "no-schema": ({"task": "depth"}, "has no 'schema' field"),
    "unknown-schema": ({"schema": "rpx.nope"}, "unknown schema 'rpx.nope'"),
    "eval-empty": ({"schema": "rpx.eval"}, "is a required property (and 7 more"),
    "rows-a-string": (_with("rows", "x"), "$.rows: 'x' is not of type 'array'"),
    "row-a-number": (_with("rows", [3]), "$.rows[0]: 3 is not of type 'object'"),
    "aggregate-a-number": (_with("aggregate", 5), "$.aggregate: 5 is not of type 'object'"),
    "direction-unknown": (_with("metric_info.absrel.direction", "up"), "$.metric_info.absrel"),
    "errors-an-object": (_with("errors", {"a": 1}), "$.errors: {'a': 1} is not of type 'array'"),
    "unknown-task": (_with("task", "nope"), "$.task: 'nope' is not one of"),
    "compare-summary-lists": ({"schema": "rpx.compare", "schema_version": 1, "summary": {
        "improved": ["<meta>"], "regressed": 0, "unchanged": 0}}, "$"),
    "row-1001-nested": (_with("rows", [{**DEPTH["rows"][0], "stem": f"s{i}"} for i in range(1000)]
                               + [{"stem": "late", "absrel": [1, 2]}]),
                        "$.rows[1000]: not an object of numbers and strings"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("command", ["report", "show", "compare"])
def test_json_that_is_not_an_rpx_report_is_one_line_naming_the_key(rpx, tmp_path: Path, name: str,
                                                                   command: str) -> None:
    document, words = CASES[name]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    good = FIXTURES / "depth" / "indoor" / "expected.json"
    argv = {"report": ["report", str(bad), "-o", str(tmp_path / "page.html")],
            "show": ["show", str(bad)],
            "compare": ["compare", str(good), str(bad), "-q"]}[command]
    run = rpx(argv)
    assert run.exit_code == 1, (run.exit_code, run.stderr)
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    line = run.stderr.strip().splitlines()[-1]
    assert line.startswith(f"rpx: {bad}: is not "), line
    assert words in line, line
    assert not (tmp_path / "page.html").exists() and run.stdout == ""


def test_a_valid_report_without_provenance_is_still_shown(rpx) -> None:
    """Golden files are reports stripped of run_provenance: they are shown and rendered."""
    run = rpx(["show", str(FIXTURES / "depth" / "indoor" / "expected.json")])
    assert run.exit_code == 0, run.stderr
