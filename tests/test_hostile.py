"""Hostile inputs, faults and signals (issue 20), each run through the real CLI in a child
process (``python -m rpx_cli``) under a memory limit (``RLIMIT_AS``) and a time limit.

Every refused input must give: the exit status, exactly one stderr line naming the file
(escaped as ``ls -b`` shows names), no traceback and no "internal error", no report and no
temporary file. Under ``--on-error skip`` the same file must be one ``errors`` entry while a
good pair beside it is evaluated: one bad file never sinks a batch.

Families (the issue's numbering): 1 a reader's failure is the file's input error; 2 finite
but extreme values are refused before they overflow a metric; 3 no silent wrong result;
4 SIGTERM/SIGHUP stop the workers too; 5 a FIFO never hangs; 6 names that are not UTF-8;
7 output and option errors; 8 resource blow-ups; 9 one-line warnings.
"""

from __future__ import annotations

import functools
import io
import json
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT

from rpx_cli.errors import escaped, unescaped

# a child process per case (two at once where a case runs both --on-error modes): each
# test takes about a second
pytestmark = pytest.mark.slow

MEMORY_MB = 768  # address space of each child: far below any blow-up in the issue
TIMEOUT_S = 60


@dataclass
class Child:
    returncode: int
    stdout: str
    stderr: str


def start_child(args: list[str], cwd: Path, *, memory_mb: int = MEMORY_MB,
                env: dict[str, str] | None = None) -> subprocess.Popen:
    """``python -m rpx_cli ARGS`` in ``cwd`` with its address space capped (``env``: more
    environment variables)."""
    limit = memory_mb << 20

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    environ = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    environ.pop("SOURCE_DATE_EPOCH", None)
    environ.pop("RPX_PART_KEY", None)
    environ.update(env or {})
    return subprocess.Popen([sys.executable, "-m", "rpx_cli", *args], cwd=cwd, env=environ,
                            preexec_fn=cap, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish_child(process: subprocess.Popen, *, timeout: float = TIMEOUT_S) -> Child:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return Child(process.returncode, stdout.decode("utf-8", "replace"),
                 stderr.decode("utf-8", "replace"))


def run_child(args: list[str], cwd: Path, *, memory_mb: int = MEMORY_MB,
              timeout: float = TIMEOUT_S, env: dict[str, str] | None = None) -> Child:
    return finish_child(start_child(args, cwd, memory_mb=memory_mb, env=env), timeout=timeout)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".rpx-"))


def assert_refused(child: Child, bad: Path | str, message: str, out: Path, *,
                   code: int = 1) -> None:
    """Exit ``code``; one stderr line names ``bad`` and says ``message``; nothing else
    wrong on stderr; no report, no temporary file."""
    shown = escaped_name(bad)
    assert child.returncode == code, child.stderr
    assert "Traceback" not in child.stderr and "internal error" not in child.stderr, child.stderr
    lines = child.stderr.strip().splitlines()
    naming = [line for line in lines if shown in line]
    assert len(naming) == 1, child.stderr
    assert message in naming[0], child.stderr
    assert len(lines) <= 2, child.stderr  # the file's line, then at most one summary line
    assert not out.exists(), "a report was written"
    assert leftovers(out.parent) == []


def escaped_name(path: Path | str) -> str:
    from rpx_cli.errors import escaped

    return escaped(os.fsdecode(os.fspath(path)))


# --- inputs ----------------------------------------------------------------------------------


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def npy_header(header: str, payload: bytes = b"", *, version: int = 1) -> bytes:
    """An ``.npy`` file with a hand-written header (numpy would refuse to write these)."""
    text = header.encode("latin1")
    head = 10 if version == 1 else 12
    text += b" " * ((64 - (head + len(text) + 1) % 64) % 64) + b"\n"
    size = struct.pack("<H", len(text)) if version == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + size + text + payload


def npz_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name + ".npy", data)
    return buffer.getvalue()


def npz_of_zeros(header: bytes, total: int) -> bytes:
    """An ``.npz`` whose member is ``header`` + ``total`` zero bytes, deflated (~1000:1)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive, \
            archive.open("depth.npy", "w", force_zip64=True) as member:
        member.write(header)
        chunk = bytes(1 << 24)
        for start in range(0, total, len(chunk)):
            member.write(chunk[: min(len(chunk), total - start)])
    return buffer.getvalue()


@functools.cache
def png_bytes(width: int, height: int) -> bytes:
    """An 8-bit grayscale PNG of zeros, any size (a 20000x20000 one is ~400 KB)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    compressor = zlib.compressobj(9)
    row = bytes(width + 1)
    data = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", data) + chunk(b"IEND", b""))


