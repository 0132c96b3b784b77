"""COCO masks' work started early (``--iou-type segm --coco-gt/--coco-dt`` on the native
core): the results file's RLE strings checked by the reader's thread while the GT file is read
(``io/coco_columns.py: mask_totals``, kept as ``PackedRles.totals``), and the GT's masks made
(``start_masks``: the polygons rasterised in a thread) while the results' dicts are built
(``load_coco``'s ``prepare_gt``, ``CocoFiles.gt_prepared``). Both give what the steps made in turn give, and
their errors come out where those steps would have raised them: a bad results file before a
bad GT mask, as before."""

from __future__ import annotations

import contextlib
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

native_only = pytest.mark.skipif(native.core() is None, reason="the early steps run on the native core")

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


@native_only
def test_the_results_strings_checked_while_reading_are_the_checks_own(tmp_path: Path) -> None:
    gt, dt = write(tmp_path)
    coco = load_coco(gt, dt, shape_field=MASK_FIELD)
    shape = coco.pred.shape
    assert shape.totals is not None  # checked by the reader's thread
    fresh = masks.totals(list(shape))
    for kept, made in zip(shape.totals.result(), fresh, strict=True):
        assert kept.tolist() == made.tolist()
    area, total, ok = shape.totals.result()
    assert ok.all() and (total == H * W).all() and (area > 0).all()
    # and what prepare_masks makes of them: the areas kept beside the dicts, as the dicts say
    out, areas = prepare_masks(shape, coco.pred_size, dt, "detection")
    assert out.areas is not None and mask_areas(out) is out.areas
    assert out.areas.tolist() == areas.tolist() == [r["area"] for r in out] == area.tolist()


@native_only
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


@native_only
def test_a_bad_gt_mask_is_the_error_it_was_naming_the_annotation(tmp_path: Path) -> None:
    write(tmp_path)
    break_gt_polygon(tmp_path)
    native_run, numpy_run = rpx(ARGS, tmp_path), rpx(ARGS, tmp_path, "0")
    assert native_run.returncode == 1, native_run.stderr
    assert "annotation 1: polygon 0" in native_run.stderr and "gt.json" in native_run.stderr
    assert "Traceback" not in native_run.stderr
    assert native_run.stderr == numpy_run.stderr  # (the numpy path makes it in turn)
    assert not (tmp_path / "out.json").exists()


@native_only
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


@pytest.mark.parametrize("counts", ["d0X1F:", "0<", "\x7f"], ids=["negative run", "short", "alphabet"])
def test_a_malformed_results_rle_is_worded_from_its_string_as_read(tmp_path: Path, counts: str) -> None:
    """A results RLE the reader's thread found malformed is worded from the reader's joined
    strings (its dict may never be made): the numpy path's message, byte for byte."""
    write(tmp_path)
    results = json.loads((tmp_path / "dt.json").read_text())
    results[5]["segmentation"]["counts"] = counts
    (tmp_path / "dt.json").write_text(json.dumps(results))
    native_run, numpy_run = rpx(ARGS, tmp_path), rpx(ARGS, tmp_path, "0")
    assert native_run.returncode == 1, native_run.stderr
    assert "detection 5: malformed RLE" in native_run.stderr, native_run.stderr
    assert native_run.stderr == numpy_run.stderr
    assert not (tmp_path / "out.json").exists()


# --- a masks GT read by the native scanner (io/coco_gt_columns.py: MaskColumns) -----------------

def mixed_gt(tmp_path: Path, seed: int, *, shuffle: bool = True) -> tuple[str, str]:
    """A masks GT of every form pycocotools writes — polygons of one or more parts (ints and
    floats), crowd regions as uncompressed RLEs, compressed RLEs (a backslash escaped in the
    JSON) — annotations in a shuffled order, and a results file."""
    rng = np.random.default_rng(seed)
    gt, dt = write(tmp_path, n_images=5, seed=seed)
    document = json.loads(Path(gt).read_text())
    for ann in document["annotations"]:
        form = rng.integers(0, 4)
        if form == 0:
            ann["segmentation"] = polygon(rng) + polygon(rng)
        elif form == 1:
            ann["segmentation"] = [[int(v) for v in np.round(polygon(rng)[0])]]
        elif form == 2:
            ann["segmentation"] = rle(rng)
    if shuffle:
        rng.shuffle(document["annotations"])
    Path(gt).write_text(json.dumps(document))
    return gt, dt


def made_both_ways(gt: str, dt: str) -> tuple:
    native_read = load_coco(gt, dt, shape_field=MASK_FIELD,
                            prepare_gt=partial(start_masks, what="annotation", background=True))
    python_read = load_coco(gt, dt, shape_field=MASK_FIELD)  # (the GT's objects, then made)
    return native_read, python_read


