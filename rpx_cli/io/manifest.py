"""Per-stem metadata manifests: phase, difficulty, sequence, frame, pose, intrinsics.

Accepted documents:

- JSON ``{"schema_version": 1, "samples": [{"stem": ..., "scene", "phase", "difficulty",
  "sequence", "frame", "pose", "intrinsics"}, ...]}`` (a bare list of samples works too);
- JSON Lines, one sample object per line;
- RPX manifests: samples keyed ``id`` instead of ``stem``, phases as 0/1/2 (clutter,
  interaction, clean), an optional top-level ``root`` against which relative paths resolve.

``pose`` is a 4x4 camera-to-world matrix, inline or a path (relative to ``root``, else to
the manifest's folder) to a ``.npy`` (4x4, or RPX's 7 numbers), ``.npz`` (RPX ``position`` +
``orientation``) or JSON pose file (any form :mod:`rpx_cli.io.poses` reads, or a 4x4 list).
``intrinsics`` is ``[fx, fy, cx, cy]`` in pixels.

Structural problems (not JSON, a sample that is not an object, no stem, a pose or
intrinsics that cannot be used) are input errors naming the manifest and the sample. Label
problems — an unknown phase or difficulty, a stem listed twice — are collected in
:attr:`Manifest.problems`; the caller decides whether they are fatal (``--missing error``)
or reported.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.json import loads_json
from rpx_cli.io.regular import read_bytes

PHASES = ("clutter", "interaction", "clean")
DIFFICULTIES = ("easy", "medium", "hard")
_RIGID = 1e-6


@dataclass
class ManifestEntry:
    stem: str
    scene: str | None = None
    phase: str | None = None  # one of PHASES, or None (absent or unknown)
    difficulty: str | None = None  # one of DIFFICULTIES, or None
    sequence: str | None = None
    frame: int | None = None
    pose: np.ndarray | None = None  # (4, 4) camera-to-world
    intrinsics: tuple[float, float, float, float] | None = None

    @property
    def group(self) -> str:
        """The sequence a frame belongs to: ``sequence``, else ``scene/phase``, else ``""``."""
        if self.sequence is not None:
            return self.sequence
        if self.scene is not None or self.phase is not None:
            return f"{self.scene or ''}/{self.phase or ''}"
        return ""


@dataclass
class Manifest:
    path: str
    samples: dict[str, ManifestEntry]
    problems: list[str] = field(default_factory=list)

    def check_stems(self, stems: list[str]) -> list[str]:
        """Problems pairing the manifest with the evaluated stems: stems it lacks, and
        manifest stems with no pair."""
        known = set(stems)
        lacking = [s for s in stems if s not in self.samples]
        extra = [s for s in self.samples if s not in known]
        out = []
        if lacking:
            out.append(f"{len(lacking)} evaluated stem(s) have no manifest entry, e.g. {lacking[0]!r}")
        if extra:
            out.append(f"{len(extra)} manifest stem(s) have no pair, e.g. {extra[0]!r}")
        return out


def read_manifest(path: str, *, load_poses: bool = True) -> Manifest:
    """Load and check a manifest (poses are read from their files when ``load_poses``)."""
    data = read_bytes(path)
    document, root = _parse(data, path)
    base = os.path.dirname(os.path.abspath(path))
    if root is not None:
        if not isinstance(root, str):
            raise InputError("'root' must be a string (a folder)", path=path)
        base = os.path.join(base, root)
    samples: dict[str, ManifestEntry] = {}
    problems: list[str] = []
    buffer = FileBuffer(digest=False)
    for index, entry in enumerate(document):
        sample = _sample(entry, index, path, base, buffer if load_poses else None, problems)
        if sample.stem in samples:
            problems.append(f"stem {sample.stem!r} is listed twice (samples[{index}])")
            continue
        samples[sample.stem] = sample
    return Manifest(path, samples, problems)


def _parse(data: bytes, path: str) -> tuple[list[Any], Any]:
    text = data.decode("utf-8", errors="replace")
    try:
        document = json.loads(text)
    except RecursionError:
        raise InputError("not valid JSON (nested too deeply)", path=path) from None
    except ValueError:
        document = None
        lines = [line for line in text.splitlines() if line.strip()]
        try:
            return [json.loads(line) for line in lines], None
        except RecursionError:
            raise InputError("not valid JSON Lines (nested too deeply)", path=path) from None
        except ValueError as exc:
            raise InputError(f"neither JSON nor JSON Lines ({exc})", path=path) from None
    if isinstance(document, list):
        return document, None
    if isinstance(document, dict) and isinstance(document.get("samples"), list):
        version = document.get("schema_version", 1)
        if version != 1:
            raise InputError(f"schema_version {version!r} is not supported (expected 1)", path=path)
        return document["samples"], document.get("root")
    if isinstance(document, dict) and ("stem" in document or "id" in document):
        return [document], None  # JSON Lines with a single line
    raise InputError('expected {"samples": [...]}, a list of samples, or JSON Lines', path=path)


def _sample(entry: Any, index: int, path: str, base: str, buffer: FileBuffer | None,
            problems: list[str]) -> ManifestEntry:
    where = f"samples[{index}]"
    if not isinstance(entry, dict):
        raise InputError(f"{where} is not an object", path=path)
    stem = entry.get("stem", entry.get("id"))
    if isinstance(stem, int) and not isinstance(stem, bool):
        stem = str(stem)
    if not isinstance(stem, str) or not stem:
        raise InputError(f"{where} has no 'stem' (or RPX 'id') string", path=path)
    where = f"{where} ({stem})"
    sample = ManifestEntry(stem)
    for key in ("scene", "sequence"):
        value = entry.get(key)
        if value is not None:
            if not isinstance(value, str | int) or isinstance(value, bool):
                raise InputError(f"{where}: '{key}' must be a string", path=path)
            setattr(sample, key, str(value))
    sample.phase = _label(entry.get("phase"), PHASES, "phase", where, problems, allow_index=True)
    sample.difficulty = _label(entry.get("difficulty"), DIFFICULTIES, "difficulty", where,
                               problems, allow_index=False)
    frame = entry.get("frame")
    if frame is not None:
        if not isinstance(frame, int) or isinstance(frame, bool):
            raise InputError(f"{where}: 'frame' must be an integer, got {frame!r}", path=path)
        sample.frame = frame
    if entry.get("pose") is not None:
        sample.pose = _pose(entry["pose"], where, path, base, buffer)
    if entry.get("intrinsics") is not None:
        sample.intrinsics = _intrinsics(entry["intrinsics"], where, path)
    return sample


def _label(value: Any, names: tuple[str, ...], key: str, where: str, problems: list[str], *,
           allow_index: bool) -> str | None:
    if value is None:
        return None
    if allow_index and isinstance(value, int) and not isinstance(value, bool) \
            and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str) and value.strip().lower() in names:
        return value.strip().lower()
    accepted = ", ".join(names) + (" (or 0/1/2)" if allow_index else "")
    problems.append(f"{where}: unknown {key} {value!r} (expected {accepted})")
    return None


def _intrinsics(value: Any, where: str, path: str) -> tuple[float, float, float, float]:
    if not (isinstance(value, list) and len(value) == 4 and all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in value)):
        raise InputError(f"{where}: 'intrinsics' must be four finite numbers [fx, fy, cx, cy]",
                         path=path)
    fx, fy, cx, cy = (float(v) for v in value)
    if fx <= 0 or fy <= 0:
        raise InputError(f"{where}: focal lengths must be positive, got fx={fx}, fy={fy}", path=path)
    return fx, fy, cx, cy


def _pose(value: Any, where: str, path: str, base: str, buffer: FileBuffer | None) -> np.ndarray | None:
    if isinstance(value, str):
        if buffer is None:
            return None
        return _pose_file(os.path.join(base, value), where, path, buffer)
    try:
        matrix = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        matrix = None
    if matrix is None or matrix.shape != (4, 4):
        raise InputError(f"{where}: 'pose' must be a 4x4 matrix or a path to a pose file", path=path)
    return check_rigid(matrix, f"{where}: 'pose'", path)


def _pose_file(file: str, where: str, path: str, buffer: FileBuffer) -> np.ndarray:
    from rpx_cli.io.npy import parse_npy
    from rpx_cli.io.poses import read_pose

    if not os.path.isfile(file):
        raise InputError(f"{where}: pose file {file} does not exist", path=path)
    suffix = os.path.splitext(file)[1].lower()
    if suffix == ".npy":
        array = parse_npy(buffer.read(file), file)
        if array.shape == (4, 4):
            return check_rigid(array.astype(np.float64), "the pose matrix", file)
    elif suffix == ".json":
        document = loads_json(read_bytes(file), file)
        if isinstance(document, list):
            matrix = np.asarray(document, dtype=np.float64)
            if matrix.shape != (4, 4):
                raise InputError("a pose list must be 4x4", path=file)
            return check_rigid(matrix, "the pose matrix", file)
    pose = read_pose(file, buffer)
    matrix = np.eye(4)
    matrix[:3, :3], matrix[:3, 3] = pose.R, pose.t
    return matrix


def check_rigid(matrix: np.ndarray, name: str, path: str) -> np.ndarray:
    """A finite 4x4 rigid transform (rotation block orthonormal with det +1, last row
    0 0 0 1, all within 1e-6), else an input error."""
    if not np.isfinite(matrix).all():
        raise InputError(f"{name} has a non-finite value", path=path)
    rotation = matrix[:3, :3]
    if np.abs(matrix[3] - [0, 0, 0, 1]).max() > _RIGID \
            or np.abs(rotation.T @ rotation - np.eye(3)).max() > _RIGID \
            or abs(np.linalg.det(rotation) - 1) > _RIGID:
        raise InputError(f"{name} is not a rigid transform (rotation block orthonormal with "
                         "det +1, last row 0 0 0 1)", path=path)
    return matrix
