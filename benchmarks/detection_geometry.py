"""``rpx eval detection --geometry rotated|polygon`` against ``--geometry box`` on the same objects.

Generates (once) N images, 10 classes, 10-20 GT and 60 scored detections per image (1-3
jittered copies of each GT object, the rest random), as rotated boxes ``[xc, yc, w, h,
angle]``, and writes the same objects four ways, one JSON per stem each:

- ``box``: the boxes at angle 0 as ``[x1, y1, x2, y2]`` (``--geometry box``, the baseline);
- ``rotated0``: the same boxes at angle 0 as ``[xc, yc, w, h, 0]`` (``--geometry rotated``);
- ``rotated``: the boxes at their angles (``--geometry rotated``);
- ``polygon``: a star-shaped polygon of 8-30 vertices inside each rotated box, detections
  scaled and moved with it and each vertex pulled in or out a little; 1 % of the rings have
  two neighbouring vertices swapped (a bowtie at a corner, repaired by ``make_valid``)
  (``--geometry polygon``).

Each run is rpx end to end in a fresh process (discovery, reading, digests, every view:
rows, pooled, the confusion matrix, COCO AP), median of ``--repeat``, with the peak RSS of
the process tree. The ratios against ``box`` are the targets (rotated <= 3x, polygons <= 10x).

Usage: python benchmarks/detection_geometry.py [--images 5000] [--repeat 3] [--jobs 2] [--kinds K,...]
       python benchmarks/detection_geometry.py --clean      # delete the generated data
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, machine, rpx_command

KINDS = ("box", "rotated0", "rotated", "polygon")


def star(rng: np.random.Generator, box: np.ndarray, n: int) -> np.ndarray:
    """(n, 2) vertices of a star-shaped polygon inside the rotated box ``[xc, yc, w, h,
    angle]`` (detectron2's sign): an ellipse's points pulled in by random factors."""
    xc, yc, w, h, angle = box
    t = np.sort(rng.uniform(0, 2 * np.pi, n))
    r = rng.uniform(0.7, 1.0, n)
    u, v = r * np.cos(t) * w / 2, r * np.sin(t) * h / 2
    theta = np.radians(angle)
    c, s = np.cos(theta), np.sin(theta)
    return np.stack([xc + u * c + v * s, yc - u * s + v * c], axis=1)


def twisted(rng: np.random.Generator, polygon: np.ndarray, rate: float = 0.01) -> np.ndarray:
    """With probability ``rate``, two neighbouring vertices swapped: a bowtie at a corner
    (an invalid ring that ``make_valid`` repairs)."""
    if rng.random() >= rate:
        return polygon
    i = int(rng.integers(len(polygon) - 1))
    out = polygon.copy()
    out[[i, i + 1]] = out[[i + 1, i]]
    return out


def objects(kind: str, boxes: list[np.ndarray], labels: list[str], polygons: list[np.ndarray],
            scores: list[float] | None) -> list[dict]:
    """One file's objects in the form ``kind`` reads (coordinates rounded to 0.01)."""
    out = []
    for i, (b, label) in enumerate(zip(np.round(np.array(boxes), 2).tolist(), labels, strict=True)):
        xc, yc, w, h, angle = b
        if kind == "box":
            item = {"bbox": [round(xc - w / 2, 2), round(yc - h / 2, 2), round(xc + w / 2, 2),
                             round(yc + h / 2, 2)]}
        elif kind == "rotated0":
            item = {"bbox": [xc, yc, w, h, 0]}
        elif kind == "rotated":
            item = {"bbox": [xc, yc, w, h, angle]}
        else:
            item = {"polygons": [np.round(polygons[i], 2).tolist()]}
        item["label"] = label
        if scores is not None:
            item["score"] = round(float(scores[i]), 3)
        out.append(item)
    return out


def generate(root: Path, n_images: int) -> Path:
    if (root / "DONE").exists():
        return root
    rng = np.random.default_rng(0)
    names = [f"class{k}" for k in range(10)]
    for kind in KINDS:
        for side in ("gt", "pred"):
            (root / kind / side).mkdir(parents=True, exist_ok=True)
    n_gt = n_pred = 0
    for image in range(n_images):
        gt_boxes, gt_labels, polygons = [], [], []
        pred_boxes, pred_labels, scores, pred_polygons = [], [], [], []
        for _ in range(int(rng.integers(10, 21))):
            k = int(rng.integers(10))
            w, h = rng.uniform(8, 200, 2)
            xc, yc = rng.uniform(w / 2, 640 - w / 2), rng.uniform(h / 2, 480 - h / 2)
            box = np.array([xc, yc, w, h, rng.uniform(-90, 90)])
            gt_boxes.append(box)
            gt_labels.append(k)
            polygon = twisted(rng, star(rng, box, int(rng.integers(8, 31))))
            polygons.append(polygon)
            for _ in range(int(rng.integers(1, 4))):
                jitter = box + np.concatenate([rng.normal(0, 0.08, 2) * box[2:4],
                                               rng.normal(0, 0.08, 2) * box[2:4], rng.normal(0, 5, 1)])
                jitter[2:4] = np.maximum(jitter[2:4], 2)
                pred_boxes.append(jitter)
                pred_labels.append(k)
                scores.append(rng.uniform(0.05, 1))
                # scaled about the box centre, each vertex pulled in or out a little: still
                # star-shaped, so still a valid polygon unless the GT's twist is in it
                radial = rng.normal(1, 0.03, (len(polygon), 1)) * jitter[2:4].mean() / box[2:4].mean()
                pred_polygons.append(twisted(rng, (polygon - box[:2]) * radial + jitter[:2]))
        while len(pred_boxes) < 60:
            w, h = rng.uniform(8, 200, 2)
            box = np.array([rng.uniform(w / 2, 640 - w / 2), rng.uniform(h / 2, 480 - h / 2), w, h,
                            rng.uniform(-90, 90)])
            pred_boxes.append(box)
            pred_labels.append(int(rng.integers(10)))
            scores.append(rng.uniform(0.01, 0.6))
            pred_polygons.append(twisted(rng, star(rng, box, int(rng.integers(8, 31)))))
        n_gt += len(gt_boxes)
        n_pred += len(pred_boxes)
        stem = f"img{image:06d}"
        for side, boxes, labels, shapes, side_scores in (
                ("gt", gt_boxes, gt_labels, polygons, None),
                ("pred", pred_boxes, pred_labels, pred_polygons, scores)):
            for kind in KINDS:
                document = objects(kind, boxes, [names[k] for k in labels], shapes, side_scores)
                (root / kind / side / f"{stem}.json").write_text(json.dumps(document))
    (root / "DONE").write_text(f"{n_gt} GT objects, {n_pred} detections\n")
    return root


def run(argv: list[str], repeat: int) -> tuple[float, float]:
    """(median wall s, peak RSS MB of the largest process) of ``argv`` in fresh processes."""
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
            "stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    times, peaks = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, *argv], check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        peaks.append(int(done.stdout.split()[-1]) / 1024)
    return statistics.median(times), max(peaks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help=f"which runs, comma-separated (box always runs): {','.join(KINDS)}")
    parser.add_argument("--clean", action="store_true", help="delete the generated data and stop")
    args = parser.parse_args()
    root = DATA / f"detection-geometry-{args.images}"
    if args.clean:
        shutil.rmtree(root, ignore_errors=True)
        return
    generate(root, args.images)
    rpx = rpx_command() + ["eval", "detection", "-o", "/dev/null", "--quiet", "--jobs", str(args.jobs)]
    geometry = {"box": "box", "rotated0": "rotated", "rotated": "rotated", "polygon": "polygon"}
    results = {}
    kinds = ["box", *(k for k in args.kinds.split(",") if k in KINDS and k != "box")]
    for kind in kinds:
        argv = rpx + ["--pred-dir", str(root / kind / "pred"), "--gt-dir", str(root / kind / "gt"),
                      "--geometry", geometry[kind]]
        results[kind] = run(argv, args.repeat)
    base = results["box"][0]
    label = {"box": "`--geometry box` (the boxes at angle 0)",
             "rotated0": "`--geometry rotated`, the same boxes at angle 0",
             "rotated": "`--geometry rotated`, the boxes at their angles",
             "polygon": "`--geometry polygon`, 8-30 vertices"}
    print(f"machine: {machine()}")
    print(f"{args.images} images, 10 classes; {(root / 'DONE').read_text().strip()}; "
          f"--jobs {args.jobs}; median of {args.repeat}")
    print("| run | wall s | peak RSS MB | vs box |")
    print("|---|---:|---:|---:|")
    for kind, (seconds, peak) in results.items():
        print(f"| {label[kind]} | {seconds:.2f} | {peak:.0f} | {seconds / base:.2f}x |")


if __name__ == "__main__":
    main()
