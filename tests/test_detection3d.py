"""``rpx eval detection3d``: hand-computed cases, autoware-ml's definitions as a plain loop,
APH, the footprint/3D IoU against shapely, invariants (shards, jobs, order) and every input
error. The comparison with the nuScenes devkit is in ``test_detection3d_devkit.py``."""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
import shapely
from helpers import FIXTURES, assert_jobs_and_shards_agree

from rpx_cli.api import evaluate_dirs
from rpx_cli.errors import ParameterError
from rpx_cli.io.boxes3d import quaternion_yaw
from rpx_cli.ops.boxes3d import bev_corners, bev_iou, heading_accuracy, iou3d, yaw_diff

STREET = FIXTURES / "detection3d" / "street"


def cbox(label, x, y, *, score=None, yaw=0.0, z=0.0, lwh=(4.0, 2.0, 1.5), velocity=(0.0, 0.0),
         **extra) -> dict:
    """A compact box."""
    out = {"box": [float(x), float(y), float(z), *map(float, lwh), float(yaw), *map(float, velocity)],
           "label": label, **extra}
    if score is not None:
        out["score"] = score
    return out


def write(root: Path, samples: dict[str, tuple[list, list]]) -> str:
    for role in ("gt", "pred"):
        (root / role).mkdir(parents=True, exist_ok=True)
    for stem, (gt, pred) in samples.items():
        (root / "gt" / f"{stem}.json").write_text(json.dumps(gt))
        (root / "pred" / f"{stem}.json").write_text(json.dumps(pred))
    return f"eval detection3d --pred-dir {root / 'pred'} --gt-dir {root / 'gt'}"


def dataset(rpx, command: str) -> dict:
    run = rpx(command)
    assert run.exit_code == 0, run.stderr
    return run.json["dataset"]


# --- hand-computed --------------------------------------------------------------------------


def test_one_tp_then_one_fp_is_not_ap_1_under_nuscenes(rpx, tmp_path: Path) -> None:
    # recall reaches 1 with precision 1, then the FP leaves precision 1/2 *at* recall 1:
    # np.interp reads the last value there, so the point r = 1 scores 1/2 - 0.1
    cmd = write(tmp_path, {"a": ([cbox("car", 10, 0)], [cbox("car", 10, 0, score=0.9),
                                                          cbox("car", 30, 0, score=0.5)])})
    data = dataset(rpx, cmd)
    expected = (89 * 0.9 + 0.4) / 90 / 0.9
    assert data["per_class"]["car"]["AP_0p5m"] == pytest.approx(0.9938271604938275, abs=1e-15)
    assert data["mAP"] == pytest.approx(expected, abs=1e-15)
    # the envelope changes nothing here: max(p[i:]) at the FP is still 1/2, at recall 1
    assert dataset(rpx, f"{cmd} --protocol autoware")["mAP"] == pytest.approx(expected, abs=1e-15)


def test_fp_above_the_only_tp(rpx, tmp_path: Path) -> None:
    cmd = write(tmp_path, {"a": ([cbox("car", 10, 0)], [cbox("car", 30, 0, score=0.9),
                                                          cbox("car", 10, 0, score=0.5)])})
    # raw: precision 0 at recall 0 rising to 1/2 at recall 1, interpolated linearly: the 81
    # points r >= 0.2 give 0.5 r - 0.1, the others 0 → 16.2 / 90 / 0.9 = 0.2
    assert dataset(rpx, cmd)["mAP"] == pytest.approx(0.2, abs=1e-12)
    # envelope: 1/2 everywhere → (0.5 - 0.1) / 0.9
    assert dataset(rpx, f"{cmd} --protocol autoware")["mAP"] == pytest.approx(0.4 / 0.9, abs=1e-12)


def test_a_prediction_exactly_at_the_threshold(rpx, tmp_path: Path) -> None:
    cmd = write(tmp_path, {"a": ([cbox("car", 12.25, -3.5)], [cbox("car", 12.75, -3.5, score=0.8)])})
    nuscenes = dataset(rpx, cmd)["per_class"]["car"]
    autoware = dataset(rpx, f"{cmd} --protocol autoware")["per_class"]["car"]
    assert nuscenes["AP_0p5m"] == 0.0 and nuscenes["AP_1m"] > 0.9  # 0.5 < 0.5 fails
    assert autoware["AP_0p5m"] == autoware["AP_1m"] > 0.9  # 0.5 <= 0.5 passes
    flipped = dataset(rpx, f"{cmd} --dist-rule le")["per_class"]["car"]
    assert flipped["AP_0p5m"] == nuscenes["AP_1m"]


def test_score_ties_follow_each_protocol(rpx, tmp_path: Path) -> None:
    # equal scores: the devkit ranks the later-listed prediction first (here the FP),
    # autoware-ml the earlier (the TP); the order is the same across samples (stem order)
    cmd = write(tmp_path, {"a": ([cbox("car", 10, 0)], [cbox("car", 10, 0, score=0.5)]),
                           "b": ([], [cbox("car", -10, 0, score=0.5)])})
    assert dataset(rpx, cmd)["mAP"] == pytest.approx(0.2, abs=1e-12)
    tp_first = (89 * 0.9 + 0.4) / 90 / 0.9
    assert dataset(rpx, f"{cmd} --protocol autoware")["mAP"] == pytest.approx(tp_first, abs=1e-12)
    assert dataset(rpx, f"{cmd} --score-ties earlier")["mAP"] == pytest.approx(tp_first, abs=1e-12)


