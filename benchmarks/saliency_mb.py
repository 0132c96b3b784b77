"""Time ``rpx saliency-mb`` against a plain numpy script doing the same reduction, first
run and re-run.

Generates ``--generate`` (default: ``--pairs``) pairs of 1080x1920 float32 ``.npy`` masks
(prediction: scores in [0, 1); GT: a 0/1 mask) under ``$RPX_BENCH_DATA`` once; a run on
fewer pairs uses the first ones (symlinks). Warms the page cache, then times in one
session, each in a fresh process, round-robin, median of ``--repeat``:

- the read floor: a loop that only ``np.load``s the same 2N files; the provenance floor:
  each file read once, sha256'd and parsed; the re-run's: only the predictions hashed;
- the baseline: a plain numpy script, one process, doing exactly what the original
  ``eval_saliency_per_mb.py`` does per pair (load, scale, block means, IoU);
- ``rpx saliency-mb --jobs 1`` and ``--jobs 2`` (report to /dev/null; digests included),
  each as a first run (empty digest cache) and a re-run (warm cache, unchanged GT, new
  predictions). Targets (issue 18): ``--jobs 2`` >= 1.25x faster than the baseline on a
  first run (300 and 1,000 pairs), >= 2.5x on a re-run.

Usage: python benchmarks/saliency_mb.py [--pairs 1000] [--generate N] [--block-size 16]
       [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
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

BASELINE = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    pred_dir, gt_dir = Path(sys.argv[1]), Path(sys.argv[2])
    block, threshold = int(sys.argv[3]), float(sys.argv[4])

    def load(path):
        arr = np.asarray(np.load(path), dtype=np.float32)
        if not np.isfinite(arr).all():
            raise ValueError(path)
        peak = float(arr.max(initial=0.0))
        if peak > 1.0:
            arr = arr / peak
        return np.clip(arr, 0.0, 1.0)

    def blocks(mask):
        hb, wb = mask.shape[0] // block, mask.shape[1] // block
        crop = mask[: hb * block, : wb * block]
        return crop.reshape(hb, block, wb, block).mean(axis=(1, 3)) >= threshold

    inter = union = 0
    ious = []
    for pred_path in sorted(pred_dir.glob("*.npy")):
        p, g = blocks(load(pred_path)), blocks(load(gt_dir / pred_path.name))
        i, u = int(np.logical_and(p, g).sum()), int(np.logical_or(p, g).sum())
        inter, union = inter + i, union + u
        ious.append(1.0 if u == 0 else i / u)
    print(float(np.mean(ious)), 1.0 if union == 0 else inter / union)
    """
)

def generate(root: Path, pairs: int) -> tuple[Path, Path]:
    pred, gt = root / "pred", root / "gt"
    if (root / "DONE").exists():
        return pred, gt
    pred.mkdir(parents=True, exist_ok=True)
    gt.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:1080, 0:1920].astype(np.float32)
    for index in range(pairs):
        cy, cx = rng.uniform(200, 880), rng.uniform(300, 1620)
        blob = np.exp(-(((yy - cy) / 250) ** 2 + ((xx - cx) / 400) ** 2)).astype(np.float32)
        noise = rng.random((1080, 1920), dtype=np.float32) * np.float32(0.3)
        np.save(pred / f"{index:06d}.npy", np.clip(blob + noise - np.float32(0.15), 0, 1))
        shifted = np.roll(blob, (int(rng.integers(-40, 40)), int(rng.integers(-40, 40))), (0, 1))
        np.save(gt / f"{index:06d}.npy", (shifted > 0.5).astype(np.float32))
    (root / "DONE").write_text("ok\n")
    return pred, gt


def first(root: Path, pairs: int) -> tuple[Path, Path]:
    """The first ``pairs`` pairs of a generated set, as symlinks (no second copy of the data)."""
    subset = root.parent / f"{root.name}-first{pairs}"
    if not (subset / "DONE").exists():
        for side in ("pred", "gt"):
            (subset / side).mkdir(parents=True, exist_ok=True)
            for path in sorted((root / side).glob("*.npy"))[:pairs]:
                link = subset / side / path.name
                if not link.exists():
                    link.symlink_to(path)
        (subset / "DONE").write_text("ok\n")
    return subset / "pred", subset / "gt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--generate", type=int, default=None)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    total = max(args.generate or args.pairs, args.pairs)
    root = DATA / f"saliency-npy-{total}"
    generate(root, total)
    pred, gt = (root / "pred", root / "gt") if total == args.pairs else first(root, args.pairs)
    py, n = sys.executable, args.pairs
    block = str(args.block_size)
    rpx = rpx_command() + ["saliency-mb", "--pred-dir", str(pred), "--gt-dir", str(gt),
                           "--block-size", block, "--quiet"]
    timed_run(np_load_command(pred, gt))  # warm the page cache
    runs = DigestRuns("saliency", predictions=[pred], ground_truth=[gt])
    checks = runs.warm(rpx + ["--jobs", "2"], expect_reused=n)
    load_before = load()
    commands = {
        "np.load": lambda: np_load_command(pred, gt),
        "provenance": lambda: floor_command(hashed=[pred, gt]),
        "provenance re-run": lambda: floor_command(hashed=[pred], plain=[gt]),
        "baseline": lambda: [py, "-c", BASELINE, str(pred), str(gt), block, "0.5"],
    }
    for jobs in (1, 2):
        for mode, extra in (("first", runs.first), ("rerun", runs.rerun)):
            commands[f"{jobs} {mode}"] = (lambda jobs=jobs, extra=extra:
                                          rpx + ["--jobs", str(jobs), "-o", "/dev/null", *extra()])
    timings = measure(commands, repeat=args.repeat)
    runs.cleanup()
    t = {name: timing.median for name, timing in timings.items()}
    base = t["baseline"]
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"{n} pairs of 1080x1920 float32 .npy, block {block}, median of {args.repeat}, "
          f"round-robin; digests {checks}")
    print(spread_line(timings))
    print()
    print("| run | wall s | vs baseline |")
    print("|---|---:|---:|")
    for label, key in (("floor: `np.load` only", "np.load"),
                       ("provenance floor: read once, sha256, parse", "provenance"),
                       ("re-run provenance floor: sha256 of the predictions only",
                        "provenance re-run")):
        print(f"| {label} | {t[key]:.2f} | {t[key] / base:.2f}x |")
    print(f"| baseline: plain numpy script, 1 process | {base:.2f} | 1.00x |")
    print()
    print("| `rpx saliency-mb` | first run s | vs baseline | re-run s | vs baseline |")
    print("|---|---:|---:|---:|---:|")
    for jobs in (1, 2):
        first_s, rerun = t[f"{jobs} first"], t[f"{jobs} rerun"]
        a, b = base / first_s, base / rerun
        goal = ((f", {verdict(a, 1.25, at_most=False)}", f", {verdict(b, 2.5, at_most=False)}")
                if jobs == 2 else ("", ""))
        print(f"| `--jobs {jobs}` | {first_s:.2f} | {a:.2f}x faster{goal[0]} | {rerun:.2f} | "
              f"{b:.2f}x faster{goal[1]} |")


if __name__ == "__main__":
    main()