def tiff_bytes(width: int, height: int) -> bytes:
    """A little-endian 8-bit grayscale TIFF header claiming ``width`` x ``height``."""
    strip = 8 + 2 + 12 * 8 + 4
    entries = [(256, 4, width), (257, 4, height), (258, 3, 8), (259, 3, 1), (262, 3, 1),
               (273, 4, strip), (277, 3, 1), (279, 4, width * height)]
    ifd = struct.pack("<H", len(entries)) + b"".join(
        struct.pack("<HHII", tag, kind, 1, value) if kind == 4
        else struct.pack("<HHIHH", tag, kind, 1, value, 0) for tag, kind, value in entries)
    return b"II*\x00" + struct.pack("<I", 8) + ifd + b"\x00" * 4 + b"\x00" * 64


DEEP = ("[" * 2000 + "]" * 2000).encode()
EYE = np.eye(3).tolist()
BOX3D = {"translation": [10.0, 5.0, 0.5], "size": [1.8, 4.5, 1.5], "rotation": [1.0, 0, 0, 0],
         "detection_name": "car"}

# one good (GT, prediction) per task, file name and contents
GOOD: dict[str, tuple[str, object, object]] = {
    "depth": ("npy", np.full((4, 4), 2.0, np.float32), np.full((4, 4), 2.5, np.float32)),
    "saliency-mb": ("npy", np.ones((32, 32), np.float32), np.ones((32, 32), np.float32)),
    "detection": ("json", [{"bbox": [0, 0, 10, 10], "label": "a"}],
                  [{"bbox": [0, 0, 10, 10], "label": "a", "score": 0.9}]),
    "grounding": ("json", {"text": "cup", "boxes": [[0, 0, 10, 10]]},
                  {"boxes": [[0, 0, 10, 10]], "scores": [0.9]}),
    "keypoints": ("json", {"points0": [[0, 0]], "points1": [[0, 0]]},
                  {"points0": [[0, 0]], "points1": [[1, 0]]}),
    "tracking": ("txt", b"1,1,0,0,10,10,1,1\n", b"1,1,0,0,10,10,1\n"),
    "sparse-depth": ("json", {"coordinates": [[0, 0]], "depths": [1.0]},
                     {"coordinates": [[0, 0]], "depths": [1.5]}),
    "pose": ("json", {"R": EYE, "t": [0, 0, 0]}, {"R": EYE, "t": [0, 0, 1]}),
    "classification": ("json", {"label": "cat"}, {"label": "cat"}),
    "nvs": ("npy", np.zeros((16, 16, 3)), np.full((16, 16, 3), 0.5)),
    "detection3d": ("json", [BOX3D], [{**BOX3D, "detection_score": 0.5}]),
}


TRACKS_JSON = {"frames": [{"frame": 1, "objects": [{"id": 1, "bbox": [0, 0, 10, 10]}]}]}


def write(path: Path, content: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, np.ndarray):
        content = npy_bytes(content)
    elif not isinstance(content, bytes):
        content = json.dumps(content).encode()
    path.write_bytes(content)
    return path


def good_pair(root: Path, task: str, stem: str = "good") -> None:
    suffix, gt, pred = GOOD[task]
    write(root / "gt" / f"{stem}.{suffix}", gt)
    write(root / "pred" / f"{stem}.{suffix}", pred)


def command(task: str) -> list[str]:
    return ["saliency-mb"] if task == "saliency-mb" else ["eval", task]


@dataclass
class Case:
    """One hostile pair: ``side`` (``pred`` or ``gt``) of stem ``bad`` is the file
    ``name`` holding ``content``; the other side is ``other`` (a file of the same name) or
    else the task's good file."""

    task: str
    side: str
    name: str
    content: object | Callable[[], object]
    message: str
    other: object | None = None
    args: tuple[str, ...] = ()


@functools.cache
def _zeros_1gb() -> bytes:
    count = 1 << 28  # float32: 1 GiB once inflated (over the child's limit), in a ~1 MB archive
    return npz_of_zeros(npy_header(f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({count},), }}"),
                        count * 4)


def _map_1gb() -> bytes:
    side = 1 << 14  # a 16384 x 16384 float32 map: 1 GiB once inflated, in a ~1 MB archive
    return npz_of_zeros(npy_header(f"{{'descr': '<f4', 'fortran_order': False, "
                                   f"'shape': ({side}, {side}), }}"), side * side * 4)