def test_absent_classes_and_their_means(rpx, tmp_path: Path) -> None:
    cmd = write(tmp_path, {"a": ([cbox("car", 10, 0)], [cbox("car", 10, 0, score=0.9),
                                                          cbox("truck", 5, 5, score=0.4)])})
    cmd += " --class-names car,truck,bus"
    nuscenes = dataset(rpx, cmd)
    assert nuscenes["per_class"]["bus"]["AP"] == 0.0 and nuscenes["per_class"]["bus"]["ATE"] == 1.0
    assert nuscenes["per_class"]["truck"]["AP"] == 0.0
    assert nuscenes["mAP"] == pytest.approx(1 / 3, abs=1e-12)  # car 1, truck 0, bus 0
    assert nuscenes["mATE"] == pytest.approx((0 + 1 + 1) / 3, abs=1e-12)
    autoware = dataset(rpx, f"{cmd} --protocol autoware")
    bus = autoware["per_class"]["bus"]
    assert bus["AP"] is None and bus["AP_2m"] is None and bus["APH"] is None and bus["ATE"] is None
    assert bus["n_gt"] == bus["n_pred"] == 0
    assert autoware["per_class"]["truck"]["AP"] == 0.0  # predictions only: 0, counted
    assert autoware["mAP"] == pytest.approx(1 / 2, abs=1e-12)


def test_class_caps(rpx, tmp_path: Path) -> None:
    # GT at exactly 50 m ((30, 40)); a prediction on it, and one at 60 m with no GT
    cmd = write(tmp_path, {"a": ([cbox("car", 30, 40), cbox("car", 5, 0)],
                                 [cbox("car", 30, 40, score=0.9), cbox("car", 5, 0, score=0.8),
                                  cbox("car", 60, 0, score=0.95)])})
    nuscenes = dataset(rpx, f"{cmd} --class-range car=50")
    assert nuscenes["per_class"]["car"]["n_gt"] == 1  # 50 < 50 fails
    assert nuscenes["per_class"]["car"]["n_pred"] == 1  # predictions capped too
    assert nuscenes["mAP"] == pytest.approx(1.0, abs=1e-12)
    autoware = dataset(rpx, f"{cmd} --class-range car=50 --protocol autoware")
    assert autoware["per_class"]["car"]["n_gt"] == 2  # 50 <= 50
    assert autoware["per_class"]["car"]["n_pred"] == 3  # predictions never capped
    # the 60 m prediction ranks first and is a false positive: envelope 2/3 throughout
    assert autoware["mAP"] == pytest.approx((2 / 3 - 0.1) / 0.9, abs=1e-12)


def test_ego_translation_sets_the_distance(rpx, tmp_path: Path) -> None:
    far = {"ego_translation": [100.0, 0.0, 0.0]}
    cmd = write(tmp_path, {"a": ([cbox("car", 10, 0, **far)], [cbox("car", 10, 0, score=0.9, **far)])})
    assert dataset(rpx, f"{cmd} --class-range car=50")["per_class"]["car"]["n_gt"] == 0
    assert dataset(rpx, f"{cmd} --range 90:110")["n_gt_90m_110m"] == 1


def test_barrier_orientation_period(rpx, tmp_path: Path) -> None:
    cmd = write(tmp_path, {"a": ([cbox("barrier", 10, 0, yaw=0.3), cbox("car", 0, 10, yaw=0.3)],
                                 [cbox("barrier", 10, 0, yaw=0.3 - math.pi, score=0.9),
                                  cbox("car", 0, 10, yaw=0.3 - math.pi, score=0.9)])})
    # enough matches for calc_tp: a single TP spans recall 0..1
    nuscenes = dataset(rpx, cmd)["per_class"]
    assert nuscenes["barrier"]["AOE"] == pytest.approx(0.0, abs=1e-12)  # period π
    assert nuscenes["car"]["AOE"] == pytest.approx(math.pi, abs=1e-12)
    assert nuscenes["barrier"]["AVE"] is None and nuscenes["barrier"]["AAE"] is None
    turned = dataset(rpx, f"{cmd} --pi-period-class none")["per_class"]
    assert turned["barrier"]["AOE"] == pytest.approx(math.pi, abs=1e-12)


def test_min_pts_filter(rpx, tmp_path: Path) -> None:
    cmd = write(tmp_path, {"a": ([cbox("car", 10, 0, num_pts=0), cbox("car", 20, 0, num_pts=3)],
                                 [cbox("car", 20, 0, score=0.9)])})
    assert dataset(rpx, cmd)["n_gt"] == 1  # the devkit drops num_pts == 0
    assert dataset(rpx, f"{cmd} --protocol autoware")["n_gt"] == 2
    assert dataset(rpx, f"{cmd} --min-pts 5")["n_gt"] == 0


def test_tp_errors_and_nds_by_hand(rpx, tmp_path: Path) -> None:
    # ten cars, each matched 0.25 m off with the same size, yaw off by 0.1, velocity off by
    # (0.3, 0.4) and the attribute right: every TP error is that constant
    gt, pred = [], []
    for i in range(10):
        gt.append(cbox("car", 10 * i, 0, yaw=0.2, velocity=(1, 1), attribute="vehicle.moving"))
        pred.append(cbox("car", 10 * i + 0.25, 0, yaw=0.3, velocity=(1.3, 1.4), score=0.9 - i / 100,
                         attribute="vehicle.moving"))
    cmd = write(tmp_path, {"a": (gt, pred)})
    data = dataset(rpx, cmd)
    car = data["per_class"]["car"]
    assert car["ATE"] == pytest.approx(0.25, abs=1e-12)
    assert car["ASE"] == pytest.approx(0.0, abs=1e-12)
    assert car["AOE"] == pytest.approx(0.1, abs=1e-12)
    assert car["AVE"] == pytest.approx(0.5, abs=1e-12)
    assert car["AAE"] == 0.0
    assert car["AP_0p5m"] == pytest.approx(1.0, abs=1e-12)
    errors = 0.25 + 0.0 + 0.1 + 0.5 + 0.0
    assert data["NDS"] == pytest.approx((5 * 1.0 + 5 - errors) / 10, abs=1e-12)
    # autoware-ml: the first floor(10 * 0.11) = 1 match of each curve, AAE always 1
    autoware = dataset(rpx, f"{cmd} --protocol autoware")
    assert autoware["per_class"]["car"]["AAE"] == 1.0
    assert autoware["mATE"] == pytest.approx(0.25, abs=1e-12)
    assert autoware["NDS"] == pytest.approx((5 + 5 - (0.25 + 0.1 + 0.5 + 1.0)) / 10, abs=1e-12)


