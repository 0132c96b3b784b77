"""Fuzzing every reader (issue 20): random bytes and mutated valid files, read exactly as a
run reads them (the task's ``read`` inside the engine's guard), must give an input error
naming the file or a valid result — never another exception. The manifest reader too.

Which readers there are comes from the task registry (``READERS``: every task's suffixes
as GT and as prediction, and its auxiliary inputs' under their role), and the valid files
the fuzzing starts from come from the golden fixtures (``helpers.golden_inputs``): a
reader's seed is the first file of its own role among its task's golden inputs, else the
first golden input of its suffix it reads as valid (another role's or another task's, with
the task's default options), else a file of ``FORMATS`` — one valid file per format that no
golden case holds (TIFF, JPEG, 16-bit PGM, ...). A newly registered task is covered by its
golden cases without editing a table; a suffix that no file serves fails
``test_every_reader_has_a_valid_seed_file`` by name. Each seed is fuzzed once and every
example is read by every reader it serves."""

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
from helpers import ROOT, golden_inputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.engine import guarded_parse
from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.manifest import read_manifest
from rpx_cli.params import resolve
from rpx_cli.tasks import TASKS


def _image(array: np.ndarray, kind: str, **options) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format=kind, **options)
    return buffer.getvalue()


def _json(document: object) -> bytes:
    return json.dumps(document).encode()


_RAMP16 = (np.arange(48, dtype=np.uint16).reshape(6, 8) * 1000)
_LABELS = (np.arange(48, dtype=np.uint8).reshape(6, 8) % 5)
_EYE = np.eye(3).tolist()


@dataclass(frozen=True)
class Format:
    """A valid file of a format no golden case holds: the suffixes it is written under, the
    readers it may serve (``task:role``; a bare ``task`` is its GT and prediction readers)
    and the task options set for it (read with every other option at its default)."""

    data: bytes
    suffixes: tuple[str, ...]
    readers: tuple[tuple[str, str | None], ...]
    params: dict[str, object] = field(default_factory=dict)

    def claims(self, task: str, role: str, suffix: str) -> bool:
        return suffix in self.suffixes and any(
            name == task and (only == role or (only is None and role in ("gt", "pred")))
            for name, only in self.readers)


def fmt(data: bytes, suffixes: str, readers: str, **params: object) -> Format:
    """``fmt(data, ".tif .tiff", "depth coherence:gt")``"""
    pairs = tuple((name, role or None) for name, _, role in (r.partition(":") for r in readers.split()))
    return Format(data, tuple(suffixes.split()), pairs, params)


# A valid file of each format that no golden case holds, and the readers it may serve; each
# serves only readers without a golden input of their own (see find_seeds)
FORMATS: dict[str, Format] = {
    "16-bit PGM": fmt(b"P5\n8 6\n65535\n" + _RAMP16.astype(">u2").tobytes(), ".pgm",
                      "depth coherence:gt sparse-depth"),
    "float32 TIFF": fmt(_image(np.full((6, 8), 2.0, np.float32), "TIFF"), ".tif .tiff",
                        "depth coherence:gt sparse-depth nvs"),
    "8-bit label TIFF": fmt(_image(_LABELS, "TIFF"), ".tif .tiff", "coherence:pred"),
    "panoptic image JSON": fmt(_json({"ids": [[0, 5], [5, 5]], "image_id": 1, "segments_info": [
        {"id": 5, "category_id": 1}]}), ".json", "panoptic"),
    "RGB JPEG": fmt(_image(np.full((6, 8, 3), 128, np.uint8), "JPEG"), ".jpg .jpeg", "nvs"),
}


# readers that refuse a valid file of a format their task's suffixes list (the suffixes are
# the task's, for both sides): their seed, any file of the suffix, must be an input error
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
_FOLDER = Path(tempfile.mkdtemp(prefix="rpx-fuzz-"))


@dataclass
class Seed:
    """A valid file the fuzzing starts from: its bytes, the suffixes it is written under,
    and the readers it serves, each with the parameters it reads with."""

    data: bytes
    suffixes: tuple[str, ...]
    readers: dict[tuple[str, str, str], dict] = field(default_factory=dict)


@cache
def default_params(task_name: str) -> dict:
    return resolve(TASKS[task_name], {})


