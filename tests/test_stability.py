"""``rpx stability``: temporal stability of depth and label predictions .

Hand-computed pairs, the geometry against plain per-pixel loops, a rendered scene seen by a
moving camera (perfect predictions score 1 once the motion is undone, clearly less without),
the in-plane warp, occlusion, manifest problems and the command line.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import without_provenance, write_npy, write_png
from stability_scene import facing_planes, pose, render, room, sliding, trajectory

from rpx_cli.deploy.stability import (
    OCCLUSION_ABSOLUTE_M,
    OCCLUSION_RELATIVE,
    depth_pair,
    label_agreement,
    segmentation_pair,
    sequence_stability,
)
from rpx_cli.ops import warp as ops

SEG_T = np.zeros((4, 4), np.uint8)
SEG_T[:2, :2] = 1
SEG_T1 = np.zeros((4, 4), np.uint8)
SEG_T1[:2, :3] = 1
DEPTH_T = np.array([[1, 2], [3, 4]], np.float32)
DEPTH_T1 = np.array([[1.5, 2], [3, 0]], np.float32)
# three pixels valid in both (|diff| 0.5, 0, 0), range of D_t over them 3 - 1
DEPTH_EXPECTED = 1 - (0.5 / 3) / (3 - 1)
# class 0: 10 shared of 12 in either; class 1: 4 shared of 6
SEG_EXPECTED = (10 / 12 + 4 / 6) / 2

SHAPE = (48, 64)
K = (100.0, 100.0, (SHAPE[1] - 1) / 2, (SHAPE[0] - 1) / 2)


def scene(planes, poses, intrinsics=K, shape=SHAPE) -> tuple[list[np.ndarray], list[np.ndarray]]:
    frames = [render(planes, p, intrinsics, shape) for p in poses]
    return [d.astype(np.float32) for d, _ in frames], [labels for _, labels in frames]


# --- hand-computed pairs -----------------------------------------------------------------------


def test_segmentation_pair_by_hand() -> None:
    assert SEG_EXPECTED == 0.75
    result = sequence_stability("segmentation", [SEG_T, SEG_T1])
    assert result["per_pair"] == [pytest.approx(SEG_EXPECTED, abs=1e-15)]
    assert result["ts_score"] == pytest.approx(0.75, abs=1e-15)
    assert result["n_valid"] == [16]


def test_depth_pair_by_hand() -> None:
    result = sequence_stability("depth", [DEPTH_T, DEPTH_T1])
    assert result["ts_score"] == pytest.approx(DEPTH_EXPECTED, rel=1e-7)
    assert result["ts_score"] == pytest.approx(0.9166666666, rel=1e-9)
    assert result["n_valid"] == [3]


def test_single_frame_scores_one_with_no_pair() -> None:
    assert sequence_stability("depth", [DEPTH_T]) == {"ts_score": 1.0, "num_pairs": 0,
                                                      "per_pair": [], "n_valid": []}


def test_depth_score_is_clamped_at_zero_and_range_has_a_floor() -> None:
    flat = np.full((2, 2), 2.0, np.float32)  # range 0 -> 1e-3 m
    assert sequence_stability("depth", [flat, flat + 0.0005])["ts_score"] == pytest.approx(0.5, rel=1e-4)
    assert sequence_stability("depth", [DEPTH_T, DEPTH_T * 10])["ts_score"] == 0.0


def test_a_pair_without_a_valid_pixel_is_null_and_not_averaged() -> None:
    empty = np.zeros((2, 2), np.float32)
    result = sequence_stability("depth", [DEPTH_T, DEPTH_T1, empty, DEPTH_T])
    assert result["per_pair"][1:] == [None, None]
    assert result["ts_score"] == pytest.approx(DEPTH_EXPECTED, rel=1e-7)
    assert sequence_stability("depth", [empty, empty])["ts_score"] is None


def test_ignore_index_leaves_pixels_out_of_both_maps() -> None:
    a = np.array([[0, 0, 1, 255]])
    b = np.array([[0, 1, 1, 1]])
    # pixel 3 ignored: class 0 1 of 2, class 1 1 of 2
    assert label_agreement(a, b, None, (255,)).value == pytest.approx(0.5)
    assert label_agreement(a, b, None, (-1,)).value == pytest.approx((1 / 2 + 1 / 3 + 0) / 3)
    assert label_agreement(np.full((2, 2), 255), b[:, :2].repeat(2, 0), None, (255,)).value is None


def test_label_agreement_equals_the_per_class_loop_of_the_reference() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.integers(0, 5, (9, 11))
        b = np.where(rng.random((9, 11)) < 0.7, a, rng.integers(0, 7, (9, 11)))
        valid = rng.random((9, 11)) < 0.8
        ious = []
        for c in np.unique(np.concatenate([a[valid], b[valid]])):  # RPX compute_temporal_stability_seg
            inter = ((a == c) & (b == c) & valid).sum()
            union = (((a == c) | (b == c)) & valid).sum()
            ious.append(inter / union)
        got = label_agreement(a, b, valid.reshape(-1), ())
        assert got.value == pytest.approx(float(np.mean(ious)), abs=1e-12)
        assert got.n_valid == valid.sum()
    sparse = label_agreement(np.array([3, 10**9, 3]), np.array([3, 10**9, 7]), None, ())
    assert sparse.value == pytest.approx((1 / 2 + 1 + 0) / 3)


# --- geometry ----------------------------------------------------------------------------------


def test_motion_maps_points_of_camera_t_into_camera_t1() -> None:
    pose_t = pose(yaw_deg=20, position=(1.0, 0.5, -2.0))
    pose_t1 = pose(yaw_deg=-10, roll_deg=30, position=(0.2, 0.0, 1.0))
    point_t = np.array([0.3, -0.2, 2.5, 1.0])
    world = pose_t @ point_t
    expected = np.linalg.inv(pose_t1) @ world
    np.testing.assert_allclose(ops.motion(pose_t, pose_t1) @ point_t, expected, atol=1e-12)
    np.testing.assert_allclose(ops.rigid_inverse(pose_t1), np.linalg.inv(pose_t1), atol=1e-12)


def test_reproject_equals_a_per_pixel_loop() -> None:
    rng = np.random.default_rng(0)
    h, w = 6, 7
    depth = rng.uniform(1, 3, (h, w)).astype(np.float32)
    depth[0, 0] = 0  # no depth: not inside
    k_t, k_t1 = (50.0, 55.0, 3.2, 2.9), (60.0, 52.0, 3.0, 3.1)
    transform = ops.motion(pose(yaw_deg=2, position=(0.1, 0, 0)), pose(pitch_deg=-3, roll_deg=5))
    grid = ops.reproject(depth, k_t, k_t1, transform, (h, w))
    for v in range(h):
        for u in range(w):
            d = float(depth[v, u])
            if d <= 0:
                assert not grid.inside[v * w + u]
                continue
            point = np.array([(u - k_t[2]) * d / k_t[0], (v - k_t[3]) * d / k_t[1], d, 1.0])
            x, y, z, _ = transform @ point
            px, py = k_t1[0] * x / z + k_t1[2], k_t1[1] * y / z + k_t1[3]
            inside = z > 1e-6 and -0.5 <= px < w - 0.5 and -0.5 <= py < h - 0.5
            i = v * w + u
            assert bool(grid.inside[i]) == inside, (u, v)
            if inside:
                assert grid.x[i] == pytest.approx(px, abs=1e-4)
                assert grid.y[i] == pytest.approx(py, abs=1e-4)
                assert grid.z[i] == pytest.approx(z, rel=1e-6)


def test_bilinear_sampling_equals_a_loop_and_refuses_to_interpolate_holes() -> None:
    rng = np.random.default_rng(1)
    image = rng.uniform(1, 2, (5, 6)).astype(np.float32)
    image[2, 3] = 0  # a pixel without depth
    x = rng.uniform(-0.5, 5.499, 200).astype(np.float32)
    y = rng.uniform(-0.5, 4.499, 200).astype(np.float32)
    grid = ops.Grid(x, y, np.ones(200, bool))
    got = ops.sample_bilinear(ops.pad_for_bilinear(image), ops.cells(grid, image.shape))
    for i in range(200):
        x0, y0 = math.floor(x[i]), math.floor(y[i])
        fx, fy = x[i] - x0, y[i] - y0
        pixels = [image[min(max(r, 0), 4), min(max(c, 0), 5)]
                  for r, c in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1))]
        if min(pixels) <= 0:
            assert np.isnan(got[i])
        else:
            top = pixels[0] + fx * (pixels[1] - pixels[0])
            bottom = pixels[2] + fx * (pixels[3] - pixels[2])
            assert got[i] == pytest.approx(top + fy * (bottom - top), rel=1e-6)


def test_inside_means_the_nearest_pixel_is_in_the_image() -> None:
    x = np.array([-0.5, -0.51, 3.49, 3.5, 1.0], np.float32)
    y = np.array([0.0, 0.0, 0.0, 0.0, 2.5], np.float32)
    grid = ops._grid(x, y, (3, 4))
    assert grid.inside.tolist() == [True, False, True, False, False]


def test_perfect_predictions_score_one_under_reproject_and_less_without() -> None:
    """Layers at 1, 2 and 4 m, a camera sliding 4 cm a frame (f = 100 px: whole-pixel
    parallax of 4, 2 and 1 px): every pixel of t that stays in view and unoccluded finds its
    own surface in t+1."""
    poses = sliding(4)
    depths, labels = scene(facing_planes(), poses)
    geometry = {"poses": poses, "intrinsics": [K] * 4}
    depth = sequence_stability("depth", depths, warp="reproject", **geometry)
    seg = sequence_stability("segmentation", labels, warp="reproject", depths=depths, **geometry)
    assert depth["ts_score"] >= 0.999 and seg["ts_score"] >= 0.999
    assert min(depth["n_valid"]) > 0.85 * SHAPE[0] * SHAPE[1]
    assert sequence_stability("depth", depths)["ts_score"] < 0.9
    assert sequence_stability("segmentation", labels)["ts_score"] < 0.5


def test_a_turning_rolling_camera_over_a_room_is_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rotation and translation every frame, a tilted floor, boxes in front of a wall."""
    poses = trajectory(4)
    intrinsics = (110.0, 110.0, 63.5, 47.5)
    depths, labels = scene(room(), poses, intrinsics, (96, 128))
    geometry = {"poses": poses, "intrinsics": [intrinsics] * 4}
    # (not 1: where a near box is magnified in t+1, a wall point can fall between its splats)
    assert sequence_stability("depth", depths, warp="reproject", **geometry)["ts_score"] >= 0.997
    assert sequence_stability("depth", depths)["ts_score"] < 0.98
    # labels: sub-pixel motion aliases fine texture (nearest sampling), but far less than none
    seg = sequence_stability("segmentation", labels, warp="reproject", depths=depths, **geometry)
    assert seg["ts_score"] > sequence_stability("segmentation", labels)["ts_score"] + 0.2
    # the other direction (the inv(T_t) @ T_t1 used to move points) does not undo it
    motion = ops.motion
    monkeypatch.setattr(ops, "motion", lambda a, b: ops.rigid_inverse(motion(a, b)))
    assert sequence_stability("depth", depths, warp="reproject", **geometry)["ts_score"] < 0.99


