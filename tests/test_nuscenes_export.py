"""``examples/nuscenes_to_rpx.py`` on a small nuScenes database written here (the devkit's
own tables, one ``mini_val`` scene): the exported GT and predictions carry the devkit's
``ego_translation``, rpx with the CVPR-2019 caps on them equals the devkit's
``DetectionEval`` end to end, and the submission as a model writes it (global frame, no
``ego_translation``) is refused under caps instead of scoring 0 (issue 30, item 1)."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
from pathlib import Path

import pytest
from helpers import ROOT

pytest.importorskip("nuscenes")

CLASSES = ("car", "truck", "bus", "trailer", "construction_vehicle", "pedestrian", "motorcycle",
           "bicycle", "traffic_cone", "barrier")
CAPS = {"car": 50, "truck": 50, "bus": 50, "trailer": 50, "construction_vehicle": 50,
        "pedestrian": 40, "motorcycle": 40, "bicycle": 40, "traffic_cone": 30, "barrier": 30}
# the ego drives along +x through the map frame, far from its origin
EGO = [(1010.0, 620.0), (1014.0, 620.5), (1018.0, 621.0)]
# (category, instance, sample, offset from the ego (x, y), yaw, attribute, lidar points)
OBJECTS = [
    ("vehicle.car", "car1", 0, (12.0, 3.0), 0.1, "vehicle.moving", 40),
    ("vehicle.car", "car1", 1, (10.0, 3.0), 0.1, "vehicle.moving", 42),
    ("vehicle.car", "car1", 2, (8.0, 3.2), 0.12, "vehicle.moving", 45),
    ("vehicle.car", "car2", 0, (45.0, -10.0), 1.5, "vehicle.parked", 5),  # 46 m: under the cap
    ("vehicle.car", "car2", 1, (41.0, -10.5), 1.5, "vehicle.parked", 6),
    ("vehicle.car", "far", 2, (70.0, 5.0), 0.0, "vehicle.parked", 2),  # beyond the car cap
    ("human.pedestrian.adult", "ped1", 0, (6.0, -4.0), 2.0, "pedestrian.moving", 12),
    ("human.pedestrian.adult", "ped1", 1, (5.5, -3.4), 2.0, "pedestrian.moving", 11),
    ("movable_object.barrier", "bar1", 2, (9.0, 8.0), 0.0, "", 0),  # no lidar point: dropped
    ("movable_object.trafficcone", "cone1", 1, (15.0, 6.0), 0.0, "", 3),
]


def _write_database(root: Path) -> list[str]:
    """A v1.0-mini database holding one mini_val scene of three samples; their tokens."""
    tables: dict[str, list[dict]] = {name: [] for name in (
        "category", "attribute", "visibility", "instance", "sensor", "calibrated_sensor",
        "ego_pose", "log", "scene", "sample", "sample_data", "sample_annotation", "map")}
    categories = sorted({o[0] for o in OBJECTS})
    tables["category"] = [{"token": f"cat-{c}", "name": c, "description": ""} for c in categories]
    attributes = sorted({o[5] for o in OBJECTS if o[5]})
    tables["attribute"] = [{"token": f"attr-{a}", "name": a, "description": ""} for a in attributes]
    tables["visibility"] = [{"token": "4", "level": "v80-100", "description": ""}]
    tables["sensor"] = [{"token": "lidar", "channel": "LIDAR_TOP", "modality": "lidar"}]
    tables["calibrated_sensor"] = [{"token": "cs", "sensor_token": "lidar", "translation": [0, 0, 1.8],
                                    "rotation": [1, 0, 0, 0], "camera_intrinsic": []}]
    tables["log"] = [{"token": "log", "logfile": "", "vehicle": "n015", "date_captured": "2018-08-01",
                      "location": "boston-seaport"}]
    tables["map"] = [{"token": "map", "log_tokens": ["log"], "category": "semantic_prior",
                      "filename": ""}]
    samples = [f"sample{k}" for k in range(len(EGO))]
    tables["scene"] = [{"token": "scene", "log_token": "log", "nbr_samples": len(samples),
                        "first_sample_token": samples[0], "last_sample_token": samples[-1],
                        "name": "scene-0103", "description": ""}]
    for k, (token, (x, y)) in enumerate(zip(samples, EGO, strict=True)):
        stamp = 1_533_000_000_000_000 + k * 500_000
        tables["sample"].append({"token": token, "timestamp": stamp, "scene_token": "scene",
                                 "prev": samples[k - 1] if k else "",
                                 "next": samples[k + 1] if k + 1 < len(samples) else ""})
        tables["ego_pose"].append({"token": f"ego{k}", "timestamp": stamp, "rotation": [1, 0, 0, 0],
                                   "translation": [x, y, 0.0]})
        tables["sample_data"].append({
            "token": f"sd{k}", "sample_token": token, "ego_pose_token": f"ego{k}",
            "calibrated_sensor_token": "cs", "timestamp": stamp, "fileformat": "pcd",
            "is_key_frame": True, "height": 0, "width": 0, "filename": f"samples/LIDAR_TOP/{k}.bin",
            "prev": f"sd{k - 1}" if k else "", "next": f"sd{k + 1}" if k + 1 < len(samples) else ""})
    by_instance: dict[str, list[int]] = {}
    for i, (_, instance, k, (dx, dy), yaw, attribute, points) in enumerate(OBJECTS):
        by_instance.setdefault(instance, []).append(i)
        x, y = EGO[k]
        tables["sample_annotation"].append({
            "token": f"ann{i}", "sample_token": samples[k], "instance_token": instance,
            "visibility_token": "4", "attribute_tokens": [f"attr-{attribute}"] if attribute else [],
            "translation": [x + dx, y + dy, 1.0], "size": [1.9, 4.6, 1.7],
            "rotation": [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)],
            "num_lidar_pts": points, "num_radar_pts": 0, "prev": "", "next": ""})
    annotations = tables["sample_annotation"]
    for instance, members in by_instance.items():
        for a, b in itertools.pairwise(members):
            annotations[a]["next"], annotations[b]["prev"] = f"ann{b}", f"ann{a}"
        category = OBJECTS[members[0]][0]
        tables["instance"].append({"token": instance, "category_token": f"cat-{category}",
                                   "nbr_annotations": len(members),
                                   "first_annotation_token": f"ann{members[0]}",
                                   "last_annotation_token": f"ann{members[-1]}"})
    folder = root / "v1.0-mini"
    folder.mkdir(parents=True)
    for name, rows in tables.items():
        (folder / f"{name}.json").write_text(json.dumps(rows))
    return samples


def _submission(samples: list[str]) -> dict:
    """A model's results as it writes them: the global frame, no ego_translation."""
    def box(k, dx, dy, name, score, yaw=0.1, attribute="vehicle.moving"):
        x, y = EGO[k]
        return {"sample_token": samples[k], "translation": [x + dx, y + dy, 1.0],
                "size": [1.9, 4.5, 1.6], "rotation": [math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)],
                "velocity": [8.0, 0.5], "detection_name": name, "detection_score": score,
                "attribute_name": attribute}
    results = {
        samples[0]: [box(0, 12.3, 3.1, "car", 0.9), box(0, 44.0, -9.0, "car", 0.6),
                     box(0, 6.2, -4.1, "pedestrian", 0.7, 2.0, "pedestrian.moving")],
        samples[1]: [box(1, 10.4, 2.8, "car", 0.85), box(1, 30.0, 20.0, "car", 0.3),
                     box(1, 15.1, 6.1, "traffic_cone", 0.5, 0.0, "")],
        samples[2]: [box(2, 8.1, 3.0, "car", 0.95), box(2, 69.0, 5.0, "car", 0.8),
                     box(2, 9.0, 8.0, "barrier", 0.4, 0.0, "")],
    }
    meta = {"use_lidar": True, "use_camera": False, "use_radar": False, "use_map": False,
            "use_external": False}
    return {"meta": meta, "results": results}


