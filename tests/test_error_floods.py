"""Error floods (issue 30, item 7): 4,000 problems are read as the first 20 lines and a
count, and an empty folder is said first and alone."""

from __future__ import annotations

import numpy as np
from helpers import write_npy

from rpx_cli.errors import MAX_LISTED, capped


def _gt(root, n: int):
    gt = root / "gt"
    for k in range(n):
        write_npy(gt / f"f{k:04d}.npy", np.full((2, 2), 1.0, np.float32))
    return gt


def test_capped_keeps_the_first_lines_and_counts_the_rest() -> None:
    lines = [f"e{k}" for k in range(45)]
    assert capped(lines) == [*lines[:MAX_LISTED], "… and 25 more"]
    assert capped(lines[:MAX_LISTED]) == lines[:MAX_LISTED]
    assert capped(lines, 3, more=" (see x)") == ["e0", "e1", "e2", "… and 42 more (see x)"]


def test_an_empty_pred_dir_is_one_line_said_first(rpx, tmp_path) -> None:
    gt = _gt(tmp_path, 60)
    (tmp_path / "pred").mkdir()
    run = rpx(f"eval depth --pred-dir {tmp_path / 'pred'} --gt-dir {gt}")
    assert run.exit_code == 1 and run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith(f"rpx: pred dir {tmp_path / 'pred'} holds 0 ")
    assert f"files, against 60 in {gt}" in line and "--missing empty" in line


def test_an_empty_gt_dir_is_named_too(rpx, tmp_path) -> None:
    pred = _gt(tmp_path, 3).rename(tmp_path / "pred")
    (tmp_path / "gt").mkdir()
    run = rpx(f"eval depth --pred-dir {pred} --gt-dir {tmp_path / 'gt'}")
    [line] = run.stderr.splitlines()
    assert line.startswith(f"rpx: gt dir {tmp_path / 'gt'} holds 0 ") and "against 3 in" in line


def test_many_unpaired_stems_print_20_lines_and_a_count(rpx, tmp_path) -> None:
    gt = _gt(tmp_path, 60)
    write_npy(tmp_path / "pred" / "f0000.npy", np.full((2, 2), 1.0, np.float32))
    run = rpx(f"eval depth --pred-dir {tmp_path / 'pred'} --gt-dir {gt}")
    lines = run.stderr.splitlines()
    assert run.exit_code == 1
    assert len(lines) == MAX_LISTED + 2
    assert lines[MAX_LISTED] == "rpx: … and 39 more"
    assert lines[-1].startswith("rpx: 59 stem(s) are not in both directories")


def test_many_unreadable_pairs_print_20_lines_and_under_skip_20_notes(rpx, tmp_path) -> None:
    gt = _gt(tmp_path, 31)
    (tmp_path / "pred").mkdir()
    for k in range(30):
        (tmp_path / "pred" / f"f{k:04d}.npy").write_bytes(b"not an npy")
    write_npy(tmp_path / "pred" / "f0030.npy", np.full((2, 2), 1.0, np.float32))
    cmd = f"eval depth --pred-dir {tmp_path / 'pred'} --gt-dir {gt} --jobs 1"
    run = rpx(cmd)
    lines = run.stderr.splitlines()
    assert run.exit_code == 1 and len(lines) == MAX_LISTED + 2
    assert lines[MAX_LISTED] == "rpx: … and 10 more"
    assert lines[-1].startswith("rpx: 30 of 31 pairs could not be evaluated")
    skipped = rpx(cmd + " --on-error skip")
    assert skipped.exit_code == 0 and len(skipped.json["errors"]) == 30
    notes = [line for line in skipped.stderr.splitlines() if line.startswith(("skipped", "…"))]
    assert len(notes) == MAX_LISTED + 1
    assert notes[-1] == "… and 10 more (see 'errors' in the report)"
