"""Generated tracking scenes for the tracking3d tests, and writers for rpx's two layouts.

Scenes hold what breaks a tracking evaluator: tracks that are missed, lost and found again
(fragments), ids that change (switches), false tracks, GT boxes without lidar points
(dropped, then interpolated back), GT and predicted boxes missing from a sample (gaps
filled by interpolation), classes without GT, boxes on the class range and predictions
exactly ``edge`` metres from their GT (the 2 m match threshold). ``integer`` puts every
centre on a 1 m grid (exact distances: ties everywhere); ``crowd`` squeezes the scene
(competing pairs: the assignment solver decides).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

CLASSES = ("bicycle", "bus", "car", "motorcycle", "pedestrian", "trailer", "truck")


def generate(seed: int, *, n_scenes: int = 2, n_samples: int = 7, n_objects: int = 6,
             classes: tuple[str, ...] = ("car", "pedestrian", "truck"), crowd: float = 1.0,
             integer: bool = False, edge: float | None = None) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    scenes: dict[str, list[str]] = {}
    stamps: dict[str, int] = {}
    gt: dict[str, list[dict[str, Any]]] = {}
    pred: dict[str, list[dict[str, Any]]] = {}

    def centre(p: np.ndarray) -> list[float]:
        return [float(p[0]), float(p[1]), 0.5]

    for s in range(n_scenes):
        samples = [f"sc{s}-{k:02d}" for k in range(n_samples)]
        scenes[f"scene-{s}"] = samples
        t = 1_533_151_603_000_000 + 40_000_000 * s
        for token in samples:
            t += int(rng.integers(450_000, 550_000))
            stamps[token], gt[token], pred[token] = t, [], []
        for o in range(n_objects):
            name = str(rng.choice(classes))
            start = int(rng.integers(0, n_samples))
            end = int(rng.integers(start, n_samples))
            origin = rng.uniform(-44, 44, 2) * crowd
            step = rng.normal(0, 1.0, 2)
            track, score = f"p{s}.{o}", float(rng.uniform(0.05, 1.0))
            for k in range(start, end + 1):
                p = origin + step * (k - start)
                if integer:
                    p = np.round(p)
                if rng.random() < 0.08:
                    continue  # a gap in the GT track: interpolated
                box = {"translation": centre(p), "tracking_id": f"g{s}.{o}", "tracking_name": name,
                       "num_pts": 0 if rng.random() < 0.06 else int(rng.integers(1, 90))}
                gt[samples[k]].append(box)
                if rng.random() < 0.15:
                    continue  # missed (or a gap in the predicted track)
                if rng.random() < 0.1:
                    track = f"p{s}.{o}.{k}"  # a new id: a switch
                if edge is not None and rng.random() < 0.5:
                    angle = rng.uniform(0, 2 * np.pi)
                    q = p + edge * np.array([np.cos(angle), np.sin(angle)])
                elif integer:
                    q = p + rng.integers(-2, 3, 2)
                else:
                    q = p + rng.normal(0, 0.7, 2)
                if rng.random() < 0.05:
                    q = q + 6.0  # lost this sample, found again
                pred[samples[k]].append({"translation": centre(q), "tracking_id": track,
                                         "tracking_name": name,
                                         "tracking_score": float(np.clip(score + rng.normal(0, 0.1), 0, 1))})
        for f in range(int(rng.integers(1, 4))):  # false tracks, some of a class without GT
            name = str(rng.choice((*classes, "bus")))
            origin = rng.uniform(-44, 44, 2) * crowd
            start = int(rng.integers(0, n_samples))
            for k in range(start, int(rng.integers(start, n_samples)) + 1):
                if rng.random() < 0.2:
                    continue
                q = origin + rng.normal(0, 0.3, 2)
                pred[samples[k]].append({"translation": centre(np.round(q) if integer else q),
                                         "tracking_id": f"f{s}.{f}", "tracking_name": name,
                                         "tracking_score": float(rng.uniform(0, 1))})
    for token in gt:  # boxes in any order within a sample
        rng.shuffle(gt[token])
        rng.shuffle(pred[token])
    return {"scenes": scenes, "timestamps": stamps, "gt": gt, "pred": pred}


def write_folders(data: dict[str, Any], root: Path) -> tuple[Path, Path]:
    """``root/{gt,pred}/<scene>/<sample>.json``; GT samples carry their timestamp."""
    for side in ("gt", "pred"):
        for scene, samples in data["scenes"].items():
            folder = root / side / scene
            folder.mkdir(parents=True, exist_ok=True)
            for token in samples:
                boxes = data[side][token]
                document: Any = {"timestamp": data["timestamps"][token], "boxes": boxes} \
                    if side == "gt" else boxes
                (folder / f"{token}.json").write_text(json.dumps(document))
    return root / "pred", root / "gt"


def write_files(data: dict[str, Any], root: Path) -> tuple[Path, Path]:
    """The submission layout: ``root/pred.json``, ``root/gt.json`` (with scenes; the GT
    boxes carry their scene and timestamp)."""
    root.mkdir(parents=True, exist_ok=True)
    owner = {token: scene for scene, samples in data["scenes"].items() for token in samples}
    gt = {token: [dict(box, scene_token=owner[token], timestamp=data["timestamps"][token])
                  for box in boxes] for token, boxes in data["gt"].items()}
    (root / "gt.json").write_text(json.dumps({"results": gt, "scenes": data["scenes"],
                                              "timestamps": data["timestamps"]}))
    (root / "pred.json").write_text(json.dumps({"meta": {"use_lidar": True}, "results": data["pred"]}))
    return root / "pred.json", root / "gt.json"
