"""Fuzzing every reader (issue 20): random bytes and mutated valid files, read exactly as a
run reads them (the task's ``read`` inside the engine's guard), must give an input error
naming the file or a valid result — never another exception. The manifest reader too."""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.engine import guarded_parse
from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.manifest import read_manifest
from rpx_cli.tasks import TASKS


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _npz(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def _image(array: np.ndarray, fmt: str, **options) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format=fmt, **options)
    return buffer.getvalue()


def _json(document: object) -> bytes:
    return json.dumps(document).encode()


_RAMP16 = (np.arange(48, dtype=np.uint16).reshape(6, 8) * 1000)
_LABELS = (np.arange(48, dtype=np.uint8).reshape(6, 8) % 5)
_EYE = np.eye(3).tolist()
_BOX3D = {"translation": [10.0, 5.0, 0.5], "size": [1.8, 4.5, 1.5], "rotation": [1.0, 0, 0, 0],
          "detection_name": "car", "detection_score": 0.5}

# (task, role, suffix) -> a valid file the mutations start from
SEEDS: dict[tuple[str, str, str], bytes] = {
    ("depth", "gt", ".npy"): _npy(np.full((6, 8), 2.0, np.float32)),
    ("depth", "gt", ".npz"): _npz(depth=np.full((6, 8), 2.0, np.float32)),
    ("depth", "gt", ".png"): _image(_RAMP16, "PNG"),
    ("depth", "gt", ".pgm"): b"P5\n8 6\n65535\n" + _RAMP16.astype(">u2").tobytes(),
    ("depth", "gt", ".tif"): _image(np.full((6, 8), 2.0, np.float32), "TIFF"),
    ("segmentation", "gt", ".png"): _image(_LABELS, "PNG"),
    ("segmentation", "pred", ".npy"): _npy(_LABELS.astype(np.int64)),
    ("saliency-mb", "gt", ".pgm"): b"P2\n4 2\n255\n0 255 0 255\n255 0 255 0\n",
    ("saliency-mb", "pred", ".npy"): _npy(np.linspace(0, 3, 48).reshape(6, 8)),
    ("nvs", "gt", ".png"): _image(np.zeros((6, 8, 3), np.uint8), "PNG"),
    ("detection", "gt", ".json"): _json([{"bbox": [0, 0, 10, 10], "label": "a", "iscrowd": 0}]),
    ("detection", "pred", ".json"): _json({"boxes": [[0, 0, 10, 10]], "labels": [1],
                                           "scores": [0.5]}),
    ("grounding", "pred", ".json"): _json({"boxes": [[0, 0, 10, 10]], "scores": [0.9]}),
    ("keypoints", "gt", ".json"): _json({"points0": [[0, 0], [1, 2]], "points1": [[0, 0], [1, 2]],
                                         "visibility": [1, 0]}),
    ("tracking", "gt", ".txt"): b"1,1,0,0,10,10,1,1\n2,1,1,1,10,10,1,1\n1,2,5,5,3,3,0,1\n",
    ("tracking", "pred", ".json"): _json({"frames": [{"frame": 1, "objects": [
        {"id": "a", "bbox": [0, 0, 10, 10], "score": 0.5}]}]}),
    ("sparse-depth", "gt", ".json"): _json({"coordinates": [[0, 0], [3, 4]], "depths": [1.0, 2.5]}),
    ("sparse-depth", "pred", ".npy"): _npy(np.array([[0.0, 0.0, 1.0], [3, 4, 2]])),
    ("pose", "gt", ".json"): _json({"quaternion_wxyz": [1, 0, 0, 0], "t": [0, 0, 1]}),
    ("pose", "pred", ".npy"): _npy(np.array([0, 0, 1, 0, 0, 0, 1.0])),
    ("pose", "pred", ".npz"): _npz(position=np.zeros(3), orientation=np.array([0, 0, 0, 1.0])),
    ("classification", "pred", ".json"): _json({"scores": {"cat": 0.7, "dog": 0.3}}),
    ("classification", "gt", ".txt"): b"cat\ndog\n",
    ("detection3d", "pred", ".json"): _json([_BOX3D]),
}

_FOLDER = Path(tempfile.mkdtemp(prefix="rpx-fuzz-"))


