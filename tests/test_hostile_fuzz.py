"""Fuzzing every reader (issue 20): random bytes and mutated valid files, read exactly as a
run reads them (the task's ``read`` inside the engine's guard), must give an input error
naming the file or a valid result — never another exception. The manifest reader too.

Which readers there are comes from the task registry (``READERS``: every task's suffixes
as GT and as prediction, and its auxiliary inputs' under their role); ``SEEDS`` holds one
valid file per format and says which of them it serves, so a new task or suffix fails
``test_every_reader_has_a_valid_seed_file`` by name until a seed serves it. Each seed is
fuzzed once and every example is read by every reader it serves."""

from __future__ import annotations

import io
import json
import os
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.engine import guarded_parse
from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.manifest import read_manifest
from rpx_cli.params import resolve
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
          "detection_name": "car"}
_POINTS = np.array([[1.0, 2.0, 0.5, 0.1], [10, -3, 1, 0.5], [30, 40, -1, 0.9]], np.float32)


@dataclass(frozen=True)
class Seed:
    """A valid file of one format: the suffixes it is written under, the readers it is a
    valid input of (``task:role``; a bare ``task`` is its GT and prediction readers) and the
    task options set for it (read with every other option at its default)."""

    data: bytes
    suffixes: tuple[str, ...]
    readers: tuple[tuple[str, str | None], ...]
    params: dict[str, object] = field(default_factory=dict)

    def serves(self, task: str, role: str, suffix: str) -> bool:
        return suffix in self.suffixes and any(
            name == task and (only == role or (only is None and role in ("gt", "pred")))
            for name, only in self.readers)


def seed(data: bytes, suffixes: str, readers: str, **params: object) -> Seed:
    """``seed(data, ".tif .tiff", "depth coherence:gt")``"""
    pairs = tuple((name, role or None) for name, _, role in (r.partition(":") for r in readers.split()))
    return Seed(data, tuple(suffixes.split()), pairs, params)


