"""COCO masks' work started early (``--iou-type segm --coco-gt/--coco-dt`` on the native
core): the results file's RLE strings checked by the reader's thread while the GT file is read
(``io/coco_columns.py: mask_totals``, kept as ``PackedRles.totals``), and the GT's masks made
(``start_masks``: the polygons rasterised in a thread) while the results' dicts are built
(``load_coco``'s ``prepare_gt``, ``CocoFiles.gt_prepared``). Both give what the steps made in turn give, and
their errors come out where those steps would have raised them: a bad results file before a
bad GT mask, as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT

from rpx_cli import native
from rpx_cli.io.coco_files import load_coco
from rpx_cli.io.coco_objects import MASK_FIELD
from rpx_cli.ops import masks
from rpx_cli.tasks.detection.instances import mask_areas, prepare_masks, start_masks

pytestmark = pytest.mark.skipif(native.core() is None, reason="the early steps run on the native core")

H, W = 12, 10


def polygon(rng: np.random.Generator) -> list[list[float]]:
    x, y = rng.uniform(0, W, 3), rng.uniform(0, H, 3)
    return [[float(v) for pair in zip(x, y, strict=True) for v in pair]]


def rle(rng: np.random.Generator) -> dict:
    cuts = np.sort(rng.choice(H * W, size=4, replace=False))
    runs = np.diff(np.concatenate([[0], cuts, [H * W]])).tolist()
    made = masks.compressed([{"size": [H, W], "counts": runs}], np.array([[H, W]], np.int64))
    return {"size": [H, W], "counts": made[0]["counts"].decode()}


def write(tmp_path: Path, n_images: int = 6, seed: int = 0) -> tuple[str, str]:
    rng = np.random.default_rng(seed)
    images = [{"id": i + 1, "file_name": f"{i}.jpg", "height": H, "width": W} for i in range(n_images)]
    anns, results = [], []
    for i in range(n_images):
        for _ in range(3):
            crowd = len(anns) % 5 == 4  # crowd regions as uncompressed RLEs (COCO's own form)
            seg = {"size": [H, W], "counts": [5, 7, H * W - 12]} if crowd else polygon(rng)
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": 1 + len(anns) % 2,
                         "iscrowd": int(crowd), "area": 9.0, "bbox": [0, 0, 3, 3], "segmentation": seg})
        for _ in range(4):
            results.append({"image_id": i + 1, "category_id": 1 + len(results) % 2,
                            "score": float(rng.uniform()), "segmentation": rle(rng)})
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps({"images": images, "annotations": anns,
                              "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}))
    dt = tmp_path / "dt.json"
    dt.write_text(json.dumps(results))
    return str(gt), str(dt)


def test_the_results_strings_checked_while_reading_are_the_checks_own(tmp_path: Path) -> None:
    gt, dt = write(tmp_path)
    coco = load_coco(gt, dt, shape_field=MASK_FIELD)
    shape = coco.pred.shape
    assert shape.totals is not None  # checked by the reader's thread
    fresh = masks.totals(list(shape))
    for kept, made in zip(shape.totals, fresh, strict=True):
        assert kept.tolist() == made.tolist()
    area, total, ok = shape.totals
    assert ok.all() and (total == H * W).all() and (area > 0).all()
    # and what prepare_masks makes of them: the areas kept beside the dicts, as the dicts say
    out, areas = prepare_masks(shape, coco.pred_size, dt, "detection")
    assert out.areas is not None and mask_areas(out) is out.areas
    assert out.areas.tolist() == areas.tolist() == [r["area"] for r in out] == area.tolist()


def test_the_gt_masks_made_in_a_thread_equal_those_made_in_turn(tmp_path: Path) -> None:
    gt, dt = write(tmp_path, seed=3)
    early = load_coco(gt, dt, shape_field=MASK_FIELD,
                      prepare_gt=partial(start_masks, what="annotation", background=True))
    in_turn = load_coco(gt, dt, shape_field=MASK_FIELD)
    assert in_turn.gt_prepared is None
    shapes, area = early.gt_prepared()
    want, want_area = prepare_masks(in_turn.gt.shape, in_turn.gt_size, gt, "annotation")
    assert list(shapes) == list(want) and area.tolist() == want_area.tolist()
    assert mask_areas(shapes).tolist() == [r["area"] for r in want]


def rpx(args: list[str], cwd: Path, kernels: str = "1") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RPX_NATIVE": kernels, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "rpx_cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


ARGS = ["eval", "detection", "--iou-type", "segm", "--coco-gt", "gt.json", "--coco-dt", "dt.json",
        "-o", "out.json"]


def break_gt_polygon(tmp_path: Path) -> None:
    document = json.loads((tmp_path / "gt.json").read_text())
    document["annotations"][1]["segmentation"] = [[1e8, 1.0, 5.0, 1.0, 5.0, 5.0]]
    (tmp_path / "gt.json").write_text(json.dumps(document))


def test_a_bad_gt_mask_is_the_error_it_was_naming_the_annotation(tmp_path: Path) -> None:
    write(tmp_path)
    break_gt_polygon(tmp_path)
    native_run, numpy_run = rpx(ARGS, tmp_path), rpx(ARGS, tmp_path, "0")
    assert native_run.returncode == 1, native_run.stderr
    assert "annotation 1: polygon 0" in native_run.stderr and "gt.json" in native_run.stderr
    assert "Traceback" not in native_run.stderr
    assert native_run.stderr == numpy_run.stderr  # (the numpy path makes it in turn)
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("broken", ["not a list", "a malformed RLE"])
def test_a_bad_results_file_and_a_bad_gt_mask_give_the_error_they_gave(tmp_path: Path, broken: str) -> None:
    """The order is the steps' own: a results file that cannot be read fails its read,
    before any mask is made; a malformed RLE is found when the masks are checked, the GT's
    first."""
    write(tmp_path)
    break_gt_polygon(tmp_path)
    if broken == "not a list":
        (tmp_path / "dt.json").write_text(json.dumps({"image_id": 1}))
        words = "a COCO results file is a list"
    else:
        results = json.loads((tmp_path / "dt.json").read_text())
        results[2]["segmentation"]["counts"] = "d0X1F:"  # runs 20, 40, -10, 50
        (tmp_path / "dt.json").write_text(json.dumps(results))
        words = "annotation 1: polygon 0"
    native_run, numpy_run = rpx(ARGS, tmp_path), rpx(ARGS, tmp_path, "0")
    assert native_run.returncode == 1, native_run.stderr
    assert words in native_run.stderr, native_run.stderr
    assert native_run.stderr == numpy_run.stderr
    assert not (tmp_path / "out.json").exists()
