"""Time ``rpx stability --task depth --warp reproject`` against the raw cost of reading the frames.

Generates (once, under ``$RPX_BENCH_DATA``) N float32 480x640 depth maps rendered from the
synthetic room of tests/stability_scene.py by a camera moving smoothly (sliding, turning
and rolling a little every frame), with 1% pixel noise like a model's prediction, and a
manifest with every frame's pose and intrinsics (one sequence). Then, in one session,
each command in a fresh process, round-robin, median of ``--repeat``:

1. the floors: a process that only ``np.load``s the N frames; one that reads each frame
   once, sha256s it and parses it (provenance floor);
2. ``rpx stability --task depth --warp reproject`` with the default ``--jobs`` (CPUs
   available) and with ``--jobs 1``, as a first run (empty digest cache) and a re-run
   (warm cache). Every input of depth stability is a prediction: a re-run with new
   predictions is a first run, so the re-run here scores the same predictions again
   (another manifest or warp, say) and reuses every digest. Targets (issue 18): first run
   within 10x the np.load floor, re-run within 8x;
3. ``--split``: one pair's CPU time by step in one process (``time.process_time``): reading
   a frame, its sha256, the fused reprojection kernel and the step-by-step reference.

Usage: python benchmarks/stability.py [--frames 1000] [--repeat 3] [--split]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _common import (  # noqa: E402
    DATA,
    DigestRuns,
    floor_command,
    load,
    machine,
    measure,
    np_load_command,
    rpx_command,
    spread_line,
    timed_run,
    verdict,
)
from stability_scene import render, room, trajectory  # noqa: E402

H, W = 480, 640
INTRINSICS = (525.0, 525.0, (W - 1) / 2, (H - 1) / 2)

def generate(root: Path, frames: int) -> Path:
    if (root / "DONE").exists():
        return root
    (root / "pred").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    # a slow walk along the room: 5 mm, 0.1 degree of yaw and 0.05 of roll per frame
    poses = trajectory(frames, step_m=0.005, yaw_deg=0.1, roll_deg=0.05, start=(-1.5, 0.0, -0.5))
    samples = []
    planes = room()
    for index, pose in enumerate(poses):
        depth, _ = render(planes, pose, INTRINSICS, (H, W))
        pred = (depth * np.exp(rng.normal(0.0, 0.01, (H, W)))).astype(np.float32)
        stem = f"{index:06d}"
        np.save(root / "pred" / f"{stem}.npy", pred)
        samples.append({"stem": stem, "sequence": "walk", "frame": index, "pose": pose.tolist(),
                        "intrinsics": list(INTRINSICS)})
    (root / "manifest.json").write_text(json.dumps({"schema_version": 1, "samples": samples}))
    (root / "DONE").write_text("ok\n")
    return root


def cpu_split(root: Path, pairs: int, repeat: int) -> None:
    """Per-pair CPU milliseconds of each step, in this process, median of ``repeat``."""
    import hashlib
    import statistics
    import time

    from rpx_cli.allocator import tune_allocator
    from rpx_cli.deploy.stability import (
        EDGE_ABSOLUTE_M,
        EDGE_RELATIVE,
        OCCLUSION_ABSOLUTE_M,
        OCCLUSION_RELATIVE,
    )
    from rpx_cli.io.filebuffer import FileBuffer
    from rpx_cli.ops import reprojection
    from rpx_cli.ops.warp import motion

    tune_allocator()
    samples = json.loads((root / "manifest.json").read_text())["samples"][:pairs + 1]
    paths = [str(root / "pred" / f"{s['stem']}.npy") for s in samples]
    frames = [np.load(path) for path in paths]
    poses = [np.asarray(s["pose"]) for s in samples]
    options = {"occlusion": (OCCLUSION_RELATIVE, OCCLUSION_ABSOLUTE_M),
               "edge": (EDGE_RELATIVE, EDGE_ABSOLUTE_M)}
    kernel = reprojection.ReprojectionKernel((H, W))
    buffer = FileBuffer(digest=False)

    def read() -> None:
        for path in paths[1:]:
            buffer.read(path)

    def sha256() -> None:
        for path in paths[1:]:
            hashlib.sha256(memoryview(buffer.read(path))).digest()

    def pairs_with(score) -> None:
        for t in range(pairs):
            score(frames[t], frames[t + 1], INTRINSICS, INTRINSICS, motion(poses[t], poses[t + 1]),
                  **options)

    steps = {"read a frame (into a reused buffer)": read,
             "read + sha256 of a frame": sha256,
             "reprojection TS, fused kernel (ops/reprojection.py)": lambda: pairs_with(kernel.agreement),
             "reprojection TS, step-by-step reference (ops/warp.py)": lambda: pairs_with(
                 reprojection.reference_reprojected_agreement)}
    print()
    print(f"| in one process, {pairs} pairs of {H}x{W}, CPU time (process_time), median of "
          f"{repeat} | ms / pair |")
    print("|---|---:|")
    for label, step in steps.items():
        times = []
        for _ in range(repeat):
            start = time.process_time()
            step()
            times.append(time.process_time() - start)
        print(f"| {label} | {statistics.median(times) / pairs * 1e3:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--split", action="store_true")
    args = parser.parse_args()
    root = generate(DATA / f"stability-{args.frames}", args.frames)
    if args.split:
        cpu_split(root, min(args.frames - 1, 200), args.repeat)
        return
    pred = root / "pred"
    stability = rpx_command() + ["stability", "--task", "depth", "--warp", "reproject",
                                 "--pred-dir", str(pred), "--manifest", str(root / "manifest.json"),
                                 "--quiet"]
    timed_run(np_load_command(pred))  # warm the cache
    runs = DigestRuns("stability", predictions=[], ground_truth=[pred])
    checks = runs.warm(stability, expect_reused=args.frames, at_least=True)
    load_before = load()
    commands = {"np.load": lambda: np_load_command(pred),
                "provenance": lambda: floor_command(hashed=[pred])}
    for jobs in ("default", "1"):
        for mode, extra in (("first", runs.first), ("rerun", runs.rerun)):
            flags = [] if jobs == "default" else ["--jobs", jobs]
            commands[f"{jobs} {mode}"] = (lambda flags=flags, extra=extra:
                                          stability + flags + ["-o", "/dev/null", *extra()])
    timings = measure(commands, repeat=args.repeat)
    runs.cleanup()
    t = {name: timing.median for name, timing in timings.items()}
    n, floor = args.frames, t["np.load"]
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"{n} frames of {H}x{W} float32 depth (one sequence, {n - 1} pairs), median of "
          f"{args.repeat}, fresh process per run, round-robin; digests {checks}")
    print(spread_line(timings))
    print()
    print("| floor (one process) | wall s | ms / frame |")
    print("|---|---:|---:|")
    print(f"| read: `np.load` of the {n} .npy files | {floor:.2f} | {floor / n * 1e3:.2f} |")
    print(f"| provenance: read once, sha256, parse | {t['provenance']:.2f} | "
          f"{t['provenance'] / n * 1e3:.2f} |")
    print()
    print("| `rpx stability --task depth --warp reproject` | first run s | vs np.load floor | "
          "re-run s | vs np.load floor |")
    print("|---|---:|---:|---:|---:|")
    for jobs, label in (("default", "default jobs (2)"), ("1", "`--jobs 1`")):
        first, rerun = t[f"{jobs} first"], t[f"{jobs} rerun"]
        a, b = first / floor, rerun / floor
        print(f"| {label} | {first:.2f} | {a:.2f}x, {verdict(a, 10, at_most=True)} | {rerun:.2f} | "
              f"{b:.2f}x, {verdict(b, 8, at_most=True)} |")


if __name__ == "__main__":
    main()
