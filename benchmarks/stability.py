"""Time ``rpx stability --task depth --warp reproject`` against the raw cost of reading the frames.

Generates (once, under ``benchmarks/data/``) N float32 480x640 depth maps rendered from the
synthetic room of tests/stability_scene.py by a camera moving smoothly (sliding, turning
and rolling a little every frame), with 1% pixel noise like a model's prediction, and a
manifest with every frame's pose and intrinsics (one sequence). Then, in one session,
each command in a fresh process, median of ``--repeat``:

1. the floor: a process that only ``np.load``s the N frames;
2. ``rpx stability --task depth --warp reproject`` with the default ``--jobs`` (CPUs
   available) and with ``--jobs 1``. Target: within 3x the floor.

Usage: python benchmarks/stability.py [--frames 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _common import DATA, machine, rpx_command, timed_run  # noqa: E402
from stability_scene import render, room, trajectory  # noqa: E402

H, W = 480, 640
INTRINSICS = (525.0, 525.0, (W - 1) / 2, (H - 1) / 2)

FLOOR = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    for path in sorted(Path(sys.argv[1]).rglob("*.npy")):
        np.load(path)
    """
)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = generate(DATA / f"stability-{args.frames}", args.frames)
    py = sys.executable
    pred = root / "pred"
    stability = rpx_command() + ["stability", "--task", "depth", "--warp", "reproject",
                                 "--pred-dir", str(pred), "--manifest", str(root / "manifest.json"),
                                 "-o", "/dev/null", "--quiet"]

    timed_run([py, "-c", FLOOR, str(pred)])  # warm the cache
    floor = timed_run([py, "-c", FLOOR, str(pred)], repeat=args.repeat)
    default = timed_run(stability, repeat=args.repeat)
    jobs1 = timed_run(stability + ["--jobs", "1"], repeat=args.repeat)

    n = args.frames
    print(f"machine: {machine()}")
    print(f"{n} frames of {H}x{W} float32 depth (one sequence, {n - 1} pairs), median of "
          f"{args.repeat}, fresh process per run")
    print("| run | wall s | ms / frame | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| floor: `np.load` of the {n} .npy files | {floor:.2f} | {floor / n * 1e3:.2f} | 1.00x |")
    print(f"| `rpx stability --task depth --warp reproject` (default jobs) | {default:.2f} | "
          f"{default / n * 1e3:.2f} | {default / floor:.2f}x floor (target <= 3) |")
    print(f"| `rpx stability --task depth --warp reproject --jobs 1` | {jobs1:.2f} | "
          f"{jobs1 / n * 1e3:.2f} | {jobs1 / floor:.2f}x floor (target <= 3) |")


if __name__ == "__main__":
    main()
