"""Strata: ESD, weighted phase score, STR, bootstrap intervals, and
``rpx eval --manifest`` end to end (manifest formats, problems, shards)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXTURES, depth_pairs, dirs, write_manifest

from rpx_cli.api import Invocation, RunOptions, Strata, merge_reports, run_evaluation
from rpx_cli.deploy.strata import compute_strata

W = {"easy": 0.25, "medium": 0.35, "hard": 0.40}


def strata(values, phases, difficulties, direction="higher", **kwargs):
    return compute_strata(values, phases, difficulties, metric="m", direction=direction, **kwargs)


def test_weighted_phase_score_reference_cases() -> None:
    full = strata([0.1, 0.2, 0.3], ["clutter"] * 3, ["easy", "medium", "hard"])
    assert full["weighted_phase_score"]["clutter"] == pytest.approx(0.25 * 0.1 + 0.35 * 0.2 + 0.40 * 0.3)
    assert full["weighted_phase_score"]["clutter"] == pytest.approx(0.215)
    no_medium = strata([0.1, 0.3], ["clutter"] * 2, ["easy", "hard"])
    assert no_medium["weighted_phase_score"]["clutter"] == pytest.approx((0.25 * 0.1 + 0.40 * 0.3) / 0.65)
    assert no_medium["by_phase_difficulty"]["clutter"]["medium"] == {"mean": None, "n": 0}
    phases = strata([0.1, 0.2, 0.3, 0.2, 0.3, 0.4, 0.1, 0.1, 0.1],
                    ["clutter"] * 3 + ["interaction"] * 3 + ["clean"] * 3,
                    ["easy", "medium", "hard"] * 3)
    wps = phases["weighted_phase_score"]
    assert (wps["clutter"], wps["interaction"], wps["clean"]) == pytest.approx((0.215, 0.315, 0.1))
    assert wps["overall"] == pytest.approx((0.215 + 0.315 + 0.1) / 3)
    assert wps["delta_int"] == pytest.approx(0.1) and wps["delta_rec"] == pytest.approx(-0.215)
    # higher is better: a rise into interaction is no degradation, a fall after it no recovery
    assert wps["degrades"] is False and wps["recovers"] is False
    assert phases["str"]["c_to_i"] == pytest.approx(0.3 - 0.2)  # plain phase means .2, .3, .1
    assert phases["str"]["i_to_l"] == pytest.approx(0.1 - 0.3)


def test_direction_decides_degrades_and_recovers() -> None:
    args = ([1.0, 2.0, 1.5], ["clutter", "interaction", "clean"], ["easy"] * 3)
    higher = strata(*args, direction="higher")["weighted_phase_score"]
    lower = strata(*args, direction="lower")["weighted_phase_score"]
    assert higher["delta_int"] == lower["delta_int"] == 1.0
    assert (higher["degrades"], higher["recovers"]) == (False, False)
    assert (lower["degrades"], lower["recovers"]) == (True, True)  # error went up, then down
    assert strata(*args, direction="lower")["direction"] == "lower"
    flat = strata([1.0, 1.0, 1.0], args[1], args[2])["weighted_phase_score"]
    assert flat["delta_int"] == 0.0 and flat["degrades"] is False and flat["recovers"] is False


def test_empty_buckets_are_null_not_zero() -> None:
    out = strata([0.5, 0.7], ["clutter", "clean"], ["hard", "hard"])
    wps = out["weighted_phase_score"]
    assert wps["interaction"] is None and wps["delta_int"] is None and wps["delta_rec"] is None
    assert wps["overall"] == pytest.approx((0.5 + 0.7) / 2)  # the mean of the phases present
    assert wps["degrades"] is None and out["by_phase"]["interaction"] == {"mean": None, "n": 0}
    assert out["by_difficulty"]["easy"] == {"mean": None, "n": 0}


def test_buckets_equal_plain_means_and_count_non_null() -> None:
    rng = np.random.default_rng(0)
    n = 60
    values = [None if rng.random() < 0.1 else float(v) for v in rng.random(n)]
    phases = [["clutter", "interaction", "clean", None][k] for k in rng.integers(0, 4, n)]
    diffs = [["easy", "medium", "hard", None][k] for k in rng.integers(0, 4, n)]
    out = strata(values, phases, diffs)
    for d in ("easy", "medium", "hard"):
        chosen = [v for v, dd in zip(values, diffs, strict=True) if dd == d and v is not None]
        assert out["by_difficulty"][d]["n"] == len(chosen)
        assert out["by_difficulty"][d]["mean"] == pytest.approx(np.mean(chosen))
    for p in ("clutter", "interaction", "clean"):
        cells = {d: [v for v, pp, dd in zip(values, phases, diffs, strict=True)
                     if pp == p and dd == d and v is not None] for d in W}
        expected = sum(W[d] * np.mean(c) for d, c in cells.items() if c) / sum(
            W[d] for d, c in cells.items() if c)
        assert out["weighted_phase_score"][p] == pytest.approx(expected)
        for d, c in cells.items():
            assert out["by_phase_difficulty"][p][d]["n"] == len(c)
    assert out["n_unassigned"] == sum(1 for p, d in zip(phases, diffs, strict=True)
                                      if p is None or d is None)


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(1.0, 0.3, 300).tolist()
    phases = (["clutter", "interaction", "clean"] * 100)
    diffs = (["easy"] * 3 + ["medium"] * 3 + ["hard"] * 3) * 33 + ["easy"] * 3
    first = strata(values, phases, diffs, bootstrap=400, seed=7)
    again = strata(values, phases, diffs, bootstrap=400, seed=7)
    other = strata(values, phases, diffs, bootstrap=400, seed=8)
    assert first == again and first != other
    for p in ("clutter", "interaction", "clean"):
        low, high = first["weighted_phase_score"]["ci95"][p]
        assert low < first["weighted_phase_score"][p] < high
        low, high = first["by_phase"][p]["ci95"]
        # ~100 values of sd 0.3: the 95 % interval of the mean is about ±1.96 * 0.03
        assert 0.08 < high - low < 0.16
    assert first["bootstrap"]["replicates"] == 400


# --------------------------------------------------------------------------- eval --manifest


def test_eval_manifest_strata_match_rows(rpx, tmp_path: Path) -> None:
    stems = depth_pairs(tmp_path)
    write_manifest(tmp_path / "m.json", stems)
    report = rpx(f"eval depth {dirs(tmp_path)} "
                 f"--manifest {tmp_path / 'm.json'}").json
    rows = {row["stem"]: row["absrel"] for row in report["rows"]}
    expected = strata([rows[s] for s in stems],
                      [["clutter", "interaction", "clean"][i % 3] for i in range(9)],
                      [["easy", "medium", "hard"][i // 3 % 3] for i in range(9)], direction="lower")
    got = report["strata"]
    assert got["primary_metric"] == "absrel" and got["direction"] == "lower"
    assert got["weighted_phase_score"] == {**expected["weighted_phase_score"]}
    assert got["problems"] == [] and report["params"]["strata"]["manifest"].endswith("m.json")
    manifest = report["run_provenance"]["inputs"]["manifest"]
    assert manifest["sha256"] == hashlib.sha256((tmp_path / "m.json").read_bytes()).hexdigest()
    no_rows = rpx(f"eval depth {dirs(tmp_path)} "
                  f"--manifest {tmp_path / 'm.json'} --no-rows").json
    assert "rows" not in no_rows and no_rows["strata"] == got


def test_rpx_manifest_jsonl_and_primary_metric(rpx, tmp_path: Path) -> None:
    stems = depth_pairs(tmp_path)
    write_manifest(tmp_path / "rpx.json", stems, key="id", phases=[0, 1, 2])
    lines = [json.dumps({"stem": s, "phase": ["clutter", "interaction", "clean"][i % 3],
                         "difficulty": ["easy", "medium", "hard"][i // 3 % 3]}) for i, s in enumerate(stems)]
    (tmp_path / "m.jsonl").write_text("\n".join(lines) + "\n")
    base = f"eval depth {dirs(tmp_path)}"
    a = rpx(f"{base} --manifest {tmp_path / 'rpx.json'}").json["strata"]
    b = rpx(f"{base} --manifest {tmp_path / 'm.jsonl'}").json["strata"]
    assert a == b
    delta = rpx(f"{base} --manifest {tmp_path / 'm.jsonl'} --primary-metric delta1").json["strata"]
    assert delta["primary_metric"] == "delta1" and delta["direction"] == "higher"
    bad = rpx(f"{base} --manifest {tmp_path / 'm.jsonl'} --primary-metric nope")
    assert bad.exit_code == 2 and "not a metric of depth" in bad.stderr


def test_manifest_problems_fail_by_default_and_are_listed_with_skip(rpx, tmp_path: Path) -> None:
    stems = depth_pairs(tmp_path)
    samples = [{"stem": s, "phase": "clutter", "difficulty": "easy"} for s in stems[1:]]
    samples += [{"stem": "ghost", "phase": "clean", "difficulty": "hard"},
                {"stem": stems[2], "phase": "clutter", "difficulty": "easy"}]
    samples[0]["phase"] = "lunch"
    (tmp_path / "m.json").write_text(json.dumps({"samples": samples}))
    base = (f"eval depth {dirs(tmp_path)} "
            f"--manifest {tmp_path / 'm.json'}")
    run = rpx(base)
    assert run.exit_code == 1 and run.stdout == "" and "m.json" in run.stderr
    assert "unknown phase 'lunch'" in run.stderr and "Traceback" not in run.stderr
    report = rpx(f"{base} --missing skip").json
    problems = " | ".join(report["strata"]["problems"])
    assert "unknown phase 'lunch'" in problems and "listed twice" in problems
    assert "have no manifest entry" in problems and "'ghost'" in problems
    assert report["strata"]["n_unassigned"] == 2  # s00 (no entry) and s01 (unknown phase)


def test_sharded_manifest_runs_merge_exactly(tmp_path: Path) -> None:
    stems = depth_pairs(tmp_path, 12)
    write_manifest(tmp_path / "m.json", stems)
    params = {"depth_scale": 1000.0, "min_depth": None, "max_depth": None, "ranges": [],
              "align": "none", "resize_pred": None}
    strata = Strata(str(tmp_path / "m.json"), bootstrap=50, seed=3)
    single = run_evaluation("depth", str(tmp_path / "pred"), str(tmp_path / "gt"), params,
                            RunOptions(strata=strata, jobs=1)).report
    parts = []
    for k in (1, 2, 3):
        part = run_evaluation("depth", str(tmp_path / "pred"), str(tmp_path / "gt"), params,
                              RunOptions(strata=strata, jobs=1, shard=(k, 3))).report
        assert "strata" not in part and "strata" in part["state"]
        parts.append((f"p{k}.json", json.loads(json.dumps(part)), "0" * 64))
    merged = merge_reports(parts, invocation=Invocation("rpx merge", [], {}))
    assert merged["strata"] == single["strata"]


def test_primary_metric_of_a_skipped_family_is_refused(rpx, tmp_path: Path) -> None:
    shelf = FIXTURES / "detection" / "shelf"
    write_manifest(tmp_path / "m.json", sorted(p.stem for p in (shelf / "gt").iterdir()))
    base = (f"eval detection {dirs(shelf)} "
            f"--manifest {tmp_path / 'm.json'}")
    run = rpx(f"{base} --metrics coco")  # f1 comes from the rows family
    assert run.exit_code == 2 and "family 'rows'" in run.stderr
    assert rpx(f"{base} --metrics rows,coco").json["strata"]["by_phase"]["clutter"]["n"] > 0
