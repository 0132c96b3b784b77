"""Time ``rpx eval segmentation`` against one process that only decodes the same PNGs.

Generates (once) N pairs of 480x640 8-bit label PNGs with 20 classes: GT from random
rectangles (regions, as real label maps have, so PNG compresses them like real ones), and
a prediction that shifts region borders and mislabels some regions. Times in one session,
fresh process per run, median of ``--repeat``: decoding the 2N PNGs with Pillow in one
process; ``rpx eval segmentation --jobs 1`` and ``--jobs 2`` (target: at least 1.6x faster
than decode-only).

Usage: python benchmarks/segmentation.py [--pairs 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, machine, rpx_command, timed_run

H, W, CLASSES = 480, 640, 20

DECODE = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    from PIL import Image
    for d in sys.argv[1:]:
        for path in sorted(Path(d).glob("*.png")):
            with Image.open(path) as image:
                np.asarray(image)
    """
)


def labels(rng: np.random.Generator) -> np.ndarray:
    out = np.full((H, W), rng.integers(CLASSES), np.uint8)
    for _ in range(40):
        y, x = rng.integers(0, H - 20), rng.integers(0, W - 20)
        out[y : y + rng.integers(20, 200), x : x + rng.integers(20, 260)] = rng.integers(CLASSES)
    return out


def generate(root: Path, pairs: int) -> Path:
    if (root / "DONE").exists():
        return root
    from PIL import Image

    (root / "pred").mkdir(parents=True, exist_ok=True)
    (root / "gt").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for index in range(pairs):
        gt = labels(rng)
        pred = np.roll(gt, (int(rng.integers(-6, 7)), int(rng.integers(-6, 7))), axis=(0, 1))
        wrong = labels(rng) < 2
        pred[wrong] = (pred[wrong] + 1) % CLASSES
        Image.fromarray(gt).save(root / "gt" / f"{index:06d}.png")
        Image.fromarray(pred).save(root / "pred" / f"{index:06d}.png")
    (root / "DONE").write_text("ok\n")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = generate(DATA / f"segmentation-{args.pairs}", args.pairs)
    py, n = sys.executable, args.pairs
    pred, gt = str(root / "pred"), str(root / "gt")
    timed_run([py, "-c", DECODE, pred, gt])  # warm the cache
    decode = timed_run([py, "-c", DECODE, pred, gt], repeat=args.repeat)
    command = rpx_command() + ["eval", "segmentation", "--pred-dir", pred, "--gt-dir", gt,
                               "-o", "/dev/null", "--quiet"]
    jobs1 = timed_run(command + ["--jobs", "1"], repeat=args.repeat)
    jobs2 = timed_run(command + ["--jobs", "2"], repeat=args.repeat)
    print(f"machine: {machine()}")
    print(f"{n} pairs of {H}x{W} 8-bit label PNGs, {CLASSES} classes, median of {args.repeat}")
    print("| run | wall s | ms / pair | vs decode-only |")
    print("|---|---:|---:|---:|")
    print(f"| decode only: the {2 * n} PNGs, 1 process | {decode:.2f} | {decode / n * 1e3:.2f} | 1.00x |")
    print(f"| `rpx eval segmentation --jobs 1` | {jobs1:.2f} | {jobs1 / n * 1e3:.2f} | "
          f"{decode / jobs1:.2f}x faster |")
    print(f"| `rpx eval segmentation --jobs 2` | {jobs2:.2f} | {jobs2 / n * 1e3:.2f} | "
          f"{decode / jobs2:.2f}x faster (target >= 1.6) |")


if __name__ == "__main__":
    main()