# The mutations start from these files; which (task, role, suffix) each one serves is said
# here, what must be served comes from the registry (READERS).
SEEDS: dict[str, Seed] = {
    # dense maps (depth, coherence's depth side, sparse-depth's dense predictions; NVS)
    "float32 map": seed(_npy(np.full((6, 8), 2.0, np.float32)), ".npy", "depth coherence:gt nvs"),
    "npz map": seed(_npz(depth=np.full((6, 8), 2.0, np.float32)), ".npz",
                    "depth coherence sparse-depth"),
    "16-bit PNG": seed(_image(_RAMP16, "PNG"), ".png", "depth coherence:gt sparse-depth"),
    "16-bit PGM": seed(b"P5\n8 6\n65535\n" + _RAMP16.astype(">u2").tobytes(), ".pgm",
                       "depth coherence:gt sparse-depth"),
    "float32 TIFF": seed(_image(np.full((6, 8), 2.0, np.float32), "TIFF"), ".tif .tiff",
                         "depth coherence:gt sparse-depth nvs"),
    # label maps and masks
    "8-bit label PNG": seed(_image(_LABELS, "PNG"), ".png", "segmentation coherence:pred saliency-mb"),
    "int64 label npy": seed(_npy(_LABELS.astype(np.int64)), ".npy", "segmentation coherence:pred"),
    "8-bit label TIFF": seed(_image(_LABELS, "TIFF"), ".tif .tiff", "coherence:pred"),
    "ASCII PGM mask": seed(b"P2\n4 2\n255\n0 255 0 255\n255 0 255 0\n", ".pgm",
                           "saliency-mb coherence:pred"),
    "float64 score map": seed(_npy(np.linspace(0, 3, 48).reshape(6, 8)), ".npy", "saliency-mb"),
    # images
    "RGB PNG": seed(_image(np.zeros((6, 8, 3), np.uint8), "PNG"), ".png", "nvs panoptic"),
    "panoptic image JSON": seed(_json({"ids": [[0, 5], [5, 5]], "image_id": 1, "segments_info": [
        {"id": 5, "category_id": 1}]}), ".json", "panoptic"),
    "RGB JPEG": seed(_image(np.full((6, 8, 3), 128, np.uint8), "JPEG"), ".jpg .jpeg", "nvs"),
    # boxes, points, poses, labels, tracks, text
    "detection GT objects": seed(_json([{"bbox": [0, 0, 10, 10], "label": "a", "iscrowd": 0}]),
                                 ".json", "detection:gt"),
    "detection columns": seed(_json({"boxes": [[0, 0, 10, 10]], "labels": [1], "scores": [0.5]}),
                              ".json", "detection:pred"),
    "grounding GT": seed(_json({"text": "the red mug", "boxes": [[0, 0, 10, 10], [5, 5, 9, 9]]}),
                         ".json", "grounding:gt"),
    "grounding prediction": seed(_json({"boxes": [[0, 0, 10, 10]], "scores": [0.9]}), ".json",
                                 "grounding:pred"),
    "keypoints GT": seed(_json({"points0": [[0, 0], [1, 2]], "points1": [[0, 0], [1, 2]],
                                "visibility": [1, 0]}), ".json", "keypoints:gt"),
    "keypoints prediction": seed(_json({"points0": [[0, 0], [1, 2]], "points1": [[0.5, 0], [1, 2]]}),
                                 ".json", "keypoints:pred"),
    "MOT text": seed(b"1,1,0,0,10,10,1,1\n2,1,1,1,10,10,1,1\n1,2,5,5,3,3,0,1\n", ".txt", "tracking"),
    "tracks JSON": seed(_json({"frames": [{"frame": 1, "objects": [
        {"id": "a", "bbox": [0, 0, 10, 10], "score": 0.5}]}]}), ".json", "tracking"),
    "sparse points JSON": seed(_json({"coordinates": [[0, 0], [3, 4]], "depths": [1.0, 2.5]}),
                               ".json", "sparse-depth"),
    "sparse points npy": seed(_npy(np.array([[0.0, 0.0, 1.0], [3, 4, 2]])), ".npy", "sparse-depth"),
    "pose JSON": seed(_json({"quaternion_wxyz": [1, 0, 0, 0], "t": [0, 0, 1]}), ".json", "pose"),
    "pose npy": seed(_npy(np.array([0, 0, 1, 0, 0, 0, 1.0])), ".npy", "pose"),
    "pose npz": seed(_npz(position=np.zeros(3), orientation=np.array([0, 0, 0, 1.0])), ".npz", "pose"),
    "class scores": seed(_json({"scores": {"cat": 0.7, "dog": 0.3}}), ".json", "classification:pred"),
    "class label JSON": seed(_json({"label": "cat"}), ".json", "classification:gt"),
    "class label text": seed(b"cat\n", ".txt", "classification"),
    "3D boxes GT": seed(_json([_BOX3D]), ".json", "detection3d:gt"),
    "3D boxes prediction": seed(_json([{**_BOX3D, "detection_score": 0.5}]), ".json",
                                "detection3d:pred"),
    "KITTI labels": seed(b"Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 1.67 3.64 -0.65 1.71 "
                         b"46.70 -1.59\nDontCare -1 -1 -10 503.89 169.71 590.61 190.13 -1 -1 -1 "
                         b"-1000 -1000 -1000 -10\n", ".txt", "detection3d:gt"),
    "KITTI results": seed(b"Car -1 -1 -1.50 580.00 170.00 610.00 201.00 1.60 1.70 3.60 -0.60 1.70 "
                          b"46.00 -1.50 0.87\n", ".txt", "detection3d:pred"),
    "SemanticKITTI labels": seed(np.array([1, 40, 40 | 7 << 16], "<u4").tobytes(), ".label",
                                 "segmentation3d"),
    "lidarseg labels": seed(bytes([1, 17, 24]), ".bin", "segmentation3d",
                            label_format="nuscenes"),
    "point labels npy": seed(_npy(np.array([1, 40, 44], np.int32)), ".npy", "segmentation3d"),
    "KITTI points": seed(_POINTS.tobytes(), ".bin", "segmentation3d:points_dir"),
    "points npy": seed(_npy(_POINTS[:, :3]), ".npy", "segmentation3d:points_dir"),
    "text line": seed("naïve café\n".encode(), ".txt", "cer"),
}

# readers that refuse a valid file of a format their task's suffixes list (the suffixes are
# the task's, for both sides): the seed must be an input error there
REFUSED = {
    ("coherence", "pred", ".npz"): "label maps are not read from .npz",
}


def registered_readers() -> list[tuple[str, str, str]]:
    """Every (task, role, suffix) a run can read: each registered task's suffixes as GT and as
    prediction, and each auxiliary input's suffixes under its role (the option's name)."""
    readers = []
    for name, task in sorted(TASKS.items()):
        roles = [("gt", task.suffixes), ("pred", task.suffixes),
                 *((option.param, option.suffixes) for option in task.aux_inputs)]
        readers += [(name, role, suffix) for role, suffixes in roles for suffix in suffixes]
    return readers


READERS = registered_readers()
# (seed, suffix) -> the registered readers that read it
SERVED = {(name, suffix): [reader for reader in READERS
                           if reader[2] == suffix and one.serves(*reader)]
          for name, one in SEEDS.items() for suffix in one.suffixes}
_FOLDER = Path(tempfile.mkdtemp(prefix="rpx-fuzz-"))


