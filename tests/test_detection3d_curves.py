"""``dataset.curves`` of ``rpx eval detection3d``: the curves behind AP and the TP errors.

``--protocol nuscenes``: every curve equals the nuScenes devkit's ``accumulate`` output
(``DetectionMetricData``: recall, precision, confidence and the five error arrays) to 1e-9
on the generated scenes of ``test_detection3d_devkit.py`` — per class and distance
threshold, with class caps, and per ``--range`` band (the devkit run on the boxes of the
band). ``--protocol autoware``: every curve equals a plain loop written here the way
autoware-ml's ``match_center_distance`` and ``select_recall_tp_errors`` read (one prediction
at a time, ``<=``, the earlier-listed first among equal scores). And the invariants: the
curves' AP is the report's AP, shards and ``--jobs`` give the same curves.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_jobs_and_shards_agree, dirs
from test_detection3d_devkit import CLASS_NAMES, CVPR_2019, DETECTION_NAMES, eval_boxes, scene, write

from rpx_cli.ops.detection3d_curves import calc_ap

try:
    from nuscenes.eval.common.utils import center_distance
    from nuscenes.eval.detection.algo import accumulate
except ImportError as exc:  # pragma: no cover - the devkit test says how to install it
    raise ImportError(f"the detection3d reference is missing ({exc})") from exc

ARRAYS = ("recall", "precision", "confidence", "trans_err", "vel_err", "scale_err", "orient_err",
          "attr_err")
TOKENS = {0.5: "0p5m", 1.0: "1m", 2.0: "2m", 4.0: "4m"}


def same(ours: list, theirs: np.ndarray, what: object) -> None:
    assert len(ours) == len(theirs) == 101, what
    got = np.array([np.nan if v is None else v for v in ours], dtype=np.float64)
    assert np.allclose(got, theirs, rtol=0, atol=1e-9, equal_nan=False), what


def banded(samples, low: float, high: float):
    """The samples with only the boxes whose distance (ego_translation, else the centre) is
    in [low, high): what ``--range low:high`` evaluates."""
    def keep(item) -> bool:
        x, y = item.get("ego_translation", item["translation"])[:2]
        return low <= math.hypot(x, y) < high
    return {stem: ([b for b in gt if keep(b)], [b for b in pred if keep(b)])
            for stem, (gt, pred) in samples.items()}


def assert_devkit_curves(curves: dict, samples, class_range: dict[str, float]) -> None:
    gt, pred = eval_boxes(samples, 0, class_range), eval_boxes(samples, 1, class_range)
    assert set(curves) == set(DETECTION_NAMES)
    for name in DETECTION_NAMES:
        assert set(curves[name]) == set(TOKENS.values())
        for th, token in TOKENS.items():
            md = accumulate(gt, pred, name, center_distance, th)
            for key in ARRAYS:
                same(curves[name][token][key], getattr(md, key), (name, th, key))


@pytest.mark.parametrize("seed", range(4))
def test_nuscenes_curves_equal_the_devkits_accumulate(rpx, tmp_path: Path, seed: int) -> None:
    samples = scene(seed)
    write(tmp_path, samples)
    base = f"eval detection3d {dirs(tmp_path)} --class-names {CLASS_NAMES} --range 0:15 --range 15:"
    report = rpx(base).json
    uncapped = dict.fromkeys(DETECTION_NAMES, 1e6)
    assert_devkit_curves(report["dataset"]["curves"], samples, uncapped)
    assert_devkit_curves(report["dataset"]["curves_0m_15m"], banded(samples, 0, 15), uncapped)
    assert_devkit_curves(report["dataset"]["curves_15m_inf"], banded(samples, 15, math.inf), uncapped)
    caps = " ".join(f"--class-range {k}={v}" for k, v in CVPR_2019.items())
    capped = rpx(f"{base} {caps}").json
    assert_devkit_curves(capped["dataset"]["curves"], samples, CVPR_2019)
    # the curve is what AP reads: calc_ap of its precision is the report's AP at that threshold
    for name, per_threshold in capped["dataset"]["curves"].items():
        for token in TOKENS.values():
            ap = calc_ap(np.array(per_threshold[token]["precision"]), 0.1, 0.1)
            assert ap == capped["dataset"]["per_class"][name][f"AP_{token}"]


# --- autoware-ml, as a plain loop ----------------------------------------------------------------


def compact_scene(seed: int, n_samples: int = 10) -> dict[str, tuple[list, list]]:
    """Compact boxes ``[x, y, z, l, w, h, yaw(, vx, vy)]`` with tied scores, distances exactly
    at a threshold, boxes without a velocity and false positives."""
    rng = np.random.default_rng(seed)
    classes = ("car", "pedestrian", "cone")
    samples = {}
    for s in range(n_samples):
        gt, pred = [], []
        for _ in range(int(rng.integers(0, 10))):
            label = str(rng.choice(classes))
            x, y = float(rng.integers(-120, 120)) / 4, float(rng.integers(-120, 120)) / 4
            size = [float(v) for v in rng.uniform(0.4, 4.0, 3)]
            yaw = float(rng.uniform(-np.pi, np.pi))
            velocity = [] if rng.random() < 0.2 else [float(v) for v in rng.normal(0, 2, 2)]
            gt.append({"box": [x, y, 0.0, *size, yaw, *velocity], "label": label})
            for _ in range(int(rng.integers(0, 3))):
                dx, dy = ([(0.5, 0.0), (0.0, 1.0), (1.2, 1.6), (2.0, 0.0)][int(rng.integers(0, 4))]
                          if rng.random() < 0.4 else tuple(rng.normal(0, 0.7, 2)))
                score = float(rng.choice([0.3, 0.6])) if rng.random() < 0.4 else float(rng.random())
                p_size = [float(v) for v in np.abs(np.array(size) + rng.normal(0, 0.3, 3)) + 0.05]
                p_velocity = [] if rng.random() < 0.2 else [float(v) for v in rng.normal(0, 2, 2)]
                pred.append({"box": [x + float(dx), y + float(dy), 0.0, *p_size,
                                     float(yaw + rng.normal(0, 0.5)), *p_velocity],
                             "label": label, "score": score})
        for _ in range(int(rng.integers(0, 4))):
            pred.append({"box": [*map(float, rng.uniform(-30, 30, 2)), 0.0, 1.0, 1.0, 1.0, 0.0],
                         "label": str(rng.choice(classes)), "score": float(rng.choice([0.3, 0.05]))})
        order = rng.permutation(len(pred))
        samples[f"s{s:03d}"] = (gt, [pred[i] for i in order])
    return samples


def autoware_reference(samples, label: str, threshold: float) -> dict[str, list]:
    """autoware-ml's matching for one class and threshold, one prediction at a time, and the
    curves read from it."""
    stems = sorted(samples)
    gts = {stem: [b["box"] for b in samples[stem][0] if b["label"] == label] for stem in stems}
    taken = {stem: [False] * len(gts[stem]) for stem in stems}
    preds = [(b["score"], stem, b["box"]) for stem in stems for b in samples[stem][1]
             if b["label"] == label]
    preds.sort(key=lambda item: item[0], reverse=True)  # stable: the earlier first among ties
    npos = sum(len(v) for v in gts.values())
    tp, scores, errors = [], [], []
    for score, stem, box in preds:
        best, best_d = None, math.inf
        for j, g in enumerate(gts[stem]):
            d = math.hypot(box[0] - g[0], box[1] - g[1])
            if not taken[stem][j] and d < best_d:  # argmin: the first among equals
                best, best_d = j, d
        scores.append(score)
        if best is not None and best_d <= threshold:
            taken[stem][best] = True
            g = gts[stem][best]
            diff = abs(box[6] - g[6])
            orient = abs((diff + math.pi) % (2 * math.pi) - math.pi)
            inter = math.prod(min(a, b) for a, b in zip(box[3:6], g[3:6], strict=True))
            scale = 1 - inter / (math.prod(box[3:6]) + math.prod(g[3:6]) - inter)
            velocity = math.hypot(box[7] - g[7], box[8] - g[8]) if len(box) > 7 and len(g) > 7 else 1.0
            tp.append(True)
            errors.append({"trans_err": best_d, "scale_err": scale, "orient_err": orient,
                           "vel_err": velocity, "attr_err": 1.0})
        else:
            tp.append(False)
    grid = np.linspace(0, 1, 101)
    if npos == 0 or not any(tp):
        return {"precision": [0.0] * 101, "confidence": [0.0] * 101,
                **{k: [None] * 101 for k in ARRAYS[3:]}}
    cum_tp = np.cumsum(tp).astype(float)
    precision = cum_tp / np.arange(1, len(tp) + 1)
    envelope = [max(precision[i:]) for i in range(len(precision))]
    recall = cum_tp / npos
    out = {"precision": list(np.interp(grid, recall, envelope, right=0)),
           "confidence": list(np.interp(grid, recall, scores, right=0))}
    for key in ARRAYS[3:]:
        column = []
        for i in range(101):
            k = math.floor(npos * (i / 100))
            if k < 1 or k > len(errors):
                column.append(None)
                continue
            first = [e[key] for e in errors[:k]]
            column.append(float(np.mean(first)))
        out[key] = column
    return out


@pytest.mark.parametrize("seed", range(4))
def test_autoware_curves_equal_a_plain_loop(rpx, tmp_path: Path, seed: int) -> None:
    samples = compact_scene(seed)
    for stem, (gt, pred) in samples.items():
        for role, boxes in (("gt", gt), ("pred", pred)):
            (tmp_path / role).mkdir(exist_ok=True)
            (tmp_path / role / f"{stem}.json").write_text(json.dumps(boxes))
    report = rpx(f"eval detection3d {dirs(tmp_path)} --protocol autoware").json
    curves = report["dataset"]["curves"]
    labels = sorted({b["label"] for gt, pred in samples.values() for b in (*gt, *pred)})
    assert sorted(curves) == labels
    for label in labels:
        for th, token in TOKENS.items():
            want = autoware_reference(samples, label, th)
            got = curves[label][token]
            assert got["recall"] == pytest.approx(list(np.linspace(0, 1, 101)), abs=1e-15)
            for key in ARRAYS[1:]:
                expected = want[key]
                assert [v is None for v in got[key]] == [v is None for v in expected], (label, th, key)
                same([0.0 if v is None else v for v in got[key]],
                     np.array([0.0 if v is None else v for v in expected]), (label, th, key))
    # the TP error autoware-ml reports is the curve's at recall 0.11 (the first 11 % of GT)
    for label in labels:
        entry, curve = report["dataset"]["per_class"][label], curves[label]["2m"]
        for ours, key in (("ATE", "trans_err"), ("ASE", "scale_err"), ("AOE", "orient_err"),
                          ("AVE", "vel_err")):
            if entry[ours] is None:
                assert curve[key][11] is None
            else:
                assert curve[key][11] == pytest.approx(entry[ours], abs=1e-12)


def test_a_class_without_gt_or_predictions(rpx, tmp_path: Path) -> None:
    """nuscenes: the devkit's no_predictions() (precision 0, errors 1); autoware: a class
    with neither GT nor predictions has no curve (null), one with predictions only zero
    precision and no error."""
    gt = [{"box": [1.0, 0.0, 0.0, 4.0, 2.0, 1.5, 0.0], "label": "car"}]
    pred = [{"box": [1.2, 0.0, 0.0, 4.0, 2.0, 1.5, 0.0], "label": "car", "score": 0.9},
            {"box": [9.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0], "label": "truck", "score": 0.5}]
    for role, boxes in (("gt", gt), ("pred", pred)):
        (tmp_path / role).mkdir()
        (tmp_path / role / "a.json").write_text(json.dumps(boxes))
    names = "--class-names car,truck,bus"
    nus = rpx(f"eval detection3d {dirs(tmp_path)} {names}").json["dataset"]["curves"]
    for name in ("truck", "bus"):
        curve = nus[name]["2m"]
        assert curve["precision"] == curve["confidence"] == [0.0] * 101
        assert curve["trans_err"] == [1.0] * 101
    car = nus["car"]["0p5m"]
    assert car["precision"] == [1.0] * 101 and car["confidence"] == [0.9] * 101
    assert car["trans_err"] == pytest.approx([0.2] * 101, abs=1e-12)
    auto = rpx(f"eval detection3d {dirs(tmp_path)} {names} --protocol autoware").json["dataset"]
    assert auto["curves"]["bus"] == dict.fromkeys(TOKENS.values())
    assert auto["curves"]["truck"]["1m"]["precision"] == [0.0] * 101
    assert auto["curves"]["truck"]["1m"]["trans_err"] == [None] * 101
    # one GT: floor(1 x i / 100) selects the one match only at recall 1
    car = auto["curves"]["car"]["1m"]
    assert car["trans_err"][:100] == [None] * 100
    assert car["trans_err"][100] == pytest.approx(0.2, abs=1e-12)


def test_curves_survive_shards_and_jobs(rpx, tmp_path: Path) -> None:
    write(tmp_path, scene(3, n_samples=9))
    assert_jobs_and_shards_agree(rpx, f"eval detection3d {dirs(tmp_path)} --range 0:20 --protocol autoware",
                                 tmp_path)


def test_metrics_families_leave_the_curves_out(rpx, tmp_path: Path) -> None:
    write(tmp_path, scene(4, n_samples=3))
    report = rpx(f"eval detection3d {dirs(tmp_path)} --metrics rows,ap,tp,aph").json
    assert "curves" not in report["dataset"] and report["params"]["skipped_metrics"] == ["curves"]
    only = rpx(f"eval detection3d {dirs(tmp_path)} --metrics curves").json
    assert "curves" in only["dataset"] and "mAP" not in only["dataset"]