PAIR_CASES = {
    # 1. a reader's failure is the file's input error
    "npy-unterminated-header": Case("depth", "pred", "bad.npy", b"\x93NUMPY\x01\x00\x40\x00"
                                    b"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4), " + b" " * 8,
                                    "not a valid .npy file"),
    "npy-header-length-overflow": Case("depth", "pred", "bad.npy",
                                       b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr': '<f4'",
                                       "not a valid .npy file"),
    "npy-shape-size-overflows": Case("depth", "pred", "bad.npy", npy_header(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }",
        bytes(64)), "truncated .npy"),
    "npy-zero-itemsize": Case("depth", "pred", "bad.npy", npy_header(
        "{'descr': '|V0', 'fortran_order': False, 'shape': (100000000000, 100000000000), }"),
        "items of 0 bytes"),
    "npz-member-claims-80gb": Case("depth", "pred", "bad.npz", npz_bytes({"depth": npy_header(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000), }", bytes(1000))}),
        "header promises 80000000000 data bytes"),
    "npz-1mb-inflating-to-1gb": Case("depth", "pred", "bad.npz", _zeros_1gb,
                                     "'depth' must be 2-D"),
    # issue 31.9: the member's shape is compared with the GT's before it is inflated
    "npz-map-16384-squared-against-a-small-gt": Case("depth", "pred", "bad.npz", _map_1gb,
                                                     "its ground truth gt/bad.npy is 4x4"),
    "png-decompression-bomb": Case("saliency-mb", "pred", "bad.png", lambda: png_bytes(20000, 20000),
                                   "image too large to decode"),
    "tiff-decompression-bomb": Case("depth", "pred", "bad.tif", tiff_bytes(40000, 40000),
                                    "image too large to decode"),
    "pgm-p2-sample-beyond-64-bits": Case("saliency-mb", "pred", "bad.pgm",
                                         b"P2 2 2 255\n0 0 0 99999999999999999999999999\n",
                                         "beyond 64 bits"),
    **{f"json-nested-2000-deep-{task}": Case(task, "pred", "bad.json", DEEP, "nested too deeply")
       for task in ("detection", "grounding", "keypoints", "sparse-depth", "pose",
                    "classification", "detection3d")},
    "json-nested-2000-deep-tracking": Case("tracking", "pred", "bad.json", DEEP, "nested too deeply",
                                           other=TRACKS_JSON),
    "keypoint-coordinates-1e200": Case("keypoints", "pred", "bad.json",
                                       {"points0": [[1e200, 1e200]], "points1": [[1e200, -1e200]]},
                                       "beyond"),
    # 2. finite but extreme values, refused before they overflow a metric
    "depth-gt-5e-324": Case("depth", "gt", "bad.npy", np.full((4, 4), 5e-324),
                            "outside the physical range"),
    "depth-pred-1e308": Case("depth", "pred", "bad.npy", np.full((4, 4), 1e308),
                             "outside the physical range"),
    "pose-translation-1e308": Case("pose", "pred", "bad.json", {"R": EYE, "t": [1e308, -1e308, 0]},
                                   "beyond"),
    "sparse-depth-1e300": Case("sparse-depth", "pred", "bad.json",
                               {"coordinates": [[0, 0]], "depths": [1e300]},
                               "outside the physical range"),
    "detection-box-1e200": Case("detection", "pred", "bad.json", [
        {"bbox": [0, 0, 1e200, 1e200], "label": "a", "score": 0.9}], "within ±1e+12"),
    "grounding-box-1e200": Case("grounding", "pred", "bad.json",
                                {"boxes": [[0, 0, 1e200, 1e200]], "scores": [1.0]}, "within ±1e+12"),
    "mot-box-1e200": Case("tracking", "pred", "bad.txt", b"1,1,0,0,1e200,1e200,1\n", "beyond ±1e+12"),
    "nvs-float-image-1e308": Case("nvs", "pred", "bad.npy", np.full((16, 16, 3), 1e308),
                                  "beyond ±1e+12", args=("--data-range", "1")),
    "sparse-depth-gt-5e-324": Case("sparse-depth", "gt", "bad.json",
                                   {"coordinates": [[0, 0]], "depths": [5e-324]},
                                   "outside the physical range"),
    # 3. values that used to give silent wrong results
    **{f"iscrowd-{label}": Case("detection", "gt", "bad.json",
                                [{"bbox": [0, 0, 10, 10], "label": "a", "iscrowd": value}],
                                "'iscrowd' must be 0, 1, true or false")
       for label, value in (("string-0", "0"), ("2", 2), ("list", [0]))},
    "iscrowd-column-2": Case("detection", "gt", "bad.json",
                             {"boxes": [[0, 0, 10, 10]], "labels": ["a"], "iscrowd": [2]},
                             "'iscrowd' must be 0, 1, true or false"),
    "mot-ids-beyond-64-bits": Case("tracking", "gt", "bad.txt",
                                   b"1,18446744073709551617,0,0,10,10,1,1\n"
                                   b"1,18446744073709551618,20,20,10,10,1,1\n",
                                   "id must be within ±2^53"),
    "mot-frames-beyond-64-bits": Case("tracking", "pred", "bad.txt",
                                      b"18446744073709551617,1,0,0,10,10,1\n",
                                      "frame must be within ±2^53"),
    "tracks-json-frame-beyond-64-bits": Case("tracking", "pred", "bad.json", {"frames": [
        {"frame": 2**70, "objects": [{"id": 1, "bbox": [0, 0, 10, 10]}]}]},
        "frames[0].frame must be", other=TRACKS_JSON),
    "npy-shape-minus-one": Case("sparse-depth", "pred", "bad.npy", npy_header(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (-1, 3), }",
        np.array([[0.0, 0.0, 1.0]]).tobytes()), "dimensions must be integers >= 0"),
    "sparse-depth-strings": Case("sparse-depth", "pred", "bad.json",
                                 {"coordinates": [["0", "0"]], "depths": ["1.5"]},
                                 "number pairs and depths numbers"),
    "sparse-depth-booleans": Case("sparse-depth", "pred", "bad.json",
                                  {"coordinates": [[0, 0]], "depths": [True]},
                                  "number pairs and depths numbers"),
    "pose-boolean-translation": Case("pose", "pred", "bad.json", {"R": EYE, "t": [True, 0, 0]},
                                     "'t' must be [3] numbers"),
    "pose-boolean-rotation": Case("pose", "pred", "bad.json",
                                  {"R": [[True, 0, 0], [0, 1, 0], [0, 0, 1]], "t": [0, 0, 0]},
                                  "'R' must be 3x3 numbers"),
    "pose-string-quaternion": Case("pose", "pred", "bad.json",
                                   {"quaternion_wxyz": ["1", 0, 0, 0], "t": [0, 0, 0]},
                                   "must be [4] numbers"),
    "keypoints-booleans": Case("keypoints", "pred", "bad.json",
                               {"points0": [[True, 0]], "points1": [[0, 0]]}, "number pairs"),
    # 8. resource blow-ups: documented caps
    "tracking-8000-boxes-in-one-frame": Case("tracking", "gt", "bad.txt", "".join(
        f"1,{i},{i % 100 * 10},{i // 100 * 10},5,5,1,1\n" for i in range(8000)).encode(),
        "at most 2,000 per frame"),
    "tracking-20000-ids": Case("tracking", "pred", "bad.txt", "".join(
        f"{i + 1},{i},0,0,5,5,1\n" for i in range(20000)).encode(), "id pairs", other="".join(
        f"{i + 1},{i},0,0,5,5,1,1\n" for i in range(20000)).encode()),
}


