"""``--protocol ultralytics`` against Ultralytics' own functions (reference vectors its
8.4.36, 8.4.175 and 8.4.190 releases computed — one per set of rules: the matching changed in
8.4.176, ``compute_ap`` in 8.4.37 —: tests/fixtures/ultralytics/make_vectors.py), by hand
on tiny cases (formulas), and the invariants."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rpx_cli.ops.ultralytics import (
    IOU_THRESHOLDS,
    Rules,
    UltralyticsInput,
    ap_per_class,
    compute_ap,
    correct,
    smooth,
)
from tests.helpers import assert_jobs_and_shards_agree, write_json_pair

VECTORS = Path(__file__).parent / "fixtures" / "ultralytics"


RELEASES = ["8.4.36", "8.4.175", "8.4.190"]


def _vectors(release: str) -> dict:
    return json.loads((VECTORS / f"vectors_{release}.json").read_text())


def _rules(release: str) -> Rules:
    return Rules.of(tuple(int(part) for part in release.split(".")))


def _iou_pairs(pred_xyxy: np.ndarray, gt_xyxy: np.ndarray):
    def pairs(det, gt, crowd):
        a, b = pred_xyxy[det], gt_xyxy[gt]
        w = np.clip(np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0, None)
        h = np.clip(np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0, None)
        inter = w * h
        union = ((a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
                 - inter)
        return inter / union
    return pairs


def _input(images: list[dict], n_classes: int) -> UltralyticsInput:
    gt = [(i, *g) for i, image in enumerate(images) for g in image["gt"]]
    pred = [(i, *p) for i, image in enumerate(images) for p in image["pred"]]
    g = np.array(gt, float).reshape(-1, 6)
    d = np.array(pred, float).reshape(-1, 7)
    pairs = _iou_pairs(d[:, 3:], g[:, 2:])
    from rpx_cli.ops.geometry import BOXES

    def similarity(order, gorder):  # the greedy matcher's: boxes as [x, y, w, h]
        xywh = lambda a: np.c_[a[:, :2], a[:, 2:] - a[:, :2]]  # noqa: E731
        return BOXES.similarity(xywh(d[order, 3:]), xywh(g[gorder, 2:]))

    return UltralyticsInput(n_classes, g[:, 0].astype(int), g[:, 1].astype(int),
                            np.zeros(len(g), bool), np.zeros(len(g), bool), d[:, 0].astype(int),
                            d[:, 1].astype(int), d[:, 2], pairs, similarity)


# The vectors were made where numpy sorts with its AVX2 code (its X86_V3 dispatch). Its
# AVX-512 sort (X86_V4) orders tied confidences otherwise — np.argsort(-conf) in
# ap_per_class, Ultralytics' and rpx's alike —, so on such a CPU Ultralytics itself prints
# other P, R and F1 (up to 0.01 apart; the matching is the same). There the comparisons run
# in a child with numpy's AVX-512 dispatch off: as the vectors were made.
AS_RECORDED = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR", "RPX_TEST_AS_RECORDED": "1"}


def numpy_sorts_with_avx512() -> bool:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:
        return False
    return bool(__cpu_features__.get("AVX512_SKX")) and "RPX_TEST_AS_RECORDED" not in os.environ


def compared_here(request) -> bool:
    """True: compare in this process. False: the test ran in a child that sorts as the
    vectors' machine did, and passed there."""
    if not numpy_sorts_with_avx512():
        return True
    root = Path(__file__).resolve().parents[1]
    child = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            request.node.nodeid], cwd=request.config.rootpath, capture_output=True,
                           text=True, env={**os.environ, **AS_RECORDED, "PYTHONPATH": str(root)},
                           timeout=300)
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
    assert " passed" in child.stdout and "skipped" not in child.stdout, child.stdout[-2000:]
    return False


@pytest.mark.parametrize("release", RELEASES)
def test_matching_and_ap_per_class_equal_ultralytics(release, request):
    """``match_predictions`` bit for bit, ``ap_per_class`` to 1e-12, on every vector case."""
    if not compared_here(request):
        return
    vectors = _vectors(release)
    rules = _rules(release)
    for case in vectors["cases"]:
        images, want = case["images"], case["expected"]
        data = _input(images, case["n_classes"])
        tp, ignored = correct(data, rules.matching)
        expected = np.array([row for image in want["correct"] for row in image], bool).reshape(-1, 10)
        assert (tp == expected).all(), case["seed"]
        target = data.gt_category
        result = ap_per_class(tp, ignored, data.dt_score, data.dt_category, target, rules.drop)
        assert result.classes.tolist() == want["classes"]
        for name, got in (("p", result.p), ("r", result.r), ("f1", result.f1), ("ap", result.ap)):
            np.testing.assert_allclose(got, np.array(want[name]).reshape(got.shape), atol=1e-12,
                                       err_msg=f"{name} seed {case['seed']}")


def _write(images: list[dict], root: Path) -> None:
    for i, image in enumerate(images):
        write_json_pair(root, f"img{i:04d}",
                        [{"bbox": g[1:], "label": f"c{g[0]}"} for g in image["gt"]],
                        [{"bbox": p[2:], "label": f"c{p[0]}", "score": p[1]} for p in image["pred"]])