# --- APH --------------------------------------------------------------------------------------


def test_heading_accuracy_is_waymos() -> None:
    gt = np.array([0.0, 0.0, 0.0, 3.0, -3.0])
    pred = np.array([0.0, np.pi / 2, np.pi, 3.0 - 2 * np.pi, 3.0 - np.pi])
    # the last: |-3 - (3 - π)| = 6 - π
    np.testing.assert_allclose(heading_accuracy(gt, pred), [1.0, 0.5, 0.0, 1.0, 1 - (6 - np.pi) / np.pi],
                               atol=1e-12)


@pytest.mark.parametrize(("turn", "weight"), [(0.0, 1.0), (math.pi / 2, 0.5), (math.pi, 0.0),
                                              (-math.pi / 2, 0.5)])
def test_aph_weights_each_tp_by_its_heading(rpx, tmp_path: Path, turn: float, weight: float) -> None:
    cmd = write(tmp_path, {"a": ([cbox("car", 10, 0, yaw=0.5)],
                                 [cbox("car", 10, 0, yaw=0.5 + turn, score=0.9)])})
    data = dataset(rpx, cmd)
    # one TP at recall 1: precision_h = weight everywhere → max(weight - 0.1, 0) / 0.9
    assert data["mAPH"] == pytest.approx(max(weight - 0.1, 0) / 0.9, abs=1e-12)
    assert data["mAP"] == pytest.approx(1.0, abs=1e-12)


def test_aph_precision_divides_by_all_predictions(rpx, tmp_path: Path) -> None:
    # TP (heading off by π/2) then FP: precision_h 0.5 then 0.5/2 at recall 1 (raw curve)
    cmd = write(tmp_path, {"a": ([cbox("car", 10, 0)], [cbox("car", 10, 0, yaw=math.pi / 2, score=0.9),
                                                          cbox("car", 40, 0, score=0.1)])})
    assert dataset(rpx, cmd)["mAPH"] == pytest.approx((89 * 0.4 + 0.15) / 90 / 0.9, abs=1e-12)


# --- autoware-ml's definitions as a plain loop ------------------------------------------------


def _autoware_reference(samples, classes, thresholds, tp_threshold=2.0):
    """autoware-ml's metrics/detection3d/matching.py, written as a plain loop on compact boxes
    (float64; APH with rpx's precision_h = sum of heading accuracies / (TP + FP))."""
    def interpolated_ap(precision, recall, total_gt, n):
        if total_gt == 0 and n == 0:
            return None
        if n == 0:
            return 0.0
        envelope = np.maximum.accumulate(precision[::-1])[::-1]
        p = np.interp(np.linspace(0, 1, 101), recall, envelope, right=0.0)[11:] - 0.1
        p[p < 0] = 0
        return float(np.mean(p)) / 0.9

    per_class = {}
    curves_with_errors = []
    for name in classes:
        entry = {"AP": {}, "APH": {}}
        for th in thresholds:
            gts = [[b for b in gt if b["label"] == name] for gt, _ in samples]
            taken = [[False] * len(g) for g in gts]
            preds = [(b["score"], s, b) for s, (_, pred) in enumerate(samples) for b in pred
                     if b["label"] == name]
            preds.sort(key=lambda item: item[0], reverse=True)  # stable: earlier first on ties
            total = sum(len(g) for g in gts)
            tp, fp, heading, errors = [], [], [], []
            for _, s, p in preds:
                best, best_j = math.inf, -1
                for j, g in enumerate(gts[s]):
                    d = math.hypot(p["box"][0] - g["box"][0], p["box"][1] - g["box"][1])
                    if not taken[s][j] and d < best:
                        best, best_j = d, j
                if best_j >= 0 and best <= th:
                    g = gts[s][best_j]["box"]
                    taken[s][best_j] = True
                    diff = abs(p["box"][6] - g[6])
                    aoe = abs((diff + math.pi) % (2 * math.pi) - math.pi)
                    inter = np.prod(np.minimum(p["box"][3:6], g[3:6]))
                    ase = 1 - inter / (np.prod(p["box"][3:6]) + np.prod(g[3:6]) - inter)
                    ave = math.hypot(p["box"][7] - g[7], p["box"][8] - g[8])
                    tp.append(1.0)
                    fp.append(0.0)
                    heading.append(max(0.0, min(1.0, 1 - aoe / math.pi)))
                    errors.append({"ATE": best, "AOE": aoe, "ASE": ase, "AVE": ave, "AAE": 1.0})
                else:
                    tp.append(0.0)
                    fp.append(1.0)
                    heading.append(0.0)
            ctp, cfp, ch = np.cumsum(tp), np.cumsum(fp), np.cumsum(heading)
            recall = ctp / total if total else np.zeros_like(ctp)
            with np.errstate(invalid="ignore"):
                precision = np.where(ctp + cfp > 0, ctp / (ctp + cfp), 0.0)
                precision_h = np.where(ctp + cfp > 0, ch / (ctp + cfp), 0.0)
            entry["AP"][th] = interpolated_ap(precision, recall, total, len(preds))
            entry["APH"][th] = interpolated_ap(precision_h, recall, total, len(preds))
            chosen = errors[:int(np.floor(total * 0.11))]
            selected = {e: float(np.mean([x[e] for x in chosen])) for e in
                        ("ATE", "AOE", "ASE", "AVE", "AAE")} if chosen else None
            if selected:
                curves_with_errors.append(selected)
            if th == tp_threshold:
                entry["errors"] = selected
        per_class[name] = entry

    def mean(values):
        kept = [v for v in values if v is not None]
        return sum(kept) / len(kept) if kept else None

    class_ap = {n: mean(e["AP"].values()) for n, e in per_class.items()}
    means = {e: mean([c[e] for c in curves_with_errors]) for e in ("ATE", "ASE", "AOE", "AVE", "AAE")}
    m_ap = mean(class_ap.values())
    nds = None if m_ap is None else (5 * m_ap + sum(0 if v is None else max(0, 1 - v)
                                                     for v in means.values())) / 10
    return per_class, class_ap, means, m_ap, nds