def build(root: Path, case: Case, *, with_good: bool) -> Path:
    suffix, gt, pred = GOOD[case.task]
    content = case.content() if callable(case.content) else case.content
    bad = write(root / case.side / case.name, content)
    if case.other is not None:
        write(root / ("gt" if case.side == "pred" else "pred") / case.name, case.other)
    elif case.side == "pred":
        write(root / "gt" / f"bad.{suffix}", gt)
    else:
        write(root / "pred" / f"bad.{suffix}", pred)
    if with_good:
        good_pair(root, case.task)
    return bad


@pytest.mark.parametrize("name", sorted(PAIR_CASES))
def test_hostile_pair_is_the_files_input_error(tmp_path: Path, name: str) -> None:
    """Default (--on-error fail): exit 1, one line naming the file; --on-error skip: the
    file is one ``errors`` entry and the good pair beside it is evaluated — a bad prediction
    scored as an empty one, a bad GT's pair dropped (SPEC §2)."""
    case = PAIR_CASES[name]
    alone, batch = tmp_path / "alone", tmp_path / "batch"
    bad_alone = build(alone, case, with_good=False)
    bad = build(batch, case, with_good=True)
    out, kept = tmp_path / "out" / "report.json", tmp_path / "kept" / "report.json"
    out.parent.mkdir()
    kept.parent.mkdir()
    args = [*command(case.task), "--pred-dir", "pred", "--gt-dir", "gt", "--jobs", "1", *case.args]
    failing = start_child([*args, "-o", str(out)], alone)  # both at once: two cores
    skipping = start_child([*args, "-o", str(kept), "--on-error", "skip", "--quiet"], batch)
    assert_refused(finish_child(failing), bad_alone.relative_to(alone), case.message, out)

    child = finish_child(skipping)
    out = kept
    assert child.returncode == 0, child.stderr
    assert "Traceback" not in child.stderr and "internal error" not in child.stderr
    report = json.loads(out.read_text())
    assert [(e["stem"], e["path"]) for e in report["errors"]] == [("bad", str(bad.relative_to(batch)))]
    assert case.message in report["errors"][0]["message"]
    assert report["errors"][0]["side"] == case.side
    scored = ["bad", "good"] if case.side == "pred" else ["good"]
    assert [row["stem"] for row in report["rows"]] == scored
    assert leftovers(out.parent) == []