def _script():
    spec = importlib.util.spec_from_file_location("nuscenes_to_rpx",
                                                  ROOT / "examples" / "nuscenes_to_rpx.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("nuscenes")
    samples = _write_database(root)
    (root / "results.json").write_text(json.dumps(_submission(samples)))
    code = _script().main(["--dataroot", str(root), "--version", "v1.0-mini", "--split", "mini_val",
                           "--gt-out", str(root / "gt.json"), "--pred", str(root / "results.json"),
                           "--pred-out", str(root / "results_ego.json")])
    assert code == 0
    return {"root": root, "samples": samples}


def _caps() -> str:
    return f"--class-names {','.join(CLASSES)} " + " ".join(
        f"--class-range {name}={cap}" for name, cap in CAPS.items())


def test_the_export_adds_the_devkits_ego_translation(exported) -> None:
    root = exported["root"]
    gt = json.loads((root / "gt.json").read_text())["results"]
    pred = json.loads((root / "results_ego.json").read_text())["results"]
    for side in (gt, pred):
        for k, token in enumerate(exported["samples"]):
            x, y = EGO[k]
            for box in side[token]:
                tx, ty, tz = box["translation"]
                assert box["ego_translation"] == pytest.approx([tx - x, ty - y, tz])
    # GT: detection classes only, attributes, num_pts, unknown velocities as null
    names = sorted(box["detection_name"] for boxes in gt.values() for box in boxes)
    assert names == sorted(["car"] * 6 + ["pedestrian"] * 2 + ["barrier", "traffic_cone"])
    cone = next(box for box in gt[exported["samples"][1]] if box["detection_name"] == "traffic_cone")
    assert cone["velocity"] == [None, None] and cone["num_pts"] == 3


def test_rpx_on_the_export_equals_the_devkit_end_to_end(rpx, exported, tmp_path) -> None:
    from nuscenes import NuScenes
    from nuscenes.eval.common.config import config_factory
    from nuscenes.eval.detection.evaluate import DetectionEval

    root = exported["root"]
    nusc = NuScenes(version="v1.0-mini", dataroot=str(root), verbose=False)
    devkit = DetectionEval(nusc, config_factory("detection_cvpr_2019"), str(root / "results.json"),
                           "mini_val", str(tmp_path / "devkit"), verbose=False)
    metrics, _ = devkit.evaluate()
    expected = metrics.serialize()
    run = rpx(f"eval detection3d --gt-file {root / 'gt.json'} --pred-file "
              f"{root / 'results_ego.json'} {_caps()}")
    assert run.exit_code == 0, run.stderr
    data = run.json["dataset"]
    assert data["mAP"] == pytest.approx(expected["mean_ap"], abs=1e-9)
    assert data["NDS"] == pytest.approx(expected["nd_score"], abs=1e-9)
    for name in ("car", "pedestrian"):
        assert data["per_class"][name]["AP"] == pytest.approx(expected["mean_dist_aps"][name], abs=1e-9)
    assert 0 < data["mAP"] < 1 and data["n_gt"] == 8  # of 10: the far car and the barrier out


def test_the_raw_submission_under_caps_is_refused_not_scored_0(rpx, exported) -> None:
    root = exported["root"]
    run = rpx(f"eval detection3d --gt-file {root / 'gt.json'} --pred-file "
              f"{root / 'results.json'} {_caps()}")
    assert run.exit_code == 1 and run.stdout == ""
    assert "the predicted boxes look like global (map) coordinates" in run.stderr
    assert str(root / "results.json") in run.stderr