def _random_scene(seed: int, classes: list[str], n: int = 10):
    rng = np.random.default_rng(seed)
    samples = {}
    for s in range(n):
        gt, pred = [], []
        for _ in range(int(rng.integers(0, 12))):
            name = str(rng.choice(classes[:-2]))  # the last two: predictions only / absent
            x, y = float(rng.integers(-120, 120)) / 4, float(rng.integers(-120, 120)) / 4
            lwh = rng.uniform(0.4, 5, 3)
            yaw = float(rng.uniform(-np.pi, np.pi))
            velocity = rng.normal(0, 2, 2)
            gt.append(cbox(name, x, y, lwh=lwh, yaw=yaw, velocity=velocity))
            for _ in range(int(rng.integers(0, 3))):
                dx, dy = ((0.5, 0.0), (0.0, 1.0), (1.5, 2.0), tuple(rng.normal(0, 0.7, 2)))[
                    int(rng.integers(0, 4))]
                score = float(rng.choice([0.3, 0.6])) if rng.random() < 0.4 else float(rng.random())
                pred.append(cbox(name, x + dx, y + dy, lwh=np.abs(lwh + rng.normal(0, 0.3, 3)) + 0.05,
                                 yaw=float(rng.uniform(-np.pi, np.pi)), velocity=rng.normal(0, 2, 2),
                                 score=score))
        for _ in range(int(rng.integers(0, 5))):
            name = str(rng.choice(classes[:-1]))
            pred.append(cbox(name, *rng.uniform(-30, 30, 2), score=float(rng.choice([0.05, 0.3, 0.9]))))
        order = rng.permutation(len(pred))
        samples[f"s{s:02d}"] = (gt, [pred[i] for i in order])
    return samples


@pytest.mark.parametrize("seed", range(4))
def test_autoware_protocol_equals_a_plain_loop_of_its_definitions(rpx, tmp_path: Path, seed: int) -> None:
    classes = ["car", "pedestrian", "barrier", "truck", "bus"]
    samples = _random_scene(seed, classes, n=10 + 10 * seed)
    thresholds = (0.5, 1.0, 2.0, 4.0)
    cmd = write(tmp_path, samples) + f" --protocol autoware --class-names {','.join(classes)}"
    data = dataset(rpx, cmd)
    ordered = [samples[k] for k in sorted(samples)]
    per_class, class_ap, means, m_ap, nds = _autoware_reference(ordered, classes, thresholds)

    def same(ours, theirs):
        if theirs is None:
            assert ours is None
        else:
            assert ours == pytest.approx(theirs, abs=1e-9)

    same(data["mAP"], m_ap)
    same(data["NDS"], nds)
    for e, value in means.items():
        same(data[f"m{e}"], value)
    for name in classes:
        ours = data["per_class"][name]
        same(ours["AP"], class_ap[name])
        for th in thresholds:
            key = f"{th:g}".replace(".", "p") + "m"
            same(ours[f"AP_{key}"], per_class[name]["AP"][th])
            same(ours[f"APH_{key}"], per_class[name]["APH"][th])
        selected = per_class[name].get("errors")
        for e in ("ATE", "ASE", "AOE", "AVE", "AAE"):
            same(ours[e], None if selected is None else selected[e])
    assert data["per_class"]["bus"]["AP"] is None  # absent from both: null


# --- geometry ---------------------------------------------------------------------------------


def _shapely_iou(ac, asz, ay, bc, bsz, by, three_d=False):
    pa = shapely.polygons(bev_corners(ac[:, :2], asz[:, :2], ay))
    pb = shapely.polygons(bev_corners(bc[:, :2], bsz[:, :2], by))
    assert np.allclose(shapely.area(pa), asz[:, 0] * asz[:, 1])
    inter = shapely.area(shapely.intersection(pa, pb))
    if not three_d:
        return inter / (shapely.area(pa) + shapely.area(pb) - inter)
    top = np.minimum(ac[:, 2] + asz[:, 2] / 2, bc[:, 2] + bsz[:, 2] / 2)
    bottom = np.maximum(ac[:, 2] - asz[:, 2] / 2, bc[:, 2] - bsz[:, 2] / 2)
    inter = inter * np.maximum(top - bottom, 0)
    return inter / (np.prod(asz, axis=1) + np.prod(bsz, axis=1) - inter)


def _random_pairs(seed: int, n: int = 5000):
    rng = np.random.default_rng(seed)
    ac = rng.uniform(-50, 50, (n, 3))
    bc = ac + rng.normal(0, 1.5, (n, 3))
    asz, bsz = rng.uniform(0.1, 6, (n, 3)), rng.uniform(0.1, 6, (n, 3))
    ay, by = rng.uniform(-4, 4, n), rng.uniform(-4, 4, n)
    k = n // 10  # identical boxes, quarter turns, shared corners, touching edges
    bc[:k], bsz[:k], by[:k] = ac[:k], asz[:k], ay[:k]
    by[k:2 * k] = ay[k:2 * k] + np.pi / 2
    bc[2 * k:3 * k, :2] = ac[2 * k:3 * k, :2] + np.stack([asz[2 * k:3 * k, 1], np.zeros(k)], 1)
    by[2 * k:3 * k] = ay[2 * k:3 * k] = 0.0
    bsz[2 * k:3 * k] = asz[2 * k:3 * k]
    return ac, asz, ay, bc, bsz, by