def reads(reader: tuple[str, str, str], path: Path, params: dict) -> bool:
    """Whether ``reader`` reads the file at ``path`` as a valid input."""
    try:
        return read_as_a_run_does(reader[0], reader[1], os.fspath(path), params) is None
    except Exception:  # any failure: not a seed of this reader
        return False


def find_seeds() -> dict[str, Seed]:
    """Each registered reader's seed (see the module's docstring), by name: a golden input's
    path relative to the repository, or a format's name. A reader no file serves has none."""
    golden: dict[tuple[str, str, str], tuple[Path, dict]] = {}
    for task, role, path, params in golden_inputs():
        golden.setdefault((task, role, path.suffix.lower()), (path, params))
    seeds: dict[str, Seed] = {}

    def serve(name: str, data: bytes, suffixes: tuple[str, ...], reader, params: dict) -> None:
        seeds.setdefault(name, Seed(data, suffixes)).readers[reader] = params

    for reader in READERS:
        task, role, suffix = reader
        if reader in golden:
            path, params = golden[reader]
            serve(str(path.relative_to(ROOT)), path.read_bytes(), (suffix,), reader, params)
            continue
        # another role's or another task's golden input of the suffix (the reader's own task first)
        others = sorted((key for key in golden if key[2] == suffix), key=lambda key: key[0] != task)
        found = next((key for key in others
                      if reader in REFUSED or reads(reader, golden[key][0], default_params(task))), None)
        if found is not None:
            path = golden[found][0]
            serve(str(path.relative_to(ROOT)), path.read_bytes(), (suffix,), reader, default_params(task))
            continue
        name = next((name for name, one in FORMATS.items() if one.claims(task, role, suffix)), None)
        if name is not None:
            one = FORMATS[name]
            serve(name, one.data, one.suffixes, reader, resolve(TASKS[task], one.params))
    return seeds


def seed_for(task: str, role: str, suffix: str) -> str:
    found = [name for name, one in SEEDS.items() if (task, role, suffix) in one.readers]
    if not found:
        pytest.fail(f"no fuzz seed for {(task, role, suffix)}: add a golden case holding a file "
                    "of that format, or a valid file of it to FORMATS")
    return found[0]


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


SEEDS = find_seeds()


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
    seed = SEEDS[seed_name]
    for suffix in seed.suffixes:
        path = os.fspath(_FOLDER / f"fuzz{suffix}")
        write(path, data)
        for (task, role, served), params in seed.readers.items():
            if served == suffix:
                read_as_a_run_does(task, role, path, params)


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
    """Coverage comes from the registry and the golden fixtures: a new task, role or suffix
    fails here until a golden input (or a file of FORMATS) serves it."""
    task, role, suffix = reader
    name = seed_for(task, role, suffix)
    path = os.fspath(_FOLDER / f"seed{suffix}")
    write(path, SEEDS[name].data)
    error = read_as_a_run_does(task, role, path, SEEDS[name].readers[reader])
    if reader in REFUSED:
        assert error is not None, f"{reader} reads {name!r}: drop it from REFUSED"
    else:
        assert error is None, f"seed {name!r} is not a valid {reader} file: {error}"


def test_a_reader_without_a_seed_is_named() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"no fuzz seed for \('depth', 'gt', '\.exr'\)"):
        seed_for("depth", "gt", ".exr")


def test_every_golden_task_input_is_a_seed() -> None:
    """Every (task, role, suffix) the golden cases hold is fuzzed from their own file."""
    held = {(task, role, path.suffix.lower()) for task, role, path, _ in golden_inputs()}
    assert held <= set(READERS)
    for reader in held:
        name = seed_for(*reader)
        assert (ROOT / name).is_file(), f"{reader} is fuzzed from {name!r}, not from its golden input"


def test_every_format_serves_a_reader_no_golden_input_serves() -> None:
    """FORMATS holds only what the golden fixtures lack: a format whose readers all have a
    golden seed is dropped from it."""
    for name, one in FORMATS.items():
        claimed = [r for r in READERS if one.claims(*r)]
        assert claimed, f"format {name!r} names a reader no task has: {one.readers}"
        assert name in SEEDS, f"format {name!r} serves nothing the golden inputs do not: drop it"


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