def test_skipped_lines_name_the_file_once(tmp_path: Path) -> None:
    case = PAIR_CASES["iscrowd-2"]
    build(tmp_path, case, with_good=True)
    child = run_child(["eval", "detection", "--pred-dir", "pred", "--gt-dir", "gt", "-o", "r.json",
                       "--jobs", "1", "--on-error", "skip"], tmp_path)
    assert child.returncode == 0
    skipped = [line for line in child.stderr.splitlines() if line.startswith("skipped:")]
    assert skipped == ["skipped: gt/bad.json: object 0: 'iscrowd' must be 0, 1, true or false, got 2"]


# --- run-level inputs: manifests and the pose files they name ---------------------------------


def test_manifest_nested_2000_deep(tmp_path: Path) -> None:
    good_pair(tmp_path, "depth")
    manifest = write(tmp_path / "manifest.json", DEEP)
    out = tmp_path / "out.json"
    child = run_child(["eval", "depth", "--pred-dir", "pred", "--gt-dir", "gt", "-o", str(out),
                       "--jobs", "1", "--manifest", "manifest.json"], tmp_path)
    assert_refused(child, manifest.name, "nested too deeply", out)


def test_manifest_pose_file_with_bad_json(tmp_path: Path) -> None:
    for frame in range(2):
        write(tmp_path / "pred" / f"f{frame}.npy", np.ones((8, 8), np.float32))
    write(tmp_path / "poses" / "bad.json", b"{not json")
    write(tmp_path / "manifest.json", {"samples": [
        {"stem": f"f{i}", "sequence": "s", "frame": i, "pose": "poses/bad.json",
         "intrinsics": [10, 10, 4, 4]} for i in range(2)]})
    out = tmp_path / "out.json"
    child = run_child(["stability", "--task", "depth", "--pred-dir", "pred", "--manifest",
                       "manifest.json", "--warp", "reproject", "-o", str(out), "--jobs", "1"],
                      tmp_path)
    assert_refused(child, "poses/bad.json", "not valid JSON", out)


# --- 3. silent wrong results that are now right ------------------------------------------------


def test_saliency_float_mask_near_the_float_maximum(tmp_path: Path) -> None:
    """Masks of 1.7e308 (divided by their maximum) are all on: IoU 1, not 0 or NaN."""
    for role in ("gt", "pred"):
        write(tmp_path / role / "a.npy", np.full((32, 32), 1.7e308))
    child = run_child(["saliency-mb", "--pred-dir", "pred", "--gt-dir", "gt", "--block-size", "16",
                       "-o", "r.json", "--jobs", "1"], tmp_path)
    # nothing but the one-line summary: no warning
    assert child.returncode == 0 and child.stderr.startswith("saliency-mb: 1 pairs"), child.stderr
    assert child.stderr.count("\n") == 1
    row = json.loads((tmp_path / "r.json").read_text())["rows"][0]
    assert (row["iou"], row["union_blocks"], row["intersection_blocks"]) == (1.0, 4, 4)


# --- 5. special files --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_special_files_are_input_errors_never_a_hang(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "data"
    good_pair(root, "depth")
    write(root / "gt" / "bad.npy", np.ones((4, 4), np.float32))
    bad = root / "pred" / "bad.npy"
    if kind == "fifo":
        os.mkfifo(bad)
        message = "is a FIFO, not a regular file"
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(bad))
        message = "is a socket, not a regular file"
    else:
        bad.symlink_to("/dev/zero")
        message = "is a character device, not a regular file"
    out = tmp_path / "out.json"
    child = run_child(["eval", "depth", "--pred-dir", "data/pred", "--gt-dir", "data/gt", "-o",
                       str(out), "--jobs", "1"], tmp_path, timeout=30)
    assert_refused(child, bad.relative_to(tmp_path), message, out)
    child = run_child(["eval", "depth", "--pred-dir", "data/pred", "--gt-dir", "data/gt", "-o",
                       str(out), "--jobs", "1", "--on-error", "skip", "--quiet"], tmp_path,
                      timeout=30)
    assert child.returncode == 0, child.stderr
    assert [e["stem"] for e in json.loads(out.read_text())["errors"]] == ["bad"]


