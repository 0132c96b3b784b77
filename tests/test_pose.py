"""``rpx eval pose``: hand-computed cases, scipy and SuperGlue references, invariants, and
every bad input as a one-line error naming the file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_jobs_and_shards_agree, assert_one_line_error, dirs, rz, write_json, write_npy
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.io.poses import Pose, quaternion_to_matrix
from rpx_cli.tasks.base import Sample
from rpx_cli.tasks.pose import RelativePose, pose_auc, rotation_angle_deg, vector_angle_deg
from rpx_cli.testing import summarize_samples

TASK = RelativePose()
PARAMS = {"translation_sign_ambiguous": False}


def axis_angle_quaternion(axis, degrees: float) -> np.ndarray:
    """(x, y, z, w) of a rotation by ``degrees`` about ``axis``."""
    axis = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    half = math.radians(degrees) / 2
    return np.r_[axis * math.sin(half), math.cos(half)]


def write_pose(path: Path, rotation: np.ndarray, t, form: str = "R") -> Path:
    """One pose in any of the six formats (``form`` names the JSON key, or npy / npz)."""
    from scipy.spatial.transform import Rotation

    path.parent.mkdir(parents=True, exist_ok=True)
    t = [float(v) for v in t]
    xyzw = Rotation.from_matrix(rotation).as_quat()  # scalar last
    if form == "npy":
        np.save(path.with_suffix(".npy"), np.r_[t, xyzw])
        return path.with_suffix(".npy")
    if form == "npz":
        np.savez(path.with_suffix(".npz"), position=np.array(t), orientation=xyzw)
        return path.with_suffix(".npz")
    document = {
        "R": {"R": rotation.tolist(), "t": t},
        "matrix": {"matrix": np.vstack([np.c_[rotation, t], [0, 0, 0, 1]]).tolist()},
        "quaternion_xyzw": {"quaternion_xyzw": xyzw.tolist(), "t": t},
        "quaternion_wxyz": {"quaternion_wxyz": np.roll(xyzw, 1).tolist(), "t": t},
    }[form]
    path.with_suffix(".json").write_text(json.dumps(document))
    return path.with_suffix(".json")


def row_of(pred: Pose | None, gt: Pose, **params) -> dict:
    return TASK.evaluate(pred, gt, {**PARAMS, **params}, pred_path="p", gt_path="g").row


# --- hand-computed ---------------------------------------------------------------------

def test_reference_case(rpx, tmp_path: Path) -> None:
    write_pose(tmp_path / "pred" / "a", rz(90), [1, 0, 0])
    write_pose(tmp_path / "gt" / "a", np.eye(3), [0, 1, 0])
    report = rpx(f"eval pose {dirs(tmp_path)}").json
    row = report["rows"][0]
    assert row["rotation_error_deg"] == pytest.approx(90.0, abs=1e-12)
    assert row["translation_error_m"] == pytest.approx(math.sqrt(2), abs=1e-15)
    assert row["translation_angular_deg"] == pytest.approx(90.0, abs=1e-12)
    assert row["pose_error_max_deg"] == pytest.approx(90.0, abs=1e-12)
    assert report["aggregate"]["n_frames"] == 1 and report["aggregate"]["n_missing"] == 0
    # one error of 90 deg is beyond every AUC threshold
    assert report["dataset"] == {"auc_5deg": 0.0, "auc_10deg": 0.0, "auc_20deg": 0.0,
                                 "median_rotation_error_deg": pytest.approx(90.0),
                                 "median_translation_error_m": pytest.approx(math.sqrt(2))}
    assert report["metric_info"]["auc_10deg"]["direction"] == "higher"
    assert report["metric_info"]["rotation_error_deg"]["direction"] == "lower"


@pytest.mark.parametrize("form", ["R", "matrix", "quaternion_wxyz", "quaternion_xyzw", "npy", "npz"])
def test_every_format_reads_the_same_pose(rpx, tmp_path: Path, form: str) -> None:
    rotation = quaternion_to_matrix(np.array([0.9, 0.1, -0.3, 0.2]), "q", "p")  # w x y z
    write_pose(tmp_path / "gt" / "a", rotation, [0.5, -1.0, 2.0], form)
    write_pose(tmp_path / "pred" / "a", rz(3) @ rotation, [0.5, -1.0, 2.5], "R")
    row = rpx(f"eval pose {dirs(tmp_path)}").json["rows"][0]
    # R_pred^T R_gt = R^T Rz(-3) R: a 3 degree rotation, whatever R is
    assert row["rotation_error_deg"] == pytest.approx(3.0, abs=1e-9)
    assert row["translation_error_m"] == pytest.approx(0.5, abs=1e-12)


def test_quaternion_order_comes_from_the_key_and_the_format(tmp_path: Path) -> None:
    from rpx_cli.io.filebuffer import FileBuffer
    from rpx_cli.io.poses import read_pose

    xyzw = axis_angle_quaternion([1, 0, 0], 60)  # 60 deg about x
    (tmp_path / "xyzw.json").write_text(json.dumps({"quaternion_xyzw": xyzw.tolist(), "t": [0, 0, 0]}))
    (tmp_path / "wxyz.json").write_text(json.dumps({"quaternion_wxyz": xyzw.tolist(), "t": [0, 0, 0]}))
    write_npy(tmp_path / "rpx.npy", np.r_[[0.0, 0.0, 0.0], xyzw])
    buffer = FileBuffer(digest=False)
    expected = np.array([[1, 0, 0], [0, 0.5, -math.sqrt(3) / 2], [0, math.sqrt(3) / 2, 0.5]])
    np.testing.assert_allclose(read_pose(str(tmp_path / "xyzw.json"), buffer).R, expected, atol=1e-15)
    np.testing.assert_allclose(read_pose(str(tmp_path / "rpx.npy"), buffer).R, expected, atol=1e-15)
    # the same four numbers read as w x y z are another rotation (the RPX evaluator's bug)
    other = read_pose(str(tmp_path / "wxyz.json"), buffer).R
    assert rotation_angle_deg(other, expected) > 10


def test_quaternions_are_normalised() -> None:
    q = np.array([2.0, 0.0, 0.0, 2.0])  # w x y z: 90 deg about z, norm 2.83
    np.testing.assert_allclose(quaternion_to_matrix(q, "q", "p"), rz(90), atol=1e-15)


def test_translation_angles_and_the_sign_fold() -> None:
    a = [1.0, 0.0, 0.0]
    b = [math.cos(math.radians(170)), math.sin(math.radians(170)), 0.0]
    assert vector_angle_deg(a, b) == pytest.approx(170.0, abs=1e-12)
    assert vector_angle_deg(a, [-2.0, 0.0, 0.0]) == 180.0
    assert vector_angle_deg(a, [0.0, 0.0, 1e-10]) is None
    gt = Pose(np.eye(3), np.array(b))
    pred = Pose(np.eye(3), np.array(a))
    assert row_of(pred, gt)["translation_angular_deg"] == pytest.approx(170.0)
    folded = row_of(pred, gt, translation_sign_ambiguous=True)
    assert folded["translation_angular_deg"] == pytest.approx(10.0)
    assert folded["pose_error_max_deg"] == pytest.approx(10.0)
    # a degenerate translation has no direction: 180, folded or not
    zero = Pose(np.eye(3), np.zeros(3))
    assert row_of(zero, gt)["translation_angular_deg"] == 180.0
    assert row_of(zero, gt, translation_sign_ambiguous=True)["translation_angular_deg"] == 180.0
    assert row_of(zero, gt)["translation_error_m"] == pytest.approx(1.0)


def test_sign_fold_is_recorded_in_params_and_metric_info(rpx, tmp_path: Path) -> None:
    write_pose(tmp_path / "pred" / "a", np.eye(3), [-1, 0, 0])
    write_pose(tmp_path / "gt" / "a", np.eye(3), [1, 0, 0])
    plain = rpx(f"eval pose {dirs(tmp_path)}").json
    folded = rpx(f"eval pose {dirs(tmp_path)} --translation-sign-ambiguous").json
    assert plain["rows"][0]["translation_angular_deg"] == 180.0
    assert folded["rows"][0]["translation_angular_deg"] == 0.0
    assert plain["params"]["translation_sign_ambiguous"] is False
    assert folded["params"]["translation_sign_ambiguous"] is True
    assert "min(e, 180 - e)" in folded["metric_info"]["translation_angular_deg"]["description"]
    assert "min(e, 180 - e)" not in plain["metric_info"]["translation_angular_deg"]["description"]


def test_tiny_rotations_are_accurate() -> None:
    rng = np.random.default_rng(5)
    for degrees in (1e-4, 1e-6, 1e-2):
        q = axis_angle_quaternion(rng.normal(size=3), degrees)
        base = quaternion_to_matrix(np.roll(axis_angle_quaternion(rng.normal(size=3), 40), 1), "q", "p")
        rotation = quaternion_to_matrix(np.roll(q, 1), "q", "p")
        got = rotation_angle_deg(base, base @ rotation)
        assert got == pytest.approx(degrees, rel=1e-7)
        # the arccos form the RPX code used is not: it loses digits near cos = 1 (here
        # 3e-5 relative at 1e-4 deg, everything at 1e-6 deg)
        cosine = (np.trace(base.T @ base @ rotation) - 1) / 2
        naive = math.degrees(math.acos(min(1.0, max(-1.0, cosine))))
        if degrees <= 1e-4:
            assert abs(naive - degrees) > 1e-6 * degrees
        if degrees <= 1e-6:
            assert abs(naive - degrees) > 0.1 * degrees


def test_tiny_rotation_through_the_cli(rpx, tmp_path: Path) -> None:
    write_pose(tmp_path / "gt" / "a", np.eye(3), [0, 0, 1], "quaternion_wxyz")
    xyzw = axis_angle_quaternion([0.3, -0.4, 0.5], 1e-4)
    write_json(tmp_path / "pred" / "a.json", {"quaternion_xyzw": xyzw.tolist(), "t": [0, 1e-6, 1]})
    row = rpx(f"eval pose {dirs(tmp_path)}").json["rows"][0]
    assert row["rotation_error_deg"] == pytest.approx(1e-4, rel=1e-7)
    assert row["translation_angular_deg"] == pytest.approx(math.degrees(math.atan(1e-6)), rel=1e-9)


# --- references --------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_matches_scipy_rotation(seed: int) -> None:
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(seed)
    a, b = Rotation.random(2, random_state=rng)
    scale = rng.choice([1.0, 1e-3, 1e-6])  # also nearly equal rotations
    b = a * Rotation.from_rotvec(b.as_rotvec() * scale)
    for xyzw, rotation in ((a.as_quat(), a.as_matrix()), (b.as_quat(), b.as_matrix())):
        np.testing.assert_allclose(quaternion_to_matrix(np.roll(xyzw, 1), "q", "p"), rotation,
                                   atol=1e-14)
    expected = math.degrees((a.inv() * b).magnitude())
    got = rotation_angle_deg(a.as_matrix(), b.as_matrix())
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-11)


def superglue_pose_auc(errors, thresholds):
    """magicleap/SuperGluePretrainedNetwork models/utils.py ``pose_auc``, transcribed
    literally (``np.trapz`` is ``np.trapezoid`` in numpy 2)."""
    sort_idx = np.argsort(errors)
    errors = np.array(errors.copy())[sort_idx]
    recall = (np.arange(len(errors)) + 1) / len(errors)
    errors = np.r_[0., errors]
    recall = np.r_[0., recall]
    aucs = []
    for t in thresholds:
        last_index = np.searchsorted(errors, t)
        r = np.r_[recall[:last_index], recall[last_index-1]]
        e = np.r_[errors[:last_index], t]
        aucs.append(np.trapezoid(r, x=e)/t)
    return aucs


@settings(max_examples=80, deadline=None)
@given(errors=st.lists(st.one_of(st.floats(0, 30), st.sampled_from([0.0, 5.0, 10.0, 20.0, 180.0])),
                       min_size=1, max_size=40))
def test_auc_equals_superglue(errors: list[float]) -> None:
    got = pose_auc(np.array(errors))
    expected = superglue_pose_auc(np.array(errors), [5, 10, 20])
    assert got == pytest.approx(expected, abs=1e-12)


def test_auc_hand_computed() -> None:
    # one error e < t: the area is t - e/2 of t
    assert pose_auc(np.array([2.0])) == pytest.approx([1 - 2 / 10, 1 - 2 / 20, 1 - 2 / 40])
    # errors 2 and 30: recall 1/2 from 2 on; 30 is beyond every threshold
    assert pose_auc(np.array([30.0, 2.0])) == pytest.approx(
        [(2 * 0.25 + 3 * 0.5) / 5, (2 * 0.25 + 8 * 0.5) / 10, (2 * 0.25 + 18 * 0.5) / 20])
    assert pose_auc(np.zeros(3)) == [1.0, 1.0, 1.0]


# --- invariants --------------------------------------------------------------------------

def random_set(root: Path, n: int, seed: int) -> None:
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(seed)
    forms = ["R", "matrix", "quaternion_wxyz", "quaternion_xyzw", "npy", "npz"]
    for index in range(n):
        rotation = Rotation.random(random_state=rng).as_matrix()
        t = rng.normal(size=3)
        noise = Rotation.from_rotvec(rng.normal(0, 0.1, 3)).as_matrix()
        write_pose(root / "gt" / f"s{index:02d}", rotation, t, forms[index % 6])
        write_pose(root / "pred" / f"s{index:02d}", rotation @ noise, t + rng.normal(0, 0.2, 3),
                   forms[(index * 5 + 1) % 6])


def test_perfect_prediction_scores_zero(rpx, tmp_path: Path) -> None:
    random_set(tmp_path, 6, 1)
    report = rpx(f"eval pose --pred-dir {tmp_path / 'gt'} --gt-dir {tmp_path / 'gt'}").json
    for row in report["rows"]:
        assert row["rotation_error_deg"] < 1e-6 and row["translation_error_m"] == 0.0
        assert row["translation_angular_deg"] < 1e-6
    assert report["dataset"]["auc_5deg"] == pytest.approx(1.0, abs=1e-6)
    assert report["dataset"]["median_translation_error_m"] == 0.0


def test_order_does_not_matter() -> None:
    rng = np.random.default_rng(3)
    samples = []
    for _ in range(25):
        rotation, angle = rng.uniform(0, 30), rng.uniform(0, 30)
        samples.append(Sample({"rotation_error_deg": rotation,
                               "translation_error_m": None if rng.random() < 0.2 else rng.uniform(0, 2),
                               "translation_angular_deg": angle,
                               "pose_error_max_deg": max(rotation, angle)}))
    whole = summarize_samples(TASK, samples, PARAMS)
    for _ in range(5):
        assert summarize_samples(TASK, [samples[i] for i in rng.permutation(25)], PARAMS) == whole


def test_jobs_and_shards_do_not_change_the_numbers(rpx, tmp_path: Path) -> None:
    random_set(tmp_path, 9, 2)
    assert_jobs_and_shards_agree(rpx, f"eval pose {dirs(tmp_path)}", tmp_path)


def test_missing_prediction_is_the_worst_case(rpx, tmp_path: Path) -> None:
    random_set(tmp_path, 5, 4)
    full = rpx(f"eval pose {dirs(tmp_path)}").json
    (tmp_path / "pred" / next(p.name for p in (tmp_path / "pred").iterdir() if p.stem == "s02")).unlink()
    assert rpx(f"eval pose {dirs(tmp_path)}").exit_code == 1  # default --missing error
    report = rpx(f"eval pose {dirs(tmp_path)} --missing empty").json
    row = next(r for r in report["rows"] if r["stem"] == "s02")
    assert row["pred_path"] is None and row["translation_error_m"] is None
    assert row["rotation_error_deg"] == row["translation_angular_deg"] == row["pose_error_max_deg"] == 180.0
    assert report["aggregate"]["n_missing"] == 1
    others = [r["translation_error_m"] for r in full["rows"] if r["stem"] != "s02"]
    assert report["aggregate"]["translation_error_m"] is None  # undefined, never flattering
    assert report["aggregate"]["translation_error_m_predicted"] == pytest.approx(sum(others) / 4)
    assert "translation_error_m_predicted" not in full["aggregate"]
    # nothing headline can improve by leaving a file out
    for key in ("auc_5deg", "auc_10deg", "auc_20deg"):
        assert report["dataset"][key] <= full["dataset"][key]
    for key in ("median_rotation_error_deg", "median_translation_error_m"):
        assert report["dataset"][key] >= full["dataset"][key]
    for key in ("rotation_error_deg", "translation_angular_deg", "pose_error_max_deg"):
        assert report["aggregate"][key] >= full["aggregate"][key]
    # the missing row ranks above every translation error: the median is the 3rd of 5
    values = sorted(others) + [math.inf]
    assert report["dataset"]["median_translation_error_m"] == values[2]


def test_median_on_a_missing_prediction_is_null() -> None:
    gt = Pose(np.eye(3), np.array([0.0, 0.0, 1.0]))
    rows = [row_of(None, gt), row_of(Pose(np.eye(3), np.array([0.0, 0.0, 2.0])), gt)]
    summary = summarize_samples(TASK, [Sample(row) for row in rows], PARAMS)
    assert summary["dataset"]["median_translation_error_m"] is None  # (1 + inf) / 2
    assert summary["aggregate"]["translation_error_m"] is None
    assert summary["aggregate"]["translation_error_m_predicted"] == 1.0
    assert summary["dataset"]["median_rotation_error_deg"] == 90.0  # (0 + 180) / 2


# --- bad input ---------------------------------------------------------------------------

IDENTITY = {"R": np.eye(3).tolist(), "t": [0, 0, 1]}
BAD_JSON = [
    ({"quaternion_wxyz": [0, 0, 0, 0], "t": [0, 0, 1]}, "zero quaternion"),
    ({"quaternion_xyzw": [0, 0, 0, 1e-13], "t": [0, 0, 1]}, "zero quaternion"),
    ({"R": (np.eye(3) * 1.01).tolist(), "t": [0, 0, 1]}, "'R' is not a rotation"),
    ({"R": (np.eye(3) + 2e-6 * np.eye(3)[::-1]).tolist(), "t": [0, 0, 1]}, "'R' is not a rotation"),
    ({"R": np.diag([1.0, 1.0, -1.0]).tolist(), "t": [0, 0, 1]}, "reflection"),
    ({"matrix": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0.1, 1]]}, "last row must be"),
    ({"matrix": [[2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]},
     "3x3 block of 'matrix' is not a rotation"),
    ({"matrix": np.eye(4).tolist(), "t": [0, 0, 1]}, "'t' beside 'matrix'"),
    ({"R": np.eye(3).tolist()}, "needs a translation 't'"),
    ({"quaternion_wxyz": [1, 0, 0, 0]}, "needs a translation 't'"),
    ({"R": np.eye(3).tolist(), "quaternion_wxyz": [1, 0, 0, 0], "t": [0, 0, 1]},
     "more than one pose form (R, quaternion_wxyz)"),
    ({"quaternion": [1, 0, 0, 0], "t": [0, 0, 1]}, "does not name its order"),
    ({"position": [0, 0, 0]}, "'orientation' (x, y, z, w) must be [4] numbers"),  # RPX's .npz members
    ({"R": [[1, 0], [0, 1]], "t": [0, 0, 1]}, "'R' must be 3x3 numbers"),
    ({"R": np.eye(3).tolist(), "t": [0, 1]}, "'t' must be [3] numbers"),
    ({"R": np.eye(3).tolist(), "t": [0, "a", 1]}, "'t' must be [3] numbers"),
    ({"R": np.eye(3).tolist(), "t": ["0", "0", "1"]}, "'t' must be [3] numbers"),
    ({"R": [[1, 0, 0], [0, 1, 0], [0, 0]], "t": [0, 0, 1]}, "'R' must be 3x3 numbers"),
    ({"matrix": np.eye(3).tolist()}, "'matrix' must be 4x4 numbers"),
    ({"quaternion_wxyz": [1, 0, 0], "t": [0, 0, 1]}, "'quaternion_wxyz' must be [4] numbers"),
    ([1, 2, 3], "expected one of"),
]


@pytest.mark.parametrize(("document", "message"), BAD_JSON, ids=[m for _, m in BAD_JSON])
def test_bad_json_pose(rpx, tmp_path: Path, document, message: str) -> None:
    write_pose(tmp_path / "gt" / "a", np.eye(3), [0, 0, 1])
    bad = write_json(tmp_path / "pred" / "a.json", document)
    assert_one_line_error(rpx(f"eval pose {dirs(tmp_path)}"), bad, message)


@pytest.mark.parametrize("text", ['{"R": [[NaN, 0, 0], [0, 1, 0], [0, 0, 1]], "t": [0, 0, 1]}',
                                  '{"R": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "t": [0, Infinity, 1]}',
                                  '{"quaternion_xyzw": [0, 0, 0, NaN], "t": [0, 0, 1]}'])
def test_non_finite_json(rpx, tmp_path: Path, text: str) -> None:
    write_pose(tmp_path / "pred" / "a", np.eye(3), [0, 0, 1])
    bad = tmp_path / "gt" / "a.json"
    bad.parent.mkdir()
    bad.write_text(text)
    assert_one_line_error(rpx(f"eval pose {dirs(tmp_path)}"), bad, "non-finite")


def test_not_json(rpx, tmp_path: Path) -> None:
    write_pose(tmp_path / "pred" / "a", np.eye(3), [0, 0, 1])
    bad = tmp_path / "gt" / "a.json"
    bad.parent.mkdir()
    bad.write_text("{R: 1")
    assert_one_line_error(rpx(f"eval pose {dirs(tmp_path)}"), bad, "not valid JSON")


@pytest.mark.parametrize(("array", "message"), [
    (np.array([0, 0, 0, 0, 0, 0, 0.0]), "zero quaternion"),
    (np.array([0, 0, np.nan, 0, 0, 0, 1.0]), "non-finite"),
    (np.array([0, 0, 0, 0, 0, 0, np.inf]), "non-finite"),
    (np.zeros(6), "must hold 7 numbers"),
    (np.array([True] * 7), "must hold 7 numbers"),
])
def test_bad_npy_pose(rpx, tmp_path: Path, array: np.ndarray, message: str) -> None:
    write_pose(tmp_path / "gt" / "a", np.eye(3), [0, 0, 1])
    bad = write_npy(tmp_path / "pred" / "a.npy", array)
    assert_one_line_error(rpx(f"eval pose {dirs(tmp_path)}"), bad, message)


@pytest.mark.parametrize(("arrays", "message"), [
    ({"position": np.zeros(3)}, "no array named 'orientation'"),
    ({"orientation": np.array([0, 0, 0, 1.0])}, "no array named 'position'"),
    ({"position": np.zeros(3), "orientation": np.zeros(4)}, "zero quaternion"),
    ({"position": np.zeros(2), "orientation": np.array([0, 0, 0, 1.0])}, "'position' must hold 3"),
    ({"position": np.array([0, np.nan, 0]), "orientation": np.array([0, 0, 0, 1.0])}, "non-finite"),
])
def test_bad_npz_pose(rpx, tmp_path: Path, arrays: dict, message: str) -> None:
    write_pose(tmp_path / "gt" / "a", np.eye(3), [0, 0, 1])
    bad = tmp_path / "pred" / "a.npz"
    bad.parent.mkdir(parents=True)
    np.savez(bad, **arrays)
    assert_one_line_error(rpx(f"eval pose {dirs(tmp_path)}"), bad, message)


def test_rotation_tolerance_is_1e6(rpx, tmp_path: Path) -> None:
    # a symmetric perturbation of 4e-7 moves R^T R by ~8e-7 (accepted); 2e-6 is refused above
    nearly = np.eye(3) + 4e-7 * np.eye(3)[::-1]
    write_pose(tmp_path / "gt" / "a", np.eye(3), [0, 0, 1])
    write_json(tmp_path / "pred" / "a.json", {"R": nearly.tolist(), "t": [0, 0, 1]})
    row = rpx(f"eval pose {dirs(tmp_path)}").json["rows"][0]
    assert row["rotation_error_deg"] < 1e-4
