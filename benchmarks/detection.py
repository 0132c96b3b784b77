"""``rpx eval detection`` against pycocotools, faster-coco-eval and hotcoco.

Generates (once) a COCO-style set: N images, 10 classes, ~15 GT and ~60 scored detections
per image (near-GT and random), as COCO JSON, and the same as N per-stem JSON pairs. Times
each tool in a fresh process on the same files (load + evaluate + summarise), median of
``--repeat``, with peak RSS. rpx computes every view (rows, pooled, confusion, COCO) unless
noted; ``--metrics coco`` is the like-for-like comparison. Every rpx command runs as a
first run (empty digest cache) and a re-run (warm cache, unchanged GT, new predictions);
the floors read and parse the JSON files, and also sha256 them (provenance floor).

``--scale objects365`` generates an Objects365-validation-sized set instead (80,000 images,
365 classes, ~15 GT boxes and 15 detections per image: 1.2M of each; COCO files only, no
per-stem files) and times rpx ``--metrics coco`` against hotcoco and pycocotools, with
each tool's peak memory; pycocotools runs once, stopped after ``--pycocotools-timeout``
seconds.

Usage: python benchmarks/detection.py [--images 5000] [--repeat 3]
       python benchmarks/detection.py --scale objects365 [--repeat 3] [--pycocotools-timeout 1800]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, DigestRuns, floor_command, load, machine, rpx_command

PYCOCOTOOLS = textwrap.dedent("""
    import sys, contextlib, io
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(sys.argv[1]); dt = gt.loadRes(sys.argv[2])
        ev = COCOeval(gt, dt, "bbox"); ev.evaluate(); ev.accumulate(); ev.summarize()
    print(ev.stats[0])
""")
FASTER = textwrap.dedent("""
    import sys, contextlib, io
    from faster_coco_eval import COCO, COCOeval_faster
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(sys.argv[1]); dt = gt.loadRes(sys.argv[2])
        ev = COCOeval_faster(gt, dt, "bbox"); ev.evaluate(); ev.accumulate(); ev.summarize()
    print(ev.stats[0])
""")
HOTCOCO = textwrap.dedent("""
    import sys, contextlib, io
    from hotcoco import COCO, COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(sys.argv[1]); dt = gt.load_res(sys.argv[2])
        ev = COCOeval(gt, dt, "bbox"); ev.evaluate(); ev.accumulate(); ev.summarize()
    print(ev.stats[0])