def test_a_manifest_that_is_a_fifo(tmp_path: Path) -> None:
    good_pair(tmp_path, "depth")
    os.mkfifo(tmp_path / "manifest.json")
    out = tmp_path / "out.json"
    child = run_child(["eval", "depth", "--pred-dir", "pred", "--gt-dir", "gt", "-o", str(out),
                       "--jobs", "1", "--manifest", "manifest.json"], tmp_path, timeout=30)
    assert_refused(child, "manifest.json", "is a FIFO", out)


# --- 6. names that are not UTF-8 ---------------------------------------------------------------


def test_names_that_are_not_utf8_are_evaluated_and_shown_escaped(tmp_path: Path) -> None:
    name = b"caf\xe9"
    for role, value in (("gt", 2.0), ("pred", 2.5)):
        folder = os.fsencode(tmp_path / role)
        os.mkdir(folder)
        with open(os.path.join(folder, name + b".npy"), "wb") as handle:
            handle.write(npy_bytes(np.full((4, 4), value, np.float32)))
        with open(os.path.join(folder, b"bad\xff.npy"), "wb") as handle:
            handle.write(npy_bytes(np.full((4, 4), value, np.float32)) if role == "gt" else b"not npy")
    child = run_child(["eval", "depth", "--pred-dir", "pred", "--gt-dir", "gt", "-o", "r.json",
                       "--jobs", "1", "--on-error", "skip"], tmp_path)
    assert child.returncode == 0, child.stderr
    assert "scored as empty: pred/bad\\377.npy: not a valid .npy file" in child.stderr
    raw = (tmp_path / "r.json").read_bytes()
    raw.decode("utf-8")  # valid UTF-8
    report = json.loads(raw)
    assert [row["stem"] for row in report["rows"]] == ["bad\\377", "caf\\351"]
    assert report["rows"][1]["absrel"] == pytest.approx(0.25)
    assert report["errors"][0]["path"] == "pred/bad\\377.npy"
    # failing: one line, escaped
    out = tmp_path / "out.json"
    child = run_child(["eval", "depth", "--pred-dir", "pred", "--gt-dir", "gt", "-o", str(out),
                       "--jobs", "1"], tmp_path)
    assert_refused(child, os.fsdecode(b"pred/bad\xff.npy"), "not a valid .npy file", out)
    assert "pred/bad\\377.npy" in child.stderr


def test_merged_shards_keep_the_order_of_names_that_are_not_utf8(tmp_path: Path) -> None:
    """A run orders stems by their names on disk; reports show them escaped (``\\377``),
    which sorts differently. Merged shards must come back in the run's order."""
    names = [b"a", b"b\xff", b"b\xc3\xa9", b"\xe9z", b"c", b"Z\xfe", b"t\tx", b"back\\slash\xfe"]
    rng = np.random.default_rng(0)
    for role in ("gt", "pred"):
        folder = os.fsencode(tmp_path / role)
        os.mkdir(folder)
        for name in names:
            with open(os.path.join(folder, name + b".npy"), "wb") as handle:
                handle.write(npy_bytes(rng.uniform(1, 2, (4, 4)).astype(np.float32)))
    whole = run_child(["eval", "depth", "--pred-dir", "pred", "--gt-dir", "gt", "-o", "one.json",
                       "--jobs", "1"], tmp_path)
    assert whole.returncode == 0, whole.stderr
    for k in (1, 2, 3):
        part = run_child(["eval", "depth", "--pred-dir", "pred", "--gt-dir", "gt", "-o",
                          f"part{k}.json", "--jobs", "1", "--shard", f"{k}/3"], tmp_path)
        assert part.returncode == 0, part.stderr
    merged = run_child(["merge", "part3.json", "part1.json", "part2.json", "-o", "merged.json"],
                       tmp_path)
    assert merged.returncode == 0, merged.stderr
    one, both = (json.loads((tmp_path / f).read_text()) for f in ("one.json", "merged.json"))
    stems = [row["stem"] for row in one["rows"]]

    def shown(name: str) -> str:  # reports escape only names that are not UTF-8
        utf8 = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace") == name
        return name if utf8 else escaped(name)

    assert stems == [shown(name) for name in sorted(map(os.fsdecode, names))]
    assert stems != sorted(stems)  # the escaped text alone would order them otherwise
    for key in ("rows", "aggregate", "dataset", "unpaired"):
        assert both[key] == one[key], key


def test_unescaped_reverses_escaped() -> None:
    for raw in (b"b\xff", b"\x01\x02\xff\xfe", b"a\\b\xff", b"tab\tx\xfe", b"caf\xc3\xa9", b"plain"):
        text = os.fsdecode(raw)
        assert unescaped(escaped(text)) == text