@pytest.mark.parametrize("seed", range(3))
def test_bev_and_3d_iou_equal_shapely(seed: int) -> None:
    pairs = _random_pairs(seed)
    got = bev_iou(*pairs)
    np.testing.assert_allclose(got, _shapely_iou(*pairs), rtol=0, atol=1e-9)
    assert (got[: len(got) // 10] == pytest.approx(1.0, abs=1e-12))
    np.testing.assert_allclose(iou3d(*pairs), _shapely_iou(*pairs, three_d=True), rtol=0, atol=1e-9)
    assert (got >= 0).all() and (got <= 1 + 1e-12).all()


def test_quaternion_yaw_equals_the_devkit() -> None:
    from nuscenes.eval.common.utils import quaternion_yaw as devkit_yaw
    from pyquaternion import Quaternion

    rng = np.random.default_rng(3)
    q = np.concatenate([rng.normal(size=(200, 4)),  # not normalised: normalised first
                        [[0, 0, 0, 1], [1, 0, 0, 0], [0.0, 0, 0, -1], [math.cos(1.5), 0, 0, math.sin(1.5)]]])
    expected = [devkit_yaw(Quaternion(x)) for x in q]
    np.testing.assert_allclose(quaternion_yaw(q), expected, rtol=0, atol=1e-12)


def test_yaw_difference_near_plus_minus_pi() -> None:
    assert yaw_diff(np.array([np.pi - 1e-7]), np.array([-np.pi + 1e-7]))[0] == pytest.approx(2e-7, abs=1e-12)
    assert yaw_diff(np.array([0.1]), np.array([0.1 + np.pi]), np.pi)[0] == pytest.approx(0.0, abs=1e-12)


def test_iou_matching(rpx, tmp_path: Path) -> None:
    # identical box (IoU 1) and one shifted by half its length (IoU 1/3)
    cmd = write(tmp_path, {"a": ([cbox("car", 0, 0), cbox("car", 20, 0)],
                                 [cbox("car", 0, 0, score=0.9), cbox("car", 22, 0, score=0.8)])})
    data = dataset(rpx, f"{cmd} --match bev-iou --iou-th 0.3 --iou-th 0.5")
    car = data["per_class"]["car"]
    assert car["AP_iou0p3"] == pytest.approx(1.0, abs=1e-12)
    # at 0.5 the shifted box is a false positive, as it is 2 m away at 0.5 m
    assert car["AP_iou0p5"] == dataset(rpx, cmd)["per_class"]["car"]["AP_0p5m"] < 1
    run = rpx(f"{cmd} --match iou3d --iou-th 0.5")
    assert run.json["rows"][0]["tp"] == 1 and "AP_iou0p5" in run.json["dataset"]["per_class"]["car"]


def test_box_origin_bottom(rpx, tmp_path: Path) -> None:
    # GT on the ground 2 m tall, a 1 m tall prediction on top of its lower half... as bottoms:
    # z in [0, 2] and [1, 2] (IoU 1/2); read as centres: [-1, 1] and [0.5, 1.5] (IoU 1/5)
    cmd = write(tmp_path, {"a": ([cbox("car", 0, 0, z=0.0, lwh=(4, 2, 2))],
                                 [cbox("car", 0, 0, z=1.0, lwh=(4, 2, 1), score=0.9)])})
    assert rpx(f"{cmd} --match iou3d").json["rows"][0]["tp"] == 0
    assert rpx(f"{cmd} --match iou3d --box-origin bottom").json["rows"][0]["tp"] == 1
    assert rpx(f"{cmd} --match iou3d --box-origin bottom --iou-th 0.51").json["rows"][0]["tp"] == 0


# --- rows, params, families ----------------------------------------------------------------


def test_rows_at_the_operating_point(rpx, tmp_path: Path) -> None:
    cmd = write(tmp_path, {"a": ([cbox("car", 10, 0), cbox("car", 20, 0), cbox("pedestrian", 0, 5)],
                                 [cbox("car", 10.5, 0, score=0.9), cbox("car", 23, 0, score=0.8),
                                  cbox("pedestrian", 0, 5, score=0.3)]),
                           "b": ([], [])})
    rows = rpx(f"{cmd} --conf-threshold 0.5").json["rows"]
    a, b = rows
    assert (a["tp"], a["fp"], a["fn"], a["n_gt"], a["n_pred"]) == (1, 1, 2, 3, 2)
    assert a["mean_center_error"] == pytest.approx(0.5) and a["f1"] == pytest.approx(0.4)
    assert (b["tp"], b["fp"], b["fn"], b["mean_center_error"], b["f1"]) == (0, 0, 0, None, 1.0)


def test_params_record_every_convention_and_flags_override(rpx, tmp_path: Path) -> None:
    cmd = write(tmp_path, {"a": ([cbox("car", 0, 0)], [cbox("car", 0, 0, score=0.9)])})
    params = rpx(f"{cmd} --protocol autoware --dist-rule lt --tp-error-exempt barrier=AVE").json["params"]
    assert params["protocol"] == "autoware" and params["dist_rule"] == "lt"
    assert params["score_ties"] == "earlier" and params["precision_curve"] == "envelope"
    assert params["absent_class"] == "null" and params["cap_rule"] == "le"
    assert params["cap_predictions"] is False and params["tp_errors"] == "autoware"
    assert params["pi_period_classes"] == [] and params["tp_error_exempt"] == {"barrier": ["AVE"]}
    assert params["dist_th"] == [0.5, 1.0, 2.0, 4.0] and params["tp_threshold"] == 2.0
    nuscenes = rpx(cmd).json["params"]
    assert nuscenes["tp_error_exempt"] == {"barrier": ["AVE", "AAE"], "traffic_cone": ["AOE", "AVE", "AAE"]}
    assert nuscenes["min_pts"] == 1 and nuscenes["pi_period_classes"] == ["barrier"]


def test_ranges_suffix_every_key(rpx) -> None:
    report = rpx(f"eval detection3d --pred-dir {STREET / 'pred'} --gt-dir {STREET / 'gt'} "
                 "--range 0:20 --range 20:").json
    data = report["dataset"]
    for key in ("mAP", "NDS", "mATE", "mAPH", "n_gt", "pooled"):
        assert f"{key}_0m_20m" in data and f"{key}_20m_inf" in data
    car = data["per_class"]["car"]
    for key in ("AP", "AP_0p5m", "APH", "ATE", "AAE", "n_gt", "n_pred"):
        assert f"{key}_0m_20m" in car
    assert car["n_gt_0m_20m"] + car["n_gt_20m_inf"] == car["n_gt"]
    assert "tp_0m_20m" in report["rows"][0] and "f1_20m_inf" in report["aggregate"]
    assert report["metric_info"]["mAP_0m_20m"]["direction"] == "higher"


def test_metrics_families(rpx) -> None:
    base = f"eval detection3d --pred-dir {STREET / 'pred'} --gt-dir {STREET / 'gt'}"
    rows_only = rpx(f"{base} --metrics rows").json
    assert "mAP" not in rows_only["dataset"] and "pooled" in rows_only["dataset"]
    assert "AP" not in rows_only["dataset"]["per_class"]["car"] and "tp" in rows_only["rows"][0]
    aph = rpx(f"{base} --metrics aph").json
    assert "mAPH" in aph["dataset"] and "mAP" not in aph["dataset"] and "tp" not in aph["rows"][0]
    assert "ATE" not in aph["dataset"]["per_class"]["car"]


def test_order_of_samples_does_not_matter_and_shards_agree(rpx, tmp_path: Path) -> None:
    samples = _random_scene(11, ["car", "pedestrian", "barrier", "truck", "bus"], n=9)
    cmd = write(tmp_path, samples)
    assert_jobs_and_shards_agree(rpx, cmd, tmp_path)
    assert_jobs_and_shards_agree(rpx, f"{cmd} --protocol autoware --range 0:15", tmp_path)


def test_submission_files_equal_the_folders(rpx, tmp_path: Path) -> None:
    sub = FIXTURES / "detection3d" / "submission"
    files = rpx(f"eval detection3d --pred-file {sub / 'pred.json'} --gt-file {sub / 'gt.json'}").json
    folders = rpx(f"eval detection3d --pred-dir {STREET / 'pred'} --gt-dir {STREET / 'gt'}").json
    assert files["dataset"]["mAP"] == pytest.approx(folders["dataset"]["mAP"], abs=1e-9)
    assert files["dataset"]["NDS"] == pytest.approx(folders["dataset"]["NDS"], abs=1e-9)
    assert [r["stem"] for r in files["rows"]] == [r["stem"] for r in folders["rows"]]


def test_perfect_predictions(rpx, tmp_path: Path) -> None:
    gt = [cbox("car", 10 * i, 3, yaw=0.1 * i, velocity=(1, 2), attribute="vehicle.moving") for i in range(12)]
    pred = [{**b, "score": 0.5 + i / 100} for i, b in enumerate(gt)]
    data = dataset(rpx, write(tmp_path, {"a": (gt, pred)}))
    assert data["mAP"] == pytest.approx(1.0, abs=1e-12) and data["mAPH"] == pytest.approx(1.0, abs=1e-12)
    assert data["mATE"] == 0.0 and data["mAOE"] == 0.0 and data["mAVE"] == 0.0 and data["mAAE"] == 0.0
    assert data["NDS"] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("protocol", ["nuscenes", "autoware"])
def test_a_perfect_frame_set_scores_exactly_one_and_passes_the_gate(rpx, tmp_path: Path,
                                                                    protocol: str) -> None:
    """(p − 0.1) / 0.9 of a precision of 1 everywhere is 1.0000000000000004 in float64:
    every AP-like ratio is clamped to [0, 1] where it is accumulated, so mAP <= 1 holds."""
    gt = [cbox(label, 10 * i, 3, yaw=0.1 * i) for i, label in enumerate(["car", "truck", "car"])]
    pred = [{**b, "score": 0.9} for b in gt]
    cmd = write(tmp_path, {"a": (gt, pred), "b": (gt[:1], pred[:1])}) + f" --protocol {protocol}"
    run = rpx(f"{cmd} --require 'dataset.mAP<=1' --require 'dataset.mAPH<=1' "
              "--require 'dataset.NDS<=1'")
    assert run.exit_code == 0, run.stderr
    data = run.json["dataset"]
    assert data["mAP"] == 1.0 and data["mAPH"] == 1.0
    for per_class in data["per_class"].values():
        assert all(per_class[key] == 1.0 for key in per_class if key.startswith("AP"))
    for row in run.json["rows"]:
        assert row["precision"] == 1.0 and row["recall"] == 1.0


def test_empty_everything_is_null_not_nan(rpx, tmp_path: Path) -> None:
    data = dataset(rpx, write(tmp_path, {"a": ([], [])}) + " --protocol autoware --class-names car")
    assert data["mAP"] is None and data["NDS"] is None and data["per_class"]["car"]["AP"] is None


# --- input errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(("box", "message"), [
    ({"box": [0, 0, 0, 4, 2, 1.5], "label": "car", "score": 0.5}, "7 or 9 numbers"),
    ({"box": [0, 0, 0, 4, 2, 0, 0], "label": "car", "score": 0.5}, "size must be at least 1e-06 m"),
    ({"box": [0, 0, "x", 4, 2, 1, 0], "label": "car", "score": 0.5}, "must hold numbers"),
    ({"box": [0, 0, 0, 4, 2, 1, 0], "label": "car"}, "needs a 'detection_score'"),
    ({"box": [0, 0, 0, 4, 2, 1, 0], "label": "car", "score": 1.5}, "number in [0, 1]"),
    ({"box": [0, 0, 0, 4, 2, 1, 0], "score": 0.5}, "missing 'detection_name'"),
    ({"translation": [0, 0, 0], "size": [2, 4, 1], "rotation": [0, 0, 0, 0], "detection_name": "car",
      "detection_score": 0.5}, "zero quaternion"),
    ({"translation": [0, 0], "size": [2, 4, 1], "rotation": [1, 0, 0, 0], "detection_name": "car",
      "detection_score": 0.5}, "'translation' must be a list of 3 numbers"),
    ({"translation": [0, 0, 0], "size": [2, -4, 1], "rotation": [1, 0, 0, 0], "detection_name": "car",
      "detection_score": 0.5}, "'size' must be at least 1e-06 m"),
    ({"translation": [0, 0, 0], "size": [2, 4, 1], "rotation": [1, 0, 0, 0], "detection_name": "bike",
      "detection_score": 0.5}, "class 'bike' is not one of --class-names"),
    ("not a box", "expected an object"),
    ({"box": [1e13, 0, 0, 4, 2, 1, 0], "label": "car", "score": 0.5}, "'box' has a value beyond ±1e+12"),
    ({"box": [0, 0, 0, 4, 2, 1e300, 0], "label": "car", "score": 0.5}, "beyond ±1e+12 (metres)"),
    ({"translation": [0, -2e12, 0], "size": [2, 4, 1], "rotation": [1, 0, 0, 0], "detection_name": "car",
      "detection_score": 0.5}, "'translation' has a value beyond ±1e+12"),
    ({"translation": [0, 0, 0], "size": [2, 4, 1], "rotation": [1e200, 0, 0, 1e200],
      "detection_name": "car", "detection_score": 0.5}, "'rotation' has a value beyond"),
    ({"translation": [0, 0, 0], "size": [2, 4, 1], "rotation": [1, 0, 0, 0], "velocity": [1e15, 0],
      "detection_name": "car", "detection_score": 0.5}, "'velocity' must be [vx, vy] (numbers within"),
    ({"translation": [0, 0, 0], "size": [2, 4, 1], "rotation": [1, 0, 0, 0], "ego_translation": [1e13, 0, 0],
      "detection_name": "car", "detection_score": 0.5}, "'ego_translation' must be three finite numbers"),
])
def test_malformed_box_is_an_input_error(rpx, tmp_path: Path, box, message: str) -> None:
    good = cbox("car", 1, 1, score=0.9)
    cmd = write(tmp_path, {"a": ([cbox("car", 1, 1)], [good, box])})
    out = tmp_path / "report.json"
    run = rpx(f"{cmd} --class-names car,truck -o {out}")
    assert run.exit_code == 1
    assert message in run.stderr and "box 1" in run.stderr
    assert str(tmp_path / "pred" / "a.json") in run.stderr and "Traceback" not in run.stderr
    assert not out.exists()