@native_only
@pytest.mark.parametrize("seed", range(8))
def test_a_masks_gt_read_into_columns_makes_the_masks_the_objects_make(tmp_path: Path, seed: int) -> None:
    gt, dt = mixed_gt(tmp_path, seed)
    native_read, python_read = made_both_ways(gt, dt)
    assert native_read.gt_prepared is not None
    assert all(shape is None for shape in native_read.gt.shape)  # (read into columns)
    shapes, area = native_read.gt_prepared()
    want, want_area = prepare_masks(python_read.gt.shape, python_read.gt_size, gt, "annotation")
    assert list(shapes) == list(want)
    assert area.tolist() == want_area.tolist() and mask_areas(shapes).tolist() == want_area.tolist()
    for column in ("frame", "label", "crowd", "ignore"):
        a, b = getattr(native_read.gt, column), getattr(python_read.gt, column)
        assert (a is None and b is None) or np.asarray(a).tolist() == np.asarray(b).tolist(), column
    given = np.asarray(python_read.gt.area)
    assert np.array_equal(np.asarray(native_read.gt.area), given, equal_nan=True)
    assert native_read.gt_size.tolist() == python_read.gt_size.tolist()
    assert native_read.zero_id.tolist() == python_read.zero_id.tolist()


@native_only
def test_an_escaped_character_in_a_gt_rle_string_is_read_as_json_says(tmp_path: Path) -> None:
    """COCO's alphabet holds the backslash: JSON writes it escaped."""
    gt, dt = write(tmp_path)
    document = json.loads(Path(gt).read_text())
    runs = [92 - 48, H * W - (92 - 48)]  # a first count of 44: the character "\\"
    made = masks.compressed([{"size": [H, W], "counts": runs}], np.array([[H, W]], np.int64))
    assert made[0]["counts"][:1] == b"\\"
    document["annotations"][0]["segmentation"] = {"size": [H, W], "counts": made[0]["counts"].decode()}
    Path(gt).write_text(json.dumps(document))
    native_read, python_read = made_both_ways(gt, dt)
    shapes, _ = native_read.gt_prepared()
    want, _ = prepare_masks(python_read.gt.shape, python_read.gt_size, gt, "annotation")
    assert list(shapes) == list(want) and shapes[0]["counts"] == made[0]["counts"]


GT_PROBLEMS = {
    # read-time problems: the scanner's columns decline, the Python path words them
    "negative run": lambda a: a.update(segmentation={"size": [H, W], "counts": [5, -1, H * W - 4]}),
    "runs not summing": lambda a: a.update(segmentation={"size": [H, W], "counts": [5, 7]}),
    "rows of 0s and 1s": lambda a: a.update(segmentation=[[0, 1, 1, 0, 1, 1, 0, 0]]),
    "an empty polygon list": lambda a: a.update(segmentation=[]),
    "five numbers": lambda a: a.update(segmentation=[[1, 1, 5, 1, 5]]),
    "a size of 0": lambda a: a.update(segmentation={"size": [0, W], "counts": "0"}),
    "a text coordinate": lambda a: a.update(segmentation=[[1, 1, 5, 1, 5, "5"]]),
    # problems found when the masks are made: the columns' path hands the objects over
    "a vertex far outside": lambda a: a.update(segmentation=[[1e8, 1.0, 5.0, 1.0, 5.0, 5.0]]),
    "an RLE of another size": lambda a: a.update(segmentation={"size": [H + 1, W], "counts": [H * W + W]}),
    "a malformed string": lambda a: a.update(segmentation={"size": [H, W], "counts": "d0X1F:"}),
}


@native_only
@pytest.mark.parametrize("problem", list(GT_PROBLEMS))
def test_a_bad_gt_mask_gives_the_error_of_the_python_path(tmp_path: Path, problem: str) -> None:
    write(tmp_path)
    document = json.loads((tmp_path / "gt.json").read_text())
    GT_PROBLEMS[problem](document["annotations"][4])
    (tmp_path / "gt.json").write_text(json.dumps(document))
    native_run, numpy_run = rpx(ARGS, tmp_path), rpx(ARGS, tmp_path, "0")
    assert native_run.returncode == numpy_run.returncode, native_run.stderr
    assert native_run.stderr == numpy_run.stderr
    if native_run.returncode:
        assert "gt.json" in native_run.stderr and "Traceback" not in native_run.stderr


@native_only
def test_a_polygon_of_an_image_without_a_size_is_refused_as_before(tmp_path: Path) -> None:
    write(tmp_path)
    document = json.loads((tmp_path / "gt.json").read_text())
    del document["images"][2]["height"]
    (tmp_path / "gt.json").write_text(json.dumps(document))
    native_run, numpy_run = rpx(ARGS, tmp_path), rpx(ARGS, tmp_path, "0")
    assert native_run.returncode == 1 and "needs the image size" in native_run.stderr, native_run.stderr
    assert native_run.stderr == numpy_run.stderr