# --- 7. output and option errors ---------------------------------------------------------------


@pytest.mark.parametrize("args", [["--jobs", "99999999999999999999999"],
                                  ["--shard", "1/99999999999999999999999"],
                                  ["--jobs", "0"]])
def test_out_of_range_options_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    good_pair(tmp_path, "depth")
    child = run_child(["eval", "depth", "--pred-dir", "pred", "--gt-dir", "gt", "-o", "r.json",
                       *args], tmp_path)
    assert child.returncode == 2, child.stderr
    assert "Traceback" not in child.stderr and "internal error" not in child.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("target", ["folder", "under-a-file", "empty", "full-disk"])
def test_unusable_outputs_are_one_line(tmp_path: Path, target: str) -> None:
    good_pair(tmp_path, "depth")
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("")
    out, code = {"folder": ("folder", 2), "under-a-file": ("file/r.json", 2), "empty": ("", 2),
                 "full-disk": ("/dev/full", 1)}[target]
    child = run_child(["eval", "depth", "--pred-dir", "pred", "--gt-dir", "gt", "-o", out,
                       "--jobs", "1"], tmp_path)
    assert child.returncode == code, child.stderr
    assert "Traceback" not in child.stderr and "internal error" not in child.stderr
    assert len(child.stderr.strip().splitlines()) == 1, child.stderr
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "folder") == []


# --- 8. time: tied keypoints -------------------------------------------------------------------


def test_fifty_thousand_tied_keypoint_predictions_go_to_the_first_listed(tmp_path: Path) -> None:
    """50,000 predictions at one pixel (all tied for every GT point; this once took 146 s):
    ties go to the prediction listed first. The child's timeout is a guard against a hang,
    not a speed bound (benchmarks time things; tests never assert a wall time)."""
    rng = np.random.default_rng(0)
    n = 50_000
    gt = rng.uniform(0, 100, (n, 2)).round(3).tolist()
    write(tmp_path / "gt" / "a.json", {"points0": gt, "points1": gt})
    pred1 = [[float(k), 0.0] for k in range(n)]
    write(tmp_path / "pred" / "a.json", {"points0": [[5.0, 5.0]] * n, "points1": pred1})
    child = run_child(["eval", "keypoints", "--pred-dir", "pred", "--gt-dir", "gt", "-o", "r.json",
                       "--jobs", "1"], tmp_path, timeout=300)
    assert child.returncode == 0, child.stderr
    # ties go to the prediction listed first: index 0, whose image-1 point is (0, 0)
    expected = np.hypot(*np.asarray(gt).T)
    row = json.loads((tmp_path / "r.json").read_text())["rows"][0]
    assert row["mean_match_error"] == pytest.approx(float(expected.mean()), rel=1e-9)


# --- 9. warnings are rpx's own lines -----------------------------------------------------------


