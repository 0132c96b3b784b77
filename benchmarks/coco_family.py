"""``rpx eval detection --iou-type segm|keypoints`` and ``--protocol lvis`` against
pycocotools, faster-coco-eval, hotcoco 1.3 and the ``lvis`` package, side by side.

Generates (once) three COCO-format sets:

- **segm**: N images of 640×480, ~7 GT objects (polygons of 6–16 vertices, 80 categories,
  a few crowd regions as uncompressed RLE) and 100 detections per image as compressed RLE
  (three or four per GT, jittered, the rest random shapes);
- **keypoints**: N images, ~7 people (17 COCO keypoints, some without visible points) and
  100 detections per image;
- **lvis**: M images, 1,203 categories (with ``frequency``), ~10 GT boxes and 300
  detections per image, ``neg_category_ids`` and ``not_exhaustive_category_ids``.

Times each tool in a fresh process on the same files (load + evaluate + summarise), median
of ``--repeat`` (pycocotools and lvis: one run), with peak RSS. rpx runs ``--metrics coco``
(like for like) as a first run (empty digest cache) and a re-run (warm cache, new
predictions), with ``--jobs 1`` and with the default ``--jobs`` (the results file's pieces
parsed in worker processes), and every view once. ``--mask-kernels`` also times the mask step alone,
on the native core and on the numpy path (pycocotools' rasteriser and per-frame ``iou``,
rpx's numpy decoder); ``--mask-kernels-only`` times only that.

Usage: python benchmarks/coco_family.py [--images 5000] [--lvis-images 1000] [--repeat 3]
       python benchmarks/coco_family.py --images 5000 --mask-kernels-only
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, DigestRuns, load, machine, rpx_command

COCOEVAL = textwrap.dedent("""
    import sys, contextlib, io
    import numpy as np
    if sys.argv[3] == "pycocotools":
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    elif sys.argv[3] == "faster-coco-eval":
        from faster_coco_eval import COCO
        from faster_coco_eval import COCOeval_faster as COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        if sys.argv[3] == "hotcoco":
            from hotcoco import COCO, COCOeval
            gt = COCO(sys.argv[1]); dt = gt.load_res(sys.argv[2])
        else:
            gt = COCO(sys.argv[1]); dt = gt.loadRes(sys.argv[2])
        ev = COCOeval(gt, dt, sys.argv[4]); ev.evaluate(); ev.accumulate(); ev.summarize()
    print(ev.stats[0])
""")
LVIS = textwrap.dedent("""
    import sys, contextlib, io, logging
    import numpy as np
    logging.disable(logging.WARNING)
    if sys.argv[3] == "lvis":
        if not hasattr(np, "float"):
            np.float = float  # lvis 0.5.3 predates numpy 2
        from lvis import LVIS, LVISEval, LVISResults
        with contextlib.redirect_stdout(io.StringIO()):
            gt = LVIS(sys.argv[1]); ev = LVISEval(gt, LVISResults(gt, sys.argv[2]), "bbox"); ev.run()
        print(ev.results["AP"])
    elif sys.argv[3] == "hotcoco":
        from hotcoco import COCO, COCOeval
        with contextlib.redirect_stdout(io.StringIO()):
            gt = COCO(sys.argv[1]); dt = gt.load_res(sys.argv[2])
            ev = COCOeval(gt, dt, "bbox", lvis_style=True); ev.run()
        print(ev.get_results()["AP"])
    else:
        from faster_coco_eval import COCO, COCOeval_faster
        with contextlib.redirect_stdout(io.StringIO()):
            gt = COCO(sys.argv[1]); dt = gt.loadRes(sys.argv[2])
            ev = COCOeval_faster(gt, dt, "bbox", lvis_style=True); ev.run()
        print(ev.stats[0])
