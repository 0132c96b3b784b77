"""Issue 39's mask items, on both paths (the native core and ``RPX_NATIVE=0``), each through the
real CLI in a child process with a timeout: what crashed the process, hung it deaf to SIGTERM,
or read counts modulo 2^32 is one input error naming the file and the object.

1. a polygon coordinate of 1e8 (SIGSEGV in pycocotools' rasteriser) or a polygon whose outline
   is huge (1.2 GB for a 117-byte file): refused by the bounds of ``ops/polygon_raster.py``;
2. ``"d0X1F:"`` — runs 20, 40, -10, 50: a 10×10 mask by its 32-bit sum, and a run walk that
   never ends in pycocotools: every run is decoded in 64 bits and checked first (per-stem files,
   COCO files, ``Evaluator.report()``, ``rpx merge`` of a part);
3. counts of 2^32 and more, and images of 2^31 pixels or more: refused with the bound.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT

pytestmark = pytest.mark.slow

PATHS = pytest.mark.parametrize("kernels", ["native", "numpy"])
TIMEOUT_S = 60
MEMORY_MB = 1024
SANITIZED = "asan" in os.environ.get("LD_PRELOAD", "")  # the sanitizer run: no address cap


def child(args: list[str], cwd: Path, kernels: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200",
           "RPX_NATIVE": "0" if kernels == "numpy" else "1"}

    def cap() -> None:
        if not SANITIZED:
            limit = MEMORY_MB << 20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.Popen([sys.executable, "-m", "rpx_cli", *args], cwd=cwd, env=env,
                            preexec_fn=cap, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen, timeout: float = TIMEOUT_S) -> tuple[int, str]:
    try:
        _, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, stderr


def refused(args: list[str], cwd: Path, kernels: str, *words: str) -> str:
    code, stderr = finish(child(args, cwd, kernels))
    assert code == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) <= 2, stderr
    for word in words:
        assert word in lines[0], stderr
    return stderr


def skip_without(kernels: str) -> None:
    """The child runs ``kernels`` whatever this process's RPX_NATIVE: skip where it cannot."""
    if kernels == "native":
        pytest.importorskip("rpx_cli._native", reason="no native core here")
    else:
        pytest.importorskip("pycocotools")


def coco_files(tmp_path: Path, results: list, *, h: int = 10, w: int = 10,
               gt_segmentation=None) -> list[str]:
    gt = {"images": [{"id": 1, "file_name": "a.jpg", "height": h, "width": w}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 16.0,
                           "bbox": [1, 1, 4, 4],
                           "segmentation": gt_segmentation or [[1, 1, 5, 1, 5, 5, 1, 5]]}],
          "categories": [{"id": 1, "name": "x"}]}
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    return ["eval", "detection", "--iou-type", "segm", "--coco-gt", "gt.json", "--coco-dt", "dt.json",
            "-o", "out.json"]


def result(segmentation, score: float = 0.9) -> dict:
    return {"image_id": 1, "category_id": 1, "score": score, "segmentation": segmentation}


# --- 1. polygons ------------------------------------------------------------------------------

@PATHS
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("coordinate", [1e8, 1e12, -3e9])
def test_a_polygon_far_outside_the_image_is_refused(tmp_path: Path, kernels: str, jobs: str,
                                                    coordinate: float) -> None:
    skip_without(kernels)
    args = coco_files(tmp_path, [result([[10, 10, coordinate, 10, 50, 50]])])
    refused([*args, "--jobs", jobs], tmp_path, kernels, "dt.json", "detection 0: polygon 0",
            "outside the 10×10 image")
    assert not (tmp_path / "out.json").exists()