@pytest.mark.parametrize("release", RELEASES)
def test_report_equals_what_yolo_val_prints(rpx, tmp_path, release, request):
    """The report's figures are ``DetMetrics.mean_results`` and ``class_result`` (P, R,
    mAP50, mAP50-95) of the same detections written as files (shuffled in each file: rpx
    orders each image's detections by confidence as NMS does)."""
    if not compared_here(request):
        return
    case = _vectors(release)["cases"][2]
    images = case["images"]
    shuffled = [{"gt": image["gt"], "pred": [image["pred"][k] for k in
                                             np.random.default_rng(i).permutation(len(image["pred"]))]}
                for i, image in enumerate(images)]
    # ties in confidence keep the file order: shuffle only where no tie can move
    for image, original in zip(shuffled, images, strict=True):
        confs = [p[1] for p in original["pred"]]
        if len(set(confs)) != len(confs):
            image["pred"] = original["pred"]
    _write(shuffled, tmp_path)
    run = rpx(["eval", "detection", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt",
               "--protocol", "ultralytics", "--ultralytics-version", release])
    assert run.exit_code == 0, run.stderr
    got = run.json["dataset"]["ultralytics"]
    want = case["expected"]
    mp, mr, map50, map50_95 = want["mean_results"]
    assert got["precision"] == pytest.approx(mp, abs=1e-12)
    assert got["recall"] == pytest.approx(mr, abs=1e-12)
    assert got["mAP50"] == pytest.approx(map50, abs=1e-12)
    assert got["mAP50_95"] == pytest.approx(map50_95, abs=1e-12)
    for c, k in enumerate(want["classes"]):
        entry = got["per_class"][f"c{k}"]
        assert entry["AP50"] == pytest.approx(want["ap"][c][0], abs=1e-12)
        assert entry["AP50_95"] == pytest.approx(np.mean(want["ap"][c]), abs=1e-12)
        assert entry["precision"] == pytest.approx(want["p"][c], abs=1e-12)
        assert entry["recall"] == pytest.approx(want["r"][c], abs=1e-12)
    assert run.json["params"]["ultralytics_version"] == release


def test_compute_ap_by_hand():
    """Recall 1/2 at precision 1, then 3/4 at 3/4: ``np.interp`` draws straight lines
    between the envelope's points — 1 on [0, 0.5], 1 → 3/4 on [0.5, 0.75] — and the
    trapezoids on 101 points are exact on lines. After 0.75, to 8.4.36 the sentinel (1, 0)
    ramps 3/4 → 0 on [0.75, 1]; from 8.4.37 the point (0.75, 0) comes first, and np.interp
    reads the last of two equal abscissae: 0 from 0.75 on, so the line stops at 0.74
    (precision 0.76) and the last trapezoid falls to 0."""
    recall, precision = np.array([0.5, 0.75]), np.array([1.0, 0.75])
    head = 0.5 * 1.0 + 0.25 * (1 + 0.75) / 2
    ramp, _, _ = compute_ap(recall, precision, drop=False)
    assert ramp == pytest.approx(head + 0.25 * 0.75 / 2, abs=1e-12)
    drop, _, _ = compute_ap(recall, precision, drop=True)
    assert drop == pytest.approx(0.5 + 0.24 * (1 + 0.76) / 2 + 0.01 * 0.76 / 2, abs=1e-12)


def test_smooth_is_a_box_filter():
    y = np.arange(20, dtype=float)
    out = smooth(y, 0.1)  # round(20 · 0.2) // 2 + 1 = 3 taps
    assert out.size == 20 and out[5] == pytest.approx((4 + 5 + 6) / 3)
    assert out[0] == pytest.approx((0 + 0 + 1) / 3)  # padded with the end value


def test_unique_rule_by_hand(rpx, tmp_path):
    """GT A and B (one class); the first detection (0.9) overlaps B best (IoU 0.7) and A less
    (0.6), the second (0.8) overlaps B best (0.9): both pick B, the earlier one keeps it,
    the second is wrong though... it picked B too; A is left to nobody. Under the greedy rule
    the first takes B (its best free), the second finds B taken and A below 0.5: wrong."""
    a, b = [0.0, 0.0, 10.0, 10.0], [20.0, 0.0, 30.0, 10.0]
    d1 = [20.0, 0.0, 30.0, 7.0]  # IoU with B 0.7
    d2 = [20.0, 0.0, 30.0, 9.0]  # IoU with B 0.9
    images = [{"gt": [[0, *a], [0, *b]], "pred": [[0, 0.9, *d1], [0, 0.8, *d2]]}]
    data = _input(images, 1)
    for rule in ("unique", "greedy"):
        tp, _ = correct(data, rule)
        at = {round(float(t), 2): tp[:, k].tolist() for k, t in enumerate(IOU_THRESHOLDS)}
        assert at[0.5] == [True, False] and at[0.8] == [False, True], rule


def test_ultralytics_jobs_and_shards_change_nothing(rpx, tmp_path):
    _write(_vectors("8.4.36")["cases"][1]["images"], tmp_path)
    assert_jobs_and_shards_agree(rpx, f"eval detection --pred-dir {tmp_path / 'pred'} --gt-dir "
                                      f"{tmp_path / 'gt'} --protocol ultralytics", tmp_path)


def test_option_of_another_protocol_is_refused(rpx, tmp_path):
    _write(_vectors("8.4.36")["cases"][4]["images"], tmp_path)
    run = rpx(["eval", "detection", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt",
               "--ultralytics-version", "8.4.190"])
    assert run.exit_code == 2 and "--protocol ultralytics" in run.stderr
    old = rpx(["eval", "detection", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt",
               "--protocol", "ultralytics", "--ultralytics-version", "7.0"])
    assert old.exit_code == 2 and "8.0" in old.stderr