def test_a_prediction_that_jumps_nearer_is_penalised_not_excused_as_occlusion() -> None:
    poses = sliding(2)
    depths, _ = scene(facing_planes(), poses)
    nearer = depths[1] * np.float32(0.8)
    jump = depth_pair(depths[0], nearer, warp="reproject", pose_t=poses[0], pose_t1=poses[1],
                      intrinsics_t=K, intrinsics_t1=K)
    steady = depth_pair(depths[0], depths[1], warp="reproject", pose_t=poses[0], pose_t1=poses[1],
                        intrinsics_t=K, intrinsics_t1=K)
    assert jump.n_valid == steady.n_valid
    assert jump.value < 0.9 and steady.value == pytest.approx(1, abs=1e-6)


def test_occlusion_excludes_the_strip_hidden_behind_the_near_layer() -> None:
    """A 1 m square over a 4 m wall, the camera sliding 8 cm right: the square moves 8 px
    left, the wall 2 px, so the 6 px of wall left of the square end up behind it: the
    z-buffer of frame t's own depth excludes exactly them, and so does the GT-depth test
    for labels."""
    planes = [facing_planes()[0], facing_planes()[2]]
    poses = [pose(), pose(position=(0.08, 0.0, 0.0))]
    depths, labels = scene(planes, poses)
    grid = ops.reproject(depths[0], K, K, ops.motion(*poses), SHAPE)
    occluded = ops.self_occluded(grid, ops.cells(grid, SHAPE), SHAPE, OCCLUSION_RELATIVE,
                                 OCCLUSION_ABSOLUTE_M)
    near = depths[0] < 2
    expected = np.roll(near, -6, axis=1) & ~near  # wall pixels landing where the square lands
    assert expected.sum() == 6 * near.any(axis=1).sum()
    np.testing.assert_array_equal(occluded.reshape(SHAPE), expected)
    noisy = depths[0] * np.exp(np.random.default_rng(0).normal(0, 0.02, SHAPE)).astype(np.float32)
    grid = ops.reproject(noisy, K, K, ops.motion(*poses), SHAPE)
    noisy_occluded = ops.self_occluded(grid, ops.cells(grid, SHAPE), SHAPE, OCCLUSION_RELATIVE,
                                       OCCLUSION_ABSOLUTE_M)
    assert noisy_occluded.sum() < 1.2 * expected.sum()
    score = dict(pose_t=poses[0], pose_t1=poses[1], intrinsics_t=K, intrinsics_t1=K)
    assert depth_pair(depths[0], depths[1], warp="reproject", **score).value == pytest.approx(1, abs=1e-6)
    with_gt = segmentation_pair(labels[0], labels[1], warp="reproject", depth_t=depths[0],
                                depth_t1=depths[1], **score)
    without = segmentation_pair(labels[0], labels[1], warp="reproject", depth_t=depths[0], **score)
    assert with_gt.value == 1.0 and without.value < 0.99
    assert without.n_valid - with_gt.n_valid == expected.sum()