""")


def polygon(rng, cx, cy, r, n):
    angles = np.sort(rng.uniform(0, 2 * np.pi, n))
    radii = r * rng.uniform(0.6, 1.0, n)
    xs = np.clip(cx + radii * np.cos(angles), 0, 639)
    ys = np.clip(cy + radii * np.sin(angles), 0, 479)
    return [round(float(v), 1) for pair in zip(xs, ys, strict=True) for v in pair]


def generate_segm(root: Path, n_images: int) -> Path:
    if (root / "DONE").exists():
        return root
    import pycocotools.mask as mask_utils

    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    h, w = 480, 640
    images, anns, dets = [], [], []
    for image_id in range(1, n_images + 1):
        images.append({"id": image_id, "file_name": f"img{image_id:06d}.jpg", "height": h,
                       "width": w})
        present = rng.choice(80, 5, replace=False) + 1
        mine = []
        for _ in range(int(rng.integers(4, 11))):
            k = int(rng.choice(present))
            cx, cy, r = rng.uniform(40, 600), rng.uniform(40, 440), rng.uniform(8, 120)
            crowd = int(rng.random() < 0.02)
            poly = polygon(rng, cx, cy, r, int(rng.integers(6, 17)))
            rle = mask_utils.merge(mask_utils.frPyObjects([poly], h, w))
            if crowd:
                m = mask_utils.decode(rle)
                flat = m.flatten(order="F")
                bounds = np.concatenate(([0], np.flatnonzero(np.diff(flat)) + 1, [flat.size]))
                runs = np.diff(bounds).tolist()
                seg = {"size": [h, w], "counts": [0, *runs] if flat[0] else runs}
            else:
                seg = [poly]
            area = float(mask_utils.area(rle))
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": k,
                         "segmentation": seg, "area": area,
                         "bbox": [round(v, 2) for v in mask_utils.toBbox(rle).tolist()], "iscrowd": crowd})
            for _ in range(int(rng.integers(3, 5))):
                jitter = polygon(rng, cx + rng.normal(0, r * 0.1), cy + rng.normal(0, r * 0.1),
                                 r * rng.uniform(0.8, 1.2), int(rng.integers(6, 17)))
                mine.append((k if rng.random() < 0.9 else int(rng.choice(present)), jitter,
                             round(float(rng.uniform(0.05, 1)), 3)))
        while len(mine) < 100:
            k = int(rng.choice(present)) if rng.random() < 0.5 else int(rng.integers(1, 81))
            mine.append((k, polygon(rng, rng.uniform(20, 620), rng.uniform(20, 460), rng.uniform(5, 80),
                                    int(rng.integers(6, 12))), round(float(rng.uniform(0.01, 0.6)), 3)))
        rles = mask_utils.frPyObjects([p for _, p, _ in mine], h, w)
        for (k, _, score), rle in zip(mine, rles, strict=True):
            dets.append({"image_id": image_id, "category_id": k, "score": score,
                         "segmentation": {"size": [h, w], "counts": rle["counts"].decode("ascii")}})
    (root / "instances.json").write_text(json.dumps({
        "images": images, "annotations": anns,
        "categories": [{"id": k, "name": f"class{k}"} for k in range(1, 81)]}))
    (root / "results.json").write_text(json.dumps(dets))
    (root / "DONE").write_text(f"{len(anns)} GT masks, {len(dets)} detections (compressed RLE)\n")
    return root


SIGMAS = np.array([.26, .25, .25, .35, .35, .79, .79, .72, .72, .62, .62, 1.07, 1.07, .87, .87,
                   .89, .89]) / 10


def generate_keypoints(root: Path, n_images: int) -> Path:
    if (root / "DONE").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    images, anns, dets = [], [], []
    for image_id in range(1, n_images + 1):
        images.append({"id": image_id, "file_name": f"img{image_id:06d}.jpg", "height": 480, "width": 640})
        mine = []
        for _ in range(int(rng.integers(4, 11))):
            x, y = rng.uniform(0, 560), rng.uniform(0, 380)
            bw, bh = rng.uniform(20, 200), rng.uniform(40, 300)
            px, py = x + rng.uniform(0, bw, 17), y + rng.uniform(0, bh, 17)
            v = rng.choice([0, 1, 2], 17, p=[0.25, 0.15, 0.6])
            if rng.random() < 0.1:
                v[:] = 0
            kps = []
            for j in range(17):
                kps += [round(float(px[j]), 1), round(float(py[j]), 1), int(v[j])] if v[j] else [0, 0, 0]
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": 1, "keypoints": kps,
                         "num_keypoints": int((v > 0).sum()), "iscrowd": int(rng.random() < 0.02),
                         "bbox": [round(float(c), 1) for c in (x, y, bw, bh)],
                         "area": round(float(bw * bh * 0.6), 1)})
            for _ in range(int(rng.integers(3, 5))):
                s = rng.uniform(1, 12)
                d = []
                for j in range(17):
                    d += [round(float(px[j] + rng.normal(0, s)), 1),
                          round(float(py[j] + rng.normal(0, s)), 1), 1]
                mine.append({"image_id": image_id, "category_id": 1, "keypoints": d,
                             "score": round(float(rng.uniform(0.05, 1)), 3)})
        while len(mine) < 100:
            d = []
            x, y = rng.uniform(0, 560), rng.uniform(0, 380)
            for _j in range(17):
                d += [round(float(x + rng.uniform(0, 100)), 1), round(float(y + rng.uniform(0, 150)), 1), 1]
            mine.append({"image_id": image_id, "category_id": 1, "keypoints": d,
                         "score": round(float(rng.uniform(0.01, 0.5)), 3)})
        dets.extend(mine)
    (root / "instances.json").write_text(json.dumps({
        "images": images, "annotations": anns,
        "categories": [{"id": 1, "name": "person", "keypoints": [f"k{j}" for j in range(17)]}]}))
    (root / "results.json").write_text(json.dumps(dets))
    (root / "DONE").write_text(f"{len(anns)} GT people, {len(dets)} detections\n")
    return root


def generate_lvis(root: Path, n_images: int) -> Path:
    if (root / "DONE").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2)
    K = 1203
    categories = [{"id": k, "name": f"cat{k}", "frequency": "rcf"[int(rng.choice(3, p=[0.28, 0.38, 0.34]))]}
                  for k in range(1, K + 1)]
    images, anns, dets = [], [], []
    for image_id in range(1, n_images + 1):
        present = rng.choice(K, int(rng.integers(2, 8)), replace=False) + 1
        others = np.setdiff1d(np.arange(1, K + 1), present)
        neg = rng.choice(others, 15, replace=False)
        images.append({"id": image_id, "file_name": f"img{image_id:06d}.jpg", "height": 480,
                       "width": 640, "neg_category_ids": [int(c) for c in neg],
                       "not_exhaustive_category_ids": [int(c) for c in present if rng.random() < 0.2]})
        mine = []
        for _ in range(int(rng.integers(5, 16))):
            k = int(rng.choice(present))
            x, y = rng.uniform(0, 560, 2)
            bw, bh = rng.uniform(4, 200, 2)
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": k,
                         "bbox": [round(float(v), 2) for v in (x, y, bw, bh)],
                         "area": round(float(bw * bh), 2)})
            for _ in range(int(rng.integers(2, 6))):
                j = rng.normal(0, 0.1, 4) * [bw, bh, bw, bh]
                box = (x + j[0], y + j[1], max(2, bw + j[2]), max(2, bh + j[3]))
                mine.append({"image_id": image_id,
                             "category_id": k if rng.random() < 0.8 else int(rng.integers(1, K + 1)),
                             "bbox": [round(float(v), 2) for v in box],
                             "score": round(float(rng.uniform(0.05, 1)), 4)})
        while len(mine) < 300:
            x, y = rng.uniform(0, 560, 2)
            bw, bh = rng.uniform(4, 200, 2)
            k = int(rng.choice(np.concatenate([present, neg]))) if rng.random() < 0.5 else \
                int(rng.integers(1, K + 1))
            mine.append({"image_id": image_id, "category_id": k,
                         "bbox": [round(float(v), 2) for v in (x, y, bw, bh)],
                         "score": round(float(rng.uniform(0.001, 0.5)), 4)})
        dets.extend(mine)
    (root / "lvis_val.json").write_text(json.dumps({"images": images, "annotations": anns,
                                                    "categories": categories}))
    (root / "results.json").write_text(json.dumps(dets))
    (root / "DONE").write_text(f"{len(anns)} GT boxes, {len(dets)} detections, {K} categories\n")
    return root


def run(argv, repeat: int) -> tuple[float, float, str]:
    """(median wall s, peak RSS MB, last stdout line) of ``argv`` in fresh processes;
    ``argv`` may be a callable returning it (called before each run, outside the timing)."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], check=True, "
            "capture_output=True, text=True); print(resource.getrusage("
            "resource.RUSAGE_CHILDREN).ru_maxrss); print(r.stdout[-200:])")
    times, peaks, out = [], [], ""
    for _ in range(repeat):
        command = argv() if callable(argv) else argv
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, *command], check=True,
                              capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        lines = done.stdout.splitlines()
        peaks.append(int(lines[0]) / 1024)
        out = "\n".join(lines[1:]).strip()
    return float(np.median(times)), max(peaks), out


