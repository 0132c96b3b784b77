"""Gates: ``--require`` on evaluations and ``rpx check`` on existing reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXTURES, dirs

from rpx_cli.report.gates import check, parse_gate, parse_path

DEPTH = FIXTURES / "depth" / "indoor"
SALIENCY = FIXTURES / "saliency-mb" / "original-xyz"
REPORT = {"micro_iou": 0.5, "aggregate": {"absrel": 0.1, "n": 3, "empty": None},
          "dataset": {"per_class": {"traffic.light": {"iou": 0.7}, "car": {"iou": 0.2}}},
          "rows": [{"iou": 1.0}]}


def results(*exprs: str) -> list[dict]:
    return check(REPORT, [parse_gate(e) for e in exprs])


def test_paths_operators_and_bare_names() -> None:
    assert parse_path('dataset.per_class["traffic.light"].iou') == (
        "dataset", "per_class", "traffic.light", "iou")
    got = results("aggregate.absrel<=0.1", "absrel<0.1", "micro_iou>=0.5", "aggregate.n==3",
                  'dataset.per_class["traffic.light"].iou>0.6', "dataset.per_class.car.iou>0.6",
                  "rows.0.iou == 1")
    assert [g["passed"] for g in got] == [True, False, True, True, True, False, True]
    assert got[1]["message"] == "aggregate.absrel = 0.1 fails < 0.1"


def test_missing_and_null_fail_with_a_reason() -> None:
    missing, null, nested = results("aggregate.nope>0", "aggregate.empty>0", "dataset.per_class>0")
    assert (missing["passed"], missing["value"], missing["missing"]) == (False, None, True)
    assert missing["message"].startswith("no such key aggregate.nope in the report")
    assert null["message"] == "aggregate.empty is null" and not null["passed"]
    assert "not a number" in nested["message"] and not nested["passed"]


@pytest.mark.parametrize("bad", ["absrel", "absrel<<1", "absrel<=x", "<=1", "absrel<=inf",
                                 "absrel=1", "a..b<1"])
def test_malformed_expressions(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_gate(bad)


def test_require_on_eval_writes_report_then_exits_3(rpx, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    run = rpx(f"eval depth {dirs(DEPTH)} -o {out} "
              "--require aggregate.absrel<=0.5 --require dataset.delta1>=0.99")
    assert run.exit_code == 3
    report = json.loads(out.read_text())
    assert [g["passed"] for g in report["gates"]] == [True, False]
    assert "gate failed: dataset.delta1>=0.99" in run.stderr and "1 of 2 gate(s) failed" in run.stderr
    ok = rpx(f"eval depth {dirs(DEPTH)} --require absrel<=0.5")
    assert ok.exit_code == 0 and ok.json["gates"][0]["passed"]
    assert ok.json["run_provenance"]["args"]["require"] == ["absrel<=0.5"]


def test_require_on_saliency_top_level_key(rpx) -> None:
    run = rpx(f"saliency-mb {dirs(SALIENCY)} "
              "--block-size 2 --require micro_iou>=0.6")
    assert run.exit_code == 3 and run.json["gates"][0]["value"] == 0.5


def test_malformed_require_is_a_usage_error_and_writes_nothing(rpx, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    run = rpx(f"eval depth {dirs(DEPTH)} -o {out} "
              "--require absrel")
    assert run.exit_code == 2 and not out.exists()


def test_check_existing_report(rpx, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    rpx(f"eval depth {dirs(DEPTH)} -o {out}")
    ok = rpx(["check", out, "--require", "absrel<0.5", "--require", "dataset.n_valid>1000"])
    assert ok.exit_code == 0
    assert json.loads(ok.stdout)["passed"] is True
    bad = rpx(["check", out, "--require", "aggregate.silog<0.1"])
    assert bad.exit_code == 3 and json.loads(bad.stdout)["gates"][0]["passed"] is False
    assert rpx(["check", out]).exit_code == 2  # --require is required
    assert rpx(["check", tmp_path / "none.json", "--require", "a<1"]).exit_code == 1


# --- a typo is a mistake, not a regression (issue 30) ----------------------------------------


def test_a_missing_key_names_the_nearest_ones() -> None:
    [gate] = results("aggregate.absrell<0.2")
    assert gate["message"] == ("no such key aggregate.absrell in the report; did you mean "
                               "aggregate.absrel?")
    [far] = results("dataset.zzzz<1")
    assert far["message"] == "no such key dataset.zzzz in the report"


def test_rpx_check_with_a_typo_exits_2_and_ends_with_the_verdict(rpx, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    rpx(f"eval depth {dirs(DEPTH)} -o {out}")
    typo = rpx(["check", out, "--require", "aggregate.absrell<=0.5", "--require", "absrel<0.5"])
    assert typo.exit_code == 2
    lines = typo.stderr.strip().splitlines()
    assert "did you mean aggregate.absrel" in lines[0]
    assert lines[-1] == "rpx: check FAIL — 1 of 2 gate(s) name no key of the report (see above); exit 2"
    assert "Usage:" not in typo.stderr
    failed = rpx(["check", out, "--require", "absrel<0.01"])
    assert failed.exit_code == 3
    assert failed.stderr.strip().splitlines()[-1] == "rpx: check FAIL — 1 of 1 gate(s) failed; exit 3"
    passed = rpx(["check", out, "--require", "absrel<0.5"])
    assert passed.exit_code == 0
    assert passed.stderr.strip().splitlines()[-1] == "rpx: check PASS — all 1 gate(s) passed"


def test_eval_require_with_a_typo_writes_the_report_and_exits_2(rpx, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    run = rpx(f"eval depth {dirs(DEPTH)} -o {out} --require aggregate.delta_1>=0.5")
    assert run.exit_code == 2 and out.exists()
    gate = json.loads(out.read_text())["gates"][0]
    assert gate["missing"] is True and "did you mean aggregate.delta1" in gate["message"]


def test_compare_ends_with_the_verdict_and_a_typo_exits_2(rpx, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    rpx(f"eval depth {dirs(DEPTH)} -o {out}")
    same = rpx(["compare", out, out, "--require-no-regression", "absrel", "--bootstrap", "0"])
    assert same.exit_code == 0
    last = same.stderr.strip().splitlines()[-1]
    assert last.startswith("rpx: compare (0 regressed (0 significant), 0 improved (0 significant)")
    assert last.endswith("PASS — all 1 no-regression gate(s) passed")
    typo = rpx(["compare", out, out, "--require-no-regression", "absrell", "--bootstrap", "0"])
    assert typo.exit_code == 2
    assert "no such key aggregate.absrell in BASE; did you mean aggregate.absrel" in typo.stderr
    assert typo.stderr.strip().splitlines()[-1].endswith("name no key of the report (see above); exit 2")


def test_a_value_a_rounding_away_from_its_bound_is_written_in_full() -> None:
    """``%g`` writes 1.0000000000000002 as 1: a failed ``<=1`` must not read "1 fails <= 1"."""
    report = {"aggregate": {"mAP": 1.0000000000000002, "AP": 0.5}}
    failed, passed = check(report, [parse_gate("mAP<=1"), parse_gate("AP>=0.25")])
    assert not failed["passed"] and failed["message"] == "aggregate.mAP = 1.0000000000000002 fails <= 1.0"
    assert passed["message"] == "aggregate.AP = 0.5 satisfies >= 0.25"