@PATHS
def test_a_polygon_in_a_per_stem_file_is_refused_naming_file_and_object(tmp_path: Path, kernels: str) -> None:
    skip_without(kernels)
    for side in ("gt", "pred"):
        (tmp_path / side).mkdir()
    polygon = [[1, 1, 5, 1, 5, 5]]
    (tmp_path / "gt" / "a.json").write_text(json.dumps(
        {"size": [10, 10], "objects": [{"label": "x", "segmentation": polygon}]}))
    (tmp_path / "pred" / "a.json").write_text(json.dumps(
        {"size": [10, 10], "objects": [{"label": "x", "score": 0.5, "segmentation": polygon},
                                       {"label": "x", "score": 0.5,
                                        "segmentation": [polygon[0], [0, 0, 1e8, 0, 3, 3]]}]}))
    refused(["eval", "detection", "--iou-type", "segm", "--pred-dir", "pred", "--gt-dir", "gt"],
            tmp_path, kernels, "a.json", "object 1: polygon 1")


@PATHS
def test_a_polygon_whose_outline_is_huge_is_refused_before_any_memory_is_taken(tmp_path: Path,
                                                                             kernels: str) -> None:
    """117 bytes that made pycocotools take 1.2 GB: coordinates within the bounds but an
    outline of ~10^9 steps is refused as well (here: far outside the image first)."""
    skip_without(kernels)
    args = coco_files(tmp_path, [result([[0, 0, 3e7, 9, 0, 9, 3e7, 0]])], h=10, w=10)
    refused(args, tmp_path, kernels, "dt.json", "detection 0: polygon 0")
    # inside the bounds (x within 4 widths of a 1000-wide image) but 400 spikes across it
    spikes = [v for i in range(400) for v in ((4900.0, i * 2.0) if i % 2 else (-3900.0, i * 2.0))]
    args = coco_files(tmp_path, [result([spikes])], h=1000, w=1000)
    refused(args, tmp_path, kernels, "dt.json", "detection 0: polygon 0", "steps of 1/5 pixel")


@PATHS
def test_polygons_near_the_image_still_score(tmp_path: Path, kernels: str) -> None:
    """Vertices a little outside the image are rasterised (clipped) as pycocotools does."""
    skip_without(kernels)
    args = coco_files(tmp_path, [result([[-3, -2, 12, -2, 12, 4, -3, 4]], score=0.5),
                                 result([[1, 1, 5, 1, 5, 5, 1, 5]])])
    code, stderr = finish(child(args, tmp_path, kernels))
    assert code == 0, stderr
    assert json.loads((tmp_path / "out.json").read_text())["dataset"]["coco"]["AP"] == pytest.approx(1.0)


# --- 2. a negative run that sums right ------------------------------------------------------------

HANG = {"size": [10, 10], "counts": "d0X1F:"}


@PATHS
def test_a_negative_run_in_a_coco_results_file_is_refused(tmp_path: Path, kernels: str) -> None:
    skip_without(kernels)
    refused(coco_files(tmp_path, [result(HANG)]), tmp_path, kernels, "dt.json", "detection 0",
            "negative run")


@PATHS
def test_a_negative_run_in_the_gt_file_and_per_stem_files_is_refused(tmp_path: Path, kernels: str) -> None:
    skip_without(kernels)
    args = coco_files(tmp_path, [], gt_segmentation=HANG)
    refused(args, tmp_path, kernels, "gt.json", "annotation 0", "negative run")
    for side in ("gt", "pred"):
        (tmp_path / side).mkdir()
    square = {"size": [10, 10], "counts": ";4600000a1"}
    (tmp_path / "gt" / "a.json").write_text(json.dumps([{"label": "x", "segmentation": square}]))
    (tmp_path / "pred" / "a.json").write_text(json.dumps([{"label": "x", "score": 0.5,
                                                           "segmentation": HANG}]))
    refused(["eval", "detection", "--iou-type", "segm", "--pred-dir", "pred", "--gt-dir", "gt"],
            tmp_path, kernels, "a.json", "object 0", "negative run")