def read_as_a_run_does(task_name: str, role: str, suffix: str, data: bytes) -> None:
    """The task's read of ``data`` (as a file) behind the engine's guard: returns, or
    raises InputError naming the file; anything else fails the test."""
    task = TASKS[task_name]
    params = task.normalise_params(dict(task.default_params))
    path = str(_FOLDER / f"{task_name}-{role}{suffix}")
    with open(path, "wb") as handle:
        handle.write(data)
    warnings: list[tuple[str, str]] = []

    def warn(kind: str, where: str) -> None:
        warnings.append((kind, where))

    try:
        guarded_parse(lambda p, b: task.read(p, b, params, warn, role=role), path,
                      FileBuffer(digest=False), warn)
    except InputError as exc:
        assert exc.path == path or path in str(exc), str(exc)
        assert "\n" not in str(exc)
    for kind, where in warnings:
        assert where == path and "\n" not in kind


def mutate(seed: bytes, edits: list[tuple[int, int, int, bytes]]) -> bytes:
    """Apply (kind, position, length, bytes) edits: flip, insert, delete, truncate, repeat."""
    data = bytearray(seed)
    for kind, position, length, extra in edits:
        at = position % (len(data) + 1)
        if kind == 0 and data:
            data[at % len(data)] ^= (extra[0] if extra else 0xFF) or 1
        elif kind == 1:
            data[at:at] = extra
        elif kind == 2:
            del data[at:at + length]
        elif kind == 3:
            del data[at:]
        else:
            data[at:at] = data[at:at + length] * 3
    return bytes(data)


EDITS = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 1 << 16), st.integers(0, 64),
                           st.binary(max_size=16)), min_size=1, max_size=6)
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("reader", sorted(SEEDS), ids=lambda key: "-".join(key))
def test_seed_files_are_valid(reader: tuple[str, str, str]) -> None:
    task, role, suffix = reader
    read_as_a_run_does(task, role, suffix, SEEDS[reader])


@pytest.mark.slow
@pytest.mark.parametrize("reader", sorted(SEEDS), ids=lambda key: "-".join(key))
def test_mutated_files_are_an_input_error_or_a_valid_result(reader: tuple[str, str, str]) -> None:
    task, role, suffix = reader

    @FUZZ
    @given(EDITS)
    def check(edits: list[tuple[int, int, int, bytes]]) -> None:
        read_as_a_run_does(task, role, suffix, mutate(SEEDS[reader], edits))

    check()


@pytest.mark.slow
@pytest.mark.parametrize("reader", sorted(SEEDS), ids=lambda key: "-".join(key))
def test_random_bytes_are_an_input_error_or_a_valid_result(reader: tuple[str, str, str]) -> None:
    task, role, suffix = reader
    seed = SEEDS[reader]

    @FUZZ
    @given(st.binary(max_size=512))
    def check(noise: bytes) -> None:
        # pure noise, and noise behind the seed's first bytes (past the magic number)
        read_as_a_run_does(task, role, suffix, noise)
        read_as_a_run_does(task, role, suffix, seed[:16] + noise)

    check()


MANIFEST_SEED = _json({"schema_version": 1, "samples": [
    {"stem": "a", "phase": "clutter", "difficulty": "easy", "sequence": "s", "frame": 0,
     "pose": np.eye(4).tolist(), "intrinsics": [500, 500, 320, 240]},
    {"stem": "b", "phase": 1, "frame": 1, "pose": "pose.json"}]})


@pytest.mark.slow
@FUZZ
@given(EDITS, st.binary(max_size=64))
def test_manifests_are_an_input_error_or_a_valid_result(edits, pose: bytes) -> None:
    folder = _FOLDER / "manifest"
    folder.mkdir(exist_ok=True)
    (folder / "pose.json").write_bytes(mutate(_json({"R": _EYE, "t": [0, 0, 1]}), [(0, 0, 0, pose)])
                                       if pose else _json({"R": _EYE, "t": [0, 0, 1]}))
    path = folder / "manifest.json"
    path.write_bytes(mutate(MANIFEST_SEED, edits))
    try:
        read_manifest(os.fspath(path))
    except InputError as exc:
        assert "\n" not in str(exc)
