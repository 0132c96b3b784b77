"""Panoptic quality: `rpx eval panoptic` against panopticapi's `pq_compute` and hotcoco 1.3.

    python benchmarks/panoptic.py --images 500 --repeat 3

Generates Cityscapes-sized COCO panoptic sets (1024x512 RGB id PNGs, 19 Cityscapes
categories: 11 stuff, 8 things; ~40 segments an image) under ``$RPX_BENCH_DATA``, then
times in fresh processes, round-robin:

- panopticapi's ``pq_compute`` with 2 processes (the vendored test reference,
  ``tests/panopticapi_reference.py``: the published code, ``processes=2``);
- hotcoco 1.3's ``panoptic.pq_compute`` (Rust, its own threads over both CPUs);
- ``rpx eval panoptic --jobs 2`` and ``--jobs 1``, first run (every input hashed) and
  re-run (the GT PNGs' digests from the digest cache);
- the floor: every PNG decoded by Pillow in one process (what any Python tool pays).

The three tools' PQ/SQ/RQ are printed side by side (they must agree).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from _common import DATA, DigestRuns, load, machine, measure, rpx_command, spread_line, verdict

TESTS = Path(__file__).resolve().parent.parent / "tests"
H, W = 512, 1024
STUFF = ["road", "sidewalk", "building", "wall", "fence", "pole", "traffic light",
         "traffic sign", "vegetation", "terrain", "sky"]
THINGS = ["person", "rider", "car", "truck", "bus", "train", "motorcycle", "bicycle"]
CATEGORIES = ([{"id": 7 + i, "name": n, "isthing": 0} for i, n in enumerate(STUFF)]
              + [{"id": 24 + i, "name": n, "isthing": 1} for i, n in enumerate(THINGS)])


def rgb(ids: np.ndarray) -> np.ndarray:
    ids = ids.astype(np.uint32)
    return np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)


def scene(rng: np.random.Generator) -> tuple[np.ndarray, list[dict], np.ndarray, list[dict]]:
    """A street-like GT (stuff bands and blocks, ~28 thing instances, VOID seams) and a
    prediction (shifted outlines, missed, split and relabelled segments, hallucinations)."""
    rows, cols = np.mgrid[0:H, 0:W]
    gt = np.zeros((H, W), np.int64)
    segments: dict[int, dict] = {}
    sid = 0

    def paint(target: np.ndarray, mask: np.ndarray, category: int, crowd: int = 0) -> int:
        nonlocal sid
        sid += int(rng.integers(1, 4000))
        target[mask] = sid
        segments[sid] = {"id": sid, "category_id": category, "iscrowd": crowd}
        return sid

    horizon = int(rng.integers(180, 260))
    paint(gt, rows < horizon, 17)  # sky
    paint(gt, rows >= horizon, 7)  # road
    for _ in range(10):  # buildings, vegetation, sidewalk, ... as blocks
        top = int(rng.integers(0, H - 60))
        left = int(rng.integers(0, W - 120))
        h, w = int(rng.integers(40, 200)), int(rng.integers(60, 300))
        paint(gt, (rows >= top) & (rows < top + h) & (cols >= left) & (cols < left + w),
              CATEGORIES[int(rng.integers(1, 10))]["id"])
    for _ in range(28):  # instances as ellipses
        cy, cx = int(rng.integers(horizon - 40, H)), int(rng.integers(0, W))
        ry, rx = int(rng.integers(8, 60)), int(rng.integers(6, 50))
        mask = ((rows - cy) / ry) ** 2 + ((cols - cx) / rx) ** 2 <= 1
        paint(gt, mask, 24 + int(rng.integers(0, 8)), crowd=int(rng.random() < 0.05))
    gt[::37, :] = 0  # VOID seams
    gt[:, ::53] = 0
    present = np.unique(gt)
    gt_info = [dict(segments[s], area=int(np.count_nonzero(gt == s))) for s in present if s]

    pred = np.zeros_like(gt)
    pred_info = []
    sid = 5_000_000
    segments.clear()
    dy, dx = int(rng.integers(-4, 5)), int(rng.integers(-4, 5))
    shifted = np.roll(gt, (dy, dx), axis=(0, 1))
    for info in gt_info:
        mask = shifted == info["id"]
        u = rng.random()
        if u < 0.07:
            continue
        category = info["category_id"]
        if u < 0.12:
            category = CATEGORIES[int(rng.integers(0, len(CATEGORIES)))]["id"]
        if u > 0.92 and category >= 24:
            paint(pred, mask & (cols < int(np.median(cols[mask]))), category)
            paint(pred, mask & (cols >= int(np.median(cols[mask]))), category)
            continue
        paint(pred, mask, category)
    for _ in range(4):
        cy, cx = int(rng.integers(0, H)), int(rng.integers(0, W))
        paint(pred, ((rows - cy) / 20) ** 2 + ((cols - cx) / 15) ** 2 <= 1, 24 + int(rng.integers(0, 8)))
    kept = set(np.unique(pred).tolist())
    pred_info = [{"id": s, "category_id": v["category_id"]} for s, v in segments.items() if s in kept]
    return gt, gt_info, pred, pred_info


def generate(root: Path, images: int) -> Path:
    if (root / "DONE").is_file():
        return root
    from PIL import Image

    for side in ("gt", "pred"):
        (root / side).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(28)
    gt_anns, pred_anns, n_segments = [], [], 0
    for index in range(images):
        gt, gt_info, pred, pred_info = scene(rng)
        name = f"city_{index:06d}"
        Image.fromarray(rgb(gt), "RGB").save(root / "gt" / f"{name}_gtFine_panoptic.png")
        Image.fromarray(rgb(pred), "RGB").save(root / "pred" / f"{name}_leftImg8bit.png")
        # integer ids: hotcoco 1.3 refuses Cityscapes' string ids ("frankfurt_000000_000294")
        gt_anns.append({"image_id": index + 1, "file_name": f"{name}_gtFine_panoptic.png",
                        "segments_info": gt_info})
        pred_anns.append({"image_id": index + 1, "file_name": f"{name}_leftImg8bit.png",
                          "segments_info": pred_info})
        n_segments += len(gt_info)
    (root / "gt.json").write_text(json.dumps({"annotations": gt_anns, "categories": CATEGORIES}))
    (root / "pred.json").write_text(json.dumps({"annotations": pred_anns}))
    (root / "DONE").write_text(f"{n_segments / images:.1f} GT segments an image\n")
    return root


PANOPTICAPI = """
import contextlib, io, json, sys
sys.path.insert(0, {tests!r})
from panopticapi_reference import pq_compute
with contextlib.redirect_stdout(io.StringIO()):
    r = pq_compute({gt_json!r}, {pred_json!r}, {gt_dir!r}, {pred_dir!r}, processes=2)
