"""The COCO results reader: the native core's scanner (``coco_results``,
``rpx_cli/io/coco_columns.py``) against the Python path (orjson + the conversion to arrays
of ``rpx_cli/io/coco_results.py``), alone and inside ``rpx eval detection --metrics coco``,
with hotcoco 1.3's loader and whole evaluation beside them, in one run.

Data: the COCO box set of ``benchmarks/detection.py`` (N images, ~60 detections each) and
the keypoint and mask sets of ``benchmarks/coco_family.py`` (100 detections per image),
generated once under ``$RPX_BENCH_DATA``.

- reader alone: CPU seconds in this process, median of ``--repeat`` (the file already in
  memory); hotcoco: ``COCO(gt).load_res(dt)`` minus ``COCO(gt)``;
- end to end: wall seconds of a fresh process, median of ``--repeat``, default ``--jobs``,
  first runs (empty digest cache), ``RPX_NATIVE=1`` then ``RPX_NATIVE=0`` (the Python
  reader: what rpx did before), hotcoco's evaluate + accumulate + summarize.

``--baseline DIR`` adds, interleaved with the others, the same command run from another
checkout of rpx (``PYTHONPATH=DIR``, its native core built in place: ``python setup.py
build_ext --inplace`` there), native: what a change gained end to end in the same run.

Usage: python benchmarks/coco_reader.py [--images 5000] [--repeat 3] [--only bbox|keypoints|segm]
       [--baseline DIR]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import coco_family
import detection
from _common import DATA, DigestRuns, load, machine, rpx_command

HOTCOCO_LOAD = textwrap.dedent("""
    import sys, time, contextlib, io
    from hotcoco import COCO
    with contextlib.redirect_stdout(io.StringIO()):
        a = time.process_time(); gt = COCO(sys.argv[1]); b = time.process_time()
        dt = gt.load_res(sys.argv[2]); c = time.process_time()
    print(c - b)
""")
HOTCOCO_EVAL = textwrap.dedent("""
    import sys, contextlib, io
    from hotcoco import COCO, COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(sys.argv[1]); dt = gt.load_res(sys.argv[2])
        ev = COCOeval(gt, dt, sys.argv[3]); ev.evaluate(); ev.accumulate(); ev.summarize()
    print(ev.stats[0])
""")
FIELDS = {"bbox": "bbox", "keypoints": "keypoints", "segm": "segmentation"}


def reader_seconds(data: bytes, kind: str, repeat: int) -> tuple[float, float]:
    """CPU seconds of the native reader and of the Python path (median of ``repeat``)."""
    from rpx_cli.io import coco_results
    from rpx_cli.io.coco_columns import native_columns
    from rpx_cli.io.coco_objects import BOX_FIELD, KEYPOINT_FIELD, MASK_FIELD
    from rpx_cli.io.json import loads_json

    field = {"bbox": BOX_FIELD, "keypoints": KEYPOINT_FIELD, "segm": MASK_FIELD}[kind]
    native, python = [], []
    for _ in range(repeat):
        gc.collect()
        t = time.process_time()
        assert native_columns(data, FIELDS[kind]) is not None
        native.append(time.process_time() - t)
        gc.collect()
        t = time.process_time()
        no_literals = field.instances is not None and b"true" not in data and b"false" not in data
        coco_results._results_of(loads_json(data, "r.json"), "r.json", field, no_literals)
        python.append(time.process_time() - t)
    return statistics.median(native), statistics.median(python)


def walls(commands: list[tuple[list[str], dict[str, str], object]], repeat: int) -> list[float]:
    """Median wall seconds of each ``(argv, env, before)``, run in turn ``repeat`` times
    (interleaved: a loaded machine's swings fall on every command alike)."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(repeat):
        for k, (argv, env, before) in enumerate(commands):
            extra = before() if before else []
            t = time.perf_counter()
            subprocess.run([*argv, *extra], check=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, **env})
            times[k].append(time.perf_counter() - t)
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=tuple(FIELDS), action="append")
    parser.add_argument("--no-end-to-end", action="store_true")
    parser.add_argument("--baseline", help="another checkout of rpx to time beside this one")
    args = parser.parse_args()
    py = sys.executable
    print(f"machine: {machine()}\nload: {load()} before")
    for kind in args.only or list(FIELDS):
        if kind == "bbox":
            root = detection.generate(DATA / f"detection-{args.images}", args.images)
        elif kind == "keypoints":
            root = coco_family.generate_keypoints(DATA / f"keypoints-{args.images}", args.images)
        else:
            root = coco_family.generate_segm(DATA / f"segm-{args.images}", args.images)
        gt, dt = str(root / "instances.json"), str(root / "results.json")
        data = Path(dt).read_bytes()
        native, python = reader_seconds(data, kind, args.repeat)
        hot = subprocess.run([py, "-c", HOTCOCO_LOAD, gt, dt], check=True, capture_output=True,
                             text=True).stdout.split()[-1]
        print(f"\n{kind}: {len(data) / 1e6:.0f} MB of results ({(root / 'DONE').read_text().strip()})")
        print(f"  reader alone (CPU s): native {native:.3f} | orjson + conversion {python:.3f} "
              f"({python / native:.1f}x) | hotcoco 1.3 load_res {float(hot):.3f}")
        if args.no_end_to_end:
            continue
        command = rpx_command() + ["eval", "detection", "--quiet", "--coco-gt", gt, "--coco-dt", dt,
                                   "--iou-type", kind, "--metrics", "coco", "-o", "/dev/null"]
        runs = DigestRuns(f"coco-reader-{kind}", predictions=[dt], ground_truth=[gt])
        timed = [(command, {"RPX_NATIVE": "1"}, runs.first), (command, {"RPX_NATIVE": "0"}, runs.first),
                 ([py, "-c", HOTCOCO_EVAL, gt, dt, kind], {}, None)]
        if args.baseline:
            timed.append(([py, "-P", "-m", "rpx_cli", *command[command.index("eval"):]],  # -P: not the cwd
                          {"RPX_NATIVE": "1", "PYTHONPATH": args.baseline}, runs.first))
        on, off, hotcoco, *baseline = walls(timed, args.repeat)
        runs.cleanup()
        print(f"  rpx --metrics coco, first run (wall s): native {on:.2f} | RPX_NATIVE=0 {off:.2f} "
              f"| hotcoco 1.3 {hotcoco:.2f} -> {on / hotcoco:.2f}x hotcoco (was {off / hotcoco:.2f}x)")
        if baseline:
            print(f"  baseline {args.baseline}, native: {baseline[0]:.2f} -> {baseline[0] / hotcoco:.2f}x "
                  f"hotcoco; this checkout {on / baseline[0]:.2f}x the baseline's time")
    print(f"\nload: {load()} after")


if __name__ == "__main__":
    main()