def seed_for(task: str, role: str, suffix: str) -> str:
    found = [name for name, one in SEEDS.items() if one.serves(task, role, suffix)]
    if not found:
        pytest.fail(f"no fuzz seed for {(task, role, suffix)}: add a valid file of that format "
                    "to SEEDS (or name the reader in a seed that fits)")
    if len(found) > 1:
        pytest.fail(f"several fuzz seeds for {(task, role, suffix)}: {found}")
    return found[0]


@cache
def params_for(task_name: str, seed_name: str) -> dict:
    task = TASKS[task_name]
    return resolve(task, SEEDS[seed_name].params)


def read_as_a_run_does(task_name: str, role: str, path: str, params: dict) -> InputError | None:
    """The task's read of the file at ``path`` behind the engine's guard: returns None, or
    the InputError, which must name the file; anything else fails the test."""
    task = TASKS[task_name]
    warnings: list[tuple[str, str]] = []

    def warn(kind: str, where: str) -> None:
        warnings.append((kind, where))

    error = None
    try:
        guarded_parse(lambda p, b: task.read(p, b, params, warn, role=role), path,
                      FileBuffer(digest=False), warn)
    except InputError as exc:
        assert exc.path == path or path in str(exc), str(exc)
        assert "\n" not in str(exc)
        error = exc
    for kind, where in warnings:
        assert where == path and "\n" not in kind
    return error


def write(path: str, data: bytes) -> None:
    """Overwrite the file in place and cut it to length: ext4 flushes a file truncated to
    zero and rewritten when it is closed (``auto_da_alloc``), ~4 ms a file here, more than
    the read the fuzzing is about."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644), "wb") as handle:
        handle.write(data)
        handle.truncate()


def read_everywhere(seed_name: str, data: bytes) -> None:
    """``data`` written under each suffix of the seed and read by each registered reader the
    seed serves (one file per suffix)."""
    for suffix in SEEDS[seed_name].suffixes:
        path = os.fspath(_FOLDER / f"fuzz{suffix}")
        write(path, data)
        for task, role, _ in SERVED[seed_name, suffix]:
            read_as_a_run_does(task, role, path, params_for(task, seed_name))



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


@pytest.mark.parametrize("reader", READERS, ids="-".join)
def test_every_reader_has_a_valid_seed_file(reader: tuple[str, str, str]) -> None:
    """Coverage comes from the registry: a new task, role or suffix fails here until a seed
    serves it."""
    task, role, suffix = reader
    name = seed_for(task, role, suffix)
    path = os.fspath(_FOLDER / f"seed{suffix}")
    write(path, SEEDS[name].data)
    error = read_as_a_run_does(task, role, path, params_for(task, name))
    if reader in REFUSED:
        assert error is not None, f"{reader} reads {name!r}: drop it from REFUSED"
    else:
        assert error is None, f"seed {name!r} is not a valid {reader} file: {error}"


def test_a_reader_without_a_seed_is_named() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"no fuzz seed for \('depth', 'gt', '\.exr'\)"):
        seed_for("depth", "gt", ".exr")


def test_every_seed_serves_a_registered_reader() -> None:
    for name, one in SEEDS.items():
        for task, role in one.readers:
            for suffix in one.suffixes:
                claimed = [r for r in READERS if r[:1] == (task,) and r[2] == suffix
                           and (role is None or r[1] == role)]
                assert claimed, f"seed {name!r} names {(task, role, suffix)}, which no task reads"


@pytest.mark.slow
@pytest.mark.parametrize("seed_name", sorted(SEEDS))
def test_mutated_files_are_an_input_error_or_a_valid_result(seed_name: str) -> None:
    @FUZZ
    @given(EDITS)
    def check(edits: list[tuple[int, int, int, bytes]]) -> None:
        read_everywhere(seed_name, mutate(SEEDS[seed_name].data, edits))

    check()


@pytest.mark.slow
@pytest.mark.parametrize("seed_name", sorted(SEEDS))
def test_random_bytes_are_an_input_error_or_a_valid_result(seed_name: str) -> None:
    data = SEEDS[seed_name].data

    @FUZZ
    @given(st.binary(max_size=512))
    def check(noise: bytes) -> None:
        # pure noise, and noise behind the seed's first bytes (past the magic number)
        read_everywhere(seed_name, noise)
        read_everywhere(seed_name, data[:16] + noise)

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
    write(os.fspath(folder / "pose.json"),
          mutate(_json({"R": _EYE, "t": [0, 0, 1]}), [(0, 0, 0, pose)])
          if pose else _json({"R": _EYE, "t": [0, 0, 1]}))
    path = folder / "manifest.json"
    write(os.fspath(path), mutate(MANIFEST_SEED, edits))
    try:
        read_manifest(os.fspath(path))
    except InputError as exc:
        assert "\n" not in str(exc)
