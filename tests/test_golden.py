"""Golden cases: every ``fixtures/<name>/<case>/`` folder, run through the CLI.

``<name>`` is a registered task (run as its command: ``rpx eval depth``, ``rpx saliency-mb``)
or a workflow command (``stability``). A case holds ``pred/``, ``gt/``, ``args`` (flags on
one line; it may name other folders with ``--pred-dir``/``--gt-dir``, or input files) and
``expected.json`` (the report without ``run_provenance``). ``pytest --update-golden``
rewrites expected.json for review; it never passes silently. Fixture roots are
``fixtures/`` and ``tests/fixtures/`` (tasks defined only in the test suite).

A run is compared with expected.json to a relative 1e-6 on floats (CPU-specific SIMD paths
move the last digits between machines: ``helpers.GOLDEN_RELATIVE``), everything else
exactly; shards and ``--jobs 2`` are compared with a single run on this machine exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import assert_matches_golden, command_of, golden_cases

from rpx_cli.tasks import TASKS

CASES = golden_cases()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_golden(case: Path, rpx, monkeypatch: pytest.MonkeyPatch, request) -> None:
    monkeypatch.chdir(case)
    run = rpx(command_of(case))
    assert run.exit_code == 0, run.stderr
    report = run.json
    report.pop("run_provenance")
    expected_path = case / "expected.json"
    if request.config.getoption("--update-golden"):
        expected_path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        pytest.skip("expected.json rewritten: review the diff")
    assert_matches_golden(report, json.loads(expected_path.read_text()))


TASK_CASES = [case for case in CASES if case.parent.name in TASKS]
SAME = ("aggregate", "dataset", "rows", "params", "metric_info", "errors", "unpaired", "n_pairs")


@pytest.mark.parametrize("case", TASK_CASES, ids=[f"{c.parent.name}/{c.name}" for c in TASK_CASES])
def test_golden_case_is_the_same_in_shards_and_with_two_jobs(case: Path, rpx, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Every task's golden cases, from registration alone: two --shard parts merged with
    `rpx merge`, and a run with --jobs 2, equal the single run exactly (which matches
    expected.json)."""
    monkeypatch.chdir(case)
    single = rpx(command_of(case))
    assert single.exit_code == 0, single.stderr
    expected = single.json
    assert_matches_golden({k: v for k, v in expected.items() if k != "run_provenance"},
                          json.loads((case / "expected.json").read_text()))
    parts = [str(tmp_path / f"part{k}.json") for k in (1, 2)]
    for k, part in enumerate(parts, 1):
        assert rpx([*command_of(case), "--shard", f"{k}/2", "-o", part]).exit_code == 0
    merged = rpx(["merge", *parts])
    assert merged.exit_code == 0, merged.stderr
    two = rpx([*command_of(case), "--jobs", "2"])
    assert two.exit_code == 0, two.stderr
    for report in (merged.json, two.json):
        for key in SAME:
            assert report.get(key) == expected.get(key), key


def test_every_case_has_an_expected_report() -> None:
    assert CASES, "no golden cases found"
    missing = [str(c) for c in CASES if not (c / "expected.json").is_file()]
    assert not missing, f"run pytest --update-golden and review: {missing}"


def test_every_registered_task_has_a_golden_case() -> None:
    """Registering a task brings its golden coverage: a task without a case fails here."""
    covered = {case.parent.name for case in CASES}
    missing = sorted(set(TASKS) - covered)
    assert not missing, f"tasks without a fixtures/<task>/<case>/args golden case: {missing}"


def test_the_golden_comparison_allows_last_digits_only() -> None:
    from helpers import golden_differences

    expected = {"a": 0.11674589326962385, "n": 3, "rows": [{"x": None, "s": "car"}], "z": 0.0}
    assert golden_differences({"a": 0.11674589142705746, "n": 3, "rows": [{"x": None, "s": "car"}],
                               "z": 1e-15}, expected) == []
    for changed in ({"a": 0.116747}, {"n": 4}, {"rows": [{"x": 0.0, "s": "car"}]},
                    {"rows": []}, {"z": 1e-9}, {"extra": 1}):
        assert golden_differences({**expected, **changed}, expected), changed
    assert golden_differences({"a": 0.1}, expected)  # keys missing