def table(title: str, results: dict, base: str, hot: str | None) -> None:
    print(f"\n{title}")
    print("| tool | wall s | peak RSS MB | vs reference | vs hotcoco |")
    print("|---|---:|---:|---:|---:|")
    b = results[base][0]
    h = results[hot][0] if hot else None
    for name, (seconds, peak, _) in results.items():
        print(f"| {name} | {seconds:.2f} | {peak:.0f} | {b / seconds:.1f}x faster | "
              f"{f'{seconds / h:.2f}x' if h else ''} |")


def mask_kernels(root: Path, repeat: int = 3) -> None:
    """The mask step alone on the segm set, both paths side by side (median of ``repeat``):
    masks made and checked (``prepare_masks``: GT polygons rasterised, every string decoded
    and its runs checked) and every frame's intersections (``table_intersections``) — by the
    native core, and on the numpy path (rpx's numpy decoder, pycocotools' rasteriser and
    per-frame iou)."""
    import os

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from rpx_cli.io.coco_files import load_coco
    from rpx_cli.io.coco_objects import MASK_FIELD
    from rpx_cli.ops import masks
    from rpx_cli.tasks.detection import instances

    coco = load_coco(str(root / "instances.json"), str(root / "results.json"), shape_field=MASK_FIELD)
    print(f"\nmask step, {len(coco.pred)} detections and {len(coco.gt)} GT masks "
          f"({len(coco.stems)} images), median of {repeat}")
    print("| path | masks made and checked s | intersections s | total s |")
    print("|---|---:|---:|---:|")
    rows = {}
    for path in ("native", "numpy"):
        os.environ["RPX_NATIVE"] = "1" if path == "native" else "0"
        made, crossed = [], []
        for _ in range(repeat):
            start = time.perf_counter()
            pred, area = instances.prepare_masks(coco.pred.shape, coco.pred_size, "results.json", "detection")
            gt, _ = instances.prepare_masks(coco.gt.shape, coco.gt_size, "instances.json", "annotation")
            prepared = time.perf_counter()
            result = masks.table_intersections(pred, gt, coco.pred.frame, coco.gt.frame, area,
                                               len(coco.stems))
            done = time.perf_counter()
            made.append(prepared - start)
            crossed.append(done - prepared)
        rows[path] = result
        a, b = float(np.median(made)), float(np.median(crossed))
        print(f"| {path} | {a:.2f} ({min(made):.2f}–{max(made):.2f}) | {b:.2f} ({min(crossed):.2f}–"
              f"{max(crossed):.2f}) | {a + b:.2f} |")
    os.environ.pop("RPX_NATIVE")
    same = all(np.array_equal(x, y) for x, y in zip(rows["native"], rows["numpy"], strict=True))
    print(f"identical intersections: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--lvis-images", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("segm", "keypoints", "lvis"), action="append")
    parser.add_argument("--mask-kernels", action="store_true")
    parser.add_argument("--mask-kernels-only", action="store_true",
                        help="only the mask step, native and numpy paths (no peers)")
    args = parser.parse_args()
    if args.mask_kernels_only:
        print(f"machine: {machine()}\nload: {load()} before")
        mask_kernels(generate_segm(DATA / f"segm-{args.images}", args.images), args.repeat)
        print(f"load: {load()} after")
        return
    only = args.only or ["segm", "keypoints", "lvis"]
    py = sys.executable
    rpx = rpx_command() + ["eval", "detection", "--quiet", "--jobs", "1"]
    print(f"machine: {machine()}")
    print(f"load: {load()} before")
    for kind in only:
        if kind == "lvis":
            root = generate_lvis(DATA / f"lvis-{args.lvis_images}", args.lvis_images)
            gt, dt = str(root / "lvis_val.json"), str(root / "results.json")
            peers = {"lvis 0.5.3 (LVISEval)": ([py, "-c", LVIS, gt, dt, "lvis"], 1),
                     "faster-coco-eval (lvis_style)": ([py, "-c", LVIS, gt, dt, "faster"], args.repeat),
                     "hotcoco 1.3 (lvis_style)": ([py, "-c", LVIS, gt, dt, "hotcoco"], args.repeat)}
            flags = ["--protocol", "lvis"]
            base, hot = "lvis 0.5.3 (LVISEval)", "hotcoco 1.3 (lvis_style)"
        else:
            make = generate_segm if kind == "segm" else generate_keypoints
            root = make(DATA / f"{kind}-{args.images}", args.images)
            gt, dt = str(root / "instances.json"), str(root / "results.json")
            peers = {"pycocotools": ([py, "-c", COCOEVAL, gt, dt, "pycocotools", kind], 1),
                     "faster-coco-eval": ([py, "-c", COCOEVAL, gt, dt, "faster-coco-eval", kind],
                                          args.repeat),
                     "hotcoco 1.3": ([py, "-c", COCOEVAL, gt, dt, "hotcoco", kind], args.repeat)}
            flags = ["--iou-type", kind]
            base, hot = "pycocotools", "hotcoco 1.3"
        files = ["--coco-gt", gt, "--coco-dt", dt]
        runs = DigestRuns(f"coco-family-{kind}", predictions=[dt], ground_truth=[gt])
        command = rpx + files + flags
        runs.warm(command + ["--metrics", "coco"], expect_reused=1)
        results = {}
        for name, (argv, repeat) in peers.items():
            results[name] = run(argv, repeat)
        for mode, extra in (("first run", runs.first), ("re-run", runs.rerun)):
            results[f"rpx --metrics coco, {mode}"] = run(
                lambda extra=extra, command=command: [*command, "--metrics", "coco", "-o", "/dev/null",
                                                      *extra()], args.repeat)
        for mode, extra in (("first run", runs.first), ("re-run", runs.rerun)):
            results[f"rpx --metrics coco, default --jobs (pieces in workers), {mode}"] = run(
                lambda extra=extra, command=command: [
                    *(a for a in command if a not in ("--jobs", "1")), "--metrics", "coco",
                    "-o", "/dev/null", *extra()], args.repeat)
        results["rpx, every view (rows, pooled, confusion, coco), first run"] = run(
            lambda command=command, runs=runs: [*command, "-o", "/dev/null", *runs.first()], 1)
        runs.cleanup()
        table(f"{kind}: {(root / 'DONE').read_text().strip()}; median of {args.repeat} "
              f"(reference: 1 run)", results, base, hot)
        for name, (_, _, out) in results.items():
            if not name.startswith("rpx"):
                print(f"  {name} AP: {out.splitlines()[-1] if out else ''}")
    if args.mask_kernels:
        mask_kernels(DATA / f"segm-{args.images}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"load: {load()} after; peak RSS of this script {peak} MB")


if __name__ == "__main__":
    main()
