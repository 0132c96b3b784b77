"""``--protocol voc07|voc|ultralytics|openimages`` against rpx's COCO view and the references.

On the 5,000-image COCO set of ``benchmarks/detection.py`` (10 classes, ~15 GT and 60
detections per image, COCO files), each in a fresh process, median of ``--repeat``:

- rpx ``--metrics coco`` (the COCO view) and ``--protocol P --metrics P`` for each protocol
  (the target: within 1.3x of the COCO view), and each protocol's default run;
- the references on the same boxes, reading the same COCO files: the devkit's ``voc_eval``
  (tests/voc_reference.py, line for line as detectron2 ships it: one call per class and
  threshold, 11-point; detectron2 calls it 10 times per class, we time the IoU 0.5 call
  only, as py-faster-rcnn does) — the "VOC devkit loop" to beat; and hotcoco 1.3.0's Open
  Images mode (``COCOeval(oid_style=True)``, a flat hierarchy, ``params.expand_dt``: what
  ``--protocol openimages`` equals), reading the same files, in a fresh process.

Usage: python benchmarks/protocols.py [--images 5000] [--repeat 3] [--only openimages]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, load, machine, rpx_command
from detection import generate

ROOT = Path(__file__).resolve().parent.parent

DEVKIT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[3])
    from tests.voc_reference import voc_eval
    gt, dt = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
    names = {c["id"]: c["name"] for c in gt["categories"]}
    recs = {i["id"]: [] for i in gt["images"]}
    for a in gt["annotations"]:
        x, y, w, h = a["bbox"]
        recs[a["image_id"]].append({"name": names[a["category_id"]], "difficult": 0,
                                    "bbox": [x + 1, y + 1, x + w, y + h]})
    lines = {}
    for d in dt:
        x, y, w, h = d["bbox"]
        lines.setdefault(names[d["category_id"]], []).append(
            f"{d['image_id']} {d['score']} {x + 1} {y + 1} {x + w} {y + h}")
    recs = {str(k): v for k, v in recs.items()}
    aps = [voc_eval(lines[n], recs, list(recs), n, 0.5, True)[2] for n in names.values()]
    print(sum(aps) / len(aps))
""")


HOTCOCO = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("ignore")
    import hotcoco
    gt = hotcoco.COCO(sys.argv[1])
    dt = gt.load_res(sys.argv[2])
    ev = hotcoco.COCOeval(gt, dt, "bbox", oid_style=True,
                          hierarchy=hotcoco.Hierarchy.from_parent_map({}))
    ev.params.expand_dt = True
    ev.evaluate(); ev.accumulate(); ev.summarize()
    print(ev.get_results()["AP"], file=sys.stderr)
""")


def timed(argv: list[str], repeat: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
        out = done.stdout
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("voc07", "voc", "ultralytics", "openimages"))
    args = parser.parse_args()
    root = generate(DATA / f"detection-{args.images}", args.images)
    files = ["--coco-gt", str(root / "instances.json"), "--coco-dt", str(root / "results.json")]
    rpx = [*rpx_command(), "eval", "detection", *files, "--no-rows", "--quiet", "-o", "/dev/null"]
    print(f"# {machine()}; {load()}; {args.images} images, median of {args.repeat}")
    coco, _ = timed([*rpx, "--metrics", "coco"], args.repeat)
    print(f"rpx COCO view (--metrics coco): {coco:.2f} s")
    for protocol in (args.only,) if args.only else ("voc07", "voc", "ultralytics", "openimages"):
        own, _ = timed([*rpx, "--protocol", protocol, "--metrics", protocol], args.repeat)
        full, _ = timed([*rpx, "--protocol", protocol], args.repeat)
        print(f"rpx --protocol {protocol} --metrics {protocol}: {own:.2f} s ({own / coco:.2f}x the "
              f"COCO view); default families: {full:.2f} s")
    if args.only in (None, "openimages"):
        oid, _ = timed([sys.executable, "-c", HOTCOCO, str(root / "instances.json"),
                        str(root / "results.json")], args.repeat)
        ours, _ = timed([*rpx, "--protocol", "openimages", "--metrics", "openimages"], args.repeat)
        print(f"hotcoco oid_style (read, evaluate, accumulate): {oid:.2f} s; rpx --protocol "
              f"openimages --metrics openimages: {ours:.2f} s = {oid / ours:.2f}x hotcoco's speed")
    if args.only is not None:
        return
    devkit, out = timed([sys.executable, "-c", DEVKIT, str(root / "instances.json"),
                         str(root / "results.json"), str(ROOT)], 1)
    voc07, _ = timed([*rpx, "--protocol", "voc07", "--metrics", "voc07"], 1)
    print(f"devkit voc_eval loop (IoU 0.5, 11-point; mAP {float(out):.6f}): {devkit:.2f} s; "
          f"rpx voc07 (IoU .50:.95): {voc07:.2f} s = {devkit / voc07:.1f}x faster")


if __name__ == "__main__":
    main()