def test_a_sample_straddling_an_edge_takes_the_points_own_surface() -> None:
    padded = ops.pad_for_bilinear(np.array([[1.0, 1.0, 3.0, 3.0]] * 2, np.float32))
    grid = ops.Grid(np.array([1.5, 1.5, 0.5, 1.5], np.float32), np.zeros(4, np.float32),
                    np.ones(4, bool), np.array([1.02, 2.9, 1.0, 2.1], np.float32))
    at = ops.cells(grid, (2, 4))
    assert ops.sample_bilinear(padded, at).tolist() == [2.0, 2.0, 1.0, 2.0]  # across the edge
    snapped = ops.sample_surface(padded, at, grid, OCCLUSION_RELATIVE, OCCLUSION_ABSOLUTE_M)
    assert snapped.tolist() == [1.0, 3.0, 1.0, 3.0]
    holed = ops.pad_for_bilinear(np.array([[1.0, 0.0, 3.0, 3.0]] * 2, np.float32))
    assert np.isnan(ops.sample_surface(holed, at, grid, OCCLUSION_RELATIVE, OCCLUSION_ABSOLUTE_M)).all()


def test_inplane_undoes_a_pure_roll_exactly_and_excludes_what_left_the_image() -> None:
    """A square image, principal point (w/2, h/2), the camera rolled by 90 degrees: frame t+1
    is frame t turned by a quarter, and the warp turns it back about (w/2, h/2) (so one row
    comes from outside the image: excluded, never scored as wrong)."""
    shape = (40, 40)
    intrinsics = (30.0, 30.0, 20.0, 20.0)
    for roll, n_valid in ((90, 40 * 39), (-90, 40 * 39), (30, None)):
        poses = [pose(yaw_deg=5), pose(yaw_deg=5, roll_deg=roll)]
        depths, labels = scene(room(), poses, intrinsics, shape)
        assert math.degrees(ops.inplane_angle(*poses)) == pytest.approx(roll)
        seg = sequence_stability("segmentation", labels, warp="inplane", poses=poses)
        depth = sequence_stability("depth", depths, warp="inplane", poses=poses)
        if n_valid is not None:
            assert seg["per_pair"] == [1.0] and seg["n_valid"] == [n_valid]
            assert depth["ts_score"] == pytest.approx(1.0, abs=1e-6)
        else:  # 30 degrees: the corners come from outside; the rest matches up to resampling
            assert seg["n_valid"][0] < 0.85 * 1600
        assert seg["ts_score"] > sequence_stability("segmentation", labels)["ts_score"] + 0.5
        # the RPX sign (cv2 angle +roll) turns the wrong way for camera-to-world poses
        wrong = ops.inplane_grid(shape, -ops.inplane_angle(*poses))
        other = ops.sample_nearest(labels[1], ops.nearest_index(wrong, shape))
        assert label_agreement(labels[0], other, wrong.inside).value < 0.6


