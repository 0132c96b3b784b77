"""``rpx eval grounding``: the highest-scoring box answers; hand-computed cases."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import dirs, write_json_pair


def test_highest_score_answers_not_the_first_box(rpx, tmp_path: Path) -> None:
    gt = {"text": "the red cup", "boxes": [[0, 0, 10, 10], [50, 50, 60, 60]]}
    # the first box is wrong but scores low; the best-scoring one hits the second GT box
    write_json_pair(tmp_path, "a", gt,
                    {"boxes": [[100, 100, 110, 110], [50, 50, 60, 65]], "scores": [0.2, 0.9]})
    report = rpx(f"eval grounding {dirs(tmp_path)}").json
    row = report["rows"][0]
    assert row["grounding_iou"] == pytest.approx(100 / 150) and row["grounding_acc"] == 1.0
    strict = rpx(f"eval grounding {dirs(tmp_path)} --iou-threshold 0.7").json
    assert strict["rows"][0]["grounding_acc"] == 0.0


def test_no_prediction_and_no_gt(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", {"text": "x", "boxes": [[0, 0, 1, 1]]}, {"boxes": [], "scores": []})
    write_json_pair(tmp_path, "b", {"text": "x", "boxes": []}, {"boxes": [[0, 0, 1, 1]], "scores": [1.0]})
    write_json_pair(tmp_path, "c", {"text": "x", "boxes": [[0, 0, 10, 10]]}, {"boxes": [[0, 0, 10, 10]]})
    report = rpx(f"eval grounding {dirs(tmp_path)}").json
    a, b, c = report["rows"]
    assert (a["grounding_iou"], a["grounding_acc"]) == (0.0, 0.0)
    assert b["grounding_iou"] is None and report["aggregate"]["n_empty"] == 1
    assert c["grounding_acc"] == 1.0  # a single box needs no score
    assert report["aggregate"]["grounding_acc"] == 0.5


def test_bad_grounding_files(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", {"text": "x", "boxes": [[0, 0, 1, 1]]},
                    {"boxes": [[0, 0, 1, 1], [1, 1, 2, 2]], "scores": [0.5]})
    run = rpx(f"eval grounding {dirs(tmp_path)}")
    assert run.exit_code == 1 and "'scores' must be a list as long as 'boxes'" in run.stderr
