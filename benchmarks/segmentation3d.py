"""Time ``rpx eval segmentation3d`` against only reading the scans, and its memory growth.

Generates (once, under ``$RPX_BENCH_DATA``) N SemanticKITTI-sized scans (~123k points each,
the raw label mix of SemanticKITTI's ``content`` ratios, instance ids in the high 16 bits):
GT and predictions as ``.label`` (uint32), points as ``.bin`` (float32 x, y, z, remission;
ranges like a 64-beam lidar's), the prediction the GT with ~12% of the points relabelled.
About 2 GB of labels per side and 8 GB of points for N = 4071 (SemanticKITTI sequence 08).
Then, in one session, each command in a fresh process, median of ``--repeat``:

1. the floor: one process that only reads the two label files and the points of each scan
   with ``np.fromfile``; the same loop split over two processes (how much faster two cores
   can read at all: the bound on any ``--jobs 2``); and, for reference, one that only
   computes their sha256, which rpx does for ``run_provenance``;
2. ``rpx eval segmentation3d`` with SemanticKITTI's learning map, 20 classes, ignore 0 and
   three ranges, ``--jobs 1`` and ``--jobs 2`` (target: ``--jobs 2`` at least 1.6x faster
   than the floor) with every digest reused (the default cache, warm), then first runs and
   re-runs (``DigestRuns``), and where the time goes: the same pairs in-process;
3. peak RSS of ``--no-rows --jobs 1`` on N scans vs 4N scans (the 4N stems are symlinks to
   the N files, so the page cache stays warm): memory flat in the number of scans.

``--clean`` deletes the generated data afterwards.

Usage: python benchmarks/segmentation3d.py [--scans 4071] [--repeat 3] [--part all|time|memory]
       [--clean]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, DigestRuns, machine, rpx_command, timed_run

POINTS = 123_000
# SemanticKITTI's raw labels with their share of the points (config/semantic-kitti.yaml,
# "content"), and its learning_map to the 20 training classes (0 = unlabeled, ignored)
CONTENT = {0: 0.0189, 1: 0.0003, 10: 0.0408, 11: 0.0002, 13: 0.00003, 15: 0.0004, 18: 0.0021,
           20: 0.0016, 30: 0.0002, 40: 0.1987, 44: 0.0147, 48: 0.1439, 49: 0.0039, 50: 0.1327,
           51: 0.0724, 52: 0.0024, 60: 0.00005, 70: 0.2668, 71: 0.0060, 72: 0.0781, 80: 0.0029,
           81: 0.0006, 99: 0.0099, 252: 0.0018, 253: 0.0001, 254: 0.0002, 257: 0.0001,
           258: 0.0001, 259: 0.00004}
LEARNING_MAP = {0: 0, 1: 0, 10: 1, 11: 2, 13: 5, 15: 3, 16: 5, 18: 4, 20: 5, 30: 6, 31: 7,
                32: 8, 40: 9, 44: 10, 48: 11, 49: 12, 50: 13, 51: 14, 52: 0, 60: 9, 70: 15,
                71: 16, 72: 17, 80: 18, 81: 19, 99: 0, 252: 1, 253: 7, 254: 6, 255: 8, 256: 5,
                257: 5, 258: 4, 259: 5}
RANGES = ("0:20", "20:50", "50:")

FLOOR = textwrap.dedent(
    """
    import sys, numpy as np
    from multiprocessing import get_context
    from pathlib import Path
    pred, gt, points = (Path(d) for d in sys.argv[1:4])
    processes = int(sys.argv[4]) if len(sys.argv) > 4 else 1

    def read(paths):
        for path in paths:
            np.fromfile(path, dtype=np.uint32)
            np.fromfile(pred / path.name, dtype=np.uint32)
            np.fromfile(points / (path.stem + ".bin"), dtype=np.float32)

    paths = sorted(gt.glob("*.label"))
    if processes == 1:
        read(paths)
    else:  # the same loop over interleaved shares, in forked processes
        with get_context("fork").Pool(processes) as pool:
            pool.map(read, [paths[k::processes] for k in range(processes)])
    """
)

DIGEST = textwrap.dedent(
    """
    import hashlib, sys
    from pathlib import Path
    pred, gt, points = (Path(d) for d in sys.argv[1:4])
    for path in sorted(gt.glob("*.label")):
        for name in (path, pred / path.name, points / (path.stem + ".bin")):
            hashlib.sha256(name.read_bytes()).digest()
    """
)


def generate(root: Path, scans: int) -> Path:
    if (root / "DONE").exists():
        return root
    for name in ("pred", "gt", "velodyne"):
        (root / name).mkdir(parents=True, exist_ok=True)
    (root / "learning_map.json").write_text(json.dumps({str(k): v for k, v in LEARNING_MAP.items()}))
    rng = np.random.default_rng(0)
    raw = np.array(list(CONTENT), dtype=np.uint32)
    share = np.array(list(CONTENT.values()))
    share /= share.sum()
    for index in range(scans):
        n = POINTS + int(rng.integers(-4000, 4000))
        semantic = rng.choice(raw, size=n, p=share)
        gt = semantic | (rng.integers(0, 40, n, dtype=np.uint32) << 16)
        pred = semantic.copy()
        wrong = rng.random(n) < 0.12
        pred[wrong] = rng.choice(raw, size=int(wrong.sum()), p=share)
        radius = 2.5 + rng.gamma(1.6, 9.0, n)
        angle = rng.uniform(-np.pi, np.pi, n)
        points = np.empty((n, 4), np.float32)
        points[:, 0] = radius * np.cos(angle)
        points[:, 1] = radius * np.sin(angle)
        points[:, 2] = rng.normal(-1.2, 0.6, n)
        points[:, 3] = rng.random(n)
        stem = f"{index:06d}"
        gt.tofile(root / "gt" / f"{stem}.label")
        pred.tofile(root / "pred" / f"{stem}.label")
        points.tofile(root / "velodyne" / f"{stem}.bin")
    (root / "DONE").write_text("ok\n")
    return root


def replicate(root: Path, times: int) -> Path:
    """``times`` x the scans as symlinks (stems ``<k>_<stem>``), same bytes on disk."""
    big = root.parent / f"{root.name}-x{times}"
    if (big / "DONE").exists():
        return big
    for name, suffix in (("pred", ".label"), ("gt", ".label"), ("velodyne", ".bin")):
        (big / name).mkdir(parents=True, exist_ok=True)
        for path in sorted((root / name).glob(f"*{suffix}")):
            for k in range(times):
                link = big / name / f"{k}_{path.name}"
                if not link.exists():
                    os.symlink(path, link)
    (big / "DONE").write_text("ok\n")
    return big


def timed_cpu(argv: list[str], *, repeat: int) -> tuple[float, float]:
    """Median (wall seconds, CPU seconds) of ``argv`` in fresh processes; CPU is user + sys
    of the process and every worker it waited for. On a shared machine the CPU time is the
    steadier figure: with 2 cores, the best possible wall time is CPU / 2."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def peak_rss_mb(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of a command run in a fresh child."""
    start = time.perf_counter()
    code = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
            "stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", code, *argv], check=True, capture_output=True,
                          text=True)
    return time.perf_counter() - start, int(done.stdout.strip()) / 1024