def test_inplane_follows_the_opencv_rotation_convention() -> None:
    """getRotationMatrix2D((w/2, h/2), a) + warpAffine: dst(p) = src(R(a) (p - c) + c), so a
    positive angle turns content counter-clockwise on screen. Our grid for a camera roll r
    uses a = -r: output (x, y) reads x_src = c (x - cx) + s (y - cy) + cx (c, s of r)."""
    h, w, roll = 6, 8, math.radians(25)
    grid = ops.inplane_grid((h, w), roll)
    c, s = math.cos(roll), math.sin(roll)
    ys, xs = np.mgrid[0:h, 0:w]
    x = c * (xs - w / 2) + s * (ys - h / 2) + w / 2
    y = -s * (xs - w / 2) + c * (ys - h / 2) + h / 2
    inside = (x >= -0.5) & (x < w - 0.5) & (y >= -0.5) & (y < h - 0.5)
    np.testing.assert_array_equal(grid.inside, inside.ravel())
    np.testing.assert_allclose(grid.x[inside.ravel()], x[inside], atol=1e-5)
    np.testing.assert_allclose(grid.y[inside.ravel()], y[inside], atol=1e-5)


# --- the command line --------------------------------------------------------------------------


def write_case(root: Path, task: str, maps: dict[str, np.ndarray],
               samples: list[dict[str, Any]], *, fmt: str = "npy") -> dict[str, Path]:
    """Predictions under root/pred and a manifest; returns the paths."""
    for stem, array in maps.items():
        if fmt == "npy":
            write_npy(root / "pred" / f"{stem}.npy", array)
        else:
            write_png(root / "pred" / f"{stem}.png", array)
    manifest = root / "manifest.json"
    manifest.write_text(json.dumps({"schema_version": 1, "samples": samples}))
    return {"pred": root / "pred", "manifest": manifest}


