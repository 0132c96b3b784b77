"""``--on-error skip`` never raises a score (SPEC §2; issue 30.2): a prediction that cannot be
read — or that cannot be evaluated against a GT that can — is scored as an empty prediction,
exactly as ``--missing empty`` scores a missing one; only a GT that cannot be read removes a
pair. Driven over every registered task from its golden cases, so a new task is covered."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from helpers import command_of, golden_cases, write_json

from rpx_cli.tasks import TASKS

BROKEN = b"\x00\x01 not a prediction \xff"
SAME = ("aggregate", "dataset", "rows", "n_pairs")


def _folder_case(task_name: str) -> Path | None:
    """The task's first golden case that reads two folders (not input files)."""
    task = TASKS[task_name]
    files = {option.flag for option in task.file_inputs}
    for case in golden_cases():
        if case.parent.name == task_name and not files & set(shlex.split((case / "args").read_text())):
            return case
    return None


FOLDER_TASKS = [name for name in sorted(TASKS) if _folder_case(name) is not None]


def _pred_flag(task_name: str) -> str:
    return "--" + TASKS[task_name].input_names[0].replace("_", "-")


def _with_pred_dir(case: Path, argv: list[str], flag: str, pred_dir: Path) -> list[str]:
    """``argv`` (a case's command, run from ``case``) with its prediction folder replaced
    and every other relative path made absolute."""
    out = list(argv)
    at = out.index(flag)
    out[at + 1] = str(pred_dir)
    for i, arg in enumerate(out):
        if i != at + 1 and not arg.startswith("-") and (case / arg).exists():
            out[i] = str((case / arg).resolve())
    return out


@pytest.mark.parametrize("task_name", FOLDER_TASKS)
def test_a_broken_prediction_scores_as_a_missing_one_under_on_error_skip(
        task_name: str, rpx, tmp_path: Path) -> None:
    case = _folder_case(task_name)
    assert case is not None
    argv = command_of(case)
    flag = _pred_flag(task_name)
    source = (case / argv[argv.index(flag) + 1]).resolve()
    victim = sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith("."))[0]
    rel = victim.relative_to(source)
    broken, missing = tmp_path / "broken", tmp_path / "missing"
    shutil.copytree(source, broken)
    shutil.copytree(source, missing)
    (broken / rel).write_bytes(BROKEN)
    (missing / rel).unlink()

    skipped = rpx([*_with_pred_dir(case, argv, flag, broken), "--on-error", "skip"])
    assert skipped.exit_code == 0, skipped.stderr
    empty = rpx([*_with_pred_dir(case, argv, flag, missing), "--missing", "empty"])
    assert empty.exit_code == 0, empty.stderr
    got, expected = skipped.json, empty.json
    got_same = json.loads(json.dumps({key: got.get(key) for key in SAME}).replace(
        json.dumps(str(broken))[1:-1], json.dumps(str(missing))[1:-1]))
    for key in SAME:
        assert got_same[key] == expected.get(key), key
    stem = str(rel.with_suffix(""))
    assert [(e["stem"], e["side"], e["effect"]) for e in got["errors"]] == \
        [(stem, "pred", "empty_prediction")]
    assert got["errors"][0]["path"] == str(broken / rel)
    assert f"scored as empty: {broken / rel}" in skipped.stderr
    # the broken file is not among the files evaluated: the folder digests as without it
    inputs = got["run_provenance"]["inputs"]
    assert inputs[TASKS[task_name].input_names[0]]["sha256"] == \
        expected["run_provenance"]["inputs"][TASKS[task_name].input_names[0]]["sha256"]

    # --on-error fail is unchanged: the pair is listed, exit 1, no report
    failed = rpx([*_with_pred_dir(case, argv, flag, broken), "--on-error", "fail"])
    assert failed.exit_code == 1 and failed.stdout == ""
    assert str(broken / rel) in failed.stderr


