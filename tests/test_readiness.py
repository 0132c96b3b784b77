"""``rpx readiness``: combining eval (strata), stability, coherence and cost; task checks;
digests carried along; ``rpx show`` table and Markdown."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from helpers import FIXTURES, depth_pairs, dirs, write_manifest


@pytest.fixture
def reports(rpx, tmp_path: Path) -> dict[str, Path]:
    stems = depth_pairs(tmp_path)
    write_manifest(tmp_path / "m.json", stems)
    out = {"eval": tmp_path / "eval.json", "plain": tmp_path / "plain.json"}
    base = f"eval depth {dirs(tmp_path)}"
    assert rpx(f"{base} --manifest {tmp_path / 'm.json'} -o {out['eval']}").exit_code == 0
    assert rpx(f"{base} -o {out['plain']}").exit_code == 0
    assert rpx(f"{base} --manifest {tmp_path / 'm.json'} --shard 1/2 -o {tmp_path / 'part.json'}"
               ).exit_code == 0
    out["part"] = tmp_path / "part.json"
    provenance = json.loads(out["eval"].read_text())["run_provenance"]
    for name, document in (
        ("stability", {"schema": "rpx.stability", "schema_version": 1, "task": "depth",
                       "warp": "reproject", "ts_score": 0.93, "num_pairs": 12, "sequences": {},
                       "run_provenance": provenance}),
        ("stability_seg", {"schema": "rpx.stability", "schema_version": 1, "task": "segmentation",
                           "warp": "none", "ts_score": 0.5, "num_pairs": 1, "sequences": {},
                           "run_provenance": provenance}),
        ("coherence", {"schema": "rpx.coherence", "schema_version": 1, "sgc": 0.8, "precision": 0.9,
                       "recall": 0.72, "n_pairs": 4, "run_provenance": provenance}),
    ):
        out[name] = tmp_path / f"{name}.json"
        out[name].write_text(json.dumps(document))
    return out


def test_readiness_combines_every_input(rpx, reports) -> None:
    run = rpx(["readiness", "--eval", reports["eval"], "--stability", reports["stability"],
               "--coherence", reports["coherence"], "--latency-ms", "12.5", "--params-m", "25",
               "--model-name", "dpt-small"])
    assert run.exit_code == 0, run.stderr
    ready = run.json
    evaluated = json.loads(reports["eval"].read_text())
    assert ready["schema"] == "rpx.readiness" and ready["task"] == "depth"
    assert ready["model_name"] == "dpt-small" and ready["primary_metric"] == "absrel"
    assert ready["direction"] == "lower" and ready["strata"] == evaluated["strata"]
    wps = evaluated["strata"]["weighted_phase_score"]
    summary = ready["summary"]
    assert summary["s_overall"] == wps["overall"] and summary["delta_int"] == wps["delta_int"]
    assert summary["primary_aggregate"] == evaluated["aggregate"]["absrel"]
    assert (summary["ts_score"], summary["sgc"]) == (0.93, 0.8)
    assert ready["cost"] == {"params_m": 25.0, "flops_g": None, "latency_ms": 12.5, "actmem_gb": None}
    # every input is named with its digest and the digests of the data behind it
    digest = hashlib.sha256(reports["eval"].read_bytes()).hexdigest()
    assert ready["eval"]["sha256"] == digest
    assert ready["run_provenance"]["inputs"]["eval"]["sha256"] == digest
    assert ready["eval"]["inputs"]["manifest"] == \
        evaluated["run_provenance"]["inputs"]["manifest"]["sha256"]
    assert ready["stability"]["sha256"] == hashlib.sha256(reports["stability"].read_bytes()).hexdigest()


def test_a_real_coherence_report_is_accepted(rpx, reports, tmp_path: Path) -> None:
    shelf = FIXTURES / "coherence" / "shelf"
    sgc = tmp_path / "sgc.json"
    made = rpx(["coherence", "--mask-dir", shelf / "mask", "--depth-dir", shelf / "depth", "-o", sgc])
    assert made.exit_code == 0, made.stderr
    run = rpx(["readiness", "--eval", reports["eval"], "--coherence", sgc])
    assert run.exit_code == 0, run.stderr
    assert run.json["coherence"]["sgc"] == json.loads(sgc.read_text())["sgc"]


def test_inputs_must_agree_on_task_and_kind(rpx, reports) -> None:
    run = rpx(["readiness", "--eval", reports["eval"], "--stability", reports["stability_seg"]])
    assert run.exit_code == 1 and run.stdout == ""
    assert "stability_seg.json" in run.stderr and "'segmentation'" in run.stderr
    run = rpx(["readiness", "--eval", reports["stability"]])
    assert run.exit_code == 1 and "is not an rpx.eval report" in run.stderr
    run = rpx(["readiness", "--eval", reports["eval"], "--coherence", reports["stability"]])
    assert run.exit_code == 1 and "is not an rpx.coherence report" in run.stderr
    run = rpx(["readiness", "--eval", reports["part"]])
    assert run.exit_code == 1 and "rpx merge" in run.stderr
    assert rpx(["readiness", "--eval", reports["eval"], "--latency-ms", "-1"]).exit_code == 2


def test_eval_without_manifest_warns_and_leaves_strata_null(rpx, reports) -> None:
    run = rpx(["readiness", "--eval", reports["plain"]])
    assert run.exit_code == 0 and "no strata" in run.stderr
    ready = run.json
    assert ready["strata"] is None and ready["summary"]["s_overall"] is None


def test_gates_on_the_summary(rpx, reports, tmp_path: Path) -> None:
    out = tmp_path / "ready.json"
    run = rpx(["readiness", "--eval", reports["eval"], "--stability", reports["stability"],
               "--require", "summary.ts_score>=0.95", "-o", out])
    assert run.exit_code == 3 and json.loads(out.read_text())["gates"][0]["passed"] is False


def test_show_renders_phase_table_and_coloured_transitions(rpx, reports, tmp_path: Path) -> None:
    out = tmp_path / "ready.json"
    rpx(["readiness", "--eval", reports["eval"], "--stability", reports["stability"],
         "--coherence", reports["coherence"], "--flops-g", "3", "-o", out])
    ready = json.loads(out.read_text())
    table = rpx(["show", out])
    assert table.exit_code == 0
    for text in ("weighted phase score", "absrel", "interaction", "TS (temporal stability)",
                 "SGC", "flops_g"):
        assert text in table.stdout
    md = rpx(["show", out, "--format", "markdown"]).stdout
    wps = ready["strata"]["weighted_phase_score"]
    # absrel is lower-is-better: a positive delta_int is a degradation (red)
    expected = " 🔴" if wps["degrades"] else " 🟢"
    line = next(line for line in md.splitlines() if line.startswith("| delta_int"))
    assert line.endswith(expected + " |")
    assert "| clutter |" in md and "0.93" in md
