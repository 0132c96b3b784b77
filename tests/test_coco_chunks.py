"""A large COCO results file is parsed in pieces cut between two top-level objects
(``rpx_cli.io.coco_results.CHUNK_BYTES``): every array equal to parsing the file at once, for
boxes, masks and keypoints, however the JSON is spaced; a cut that would fall inside a
string, or a bad record in any piece, falls back to the whole file (whose error names the
record's index in the file). Pieces are the numpy path's (``RPX_NATIVE=0`` here): the native
core reads an ordinary file whole in one pass (``tests/test_native_coco_reader.py``), and
falls back to pieces only for a file it declines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from coco_family_data import box_set_lvis, keypoint_set, segm_set

from rpx_cli.errors import InputError
from rpx_cli.io import coco_files, coco_results
from rpx_cli.io.coco_objects import BOX_FIELD, KEYPOINT_FIELD, MASK_FIELD

FIXTURES = Path(__file__).parent / "fixtures" / "coco_family"


@pytest.fixture(autouse=True)
def numpy_path(monkeypatch) -> None:
    monkeypatch.setenv("RPX_NATIVE", "0")


FIELDS = {"bbox": BOX_FIELD, "segm": MASK_FIELD, "keypoints": KEYPOINT_FIELD}


def read(path: Path, iou_type: str, chunk: int, monkeypatch) -> coco_results.Results:
    monkeypatch.setattr(coco_results, "CHUNK_BYTES", chunk)
    return coco_results.read_results(str(path), FIELDS[iou_type])


def assert_same(a: coco_results.Results, b: coco_results.Results) -> None:
    for name in ("image", "category", "usable"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("scores", "crowd", "area"):
        x, y = getattr(a.boxes, name), getattr(b.boxes, name)
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), name
    assert np.asarray(a.boxes.labels).tolist() == np.asarray(b.boxes.labels).tolist()
    if a.boxes.shape.dtype == object:
        assert a.boxes.shape.tolist() == b.boxes.shape.tolist()
    else:
        assert np.array_equal(a.boxes.shape, b.boxes.shape, equal_nan=True)


def results_file(tmp_path: Path, results: list, indent: int | None) -> Path:
    """The list as JSON; indented files also carry blank space before and after it."""
    path = tmp_path / f"results-{indent}.json"
    pad = "" if indent is None else "\n \t\n"
    path.write_text(pad + json.dumps(results, indent=indent) + pad)
    return path


@pytest.mark.parametrize("indent", [None, 0, 2])
@pytest.mark.parametrize(("iou_type", "make"), [
    ("bbox", lambda: box_set_lvis(3)[1]),
    ("segm", lambda: segm_set(4)[1]),
    ("keypoints", lambda: keypoint_set(5)[1]),
])
def test_pieces_equal_the_whole_file(tmp_path: Path, monkeypatch, iou_type: str, make,
                                     indent: int | None) -> None:
    path = results_file(tmp_path, make(), indent)
    whole = read(path, iou_type, 1 << 40, monkeypatch)
    pieces = [read(path, iou_type, chunk, monkeypatch) for chunk in (1, 300, 5000)]
    assert len(whole.image) > 20
    for got in pieces:
        assert_same(got, whole)


@pytest.mark.parametrize(("name", "iou_type"), [
    ("instances_val2014_fakesegm100_results.json", "segm"), ("keypoints_dt.json", "keypoints")])
def test_pieces_of_the_reference_fixtures(monkeypatch, name: str, iou_type: str) -> None:
    path = FIXTURES / name
    assert_same(read(path, iou_type, 4096, monkeypatch), read(path, iou_type, 1 << 40, monkeypatch))


def test_cut_is_counted(tmp_path: Path, monkeypatch) -> None:
    """The pieces are really read apart (a test that cannot fail is a defect): with small
    pieces, the parser is called once per piece."""
    path = results_file(tmp_path, box_set_lvis(3)[1], None)
    calls = []
    real = coco_results.loads_json
    monkeypatch.setattr(coco_results, "loads_json", lambda data, p: calls.append(len(data)) or real(data, p))
    read(path, "bbox", 2000, monkeypatch)
    assert len(calls) > 5 and max(calls) < 2000 + 1000


def test_a_cut_inside_a_string_falls_back(tmp_path: Path, monkeypatch) -> None:
    results = box_set_lvis(3)[1]
    for item in results:
        item["note"] = "a}, {b"  # what the cut looks for, inside a string
    path = results_file(tmp_path, results, None)
    assert_same(read(path, "bbox", 200, monkeypatch), read(path, "bbox", 1 << 40, monkeypatch))


def test_a_bad_record_in_a_later_piece_is_named_by_its_index_in_the_file(tmp_path: Path,
                                                                         monkeypatch) -> None:
    results = box_set_lvis(3)[1]
    results[-3]["score"] = "high"
    path = results_file(tmp_path, results, None)
    with pytest.raises(InputError) as whole:
        read(path, "bbox", 1 << 40, monkeypatch)
    with pytest.raises(InputError) as pieces:
        read(path, "bbox", 300, monkeypatch)
    assert str(pieces.value) == str(whole.value)
    assert f"object {len(results) - 3}: 'score' must be a finite number" in str(pieces.value)


def test_a_results_object_with_annotations_is_read_whole(tmp_path: Path, monkeypatch) -> None:
    results = box_set_lvis(3)[1]
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"annotations": results}))
    flat = results_file(tmp_path, results, None)
    assert_same(read(path, "bbox", 300, monkeypatch), read(flat, "bbox", 1 << 40, monkeypatch))


# --- the pieces in worker processes (what `rpx eval detection --coco-dt` does) --------------


def _children() -> list[int]:
    """This process's children but multiprocessing's resource tracker, which lives as long as
    the process once any test has used a pool (the docs' commands do: run before these tests,
    it was taken for a worker left behind)."""
    import os

    from test_hostile import _children as children

    def tracker(pid: int) -> bool:
        try:
            return b"resource_tracker" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False

    return [pid for pid in children(os.getpid()) if not tracker(pid)]


def test_pieces_in_worker_processes_equal_the_whole_file(tmp_path: Path, monkeypatch) -> None:
    from functools import partial

    from rpx_cli.engine.workers import map_in_processes
    from rpx_cli.io.pieces import lent

    path = results_file(tmp_path, keypoint_set(5)[1], None)
    whole = read(path, "keypoints", 1 << 40, monkeypatch)
    chosen: dict = {}
    with lent(partial(map_in_processes, jobs=2, chosen=chosen)):
        got = read(path, "keypoints", 3000, monkeypatch)
    assert chosen["pieces"] > 3
    assert_same(got, whole)
    assert _children() == []


def test_a_bad_record_in_a_worker_piece_falls_back_to_the_file_error(tmp_path: Path,
                                                                    monkeypatch) -> None:
    from functools import partial

    from rpx_cli.engine.workers import map_in_processes
    from rpx_cli.io.pieces import lent

    results = box_set_lvis(3)[1]
    results[-3]["bbox"] = [0, 0, -1, 5]
    path = results_file(tmp_path, results, None)
    with pytest.raises(InputError) as whole:
        read(path, "bbox", 1 << 40, monkeypatch)
    with lent(partial(map_in_processes, jobs=2)), pytest.raises(InputError) as pieces:
        read(path, "bbox", 300, monkeypatch)
    assert str(pieces.value) == str(whole.value) and f"object {len(results) - 3}" in str(whole.value)


def test_a_gt_error_stops_the_pieces_and_comes_first(tmp_path: Path, monkeypatch) -> None:
    """The results file's pieces start before the GT file is read; a GT error is still the
    error (as when the files are read one after the other), and no worker is left."""
    from functools import partial

    from rpx_cli.engine.workers import map_in_processes
    from rpx_cli.io.pieces import lent

    gt, results = box_set_lvis(3)
    gt["annotations"][0]["category_id"] = 999
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    dt = results_file(tmp_path, results, None)
    monkeypatch.setattr(coco_results, "CHUNK_BYTES", 300)
    with lent(partial(map_in_processes, jobs=2)), pytest.raises(InputError, match="category_id 999"):
        coco_files.load_coco(str(tmp_path / "gt.json"), str(dt))
    assert _children() == []
    # a results file that cannot be read is its error, after the GT file's
    with pytest.raises(InputError, match="category_id 999"):
        coco_files.load_coco(str(tmp_path / "gt.json"), str(tmp_path / "missing.json"))


def test_the_cli_reads_pieces_in_processes_and_records_it(rpx, tmp_path: Path, monkeypatch) -> None:
    gt, results = box_set_lvis(4)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    dt = results_file(tmp_path, results, None)
    cmd = f"eval detection --coco-gt {tmp_path / 'gt.json'} --coco-dt {dt} --metrics coco"
    one = rpx(cmd + " --jobs 1")
    monkeypatch.setattr(coco_results, "CHUNK_BYTES", 2000)
    two = rpx(cmd + " --jobs 2")
    assert one.exit_code == two.exit_code == 0, two.stderr
    assert two.json["dataset"] == one.json["dataset"] and two.json["rows"] == one.json["rows"]
    executor = two.json["run_provenance"]["executor"]
    assert executor["jobs"] == 2 and executor["pieces"] > 5
    assert one.json["run_provenance"]["executor"] == {"name": "local", "jobs": 1}
