"""Reading labelling formats is never the bottleneck: 5,000 YOLO files and 5,000 VOC XML
files read (into the objects every view computes on) against the same objects read from
one COCO GT file and one results file.

    PYTHONPATH=. python benchmarks/formats.py [N]

Prints seconds per reader (best of 3) and the ratio to COCO; RESULTS.md records a run."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rpx_cli.io.memory import MemoryBuffer
from rpx_cli.params import resolve
from rpx_cli.tasks.registry import get_task
from tests import format_data as fd


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(n: int = 5000) -> None:
    task = get_task("detection")
    images = fd.dataset(0, n=n)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        yolo_p, yolo_g = fd.write_yolo(images, root / "yp", "pred"), fd.write_yolo(images, root / "yg", "gt")
        voc_p, voc_g = fd.write_voc(images, root / "vp", "pred"), fd.write_voc(images, root / "vg", "gt")
        gt_file, dt_file = fd.write_coco(images, root / "coco")
        names = fd.write_data_yaml(root / "data.yaml")

        def folder(pred, gt, fmt, **extra):
            params = task.settle_inputs(resolve(task, {"pred_format": fmt, "gt_format": fmt,
                                                      **extra}), {"pred": None, "gt": None})
            files = [(p, "pred") for p in sorted(pred.iterdir())] + [(g, "gt") for g in sorted(gt.iterdir())]

            def read():
                for path, role in files:
                    task.read(str(path), MemoryBuffer(path.read_bytes()), params, lambda *_: None, role=role)
            return read

        def coco():
            params = resolve(task, {})
            task.read_files({"coco_gt": str(gt_file), "coco_dt": str(dt_file)}, params)

        base = best(coco)
        yolo = best(folder(yolo_p, yolo_g, "yolo", data_yaml=str(names), image_size=(512, 512)))
        voc = best(folder(voc_p, voc_g, "voc"))
        objects = sum(len(i.gt) + len(i.pred) for i in images)
        print(f"{n} images, {objects} objects")
        print(f"COCO files: {base:.3f} s")
        print(f"YOLO files: {yolo:.3f} s ({yolo / base:.2f}x)")
        print(f"VOC XML:    {voc:.3f} s ({voc / base:.2f}x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
