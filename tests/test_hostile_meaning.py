"""Issue 31.5: inputs whose meaning used to change silently. Each goes through the CLI and
is now either read as it means or refused as an input error naming the file and object."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers import write_json


def _eval(rpx, task: str, root: Path, *more: str):
    return rpx(["eval", task, "--pred-dir", str(root / "pred"), "--gt-dir", str(root / "gt"),
                *more])


def _refused(run, path: Path, *words: str) -> None:
    assert run.exit_code == 1, (run.exit_code, run.stderr)
    assert run.stdout == "" and "internal error" not in run.stderr
    assert str(path) in run.stderr, run.stderr
    for word in words:
        assert word in run.stderr, run.stderr


@pytest.mark.parametrize("task", ["segmentation3d", "segmentation"])
def test_a_uint64_label_beyond_int64_is_refused_not_read_as_ignore_minus_one(
        rpx, tmp_path: Path, task: str) -> None:
    shape = (6,) if task == "segmentation3d" else (2, 3)
    gt = np.zeros(shape, np.uint64)
    gt.flat[0] = 2**64 - 1
    for side in ("pred", "gt"):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "a.npy", gt if side == "gt" else np.zeros(shape, np.uint64))
    run = _eval(rpx, task, tmp_path, "--num-classes", "3")
    _refused(run, tmp_path / "gt" / "a.npy", "label 18446744073709551615 is beyond the int64 range")


def test_a_blank_line_in_class_names_is_refused(rpx, tmp_path: Path) -> None:
    for side in ("pred", "gt"):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "a.npy", np.array([[0, 1], [2, 1]], np.int64))
    names = tmp_path / "names.txt"
    names.write_text("road\n\ncar\nperson\n\n")  # the gap would shift car and person
    run = _eval(rpx, "segmentation", tmp_path, "--class-names", str(names))
    assert run.exit_code in (1, 2) and str(names) in run.stderr, run.stderr
    assert "line 2 is blank" in run.stderr and "internal error" not in run.stderr
    names.write_text("# classes\nroad\ncar\nperson\n\n")  # a comment and trailing blanks: fine
    assert _eval(rpx, "segmentation", tmp_path, "--class-names", str(names)).exit_code == 0


@pytest.mark.parametrize("score", ["0.9", True])
def test_classification_scores_are_numbers_not_strings_or_booleans(rpx, tmp_path: Path, score) -> None:
    write_json(tmp_path / "gt" / "a.json", {"label": "cat"})
    write_json(tmp_path / "pred" / "a.json", {"scores": {"cat": score, "dog": 0.1}})
    _refused(_eval(rpx, "classification", tmp_path), tmp_path / "pred" / "a.json",
             "the score of 'cat' must be a number")
    if score == "0.9":  # in a CSV, 0.9 is a number; true is not
        return
    (tmp_path / "gt.csv").write_text("stem,label\na,cat\n")
    (tmp_path / "pred.csv").write_text(f"stem,cat,dog\na,{str(score).lower()},0.1\n")
    run = rpx(["eval", "classification", "--gt-file", str(tmp_path / "gt.csv"), "--pred-file",
               str(tmp_path / "pred.csv")])
    _refused(run, tmp_path / "pred.csv", "line 2: the score in column 2 is not a number")


@pytest.mark.parametrize("k", [1e-200, 5e-324, 1e6])
def test_a_quaternion_of_any_norm_keeps_its_yaw(rpx, tmp_path: Path, k: float) -> None:
    """[k, 0, 0, k] is a 90° yaw whatever k: tiny k used to underflow to yaw 0."""
    write_json(tmp_path / "gt" / "a.json", [{"center": [0, 0, 0], "size": [4, 1, 1],
                                            "rotation": [k, 0, 0, k], "label": "car"}])
    write_json(tmp_path / "pred" / "a.json", [{"center": [0, 0, 0], "size": [4, 1, 1],
                                              "yaw": math.pi / 2, "label": "car", "score": 0.9}])
    run = _eval(rpx, "detection", tmp_path, "--geometry", "cuboid", "--iou-threshold", "0.9")
    assert run.exit_code == 0, run.stderr
    assert run.json["rows"][0]["tp"] == 1
    box = {"translation": [10, 0, 0], "size": [1, 4, 1], "detection_name": "car"}
    write_json(tmp_path / "gt" / "a.json", [{**box, "rotation": [k, 0, 0, k]}])
    write_json(tmp_path / "pred" / "a.json", [{**box, "rotation": [math.sqrt(0.5), 0, 0, math.sqrt(0.5)],
                                              "detection_score": 0.9}])
    run = _eval(rpx, "detection3d", tmp_path)
    assert run.exit_code == 0, run.stderr
    assert run.json["dataset"]["per_class"]["car"]["AOE"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("geometry,obj,words", [
    ("rotated", {"bbox": [1, 1, 1e-170, 1e-170, 30]}, "width and height must be at least 1e-06"),
    ("rotated", {"bbox": [1e-300, 1e-300, 1e-300, 1e-300, 30]}, "at least 1e-06"),
    ("rotated", {"bbox": [1e200, 1e200, 1e199, 1e199, 30]}, "beyond ±1e+12"),
    ("polygon", {"polygons": [[[0, 0], [1e-170, 0], [1e-170, 1e-170], [0, 1e-170]]]},
     "ring 0 of polygon 0 is 1e-170 wide"),
    ("polygon", {"polygons": [[[0, 0], [1e200, 0], [1e200, 1e200], [0, 1e200]]]},
     "coordinate beyond ±1e+12"),
    ("cuboid", {"center": [0, 0, 0], "size": [1e-110, 1e-110, 1e-110], "yaw": 0},
     "every size must be at least 1e-06"),
])
def test_identical_shapes_at_scales_no_arithmetic_holds_are_refused(rpx, tmp_path: Path, geometry,
                                                                    obj, words) -> None:
    """They used to score IoU 0 against themselves (or end in an internal error)."""
    write_json(tmp_path / "gt" / "a.json", [{**obj, "label": "car"}])
    write_json(tmp_path / "pred" / "a.json", [{**obj, "label": "car", "score": 0.9}])
    _refused(_eval(rpx, "detection", tmp_path, "--geometry", geometry),
             tmp_path / "gt" / "a.json", "object 0", words)


def test_a_detection3d_box_of_1e_110_m_is_refused_not_scored_ase_1(rpx, tmp_path: Path) -> None:
    box = {"translation": [10, 0, 0], "size": [1e-110, 1e-110, 1e-110], "rotation": [1, 0, 0, 0],
           "detection_name": "car"}
    write_json(tmp_path / "gt" / "a.json", [box])
    write_json(tmp_path / "pred" / "a.json", [{**box, "detection_score": 0.9}])
    _refused(_eval(rpx, "detection3d", tmp_path), tmp_path / "gt" / "a.json",
             "box 0", "'size' must be at least 1e-06 m")
    compact = {"box": [10, 0, 0, 1e-110, 1, 1, 0], "label": "car"}
    write_json(tmp_path / "gt" / "a.json", [compact])
    _refused(_eval(rpx, "detection3d", tmp_path), tmp_path / "gt" / "a.json", "at least 1e-06 m")


def test_a_negative_num_pts_is_refused_not_passed_by_min_pts(rpx, tmp_path: Path) -> None:
    box = {"translation": [10, 0, 0], "size": [1, 4, 1], "rotation": [1, 0, 0, 0],
           "detection_name": "car"}
    write_json(tmp_path / "gt" / "a.json", [{**box, "num_pts": -5}, {**box, "num_pts": 3}])
    write_json(tmp_path / "pred" / "a.json", [{**box, "detection_score": 0.9}])
    _refused(_eval(rpx, "detection3d", tmp_path, "--min-pts", "1"), tmp_path / "gt" / "a.json",
             "box 0", "'num_pts' must be an integer >= 0 (or -1: not given), got -5")


def test_the_rules_are_documented() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    for words in ("1e-06", "'//'", "int64"):
        assert words in text, words
