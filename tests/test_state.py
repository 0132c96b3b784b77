"""The State API (``rpx_cli.api``): batches of pairs evaluated anywhere, folded with an exact
associative merge, give the single run's report; a ``--shard`` part is the same state on
disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT, without_provenance

from rpx_cli import api
from rpx_cli.errors import EvaluationFailed, InputError

# (task, pred, gt, parameters and auxiliary folders): the golden cases' settings
CASES = {
    "depth": ("depth/indoor/pred", "depth/indoor/gt",
              {"max_depth": 10.0, "ranges": "0:2,2:5,5:"}),
    "detection": ("detection/shelf/pred", "detection/shelf/gt", {"conf_threshold": 0.4}),
    "segmentation3d": ("segmentation3d/vectors/pred", "segmentation3d/vectors/gt",
                       {"points_dir": "segmentation3d/vectors/points", "ranges": "0:50,50:90"}),
    "tracking": ("tracking/mot/pred", "tracking/mot/gt", {}),
    "cer": (str(ROOT / "tests/fixtures/cer/lines/pred"), str(ROOT / "tests/fixtures/cer/lines/gt"),
            {"normalise_space": True}),
}


def plan_of(task: str) -> tuple[api.Plan, dict]:
    """The plan and the report `evaluate_dirs` gives for the same settings."""
    pred, gt, options = CASES[task]
    pred, gt = (str(FIXTURES / path) for path in (pred, gt))
    aux = {name: str(FIXTURES / value) for name, value in options.items() if name.endswith("_dir")}
    params = {name: value for name, value in options.items() if name not in aux}
    for name, value in list(params.items()):
        if name == "ranges":  # the CLI's --range, as evaluate_dirs takes it
            params[name] = [tuple(float(x) if x else None for x in part.split(":"))
                            for part in value.split(",")]
    plan = api.plan(task, pred, gt, aux=aux, **params)
    want = api.evaluate_dirs(task, pred, gt, jobs=1, digest_cache=False, **aux, **params)
    return plan, want


@pytest.fixture(params=sorted(CASES))
def task_plan(request) -> tuple[api.Plan, dict]:
    return plan_of(request.param)


def test_halves_merged_in_both_orders_equal_the_single_run(task_plan) -> None:
    plan, want = task_plan
    assert len(plan.pairs) >= 2
    half = len(plan.pairs) // 2
    first = api.evaluate_batch(plan, plan.pairs[:half])
    second = api.evaluate_batch(plan, plan.pairs[half:])
    assert len(first) == half and len(second) == len(plan.pairs) - half
    for merged in (first.merge(second), second.merge(first), second | first):
        assert api.finalize(merged) == without_provenance(want)
    report = api.state_report(first | second)
    assert without_provenance(report) == without_provenance(want)
    for name, entry in want["run_provenance"]["inputs"].items():
        assert report["run_provenance"]["inputs"][name]["sha256"] == entry["sha256"], name


def test_merge_is_associative_and_batches_can_be_any_size(task_plan) -> None:
    plan, want = task_plan
    states = [api.evaluate_batch(plan, batch) for batch in plan.batches(1)]
    assert len(states) == len(plan.pairs)
    left = states[0]
    for state in states[1:]:
        left = left | state
    right = states[-1]
    for state in reversed(states[:-1]):
        right = state | right
    middle = api.merge_states([api.merge_states(states[::2]), api.merge_states(states[1::2])])
    for merged in (left, right, middle, api.merge_states(states[::-1])):
        assert api.finalize(merged) == without_provenance(want)
    assert api.finalize(api.evaluate_batch(plan, jobs=2)) == without_provenance(want)


def test_a_state_travels_as_json(task_plan) -> None:
    plan, want = task_plan
    half = len(plan.pairs) // 2
    states = [api.evaluate_batch(plan, plan.pairs[:half]), api.evaluate_batch(plan, plan.pairs[half:])]
    sent = [api.State.decode(json.loads(json.dumps(state.encode()))) for state in states]
    assert api.finalize(api.merge_states(sent)) == without_provenance(want)


def test_a_stem_in_two_states_is_an_error() -> None:
    plan, _ = plan_of("depth")
    a = api.evaluate_batch(plan, plan.pairs[:2])
    b = api.evaluate_batch(plan, plan.pairs[1:])
    with pytest.raises(InputError, match="two states evaluated the stem 'frame001'"):
        a.merge(b)
    other, _ = plan_of("detection")
    with pytest.raises(InputError, match="different evaluations"):
        a.merge(api.evaluate_batch(other, other.pairs[:1]))
    changed = api.plan("depth", plan.inputs["pred_dir"], plan.inputs["gt_dir"], max_depth=5.0)
    with pytest.raises(InputError, match="their params differ"):
        a.merge(api.evaluate_batch(changed, changed.pairs[2:]))


def test_an_unreadable_pair_is_kept_and_the_final_report_refused(tmp_path: Path) -> None:
    import shutil

    for side in ("pred", "gt"):
        shutil.copytree(FIXTURES / "depth" / "indoor" / side, tmp_path / side)
    broken = next((tmp_path / "pred").glob("frame002.*"))
    broken.write_bytes(b"broken")
    plan = api.plan("depth", tmp_path / "pred", tmp_path / "gt", max_depth=10.0)
    states = [api.evaluate_batch(plan, batch) for batch in plan.batches(2)]
    merged = api.merge_states(states)
    assert [error.stem for error in merged.errors] == ["frame002"]
    with pytest.raises(EvaluationFailed):
        api.finalize(merged)
    skipping = api.plan("depth", tmp_path / "pred", tmp_path / "gt", max_depth=10.0,
                        on_error="skip")
    report = api.finalize(api.merge_states(api.evaluate_batch(skipping, batch)
                                           for batch in skipping.batches(3)))
    # the broken prediction is scored as an empty one (SPEC §2), its error kept
    assert report["n_pairs"] == 4 and [(e["stem"], e["effect"]) for e in report["errors"]] == \
        [("frame002", "empty_prediction")]


def test_a_shard_part_is_a_state(rpx, tmp_path: Path) -> None:
    plan, want = plan_of("detection")
    pred, gt = plan.inputs["pred_dir"], plan.inputs["gt_dir"]
    part = tmp_path / "part1.json"
    run = rpx(f"eval detection --pred-dir {pred} --gt-dir {gt} --conf-threshold 0.4 "
              f"--shard 1/2 -o {part}")
    assert run.exit_code == 0, run.stderr
    state = api.State.read(str(part))
    assert 0 < len(state) < len(plan.pairs)
    rest = [pair for pair in plan.pairs if pair.stem not in set(state.stems)]
    merged = state | api.evaluate_batch(plan, rest)  # a part on disk with a batch in memory
    assert api.finalize(merged) == without_provenance(want)
    with pytest.raises(InputError, match="two states evaluated the stem"):
        state.merge(api.evaluate_batch(plan))
    whole = tmp_path / "whole.json"
    assert rpx(f"eval detection --pred-dir {pred} --gt-dir {gt} -o {whole}").exit_code == 0
    with pytest.raises(InputError, match="not a --shard partial report"):
        api.State.read(str(whole))


def test_the_documented_example_runs() -> None:
    """docs/distributed.md's State API example, as a script, gives the CLI's number."""
    import re
    import subprocess
    import sys

    page = (ROOT / "docs" / "distributed.md").read_text()
    [code] = [block for block in re.findall(r"```python\n(.*?)```", page, re.S)
              if block.startswith("# tests/test_state.py runs this block")]
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    _, want = plan_of("depth")
    assert float(done.stdout.strip().splitlines()[-1]) == want["aggregate"]["absrel"]
