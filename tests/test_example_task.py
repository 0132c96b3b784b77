"""The test-only task ``cer`` (tests/example_task.py) gets everything from registration:
CLI, schema, metrics listing, strata, shard/merge and golden coverage (test_golden.py runs its
case in tests/fixtures/cer/ like every built-in task's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from example_task import edit_distance
from helpers import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

CASE = ROOT / "tests" / "fixtures" / "cer" / "lines"


def plain_edit_distance(a: str, b: str) -> int:
    """The textbook dynamic programme, for reference."""
    table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1,
                              table[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return table[-1][-1]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abc é", max_size=12), st.text(alphabet="abc é", max_size=12))
def test_edit_distance_matches_the_textbook_table(a: str, b: str) -> None:
    assert edit_distance(a, b) == plain_edit_distance(a, b)


def test_the_cli_comes_from_registration(rpx) -> None:
    assert "cer" in rpx("eval --help").stdout
    help_text = rpx("eval cer --help").stdout
    assert "--normalise-space" in help_text and "jq .dataset.cer" in help_text
    assert "cer" in json.loads(rpx("schema eval").stdout)["properties"]["task"]["enum"]
    listing = json.loads(rpx("metrics --task cer --json").stdout)
    assert listing["cer"]["cer"]["direction"] == "lower"


def test_hand_computed_report(rpx) -> None:
    report = rpx(f"eval cer --pred-dir {CASE / 'pred'} --gt-dir {CASE / 'gt'} --normalise-space").json
    rows = {row["stem"]: row for row in report["rows"]}
    assert rows["a"]["cer"] == 1 / 19  # "brown" -> "brwn": one deletion
    assert rows["b"]["cer"] == 1 / 10  # "over" -> "ower": one substitution
    assert rows["c"]["cer"] is None and rows["c"]["edits"] == 5  # no GT text: undefined
    assert rows["page2/d"]["cer"] == 0.0
    assert report["aggregate"]["cer"] == (1 / 19 + 1 / 10 + 0.0) / 3
    assert report["dataset"]["cer"] == 7 / 41


def test_strata_use_the_declared_primary_metric(rpx, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"schema_version": 1, "samples": [
        {"stem": "a", "phase": "clutter", "difficulty": "easy"},
        {"stem": "b", "phase": "clutter", "difficulty": "hard"},
        {"stem": "c", "phase": "clean", "difficulty": "easy"},
        {"stem": "page2/d", "phase": "clean", "difficulty": "hard"}]}))
    report = rpx(f"eval cer --pred-dir {CASE / 'pred'} --gt-dir {CASE / 'gt'} "
                 f"--manifest {manifest}").json
    strata = report["strata"]
    assert strata["primary_metric"] == "cer" and strata["direction"] == "lower"
    assert strata["by_difficulty"]["hard"]["mean"] == pytest.approx((0.1 + 0.0) / 2)
