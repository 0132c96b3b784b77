"""Time ``rpx eval depth`` against the raw cost of reading the data, and its memory growth.

Generates (once, under ``benchmarks/data/``) N pairs of 480x640 depth maps: predictions as
float32 ``.npy``, ground truth both as float32 ``.npy`` (metres, ~10% holes in clustered
regions, like a structured-light sensor) and as 16-bit PNG (millimetres). Then, in one
session, each command in a fresh process, median of ``--repeat``:

1. ``.npy`` + ``.npy``: the floor (a loop that only ``np.load``s the 2N files) vs
   ``rpx eval depth --jobs 1`` (target within 3x) and ``--jobs 2`` (within 2x);
2. 16-bit PNG GT + ``.npy`` predictions: one process that only decodes the N PNGs (Pillow,
   as rpx does) vs ``rpx eval depth --jobs 2`` (target at least 1.6x faster);
3. peak RSS of ``rpx eval depth --no-rows --jobs 1`` on N pairs vs 10N pairs (the 10N
   stems are symlinks to the N files, so the page cache stays warm): target within 1.2x.

Usage: python benchmarks/depth.py [--pairs 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, machine, rpx_command, timed_run

H, W = 480, 640

FLOOR_NPY = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    for d in sys.argv[1:]:
        for path in sorted(Path(d).glob("*.npy")):
            np.load(path)
    """
)
FLOOR_PNG = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    from PIL import Image
    for path in sorted(Path(sys.argv[1]).glob("*.png")):
        with Image.open(path) as image:
            np.asarray(image)
    """
)


def generate(root: Path, pairs: int) -> Path:
    if (root / "DONE").exists():
        return root
    from PIL import Image

    for sub in ("pred", "gt", "gt_png"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    rows = np.arange(H, dtype=np.float32)[:, None]
    for index in range(pairs):
        wall = rng.uniform(3, 9)
        floor = np.where(rows > 170, 1.4 * 300 / np.maximum(rows - 170, 1), np.inf)
        gt = np.minimum(np.broadcast_to(floor, (H, W)), wall).astype(np.float32)
        gt += rng.normal(0, 0.01, (H, W)).astype(np.float32)
        holes = np.zeros((H, W), bool)
        for _ in range(6):  # clustered dropouts
            y, x = rng.integers(0, H - 60), rng.integers(0, W - 80)
            holes[y : y + rng.integers(10, 60), x : x + rng.integers(10, 80)] = True
        gt[holes] = 0
        pred = (gt * np.exp(rng.normal(0, 0.1, (H, W)))).astype(np.float32)
        pred[holes] = rng.uniform(1, 5)
        stem = f"{index:06d}"
        np.save(root / "pred" / f"{stem}.npy", pred)
        np.save(root / "gt" / f"{stem}.npy", gt)
        Image.fromarray(np.round(gt * 1000).astype(np.uint16)).save(root / "gt_png" / f"{stem}.png")
    (root / "DONE").write_text("ok\n")
    return root


def replicate(root: Path, factor: int) -> Path:
    """``factor`` x the stems, as symlinks to the same files."""
    big = root.parent / f"{root.name}-x{factor}"
    if (big / "DONE").exists():
        return big
    for sub in ("pred", "gt"):
        (big / sub).mkdir(parents=True, exist_ok=True)
        for path in sorted((root / sub).glob("*.npy")):
            for copy in range(factor):
                link = big / sub / f"{copy:02d}_{path.name}"
                if not link.exists():
                    os.symlink(path, link)
    (big / "DONE").write_text("ok\n")
    return big


def peak_rss_mb(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of a command run in a fresh child."""
    start = time.perf_counter()
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
            "stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", code, *argv], check=True, capture_output=True,
                          text=True)
    return time.perf_counter() - start, int(done.stdout.strip()) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = generate(DATA / f"depth-{args.pairs}", args.pairs)
    py = sys.executable
    pred, gt, gt_png = root / "pred", root / "gt", root / "gt_png"
    eval_depth = rpx_command() + ["eval", "depth", "--pred-dir", str(pred), "-o", "/dev/null", "--quiet"]

    timed_run([py, "-c", FLOOR_NPY, str(pred), str(gt), str(gt_png)])  # warm the cache
    floor = timed_run([py, "-c", FLOOR_NPY, str(pred), str(gt)], repeat=args.repeat)
    jobs1 = timed_run(eval_depth + ["--gt-dir", str(gt), "--jobs", "1"], repeat=args.repeat)
    jobs2 = timed_run(eval_depth + ["--gt-dir", str(gt), "--jobs", "2"], repeat=args.repeat)
    decode = timed_run([py, "-c", FLOOR_PNG, str(gt_png)], repeat=args.repeat)
    png2 = timed_run(eval_depth + ["--gt-dir", str(gt_png), "--jobs", "2"], repeat=args.repeat)
    png1 = timed_run(eval_depth + ["--gt-dir", str(gt_png), "--jobs", "1"], repeat=args.repeat)

    big = replicate(root, 10)
    memory = rpx_command() + ["eval", "depth", "--no-rows", "-o", "/dev/null", "--quiet",
                              "--jobs", "1"]
    small_s, small_mb = peak_rss_mb(memory + ["--pred-dir", str(pred), "--gt-dir", str(gt)])
    big_s, big_mb = peak_rss_mb(memory + ["--pred-dir", str(big / "pred"), "--gt-dir", str(big / "gt")])

    n = args.pairs
    print(f"machine: {machine()}")
    print(f"{n} pairs of {H}x{W} depth maps, median of {args.repeat}, fresh process per run")
    print("| run | wall s | ms / pair | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| floor: `np.load` of the {2 * n} .npy files | {floor:.2f} | {floor / n * 1e3:.2f} | 1.00x |")
    print(f"| `rpx eval depth --jobs 1` (npy + npy) | {jobs1:.2f} | {jobs1 / n * 1e3:.2f} | "
          f"{jobs1 / floor:.2f}x floor (target <= 3) |")
    print(f"| `rpx eval depth --jobs 2` (npy + npy) | {jobs2:.2f} | {jobs2 / n * 1e3:.2f} | "
          f"{jobs2 / floor:.2f}x floor (target <= 2) |")
    print(f"| decode only: the {n} 16-bit PNGs, 1 process | {decode:.2f} | {decode / n * 1e3:.2f} | 1.00x |")
    print(f"| `rpx eval depth --jobs 1` (PNG GT + npy) | {png1:.2f} | {png1 / n * 1e3:.2f} | "
          f"{decode / png1:.2f}x faster than decode |")
    print(f"| `rpx eval depth --jobs 2` (PNG GT + npy) | {png2:.2f} | {png2 / n * 1e3:.2f} | "
          f"{decode / png2:.2f}x faster than decode (target >= 1.6) |")
    print()
    print("| peak RSS, `--no-rows --jobs 1` | pairs | wall s | MB | ratio |")
    print("|---|---:|---:|---:|---:|")
    print(f"| 1x | {n} | {small_s:.1f} | {small_mb:.1f} | 1.00x |")
    ratio = big_mb / small_mb
    print(f"| 10x (symlinks) | {10 * n} | {big_s:.1f} | {big_mb:.1f} | {ratio:.2f}x (target <= 1.2) |")


if __name__ == "__main__":
    main()