def _detection(tmp_path: Path, n: int = 4) -> tuple[Path, Path]:
    pred, gt = tmp_path / "pred", tmp_path / "gt"
    for k in range(n):
        write_json(gt / f"im{k}.json", [{"bbox": [0, 0, 10, 10], "label": "cup"}])
        write_json(pred / f"im{k}.json", [{"bbox": [0, 0, 10, 10], "label": "cup",
                                           "score": 0.9}] if k % 2 == 0 else [])
    return pred, gt


def test_issue_30_2_one_malformed_box_does_not_raise_coco_ap(rpx, tmp_path: Path) -> None:
    """The reported case: a prediction file with one box x2 < x1 used to leave the
    evaluation with its GT, and AP rose. Two images found (AP 0.5 of 4 GT); breaking a
    missed image's file must not lift it."""
    pred, gt = _detection(tmp_path)
    base = rpx(["eval", "detection", "--pred-dir", str(pred), "--gt-dir", str(gt)])
    assert base.json["dataset"]["coco"]["AP50"] == pytest.approx(0.5, abs=0.01)
    write_json(pred / "im1.json", [{"bbox": [10, 0, 0, 10], "label": "cup", "score": 0.1}])
    run = rpx(["eval", "detection", "--pred-dir", str(pred), "--gt-dir", str(gt),
               "--on-error", "skip"])
    assert run.exit_code == 0, run.stderr
    assert run.json["dataset"]["coco"] == base.json["dataset"]["coco"]
    assert run.json["n_pairs"] == 4
    row = next(r for r in run.json["rows"] if r["stem"] == "im1")
    assert row["pred_path"] is None and row["fn"] == 1
    line = run.stderr.strip().splitlines()[-1]
    assert "1 on error (1 unreadable prediction(s) scored as empty, 0 pair(s) dropped)" in line


def test_a_broken_gt_drops_the_pair_and_says_so(rpx, tmp_path: Path) -> None:
    pred, gt = _detection(tmp_path)
    (gt / "im0.json").write_text("[{")
    write_json(pred / "im1.json", [{"bbox": [10, 0, 0, 10], "label": "cup", "score": 0.1}])
    run = rpx(["eval", "detection", "--pred-dir", str(pred), "--gt-dir", str(gt),
               "--on-error", "skip"])
    assert run.exit_code == 0, run.stderr
    report = run.json
    assert report["n_pairs"] == 3
    assert [(e["stem"], e["side"], e["effect"]) for e in report["errors"]] == \
        [("im0", "gt", "dropped"), ("im1", "pred", "empty_prediction")]
    assert "2 on error (1 unreadable prediction(s) scored as empty, 1 pair(s) dropped)" in \
        run.stderr
    assert f"skipped: {gt / 'im0.json'}" in run.stderr

    failed = rpx(["eval", "detection", "--pred-dir", str(pred), "--gt-dir", str(gt)])
    assert failed.exit_code == 1 and failed.stdout == ""
    assert "2 of 4 pairs could not be evaluated" in failed.stderr
    assert str(gt / "im0.json") in failed.stderr and str(pred / "im1.json") in failed.stderr


def test_a_prediction_that_cannot_be_evaluated_against_its_gt_scores_empty(rpx, tmp_path) -> None:
    """Read fine, refused when scored (a depth map of the wrong shape): the same rule."""
    import numpy as np

    pred, gt = tmp_path / "pred", tmp_path / "gt"
    pred.mkdir(), gt.mkdir()
    for k in range(2):
        np.save(gt / f"f{k}.npy", np.full((4, 4), 2.0, np.float32))
        np.save(pred / f"f{k}.npy", np.full((4, 4), 2.2, np.float32))
    np.save(pred / "f1.npy", np.full((3, 3), 2.0, np.float32))
    run = rpx(["eval", "depth", "--pred-dir", str(pred), "--gt-dir", str(gt), "--on-error", "skip"])
    assert run.exit_code == 0, run.stderr
    rows = {row["stem"]: row for row in run.json["rows"]}
    assert rows["f1"]["delta1"] == 0.0 and rows["f1"]["pred_path"] is None
    assert rows["f0"]["delta1"] == 1.0
    assert run.json["errors"][0]["side"] == "pred"
    assert json.dumps(run.json["errors"][0]["path"]).endswith('f1.npy"')
