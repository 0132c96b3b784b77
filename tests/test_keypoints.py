"""``rpx eval keypoints``: hand-computed cases, a plain-loop reference, invariants, and bad
inputs as one-line errors naming the file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_jobs_and_shards_agree, assert_one_line_error, dirs, write_json_pair
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.tasks.keypoints import Correspondences, Keypoints, nearest_index
from rpx_cli.testing import summarize_samples

TASK = Keypoints()


REF_PRED = {"points0": [[0, 0], [10, 10]], "points1": [[1, 0], [20, 25]]}
REF_GT = {"points0": [[0, 1], [10, 10], [100, 100]], "points1": [[0, 0], [20, 20], [0, 0]],
          "visibility": [True, True, False]}


# --- hand-computed ---------------------------------------------------------------------

def test_reference_case(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", REF_GT, REF_PRED)
    report = rpx(f"eval keypoints {dirs(tmp_path)}").json
    row = report["rows"][0]
    # GT (0,1) -> pred 0 (1 px away in image 0): error |(1,0) - (0,0)| = 1
    # GT (10,10) -> pred 1: error |(20,25) - (20,20)| = 5; the invisible GT point is left out
    assert row["n_points"] == 2
    assert row["keypoint_acc"] == 0.5  # 1 < 3, 5 >= 3
    assert row["keypoint_acc_1px"] == 0.0  # strict: 1 is not < 1
    assert row["keypoint_acc_3px"] == 0.5
    assert row["keypoint_acc_5px"] == 0.5  # strict: 5 is not < 5
    assert row["mean_match_error"] == (1 + 5) / 2
    assert report["dataset"]["n_points"] == 2 and report["dataset"]["keypoint_acc"] == 0.5
    assert report["metric_info"]["keypoint_acc"]["direction"] == "higher"
    assert report["metric_info"]["mean_match_error"]["direction"] == "lower"


def test_px_threshold_is_strict_and_recorded(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", REF_GT, REF_PRED)
    report = rpx(f"eval keypoints {dirs(tmp_path)} --px-threshold 5.5").json
    assert report["rows"][0]["keypoint_acc"] == 1.0
    assert report["rows"][0]["keypoint_acc_3px"] == 0.5  # fixed thresholds do not move
    assert report["params"]["px_threshold"] == 5.5
    assert "5.5 px" in report["metric_info"]["keypoint_acc"]["description"]
    assert rpx(f"eval keypoints {dirs(tmp_path)} --px-threshold 5").json["rows"][0]["keypoint_acc"] == 0.5
    for bad in ("0", "-1", "abc"):
        assert rpx(f"eval keypoints {dirs(tmp_path)} --px-threshold {bad}").exit_code == 2


def test_no_prediction_and_no_visible_gt(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", REF_GT, {"points0": [], "points1": []})
    write_json_pair(tmp_path, "b", {"points0": [[1, 1]], "points1": [[2, 2]], "visibility": [False]},
                    REF_PRED)
    write_json_pair(tmp_path, "c", {"points0": [[0, 0]], "points1": [[0, 0]]},
                    {"points0": [[0, 0]], "points1": [[3, 4]]})
    report = rpx(f"eval keypoints {dirs(tmp_path)}").json
    a, b, c = report["rows"]
    assert a["keypoint_acc"] == a["keypoint_acc_5px"] == 0.0 and a["mean_match_error"] is None
    assert a["n_points"] == 2
    assert b["n_points"] == 0 and b["keypoint_acc"] is None and b["mean_match_error"] is None
    assert c["mean_match_error"] == 5.0 and c["keypoint_acc_5px"] == 0.0 and c["keypoint_acc"] == 0.0
    aggregate = report["aggregate"]
    assert aggregate["n_frames"] == 3 and aggregate["n_empty"] == 1 and aggregate["n_no_prediction"] == 1
    assert aggregate["keypoint_acc"] == 0.0 and aggregate["mean_match_error"] == 5.0
    dataset = report["dataset"]
    assert dataset["n_points"] == 3 and dataset["n_unmatched"] == 2
    assert dataset["mean_match_error"] == 5.0 and dataset["keypoint_acc"] == 0.0


def test_missing_prediction_as_empty(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", REF_GT, REF_PRED)
    write_json_pair(tmp_path, "b", REF_GT, None)
    assert rpx(f"eval keypoints {dirs(tmp_path)}").exit_code == 1
    report = rpx(f"eval keypoints {dirs(tmp_path)} --missing empty").json
    missing = report["rows"][1]
    assert missing["pred_path"] is None and missing["keypoint_acc"] == 0.0
    assert missing["mean_match_error"] is None and missing["n_points"] == 2
    assert report["aggregate"]["keypoint_acc"] == 0.25 and report["dataset"]["keypoint_acc"] == 0.25


def test_aggregate_is_per_frame_and_dataset_is_pooled(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", {"points0": [[0, 0]], "points1": [[0, 0]]},
                    {"points0": [[0, 0]], "points1": [[0, 0.5]]})
    gt_b = {"points0": [[0, 0], [50, 0], [100, 0]], "points1": [[0, 0], [0, 0], [0, 0]]}
    pred_b = {"points0": [[0, 0], [50, 0], [100, 0]], "points1": [[2, 0], [4, 0], [0, 6]]}
    write_json_pair(tmp_path, "b", gt_b, pred_b)
    report = rpx(f"eval keypoints {dirs(tmp_path)}").json
    assert report["aggregate"]["keypoint_acc"] == pytest.approx((1 + 1 / 3) / 2)
    assert report["dataset"]["keypoint_acc"] == pytest.approx(2 / 4)
    assert report["aggregate"]["mean_match_error"] == pytest.approx((0.5 + 4) / 2)
    assert report["dataset"]["mean_match_error"] == pytest.approx((0.5 + 2 + 4 + 6) / 4)
    assert report["dataset"]["keypoint_acc_5px"] == pytest.approx(3 / 4)


def test_visibility_as_0_1_equals_booleans(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", REF_GT, REF_PRED)
    write_json_pair(tmp_path, "b", {**REF_GT, "visibility": [1, 1, 0]}, REF_PRED)
    write_json_pair(tmp_path, "c", {k: v for k, v in REF_GT.items() if k != "visibility"}, REF_PRED)
    write_json_pair(tmp_path, "d", {**REF_GT, "visibility": [1.0, True, 0]}, REF_PRED)
    a, b, c, d = rpx(f"eval keypoints {dirs(tmp_path)}").json["rows"]
    strip = ("stem", "pred_path", "gt_path")
    for other in (b, d):
        assert {k: v for k, v in a.items() if k not in strip} == \
            {k: v for k, v in other.items() if k not in strip}
    assert c["n_points"] == 3  # no visibility: every point is visible
    # (100,100) -> pred 1 at (20,25): error |(20,25) - (0,0)| = sqrt(1025)
    assert c["mean_match_error"] == pytest.approx((1 + 5 + math.sqrt(20**2 + 25**2)) / 3)


# --- ties --------------------------------------------------------------------------------

def test_ties_go_to_the_first_prediction(rpx, tmp_path: Path) -> None:
    gt = {"points0": [[5, 5]], "points1": [[0, 0]]}
    pred = {"points0": [[7, 5], [3, 5], [5, 7]], "points1": [[9, 0], [0, 1], [0, 2]]}
    write_json_pair(tmp_path, "a", gt, pred)
    assert rpx(f"eval keypoints {dirs(tmp_path)}").json["rows"][0]["mean_match_error"] == 9.0
    pred = {"points0": pred["points0"][::-1], "points1": pred["points1"][::-1]}
    write_json_pair(tmp_path, "a", gt, pred)
    assert rpx(f"eval keypoints {dirs(tmp_path)}").json["rows"][0]["mean_match_error"] == 2.0


def test_many_ties_beyond_the_tree_candidates() -> None:
    # eight predictions exactly 5 px from the query, and a farther one listed first
    ring = [(3, 4), (-3, 4), (5, 0), (0, -5), (-4, -3), (4, -3), (0, 5), (-5, 0)]
    rng = np.random.default_rng(0)
    for _ in range(20):
        order = rng.permutation(len(ring))
        candidates = np.array([(9.0, 9.0)] + [ring[i] for i in order], dtype=np.float64)
        queries = np.zeros((3, 2))
        assert nearest_index(candidates, queries).tolist() == [1, 1, 1]
    assert nearest_index(np.array([[1.0, 0.0]]), np.zeros((2, 2))).tolist() == [0, 0]


# --- reference -------------------------------------------------------------------------

def plain_loop(pred0, pred1, gt0, gt1, visible, threshold):
    """Every visible GT point against every prediction, in Python."""
    errors = []
    for g0, g1, vis in zip(gt0, gt1, visible, strict=True):
        if not vis:
            continue
        best, best_d2 = None, None
        for index, p0 in enumerate(pred0):
            d2 = (p0[0] - g0[0]) ** 2 + (p0[1] - g0[1]) ** 2
            if best is None or d2 < best_d2:
                best, best_d2 = index, d2
        errors.append(math.dist(pred1[best], g1))
    n = len(errors)
    return {"keypoint_acc": sum(e < threshold for e in errors) / n,
            "keypoint_acc_1px": sum(e < 1 for e in errors) / n,
            "keypoint_acc_3px": sum(e < 3 for e in errors) / n,
            "keypoint_acc_5px": sum(e < 5 for e in errors) / n,
            "mean_match_error": sum(errors) / n, "n_points": n}


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), grid=st.booleans(), n_pred=st.integers(1, 40),
       n_gt=st.integers(1, 30), threshold=st.sampled_from([0.5, 2.0, 3.0, 7.5]))
def test_matches_a_plain_loop(seed, grid, n_pred, n_gt, threshold) -> None:
    rng = np.random.default_rng(seed)
    if grid:  # small integer grid: many exact ties and coincident points
        draw = lambda n: rng.integers(0, 6, (n, 2)).astype(np.float64)  # noqa: E731
    else:
        draw = lambda n: rng.uniform(0, 50, (n, 2))  # noqa: E731
    pred0, gt0 = draw(n_pred), draw(n_gt)
    pred1, gt1 = draw(n_pred), draw(n_gt)
    visible = rng.random(n_gt) < 0.8
    visible[0] = True
    row = TASK.evaluate(Correspondences(pred0, pred1, np.ones(n_pred, bool)),
                        Correspondences(gt0, gt1, visible), {"px_threshold": threshold},
                        pred_path="p", gt_path="g").row
    expected = plain_loop(pred0.tolist(), pred1.tolist(), gt0.tolist(), gt1.tolist(),
                          visible.tolist(), threshold)
    for key, value in expected.items():
        assert row[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


# --- invariants --------------------------------------------------------------------------

def random_frames(root: Path, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for index in range(n):
        k = int(rng.integers(1, 12))
        gt0 = rng.uniform(0, 100, (k, 2))
        gt1 = gt0 + rng.normal(0, 3, (k, 2))
        keep = rng.random(k) < 0.8
        pred1 = gt1[keep] + rng.normal(0, 2, (int(keep.sum()), 2))
        write_json_pair(root, f"f{index:02d}", {"points0": gt0.tolist(), "points1": gt1.tolist(),
                                                "visibility": (rng.random(k) < 0.9).tolist()},
                        {"points0": (gt0[keep] + rng.normal(0, 0.5, (int(keep.sum()), 2))).tolist(),
                         "points1": pred1.tolist(), "scores": rng.random(int(keep.sum())).tolist()})


def test_perfect_prediction_scores_one(rpx, tmp_path: Path) -> None:
    random_frames(tmp_path, 5, 1)
    report = rpx(f"eval keypoints --pred-dir {tmp_path / 'gt'} --gt-dir {tmp_path / 'gt'}").json
    for key in ("keypoint_acc", "keypoint_acc_1px", "keypoint_acc_3px", "keypoint_acc_5px"):
        assert report["dataset"][key] == 1.0
    assert report["dataset"]["mean_match_error"] == 0.0


def test_prediction_order_does_not_matter() -> None:
    rng = np.random.default_rng(2)
    pred0, pred1 = rng.uniform(0, 100, (50, 2)), rng.uniform(0, 100, (50, 2))
    gt = Correspondences(rng.uniform(0, 100, (20, 2)), rng.uniform(0, 100, (20, 2)), np.ones(20, bool))
    params = {"px_threshold": 3.0}
    whole = TASK.evaluate(Correspondences(pred0, pred1, np.ones(50, bool)), gt, params,
                          pred_path="p", gt_path="g").row
    for _ in range(5):
        order = rng.permutation(50)
        again = TASK.evaluate(Correspondences(pred0[order], pred1[order], np.ones(50, bool)), gt,
                              params, pred_path="p", gt_path="g").row
        assert again == pytest.approx(whole, rel=1e-12)
    samples = [TASK.evaluate(
        Correspondences(pred0, pred1, np.ones(50, bool)),
        Correspondences(rng.uniform(0, 100, (5, 2)), rng.uniform(0, 100, (5, 2)), np.ones(5, bool)),
        params, pred_path="p", gt_path="g") for _ in range(8)]
    summary = summarize_samples(TASK, samples, params)
    assert summarize_samples(TASK, samples[::-1], params) == summary


def test_jobs_and_shards_do_not_change_the_numbers(rpx, tmp_path: Path) -> None:
    random_frames(tmp_path, 9, 3)
    assert_jobs_and_shards_agree(rpx, f"eval keypoints {dirs(tmp_path)}", tmp_path)


# --- bad input ---------------------------------------------------------------------------

BAD = [
    ("gt", {"points0": [[0, 0], [1, 1]], "points1": [[0, 0]]}, "'points0' has 2 points but 'points1' has 1"),
    ("pred", {"points0": [[0, 0]], "points1": [[0, 0], [1, 1]]},
     "'points0' has 1 points but 'points1' has 2"),
    ("gt", {**REF_GT, "visibility": [True, False]}, "'visibility' must be a list of 3 booleans"),
    ("gt", {**REF_GT, "visibility": [1, 2, 0]}, "'visibility' must be a list of 3 booleans"),
    ("gt", {**REF_GT, "visibility": ["yes", "no", "no"]}, "'visibility' must be a list of 3 booleans"),
    ("gt", {**REF_GT, "visibility": [0.5, 1, 0]}, "'visibility' must be a list of 3 booleans"),
    ("gt", {**REF_GT, "visibility": [[1], [1, 0], 0]}, "'visibility' must be a list of 3 booleans"),
    ("gt", {**REF_GT, "visibility": [None, 1, 0]}, "'visibility' must be a list of 3 booleans"),
    ("gt", {**REF_GT, "visibility": "all"}, "'visibility' must be a list of 3 booleans"),
    ("gt", {"points0": [[0, 0, 0]], "points1": [[0, 0, 0]]}, "'points0' must be a list of [x, y]"),
    ("gt", {"points0": [0, 0], "points1": [0, 0]}, "'points0' must be a list of [x, y]"),
    ("pred", {"points0": [[0, 0], [1]], "points1": [[0, 0], [1, 1]]}, "'points0' must be a list of [x, y]"),
    ("pred", {"points0": [[0, 0]], "points1": [[0, "x"]]}, "'points1' must be a list of [x, y]"),
    ("pred", {"points0": [[0, 0]], "points1": [["1", "2"]]}, "'points1' must be a list of [x, y]"),
    ("pred", {"points0": [[0, 0]], "points1": [[0, None]]}, "'points1' must be a list of [x, y]"),
    ("gt", {"points0": [[]], "points1": [[]]}, "'points0' must be a list of [x, y]"),
    ("pred", {"points0": [[0, 0]], "points1": [[0, 0]], "scores": [0.1, 0.2]},
     "'scores' must be a list of 1"),
    ("pred", {"points0": [[0, 0]]}, "expected {"),
    ("gt", [[0, 0]], "expected {"),
]


@pytest.mark.parametrize(("role", "document", "message"), BAD, ids=[m for _, _, m in BAD])
def test_bad_files(rpx, tmp_path: Path, role: str, document, message: str) -> None:
    write_json_pair(tmp_path, "a", REF_GT, REF_PRED)
    bad = tmp_path / role / "a.json"
    bad.write_text(json.dumps(document))
    assert_one_line_error(rpx(f"eval keypoints {dirs(tmp_path)}"), bad, message)


@pytest.mark.parametrize(("role", "text", "message"), [
    ("gt", '{"points0": [[0, NaN]], "points1": [[0, 0]]}', "'points0' has a non-finite coordinate (point 0)"),
    ("pred", '{"points0": [[0, 0], [1, 1]], "points1": [[0, 0], [Infinity, 1]]}',
     "'points1' has a non-finite coordinate (point 1)"),
    ("pred", '{"points0": [[0, 0]], "points1": [[0, 1e999]]}', "'points1' has a non-finite"),
    ("gt", "{points0", "not valid JSON"),
])
def test_non_finite_and_unparsable(rpx, tmp_path: Path, role: str, text: str, message: str) -> None:
    write_json_pair(tmp_path, "a", REF_GT, REF_PRED)
    bad = tmp_path / role / "a.json"
    bad.write_text(text)
    assert_one_line_error(rpx(f"eval keypoints {dirs(tmp_path)}"), bad, message)
