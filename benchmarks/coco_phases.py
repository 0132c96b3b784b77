"""Where ``rpx eval detection --metrics coco`` spends its time, phase by phase, beside
hotcoco 1.3's own phases: the split issue 43 takes its next targets from.

One child process per tool and per path (``RPX_NATIVE=1``, ``RPX_NATIVE=0``), each timing
itself: rpx with its phase functions wrapped (process CPU and wall seconds): start-up (the
command line imported), the GT file read (``io.coco_files._read_gt``), the whole read
(``load_coco``: GT and results, the results' pieces partly in worker processes), matching
(``ops.coco.greedy_match`` with the similarity, or the native box or OKS matcher),
accumulation (``ops.coco.accumulate``), the rest of ``ops.coco.evaluate`` (sorting, areas), for
masks ``prepare_masks`` (polygons rasterised, strings checked) and ``mask_geometry`` (the
intersections),
and what is left (the other views, the report written); hotcoco: ``COCO(gt)``,
``load_res``, ``evaluate``, ``accumulate``, ``summarize``.
Then the native kernels alone against their numpy twins, in one process (CPU seconds, median
of 5): the GT reader (``_read_gt``), the accumulation (the arguments of the run's own
``accumulate_cells`` call) and the matcher of the run's kind (the box matcher against
``greedy_match`` with the IoU; the OKS matcher against ``greedy_match`` with
``OksGeometry``'s similarity).
Each child runs ``--repeat`` times in turn (interleaved); the table shows medians.

Data: the COCO box set of ``benchmarks/detection.py`` (or the keypoints set of
``benchmarks/coco_family.py`` with ``--kind keypoints``, its mask set with ``--kind segm``),
generated once under ``$RPX_BENCH_DATA``.

Usage: python benchmarks/coco_phases.py [--images 5000] [--kind bbox|keypoints|segm] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import coco_family
import detection
from _common import DATA, load, machine

RPX_PHASES = textwrap.dedent("""
    import json, os, sys, time
    t0, w0 = time.process_time(), time.perf_counter()
    spent = {}

    def timed(owner, name, phase):
        inner = getattr(owner, name)
        def wrapper(*args, **kwargs):
            t, w = time.process_time(), time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                cpu, wall = spent.get(phase, (0.0, 0.0))
                spent[phase] = (cpu + time.process_time() - t, wall + time.perf_counter() - w)
        setattr(owner, name, wrapper)

    from rpx_cli.io.prefetch import start  # as rpx_cli.__main__ does, before the imports
    start(sys.argv[1:])
    import rpx_cli.engine.jobs
    from rpx_cli.cli.main import main
    import rpx_cli.io.coco_files as coco_files
    import rpx_cli.ops.coco as coco
    import rpx_cli.tasks.detection.formats.coco as coco_format
    import rpx_cli.tasks.detection.views as views
    spent["start-up (imports)"] = (time.process_time() - t0, time.perf_counter() - w0)
    timed(coco_files, "_read_gt", "read: GT file")
    timed(coco_format, "load_coco", "read: GT + results")
    timed(coco, "greedy_match", "match (similarity + greedy)")
    timed(coco, "match_boxes", "match (similarity + greedy)")  # (native, boxes)
    from rpx_cli.ops.oks import OksGeometry
    timed(OksGeometry, "native_greedy_match", "match (similarity + greedy)")  # (native, OKS)
    timed(coco, "accumulate", "accumulate")
    timed(views, "coco_evaluate", "evaluate (all of ops.coco.evaluate)")
    import rpx_cli.tasks.detection.instances as instances  # (segm: the mask steps)
    timed(instances, "prepare_masks", "masks: polygons rasterised, RLEs checked")
    timed(instances, "mask_geometry", "masks: every frame's intersections")
    sys.argv = ["rpx", *sys.argv[1:]]
    try:
        main()
    except SystemExit:
        pass
    spent["total"] = (time.process_time() - t0, time.perf_counter() - w0)
    print(json.dumps(spent), file=sys.stderr)