def test_non_finite_values_are_input_errors(rpx, tmp_path: Path) -> None:
    write(tmp_path, {"a": ([cbox("car", 1, 1)], [])})
    (tmp_path / "pred" / "a.json").write_text('[{"box": [0, NaN, 0, 4, 2, 1, 0], "label": "car", '
                                              '"score": 0.5}]')
    run = rpx(f"eval detection3d --pred-dir {tmp_path / 'pred'} --gt-dir {tmp_path / 'gt'}")
    assert run.exit_code == 1 and "box 0" in run.stderr and "non-finite" in run.stderr


def test_too_many_predictions_name_the_sample(rpx, tmp_path: Path) -> None:
    cmd = write(tmp_path, {"s1": ([], [cbox("car", i, 0, score=0.5) for i in range(4)])})
    run = rpx(f"{cmd} --max-boxes 3")
    assert run.exit_code == 1 and "4 predictions" in run.stderr and "s1.json" in run.stderr
    results = {"results": {"tok-9": [{"translation": [i, 0, 0], "size": [1, 1, 1], "rotation": [1, 0, 0, 0],
                                      "detection_name": "car", "detection_score": 0.5} for i in range(4)]}}
    (tmp_path / "p.json").write_text(json.dumps(results))
    (tmp_path / "g.json").write_text(json.dumps({"results": {"tok-9": []}}))
    run = rpx(f"eval detection3d --pred-file {tmp_path / 'p.json'} --gt-file {tmp_path / 'g.json'} "
              "--max-boxes 3")
    assert run.exit_code == 1 and "sample 'tok-9'" in run.stderr and "--max-boxes 3" in run.stderr