@pytest.mark.parametrize("broken", [False, True])
def test_the_collector_is_paused_for_a_files_run_and_resumed_after_it(rpx, tmp_path: Path, monkeypatch,
                                                                       broken: bool) -> None:
    """Every container a COCO files run builds lives until its report is written: the cyclic
    collector is off meanwhile (cli/output.py: collector_paused), and on again when the run
    ends, whether it wrote its report or failed (in-process: a notebook, these tests)."""
    import gc

    write(tmp_path)
    if broken:
        break_gt_polygon(tmp_path)
    seen = []
    from rpx_cli.tasks.detection.kinds import mask

    check_files = mask.Mask.check_files

    def watched(self, *args, **kwargs):
        seen.append(gc.isenabled())
        return check_files(self, *args, **kwargs)

    monkeypatch.setattr(mask.Mask, "check_files", watched)
    monkeypatch.chdir(tmp_path)
    assert gc.isenabled()
    run = rpx(ARGS)
    assert run.exit_code == (1 if broken else 0), run.stderr
    assert seen == [False] and gc.isenabled()


@pytest.mark.parametrize("text", [b'{"a": [1, 2]}', b'[NaN]', b'{"a": ', b'[' * 100_000])
@pytest.mark.parametrize("before", [True, False])
def test_parsing_json_leaves_the_collector_as_it_was(text: bytes, before: bool) -> None:
    """``io/json.py: loads_json`` pauses the collector while it parses — parsed by orjson, by
    the standard library, or refused — and leaves it as it found it (it once left it off
    after every file orjson read: an in-process run then never collected again)."""
    import gc

    from rpx_cli.errors import InputError
    from rpx_cli.io.json import loads_json

    was = gc.isenabled()
    (gc.enable if before else gc.disable)()
    try:
        with contextlib.suppress(InputError):
            loads_json(text, "x.json")
        assert gc.isenabled() == before
    finally:
        (gc.enable if was else gc.disable)()


# --- the results' RLE dicts made only when something reads them ------------------------------

READERS = {
    "default": [],
    "every metric": ["--metrics", "rows,pooled,confusion,coco,errors"],
    "worst frames": ["--keep-worst", "3", "--metrics", "rows,pooled,coco"],
    "html": ["--html", "out.html"],
    "shard": ["--shard", "1/2"],
    "jobs 2": ["--jobs", "2"],
    "class map": ["--class-map", "map.json"],
    "lvis": ["--protocol", "lvis"],
}


def _report(run_dir: Path) -> dict:
    report = json.loads((run_dir / "out.json").read_text())
    report.pop("run_provenance")
    return report


@native_only
@pytest.mark.parametrize("reader", list(READERS))
def test_the_results_dicts_deferred_give_the_report_eager_dicts_give(rpx, tmp_path: Path, monkeypatch,
                                                                     reader: str) -> None:
    """A masks run on the native core leaves the results' RLE dicts unmade (0.2 s and 150 MB
    for 500,000): the steps read the joined strings, sizes and areas. Whatever else reads
    the masks (worst frames' drawings, shards' frame stats, worker processes, a class map's
    take, LVIS' federated frames) makes them first, and every report is the one made with
    the dicts made as the file was read."""
    from rpx_cli.io import coco_columns, packed_rles

    write(tmp_path)
    (tmp_path / "map.json").write_text(json.dumps({"a": "a", "b": None}))
    if reader == "lvis":
        document = json.loads((tmp_path / "gt.json").read_text())
        for category in document["categories"]:
            category["frequency"] = "f"
        for image in document["images"]:
            image["neg_category_ids"], image["not_exhaustive_category_ids"] = [], []
        (tmp_path / "gt.json").write_text(json.dumps(document))
    monkeypatch.chdir(tmp_path)
    made = []
    fill = packed_rles.PackedRles.fill

    def watched(self) -> None:
        made.append(self.unfilled)
        fill(self)

    monkeypatch.setattr(packed_rles.PackedRles, "fill", watched)
    run = rpx([*ARGS, *READERS[reader]])
    assert run.exit_code == 0, run.stderr
    deferred = _report(tmp_path)
    # made where something reads them, and only there
    assert (True in made) == (reader in {"worst frames", "html", "shard", "class map", "lvis"}), made
    making = coco_columns.deferred_rles

    def eager(*args, **kwargs):
        array = making(*args, **kwargs)
        array.fill()
        return array

    monkeypatch.setattr(coco_columns, "deferred_rles", eager)
    run = rpx([*ARGS, *READERS[reader]])
    assert run.exit_code == 0, run.stderr
    assert _report(tmp_path) == deferred
