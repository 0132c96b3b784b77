"""``rpx eval detection3d --protocol nuscenes`` equals the nuScenes devkit to 1e-9.

The devkit (nuscenes-devkit, a test-only dependency: ``pip install --no-deps
nuscenes-devkit==1.1.9`` plus pyquaternion, shapely, scikit-learn, cachetools, tqdm) is
run the way ``DetectionEval.evaluate`` runs it — ``accumulate`` per class and distance
threshold, ``calc_ap``, ``calc_tp`` with its cone and barrier exemptions, ``DetectionMetrics``
for the means and NDS — on ``EvalBoxes`` built here from the same boxes (no NuScenes dataset
object). ``filter_eval_boxes``' distance and point filters are applied as it applies them
(its bike-rack filter needs the map and is not part of rpx).

Scenes are generated with what breaks evaluators: tied scores, distances exactly at a
threshold, trailing false positives, classes without GT or without predictions, class caps
hit exactly, yaws near ±π, barriers turned by π, unknown velocities and attributes, boxes
without lidar points, and ``ego_translation`` differing from the box centre.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

# the reference must be installed: a missing devkit fails here, it is never a silent skip
try:
    from nuscenes.eval.common.data_classes import EvalBoxes
    from nuscenes.eval.common.utils import center_distance
    from nuscenes.eval.detection.algo import accumulate, calc_ap, calc_tp
    from nuscenes.eval.detection.constants import ATTRIBUTE_NAMES, DETECTION_NAMES, TP_METRICS
    from nuscenes.eval.detection.data_classes import DetectionBox, DetectionConfig, DetectionMetrics
except ImportError as exc:  # pragma: no cover - an environment problem, said plainly
    raise ImportError(f"the detection3d reference is missing ({exc}): install it with "
                      "pip install --no-deps nuscenes-devkit==1.1.9 (as .ci/run does)") from exc

CVPR_2019 = {"car": 50, "truck": 50, "bus": 50, "trailer": 50, "construction_vehicle": 50,
             "pedestrian": 40, "motorcycle": 40, "bicycle": 40, "traffic_cone": 30, "barrier": 30}
OURS = {"trans_err": "ATE", "scale_err": "ASE", "orient_err": "AOE", "vel_err": "AVE",
        "attr_err": "AAE"}
CLASS_NAMES = ",".join(DETECTION_NAMES)


def quaternion(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def box(name: str, xyz, wlh, yaw: float, *, score: float | None = None, velocity=(0.0, 0.0),
        attribute: str = "", num_pts: int | None = None, ego=None) -> dict:
    out = {"translation": [float(v) for v in xyz], "size": [float(v) for v in wlh],
           "rotation": quaternion(yaw), "detection_name": name,
           "velocity": [None if v is None else float(v) for v in velocity],
           "attribute_name": attribute}
    if score is not None:
        out["detection_score"] = float(score)
    if num_pts is not None:
        out["num_pts"] = num_pts
    if ego is not None:
        out["ego_translation"] = [float(v) for v in ego]
    return out


ATTRS = {"car": ["vehicle.moving", "vehicle.parked", "vehicle.stopped"],
         "truck": ["vehicle.moving", "vehicle.parked"], "bus": ["vehicle.moving", "vehicle.stopped"],
         "trailer": ["vehicle.parked"], "construction_vehicle": ["vehicle.parked"],
         "pedestrian": ["pedestrian.moving", "pedestrian.standing", "pedestrian.sitting_lying_down"],
         "motorcycle": ["cycle.with_rider", "cycle.without_rider"],
         "bicycle": ["cycle.with_rider", "cycle.without_rider"], "traffic_cone": [""], "barrier": [""]}


def scene(seed: int, n_samples: int = 12, *, absent=("trailer",), gt_only=("bus",),
          pred_only=("construction_vehicle",)) -> dict[str, tuple[list[dict], list[dict]]]:
    """Samples of GT and predictions (dicts in the nuScenes form)."""
    rng = np.random.default_rng(seed)
    classes = [c for c in DETECTION_NAMES if c not in absent]
    samples = {}
    for s in range(n_samples):
        gt, pred = [], []
        for _ in range(int(rng.integers(0, 14))):
            name = str(rng.choice([c for c in classes if c not in pred_only]))
            # dyadic coordinates: offsets of 0.5, 1, 2, 4 m and 3-4-5 triangles are exact
            xyz = (float(rng.integers(-160, 160)) / 4, float(rng.integers(-160, 160)) / 4,
                   float(rng.integers(-8, 8)) / 4)
            wlh = rng.uniform(0.3, 4.0, 3)
            yaw = float(rng.choice([rng.uniform(-np.pi, np.pi), np.pi - 1e-7, -np.pi + 1e-7, np.pi]))
            velocity = (None, None) if rng.random() < 0.1 else tuple(rng.normal(0, 3, 2))
            attribute = str(rng.choice(ATTRS[name])) if rng.random() < 0.85 else ""
            num_pts = int(rng.choice([0, 1, 5, 30])) if rng.random() < 0.5 else None
            ego = None
            if rng.random() < 0.2:  # a cap hit exactly: (30, 40) is 50 m, (18, 24) is 30 m
                ego = (30.0, 40.0, 0.0) if rng.random() < 0.5 else (18.0, 24.0, 0.0)
            gt.append(box(name, xyz, wlh, yaw, velocity=velocity, attribute=attribute,
                          num_pts=num_pts, ego=ego))
            if name in gt_only:
                continue
            for _ in range(int(rng.integers(0, 3))):
                kind = rng.random()
                if kind < 0.3:  # exactly at a threshold
                    dx, dy = [(0.5, 0.0), (0.0, -1.0), (1.5, 2.0), (0.375, 0.5), (4.0, 0.0)][
                        int(rng.integers(0, 5))]
                else:
                    dx, dy = rng.normal(0, 0.8, 2)
                p_yaw = yaw + float(rng.choice([0.0, np.pi, np.pi / 2, rng.normal(0, 0.3)]))
                p_yaw = (p_yaw + np.pi) % (2 * np.pi) - np.pi
                score = float(rng.choice([0.25, 0.5, 0.75])) if rng.random() < 0.4 else \
                    float(rng.uniform(0.05, 1.0))
                pred.append(box(name, (xyz[0] + dx, xyz[1] + dy, xyz[2] + rng.normal(0, 0.2)),
                                np.abs(wlh + rng.normal(0, 0.3, 3)) + 0.05, p_yaw, score=score,
                                velocity=tuple(rng.normal(0, 3, 2)),
                                attribute=str(rng.choice(ATTRS[name])), ego=ego))
        for _ in range(int(rng.integers(0, 6))):  # false positives, some trailing (low score)
            name = str(rng.choice([c for c in classes if c not in gt_only]))
            score = float(rng.choice([0.01, 0.02, 0.25])) if rng.random() < 0.5 else float(rng.random())
            pred.append(box(name, (*rng.uniform(-40, 40, 2), 0.0), rng.uniform(0.3, 4, 3),
                            float(rng.uniform(-np.pi, np.pi)), score=score,
                            velocity=tuple(rng.normal(0, 3, 2)),
                            attribute=str(rng.choice(ATTRS[name]))))
        order = rng.permutation(len(pred))
        samples[f"sample{s:03d}"] = (gt, [pred[i] for i in order])
    return samples


def write(root: Path, samples) -> None:
    for role in ("gt", "pred"):
        (root / role).mkdir(parents=True, exist_ok=True)
    for stem, (gt, pred) in samples.items():
        (root / "gt" / f"{stem}.json").write_text(json.dumps(gt))
        (root / "pred" / f"{stem}.json").write_text(json.dumps(pred))


def eval_boxes(samples, role: int, class_range: dict[str, float]) -> EvalBoxes:
    """The boxes as the devkit holds them after ``filter_eval_boxes`` (distance, points)."""
    boxes = EvalBoxes()
    for stem in sorted(samples):
        kept = []
        for item in samples[stem][role]:
            ego = item.get("ego_translation", item["translation"])
            velocity = tuple(np.nan if v is None else v for v in item["velocity"])
            b = DetectionBox(sample_token=stem, translation=tuple(item["translation"]),
                             size=tuple(item["size"]), rotation=tuple(item["rotation"]),
                             velocity=velocity, ego_translation=tuple(ego),
                             num_pts=item.get("num_pts", -1), detection_name=item["detection_name"],
                             detection_score=item.get("detection_score", -1.0),
                             attribute_name=item["attribute_name"])
            if b.ego_dist < class_range[b.detection_name] and b.num_pts != 0:
                kept.append(b)
        boxes.add_boxes(stem, kept)
    return boxes


def devkit(samples, class_range: dict[str, float], dist_ths=(0.5, 1.0, 2.0, 4.0),
           min_recall: float = 0.1):
    """DetectionEval.evaluate's loop on the same boxes."""
    assert all(ATTRS[c] == [""] or set(ATTRS[c]) <= set(ATTRIBUTE_NAMES) for c in ATTRS)
    cfg = DetectionConfig(class_range=class_range, dist_fcn="center_distance",
                          dist_ths=list(dist_ths), dist_th_tp=2.0, min_recall=min_recall,
                          min_precision=0.1, max_boxes_per_sample=500, mean_ap_weight=5)
    gt, pred = eval_boxes(samples, 0, class_range), eval_boxes(samples, 1, class_range)
    metrics = DetectionMetrics(cfg)
    mds = {}
    for name in cfg.class_names:
        for th in cfg.dist_ths:
            mds[(name, th)] = accumulate(gt, pred, name, center_distance, th)
    for name in cfg.class_names:
        for th in cfg.dist_ths:
            metrics.add_label_ap(name, th, calc_ap(mds[(name, th)], cfg.min_recall, cfg.min_precision))
        for metric in TP_METRICS:
            md = mds[(name, cfg.dist_th_tp)]
            exempt = {"traffic_cone": ("attr_err", "vel_err", "orient_err"),
                      "barrier": ("attr_err", "vel_err")}
            tp = np.nan if metric in exempt.get(name, ()) else calc_tp(md, cfg.min_recall, metric)
            metrics.add_label_tp(name, metric, tp)
    return metrics