print(json.dumps({{k: r[k] for k in ("All", "Things", "Stuff")}}))
"""

DECODE = """
import sys
from pathlib import Path
import numpy as np
from PIL import Image
for folder in sys.argv[1:]:
    for path in sorted(Path(folder).iterdir()):
        with Image.open(path) as image:
            np.asarray(image)
"""

HOTCOCO = """
import contextlib, io, json
from hotcoco import panoptic
with contextlib.redirect_stdout(io.StringIO()):
    r = panoptic.pq_compute({gt_json!r}, {pred_json!r}, {gt_dir!r}, {pred_dir!r})
print(json.dumps({{k: r[k] for k in ("All", "Things", "Stuff")}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = generate(DATA / f"panoptic-{args.images}", args.images)
    py, n = sys.executable, args.images
    files = {"gt_json": str(root / "gt.json"), "pred_json": str(root / "pred.json"),
             "gt_dir": str(root / "gt"), "pred_dir": str(root / "pred")}
    command = rpx_command() + ["eval", "panoptic", "--gt-json", files["gt_json"], "--gt-dir",
                               files["gt_dir"], "--pred-json", files["pred_json"], "--pred-dir",
                               files["pred_dir"], "--quiet"]
    runs = DigestRuns("panoptic", predictions=[root / "pred"], ground_truth=[root / "gt"])
    checks = runs.warm(command + ["--jobs", "2"], expect_reused=n)
    load_before = load()
    commands = {
        "decode": lambda: [py, "-c", DECODE, files["gt_dir"], files["pred_dir"]],
        "panopticapi": lambda: [py, "-c", PANOPTICAPI.format(tests=str(TESTS), **files)],
        "hotcoco": lambda: [py, "-c", HOTCOCO.format(**files)],
    }
    for jobs in (2, 1):
        for mode, extra in (("first", runs.first), ("rerun", runs.rerun)):
            commands[f"rpx {jobs} {mode}"] = (lambda jobs=jobs, extra=extra:
                                              command + ["--jobs", str(jobs), *extra()])
    timings = measure(commands, repeat=args.repeat, capture=True)
    runs.cleanup()
    t = {name: timing.median for name, timing in timings.items()}
    timings["decode"].stdout = "{}"
    results = {"panopticapi": json.loads(timings["panopticapi"].stdout),
               "hotcoco": json.loads(timings["hotcoco"].stdout)}
    report = json.loads(timings["rpx 2 first"].stdout)["dataset"]
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"{n} images of {W}x{H} RGB id PNGs, {(root / 'DONE').read_text().strip()}, "
          f"{len(CATEGORIES)} categories; median of {args.repeat}, round-robin; digests {checks}")
    print(spread_line(timings))
    print()
    print("| split | panopticapi PQ / SQ / RQ | hotcoco | rpx |")
    print("|---|---|---|---|")
    for name, suffix in (("All", ""), ("Things", "_things"), ("Stuff", "_stuff")):
        cells = [" / ".join(f"{results[tool][name][k]:.6f}" for k in ("pq", "sq", "rq"))
                 for tool in ("panopticapi", "hotcoco")]
        mine = " / ".join(f"{report[f'{k}{suffix}']:.6f}" for k in ("pq", "sq", "rq"))
        print(f"| {name} | {cells[0]} | {cells[1]} | {mine} |")
    print()
    base = t["panopticapi"]
    print("| command | wall s | ms / image | vs panopticapi (2 processes) |")
    print("|---|---:|---:|---:|")
    print(f"| floor: decode the {2 * n} PNGs with Pillow, one process | {t['decode']:.2f} | "
          f"{t['decode'] / n * 1e3:.1f} | {base / t['decode']:.2f}x |")
    print(f"| panopticapi `pq_compute`, 2 processes | {base:.2f} | {base / n * 1e3:.1f} | 1.00x |")
    print(f"| hotcoco 1.3 `panoptic.pq_compute` (Rust, threads) | {t['hotcoco']:.2f} | "
          f"{t['hotcoco'] / n * 1e3:.1f} | {base / t['hotcoco']:.2f}x faster |")
    for jobs in (2, 1):
        for mode in ("first", "rerun"):
            value = t[f"rpx {jobs} {mode}"]
            goal = f", {verdict(base / value, 3.0, at_most=False)}" if jobs == 2 else ""
            print(f"| `rpx eval panoptic --jobs {jobs}`, {mode.replace('rerun', 're-run')} | "
                  f"{value:.2f} | {value / n * 1e3:.1f} | {base / value:.2f}x faster{goal} |")


if __name__ == "__main__":
    main()
