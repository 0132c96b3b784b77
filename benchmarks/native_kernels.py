"""Each native kernel against its numpy twin and pycocotools, on the same generated masks, in
one process (the ≥ 2× rule of docs/architecture.md, "The native core"):

- strings decoded and checked: ``rle_check`` / ``decode_counts`` (the numpy path's check) /
  pycocotools' ``area`` (no check: what the numpy path used before issue 43);
- polygons rasterised: ``polygons_rle`` / ``reference_polygon`` + ``reference_merge`` /
  ``frPyObjects`` (+ ``merge``);
- every frame's intersections: ``rle_intersections`` / ``mask.iou`` per frame (the numpy
  path) — the numpy twin decodes every pixel and is left out.

Masks: N frames of 480×640, 7 GT polygons (6–16 vertices) and 100 detections per frame
(rasterised polygons, as compressed strings). Median of ``--repeat`` with the spread.

Usage: python benchmarks/native_kernels.py [--frames 500] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import itertools

from _common import load, machine


def polygons(rng, n: int, h: int, w: int) -> list[list[list[float]]]:
    out = []
    for _ in range(n):
        k = int(rng.integers(6, 17))
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        radius = rng.uniform(8, 120, k)
        angle = np.sort(rng.uniform(0, 2 * np.pi, k))
        xy = np.empty(2 * k)
        xy[0::2], xy[1::2] = cx + radius * np.cos(angle), cy + radius * np.sin(angle)
        out.append([xy.round(2).tolist()])
    return out


def timed(fn, repeat: int) -> tuple[float, float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), min(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from pycocotools import mask as mask_utils

    from rpx_cli import _native
    from rpx_cli.ops import masks
    from rpx_cli.ops.polygon_raster import flatten, reference_merge, reference_polygon
    from rpx_cli.ops.rle import decode_counts

    h, w = 480, 640
    rng = np.random.default_rng(0)
    gt_polys = polygons(rng, 7 * args.frames, h, w)
    dt_polys = polygons(rng, 100 * args.frames, h, w)
    xy, vs, ps = flatten(dt_polys)
    text, offsets = _native.polygons_rle(xy, vs, ps, np.full((len(dt_polys), 2), [h, w], np.int64), 1 << 40)
    bounds = np.frombuffer(offsets, np.int64).tolist()
    dt = [{"size": [h, w], "counts": text[a:b]} for a, b in itertools.pairwise(bounds)]
    xy, vs, ps = flatten(gt_polys)
    text, offsets = _native.polygons_rle(xy, vs, ps, np.full((len(gt_polys), 2), [h, w], np.int64), 1 << 40)
    bounds = np.frombuffer(offsets, np.int64).tolist()
    gt = [{"size": [h, w], "counts": text[a:b]} for a, b in itertools.pairwise(bounds)]
    strings = [r["counts"] for r in dt]
    print(f"machine: {machine()}\nload: {load()} before")
    print(f"\n{args.frames} frames of {h}×{w}: {len(gt)} GT polygons, {len(dt)} detections "
          f"({sum(map(len, strings)) / 1e6:.1f} MB of strings); median of {args.repeat} (min–max)\n")
    print("| step | native s | numpy s | pycocotools s | native vs numpy | native vs pycocotools |")
    print("|---|---:|---:|---:|---:|---:|")

    def row(name, native, numpy_, pyco) -> None:
        cells = [f"{m:.3f} ({a:.3f}–{b:.3f})" if m is not None else "—" for m, a, b in (native, numpy_, pyco)]
        ratio = [f"{other[0] / native[0]:.1f}×" if other[0] is not None else "—" for other in (numpy_, pyco)]
        print(f"| {name} | {' | '.join(cells)} | {' | '.join(ratio)} |")

    joined_text, joined_offsets = masks.joined(strings)
    n = len(strings)

    def native_check() -> None:
        _native.rle_check(joined_text, joined_offsets, np.zeros(n, np.int64), np.zeros(n, np.int64),
                          np.zeros(n, np.uint8))

    def pycocotools_area() -> None:
        for start in range(0, n, 255):
            mask_utils.area(dt[start:start + 255])

    sample = max(1, n // 10)  # the numpy decoder on a tenth, scaled (it is slow)
    numpy_check = timed(lambda: decode_counts(strings[:sample]), args.repeat)
    row("strings decoded and checked", timed(native_check, args.repeat),
        tuple(v * n / sample for v in numpy_check), timed(pycocotools_area, args.repeat))

    xy, vs, ps = flatten(gt_polys)
    sizes = np.full((len(gt_polys), 2), [h, w], np.int64)
    few = gt_polys[: max(1, len(gt_polys) // 10)]
    numpy_poly = timed(lambda: [reference_merge([reference_polygon(np.asarray(p), h, w) for p in o])
                                for o in few], args.repeat)
    native_poly = timed(lambda: _native.polygons_rle(xy, vs, ps, sizes, 1 << 40), args.repeat)
    row("GT polygons rasterised", native_poly,
        tuple(v * len(gt_polys) / len(few) for v in numpy_poly),
        timed(lambda: [mask_utils.frPyObjects(o, h, w) for o in gt_polys], args.repeat))

    frames = args.frames
    dt_frame = np.repeat(np.arange(frames), 100)
    gt_frame = np.repeat(np.arange(frames), 7)
    area = np.zeros(n, np.float64)
    pred, gtm = np.empty(n, object), np.empty(len(gt), object)
    pred[:], gtm[:] = dt, gt
    import os

    def intersections(path: str):
        os.environ["RPX_NATIVE"] = path
        return lambda: masks.table_intersections(pred, gtm, dt_frame, gt_frame, area, frames)

    native_inter = timed(intersections("1"), args.repeat)
    numpy_inter = timed(intersections("0"), args.repeat)
    os.environ.pop("RPX_NATIVE")
    row("every frame's intersections", native_inter, (None, None, None), numpy_inter)
    print(f"\nload: {load()} after")


if __name__ == "__main__":
    main()
