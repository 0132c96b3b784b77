"""The default ``--jobs`` (chosen from the work) against ``--jobs 1`` and ``--jobs 2`` on every
task's benchmark set (issue 33: the default never more than 5 % slower than ``--jobs 1``,
and within 10 % of the best ``--jobs``).

Each set is generated (once) by its own benchmark script; each command runs in a fresh
process, round-robin over the three settings, median of ``--repeat``, with every digest
reused (a warm default cache: the figures are the evaluation's, not the hashing's). The
default's choice and its figures are read back from ``run_provenance.executor``.

Usage: python benchmarks/default_jobs.py [--repeat 3] [--only depth,tracking,...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, load, machine, measure, rpx_command, wait_out_racy_margin


def sets() -> dict[str, tuple[list[str], list[Path]]]:
    """name -> (rpx arguments after ``rpx``, the folders read)."""
    import depth
    import detection
    import detection3d
    import nvs
    import segmentation
    import segmentation3d
    import tracking

    out = {}
    root = depth.generate(DATA / "depth-1000", 1000)
    out["depth (1,000 npy pairs)"] = (["eval", "depth", "--pred-dir", str(root / "pred"), "--gt-dir",
                                       str(root / "gt")], [root])
    root = segmentation.generate(DATA / "segmentation-1000", 1000)
    out["segmentation (1,000 PNG pairs)"] = (["eval", "segmentation", "--pred-dir", str(root / "pred"),
                                              "--gt-dir", str(root / "gt")], [root])
    root = detection.generate(DATA / "detection-5000", 5000)
    out["detection (5,000 images, every view)"] = (
        ["eval", "detection", "--pred-dir", str(root / "pred"), "--gt-dir", str(root / "gt")], [root])
    root = detection3d.generate(DATA / "detection3d-1000", 1000)
    out["detection3d (1,000 samples)"] = (["eval", "detection3d", "--pred-dir", str(root / "pred"),
                                           "--gt-dir", str(root / "gt")], [root])
    tracking.generate(DATA / "tracking-4x600", 4, 600)
    root = DATA / "tracking-4x600" / "rpx"
    out["tracking (4 x 600 frames)"] = (["eval", "tracking", "--pred-dir", str(root / "pred"),
                                         "--gt-dir", str(root / "gt"), "--benchmark", "mot17"], [root])
    root = segmentation3d.generate(DATA / "segmentation3d-500", 500)
    out["segmentation3d (500 scans, 3 ranges)"] = (
        ["eval", "segmentation3d", "--pred-dir", str(root / "pred"), "--gt-dir", str(root / "gt"),
         "--points-dir", str(root / "velodyne"), "--label-map", str(root / "learning_map.json"),
         "--num-classes", "20", "--ignore-index", "0",
         *(f"--range={r}" for r in segmentation3d.RANGES)], [root])
    root = nvs.generate(DATA / "nvs-200", 200)
    out["nvs (200 PNG pairs 512x512)"] = (["eval", "nvs", "--pred-dir", str(root / "pred"),
                                           "--gt-dir", str(root / "gt")], [root])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    args = parser.parse_args()
    chosen = {name: value for name, value in sets().items()
              if not args.only or any(name.startswith(p) for p in args.only.split(","))}
    cache = Path(tempfile.mkdtemp(prefix="default-jobs-cache-", dir=DATA))
    report = cache / "report.json"
    print(f"# {machine()}")
    print(f"# load before: {load()}")
    print("| set | default s | --jobs 1 s | --jobs 2 s | default / --jobs 1 | default / best | "
          "default chose |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, (argv, folders) in chosen.items():
        base = rpx_command() + argv + ["--quiet", "--digest-cache", str(cache)]
        wait_out_racy_margin(folders)
        subprocess.run(base + ["-o", "/dev/null"], check=True)  # fill the digest cache
        commands = {"default": lambda base=base: base + ["-o", "/dev/null"],
                    "1": lambda base=base: base + ["--jobs", "1", "-o", "/dev/null"],
                    "2": lambda base=base: base + ["--jobs", "2", "-o", "/dev/null"]}
        timings = measure(commands, repeat=args.repeat)
        subprocess.run(base + ["-o", str(report)], check=True)
        executor = json.loads(report.read_text())["run_provenance"]["executor"]
        default, one, two = (timings[k].median for k in ("default", "1", "2"))
        figures = {k: executor[k] for k in ("jobs", "unit_ms", "transfer_ms", "load_average")
                   if k in executor}
        print(f"| {name} | {default:.2f} | {one:.2f} | {two:.2f} | {default / one:.2f} | "
              f"{default / min(one, two):.2f} | {json.dumps(figures)} |", flush=True)
    print(f"# load after: {load()}")


if __name__ == "__main__":
    main()