def null(value: float) -> float | None:
    return None if value != value else value


def approx(value: float) -> object:
    """The devkit's value to 1e-9; NaN (undefined) is null in rpx."""
    value = null(value)
    return None if value is None else pytest.approx(value, abs=1e-9, rel=0)


def assert_same(report: dict, metrics: DetectionMetrics, dist_ths=(0.5, 1.0, 2.0, 4.0)) -> None:
    data = report["dataset"]
    assert data["mAP"] == approx(metrics.mean_ap)
    assert data["NDS"] == approx(metrics.nd_score)
    for metric, value in metrics.tp_errors.items():
        assert data[f"m{OURS[metric]}"] == approx(value), metric
    for name in DETECTION_NAMES:
        ours = data["per_class"][name]
        assert ours["AP"] == approx(metrics.mean_dist_aps[name]), name
        for th in dist_ths:
            key = f"AP_{th:g}".replace(".", "p") + "m"
            assert ours[key] == approx(metrics.get_label_ap(name, th)), (name, th)
        for metric in TP_METRICS:
            assert ours[OURS[metric]] == approx(metrics.get_label_tp(name, metric)), (name, metric)


@pytest.mark.parametrize("seed", range(6))
def test_equals_the_devkit_on_generated_scenes(rpx, tmp_path: Path, seed: int) -> None:
    samples = scene(seed)
    write(tmp_path, samples)
    base = f"eval detection3d --pred-dir {tmp_path / 'pred'} --gt-dir {tmp_path / 'gt'} " \
           f"--class-names {CLASS_NAMES}"
    uncapped = dict.fromkeys(DETECTION_NAMES, 1e6)
    report = rpx(base).json
    assert_same(report, devkit(samples, uncapped))
    caps = " ".join(f"--class-range {k}={v}" for k, v in CVPR_2019.items())
    capped = rpx(f"{base} {caps}").json
    assert_same(capped, devkit(samples, CVPR_2019))
    assert capped["dataset"]["mAP"] != report["dataset"]["mAP"]