def test_submission_file_errors(rpx, tmp_path: Path) -> None:
    def run(pred, gt):
        (tmp_path / "p.json").write_text(json.dumps(pred))
        (tmp_path / "g.json").write_text(json.dumps(gt))
        return rpx(f"eval detection3d --pred-file {tmp_path / 'p.json'} --gt-file {tmp_path / 'g.json'}")

    bad = run({"results": {"x": [{"translation": [0, 0, 0], "size": [1, 1], "rotation": [1, 0, 0, 0],
                                  "detection_name": "car", "detection_score": 0.5}]}},
              {"results": {"x": []}})
    assert bad.exit_code == 1 and "sample 'x': box 0" in bad.stderr and "p.json" in bad.stderr
    mismatch = run({"results": {"x": []}}, {"results": {"x": [], "y": []}})
    assert mismatch.exit_code == 1 and "'y'" in mismatch.stderr
    layout = run([], {"results": {}})
    assert layout.exit_code == 1 and "submission layout" in layout.stderr


def test_bad_flag_values_are_usage_errors(rpx, tmp_path: Path) -> None:
    cmd = write(tmp_path, {"a": ([], [])})
    for flag in ("--dist-th 0", "--iou-th 1.5", "--class-range car", "--range 5:1",
                 "--tp-error-exempt car=XYZ", "--class-names car --class-range bus=3"):
        run = rpx(f"{cmd} {flag}")
        assert run.exit_code == 2, flag


def _street_flags(*flags: str) -> list[str]:
    return ["eval", "detection3d", "--pred-dir", str(STREET / "pred"), "--gt-dir", str(STREET / "gt"),
            *flags]


