"""Reading labelling formats is never the bottleneck: N images (5,000 by default) written as
YOLO files, VOC XML files and a CVAT XML + VOC results files, against the same objects in
one COCO GT file and one results file.

    PYTHONPATH=. python benchmarks/formats.py [N] [REPEATS]

Two figures per format, each the best of REPEATS runs taken in turn (the machine is
shared: CPU seconds of this process are steadier than wall seconds, both are printed):

- *reading*: the inputs into the table every view computes on — COCO files by
  ``read_files``; folders by the plan (format sniffing, pairing by stem) and
  ``read_pairs`` (every pair at once);
- *whole run*: ``rpx eval detection`` through the Python API with ``--jobs 1`` and no
  digest cache (reading, every view — rows, pooled, confusion, COCO —, the report), and
  the wall time with the default ``--jobs``.

The ratio to COCO's figure follows each; RESULTS.md records a run."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rpx_cli.params import resolve
from rpx_cli.run.evaluate import run_evaluation
from rpx_cli.run.files import run_file_evaluation
from rpx_cli.run.options import RunOptions
from rpx_cli.run.plan import plan
from rpx_cli.tasks.registry import get_task
from tests import format_data as fd


def best(fn, repeat: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of the fastest of ``repeat`` calls."""
    cpu = wall = float("inf")
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu, wall = min(cpu, time.process_time() - c), min(wall, time.perf_counter() - w)
    return cpu, wall


def main(n: int = 5000, repeat: int = 5) -> None:
    task = get_task("detection")
    images = fd.dataset(0, n=n)
    for i, image in enumerate(images):  # stems in the COCO files' image order
        image.stem = f"img{i:06d}"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        yaml = fd.write_data_yaml(root / "data.yaml")
        gt_file, dt_file = fd.write_coco(images, root / "coco")
        folders = {
            "YOLO": (fd.write_yolo(images, root / "yp", "pred"), fd.write_yolo(images, root / "yg", "gt"),
                     {"data_yaml": str(yaml), "image_size": (512, 512)}),
            "VOC XML": (fd.write_voc(images, root / "vp", "pred"), fd.write_voc(images, root / "vg", "gt"),
                        {}),
            "VOC results + CVAT": (fd.write_voc_results(fd.by_class(images), root / "results"),
                                   fd.write_cvat(images, root / "cvat.xml", "gt"), {}),
        }
        one = RunOptions(jobs=1, digest_cache=False)
        default = RunOptions(digest_cache=False)
        files = {"coco_gt": str(gt_file), "coco_dt": str(dt_file)}

        def coco_read():
            task.read_files(files, resolve(task, {}))

        def folder_read(pred, gt, params):
            def read():
                planned = plan("detection", pred, gt, **params)
                task.read_pairs(planned.pairs, planned.params)
            return read

        runs = {"COCO files": (coco_read,
                               lambda: run_file_evaluation("detection", files, {}, one),
                               lambda: run_file_evaluation("detection", files, {}, default))}
        for name, (pred, gt, params) in folders.items():
            runs[name] = (folder_read(str(pred), str(gt), params),
                          lambda p=pred, g=gt, o=params: run_evaluation("detection", str(p), str(g), o, one),
                          lambda p=pred, g=gt, o=params: run_evaluation("detection", str(p), str(g), o,
                                                                        default))
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for stage in range(3):
            for name, stages in runs.items():
                figures[name].append(best(stages[stage], repeat))
        objects = sum(len(i.gt) + len(i.pred) for i in images)
        print(f"{n} images, {objects} objects; best of {repeat}, CPU s (wall s)")
        print(f"{'':20} {'reading':>22} {'whole run, --jobs 1':>26} {'whole run, default':>20}")
        base = figures["COCO files"]
        for name, (read, whole, auto) in figures.items():
            print(f"{name:20} {read[0]:6.3f} ({read[1]:5.2f}) {read[0] / base[0][0]:5.2f}x  "
                  f"{whole[0]:6.3f} ({whole[1]:5.2f}) {whole[0] / base[1][0]:5.2f}x  "
                  f"wall {auto[1]:5.2f} {auto[1] / base[2][1]:5.2f}x")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
