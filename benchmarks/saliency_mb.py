"""Time ``rpx saliency-mb`` against a plain numpy script doing the same reduction.

Generates N pairs of 1080x1920 float32 ``.npy`` masks (prediction: scores in [0, 1);
GT: a 0/1 mask) under ``benchmarks/data/`` once, warms the page cache, then times in one
session, each in a fresh process, median of ``--repeat``:

- the floor: a loop that only ``np.load``s the same 2N files;
- the baseline: a plain numpy script, one process, doing exactly what the original
  ``eval_saliency_per_mb.py`` does per pair (load, scale, block means, IoU);
- ``rpx saliency-mb --jobs 1`` and ``--jobs 2`` (report to /dev/null; digests included).

Usage: python benchmarks/saliency_mb.py [--pairs 1000] [--block-size 16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, machine, rpx_command, timed_run

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

FLOOR = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    for d in sys.argv[1:]:
        for path in sorted(Path(d).glob("*.npy")):
            np.load(path)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pred, gt = generate(DATA / f"saliency-npy-{args.pairs}", args.pairs)
    py = sys.executable
    block = str(args.block_size)
    timed_run([py, "-c", FLOOR, str(pred), str(gt)])  # warm the page cache
    floor = timed_run([py, "-c", FLOOR, str(pred), str(gt)], repeat=args.repeat)
    base = timed_run([py, "-c", BASELINE, str(pred), str(gt), block, "0.5"], repeat=args.repeat)
    rpx = rpx_command() + ["saliency-mb", "--pred-dir", str(pred), "--gt-dir", str(gt),
                           "--block-size", block, "-o", "/dev/null", "--quiet"]
    jobs1 = timed_run(rpx + ["--jobs", "1"], repeat=args.repeat)
    jobs2 = timed_run(rpx + ["--jobs", "2"], repeat=args.repeat)
    print(f"machine: {machine()}")
    print(f"{args.pairs} pairs of 1080x1920 float32 .npy, block {block}, median of {args.repeat}")
    print("| run | wall s | vs baseline |")
    print("|---|---:|---:|")
    print(f"| floor: np.load only | {floor:.2f} | {floor / base:.2f}x |")
    print(f"| baseline: plain numpy script, 1 process | {base:.2f} | 1.00x |")
    print(f"| rpx saliency-mb --jobs 1 | {jobs1:.2f} | {jobs1 / base:.2f}x (target <= 1.10) |")
    print(f"| rpx saliency-mb --jobs 2 | {jobs2:.2f} | {base / jobs2:.2f}x faster (target >= 1.60) |")


if __name__ == "__main__":
    main()
