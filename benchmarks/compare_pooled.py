"""``rpx compare`` of two ``--keep-state`` reports: what a pooled figure's resample costs.

On the 5,000-image COCO-style set of ``benchmarks/detection.py`` (10 classes, ~15 GT and 60
detections per image, per-stem JSON files), for each protocol given: ``rpx eval detection
--keep-state`` once (the report's size), then ``rpx compare R R`` with ``--pooled-bootstrap
0`` (reading both reports and the rows' bootstrap) and with ``--pooled-bootstrap N``, each
and with 3N, each in a fresh process; a resample's cost is the slope, (t(3N) - t(N)) / 2N
(both sides; what is paid once — reading the reports, the figures on the shared stems, the
per-image matches of the fast COCO route — drops out). ``--jobs`` as given.

Usage: python benchmarks/compare_pooled.py [--images 5000] [--resamples 10] [--jobs 1 2]
       [--protocols coco voc07]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, load, machine, rpx_command, timed_run
from detection import generate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--resamples", type=int, default=10)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1])
    parser.add_argument("--protocols", nargs="+", default=["coco"])
    args = parser.parse_args()
    root = generate(DATA / f"detection-{args.images}", args.images)
    rpx = rpx_command()
    print(machine(), "|", load())
    print("| protocol | report MB | compare, no pooled resample s | jobs | "
          f"{args.resamples} pooled resamples s | {3 * args.resamples} s | "
          "s per resample (both sides) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for protocol in args.protocols:
        report = DATA / f"compare-pooled-{args.images}-{protocol}.json"
        timed_run([*rpx, "eval", "detection", "--pred-dir", str(root / "pred"), "--gt-dir",
                   str(root / "gt"), "--protocol", protocol, "--keep-state", "--no-rows",
                   "--quiet", "-o", str(report)])
        size = report.stat().st_size / 1e6
        compare = [*rpx, "compare", str(report), str(report), "-q", "-o", "/dev/null"]
        floor = timed_run([*compare, "--pooled-bootstrap", "0", "--jobs", "1"])
        for jobs in args.jobs:
            few, more = (timed_run([*compare, "--pooled-bootstrap", str(count), "--bootstrap",
                                    str(count), "--jobs", str(jobs)])
                         for count in (args.resamples, 3 * args.resamples))
            each = (more - few) / (2 * args.resamples)
            print(f"| {protocol} | {size:.0f} | {floor:.1f} | {jobs} | {few:.1f} | {more:.1f} | "
                  f"{each:.2f} |")


if __name__ == "__main__":
    main()