def test_equals_the_devkit_with_other_thresholds_and_many_samples(rpx, tmp_path: Path) -> None:
    samples = scene(100, n_samples=60, absent=("trailer", "bicycle"), gt_only=(), pred_only=())
    write(tmp_path, samples)
    ths = (0.25, 1.0, 2.0, 3.0)
    report = rpx(f"eval detection3d --pred-dir {tmp_path / 'pred'} --gt-dir {tmp_path / 'gt'} "
                 f"--class-names {CLASS_NAMES} " + " ".join(f"--dist-th {t}" for t in ths)).json
    assert_same(report, devkit(samples, dict.fromkeys(DETECTION_NAMES, 1e6), ths), ths)


def test_equals_the_devkit_from_submission_files(rpx, tmp_path: Path) -> None:
    samples = scene(7)
    for role, index in (("gt", 0), ("pred", 1)):
        results = {stem: pair[index] for stem, pair in samples.items()}
        (tmp_path / f"{role}.json").write_text(json.dumps({"results": results, "meta": {}}))
    report = rpx(f"eval detection3d --pred-file {tmp_path / 'pred.json'} --gt-file "
                 f"{tmp_path / 'gt.json'} --class-names {CLASS_NAMES}").json
    assert_same(report, devkit(samples, dict.fromkeys(DETECTION_NAMES, 1e6)))


@pytest.mark.parametrize("min_recall", [0.99, 0.995, 1.0])
def test_a_min_recall_with_no_recall_point_past_it_follows_the_devkit(rpx, tmp_path: Path,
                                                                      min_recall: float) -> None:
    """Issue 31.6: --min-recall 0.995 and 1 (the option's range; the devkit's tests use 1)
    ended in an internal error. The devkit's calc_ap averages an empty slice there (NaN:
    AP, mAP and NDS undefined, null in rpx) and its calc_tp gives 1.0; 0.99 keeps the one
    point at recall 1."""
    import warnings

    samples = scene(3)
    write(tmp_path, samples)
    run = rpx(f"eval detection3d --pred-dir {tmp_path / 'pred'} --gt-dir {tmp_path / 'gt'} "
              f"--class-names {CLASS_NAMES} --min-recall {min_recall}")
    assert run.exit_code == 0, run.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the devkit's mean of an empty slice
        expected = devkit(samples, dict.fromkeys(DETECTION_NAMES, 1e6), min_recall=min_recall)
    assert_same(run.json, expected)
    undefined = min_recall >= 0.995
    assert (run.json["dataset"]["mAP"] is None) is undefined
    assert (run.json["dataset"]["NDS"] is None) is undefined
    if undefined:
        assert all(entry["ATE"] in (1.0, None) for entry in run.json["dataset"]["per_class"].values())
        autoware = rpx(f"eval detection3d --pred-dir {tmp_path / 'pred'} --gt-dir "
                       f"{tmp_path / 'gt'} --protocol autoware --min-recall {min_recall}")
        assert autoware.exit_code == 0, autoware.stderr
        assert autoware.json["dataset"]["mAP"] is None
