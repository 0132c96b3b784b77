"""``rpx report`` on a COCO-scale detection report, against ``rpx show`` on the same file.

Generates (once) a COCO-style set with 5,000 images and 80 classes (~15 GT and 60 scored
detections per image), evaluates it with every view and the TIDE breakdown, then times in
fresh processes (median of ``--repeat``): ``rpx show REPORT`` (terminal tables, to a pipe),
``rpx report REPORT -o page.html``, and the evaluation with and without ``--metrics ...,errors``.
Prints the page size. Targets: ``rpx report`` under 2x ``rpx show``; the page under 2 MB.

Then the worst frames drawn on their images (issue 32): the same evaluation with
``--images-dir`` (one photo-like 640x480 JPEG per image, 24 distinct pictures linked round
robin, so the folder costs no disk) and ``--html``: the evaluation's time against the
plain one, the report's and the page's sizes (target: the page under 5 MB).

Usage: python benchmarks/report.py [--images 5000] [--classes 80] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, machine, rpx_command, timed_run


def generate(root: Path, n_images: int, n_classes: int) -> Path:
    if (root / "DONE").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    images, anns, dets = [], [], []
    for image_id in range(1, n_images + 1):
        images.append({"id": image_id, "file_name": f"img{image_id:06d}.jpg", "width": 640, "height": 480})
        mine = []
        for _ in range(int(rng.integers(10, 21))):
            k = int(rng.integers(n_classes))
            x, y = rng.uniform(0, 560, 2)
            w, h = rng.uniform(8, 200, 2)
            box = [round(float(v), 2) for v in (x, y, w, h)]
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": k + 1, "bbox": box,
                         "area": round(box[2] * box[3], 2), "iscrowd": 0})
            for _ in range(int(rng.integers(1, 4))):
                j = rng.normal(0, 0.12, 4) * [w, h, w, h]
                label = k if rng.random() < 0.85 else int(rng.integers(n_classes))  # some wrong classes
                d = [round(float(v), 2) for v in (x + j[0], y + j[1], max(2, w + j[2]), max(2, h + j[3]))]
                mine.append({"image_id": image_id, "category_id": label + 1, "bbox": d,
                             "score": round(float(rng.uniform(0.05, 1)), 3)})
        while len(mine) < 60:
            x, y = rng.uniform(0, 560, 2)
            w, h = rng.uniform(8, 200, 2)
            mine.append({"image_id": image_id, "category_id": int(rng.integers(n_classes)) + 1,
                         "bbox": [round(float(v), 2) for v in (x, y, w, h)],
                         "score": round(float(rng.uniform(0.01, 0.6)), 3)})
        dets.extend(mine)
    (root / "instances.json").write_text(json.dumps({"images": images, "annotations": anns, "categories": [
        {"id": k + 1, "name": f"category_{k:02d}"} for k in range(n_classes)]}))
    (root / "results.json").write_text(json.dumps(dets))
    (root / "DONE").write_text(f"{len(anns)} gt, {len(dets)} detections\n")
    return root


def photos(root: Path, n_images: int) -> Path:
    """``img<id>.jpg`` for every image: 24 distinct photo-like pictures (gradients, blocks,
    a little noise: about what a camera frame compresses to), the rest symbolic links."""
    from PIL import Image, ImageDraw

    folder = root / "images"
    if (folder / "DONE").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[0:480, 0:640]
    for k in range(24):
        rgb = np.stack([(xx * (100 + 5 * k) // 640 + 20 * k) % 255, (yy * 150 // 480 + 9 * k) % 255,
                        120 + 30 * np.sin(xx / (20.0 + k))], axis=-1) + rng.normal(0, 6, (480, 640, 3))
        picture = Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8))
        draw = ImageDraw.Draw(picture)
        for _ in range(12):
            x, y = int(rng.integers(0, 600)), int(rng.integers(0, 440))
            draw.ellipse([x, y, x + int(rng.integers(20, 160)), y + int(rng.integers(20, 120))],
                         fill=tuple(int(v) for v in rng.integers(0, 255, 3)))
        picture.save(folder / f"photo{k:02d}.jpg", quality=90)
    for image_id in range(1, n_images + 1):
        link = folder / f"img{image_id:06d}.jpg"
        if not link.exists():
            link.symlink_to(folder / f"photo{image_id % 24:02d}.jpg")
    (folder / "DONE").write_text("ok\n")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--classes", type=int, default=80)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = generate(DATA / f"report-{args.images}-{args.classes}", args.images, args.classes)
    rpx = rpx_command()
    files = ["--coco-gt", str(root / "instances.json"), "--coco-dt", str(root / "results.json")]
    report, page = root / "report.json", root / "report.html"
    every = ["eval", "detection", *files, "-q"]
    with_errors = timed_run([*rpx, *every, "--metrics", "rows,pooled,confusion,coco,errors",
                             "-o", str(report)], repeat=max(1, args.repeat // 2))
    without = timed_run([*rpx, *every, "-o", str(root / "plain.json")], repeat=max(1, args.repeat // 2))
    show = timed_run([*rpx, "show", str(report)], repeat=args.repeat)
    html = timed_run([*rpx, "report", str(report), "-o", str(page)], repeat=args.repeat)
    print(f"machine: {machine()}")
    print(f"data: {(root / 'DONE').read_text().strip()}, {args.images} images, {args.classes} classes")
    print(f"report JSON: {report.stat().st_size / 1e6:.2f} MB (5,000 rows)")
    print(f"eval, every default view:        {without:.2f} s")
    print(f"eval, every view + errors (TIDE): {with_errors:.2f} s")
    print(f"rpx show report.json:            {show:.3f} s")
    print(f"rpx report report.json:          {html:.3f} s  ({html / show:.2f}x show; target < 2x)")
    print(f"page: {page.stat().st_size / 1e6:.2f} MB (target < 2 MB)")
    images = photos(root, args.images)
    pictured, pictured_page = root / "report-images.json", root / "report-images.html"
    with_images = timed_run([*rpx, *every, "--images-dir", str(images), "--html", str(pictured_page),
                             "-o", str(pictured)], repeat=max(1, args.repeat // 2))
    frames = json.loads(pictured.read_text())["worst_frames"]["frames"]
    embedded = sum(len(f["image"]["data"]) for f in frames if f.get("image"))
    print(f"eval + --images-dir + --html:    {with_images:.2f} s  "
          f"({with_images / without:.2f}x the plain eval)")
    print(f"  {len(frames)} worst frames, {embedded / 1e3:.0f} kB of embedded images; report JSON "
          f"{pictured.stat().st_size / 1e6:.2f} MB, page {pictured_page.stat().st_size / 1e6:.2f} MB "
          "(target < 5 MB)")


if __name__ == "__main__":
    main()
