"""SSIM speed: rpx against scikit-image's ``structural_similarity`` with the same settings.

Generates (once) N pairs of 512x512 RGB PNGs (a smooth image and a noisy, blurred render),
then, in one session:

1. per pair, in-process on decoded arrays: rpx's ``ssim`` vs
   ``structural_similarity(..., channel_axis=-1, gaussian_weights=True, sigma=1.5,
   use_sample_covariance=False, data_range=255)`` (target: rpx at least as fast);
2. end to end, fresh processes, round-robin: a script that decodes the PNGs and calls
   scikit-image's PSNR and SSIM, vs ``rpx eval nvs`` with ``--jobs 1`` and the default
   ``--jobs`` (which also computes
   ``ssim_global`` and digests every file) as a first run (empty digest cache) and a
   re-run (warm cache, unchanged GT, new predictions); the read floor (decode only) and
   the provenance floor (read once, sha256, decode).

Usage: python benchmarks/nvs.py [--pairs 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, DigestRuns, floor_command, load, machine, measure, rpx_command, spread_line

SIZE = 512

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
SKIMAGE_SCRIPT = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    from PIL import Image
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity
    gt_dir, pred_dir = Path(sys.argv[1]), Path(sys.argv[2])
    for path in sorted(gt_dir.glob("*.png")):
        gt = np.asarray(Image.open(path)); pred = np.asarray(Image.open(pred_dir / path.name))
        peak_signal_noise_ratio(gt, pred, data_range=255)
        structural_similarity(gt, pred, channel_axis=-1, gaussian_weights=True, sigma=1.5,
                              use_sample_covariance=False, data_range=255)
    """
)


def generate(root: Path, pairs: int) -> Path:
    if (root / "DONE").exists():
        return root
    from PIL import Image
    from scipy import ndimage

    (root / "gt").mkdir(parents=True, exist_ok=True)
    (root / "pred").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for index in range(pairs):
        base = ndimage.gaussian_filter(rng.normal(128, 60, (SIZE, SIZE, 3)), (4, 4, 0)) * 3 - 256
        gt = np.clip(base, 0, 255)
        pred = np.clip(ndimage.gaussian_filter(gt, (0.8, 0.8, 0)) + rng.normal(0, 4, gt.shape), 0, 255)
        Image.fromarray(gt.astype(np.uint8)).save(root / "gt" / f"{index:05d}.png")
        Image.fromarray(pred.astype(np.uint8)).save(root / "pred" / f"{index:05d}.png")
    (root / "DONE").write_text("ok\n")
    return root


def per_pair(fn, pairs, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for gt, pred in pairs:
            fn(gt, pred)
        times.append((time.perf_counter() - start) / len(pairs))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from PIL import Image
    from skimage.metrics import structural_similarity

    from rpx_cli.ops.image_quality import ssim

    root = generate(DATA / f"nvs-{args.pairs}", args.pairs)
    pairs = [(np.asarray(Image.open(p)), np.asarray(Image.open(root / "pred" / p.name)))
             for p in sorted((root / "gt").glob("*.png"))]
    ours = per_pair(lambda g, p: ssim(p, g, 255.0), pairs, args.repeat)
    theirs = per_pair(lambda g, p: structural_similarity(
        g, p, channel_axis=-1, gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
        data_range=255), pairs, args.repeat)
    py = sys.executable
    gt, pred = root / "gt", root / "pred"
    rpx = rpx_command() + ["eval", "nvs", "--pred-dir", str(pred), "--gt-dir", str(gt), "--quiet"]
    runs = DigestRuns("nvs", predictions=[pred], ground_truth=[gt])
    checks = runs.warm(rpx, expect_reused=args.pairs)
    load_before = load()
    timings = measure({
        "decode": lambda: [py, "-c", DECODE, str(gt), str(pred)],
        "provenance": lambda: floor_command(hashed=[gt, pred]),
        "script": lambda: [py, "-c", SKIMAGE_SCRIPT, str(gt), str(pred)],
        "first": lambda: rpx + ["--jobs", "1", "-o", "/dev/null", *runs.first()],
        "rerun": lambda: rpx + ["--jobs", "1", "-o", "/dev/null", *runs.rerun()],
        "default first": lambda: rpx + ["-o", "/dev/null", *runs.first()],
        "default rerun": lambda: rpx + ["-o", "/dev/null", *runs.rerun()],
    }, repeat=args.repeat)
    runs.cleanup()
    t = {name: timing.median for name, timing in timings.items()}
    n, script = args.pairs, t["script"]
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"{n} pairs of {SIZE}x{SIZE} RGB PNGs, median of {args.repeat}; digests {checks}")
    print(spread_line(timings))
    print("| run | ms / pair | ratio |")
    print("|---|---:|---:|")
    print(f"| scikit-image `structural_similarity` (in-process) | {theirs * 1e3:.1f} | 1.00x |")
    print(f"| rpx `ssim` (in-process) | {ours * 1e3:.1f} | {theirs / ours:.2f}x faster (target >= 1) |")
    print(f"| floor: decode the {2 * n} PNGs, 1 process | {t['decode'] / n * 1e3:.1f} | |")
    print(f"| provenance floor: read once, sha256, decode | {t['provenance'] / n * 1e3:.1f} | |")
    print(f"| script: decode + skimage PSNR + SSIM, 1 process | {script / n * 1e3:.1f} | 1.00x |")
    print(f"| `rpx eval nvs --jobs 1`, first run | {t['first'] / n * 1e3:.1f} | "
          f"{script / t['first']:.2f}x faster |")
    print(f"| `rpx eval nvs --jobs 1`, re-run | {t['rerun'] / n * 1e3:.1f} | "
          f"{script / t['rerun']:.2f}x faster |")
    for key, mode in (("default first", "first run"), ("default rerun", "re-run")):
        print(f"| `rpx eval nvs` (default --jobs), {mode} | {t[key] / n * 1e3:.1f} | "
              f"{script / t[key]:.2f}x faster (target >= 2) |")


if __name__ == "__main__":
    main()