def rendered_case(root: Path, task: str = "depth", *, n: int = 4, depth_dir: bool = False,
                  fmt: str | None = None) -> dict[str, Path]:
    poses = sliding(n)
    depths, labels = scene(facing_planes(), poses)
    maps = {f"seq/{i:03d}": (depths if task == "depth" else labels)[i].astype(
        np.float32 if task == "depth" else np.uint8) for i in range(n)}
    samples = [{"stem": f"seq/{i:03d}", "sequence": "seq", "frame": i, "pose": poses[i].tolist(),
                "intrinsics": list(K)} for i in range(n)]
    paths = write_case(root, task, maps, samples, fmt=fmt or ("npy" if task == "depth" else "png"))
    if depth_dir:
        for i in range(n):
            write_png(root / "gt_depth" / "seq" / f"{i:03d}.png",
                      np.round(depths[i] * 1000).astype(np.uint16))
        paths["depth"] = root / "gt_depth"
    return paths


def args(paths: dict[str, Path], task: str, *extra: str) -> list[str]:
    out = ["stability", "--task", task, "--pred-dir", str(paths["pred"]), "--manifest",
           str(paths["manifest"])]
    if "depth" in paths:
        out += ["--depth-dir", str(paths["depth"])]
    return out + list(extra)


def test_cli_hand_cases_with_warp_none(rpx, tmp_path: Path) -> None:
    seg = write_case(tmp_path / "seg", "segmentation", {"a": SEG_T, "b": SEG_T1},
                     [{"stem": "a", "sequence": "s", "frame": 0}, {"stem": "b", "sequence": "s", "frame": 1}],
                     fmt="png")
    run = rpx(args(seg, "segmentation", "--jobs", "1"))
    assert run.exit_code == 0, run.stderr
    report = run.json
    assert report["warp"] == "none" and report["params"]["warp"] == "auto"
    assert "using --warp none" in run.stderr  # no pose: the fallback is said
    assert report["ts_score"] == pytest.approx(0.75, abs=1e-15)
    assert report["sequences"]["s"] == {
        "ts_score": report["ts_score"], "num_pairs": 1, "n_null_pairs": 0, "n_frames": 2,
        "per_pair": [report["ts_score"]], "n_valid": [16], "pairs": [["a", "b"]], "frames": [0, 1],
        "scene": None, "phase": None}
    depth = write_case(tmp_path / "depth", "depth", {"x/1": DEPTH_T, "x/2": DEPTH_T1},
                       [{"stem": "x/1", "sequence": "s", "frame": 1},
                        {"stem": "x/2", "sequence": "s", "frame": 2}])
    report = rpx(args(depth, "depth", "--warp", "none", "-q")).json
    assert report["ts_score"] == pytest.approx(DEPTH_EXPECTED, rel=1e-7)
    assert report["num_pairs"] == 1 and report["metric_info"]["ts_score"]["direction"] == "higher"


def test_cli_single_frame_is_one_with_zero_pairs(rpx, tmp_path: Path) -> None:
    paths = write_case(tmp_path, "depth", {"only": DEPTH_T}, [{"stem": "only", "sequence": "s", "frame": 0}])
    report = rpx(args(paths, "depth", "-q")).json
    assert (report["ts_score"], report["num_pairs"]) == (1.0, 0)
    assert report["sequences"]["s"]["ts_score"] == 1.0 and report["sequences"]["s"]["per_pair"] == []