@pytest.mark.parametrize(("options", "flags"), [
    ({"ranges": ["0:x"]}, ["--range", "0:x"]),
    ({"class_range": ["car"]}, ["--class-range", "car"]),
    ({"protocol": "bogus"}, ["--protocol", "bogus"]),
    ({"tp_error_exempt": ["car=XYZ"]}, ["--tp-error-exempt", "car=XYZ"]),
    ({"ranges": ["0:20", [0, 20.0]]}, ["--range", "0:20", "--range", "0:20.0"]),
    ({"min_precision": "1"}, ["--min-precision", "1"]),
    ({"dist_th": []}, None),
])
def test_the_python_api_refuses_what_the_cli_refuses(rpx, options: dict, flags: list[str] | None) -> None:
    with pytest.raises(ParameterError) as caught:
        evaluate_dirs("detection3d", STREET / "pred", STREET / "gt", jobs=1, **options)
    if flags is None:  # no flag gives an empty list
        return
    run = rpx(_street_flags(*flags))
    assert run.exit_code == 2 and f"Error: {caught.value}\n" in run.stderr, (run.stderr, caught.value)


@pytest.mark.parametrize(("options", "flags"), [
    ({"ranges": ["0:20"]}, ["--range", "0:20"]),
    ({"ranges": [[0, 20], "20:"]}, ["--range", "0:20", "--range", "20:"]),
    ({"class_range": ["car=50"]}, ["--class-range", "car=50"]),
    ({"class_range": {"car": 50}}, ["--class-range", "car=50"]),
    ({"class_range": {"car": 50, "pedestrian": "40"}},
     ["--class-range", "car=50", "--class-range", "pedestrian=40"]),
    ({"protocol": "autoware", "tp_error_exempt": {"barrier": ["ave"]}, "cap_predictions": "yes"},
     ["--protocol", "autoware", "--tp-error-exempt", "barrier=AVE", "--cap-predictions", "yes"]),
])
def test_the_python_api_gives_the_params_of_the_cli(rpx, options: dict, flags: list[str]) -> None:
    report = evaluate_dirs("detection3d", STREET / "pred", STREET / "gt", jobs=1, **options)
    run = rpx(_street_flags(*flags))
    assert run.exit_code == 0, run.stderr
    assert report["params"] == run.json["params"]
    assert report["dataset"] == run.json["dataset"]


def test_conventions_are_read_once_from_the_resolved_params() -> None:
    from rpx_cli.ops.detection3d_curves import TPErrors
    from rpx_cli.params import Threshold
    from rpx_cli.params.option import resolve
    from rpx_cli.tasks.detection3d import Detection3D
    from rpx_cli.tasks.detection3d.params import Conventions

    task = Detection3D()
    nuscenes = Conventions.of(resolve(task, {}))
    assert nuscenes.thresholds == tuple(Threshold(t, "m") for t in (0.5, 1.0, 2.0, 4.0))
    assert nuscenes.tp_threshold == Threshold(2.0, "m") and nuscenes.by_distance
    assert (nuscenes.match_rule, nuscenes.cap_rule, nuscenes.cap_predictions, nuscenes.min_pts) == \
        ("<", "<", True, 1)
    s = nuscenes.scoring
    assert s.later_first and not s.envelope and not s.absent_null and s.tp_errors is TPErrors.NUSCENES
    assert s.pi_period == {"barrier"} and s.exempt == {"barrier": ("AVE", "AAE"),
                                                       "traffic_cone": ("AOE", "AVE", "AAE")}
    autoware = Conventions.of(resolve(task, {"protocol": "autoware", "cap_rule": "lt"}))
    assert (autoware.match_rule, autoware.cap_rule, autoware.cap_predictions, autoware.min_pts) == \
        ("<=", "<", False, 0)
    s = autoware.scoring
    assert not s.later_first and s.envelope and s.absent_null and s.tp_errors is TPErrors.AUTOWARE
    assert s.pi_period == frozenset() and s.exempt == {}
    iou = Conventions.of(resolve(task, {"match": "iou3d", "iou_th": [0.7, 0.5]}))
    assert iou.thresholds == (Threshold(0.7, "iou"), Threshold(0.5, "iou")) and not iou.by_distance
    assert iou.tp_threshold == Threshold(0.7, "iou") and iou.match_rule == ">="
    assert [t.key("AP") for t in iou.thresholds] == ["AP_iou0p7", "AP_iou0p5"]


# --- the documented commands ------------------------------------------------------------------


def _documented_commands() -> list[str]:
    lines = []
    for doc in (FIXTURES.parent / "docs" / "detection3d.md", FIXTURES.parent / "README.md"):
        for block in re.findall(r"```sh\n(.*?)```", doc.read_text(), re.S):
            lines += [line for line in block.splitlines() if line.startswith("rpx eval detection3d")]
    return lines


def _jq_keys(report: dict, expression: str) -> None:
    """The keys a documented jq filter reads exist (``.a.b`` paths, ``.a | {x, y}``)."""
    node, parts = report, [p.strip() for p in expression.split("|")]
    for part in parts:
        if part.startswith("{"):
            for key in part.strip("{}").split(","):
                assert key.strip() in node, key
        else:
            for key in filter(None, part.split(".")):
                assert key in node, key
                node = node[key]


@pytest.mark.parametrize("line", _documented_commands())
def test_documented_commands_run_on_the_fixtures(rpx, monkeypatch: pytest.MonkeyPatch, line: str) -> None:
    monkeypatch.chdir(FIXTURES.parent)
    command, _, jq = line.partition(" | ")
    run = rpx(shlex.split(command)[1:])
    assert run.exit_code == 0, run.stderr
    if jq:
        _jq_keys(run.json, shlex.split(jq)[1])


def test_the_docs_show_commands() -> None:
    assert len(_documented_commands()) >= 6