""")

KERNELS_ALONE = textwrap.dedent("""
    import gc, json, os, statistics, sys, time
    from rpx_cli.cli.main import main
    import rpx_cli.ops.coco as coco
    from rpx_cli.io.coco_files import _read_gt
    from rpx_cli.ops.coco_accumulate import reference_accumulate
    from rpx_cli.ops.matching import greedy_match
    captured, boxes = [], []
    inner, match_boxes = coco.accumulate_cells, coco.match_boxes
    def capture(*args, **kwargs):
        captured.append((args, kwargs))
        return inner(*args, **kwargs)
    def capture_boxes(*args):
        boxes.append(args)
        return match_boxes(*args)
    coco.accumulate_cells, coco.match_boxes = capture, capture_boxes
    from rpx_cli.ops.oks import OksGeometry
    keypoints, walk_oks = [], OksGeometry.native_greedy_match
    def capture_oks(self, *args):
        keypoints.append((self, args))
        return walk_oks(self, *args)
    OksGeometry.native_greedy_match = capture_oks
    sys.argv = ["rpx", *sys.argv[1:]]
    try:
        main()
    except SystemExit:
        pass
    def cpu(call, native):
        os.environ["RPX_NATIVE"] = "1" if native else "0"
        times = []
        for _ in range(5):
            gc.collect()
            t = time.process_time()
            call()
            times.append(time.process_time() - t)
        return statistics.median(times)
    gt = sys.argv[sys.argv.index("--coco-gt") + 1]
    args, kwargs = captured[0]
    order = kwargs.get("order")  # the rows in category order: the twin takes them gathered
    gathered = args if order is None else (*(a[order] for a in args[:4]), *args[4:])
    out = {"accumulate (every cell)": (cpu(lambda: inner(*args, **kwargs), True),
                                       cpu(lambda: reference_accumulate(*gathered), True))}
    if boxes:  # the box matcher against greedy_match with the IoU of ops.coco
        core, dt_box, dt_group, gt_box, gt_group, crowd, area, ranges, thresholds, *_ = boxes[0]
        numpy_match = lambda: greedy_match(dt_group, gt_group, coco.iou_similarity(dt_box, gt_box),
                                           thresholds, ">=", ties="last", gt_crowd=crowd,
                                           gt_area=area, area_ranges=ranges)
        out["box matcher (IoU + greedy walk)"] = (cpu(lambda: match_boxes(*boxes[0]), True),
                                                  cpu(numpy_match, False))
    if keypoints:  # the OKS matcher against greedy_match with OksGeometry's similarity
        geometry, (dt_ids, dt_group, gt_ids, gt_group, crowd, area, ranges, thresholds) = keypoints[0]
        numpy_oks = lambda: greedy_match(dt_group, gt_group, geometry.similarity(dt_ids, gt_ids), thresholds,
                                         ">=", ties="last", gt_crowd=crowd, gt_area=area,
                                         area_ranges=ranges)
        native_oks = lambda: walk_oks(geometry, dt_ids, dt_group, gt_ids, gt_group, crowd, area,
                                      ranges, thresholds)
        out["OKS matcher (OKS + greedy walk)"] = (cpu(native_oks, True), cpu(numpy_oks, False))
    from rpx_cli.io.coco_objects import BOX_FIELD, KEYPOINT_FIELD, MASK_FIELD
    field = {"keypoints": KEYPOINT_FIELD, "segm": MASK_FIELD}.get(
        sys.argv[sys.argv.index("--iou-type") + 1], BOX_FIELD)
    out["GT reader: _read_gt (file read, scan or orjson, arrays)"] = \
        (cpu(lambda: _read_gt(gt, field), True), cpu(lambda: _read_gt(gt, field), False))
    print(json.dumps(out), file=sys.stderr)