def test_cli_orders_by_frame_and_groups_by_sequence_or_scene_and_phase(rpx, tmp_path: Path) -> None:
    a, b, c = (np.full((2, 2), v, np.float32) for v in (1.0, 1.5, 3.0))
    maps = {"s1/z": a, "s1/a": b, "s1/m": c, "r/0": a, "r/1": a, "loose/k": c}
    samples = [{"stem": "s1/z", "sequence": "one", "frame": 0},
               {"stem": "s1/a", "sequence": "one", "frame": 5},
               {"stem": "s1/m", "sequence": "one", "frame": 9},
               {"stem": "r/0", "scene": "kitchen", "phase": 0, "frame": 0},
               {"stem": "r/1", "scene": "kitchen", "phase": "clutter", "frame": 1},
               {"stem": "loose/k", "sequence": "two", "frame": 3}]
    report = rpx(args(write_case(tmp_path, "depth", maps, samples), "depth", "-q")).json
    one = report["sequences"]["one"]
    assert one["pairs"] == [["s1/z", "s1/a"], ["s1/a", "s1/m"]] and one["frames"] == [0, 5, 9]
    # constant maps: range floor 1e-3 m, so any change scores 0 and none scores 1
    assert one["per_pair"] == [0.0, 0.0]
    assert report["sequences"]["kitchen/clutter"]["per_pair"] == [1.0]
    assert report["sequences"]["kitchen/clutter"]["phase"] == "clutter"
    assert report["sequences"]["two"]["num_pairs"] == 0
    assert report["num_pairs"] == 3 and report["n_frames"] == 6 and report["n_sequences"] == 3
    assert report["ts_score"] == pytest.approx(1 / 3)  # a mean over pairs, not over sequences


def test_cli_reprojects_a_rendered_sequence(rpx, tmp_path: Path) -> None:
    depth = rendered_case(tmp_path / "d")
    report = rpx(args(depth, "depth", "--jobs", "1")).json
    assert report["warp"] == "reproject" and report["ts_score"] >= 0.999
    assert rpx(args(depth, "depth", "--warp", "none", "-q")).json["ts_score"] < 0.9
    seg = rendered_case(tmp_path / "s", "segmentation", depth_dir=True)
    report = rpx(args(seg, "segmentation", "--jobs", "1")).json
    assert report["warp"] == "reproject" and report["ts_score"] >= 0.999
    assert report["run_provenance"]["inputs"]["depth_dir"]["n_files"] == 4
    without = rpx(["stability", "--task", "segmentation", "--pred-dir", str(seg["pred"]),
                   "--manifest", str(seg["manifest"])])
    assert without.json["warp"] == "inplane" and "needs --depth-dir" in without.stderr


def test_cli_output_does_not_depend_on_jobs(rpx, tmp_path: Path) -> None:
    paths = rendered_case(tmp_path, n=11)
    reports = []
    for jobs in ("1", "2", "3"):
        report = rpx(args(paths, "depth", "--jobs", jobs, "-q")).json
        reports.append(without_provenance(report))
    assert reports[0] == reports[1] == reports[2]
    assert reports[0]["num_pairs"] == 10


def test_cli_provenance_digests_the_files_read(rpx, tmp_path: Path) -> None:
    paths = rendered_case(tmp_path, n=3)
    report = rpx(args(paths, "depth", "-q")).json
    inputs = report["run_provenance"]["inputs"]
    files = sorted(p.relative_to(paths["pred"]).as_posix() for p in paths["pred"].rglob("*.npy"))
    listing = "".join(f"{hashlib.sha256((paths['pred'] / f).read_bytes()).hexdigest()}  {f}\n"
                      for f in files)
    assert inputs["pred_dir"]["sha256"] == hashlib.sha256(listing.encode()).hexdigest()
    assert inputs["pred_dir"]["n_files"] == 3
    assert inputs["manifest"]["sha256"] == hashlib.sha256(paths["manifest"].read_bytes()).hexdigest()


def test_cli_gates_show_and_atomic_output(rpx, tmp_path: Path) -> None:
    paths = rendered_case(tmp_path, n=3)
    out = tmp_path / "ts.json"
    run = rpx(args(paths, "depth", "-q", "-o", str(out), "--require", "ts_score>=0.9999999",
                   "--warp", "none"))
    assert run.exit_code == 3 and run.stdout == ""
    report = json.loads(out.read_text())
    assert report["gates"][0]["passed"] is False
    assert rpx(["validate", str(out)]).exit_code == 0
    shown = rpx(["show", str(out), "--format", "markdown"])
    assert "| `seq` |" in shown.stdout and "ts_score" in shown.stdout
    passed = rpx(args(paths, "depth", "-q", "--require", "ts_score>=0.99"))
    assert passed.exit_code == 0 and passed.json["gates"][0]["passed"]