def test_decoder_warnings_are_one_rpx_line(rpx, tmp_path: Path, monkeypatch) -> None:
    """Pillow's DecompressionBombWarning (between 1x and 2x its pixel limit) is one line
    naming the file, without Pillow's source line; the image is still evaluated."""
    from PIL import Image

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 600)
    for role in ("gt", "pred"):
        write(tmp_path / role / "a.png", png_bytes(32, 32))
    run = rpx(["saliency-mb", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt"])
    assert run.exit_code == 0, run.stderr
    lines = run.stderr.strip().splitlines()  # the warning, then the one-line summary
    assert len(lines) == 2 and lines[0].startswith("warning: very large image"), run.stderr
    assert lines[1].startswith("saliency-mb: 1 pairs")
    assert "warnings.warn" not in run.stderr and ".py:" not in run.stderr


def test_arithmetic_warnings_never_print_source_lines(rpx, tmp_path: Path) -> None:
    """A numpy warning raised while evaluating becomes one rpx line (no file:line)."""
    import warnings

    from rpx_cli.tasks import TASKS

    task = TASKS["depth"]
    original = type(task).evaluate

    def noisy(self, *args, **kwargs):
        warnings.warn("overflow encountered in multiply", RuntimeWarning, stacklevel=1)
        return original(self, *args, **kwargs)

    good_pair(tmp_path, "depth")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(task), "evaluate", noisy)
        run = rpx(["eval", "depth", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt"])
    assert run.exit_code == 0
    assert run.stderr.strip().splitlines()[:-1] == [  # then the one-line summary
        f"warning: RuntimeWarning: overflow encountered in multiply: 1 file(s), e.g. "
        f"{tmp_path / 'pred' / 'good.npy'}"]


# --- 4. signals --------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.fixture(scope="module")
def busy_folders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough depth pairs for a --jobs 2 run of many seconds: one 2000x2000 map per side,
    and 400 symlinks to it (regular files behind them, so they are inputs)."""
    root = tmp_path_factory.mktemp("busy")
    rng = np.random.default_rng(0)
    for role in ("gt", "pred"):
        folder = root / role
        folder.mkdir()
        np.save(root / f"{role}.npy", (rng.random((2000, 2000)) + 1).astype(np.float32))
        for k in range(400):
            (folder / f"{k:04d}.npy").symlink_to(root / f"{role}.npy")
    return root


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(("signum", "repeats"), [(signal.SIGTERM, 1), (signal.SIGHUP, 1),
                                                 (signal.SIGINT, 1), (signal.SIGTERM, 5),
                                                 (signal.SIGINT, 5)])
def test_signals_stop_the_workers(busy_folders: Path, tmp_path: Path, signum: int,
                                  repeats: int) -> None:
    """Exit 128 + the signal (143, 129, 130), workers gone within a second, no report, no
    temporary file; a signal repeated while rpx stops (Slurm, CI) changes nothing."""
    out = tmp_path / "report.json"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-m", "rpx_cli", "eval", "depth", "--pred-dir", str(busy_folders / "pred"),
         "--gt-dir", str(busy_folders / "gt"), "-o", str(out), "--jobs", "2",
         "--no-digest-cache"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while len(workers) < 2 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
            workers = _children(child.pid)
        assert len(workers) == 2, "the workers never started"
        time.sleep(0.5)  # well inside the run
        assert child.poll() is None, "the run ended before the signal"
        for _ in range(repeats):
            child.send_signal(signum)
            time.sleep(0.01)
        _, stderr = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 128 + signum, stderr
    text = stderr.decode()
    assert "Traceback" not in text and "no report written" in text, text
    gone_by = time.monotonic() + 1.0
    while any(_alive(pid) for pid in workers) and time.monotonic() < gone_by:
        time.sleep(0.02)
    assert not [pid for pid in workers if _alive(pid)], "a worker outlived the run"
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_killed_parent(busy_folders: Path, tmp_path: Path) -> None:
    """SIGKILL cannot be handled: the workers are told by the kernel (PR_SET_PDEATHSIG)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-m", "rpx_cli", "eval", "depth", "--pred-dir", str(busy_folders / "pred"),
         "--gt-dir", str(busy_folders / "gt"), "-o", str(tmp_path / "r.json"), "--jobs", "2",
         "--no-digest-cache"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 30
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
        workers = _children(child.pid)
    assert len(workers) == 2
    child.kill()
    child.wait(timeout=10)
    gone_by = time.monotonic() + 1.0
    while any(_alive(pid) for pid in workers) and time.monotonic() < gone_by:
        time.sleep(0.02)
    assert not [pid for pid in workers if _alive(pid)]


@pytest.mark.parametrize("flag", ["class-map", "class-names", "coco"])
def test_flag_files_nested_2000_deep(tmp_path: Path, flag: str) -> None:
    """Every JSON reader, not only the per-stem ones: files given by a flag."""
    deep = write(tmp_path / "deep.json", DEEP)
    out = tmp_path / "out.json"
    if flag == "coco":
        write(tmp_path / "dt.json", [])
        args = ["eval", "detection", "--coco-gt", "deep.json", "--coco-dt", "dt.json"]
    elif flag == "class-map":
        good_pair(tmp_path, "detection")
        args = ["eval", "detection", "--pred-dir", "pred", "--gt-dir", "gt", "--class-map", "deep.json"]
    else:
        write(tmp_path / "gt" / "a.png", png_bytes(4, 4))
        write(tmp_path / "pred" / "a.png", png_bytes(4, 4))
        args = ["eval", "segmentation", "--pred-dir", "pred", "--gt-dir", "gt", "--class-names",
                "deep.json"]
    child = run_child([*args, "-o", str(out), "--jobs", "1"], tmp_path)
    assert_refused(child, deep.name, "nested too deeply", out)


@pytest.mark.parametrize("command", [["show"], ["validate"], ["check", "--require", "aggregate.x>0"]])
def test_a_report_that_is_a_fifo(tmp_path: Path, command: list[str]) -> None:
    os.mkfifo(tmp_path / "report.json")
    child = run_child([command[0], "report.json", *command[1:]], tmp_path, timeout=30)
    assert child.returncode == 1, child.stderr
    assert child.stderr.strip().splitlines() == [
        "rpx: report.json: is a FIFO, not a regular file (rpx reads regular files only)"]
