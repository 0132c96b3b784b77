"""Time ``rpx eval segmentation`` against one process that only decodes the same PNGs,
first run and re-run.

Generates (once) N pairs of 480x640 8-bit label PNGs with 20 classes: GT from random
rectangles (regions, as real label maps have, so PNG compresses them like real ones), and
a prediction that shifts region borders and mislabels some regions. Times in one session,
fresh process per run, round-robin, median of ``--repeat``: decoding the 2N PNGs with
Pillow in one process (decode-only); the same reading each file once and hashing it
(provenance floor); ``rpx eval segmentation --jobs 1`` and ``--jobs 2``, each as a first
run (empty digest cache) and a re-run (warm cache, unchanged GT, new predictions). Target
(issue 18): ``--jobs 2`` at least 1.5x faster than decode-only, both ways.

Usage: python benchmarks/segmentation.py [--pairs 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, DigestRuns, floor_command, load, machine, measure, rpx_command, spread_line, verdict

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
    pred, gt = root / "pred", root / "gt"
    command = rpx_command() + ["eval", "segmentation", "--pred-dir", str(pred), "--gt-dir",
                               str(gt), "--quiet"]
    runs = DigestRuns("segmentation", predictions=[pred], ground_truth=[gt])
    checks = runs.warm(command + ["--jobs", "2"], expect_reused=n)  # also warms the page cache
    load_before = load()
    commands = {
        "decode": lambda: [py, "-c", DECODE, str(pred), str(gt)],
        "provenance": lambda: floor_command(hashed=[pred, gt]),
    }
    for jobs in (1, 2):
        for mode, extra in (("first", runs.first), ("rerun", runs.rerun)):
            commands[f"{jobs} {mode}"] = (lambda jobs=jobs, extra=extra:
                                          command + ["--jobs", str(jobs), "-o", "/dev/null", *extra()])
    timings = measure(commands, repeat=args.repeat)
    runs.cleanup()
    t = {name: timing.median for name, timing in timings.items()}
    decode = t["decode"]
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"{n} pairs of {H}x{W} 8-bit label PNGs, {CLASSES} classes, median of {args.repeat}, "
          f"round-robin; digests {checks}")
    print(spread_line(timings))
    print()
    print("| floor (one process) | wall s | ms / pair |")
    print("|---|---:|---:|")
    print(f"| decode only: the {2 * n} PNGs (Pillow) | {decode:.2f} | {decode / n * 1e3:.2f} |")
    print(f"| provenance: read once, sha256, decode the {2 * n} PNGs | {t['provenance']:.2f} | "
          f"{t['provenance'] / n * 1e3:.2f} |")
    print()
    print("| `rpx eval segmentation` | first run s | vs decode-only | re-run s | vs decode-only |")
    print("|---|---:|---:|---:|---:|")
    for jobs in (1, 2):
        first, rerun = t[f"{jobs} first"], t[f"{jobs} rerun"]
        a, b = decode / first, decode / rerun
        goal = ((f", {verdict(a, 1.5, at_most=False)}", f", {verdict(b, 1.5, at_most=False)}")
                if jobs == 2 else ("", ""))
        print(f"| `--jobs {jobs}` | {first:.2f} | {a:.2f}x faster{goal[0]} | {rerun:.2f} | "
              f"{b:.2f}x faster{goal[1]} |")


if __name__ == "__main__":
    main()
