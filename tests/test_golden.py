"""Golden cases: every ``fixtures/<command>/<case>/`` folder, run through the CLI.

A case holds ``pred/``, ``gt/``, ``args`` (flags on one line; it may name other folders
with ``--pred-dir``/``--gt-dir``) and ``expected.json`` (the report without
``run_provenance``). ``pytest --update-golden`` rewrites expected.json for
review; it never passes silently.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from helpers import FIXTURES

EVAL_TASKS = {"depth", "segmentation", "detection", "grounding", "pose", "keypoints", "tracking",
              "sparse-depth", "nvs"}
CASES = sorted(p.parent for p in FIXTURES.glob("*/*/args"))


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_golden(case: Path, rpx, monkeypatch: pytest.MonkeyPatch, request) -> None:
    monkeypatch.chdir(case)
    command = ["eval", case.parent.name] if case.parent.name in EVAL_TASKS else [case.parent.name]
    args = shlex.split((case / "args").read_text())
    if not {"--pred-dir", "--coco-gt", "--mask-dir"} & set(args):  # coherence: --mask-dir
        args = ["--pred-dir", "pred", "--gt-dir", "gt", *args]
    run = rpx([*command, *args])
    assert run.exit_code == 0, run.stderr
    report = run.json
    report.pop("run_provenance")
    expected_path = case / "expected.json"
    if request.config.getoption("--update-golden"):
        expected_path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        pytest.skip("expected.json rewritten: review the diff")
    assert report == json.loads(expected_path.read_text())


def test_every_case_has_an_expected_report() -> None:
    assert CASES, "no golden cases found"
    missing = [str(c) for c in CASES if not (c / "expected.json").is_file()]
    assert not missing, f"run pytest --update-golden and review: {missing}"
