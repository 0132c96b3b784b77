"""The COCO files of ``rpx eval detection`` read and scanned while rpx starts
(rpx_cli/io/prefetch.py): a run that uses them reports exactly what a run that reads the
files itself reports; a file changed after it was read is read again; other commands,
URLs, RPX_NATIVE=0 and special files start nothing."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import generated_detections
from test_coco_files import coco_files

from rpx_cli.io import prefetch
from rpx_cli.io.filebuffer import sha256_file

core = pytest.importorskip("rpx_cli._native")


@pytest.fixture(autouse=True)
def nothing_left_over(monkeypatch):
    # the prefetch is the native core's (RPX_NATIVE=0 starts none: tested below), so every
    # test here runs with it, in the suite's RPX_NATIVE=0 run too
    monkeypatch.setenv("RPX_NATIVE", "1")
    for table in (prefetch._FILES, prefetch._SCANNED, prefetch._DIGESTS, prefetch._THREADS):
        table.clear()
    yield
    prefetch.settle()
    for table in (prefetch._FILES, prefetch._SCANNED, prefetch._DIGESTS, prefetch._THREADS):
        table.clear()


def argv_of(tmp_path: Path, *extra: str) -> list[str]:
    files = coco_files(tmp_path, generated_detections(3)).split()
    return ["eval", "detection", *files, *extra]


def comparable(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "run_provenance"}


def test_a_run_with_the_prefetched_files_reports_the_same(rpx, tmp_path: Path) -> None:
    argv = argv_of(tmp_path)
    want = rpx(argv).json
    prefetch.start(argv)
    assert len(prefetch._FILES) == 2
    got = rpx(argv).json
    assert not prefetch._FILES and not prefetch._SCANNED  # both handed over, once
    assert not prefetch._DIGESTS  # and both digests (computed at start-up) taken
    assert comparable(got) == comparable(want)
    for name, path in (("coco_gt", argv[3]), ("coco_dt", argv[5])):
        sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        assert got["run_provenance"]["inputs"][name]["sha256"] == sha
        assert want["run_provenance"]["inputs"][name]["sha256"] == sha


def test_a_digest_of_a_file_changed_since_is_computed_again(tmp_path: Path) -> None:
    argv = argv_of(tmp_path)
    dt = Path(argv[5])
    prefetch.start(argv)
    prefetch.settle()
    dt.write_text("[]")
    assert prefetch.sha256_of(str(dt), os.stat(dt)) is None
    assert sha256_file(str(dt)) == hashlib.sha256(b"[]").hexdigest()


def test_the_bytes_and_scans_are_what_the_reader_would_compute(tmp_path: Path) -> None:
    argv = argv_of(tmp_path, "--iou-type", "bbox")
    gt, dt = argv[3], argv[5]
    prefetch.start(argv)
    data = prefetch.read(dt)
    assert data == Path(dt).read_bytes()
    scan = prefetch.scanned(data, "coco_results", 0)
    want = core.coco_results(data, 0)
    assert [a if isinstance(a, int) else bytes(memoryview(a)) for a in scan] == \
        [a if isinstance(a, int) else bytes(memoryview(a)) for a in want]
    assert prefetch.scanned(data, "coco_results", 0) is prefetch.MISSING  # once
    gt_data = prefetch.read(gt)
    assert prefetch.scanned(gt_data, "coco_gt", 2) is prefetch.MISSING  # another field: no
    assert prefetch.read(gt) == gt_data  # (the second read is the disk's)


def test_a_file_changed_after_it_was_read_is_read_again(tmp_path: Path) -> None:
    argv = argv_of(tmp_path)
    dt = Path(argv[5])
    prefetch.start(argv)
    prefetch.settle()
    dt.write_text("[]")  # new bytes (and a new size, mtime, ctime)
    data = prefetch.read(str(dt))
    assert data == b"[]"
    assert prefetch.scanned(data, "coco_results", 0) is prefetch.MISSING


@pytest.mark.parametrize("argv", [
    ["eval", "depth", "--coco-gt", "a.json", "--coco-dt", "b.json"],  # another command
    ["eval", "detection", "--coco-gt", "a.json"],  # one file only
    ["eval", "detection", "--coco-gt", "s3://b/a.json", "--coco-dt", "b.json"],  # a URL
    ["eval", "detection", "--help", "--coco-gt", "a.json", "--coco-dt", "b.json"],
    ["compare", "--coco-gt", "a.json", "--coco-dt", "b.json"],
])
def test_other_command_lines_start_nothing(argv) -> None:
    prefetch.start(argv)
    assert not prefetch._FILES


def test_rpx_native_0_starts_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RPX_NATIVE", "0")
    prefetch.start(argv_of(tmp_path))
    assert not prefetch._FILES


def test_a_fifo_or_a_missing_file_is_left_to_the_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    prefetch.start(["eval", "detection", "--coco-gt", str(fifo), "--coco-dt",
                    str(tmp_path / "missing.json")])
    assert prefetch._THREADS
    for thread in set(prefetch._THREADS.values()):
        thread.join(timeout=10)
        assert not thread.is_alive()
    assert all(file.data is None for file in prefetch._FILES.values())


def test_the_options_are_read_as_click_reads_them() -> None:
    argv = ["--coco-gt", "a", "--coco-gt=b", "--iou-type", "segm"]
    assert prefetch._option(argv, "--coco-gt") == "b"
    assert prefetch._option(argv, "--iou-type") == "segm"
    assert prefetch._option(argv, "--coco-dt") is None


@pytest.mark.parametrize("iou_type", ["bbox", "keypoints"])
def test_the_console_script_prefetches_and_reports_the_same(tmp_path: Path, iou_type: str) -> None:
    """``python -m rpx_cli`` (the console script's main): the same report with the prefetch
    as with RPX_NATIVE=0, which starts none."""
    if iou_type == "keypoints":
        fixture = Path(__file__).parent / "fixtures" / "coco_family"
        gt, dt = fixture / "keypoints_gt.json", fixture / "keypoints_dt.json"
        files = ["--coco-gt", str(gt), "--coco-dt", str(dt), "--iou-type", "keypoints"]
    else:
        files = argv_of(tmp_path)[2:]
    runs = []
    for native in ("1", "0"):
        out = tmp_path / f"report-{native}.json"
        done = subprocess.run([sys.executable, "-m", "rpx_cli", "eval", "detection", *files,
                               "--jobs", "1", "-o", str(out)], capture_output=True, text=True,
                              env={**os.environ, "RPX_NATIVE": native})
        assert done.returncode == 0, done.stderr
        runs.append(comparable(json.loads(out.read_text())))
    assert runs[0] == runs[1]


def test_an_eval_starts_the_git_lookup_and_the_provenance_takes_it(tmp_path: Path) -> None:
    from rpx_cli.cli.startup import begin
    from rpx_cli.report import provenance

    begin(["eval", "depth", "--pred-dir", "p", "--gt-dir", "g"])
    assert os.getcwd() in provenance._GIT_STARTED
    assert not prefetch._FILES  # (no COCO files: nothing read)
    assert provenance.collect_git(os.getcwd()) == provenance._collect_git(os.getcwd())
    assert os.getcwd() not in provenance._GIT_STARTED  # taken once
    begin(["merge", "a.json", "b.json"])
    assert not provenance._GIT_STARTED


def test_settle_leaves_no_thread_of_start_up_running(tmp_path: Path) -> None:
    """Before a run forks its workers (engine/workers.py) it settles start-up's thread: the
    files are read, what it found kept for the readers."""
    import threading

    argv = argv_of(tmp_path)
    prefetch.start(argv)
    prefetch.settle()
    assert not [t for t in threading.enumerate() if t.name == "rpx-prefetch"]
    assert prefetch.read(argv[5]) == Path(argv[5]).read_bytes()
    assert prefetch.scanned(Path(argv[5]).read_bytes(), "coco_results", 0) is prefetch.MISSING


def test_the_codes_are_the_readers_own() -> None:
    """Each --iou-type's scanner codes are those the GT and results readers ask for (a
    prefetch scanned with another code would be thrown away and scanned again)."""
    from rpx_cli.io import coco_columns, coco_gt_columns
    from rpx_cli.io.coco_objects import BOX_FIELD, KEYPOINT_FIELD, MASK_FIELD

    fields = {"bbox": BOX_FIELD, "segm": MASK_FIELD, "keypoints": KEYPOINT_FIELD}
    assert set(prefetch._CODES) == set(fields)
    for iou_type, (gt_code, dt_code) in prefetch._CODES.items():
        assert dt_code == coco_columns.FIELD_CODES[fields[iou_type].name]
        assert gt_code == coco_gt_columns.FIELD_CODES.get(fields[iou_type].name)


def test_the_results_scan_takes_two_threads_unless_one_cpu_or_jobs_1(monkeypatch) -> None:
    """The results file's scan runs in two halves at start-up (the imports hold one CPU;
    coco_results' threads), but not where the process may use one CPU or --jobs says 1."""
    monkeypatch.setattr(prefetch.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert prefetch._scan_threads(["eval", "detection"]) == 2
    assert prefetch._scan_threads(["eval", "detection", "--jobs", "1"]) == 1
    assert prefetch._scan_threads(["eval", "detection", "--jobs=1"]) == 1
    assert prefetch._scan_threads(["eval", "detection", "--jobs", "4"]) == 2
    monkeypatch.setattr(prefetch.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert prefetch._scan_threads(["eval", "detection"]) == 1
