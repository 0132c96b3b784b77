"""Pose speed: ``rpx eval pose`` against a loop that only parses the same files.

Generates (once) N pairs of pose files — 2N files, half JSON ``{"R", "t"}`` and half RPX
``.npy`` ``[x, y, z, qx, qy, qz, qw]``, the format chosen per file so pairs mix them — then
times, in fresh processes, round-robin, median of ``--repeat``:

1. the floor: a script that reads and parses every file (``json.loads`` / ``np.load``) and
   does nothing else; the provenance floor: each file read once, sha256'd and parsed;
2. ``rpx eval pose -o /dev/null --quiet`` with the default ``--jobs`` and with ``--jobs 1``
   (parse, validate, metrics, digests of every file, report written), each as a first run
   (empty digest cache) and a re-run (warm cache, unchanged GT, new predictions).

Target: rpx under 2x the floor.

Usage: python benchmarks/pose.py [--pairs 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, DigestRuns, floor_command, load, machine, measure, rpx_command, spread_line

PARSE_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    for folder in sys.argv[1:]:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name.endswith(".json"):
                with open(entry.path, "rb") as handle:
                    json.loads(handle.read())
            else:
                np.load(entry.path)
    """
)


def random_rotations(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit quaternions (x, y, z, w), uniform on SO(3)."""
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def matrices(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], 1)


def write_poses(folder: Path, q: np.ndarray, t: np.ndarray, as_json: np.ndarray) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rotations = matrices(q)
    for index in range(len(q)):
        stem = folder / f"{index:06d}"
        if as_json[index]:
            stem.with_suffix(".json").write_text(json.dumps(
                {"R": rotations[index].tolist(), "t": t[index].tolist()}))
        else:
            np.save(stem.with_suffix(".npy"), np.r_[t[index], q[index]])


def generate(root: Path, pairs: int) -> Path:
    if (root / "DONE").exists():
        return root
    rng = np.random.default_rng(0)
    q_gt, t_gt = random_rotations(rng, pairs), rng.normal(size=(pairs, 3))
    noise = np.c_[rng.normal(0, 0.02, (pairs, 3)), np.ones(pairs)]  # small rotations (x y z w)
    x1, y1, z1, w1 = q_gt.T
    x2, y2, z2, w2 = (noise / np.linalg.norm(noise, axis=1, keepdims=True)).T
    q_pred = np.stack([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2, w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                       w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2, w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2], 1)
    t_pred = t_gt + rng.normal(0, 0.1, (pairs, 3))
    write_poses(root / "gt", q_gt, t_gt, rng.random(pairs) < 0.5)
    write_poses(root / "pred", q_pred, t_pred, rng.random(pairs) < 0.5)
    (root / "DONE").write_text("ok\n")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = generate(DATA / f"pose-{args.pairs}", args.pairs)
    pred, gt = root / "pred", root / "gt"
    base = rpx_command() + ["eval", "pose", "--pred-dir", str(pred), "--gt-dir", str(gt), "--quiet"]
    runs = DigestRuns("pose", predictions=[pred], ground_truth=[gt])
    checks = runs.warm(base, expect_reused=args.pairs)
    load_before = load()
    commands = {"floor": lambda: [sys.executable, "-c", PARSE_SCRIPT, str(gt), str(pred)],
                "provenance": lambda: floor_command(hashed=[gt, pred])}
    for jobs in ("default", "1"):
        for mode, extra in (("first", runs.first), ("rerun", runs.rerun)):
            flags = [] if jobs == "default" else ["--jobs", jobs]
            commands[f"{jobs} {mode}"] = (lambda flags=flags, extra=extra:
                                          base + flags + ["-o", "/dev/null", *extra()])
    timings = measure(commands, repeat=args.repeat)
    runs.cleanup()
    t = {name: timing.median for name, timing in timings.items()}
    floor = t["floor"]
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"{args.pairs} pairs = {2 * args.pairs} pose files (JSON R/t and .npy, mixed), "
          f"fresh processes, round-robin, median of {args.repeat}; digests {checks}")
    print(spread_line(timings))
    print("| run | first run s | vs parse only | re-run s | vs parse only |")
    print("|---|---:|---:|---:|---:|")
    print(f"| parse only: `json.loads` / `np.load` per file, 1 process | {floor:.2f} | 1.00x | | |")
    print(f"| provenance floor: read once, sha256, parse | {t['provenance']:.2f} | "
          f"{t['provenance'] / floor:.2f}x | | |")
    for jobs, label in (("default", "`rpx eval pose` (default --jobs)"), ("1", "`rpx eval pose --jobs 1`")):
        first, rerun = t[f"{jobs} first"], t[f"{jobs} rerun"]
        print(f"| {label} | {first:.2f} | **{first / floor:.2f}x** (target < 2) | {rerun:.2f} | "
              f"**{rerun / floor:.2f}x** (target < 2) |")


if __name__ == "__main__":
    main()