def in_process(root: Path, limit: int) -> tuple[float, float]:
    """Seconds per scan of the engine's pairs in this process (1 job), with and without
    digests: where the time goes."""
    from rpx_cli.engine.pairs import run_pairs
    from rpx_cli.io.discover import pair_dirs
    from rpx_cli.run.assemble import resolve_params
    from rpx_cli.tasks import get_task

    task = get_task("segmentation3d")
    params = resolve_params(task, {**task.default_params, **flags(root),
                                   "points_dir": str(root / "velodyne")},
                            missing="error", on_error="fail")
    pairing = pair_dirs(str(root / "pred"), str(root / "gt"), task.suffixes, missing="error")
    pairing = pairing.with_aux("points_dir", str(root / "velodyne"), (".bin",))
    pairs = pairing.pairs[:limit]
    out = []
    for digest in (True, False):
        start = time.perf_counter()
        run_pairs(task, pairs, params, jobs=1, digest=digest, keep_rows=False)
        out.append((time.perf_counter() - start) / len(pairs))
    return out[0], out[1]


def flags(root: Path) -> dict[str, object]:
    return {"label_map": str(root / "learning_map.json"), "num_classes": 20,
            "ignore_index": (0,), "ranges": RANGES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scans", type=int, default=4071)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--part", choices=("all", "time", "memory"), default="all")
    parser.add_argument("--clean", action="store_true", help="delete the generated data at the end")
    args = parser.parse_args()
    root = generate(DATA / f"segmentation3d-{args.scans}", args.scans)
    py, n = sys.executable, args.scans
    pred, gt, velodyne = (str(root / name) for name in ("pred", "gt", "velodyne"))
    command = rpx_command() + [
        "eval", "segmentation3d", "--pred-dir", pred, "--gt-dir", gt, "--points-dir", velodyne,
        "--label-map", str(root / "learning_map.json"), "--num-classes", "20",
        "--ignore-index", "0", *(f"--range={r}" for r in RANGES), "-o", "/dev/null", "--quiet"]

    size = sum(p.stat().st_size for name in ("pred", "gt", "velodyne")
               for p in (root / name).iterdir())
    print(f"machine: {machine()}")
    print(f"{n} scans of ~{POINTS} points ({size / 1e9:.1f} GB: .label x 2 + .bin), "
          f"median of {args.repeat}, fresh process per run")
    if args.part in ("all", "time"):
        timed_run([py, "-c", FLOOR, pred, gt, velodyne])  # warm the cache
        runs = {
            "floor: `np.fromfile` of the 2 labels + points, 1 process":
                [py, "-c", FLOOR, pred, gt, velodyne],
            "the same loop split over 2 processes (what two cores can read)":
                [py, "-c", FLOOR, pred, gt, velodyne, "2"],
            "sha256 of the same files only, 1 process": [py, "-c", DIGEST, pred, gt, velodyne],
            "`rpx eval segmentation3d --jobs 1`": command + ["--jobs", "1"],
            "`rpx eval segmentation3d --jobs 2`": command + ["--jobs", "2"],
        }
        times = {name: timed_cpu(argv, repeat=args.repeat) for name, argv in runs.items()}
        # first runs (an empty digest cache each) and re-runs (the GT labels' and points'
        # digests reused, the predictions renewed and hashed), one fresh process each
        digests = DigestRuns("segmentation3d", predictions=[pred], ground_truth=[gt, velodyne])
        digests.warm(command + ["--jobs", "2"], expect_reused=2 * n)
        for jobs in ("1", "2"):
            for kind, cache in (("first run", digests.first), ("re-run", digests.rerun)):
                samples = [timed_cpu(command + ["--jobs", jobs] + cache(), repeat=1)
                           for _ in range(args.repeat)]
                times[f"`rpx eval segmentation3d --jobs {jobs}`, {kind} (digest cache)"] = (
                    statistics.median(w for w, _ in samples), statistics.median(c for _, c in samples))
        digests.cleanup()
        with_digest, without_digest = in_process(root, min(n, 500))
        floor = next(iter(times.values()))[0]
        print("| run | wall s | ms / scan | vs floor (wall) | CPU s |")
        print("|---|---:|---:|---:|---:|")
        for name, (wall, cpu) in times.items():
            target = " (target >= 1.6)" if "--jobs 2" in name else ""
            print(f"| {name} | {wall:.2f} | {wall / n * 1e3:.2f} | {floor / wall:.2f}x faster"
                  f"{target} | {cpu:.2f} |")
        print()
        print(f"in-process, 1 job, {min(n, 500)} scans: {with_digest * 1e3:.2f} ms / scan with "
              f"digests, {without_digest * 1e3:.2f} ms / scan without")
        print()
    if args.part in ("all", "memory"):
        big = replicate(root, 4)
        memory = [*command[:command.index("--pred-dir")], "--no-rows", "--jobs", "1",
                  *command[command.index("--label-map"):]]
        small_s, small_mb = peak_rss_mb(memory + ["--pred-dir", pred, "--gt-dir", gt,
                                                  "--points-dir", velodyne])
        big_s, big_mb = peak_rss_mb(memory + ["--pred-dir", str(big / "pred"), "--gt-dir",
                                              str(big / "gt"), "--points-dir",
                                              str(big / "velodyne")])
        print("| peak RSS, `--no-rows --jobs 1` | scans | wall s | MB | ratio |")
        print("|---|---:|---:|---:|---:|")
        print(f"| 1x | {n} | {small_s:.1f} | {small_mb:.1f} | 1.00x |")
        print(f"| 4x (symlinks) | {4 * n} | {big_s:.1f} | {big_mb:.1f} | "
              f"{big_mb / small_mb:.2f}x |")
    if args.clean:
        shutil.rmtree(root)
        shutil.rmtree(root.parent / f"{root.name}-x4", ignore_errors=True)


if __name__ == "__main__":
    main()
