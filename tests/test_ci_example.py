"""``examples/github-actions-eval.yml``: installs rpx-eval (never the unrelated ``rpx``),
keeps the report when a gate fails, and every rpx command in it runs on the fixtures."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import FIXTURES, ROOT, run_shell_line, shell_commands

yaml = pytest.importorskip("yaml")

WORKFLOW = ROOT / "examples" / "github-actions-eval.yml"
# the workflow's placeholders for the user's data -> the committed fixtures
PATHS = {"runs/depth": FIXTURES / "depth" / "indoor" / "pred",
         "data/depth": FIXTURES / "depth" / "indoor" / "gt"}
BARE_RPX = re.compile(r"pip install\s+(-\S+\s+)*['\"]?rpx(['\"]|\s|$|[<>=\[])")


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def steps_of(workflow: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(job, step)`` in the order the jobs run (``needs`` first)."""
    jobs, ordered = workflow["jobs"], []
    while len(ordered) < len(jobs):
        for name, job in jobs.items():
            needs = job.get("needs", [])
            needs = [needs] if isinstance(needs, str) else needs
            if name not in ordered and all(need in ordered for need in needs):
                ordered.append(name)
    return [(name, step) for name in ordered for step in jobs[name]["steps"]]


def test_installs_rpx_eval_from_the_repository_never_the_unrelated_rpx(workflow) -> None:
    package = workflow["env"]["RPX_PACKAGE"]
    assert package.startswith("rpx-eval @ git+https://") or package.endswith(".whl")
    assert not BARE_RPX.search(WORKFLOW.read_text())
    for name, job in workflow["jobs"].items():
        runs = [step["run"] for step in job["steps"] if "run" in step]
        if any("rpx " in run for run in runs):
            assert any('pip install "$RPX_PACKAGE"' in run for run in runs), name


def test_every_job_that_reads_the_repository_checks_it_out(workflow) -> None:
    for name, job in workflow["jobs"].items():
        uses = [step.get("uses", "") for step in job["steps"]]
        assert uses and uses[0].startswith("actions/checkout@"), name


def test_the_report_is_kept_when_a_gate_fails(workflow) -> None:
    steps = workflow["jobs"]["report"]["steps"]
    upload = [i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload and steps[upload[-1]]["if"] == "always()"
    assert steps[upload[-1]]["with"]["path"] == "report.json"
    gates = [i for i, s in enumerate(steps) if "rpx check" in s.get("run", "")
             or "rpx compare" in s.get("run", "")]
    assert gates and all(steps[i]["if"].startswith("always()") for i in gates)
    # the baseline is fetched as the artifact the same workflow uploads on main
    fetch = next(s for s in steps if "gh run download" in s.get("run", ""))
    assert "--name report" in fetch["run"] and "baseline" in fetch["run"]


def test_every_rpx_command_runs_on_the_fixtures(rpx, workflow, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    # the baseline the workflow downloads: main's report, here one unsharded run
    baseline = tmp_path / "baseline" / "report.json"
    baseline.parent.mkdir()
    assert rpx(["eval", "depth", "--pred-dir", PATHS["runs/depth"], "--gt-dir", PATHS["data/depth"],
                "-o", baseline]).exit_code == 0
    ran: list[tuple[str, int]] = []
    for job, step in steps_of(workflow):
        if "rpx " not in step.get("run", ""):
            continue
        matrix = workflow["jobs"][job].get("strategy", {}).get("matrix", {})
        for value in matrix.get("shard", [None]):
            text = step["run"].replace("${{ matrix.shard }}", str(value))
            for placeholder, path in PATHS.items():
                text = text.replace(placeholder, str(path))
            for line in shell_commands(text):
                ran += run_shell_line(rpx, line, tmp_path)
    commands = [command.split()[0:2] for command, _ in ran]
    assert ["rpx", "eval"] in commands and ["rpx", "merge"] in commands
    assert {"show", "compare", "check"} <= {c[1] for c in commands}
    assert all(code == 0 for _, code in ran), ran  # gates pass, no regression against main
    assert "### rpx depth report" in summary.read_text()
    assert "### rpx compare: depth" in summary.read_text()
    # a regression against main fails the comparison step (exit 3), as the step's name says
    worse = json.loads(baseline.read_text())
    for row in worse["rows"]:
        row["absrel"] /= 2
    worse["aggregate"]["absrel"] /= 2
    baseline.write_text(json.dumps(worse))
    compare = next(command for command, _ in ran if command.startswith("rpx compare"))
    assert run_shell_line(rpx, compare, tmp_path)[0][1] == 3