""")

HOTCOCO_PHASES = textwrap.dedent("""
    import contextlib, io, json, sys, time
    t0, w0 = time.process_time(), time.perf_counter()
    spent = {}
    from hotcoco import COCO, COCOeval
    spent["start-up (imports)"] = (time.process_time() - t0, time.perf_counter() - w0)
    def step(phase, call):
        t, w = time.process_time(), time.perf_counter()
        out = call()
        spent[phase] = (time.process_time() - t, time.perf_counter() - w)
        return out
    with contextlib.redirect_stdout(io.StringIO()):
        gt = step("read: GT file", lambda: COCO(sys.argv[1]))
        dt = step("read: results", lambda: gt.load_res(sys.argv[2]))
        ev = COCOeval(gt, dt, sys.argv[3])
        step("evaluate (match)", ev.evaluate)
        step("accumulate", ev.accumulate)
        step("summarize", ev.summarize)
    spent["total"] = (time.process_time() - t0, time.perf_counter() - w0)
    print(json.dumps(spent), file=sys.stderr)
""")


def run(argv: list[str], env: dict[str, str]) -> dict[str, tuple[float, float]]:
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env={**os.environ, **env})
    if done.returncode:
        sys.exit(f"{argv[:2]} failed:\n{done.stderr}")
    return json.loads(done.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--kind", choices=("bbox", "keypoints", "segm"), default="bbox")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.kind == "bbox":
        root = detection.generate(DATA / f"detection-{args.images}", args.images)
    elif args.kind == "keypoints":
        root = coco_family.generate_keypoints(DATA / f"keypoints-{args.images}", args.images)
    else:
        root = coco_family.generate_segm(DATA / f"segm-{args.images}", args.images)
    gt, dt = str(root / "instances.json"), str(root / "results.json")
    py = sys.executable
    print(f"machine: {machine()}\nload: {load()} before")
    caches = Path(tempfile.mkdtemp(prefix="coco-phases-", dir=DATA))
    tools = {"rpx native": {"RPX_NATIVE": "1"}, "rpx RPX_NATIVE=0": {"RPX_NATIVE": "0"}, "hotcoco 1.3": None}
    samples: dict[str, list[dict]] = {name: [] for name in tools}
    for i in range(args.repeat):
        for name, env in tools.items():
            if env is None:
                argv, env = [py, "-c", HOTCOCO_PHASES, gt, dt, args.kind], {}
            else:
                cache = caches / f"{name.split()[-1]}-{i}"  # a first run: an empty digest cache
                argv = [py, "-c", RPX_PHASES, "eval", "detection", "--quiet", "--coco-gt", gt,
                        "--coco-dt", dt, "--iou-type", args.kind, "--metrics", "coco", "-o",
                        "/dev/null", "--digest-cache", str(cache)]
            samples[name].append(run(argv, env))
    argv = [py, "-c", KERNELS_ALONE, "eval", "detection", "--quiet", "--coco-gt", gt, "--coco-dt", dt,
            "--iou-type", args.kind, "--metrics", "coco", "-o", "/dev/null", "--digest-cache",
            str(caches / "kernels")]
    kernels = run(argv, {"RPX_NATIVE": "1"})
    shutil.rmtree(caches, ignore_errors=True)
    print(f"load: {load()} after\n")
    for name, runs in samples.items():
        print(f"| {name} | CPU s | wall s |\n|---|---|---|")
        phases = dict.fromkeys(p for r in runs for p in r)
        for phase in phases:
            cpu = statistics.median(r.get(phase, (0.0, 0.0))[0] for r in runs)
            wall = statistics.median(r.get(phase, (0.0, 0.0))[1] for r in runs)
            print(f"| {phase} | {cpu:.3f} | {wall:.3f} |")
        print()
    print("| kernel alone (CPU s, median of 5, in one process) | native | numpy twin | ratio |\n"
          "|---|---|---|---|")
    for name, (native, numpy) in kernels.items():
        print(f"| {name} | {native:.3f} | {numpy:.3f} | {numpy / native:.1f}x |")


if __name__ == "__main__":
    main()
