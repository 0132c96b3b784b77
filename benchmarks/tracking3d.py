"""``rpx eval tracking3d`` against nuscenes-devkit 1.1.9's tracking evaluation.

Generates (once) a nuScenes-val-sized set: N scenes (default 150, the val split) of 40
samples 0.5 s apart, the seven tracking classes, ~35 GT tracks a scene that move, enter and
leave (~30 GT boxes a sample), and a tracker's output: each GT box found with probability
0.85 (jittered 0.3 m), ids that switch now and then, false tracks, scores per track. Written
as nuScenes submission files (``gt.json`` with scenes, ``pred.json``).

- **rpx**: ``rpx eval tracking3d --pred-file P --gt-file G`` in a fresh process, end to end
  (reading, digests, the devkit's preparation, every class and threshold, rows, report).
- **devkit**: ``TrackingEval.evaluate`` (``TrackingEvaluation.accumulate`` per class: its
  pandas/motmetrics loop over scenes and frames at each threshold) on the devkit's own
  ``create_tracks`` output, loading not timed; run in a fresh process with the test-side
  shims (``tests/tracking3d_reference.py``). It is linear in the scenes; ``--devkit-scenes
  M`` times it on the first M scenes only and reports the time scaled to N.

Both tools' AMOTA is printed.

Usage: python benchmarks/tracking3d.py [--scenes 150] [--repeat 3] [--devkit-scenes 150]
       [--skip-devkit]; python benchmarks/tracking3d.py --clean
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, machine, rpx_command

ROOT = Path(__file__).resolve().parent.parent
CLASSES = ("bicycle", "bus", "car", "motorcycle", "pedestrian", "trailer", "truck")
SHARE = (0.03, 0.03, 0.45, 0.03, 0.35, 0.03, 0.08)


def generate(folder: Path, n_scenes: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    gt_results, pred_results, scenes, timestamps = {}, {}, {}, {}
    for s in range(n_scenes):
        tokens = [f"sc{s:03d}-{k:02d}" for k in range(40)]
        scenes[f"scene-{s:04d}"] = tokens
        start = 1_533_151_600_000_000 + 100_000_000 * s
        stamps = [start + 500_000 * k for k in range(40)]
        timestamps.update(zip(tokens, stamps, strict=True))
        gt = {t: [] for t in tokens}
        pred = {t: [] for t in tokens}
        for o in range(35):
            name = str(rng.choice(CLASSES, p=SHARE))
            first = int(rng.integers(0, 35))
            last = int(rng.integers(first + 2, 41))
            origin, step = rng.uniform(-38, 38, 2), rng.normal(0, 0.6, 2)
            track, score = f"p{s}.{o}", float(rng.uniform(0.2, 1))
            for k in range(first, last):
                p = origin + step * (k - first)
                box = {"translation": [float(p[0]), float(p[1]), 1.0], "size": [1.9, 4.6, 1.7],
                       "rotation": [1.0, 0.0, 0.0, 0.0], "velocity": [0.0, 0.0],
                       "tracking_id": f"g{s}.{o}", "tracking_name": name,
                       "num_pts": int(rng.integers(0, 60)), "timestamp": stamps[k]}
                gt[tokens[k]].append(box)
                if rng.random() > 0.85:
                    continue
                if rng.random() < 0.02:
                    track = f"p{s}.{o}.{k}"
                q = p + rng.normal(0, 0.3, 2)
                pred[tokens[k]].append({**{key: box[key] for key in ("size", "rotation", "velocity")},
                                        "translation": [float(q[0]), float(q[1]), 1.0],
                                        "tracking_id": track, "tracking_name": name,
                                        "tracking_score": float(np.clip(score + rng.normal(0, 0.05), 0, 1))})
        for f in range(12):  # false tracks
            name = str(rng.choice(CLASSES, p=SHARE))
            first = int(rng.integers(0, 38))
            origin = rng.uniform(-38, 38, 2)
            for k in range(first, min(40, first + int(rng.integers(1, 8)))):
                q = origin + rng.normal(0, 0.3, 2)
                pred[tokens[k]].append({"translation": [float(q[0]), float(q[1]), 1.0],
                                        "size": [1.9, 4.6, 1.7], "rotation": [1.0, 0.0, 0.0, 0.0],
                                        "velocity": [0.0, 0.0], "tracking_id": f"f{s}.{f}",
                                        "tracking_name": name, "tracking_score": float(rng.uniform(0, 0.6))})
        gt_results.update(gt)
        pred_results.update(pred)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gt.json").write_text(json.dumps({"results": gt_results, "scenes": scenes,
                                                  "timestamps": timestamps}))
    (folder / "pred.json").write_text(json.dumps({"meta": {"use_lidar": True}, "results": pred_results}))


DEVKIT = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {root!r})
    from tests.tracking3d_reference import devkit_tracking
    import tests.tracking3d_reference as ref
    gt, pred = json.load(open({gt!r})), json.load(open({pred!r}))
    scenes = dict(list(gt["scenes"].items())[:{m}])
    keep = {{t for v in scenes.values() for t in v}}
    stamps = gt["timestamps"]
    g = {{t: b for t, b in gt["results"].items() if t in keep}}
    p = {{t: b for t, b in pred["results"].items() if t in keep}}
    # time TrackingEval.evaluate only: wrap it
    with ref.shimmed():
        from nuscenes.eval.tracking.evaluate import TrackingEval
        original = TrackingEval.evaluate
        spent = []
        def timed(self):
            t0, c0 = time.perf_counter(), time.process_time()
            out = original(self)
            spent.extend((time.perf_counter() - t0, time.process_time() - c0))
            return out
        TrackingEval.evaluate = timed
        result = devkit_tracking(g, p, scenes, stamps)
    print(json.dumps({{"seconds": spent[0], "cpu": spent[1], "amota": result["summary"]["amota"]}}))
""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenes", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--devkit-scenes", type=int, default=None)
    parser.add_argument("--skip-devkit", action="store_true")
    parser.add_argument("--clean", action="store_true")
    args = parser.parse_args()
    folder = DATA / f"tracking3d-{args.scenes}"
    if args.clean:
        shutil.rmtree(folder, ignore_errors=True)
        return
    if not (folder / "pred.json").is_file():
        generate(folder, args.scenes)
    print(machine())
    gt, pred = folder / "gt.json", folder / "pred.json"
    command = [*rpx_command(), "eval", "tracking3d", "--pred-file", str(pred), "--gt-file", str(gt),
               "-o", str(folder / "report.json"), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times, cpus = [], []
    for _ in range(args.repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, check=True, env=env)
        times.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    amota = json.loads((folder / "report.json").read_text())["dataset"]["amota"]
    rpx_s, rpx_cpu = statistics.median(times), statistics.median(cpus)
    print(f"rpx    {args.scenes} scenes: median {rpx_s:.2f} s of {[round(t, 2) for t in times]} "
          f"(CPU median {rpx_cpu:.2f} s of {[round(t, 2) for t in cpus]}); AMOTA {amota!r}")
    if args.skip_devkit:
        return
    m = min(args.devkit_scenes or args.scenes, args.scenes)
    script = DEVKIT.format(root=str(ROOT), gt=str(gt), pred=str(pred), m=m)
    out = subprocess.run([sys.executable, "-c", script], check=True, env=env, capture_output=True,
                         text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    scaled, scaled_cpu = (result[key] * args.scenes / m for key in ("seconds", "cpu"))
    extrapolated = f"; x {args.scenes}/{m}: {scaled:.1f} s (CPU {scaled_cpu:.1f} s)" \
        if m != args.scenes else ""
    print(f"devkit {m} scenes: TrackingEval.evaluate {result['seconds']:.1f} s (CPU "
          f"{result['cpu']:.1f} s){extrapolated}; AMOTA {result['amota']!r}"
          f"{' (of those scenes)' if m != args.scenes else ''}")
    print(f"speed-up: {scaled / rpx_s:.1f}x wall, {scaled_cpu / rpx_cpu:.1f}x CPU")


if __name__ == "__main__":
    main()
