"""``rpx eval detection3d --protocol kitti`` on a KITTI-val-sized set, against rpx's nuScenes
protocol on the same boxes and against ``kitti_object_eval_python`` on one core.

Generates (once) N frames (default 3,769, KITTI's val split) of KITTI labels: 3-14 objects
a frame (Car, Van, Truck, Pedestrian, Person_sitting, Cyclist, Misc, DontCare regions) with
heights, occlusion and truncation spread over the three difficulties, and a results file
per frame: a jittered copy of most objects (some confused, some duplicated) and a few false
positives, about 12 scored detections a frame.

- **rpx kitti**: ``rpx eval detection3d --protocol kitti --jobs 1`` in a fresh process, end
  to end (reading, digests, the three overlaps, matching, AP_R40 and aos, rows, the report);
- **rpx nuscenes**: the same folders with ``--protocol nuscenes --jobs 1`` (the same boxes,
  converted to rpx's frame as they are read);
- **reference** (``--reference PATH`` to a local copy of ``kitti_object_eval_python``, run by
  ``--reference-python``, a Python with numba): in a fresh process on one core
  (``NUMBA_NUM_THREADS=1``), reading the label files into its annotation dicts (a Python
  loop over lines and fields, as its ``get_label_annos``) and ``get_official_eval_result``
  for Car, Pedestrian and Cyclist. It needs a GPU for the rotated overlaps
  (``rotate_iou_gpu_eval``); there is none here, so that function is replaced by rpx's
  float64 kernel and *its time is subtracted*: the reference is timed as if its GPU part
  were free. Reported twice: the first call in the process (with numba's compilation, what
  a user waits for) and a second call (compiled), each with the reading.

Usage: python benchmarks/kitti.py [--frames 3769] [--repeat 3] [--reference PATH
       --reference-python PYTHON]
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
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, load, machine, rpx_command

ROOT = Path(__file__).resolve().parent.parent
SIZES = {"Car": (1.5, 1.6, 3.9), "Van": (2.2, 1.9, 5.0), "Truck": (3.2, 2.5, 10.0),
         "Pedestrian": (1.75, 0.6, 0.8), "Person_sitting": (1.2, 0.6, 0.9),
         "Cyclist": (1.7, 0.6, 1.75), "Misc": (1.5, 1.5, 2.0)}
NAMES = ["Car"] * 8 + ["Pedestrian"] * 3 + ["Cyclist"] * 2 + ["Van", "Truck", "Person_sitting", "Misc"]

REFERENCE = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # cuda.jit compiles; the kernel is never run
    sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
    from kitti_object_eval_python import eval as ref
    from rpx_cli.ops import rectangles
    folder, n = sys.argv[3], int(sys.argv[4])
    spent = [0.0]

    def rotated(boxes, qboxes, criterion=-1, device_id=0):
        # rpx's kernel in place of the GPU one; its time is taken off the reference's
        start = time.perf_counter()
        a = np.column_stack([boxes[:, :4], -boxes[:, 4]]).astype(np.float64)
        b = np.column_stack([qboxes[:, :4], -qboxes[:, 4]]).astype(np.float64)
        out = np.zeros((len(a), len(b)), np.float32)
        if len(a) and len(b):
            d, g, inter = rectangles.table_overlaps(a, b, np.zeros(len(a), np.int64),
                                                    np.zeros(len(b), np.int64), 1)
            if criterion == -1:
                inter = inter / (a[d, 2] * a[d, 3] + b[g, 2] * b[g, 3] - inter)
            out[d, g] = inter
        spent[0] += time.perf_counter() - start
        return out

    ref.rotate_iou_gpu_eval = rotated

    def anno(path):
        rows = [line.split() for line in open(path).read().splitlines() if line.strip()]
        v = np.array([[float(x) for x in r[1:15]] for r in rows]).reshape(-1, 14)
        return {"name": np.array([r[0] for r in rows]), "truncated": v[:, 0],
                "occluded": v[:, 1].astype(np.int64), "alpha": v[:, 2], "bbox": v[:, 3:7],
                "dimensions": v[:, 7:10][:, [2, 0, 1]], "location": v[:, 10:13],
                "rotation_y": v[:, 13],
                "score": np.array([float(r[15]) for r in rows]) if rows and len(rows[0]) == 16
                else np.zeros(len(rows))}

    stems = sorted(p[:-4] for p in os.listdir(folder + "/gt"))[:n]
    start = time.perf_counter()
    gt = [anno(f"{folder}/gt/{s}.txt") for s in stems]
    dt = [anno(f"{folder}/pred/{s}.txt") for s in stems]
    read = time.perf_counter() - start
    times = []
    for _ in range(2):
        spent[0] = 0.0
        start = time.perf_counter()
        _, result = ref.get_official_eval_result(gt, dt, [0, 1, 2])
        times.append(time.perf_counter() - start - spent[0])
    print(json.dumps({"read": read, "first": times[0], "second": times[1], "car_3d_moderate":
                      result["Car_3d/moderate_R40"]}))
""")


def _line(name, values) -> str:
    return name + " " + " ".join(f"{v:.2f}" for v in values)


