"""``rpx eval sparse-depth``: hand-computed cases, a brute-force reference, invariants."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers import dirs, write_json, write_npy, write_png
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.io.points import Points
from rpx_cli.tasks.sparse_depth import match_points, sample_dense

GT = np.array([[1, 1, 2.0], [5, 5, 4.0], [10, 10, 8.0]])


def test_points_hand_computed(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "gt" / "a.npy", GT)
    write_json(tmp_path / "pred" / "a.json",
               {"coordinates": [[1.5, 1], [20, 20], [11, 11.5]], "depths": [2.5, 3, 6]})
    row = rpx(f"eval sparse-depth {dirs(tmp_path)}").json["rows"][0]
    # (1,1) -> 2.5 at 0.5 px; (5,5) nothing within 2 px: miss; (10,10) -> 6 at 1.80 px
    assert row["n_points"] == 3 and row["n_missed"] == 1
    assert row["sparse_absrel"] == pytest.approx((0.5 / 2 + 1 + 2 / 8) / 3)
    assert row["sparse_rmse"] == pytest.approx(math.sqrt((0.25 + 16 + 4) / 3))


def test_radius_is_inclusive() -> None:
    pred = Points(np.array([[0.0, 0.0]]), np.array([3.0]))
    assert match_points(np.array([[2.0, 0.0]]), pred, 2.0)[0] == 3.0
    assert np.isnan(match_points(np.array([[2.0000001, 0.0]]), pred, 2.0)[0])
    assert match_points(np.array([[0.0, 0.0]]), pred, 0.0)[0] == 3.0


def test_dense_sampling_rounds_half_up_and_misses_outside() -> None:
    depth = np.arange(12, dtype=np.float64).reshape(3, 4)
    xy = np.array([[0.49, 0.0], [0.5, 0.0], [3.4, 2.4], [3.5, 0.0], [-0.6, 0.0], [1.0, -0.5]])
    got = sample_dense(xy, depth)
    assert got[:3].tolist() == [0.0, 1.0, 11.0]
    assert np.isnan(got[3]) and np.isnan(got[4])
    assert got[5] == 1.0  # floor(-0.5 + 0.5) = 0: inside


def test_dense_prediction_with_zero_and_nan_misses(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "gt" / "a.npy", GT)
    dense = np.full((12, 12), np.nan)
    dense[1, 1] = 2.0
    dense[5, 5] = 0.0
    dense[10, 10] = 10.0
    write_npy(tmp_path / "pred" / "a.npy", dense)
    row = rpx(f"eval sparse-depth {dirs(tmp_path)}").json["rows"][0]
    assert row["n_missed"] == 1
    assert row["sparse_absrel"] == pytest.approx((0 + 1 + 0.25) / 3)
    mm = (np.nan_to_num(dense) * 1000).astype(np.uint16)
    write_png(tmp_path / "pred_png" / "a.png", mm)
    png = rpx(f"eval sparse-depth --pred-dir {tmp_path / 'pred_png'} --gt-dir {tmp_path / 'gt'}").json
    assert png["rows"][0]["sparse_absrel"] == pytest.approx(row["sparse_absrel"])


def test_invalid_gt_points_and_empty_gt(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "gt" / "a.npy", np.array([[1, 1, 2.0], [2, 2, 0.0], [3, 3, np.nan]]))
    write_npy(tmp_path / "pred" / "a.npy", np.array([[1, 1, 2.2]]))
    write_npy(tmp_path / "gt" / "b.npy", np.zeros((0, 3)))
    write_npy(tmp_path / "pred" / "b.npy", np.zeros((0, 3)))
    report = rpx(f"eval sparse-depth {dirs(tmp_path)}").json
    a, b = report["rows"]
    assert a["n_points"] == 1 and a["n_invalid_gt"] == 2 and a["sparse_absrel"] == pytest.approx(0.1)
    assert b["sparse_absrel"] is None and b["n_points"] == 0
    assert report["aggregate"]["n_empty"] == 1
    assert report["aggregate"]["sparse_absrel"] == pytest.approx(0.1)


def test_missing_prediction_as_empty(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "gt" / "a.npy", GT)
    (tmp_path / "pred").mkdir()
    report = rpx(f"eval sparse-depth {dirs(tmp_path)} --missing empty").json
    row = report["rows"][0]
    assert row["sparse_absrel"] == 1.0 and row["n_missed"] == 3
    assert row["sparse_rmse"] == pytest.approx(math.sqrt((4 + 16 + 64) / 3))


@pytest.mark.parametrize(("content", "message"), [
    ('{"coordinates": [[1, 2]], "depths": [1, 2]}', "1 coordinates but 2 depths"),
    ('{"points": []}', "expected"),
    ("not json", "not valid JSON"),
])
def test_bad_point_files(rpx, tmp_path: Path, content: str, message: str) -> None:
    write_npy(tmp_path / "pred" / "a.npy", GT)
    (tmp_path / "gt").mkdir()
    (tmp_path / "gt" / "a.json").write_text(content)
    run = rpx(f"eval sparse-depth {dirs(tmp_path)}")
    assert run.exit_code == 1 and message in run.stderr and "gt/a.json" in run.stderr


def brute_force(gt: np.ndarray, pred: np.ndarray, radius: float):
    """Every GT point against every predicted point."""
    rel, sq = [], []
    for x, y, g in gt:
        best, depth = None, None
        for px, py, p in pred:
            d = math.hypot(px - x, py - y)
            if d <= radius and (best is None or d < best):
                best, depth = d, p
        hit = depth is not None and math.isfinite(depth) and depth > 0
        rel.append(abs(depth - g) / g if hit else 1.0)
        sq.append((depth - g) ** 2 if hit else g * g)
    return np.mean(rel), math.sqrt(np.mean(sq))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), radius=st.sampled_from([0.5, 2.0, 5.0]))
def test_matches_brute_force(seed: int, radius: float) -> None:
    from rpx_cli.tasks.sparse_depth import SparseDepth

    rng = np.random.default_rng(seed)
    gt = np.column_stack([rng.uniform(0, 50, (30, 2)), rng.uniform(1, 20, 30)])
    pred = np.column_stack([rng.uniform(0, 50, (60, 2)), rng.uniform(1, 20, 60)])
    row = SparseDepth().evaluate(Points(pred[:, :2], pred[:, 2]), Points(gt[:, :2], gt[:, 2]),
                                 {"radius": radius}, pred_path="p", gt_path="g").row
    absrel, rmse = brute_force(gt, pred, radius)
    assert row["sparse_absrel"] == pytest.approx(absrel, rel=1e-12)
    assert row["sparse_rmse"] == pytest.approx(rmse, rel=1e-12)
    # a perfect prediction scores 0 and misses nothing
    perfect = SparseDepth().evaluate(Points(gt[:, :2], gt[:, 2]), Points(gt[:, :2], gt[:, 2]),
                                     {"radius": radius}, pred_path="p", gt_path="g").row
    assert perfect["sparse_absrel"] == 0.0 and perfect["n_missed"] == 0
