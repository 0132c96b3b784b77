"""``rpx compare``: deltas with directions, the paired bootstrap, no-regression gates."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import dirs, write_npy

from rpx_cli.report.compare import (
    check_no_regression,
    compare_reports,
    flatten,
    paired_bootstrap,
    parse_no_regression,
)


def depth_set(root: Path, noise: float, seed: int = 0, n: int = 12) -> None:
    rng = np.random.default_rng(seed)
    for index in range(n):
        gt = np.random.default_rng(index).uniform(1, 9, (8, 8)).astype(np.float32)
        write_npy(root / "gt" / f"s{index:02d}.npy", gt)
        write_npy(root / "pred" / f"s{index:02d}.npy",
                  (gt * np.exp(rng.normal(0, noise, gt.shape))).astype(np.float32))


@pytest.fixture
def two_reports(rpx, tmp_path: Path) -> tuple[Path, Path]:
    paths = []
    for name, noise in (("base", 0.1), ("new", 0.2)):
        depth_set(tmp_path / name, noise)
        out = tmp_path / f"{name}.json"
        assert rpx(f"eval depth --pred-dir {tmp_path / name / 'pred'} "
                   f"--gt-dir {tmp_path / name / 'gt'} -o {out}").exit_code == 0
        paths.append(out)
    return paths[0], paths[1]


def test_compare_reports_directions_and_statuses(rpx, two_reports) -> None:
    base, new = two_reports
    run = rpx(["compare", base, new, "--bootstrap", "500"])
    assert run.exit_code == 0, run.stderr
    document = run.json
    assert document["schema"] == "rpx.compare"
    by_metric = {m["metric"]: m for m in document["metrics"]}
    absrel = by_metric["aggregate.absrel"]
    assert absrel["direction"] == "lower" and absrel["status"] == "regressed"
    assert absrel["delta"] == pytest.approx(absrel["new"] - absrel["base"])
    assert absrel["rel_delta"] == pytest.approx(absrel["delta"] / absrel["base"])
    assert by_metric["aggregate.delta1"]["direction"] == "higher"
    assert by_metric["dataset.n_valid"]["status"] == "unchanged"
    boot = absrel["bootstrap"]
    assert boot["n_shared"] == 12 and boot["significant"] is True  # noise doubled: clearly worse
    assert boot["ci95"][0] > 0 and boot["ci95"][0] <= boot["mean_delta"] <= boot["ci95"][1]
    assert document["summary"]["regressed"] >= 1
    assert "rpx compare" in run.stderr  # the table went to stderr


def test_no_regression_gates(rpx, two_reports) -> None:
    base, new = two_reports
    run = rpx(["compare", base, new, "--require-no-regression", "absrel:1%",
               "--require-no-regression", "dataset.delta3:0.5", "--bootstrap", "0"])
    assert run.exit_code == 3
    gates = run.json["gates"]
    assert [g["passed"] for g in gates] == [False, True]
    assert "beyond tolerance" in gates[0]["message"]
    assert rpx(["compare", base, base, "--require-no-regression", "absrel"]).exit_code == 0
    assert rpx(["compare", base, new, "--require-no-regression", "absrel:x"]).exit_code == 2


def test_different_tasks_or_params_are_refused_unless_forced(rpx, two_reports, tmp_path) -> None:
    base, _ = two_reports
    other = tmp_path / "other.json"
    rpx(f"eval depth {dirs(tmp_path / 'new')} "
        f"--max-depth 5 -o {other}")
    run = rpx(["compare", base, other])
    assert run.exit_code == 1 and "max_depth" in run.stderr
    forced = rpx(["compare", base, other, "--force", "--bootstrap", "0"])
    assert forced.exit_code == 0 and forced.json["params_differ"] == ["max_depth"]


def test_markdown(rpx, two_reports) -> None:
    base, new = two_reports
    run = rpx(["compare", base, new, "--format", "markdown", "--bootstrap", "0", "-q"])
    assert run.exit_code == 0
    assert run.stdout.startswith("### rpx compare: depth")
    first_row = run.stdout.splitlines()[4]
    assert "worse" in first_row  # regressions first


def test_bootstrap_equals_a_plain_loop_over_the_same_resamples() -> None:
    rng = np.random.default_rng(3)
    base = [{"stem": f"s{i}", "m": float(v)} for i, v in enumerate(rng.random(40))]
    new = [{"stem": f"s{i}", "m": float(v) + 0.1} for i, v in enumerate(rng.random(40))]
    new[5]["m"] = None  # a null row is left out of that metric
    got = paired_bootstrap(base, new, ["m"], resamples=300, seed=7)["m"]
    deltas = np.array([(n["m"] - b["m"]) if n["m"] is not None else np.nan
                       for b, n in zip(base, new, strict=True)])
    index = np.random.default_rng(7).integers(0, 40, size=(300, 40))
    means = [np.nanmean(deltas[row]) for row in index]
    assert got["ci95"] == pytest.approx(list(np.percentile(means, [2.5, 97.5])), rel=1e-12)
    assert got["n_shared"] == 39 and got["mean_delta"] == pytest.approx(np.nanmean(deltas))


def test_flatten_and_parse() -> None:
    report = {"aggregate": {"a": 1.0, "b": None}, "dataset": {"per_class": {"x": {"iou": 0.5}},
              "confusion": {"matrix": [[1]]}}, "run_provenance": {"duration_s": 3.0},
              "micro_iou": 0.4, "task": "t"}
    assert flatten(report) == {"aggregate.a": 1.0, "aggregate.b": None,
                               "dataset.per_class.x.iou": 0.5, "micro_iou": 0.4}
    gate = parse_no_regression("absrel:5%")
    assert gate.path == ("aggregate", "absrel") and gate.relative and gate.tolerance == 0.05
    assert parse_no_regression("dataset.miou").tolerance == 0.0
    with pytest.raises(ValueError):
        parse_no_regression("absrel:-1")


def test_gate_on_a_metric_without_direction_fails_with_reason() -> None:
    base = {"aggregate": {"n": 1}, "metric_info": {}}
    result = check_no_regression(base, base, [parse_no_regression("n")])[0]
    assert not result["passed"] and "no direction" in result["message"]
    assert compare_reports(base, base, bootstrap=0, seed=0)[0]["status"] == "unchanged"
    json.dumps(result)