def generate(folder: Path, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for side in ("gt", "pred"):
        (folder / side).mkdir(parents=True, exist_ok=True)
    for f in range(n):
        gts, preds = [], []
        for _ in range(int(rng.integers(3, 15))):
            name = str(rng.choice(NAMES))
            h, w, length = (v * rng.uniform(0.9, 1.1) for v in SIZES[name])
            x, z = rng.uniform(-15, 15), rng.uniform(5, 60)
            y, ry = 1.65 + rng.uniform(-0.2, 0.2), rng.uniform(-math.pi, math.pi)
            alpha = ry - math.atan2(x, z)
            height = max(900 * h / z * 0.8, 8.0)
            cx, y2 = 620 + 720 * x / z, 180 + 720 * y / z
            width = max(height * 1.6, 8.0)
            box = [cx - width / 2, y2 - height, cx + width / 2, y2]
            trunc, occ = float(rng.choice([0, 0, 0.1, 0.2, 0.4, 0.6])), int(rng.integers(0, 4))
            gts.append(_line(name, [trunc, occ, alpha, *box, h, w, length, x, y, z, ry]))
            for _copy in range(int(rng.random() < 0.85) + int(rng.random() < 0.1)):
                e = rng.normal(0, 1, 9) * [0.2, 0.05, 0.3, 0.05, 0.05, 0.1, 2, 2, 0.05]
                pname = name if rng.random() > 0.08 else str(rng.choice(NAMES))
                pbox = [box[0] + e[6], box[1] + e[7], box[2] + e[6], box[3] + e[7]]
                preds.append(_line(pname, [-1, -1, alpha + e[5], *pbox, h + e[3], w + e[4],
                                           length + e[8], x + e[0], y + e[1], z + e[2], ry + e[5],
                                           rng.uniform(0.05, 0.99)]))
        for _ in range(int(rng.integers(0, 3))):
            x1, y1 = rng.uniform(0, 1100), rng.uniform(120, 250)
            gts.append(_line("DontCare", [-1, -1, -10, x1, y1, x1 + rng.uniform(20, 100),
                                          y1 + rng.uniform(10, 50), -1, -1, -1, -1000, -1000,
                                          -1000, -10]))
        for _ in range(int(rng.integers(0, 4))):
            name = str(rng.choice(["Car", "Pedestrian", "Cyclist"]))
            h, w, length = SIZES[name]
            x, z = rng.uniform(-15, 15), rng.uniform(5, 60)
            height = 900 * h / z * 0.8
            cx, y2 = 620 + 720 * x / z, 180 + 720 * 1.65 / z
            preds.append(_line(name, [-1, -1, 0.0, cx - height, y2 - height, cx + height, y2, h, w,
                                      length, x, 1.65, z, 0.0, rng.uniform(0.01, 0.5)]))
        (folder / "gt" / f"{f:06d}.txt").write_text("".join(g + "\n" for g in gts))
        (folder / "pred" / f"{f:06d}.txt").write_text("".join(p + "\n" for p in preds))


def timed(argv: list[str], repeat: int) -> tuple[float, list[float], str]:
    times, out = [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
        out = done.stdout
    return statistics.median(times), times, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=3769)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reference", type=Path)
    parser.add_argument("--reference-python", default=sys.executable)
    parser.add_argument("--clean", action="store_true")
    args = parser.parse_args()
    folder = DATA / f"kitti-{args.frames}"
    if args.clean:
        shutil.rmtree(folder, ignore_errors=True)
        return
    if not (folder / "pred").is_dir():
        generate(folder, args.frames)
    print(f"# {machine()}; {load()}")
    rpx = rpx_command()
    common = ["eval", "detection3d", "--pred-dir", str(folder / "pred"), "--gt-dir",
              str(folder / "gt"), "--jobs", "1", "--quiet"]
    results = {}
    for name, extra in (("rpx kitti", ["--protocol", "kitti"]),
                        ("rpx nuscenes", ["--protocol", "nuscenes"])):
        median, times, out = timed([*rpx, *common, *extra], args.repeat)
        results[name] = median
        report = json.loads(out)
        dataset = report["dataset"]
        figure = dataset.get("kitti", {}).get("Car", {}).get("3d_moderate", dataset.get("mAP"))
        print(f"{name}: median {median:.2f} s of {', '.join(f'{t:.2f}' for t in times)} "
              f"(Car 3d_moderate / mAP {figure})")
    print(f"kitti / nuscenes: {results['rpx kitti'] / results['rpx nuscenes']:.2f}x (target <= 2x)")
    if args.reference:
        script = folder / "reference_runner.py"
        script.write_text(REFERENCE)
        env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        runs = []
        for _ in range(args.repeat):
            done = subprocess.run([args.reference_python, str(script), str(args.reference),
                                   str(ROOT), str(folder), str(args.frames)],
                                  capture_output=True, text=True, env=env, check=True)
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        read = statistics.median(r["read"] for r in runs)
        first = statistics.median(r["read"] + r["first"] for r in runs)
        second = statistics.median(r["read"] + r["second"] for r in runs)
        print(f"reference (GPU part free), reading the labels {read:.2f} s + evaluating: first "
              f"call {first:.2f} s, compiled {second:.2f} s (Car 3d_moderate "
              f"{runs[0]['car_3d_moderate']:.6f} %)")
        print(f"rpx kitti vs reference: {first / results['rpx kitti']:.1f}x (first call), "
              f"{second / results['rpx kitti']:.1f}x (compiled); target >= 5x")
    print(f"# {load()}")


if __name__ == "__main__":
    main()