@PATHS
def test_a_negative_run_through_the_evaluator_is_refused(tmp_path: Path, kernels: str) -> None:
    skip_without(kernels)
    code = ("from rpx_cli import Evaluator\n"
            "from rpx_cli.errors import InputError\n"
            "ev = Evaluator('detection', iou_type='segm')\n"
            "gt = [{'label': 'x', 'segmentation': {'size': [10, 10], 'counts': ';4600000a1'}}]\n"
            "pred = [{'label': 'x', 'score': 0.5, 'segmentation': {'size': [10, 10], 'counts': 'd0X1F:'}}]\n"
            "try:\n"
            "    ev.update('a', pred, gt)\n"
            "    ev.report()\n"
            "except InputError as exc:\n"
            "    print('refused:', exc)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RPX_NATIVE": "0" if kernels == "numpy" else "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=TIMEOUT_S)
    assert "negative run" in done.stdout, done.stdout + done.stderr


@PATHS
def test_a_part_holding_a_negative_run_is_refused_by_merge(tmp_path: Path, kernels: str) -> None:
    """A ``--shard`` part whose mask was replaced (and its seal recomputed): ``rpx merge``
    decodes every mask it reads before intersecting any."""
    skip_without(kernels)
    from rpx_cli.run.part_key import part_seal

    for side in ("gt", "pred"):
        (tmp_path / side).mkdir()
    square = {"size": [10, 10], "counts": ";4600000a1"}  # a 4×4 square in a 10×10 image
    (tmp_path / "gt" / "a.json").write_text(json.dumps([{"label": "x", "segmentation": square}]))
    (tmp_path / "pred" / "a.json").write_text(json.dumps([{"label": "x", "score": 0.5,
                                                           "segmentation": square}]))
    args = ["eval", "detection", "--iou-type", "segm", "--pred-dir", "pred", "--gt-dir", "gt",
            "--shard", "1/1", "-o", "part.json"]
    code, stderr = finish(child(args, tmp_path, kernels))
    assert code == 0, stderr
    part = json.loads((tmp_path / "part.json").read_text())
    text = json.dumps(part["state"]["stats"])
    assert '";4600000a1"' in text
    part["state"]["stats"] = json.loads(text.replace('";4600000a1"', '"d0X1F:"'))
    part["state"]["seal"] = part_seal(part, parsed=True)
    (tmp_path / "part.json").write_text(json.dumps(part))
    refused(["merge", "part.json", "-o", "merged.json"], tmp_path, kernels, "part.json", "malformed")


# --- 3. counts past 32 bits ---------------------------------------------------------------------

@PATHS
def test_counts_of_2_to_the_32_are_not_read_modulo(tmp_path: Path, kernels: str) -> None:
    """Runs 0, 2^32 + 100 in a 10×10 image: pycocotools read them as a perfect mask."""
    skip_without(kernels)
    from rpx_cli.ops.rle import encode_values

    chars, lengths = encode_values(__import__("numpy").array([0, 2**32 + 100]))
    counts = b"".join(row[:n].tobytes() for row, n in zip(chars, lengths.tolist(), strict=True)).decode()
    refused(coco_files(tmp_path, [result({"size": [10, 10], "counts": counts})]), tmp_path, kernels,
            "dt.json", "detection 0", "counts sum to 4294967396")


@PATHS
def test_an_image_of_2_to_the_32_pixels_is_refused_with_the_bound(tmp_path: Path, kernels: str) -> None:
    """A perfect 65536×65536 mask scored AP 0; the image size in a COCO file was unbounded."""
    skip_without(kernels)
    args = coco_files(tmp_path, [result([[1, 1, 5, 1, 5, 5, 1, 5]])], h=65536, w=65536)
    refused(args, tmp_path, kernels, "gt.json", "annotation 0", "2147483647")


# --- SIGTERM --------------------------------------------------------------------------------------

@PATHS
def test_sigterm_is_obeyed_on_a_hostile_mask(tmp_path: Path, kernels: str) -> None:
    """The run that used to loop for ever inside C, deaf to SIGTERM: it ends by itself, and a
    SIGTERM sent at once is obeyed (exit within seconds either way)."""
    skip_without(kernels)
    args = coco_files(tmp_path, [result(HANG)] * 50)
    process = child(args, tmp_path, kernels)
    time.sleep(0.3)
    process.send_signal(signal.SIGTERM)
    start = time.monotonic()
    code, _ = finish(process, timeout=30)
    assert time.monotonic() - start < 30
    assert code in (1, 124, 128 + signal.SIGTERM, -signal.SIGTERM)
