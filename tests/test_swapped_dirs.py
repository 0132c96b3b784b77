"""``--pred-dir`` and ``--gt-dir`` swapped (issue 30, item 3): a run whose GT side is empty
everywhere, whose predictions lack the scores the task expects, or whose GT looks like
predictions says "did you swap --pred-dir and --gt-dir?" — and the right way round says
nothing."""

from __future__ import annotations

import json

import pytest

from rpx_cli.errors import SWAP_HINT

F = "fixtures"
# task, the pair of folders (pred, gt) the right way round, extra flags
CASES = {
    "depth": (f"{F}/depth/indoor/pred", f"{F}/depth/indoor/gt", ""),
    "tracking": (f"{F}/tracking/mot/pred", f"{F}/tracking/mot/gt", ""),
    "grounding": (f"{F}/grounding/refer/pred", f"{F}/grounding/refer/gt", ""),
}
# the right way round: exit 1 from the prediction side (a GT file has no scores)
REFUSED = {
    "detection": (f"{F}/detection/shelf/pred", f"{F}/detection/shelf/gt", ""),
    "detection3d": (f"{F}/detection3d/street/pred", f"{F}/detection3d/street/gt", ""),
    "classification": (f"{F}/classification/pets/pred", f"{F}/classification/pets/gt",
                       f"--class-names {F}/classification/pets/classes.txt"),
}


@pytest.mark.parametrize("task", sorted(CASES))
def test_swapped_folders_warn_and_the_right_way_round_does_not(rpx, task) -> None:
    pred, gt, flags = CASES[task]
    right = rpx(f"eval {task} --pred-dir {pred} --gt-dir {gt} {flags}")
    assert right.exit_code == 0 and SWAP_HINT not in right.stderr
    swapped = rpx(f"eval {task} --pred-dir {gt} --gt-dir {pred} {flags}")
    assert swapped.exit_code == 0  # a warning: the report is still written
    assert f"{SWAP_HINT}" in swapped.stderr
    assert all(line.startswith("warning: ") for line in swapped.stderr.splitlines()
               if SWAP_HINT in line)


def test_swapped_depth_names_both_sides(rpx) -> None:
    pred, gt, _ = CASES["depth"]
    run = rpx(f"eval depth --pred-dir {gt} --gt-dir {pred}")
    [line] = [line for line in run.stderr.splitlines() if SWAP_HINT in line]
    assert "4 GT map(s) hold float metres" in line and f"{pred}/frame000.npz" in line
    assert "4 prediction(s) hold integers" in line and f"{gt}/frame000.png" in line


def test_float_gt_with_float_predictions_is_an_ordinary_layout(rpx, tmp_path) -> None:
    import numpy as np

    for side in ("pred", "gt"):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "a.npy", np.full((4, 4), 2.0, np.float32))
    run = rpx(f"eval depth --pred-dir {tmp_path / 'pred'} --gt-dir {tmp_path / 'gt'}")
    assert run.exit_code == 0 and "warning" not in run.stderr


def test_swapped_tracking_says_the_gt_is_empty_and_holds_confidences(rpx) -> None:
    pred, gt, _ = CASES["tracking"]
    run = rpx(f"eval tracking --pred-dir {gt} --gt-dir {pred}")
    assert "2 GT file(s) hold confidences in column 7" in run.stderr
    [summary] = run.json["warnings"]
    assert summary.startswith("no GT box is evaluated in any of the 2 sequence(s) while the "
                              "predictions hold ")
    assert run.json["dataset"]["hota"] is None


@pytest.mark.parametrize("task", sorted(REFUSED))
def test_gt_files_given_as_predictions_are_refused_with_the_hint(rpx, task) -> None:
    pred, gt, flags = REFUSED[task]
    run = rpx(f"eval {task} --pred-dir {gt} --gt-dir {pred} {flags}")
    assert run.exit_code == 1 and run.stdout == ""
    assert f"({SWAP_HINT})" in run.stderr.splitlines()[0]


@pytest.mark.parametrize("task", ["detection", "detection3d"])
def test_a_gt_side_empty_everywhere_warns(rpx, tmp_path, task) -> None:
    for side in ("pred", "gt"):
        (tmp_path / side).mkdir()
    box = ({"bbox": [0, 0, 10, 10], "label": "cup", "score": 0.9} if task == "detection"
           else {"box": [5, 0, 0, 4, 2, 1.5, 0], "label": "car", "score": 0.9})
    for stem in ("a", "b"):
        (tmp_path / "gt" / f"{stem}.json").write_text("[]")
        (tmp_path / "pred" / f"{stem}.json").write_text(json.dumps([box]))
    run = rpx(f"eval {task} --pred-dir {tmp_path / 'pred'} --gt-dir {tmp_path / 'gt'}")
    assert run.exit_code == 0
    unit = "image" if task == "detection" else "sample"
    assert f"no GT box in any of the 2 {unit}(s) while the predictions hold 2: {SWAP_HINT}" \
        in run.json["warnings"]