def test_cli_integer_depth_png_equals_metres(rpx, tmp_path: Path) -> None:
    poses = sliding(3)
    depths, _ = scene(facing_planes(), poses)
    samples = [{"stem": f"f{i}", "sequence": "s", "frame": i, "pose": poses[i].tolist(),
                "intrinsics": list(K)} for i in range(3)]
    metres = {f"f{i}": np.round(d * 1000) / 1000 for i, d in enumerate(depths)}
    millimetres = {f"f{i}": np.round(d * 1000).astype(np.uint16) for i, d in enumerate(depths)}
    a = rpx(args(write_case(tmp_path / "m", "depth", {k: v.astype(np.float32) for k, v in metres.items()},
                            samples), "depth", "-q")).json
    b = rpx(args(write_case(tmp_path / "mm", "depth", millimetres, samples, fmt="png"), "depth", "-q")).json
    assert a["sequences"]["s"]["per_pair"] == pytest.approx(b["sequences"]["s"]["per_pair"], abs=1e-6)
    c = rpx(args(write_case(tmp_path / "cm", "depth", {k: (v // 10).astype(np.uint16) for k, v in
                                                       millimetres.items()}, samples, fmt="png"),
                 "depth", "-q", "--depth-scale", "100")).json
    assert c["params"]["depth_scale"] == 100.0


# --- problems ----------------------------------------------------------------------------------


def assert_failed_cleanly(run, *fragments: str) -> None:
    assert run.exit_code == 1, run.stderr
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    for fragment in fragments:
        assert fragment in run.stderr, run.stderr


def test_manifest_problems_fail_under_missing_error_and_are_listed_under_skip(rpx, tmp_path: Path) -> None:
    maps = {f"f{i}": np.full((2, 2), 1.0 + i, np.float32) for i in range(6)}
    samples = [{"stem": "f0", "sequence": "s", "frame": 0}, {"stem": "f1", "sequence": "s", "frame": 1},
               {"stem": "f2", "sequence": "s"},  # no frame number
               {"stem": "f3", "sequence": "s", "frame": 1},  # frame 1 twice
               {"stem": "f4", "sequence": "s", "frame": 4},
               {"stem": "ghost", "sequence": "s", "frame": 9}]  # no prediction; f5 has no entry
    paths = write_case(tmp_path, "depth", maps, samples)
    run = rpx(args(paths, "depth"))
    assert_failed_cleanly(run, "ghost: no prediction", "f5.npy: no entry", "f2: no 'frame'",
                          "f1: frame 1 of sequence 's' is also given by f3", "no report written")
    skip = rpx(args(paths, "depth", "--missing", "skip"))
    assert skip.exit_code == 0
    report = skip.json
    assert report["unpaired"] == {"pred_only": ["f5"], "manifest_only": ["ghost"]}
    assert sorted(s["stem"] for s in report["skipped"]) == ["f1", "f2", "f3"]
    assert report["sequences"]["s"]["pairs"] == [["f0", "f4"]]
    assert "are left out" in skip.stderr


def test_a_manifest_without_sequences_is_one_sequence(rpx, tmp_path: Path) -> None:
    # stems in reverse frame order: the frame number orders them, not the stem
    paths = write_case(tmp_path / "one", "segmentation", {"z": SEG_T, "a": SEG_T1},
                       [{"stem": "z", "frame": 0}, {"stem": "a", "frame": 1}], fmt="png")
    report = rpx(args(paths, "segmentation", "--warp", "none")).json
    assert report["sequences"]["all"]["pairs"] == [["z", "a"]]
    assert report["ts_score"] == SEG_EXPECTED
    mixed = write_case(tmp_path / "mixed", "segmentation", {"z": SEG_T, "a": SEG_T1},
                       [{"stem": "z", "frame": 0, "sequence": "s"}, {"stem": "a", "frame": 1}],
                       fmt="png")
    assert_failed_cleanly(rpx(args(mixed, "segmentation", "--warp", "none")),
                          "a: no 'sequence' (nor scene/phase), unlike other frames")


def test_warp_requirements(rpx, tmp_path: Path) -> None:
    maps = {"a": DEPTH_T, "b": DEPTH_T1}
    no_k = [{"stem": s, "sequence": "q", "frame": i, "pose": np.eye(4).tolist()} for i, s in enumerate("ab")]
    paths = write_case(tmp_path / "nok", "depth", maps, no_k)
    assert_failed_cleanly(rpx(args(paths, "depth", "--warp", "reproject")), "no pose or no intrinsics",
                          "manifest.json")
    auto = rpx(args(paths, "depth"))
    assert auto.json["warp"] == "inplane"
    assert "have no intrinsics" in auto.stderr and "using --warp inplane" in auto.stderr
    bare = write_case(tmp_path / "bare", "depth", maps, [{"stem": s, "sequence": "q", "frame": i}
                                                         for i, s in enumerate("ab")])
    assert_failed_cleanly(rpx(args(bare, "depth", "--warp", "inplane")), "no pose")
    seg = write_case(tmp_path / "seg", "segmentation", {"a": SEG_T, "b": SEG_T1}, no_k, fmt="png")
    assert rpx(args(seg, "segmentation", "--warp", "reproject")).exit_code == 2
    assert rpx(args(paths, "depth", "--depth-dir", str(tmp_path))).exit_code == 2


def test_unusable_predictions_fail_with_one_line_per_file(rpx, tmp_path: Path) -> None:
    bad = DEPTH_T.copy()
    bad[0, 1] = np.nan
    samples = [{"stem": s, "sequence": "q", "frame": i} for i, s in enumerate("abc")]
    paths = write_case(tmp_path / "nan", "depth", {"a": DEPTH_T, "b": bad, "c": DEPTH_T}, samples)
    run = rpx(args(paths, "depth", "-q"))
    assert_failed_cleanly(run, "b.npy: 1 non-finite predicted depth value(s)")
    assert len(run.stderr.strip().splitlines()) == 2  # the file, then the summary
    shapes = write_case(tmp_path / "shape", "depth", {"a": DEPTH_T, "b": np.ones((3, 2), np.float32)},
                        samples[:2])
    assert_failed_cleanly(rpx(args(shapes, "depth", "-q")), "differ in size: 2x2 and 2x3",
                          "a.npy", "b.npy")
    colour = write_case(tmp_path / "rgb", "segmentation", {"a": np.zeros((2, 2, 3), np.uint8),
                                                           "b": SEG_T[:2, :2]}, samples[:2], fmt="png")
    assert_failed_cleanly(rpx(args(colour, "segmentation", "-q")), "a.png", "channels")
    out = tmp_path / "never.json"
    assert rpx(args(paths, "depth", "-q", "-o", str(out))).exit_code == 1 and not out.exists()


@pytest.mark.parametrize("extra", [["--task", "volume"], ["--warp", "affine"], ["--depth-scale", "0"],
                                   ["--jobs", "0"], ["--require", "ts_score>>0.9"],
                                   ["--missing", "empty"], ["--ignore-index", "x"]])
def test_bad_flags_are_usage_errors(rpx, tmp_path: Path, extra: list[str]) -> None:
    paths = write_case(tmp_path, "depth", {"a": DEPTH_T}, [{"stem": "a", "sequence": "q", "frame": 0}])
    run = rpx([*args(paths, "depth"), *extra])
    assert run.exit_code == 2 and run.stdout == ""


def test_help_has_an_example_and_the_schema_lists_the_additions(rpx) -> None:
    run = rpx(["stability", "--help"])
    assert run.exit_code == 0 and "Example" in run.stdout and "jq" in run.stdout
    schema = json.loads(rpx(["schema", "stability"]).stdout)
    assert {"unpaired", "skipped", "n_null_pairs", "metric_info"} <= set(schema["properties"])


def test_ground_truth_holes_are_neither_reprojected_nor_occluders() -> None:
    poses = sliding(2)
    depths, labels = scene(facing_planes(), poses)
    holed = [d.copy() for d in depths]
    for d in holed:
        d[10:14, 20:30] = np.nan
        d[30:32, :] = np.inf
        d[0, :] = 0
    score = dict(pose_t=poses[0], pose_t1=poses[1], intrinsics_t=K, intrinsics_t1=K)
    full = segmentation_pair(labels[0], labels[1], warp="reproject", depth_t=depths[0],
                             depth_t1=depths[1], **score)
    holes_t = segmentation_pair(labels[0], labels[1], warp="reproject", depth_t=holed[0],
                                depth_t1=depths[1], **score)
    assert holes_t.value == full.value == 1.0
    hole_pixels = int((~(holed[0] > 0) | ~np.isfinite(holed[0])).sum())
    assert full.n_valid - hole_pixels <= holes_t.n_valid < full.n_valid
    # a hole in frame t+1's GT cannot hide anything: fewer pixels excluded, never an error
    holes_t1 = segmentation_pair(labels[0], labels[1], warp="reproject", depth_t=depths[0],
                                 depth_t1=holed[1], **score)
    assert holes_t1.n_valid > full.n_valid