""")


def generate(root: Path, n_images: int) -> Path:
    if (root / "DONE").exists():
        return root
    rng = np.random.default_rng(0)
    names = [f"class{k}" for k in range(10)]
    images, anns, dets = [], [], []
    (root / "gt").mkdir(parents=True, exist_ok=True)
    (root / "pred").mkdir(parents=True, exist_ok=True)
    for image_id in range(1, n_images + 1):
        images.append({"id": image_id, "file_name": f"img{image_id:06d}.jpg", "width": 640,
                       "height": 480})
        gt_objects, pred_objects, mine = [], [], []
        for _ in range(int(rng.integers(10, 21))):
            k = int(rng.integers(10))
            x, y = rng.uniform(0, 560, 2)
            w, h = rng.uniform(8, 200, 2)
            box = [round(float(v), 2) for v in (x, y, w, h)]
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": k + 1,
                         "bbox": box, "area": round(box[2] * box[3], 2), "iscrowd": 0})
            gt_objects.append({"bbox": [box[0], box[1], box[0] + box[2], box[1] + box[3]],
                               "label": names[k]})
            for _ in range(int(rng.integers(1, 4))):
                j = rng.normal(0, 0.08, 4) * [w, h, w, h]
                d = [round(float(v), 2) for v in (x + j[0], y + j[1], max(2, w + j[2]), max(2, h + j[3]))]
                mine.append({"image_id": image_id, "category_id": k + 1, "bbox": d,
                             "score": round(float(rng.uniform(0.05, 1)), 3)})
        while len(mine) < 60:
            k = int(rng.integers(10))
            x, y = rng.uniform(0, 560, 2)
            w, h = rng.uniform(8, 200, 2)
            mine.append({"image_id": image_id, "category_id": k + 1,
                         "bbox": [round(float(v), 2) for v in (x, y, w, h)],
                         "score": round(float(rng.uniform(0.01, 0.6)), 3)})
        dets.extend(mine)
        for d in mine:
            x, y, w, h = d["bbox"]
            pred_objects.append({"bbox": [x, y, x + w, y + h], "label": names[d["category_id"] - 1],
                                 "score": d["score"]})
        stem = f"img{image_id:06d}"
        (root / "gt" / f"{stem}.json").write_text(json.dumps(gt_objects))
        (root / "pred" / f"{stem}.json").write_text(json.dumps(pred_objects))
    (root / "instances.json").write_text(json.dumps({"images": images, "annotations": anns,
        "categories": [{"id": k + 1, "name": n} for k, n in enumerate(names)]}))
    (root / "results.json").write_text(json.dumps(dets))
    (root / "DONE").write_text(f"{len(anns)} gt, {len(dets)} detections\n")
    return root


def generate_objects365(root: Path, n_images: int = 80_000, n_classes: int = 365,
                        per_image: int = 15) -> Path:
    """COCO files only: 10-20 GT boxes an image over ``n_classes`` classes; per image
    ``per_image`` detections — a jittered copy of 60 % of the GT boxes, random boxes for
    the rest, the highest-scored ``per_image`` kept. Columns drawn per image with numpy."""
    if (root / "DONE").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    images, anns, dets = [], [], []
    for image_id in range(1, n_images + 1):
        images.append({"id": image_id, "file_name": f"img{image_id:06d}.jpg", "width": 640,
                       "height": 480})
        n = int(rng.integers(10, 21))
        cls = rng.integers(0, n_classes, n)
        xy, wh = rng.uniform(0, 560, (n, 2)), rng.uniform(8, 200, (n, 2))
        box = np.round(np.hstack([xy, wh]), 2)
        for k, b in zip(cls.tolist(), box.tolist(), strict=True):
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": k + 1,
                         "bbox": b, "area": round(b[2] * b[3], 2), "iscrowd": 0})
        copy = rng.random(n) < 0.6
        jitter = box[copy] + rng.normal(0, 0.08, (int(copy.sum()), 4)) * np.hstack([wh, wh])[copy]
        jitter[:, 2:] = np.maximum(2, jitter[:, 2:])
        extra = max(0, per_image - len(jitter))
        rand = np.hstack([rng.uniform(0, 560, (extra, 2)), rng.uniform(8, 200, (extra, 2))])
        det_box = np.round(np.vstack([jitter, rand]), 2)
        det_cls = np.concatenate([cls[copy], rng.integers(0, n_classes, extra)])
        det_score = np.round(np.concatenate([rng.uniform(0.05, 1, len(jitter)),
                                             rng.uniform(0.01, 0.6, extra)]), 3)
        top = np.argsort(-det_score, kind="stable")[:per_image]
        det_box, det_cls, det_score = det_box[top], det_cls[top], det_score[top]
        for k, b, sc in zip(det_cls.tolist(), det_box.tolist(), det_score.tolist(), strict=True):
            dets.append({"image_id": image_id, "category_id": k + 1, "bbox": b, "score": sc})
    (root / "instances.json").write_text(json.dumps({"images": images, "annotations": anns,
        "categories": [{"id": k + 1, "name": f"class{k}"} for k in range(n_classes)]}))
    (root / "results.json").write_text(json.dumps(dets))
    (root / "DONE").write_text(f"{len(anns)} gt, {len(dets)} detections\n")
    return root


def objects365(args: argparse.Namespace) -> None:
    root = generate_objects365(DATA / "detection-objects365")
    gt, dt = str(root / "instances.json"), str(root / "results.json")
    py = sys.executable
    rpx = rpx_command() + ["eval", "detection", "--quiet", "--coco-gt", gt, "--coco-dt", dt,
                           "--metrics", "coco", "-o", "/dev/null"]
    load_before = load()
    results = {
        "floor: read + parse both COCO files (json)": run(floor_command(plain=[gt, dt]), args.repeat),
        "floor: read + parse both COCO files (orjson)": run(
            [py, "-c", "import orjson, sys\nfor f in sys.argv[1:]: orjson.loads(open(f, 'rb').read())",
             gt, dt], args.repeat),
        "hotcoco": run([py, "-c", HOTCOCO, gt, dt], args.repeat),
        "rpx --metrics coco, default --jobs, every digest computed": run(
            rpx + ["--no-digest-cache"], args.repeat),
    }
    if not args.skip_pycocotools:
        # capped at 16 GB of address space: the machine has 24 and runs other work
        results["pycocotools (one run)"] = run(["prlimit", f"--as={16 << 30}", py, "-c",
                                                PYCOCOTOOLS, gt, dt], 1,
                                               timeout=args.pycocotools_timeout)
    hot = results["hotcoco"]
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"Objects365 scale: 80,000 images, 365 classes; {(root / 'DONE').read_text().strip()}; "
          f"median of {args.repeat}")
    print("| tool | wall s | peak RSS MB | time / hotcoco | memory / hotcoco |")
    print("|---|---:|---:|---:|---:|")
    for name, result in results.items():
        if result is None:
            print(f"| {name} | did not finish (above) | | | |")
            continue
        seconds, peak, _ = result
        print(f"| {name} | {seconds:.2f} | {peak:.0f} | {seconds / hot[0]:.2f}x | "
              f"{peak / hot[1]:.2f}x |")


def run(argv, repeat: int, timeout: float | None = None) -> tuple[float, float, str] | None:
    """(median wall s, peak RSS MB, stdout) of a fresh process; ``argv`` is a list or a
    callable returning one (called before each run, outside the timing). ``timeout``: the
    process is stopped after that many seconds and None is returned (its peak memory is
    printed)."""
    code = ("import resource, subprocess, sys\n"
            "try:\n"
            "    r = subprocess.run(sys.argv[2:], check=True, capture_output=True, text=True, "
            "timeout=float(sys.argv[1]) or None); out = r.stdout[-200:]\n"
            "except subprocess.TimeoutExpired:\n"
            "    out = 'TIMEOUT'\n"
            "except subprocess.CalledProcessError as exc:\n"
            "    out = 'FAILED ' + exc.stderr.strip().splitlines()[-1][:200]\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(out)")
    times, peaks, out = [], [], ""
    for _ in range(repeat):
        command = argv() if callable(argv) else argv
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, str(timeout or 0), *command],
                              check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        lines = done.stdout.splitlines()
        peaks.append(int(lines[0]) / 1024)
        out = "\n".join(lines[1:]).strip()
        if out == "TIMEOUT" or out.startswith("FAILED"):
            print(f"{'stopped after ' + str(timeout) + ' s' if out == 'TIMEOUT' else out} at a "
                  f"peak RSS of {peaks[-1]:.0f} MB, after {times[-1]:.0f} s: {command[:5]}")
            return None
    return statistics.median(times), max(peaks), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-pycocotools", action="store_true")
    parser.add_argument("--scale", choices=("coco", "objects365"), default="coco")
    parser.add_argument("--pycocotools-timeout", type=float, default=1800.0)
    args = parser.parse_args()
    if args.scale == "objects365":
        objects365(args)
        return
    root = generate(DATA / f"detection-{args.images}", args.images)
    gt, dt = str(root / "instances.json"), str(root / "results.json")
    py = sys.executable
    runs = DigestRuns("detection", predictions=[dt, root / "pred"],
                      ground_truth=[gt, root / "gt"])
    rpx = rpx_command() + ["eval", "detection", "--quiet"]
    coco_files = ["--coco-gt", gt, "--coco-dt", dt]
    stems = ["--pred-dir", str(root / "pred"), "--gt-dir", str(root / "gt")]
    checks = {"coco files": runs.warm(rpx + coco_files, expect_reused=1),
              "per-stem": runs.warm(rpx + stems + ["--jobs", "2"], expect_reused=args.images)}
    load_before = load()
    results = {
        "floor: read + parse both COCO files (json)":
            run(floor_command(plain=[gt, dt]), args.repeat),
        "provenance floor: read once, sha256, parse both COCO files":
            run(floor_command(hashed=[gt, dt]), args.repeat),
        f"provenance floor: the {2 * args.images} per-stem JSON files":
            run(floor_command(hashed=[root / "gt", root / "pred"]), args.repeat),
    }
    if not args.skip_pycocotools:
        results["pycocotools"] = run([py, "-c", PYCOCOTOOLS, gt, dt], 1)
    results["faster-coco-eval"] = run([py, "-c", FASTER, gt, dt], args.repeat)
    results["hotcoco"] = run([py, "-c", HOTCOCO, gt, dt], args.repeat)
    for label, flags in (("rpx --metrics coco (COCO files)", coco_files + ["--metrics", "coco"]),
                         ("rpx, every view (COCO files)", coco_files),
                         ("rpx, every view (per-stem JSON), --jobs 2", stems + ["--jobs", "2"])):
        for mode, extra in (("first run", runs.first), ("re-run", runs.rerun)):
            results[f"{label}, {mode}"] = run(
                lambda flags=flags, extra=extra: rpx + flags + ["-o", "/dev/null", *extra()],
                args.repeat)
    runs.cleanup()
    base = results.get("pycocotools", (None,))[0]
    hot = results["hotcoco"][0]
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"{args.images} images, 10 classes; {(root / 'DONE').read_text().strip()}; "
          f"median of {args.repeat} (pycocotools: 1 run); digests {checks}")
    print("| tool | wall s | peak RSS MB | vs pycocotools | vs hotcoco |")
    print("|---|---:|---:|---:|---:|")
    for name, (seconds, peak, _) in results.items():
        ratio = f"{base / seconds:.1f}x faster" if base else ""
        print(f"| {name} | {seconds:.2f} | {peak:.0f} | {ratio} | {seconds / hot:.1f}x |")


if __name__ == "__main__":
    main()
