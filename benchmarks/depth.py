"""Time ``rpx eval depth`` against the floors of reading the data, first run and re-run, and
its memory growth.

Generates (once, under ``$RPX_BENCH_DATA``) N pairs of 480x640 depth maps: predictions as
float32 ``.npy``, ground truth both as float32 ``.npy`` (metres, ~10% holes in clustered
regions, like a structured-light sensor) and as 16-bit PNG (millimetres). Then, in one
session, each command in a fresh process, round-robin, median of ``--repeat``:

1. floors: ``np.load`` of the 2N ``.npy`` files (read floor); read once + sha256 + decode
   of the same files (provenance floor); the same hashing only the N predictions (re-run
   provenance floor); decoding the N PNGs in one process (Pillow, as rpx does);
2. ``rpx eval depth --jobs 1`` and ``--jobs 2``, npy + npy and PNG GT + npy, each as a
   first run (empty digest cache) and a re-run (warm cache, unchanged GT, new predictions:
   ``_common.DigestRuns``). Bounds (issue 44, on any CPU): npy ``--jobs 1`` first run
   <= 1.9x the provenance floor, re-run <= 12x the np.load floor; ``--jobs 2`` <= 1.6x and
   <= 7.5x. Goals (issue 18, not met): <= 1.3x / 4x and <= 1.0x / 2.5x; PNG ``--jobs 2``
   >= 1.1x (first) and >= 1.25x (re-run) faster than decode-only;
3. peak RSS of ``rpx eval depth --no-rows --jobs 1`` on N pairs vs 10N pairs (the 10N
   stems are symlinks to the N files, so the page cache stays warm): target within 1.2x;
4. ``--split``: where one pair's CPU time goes, in one process (``time.process_time``,
   so other users' load counts less): reading both files, their sha256, the metric, and
   ``run_pairs`` whole with digests on and off; then the depth kernel alone on one frame
   (the native core's fused pass against its numpy twin, float32 and uint16 GT) and the
   float32 ufuncs the numpy form's cost depends on (``log`` against ``log1p``: issue 44).

Every output starts with numpy's SIMD line (``np.show_runtime()``: baseline, found, not
found): the kernel's cost depends on which extensions numpy dispatches to. To measure
another CPU's path on this one, hide extensions above the baseline, e.g.
``NPY_DISABLE_CPU_FEATURES=X86_V3 python benchmarks/depth.py ...`` (numpy 2.4's group
names; the variable reaches every rpx process the script starts).

Usage: python benchmarks/depth.py [--pairs 1000] [--repeat 3] [--skip-memory] [--split]
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

H, W = 480, 640


def simd() -> str:
    """numpy's SIMD extensions as ``np.show_runtime()`` reports them: the baseline it was
    built for, the dispatchable ones this CPU has, and those it lacks."""
    from numpy._core._multiarray_umath import (
        __cpu_baseline__,
        __cpu_dispatch__,
        __cpu_features__,
    )

    found = [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]
    missing = [name for name in __cpu_dispatch__ if not __cpu_features__.get(name)]
    hidden = os.environ.get("NPY_DISABLE_CPU_FEATURES")
    return (f"numpy {np.__version__} SIMD: baseline {' '.join(__cpu_baseline__)}; found "
            f"{' '.join(found) or '-'}; not found {' '.join(missing) or '-'}"
            + (f" (NPY_DISABLE_CPU_FEATURES={hidden})" if hidden else ""))

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


def cpu_split(pred: Path, gt: Path, pairs: int, repeat: int) -> None:
    """Per-pair CPU milliseconds of each step, in this process, median of ``repeat``."""
    import hashlib
    import statistics

    from rpx_cli.allocator import tune_allocator
    from rpx_cli.engine.pairs import run_pairs
    from rpx_cli.io.discover import pair_dirs
    from rpx_cli.io.filebuffer import FileBuffer
    from rpx_cli.params.option import resolve
    from rpx_cli.tasks.registry import get_task

    tune_allocator()
    task = get_task("depth")
    params = {**resolve(task, {}), "missing": "error", "on_error": "fail"}
    files = [(str(pred / f"{k:06d}.npy"), str(gt / f"{k:06d}.npy")) for k in range(pairs)]
    buffers = (FileBuffer(digest=False), FileBuffer(digest=False))

    def read() -> None:
        for pair in files:
            for buffer, path in zip(buffers, pair, strict=True):
                buffer.read(path)

    def sha256() -> None:
        for pair in files:
            for buffer, path in zip(buffers, pair, strict=True):
                hashlib.sha256(memoryview(buffer.read(path))).digest()

    def metric() -> None:
        for pair in files:
            p, g = (task.read(path, buffer, params, lambda *a: None)
                    for buffer, path in zip(buffers, pair, strict=True))
            task.evaluate(p, g, params, pred_path=pair[0], gt_path=pair[1])

    pairing = pair_dirs(str(pred), str(gt), task.suffixes, missing="error")
    steps = {"read both files (into reused buffers)": read,
             "read + sha256 of both files": sha256,
             "read + parse + metric (no digests)": metric,
             "run_pairs --jobs 1, digests off": lambda: run_pairs(task, pairing.pairs, params,
                                                                  digest=False, keep_rows=False),
             "run_pairs --jobs 1, digests on (helper thread)": lambda: run_pairs(
                 task, pairing.pairs, params, digest=True, keep_rows=False)}
    print()
    print(f"| in one process, {pairs} pairs, CPU time (process_time), median of {repeat} | "
          "ms / pair |")
    print("|---|---:|")
    for label, step in steps.items():
        times = []
        for _ in range(repeat):
            start = time.process_time()
            step()
            times.append(time.process_time() - start)
        print(f"| {label} | {statistics.median(times) / pairs * 1e3:.2f} |")
    kernel_split(repeat)


def kernel_split(repeat: int) -> None:
    """The depth kernel on one 480x640 float32 frame (10 % invalid, clustered) and the
    float32 ufuncs on 307,200 values, wall ms, best of ``repeat`` x 20 calls."""
    import timeit

    from rpx_cli.ops.depth_kernel import DepthKernel

    rng = np.random.default_rng(1)
    gt = rng.uniform(0.5, 9, (H, W)).astype(np.float32)
    gt[100:160, 200:300] = 0
    gt[300:330, :] = 0
    pred = (gt * np.exp(rng.normal(0, 0.1, gt.shape))).astype(np.float32)
    p, g = pred.ravel(), gt.ravel()
    kernel = DepthKernel(np.float32)
    x = np.exp(rng.normal(0, 0.3, H * W)).astype(np.float32)
    out = np.empty_like(x)
    raw = np.round(g * 1000).astype(np.uint16)
    steps = {
        "native `depth_sums` (validity from the GT), float32 GT":
            lambda: kernel.sums(p, g, valid_from_gt=True),
        "numpy twin: validity mask + `DepthKernel.numpy_sums`, float32 GT":
            lambda: kernel.numpy_sums(p, g, valid=g > 0),
        "native `depth_sums`, uint16 GT (mm)":
            lambda: kernel.sums(p, raw, gt_scale=1000.0, valid_from_gt=True),
        "numpy twin, uint16 GT (mm)":
            lambda: kernel.numpy_sums(p, raw, valid=raw > 0, gt_scale=1000.0),
    }
    for name in ("log", "log1p", "expm1", "log2", "log10", "exp", "sin", "hypot", "divide"):
        ufunc = getattr(np, name)
        args = (x, x) if ufunc.nin == 2 else (x - np.float32(0.5),) if name == "expm1" else (x,)
        steps[f"np.{name}, 307,200 float32"] = lambda ufunc=ufunc, args=args: ufunc(*args, out=out)
    print()
    print(f"| one frame / 307,200 values, wall, best of {repeat} x 20 | ms |")
    print("|---|---:|")
    for label, step in steps.items():
        best = min(timeit.repeat(step, number=20, repeat=repeat)) / 20
        print(f"| {label} | {best * 1e3:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--split", action="store_true")
    args = parser.parse_args()
    root = generate(DATA / f"depth-{args.pairs}", args.pairs)
    print(simd())
    if args.split:
        cpu_split(root / "pred", root / "gt", args.pairs, args.repeat)
        return
    py, n = sys.executable, args.pairs
    pred, gt, gt_png = root / "pred", root / "gt", root / "gt_png"
    eval_depth = rpx_command() + ["eval", "depth", "--pred-dir", str(pred), "--quiet"]
    npy_gt, png_gt = ["--gt-dir", str(gt)], ["--gt-dir", str(gt_png)]
    runs = DigestRuns("depth", predictions=[pred], ground_truth=[gt, gt_png])
    timed_run(np_load_command(pred, gt, gt_png))  # warm the page cache
    checks = {"npy": runs.warm(eval_depth + npy_gt + ["--jobs", "2"], expect_reused=n),
              "png": runs.warm(eval_depth + png_gt + ["--jobs", "2"], expect_reused=n)}
    load_before = load()

    def rpx(gt_args: list[str], jobs: int, mode) -> callable:
        return lambda: eval_depth + gt_args + ["--jobs", str(jobs), "-o", "/dev/null", *mode()]

    commands = {
        "np.load": lambda: np_load_command(pred, gt),
        "provenance": lambda: floor_command(hashed=[pred, gt]),
        "provenance re-run": lambda: floor_command(hashed=[pred], plain=[gt]),
        "decode png": lambda: [py, "-c", FLOOR_PNG, str(gt_png)],
        "png provenance": lambda: floor_command(hashed=[pred, gt_png]),
    }
    for name, gt_args in (("npy", npy_gt), ("png", png_gt)):
        for jobs in (1, 2):
            commands[f"{name} {jobs} first"] = rpx(gt_args, jobs, runs.first)
            commands[f"{name} {jobs} rerun"] = rpx(gt_args, jobs, runs.rerun)
    timings = measure(commands, repeat=args.repeat)
    t = {name: timing.median for name, timing in timings.items()}
    load_after = load()

    floor, prov, prov_rerun, decode = t["np.load"], t["provenance"], t["provenance re-run"], t["decode png"]
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load_after} after")
    print(f"{n} pairs of {H}x{W} depth maps, median of {args.repeat}, fresh process per run, "
          f"round-robin; digests (first, re-run): npy {checks['npy']}, png {checks['png']}")
    print(spread_line(timings))
    print()
    print("| floor (one process) | wall s | ms / pair |")
    print("|---|---:|---:|")
    for label, value in ((f"read: `np.load` of the {2 * n} .npy files", floor),
                         (f"provenance: read once, sha256, decode the {2 * n} .npy files", prov),
                         (f"re-run provenance: the same, sha256 of the {n} predictions only",
                          prov_rerun),
                         (f"decode only: the {n} 16-bit PNGs (Pillow)", decode),
                         (f"provenance, PNG GT: read once, sha256, decode {n} PNGs + {n} .npy",
                          t["png provenance"])):
        print(f"| {label} | {value:.2f} | {value / n * 1e3:.2f} |")
    print()
    print("| `rpx eval depth` | first run s | first run ratio | re-run s | re-run ratio |")
    print("|---|---:|---:|---:|---:|")
    bounds = {1: (1.9, 12.0), 2: (1.6, 7.5)}  # issue 44
    goals = {1: (1.3, 4.0), 2: (1.0, 2.5)}  # issue 18
    for jobs in (1, 2):
        first, rerun = t[f"npy {jobs} first"], t[f"npy {jobs} rerun"]
        a, b = first / prov, rerun / floor
        print(f"| `--jobs {jobs}` (npy + npy) | {first:.2f} | {a:.2f}x provenance floor: bound "
              f"{verdict(a, bounds[jobs][0], at_most=True)}, goal "
              f"{verdict(a, goals[jobs][0], at_most=True)} | {rerun:.2f} | {b:.2f}x np.load "
              f"floor: bound {verdict(b, bounds[jobs][1], at_most=True)}, goal "
              f"{verdict(b, goals[jobs][1], at_most=True)} |")
    for jobs in (1, 2):
        first, rerun = t[f"png {jobs} first"], t[f"png {jobs} rerun"]
        a, b = decode / first, decode / rerun
        goal = (f", {verdict(a, 1.1, at_most=False)}", f", {verdict(b, 1.25, at_most=False)}") \
            if jobs == 2 else ("", "")
        print(f"| `--jobs {jobs}` (PNG GT + npy) | {first:.2f} | {a:.2f}x faster than decode"
              f"{goal[0]} | {rerun:.2f} | {b:.2f}x faster than decode{goal[1]} |")
    if args.skip_memory:
        runs.cleanup()
        return
    big = replicate(root, 10)
    memory = rpx_command() + ["eval", "depth", "--no-rows", "-o", "/dev/null", "--quiet",
                              "--jobs", "1"]
    small_s, small_mb = peak_rss_mb(memory + runs.first() + ["--pred-dir", str(pred),
                                                             "--gt-dir", str(gt)])
    big_s, big_mb = peak_rss_mb(memory + runs.first() + ["--pred-dir", str(big / "pred"),
                                                         "--gt-dir", str(big / "gt")])
    runs.cleanup()
    print()
    print("| peak RSS, `--no-rows --jobs 1`, first run | pairs | wall s | MB | ratio |")
    print("|---|---:|---:|---:|---:|")
    print(f"| 1x | {n} | {small_s:.1f} | {small_mb:.1f} | 1.00x |")
    ratio = big_mb / small_mb
    print(f"| 10x (symlinks) | {10 * n} | {big_s:.1f} | {big_mb:.1f} | {ratio:.2f}x "
          f"({verdict(ratio, 1.2, at_most=True)}) |")


if __name__ == "__main__":
    main()
