"""``rpx eval detection3d --protocol nuscenes`` against the nuScenes devkit's own loop.

Generates (once) a nuScenes-scale set: N samples, the ten nuScenes classes, ~40 GT and
~200 scored predictions per sample (1-3 jittered copies of each GT box, the rest random),
written as N per-sample JSON pairs in the nuScenes box form (translation, size, rotation,
velocity, detection_name, detection_score, attribute_name).

- **rpx**: ``rpx eval detection3d --pred-dir P --gt-dir G --class-names <the ten>`` in a
  fresh process, end to end (reading and parsing every file, digests, matching, AP, TP
  errors, NDS, APH, rows, writing the report).
- **devkit** (nuscenes-devkit, ``nuscenes.eval.detection.algo``): the same boxes loaded
  into ``EvalBoxes`` of ``DetectionBox`` in a fresh process (not timed), then timed:
  ``accumulate`` for every class and distance threshold, ``calc_ap``, ``calc_tp`` and
  ``DetectionMetrics`` for the means and NDS — ``DetectionEval.evaluate``'s loop.

Peak RSS is the largest of the run's processes (``RUSAGE_CHILDREN``); for rpx also the sum
over its process tree, sampled every 20 ms. Both tools' mAP and NDS are printed (they
agree to 1e-9).

Usage: python benchmarks/detection3d.py [--samples 6000] [--repeat 3] [--skip-devkit]
       python benchmarks/detection3d.py --clean      # delete the generated data
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, machine, rpx_command

CLASSES = ("car", "truck", "bus", "trailer", "construction_vehicle", "pedestrian", "motorcycle",
           "bicycle", "traffic_cone", "barrier")
SIZES = {"car": (1.9, 4.6, 1.7), "truck": (2.5, 7.0, 3.0), "bus": (2.9, 11.0, 3.5),
         "trailer": (2.9, 12.0, 3.8), "construction_vehicle": (2.8, 6.5, 3.2),
         "pedestrian": (0.7, 0.7, 1.8), "motorcycle": (0.8, 2.1, 1.5), "bicycle": (0.6, 1.7, 1.3),
         "traffic_cone": (0.4, 0.4, 1.0), "barrier": (2.5, 0.5, 1.0)}
ATTRIBUTES = {"car": "vehicle.moving", "truck": "vehicle.parked", "bus": "vehicle.moving",
              "trailer": "vehicle.parked", "construction_vehicle": "vehicle.parked",
              "pedestrian": "pedestrian.standing", "motorcycle": "cycle.with_rider",
              "bicycle": "cycle.without_rider", "traffic_cone": "", "barrier": ""}

DEVKIT = textwrap.dedent("""
    import json, resource, sys, time
    from pathlib import Path
    import numpy as np
    from nuscenes.eval.common.data_classes import EvalBoxes
    from nuscenes.eval.common.utils import center_distance
    from nuscenes.eval.detection.algo import accumulate, calc_ap, calc_tp
    from nuscenes.eval.detection.constants import TP_METRICS
    from nuscenes.eval.detection.data_classes import DetectionBox, DetectionConfig, DetectionMetrics

    root = Path(sys.argv[1])
    ranges = dict.fromkeys(%(classes)r, 1e6)
    cfg = DetectionConfig(ranges, "center_distance", [0.5, 1.0, 2.0, 4.0], 2.0, 0.1, 0.1, 500, 5)

    def load(role):
        boxes = EvalBoxes()
        for path in sorted((root / role).glob("*.json")):
            token = path.stem
            boxes.add_boxes(token, [DetectionBox(
                sample_token=token, translation=tuple(b["translation"]), size=tuple(b["size"]),
                rotation=tuple(b["rotation"]), velocity=tuple(b["velocity"]),
                ego_translation=tuple(b["translation"]), detection_name=b["detection_name"],
                detection_score=float(b.get("detection_score", -1.0)),
                attribute_name=b["attribute_name"]) for b in json.loads(path.read_text())])
        return boxes

    start = time.perf_counter()
    gt, pred = load("gt"), load("pred")
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    metrics = DetectionMetrics(cfg)
    mds = {(c, t): accumulate(gt, pred, c, center_distance, t)
           for c in cfg.class_names for t in cfg.dist_ths}
    for c in cfg.class_names:
        for t in cfg.dist_ths:
            metrics.add_label_ap(c, t, calc_ap(mds[(c, t)], 0.1, 0.1))
        for m in TP_METRICS:
            skip = (c == "traffic_cone" and m in ("attr_err", "vel_err", "orient_err")) or \\
                   (c == "barrier" and m in ("attr_err", "vel_err"))
            metrics.add_label_tp(c, m, np.nan if skip else calc_tp(mds[(c, 2.0)], 0.1, m))
    nds = metrics.nd_score
    elapsed = time.perf_counter() - start
    print(json.dumps({"load_s": loaded, "eval_s": elapsed, "mAP": metrics.mean_ap, "NDS": nds,
                      "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""") % {"classes": CLASSES}


def quaternion(yaw: float) -> list[float]:
    return [round(math.cos(yaw / 2), 8), 0.0, 0.0, round(math.sin(yaw / 2), 8)]


def generate(root: Path, n_samples: int) -> Path:
    if (root / "DONE").exists():
        return root
    rng = np.random.default_rng(0)
    (root / "gt").mkdir(parents=True, exist_ok=True)
    (root / "pred").mkdir(parents=True, exist_ok=True)
    n_gt = n_pred = 0
    for s in range(n_samples):
        gt, pred = [], []
        for _ in range(int(rng.integers(30, 51))):
            name = CLASSES[int(rng.integers(10))]
            x, y = (round(float(v), 3) for v in rng.uniform(-50, 50, 2))
            z = round(float(rng.normal(0, 0.3)), 3)
            size = [round(v * float(rng.uniform(0.85, 1.15)), 3) for v in SIZES[name]]
            yaw = float(rng.uniform(-np.pi, np.pi))
            velocity = [round(float(v), 3) for v in rng.normal(0, 3, 2)]
            gt.append({"translation": [x, y, z], "size": size, "rotation": quaternion(yaw),
                       "velocity": velocity, "detection_name": name,
                       "attribute_name": ATTRIBUTES[name]})
            for _ in range(int(rng.integers(1, 4))):
                j = rng.normal(0, 0.6, 2)
                pred.append({"translation": [round(x + j[0], 3), round(y + j[1], 3), z],
                             "size": [round(v * float(rng.uniform(0.9, 1.1)), 3) for v in size],
                             "rotation": quaternion(yaw + float(rng.normal(0, 0.2))),
                             "velocity": [round(v + float(rng.normal(0, 0.5)), 3) for v in velocity],
                             "detection_name": name, "detection_score": round(float(rng.uniform(0.05, 1)), 3),
                             "attribute_name": ATTRIBUTES[name]})
        while len(pred) < 200:
            name = CLASSES[int(rng.integers(10))]
            pred.append({"translation": [round(float(v), 3) for v in (*rng.uniform(-50, 50, 2), 0.0)],
                         "size": list(SIZES[name]), "rotation": quaternion(float(rng.uniform(-3, 3))),
                         "velocity": [0.0, 0.0], "detection_name": name,
                         "detection_score": round(float(rng.uniform(0.01, 0.6)), 3),
                         "attribute_name": ATTRIBUTES[name]})
        stem = f"sample{s:05d}"
        (root / "gt" / f"{stem}.json").write_text(json.dumps(gt))
        (root / "pred" / f"{stem}.json").write_text(json.dumps(pred))
        n_gt, n_pred = n_gt + len(gt), n_pred + len(pred)
    (root / "DONE").write_text(f"{n_gt} GT, {n_pred} predictions\n")
    return root


def tree_rss_mb(pid: int) -> float:
    """RSS of a process and its descendants (MB)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as handle:
                    stack += [int(c) for c in handle.read().split()]
        except (OSError, ValueError):
            continue
    return total / 1024


def run(argv: list[str]) -> tuple[float, float, float, str]:
    """(wall s, peak RSS of the largest process MB, peak RSS of the tree MB, stdout)."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], check=True, "
            "capture_output=True, text=True); print(resource.getrusage("
            "resource.RUSAGE_CHILDREN).ru_maxrss); print(r.stdout[-2000:])")
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE, text=True)
    peak = [0.0]

    def sample() -> None:
        while process.poll() is None:
            peak[0] = max(peak[0], tree_rss_mb(process.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = process.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    if process.returncode:
        raise SystemExit(f"failed: {' '.join(argv)}")
    lines = out.splitlines()
    return wall, int(lines[0]) / 1024, peak[0], "\n".join(lines[1:]).strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=6000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-devkit", action="store_true")
    parser.add_argument("--clean", action="store_true", help="delete the generated data and stop")
    args = parser.parse_args()
    root = DATA / f"detection3d-{args.samples}"
    if args.clean:
        shutil.rmtree(root, ignore_errors=True)
        return
    generate(root, args.samples)
    print(f"machine: {machine()}")
    print(f"{args.samples} samples, 10 classes; {(root / 'DONE').read_text().strip()}")
    rows = []
    if not args.skip_devkit:
        wall, peak, tree, out = run([sys.executable, "-c", DEVKIT, str(root)])
        devkit = json.loads(out)
        rows.append(("nuscenes-devkit 1.1.9: accumulate + calc_ap + calc_tp (boxes in memory)",
                     devkit["eval_s"], peak, tree, devkit))
        print(f"devkit: loading {devkit['load_s']:.1f} s (not timed), mAP {devkit['mAP']!r}, "
              f"NDS {devkit['NDS']!r}")
    names = ",".join(CLASSES)
    base = rpx_command() + ["eval", "detection3d", "--pred-dir", str(root / "pred"), "--gt-dir",
                            str(root / "gt"), "--class-names", names, "--quiet"]
    out = root / "report.json"
    for label, extra in (("rpx eval detection3d, end to end (default --jobs)", []),
                         ("rpx eval detection3d, end to end, --jobs 1", ["--jobs", "1"])):
        results = [run([*base, *extra, "-o", str(out)]) for _ in range(args.repeat)]
        wall = statistics.median(r[0] for r in results)
        report = json.loads(out.read_text())["dataset"]
        rows.append((label, wall, max(r[1] for r in results), max(r[2] for r in results), report))
        print(f"{label}: mAP {report['mAP']!r}, NDS {report['NDS']!r}")
    print("| run | wall s | peak RSS MB (largest process) | peak RSS MB (process tree) | vs devkit |")
    print("|---|---:|---:|---:|---:|")
    reference = rows[0][1] if not args.skip_devkit else None
    for label, seconds, peak, tree, _ in rows:
        ratio = f"{reference / seconds:.1f}x faster" if reference else ""
        print(f"| {label} | {seconds:.2f} | {peak:.0f} | {tree:.0f} | {ratio} |")


if __name__ == "__main__":
    main()
