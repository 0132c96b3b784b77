"""Generate KITTI label frames on every difficulty and overlap edge, and the numbers the
reference (``kitti_object_eval_python``) computes on them, for tests/test_kitti_reference.py.

    python tools/kitti_reference_vectors.py OUT_DIR --seed 7 --frames 120 \
        [--reference PATH_TO_A_LOCAL_COPY]

writes ``OUT_DIR/gt/*.txt`` and ``OUT_DIR/pred/*.txt`` (KITTI label and results files) and,
with ``--reference``, ``OUT_DIR/reference.json``: the reference's APs (percent, as it
prints them) for Car, Pedestrian, Cyclist, Van, Person_sitting and Truck, AP_R11 and AP_R40,
``bbox``/``bev``/``3d``/``aos`` × easy/moderate/hard, under both overlap tables (strict,
loose). ``PATH`` is a folder holding a copy of the reference package
``kitti_object_eval_python/`` (``eval.py``, ``rotate_iou.py``; from OpenPCDet's
``pcdet/datasets/kitti/``); it is not part of rpx and is never committed. It needs numba,
and runs on a CPU through numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, set here):
run this script with a Python that has numba and numpy (a throwaway venv).

The frames: every GT height exactly 40 or 25 px or just around them, occlusion 0–3 and
truncation on each bound (0.15, 0.3, 0.5) and just above it; DontCare regions; Van and
Person_sitting beside Car and Pedestrian; detections that are copies of a GT with jitter,
confusions, duplicates, false positives, detections exactly 25/40 px tall and shorter; and
pairs whose 2D, BEV and 3D IoU is exactly a threshold (0.7, 0.5, 0.25: not a match, the
test is ``>``) or just above it, with axis-aligned (``rotation_y = 0``) boxes of dyadic sizes
so both float32 (the reference) and float64 (rpx) compute the overlap exactly.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

CLASSES = ["Car", "Pedestrian", "Cyclist", "Van", "Person_sitting", "Truck"]
SIZES = {"Car": (1.5, 1.6, 3.9), "Van": (2.2, 1.9, 5.0), "Truck": (3.2, 2.5, 10.0),
         "Pedestrian": (1.75, 0.6, 0.8), "Person_sitting": (1.2, 0.6, 0.9),
         "Cyclist": (1.7, 0.6, 1.75), "Misc": (1.5, 1.5, 2.0), "Tram": (3.5, 2.5, 15.0)}
HEIGHTS = [40.0, 25.0, 39.99, 40.01, 24.99, 25.01, 41.0, 26.0, 15.0, 60.0, 120.0]
TRUNCATIONS = [0.0, 0.15, 0.3, 0.5, 0.16, 0.31, 0.51, 0.8]


def _line(name, truncated, occluded, alpha, bbox, hwl, loc, ry, score=None) -> str:
    values = [truncated, occluded, alpha, *bbox, *hwl, *loc, ry] + ([] if score is None else [score])
    text = " ".join(repr(float(v)) if not isinstance(v, (int, np.integer)) else str(int(v))
                    for v in values)
    return f"{name} {text}"


def _object(rng: np.random.Generator, name: str, axis_aligned: bool):
    h, w, length = SIZES[name]
    h, w, length = (float(v * rng.uniform(0.9, 1.1)) for v in (h, w, length))
    x, z = float(rng.uniform(-12, 12)), float(rng.uniform(4, 60))
    y = float(1.6 + rng.uniform(-0.3, 0.3))
    ry = 0.0 if axis_aligned else float(rng.uniform(-math.pi, math.pi))
    alpha = ry - math.atan2(x, z)
    height = float(rng.choice(HEIGHTS))
    x1, y1 = float(rng.uniform(0, 1000)), float(rng.uniform(100, 250))
    width = float(rng.uniform(10, 200))
    return dict(name=name, truncated=float(rng.choice(TRUNCATIONS)),
                occluded=int(rng.integers(0, 4)), alpha=alpha,
                bbox=[x1, y1, x1 + width, y1 + height], hwl=[h, w, length], loc=[x, y, z], ry=ry)


def _edge_pair(rng: np.random.Generator, name: str, iou: float, above: bool):
    """An axis-aligned GT and a detection whose 2D, BEV and 3D IoU are exactly ``iou`` (or
    a little above it): the same box shifted diagonally by (dx, dz), so that ``(l − dx)(w −
    dz) / (2 l w − (l − dx)(w − dz)) = iou``, with dyadic numbers (exact in float32 and
    float64) and no corner of one box on an edge of the other (the reference's polygon
    clipper turns a repeated intersection vertex into NaN)."""
    length, width, dx, dz = {0.7: (4.25, 2.0, 0.25, 0.25), 0.5: (5.0, 3.0, 1.0, 0.5),
                             0.25: (5.0, 2.0, 1.0, 1.0)}[iou]
    if above:
        dx -= 1 / 64
    x, y, z = float(rng.integers(-8, 8)), 2.0, float(rng.integers(8, 40))
    h = 2.0
    x1, y1 = float(rng.integers(100, 900)), 150.0
    gt = dict(name=name, truncated=0.0, occluded=0, alpha=0.25,
              bbox=[x1, y1, x1 + 8 * length, y1 + 32 * width], hwl=[h, width, length],
              loc=[x, y, z], ry=0.0)
    # in 2D the same rectangles in pixels (x 8 across, x 32 down); in 3D the same heights make the 3D IoU the
    # BEV one
    det = dict(gt, bbox=[x1 + 8 * dx, y1 + 32 * dz, x1 + 8 * (length + dx), y1 + 32 * (width + dz)],
               loc=[x + dx, y, z + dz], alpha=0.5)
    return gt, det


def generate(seed: int, n_frames: int) -> tuple[list[list[str]], list[list[str]]]:
    """``(gt_lines, pred_lines)`` per frame."""
    rng = np.random.default_rng(seed)
    gts, preds = [], []
    names = ["Car"] * 5 + ["Pedestrian"] * 3 + ["Cyclist"] * 2 + ["Van", "Person_sitting", "Truck",
                                                                  "Misc", "Tram"]
    for frame in range(n_frames):
        gt_lines, det_lines = [], []
        for _ in range(int(rng.integers(0, 9))):
            obj = _object(rng, str(rng.choice(names)), axis_aligned=rng.random() < 0.2)
            gt_lines.append(_line(obj["name"], obj["truncated"], obj["occluded"], obj["alpha"],
                                  obj["bbox"], obj["hwl"], obj["loc"], obj["ry"]))
            if rng.random() < 0.8:
                for _copy in range(1 + int(rng.random() < 0.15)):  # sometimes a duplicate
                    det = _jitter(rng, obj)
                    det_lines.append(_line(det["name"], -1, -1, det["alpha"], det["bbox"],
                                           det["hwl"], det["loc"], det["ry"],
                                           float(np.round(rng.random(), 3))))
        if rng.random() < 0.4:
            name = str(rng.choice(["Car", "Pedestrian", "Cyclist"]))
            iou = {"Car": 0.7, "Pedestrian": 0.5, "Cyclist": 0.25}[name] if rng.random() < 0.7 \
                else 0.5
            gt, det = _edge_pair(rng, name, iou, above=bool(rng.random() < 0.5))
            gt_lines.append(_line(gt["name"], gt["truncated"], gt["occluded"], gt["alpha"],
                                  gt["bbox"], gt["hwl"], gt["loc"], gt["ry"]))
            det_lines.append(_line(det["name"], -1, -1, det["alpha"], det["bbox"], det["hwl"],
                                   det["loc"], det["ry"], float(np.round(rng.random(), 3))))
        for _ in range(int(rng.integers(0, 3))):  # DontCare regions
            x1, y1 = float(rng.uniform(0, 1100)), float(rng.uniform(100, 250))
            gt_lines.append(_line("DontCare", -1, -1, -10, [x1, y1, x1 + rng.uniform(20, 120),
                                  y1 + rng.uniform(10, 60)], [-1, -1, -1], [-1000, -1000, -1000],
                                  -10))
        for _ in range(int(rng.integers(0, 4))):  # false positives, some inside DontCare
            obj = _object(rng, str(rng.choice(["Car", "Pedestrian", "Cyclist"])), False)
            det_lines.append(_line(obj["name"], -1, -1, obj["alpha"], obj["bbox"], obj["hwl"],
                                   obj["loc"], obj["ry"], float(np.round(rng.random(), 3))))
        order = rng.permutation(len(gt_lines))
        gts.append([gt_lines[k] for k in order])
        order = rng.permutation(len(det_lines))
        preds.append([det_lines[k] for k in order])
        del frame
    return gts, preds


def _jitter(rng: np.random.Generator, obj: dict) -> dict:
    det = {k: (list(v) if isinstance(v, list) else v) for k, v in obj.items()}
    if rng.random() < 0.1:  # confusions, neighbours included
        det["name"] = str(rng.choice(["Car", "Van", "Pedestrian", "Person_sitting", "Cyclist"]))
    scale = float(rng.choice([0.01, 0.02, 0.1, 0.3]))  # never 0: see _edge_pair
    det["loc"] = [v + rng.normal(0, scale) for v in det["loc"]]
    det["hwl"] = [max(v * (1 + rng.normal(0, scale / 3)), 0.1) for v in det["hwl"]]
    if det["ry"] != 0.0 or rng.random() < 0.5:
        det["ry"] = float(det["ry"] + rng.normal(0, scale))
    det["alpha"] = float(det["alpha"] + rng.normal(0, 0.2))
    x1, y1, x2, y2 = det["bbox"]
    jitter = rng.normal(0, scale * 20, 4)
    det["bbox"] = [x1 + jitter[0], y1 + jitter[1], max(x2 + jitter[2], x1 + jitter[0] + 1),
                   max(y2 + jitter[3], y1 + jitter[1] + 1)]
    if rng.random() < 0.1:  # exactly on a detection's height edge
        det["bbox"][3] = det["bbox"][1] + float(rng.choice([25.0, 40.0, 24.5]))
    return det


def write(out: Path, gts: list[list[str]], preds: list[list[str]]) -> None:
    for side, frames in (("gt", gts), ("pred", preds)):
        (out / side).mkdir(parents=True, exist_ok=True)
        for k, lines in enumerate(frames):
            (out / side / f"{k:06d}.txt").write_text("".join(line + "\n" for line in lines))


def _anno(path: Path) -> dict:
    """A label file as the reference's annotation dict (its ``get_label_anno`` layout:
    dimensions reordered from h w l to l h w, score 0 when the file has none)."""
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    numbers = np.array([[float(v) for v in row[1:15]] for row in rows]).reshape(-1, 14)
    return {"name": np.array([row[0] for row in rows]), "truncated": numbers[:, 0],
            "occluded": numbers[:, 1].astype(np.int64), "alpha": numbers[:, 2],
            "bbox": numbers[:, 3:7], "dimensions": numbers[:, 7:10][:, [2, 0, 1]],
            "location": numbers[:, 10:13], "rotation_y": numbers[:, 13],
            "score": np.array([float(row[15]) for row in rows]) if rows and len(rows[0]) == 16
            else np.zeros(len(rows))}


def run_reference(reference: Path, out: Path, n_frames: int) -> dict:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    sys.path.insert(0, str(reference))
    from kitti_object_eval_python import eval as ref
    gt = [_anno(out / "gt" / f"{k:06d}.txt") for k in range(n_frames)]
    dt = [_anno(out / "pred" / f"{k:06d}.txt") for k in range(n_frames)]
    strict = np.array([[0.7, 0.5, 0.5, 0.7, 0.5, 0.7]] * 3)
    loose = np.array([[0.7, 0.5, 0.5, 0.7, 0.5, 0.5], [0.5, 0.25, 0.25, 0.5, 0.25, 0.5],
                      [0.5, 0.25, 0.25, 0.5, 0.25, 0.5]])
    classes = list(range(len(CLASSES)))
    min_overlaps = np.stack([strict, loose], axis=0)[:, :, classes]
    result = ref.do_eval(gt, dt, classes, min_overlaps, compute_aos=True)
    names = ["bbox_R11", "bev_R11", "3d_R11", "aos_R11", "bbox_R40", "bev_R40", "3d_R40",
             "aos_R40"]
    vectors: dict = {}
    for name, values in zip(names, result, strict=True):
        metric, points = name.split("_")
        for j, cls in enumerate(CLASSES):
            for i, table in enumerate(("strict", "loose")):
                for d, level in enumerate(("easy", "moderate", "hard")):
                    key = f"{table}.{points}.{cls}.{metric}_{level}"
                    vectors[key] = float(values[j, d, i])
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--reference", type=Path)
    args = parser.parse_args()
    gts, preds = generate(args.seed, args.frames)
    write(args.out, gts, preds)
    if args.reference:
        vectors = run_reference(args.reference, args.out, args.frames)
        (args.out / "reference.json").write_text(json.dumps(
            {"seed": args.seed, "frames": args.frames, "percent": vectors}, indent=1,
            sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
