"""Rigid camera poses: rotation ``R`` (3x3) and translation ``t`` (3,), from any of

- JSON ``{"R": 3x3, "t": [3]}``, ``{"matrix": 4x4}``, ``{"quaternion_wxyz": [4], "t": [3]}``
  or ``{"quaternion_xyzw": [4], "t": [3]}``, or RPX's ``.npz`` members as keys
  ``{"position": [3], "orientation": [4]}`` (x y z w; what ``Evaluator.update`` takes for an
  ``.npz`` pose, as a dict of arrays);
- RPX ``.npy``: 7 numbers ``[x, y, z, qx, qy, qz, qw]``;
- RPX ``.npz``: arrays ``position`` (3 numbers) and ``orientation`` (4 numbers, x y z w).

A quaternion's order is never guessed: the JSON key or the file format names it (the RPX
code read x y z w in its loader and w x y z in its evaluator). Quaternions are normalised.
Rules that make a file an input error: a JSON with none or more than one of the four forms
(or a bare ``"quaternion"`` key, whose order is unknown), ``t`` missing beside ``R`` or a
quaternion or present beside ``matrix``, a value of the wrong shape, a non-finite value, a
quaternion of norm < 1e-12, an ``R`` with max |RᵀR − I| > 1e-6 or |det R − 1| > 1e-6
(det < 0 is a reflection), and a ``matrix`` whose last row is not ``[0, 0, 0, 1]`` within
1e-6 or whose 3x3 block fails the ``R`` test. Other JSON keys are ignored.
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.json import loads_json
from rpx_cli.io.npy import parse_npy, parse_npz
from rpx_cli.io.values import MAX_MAGNITUDE, beyond, json_numbers

POSE_SUFFIXES = (".json", ".npy", ".npz")
FORMS = ("R", "matrix", "quaternion_wxyz", "quaternion_xyzw")
RIGID_TOLERANCE = 1e-6
MIN_QUATERNION_NORM = 1e-12
_EXPECTED = ('expected one of {"R": 3x3, "t": [3]}, {"matrix": 4x4}, '
             '{"quaternion_wxyz": [4], "t": [3]}, {"quaternion_xyzw": [4], "t": [3]}, '
             '{"position": [3], "orientation": [4] (x, y, z, w)}')


class Pose(NamedTuple):
    R: np.ndarray  # (3, 3) float64 rotation
    t: np.ndarray  # (3,) float64 translation


def read_pose(path: str, buffer: FileBuffer) -> Pose:
    """Read one pose file of any supported format (chosen by suffix)."""
    suffix = os.path.splitext(path)[1].lower()
    data = buffer.read(path)
    if suffix == ".json":
        return parse_pose_json(data, path)
    if suffix == ".npy":
        values = _numbers(parse_npy(data, path), 7, "the .npy array", path)
        return Pose(quaternion_to_matrix(values[[6, 3, 4, 5]], "the quaternion", path),
                    values[:3].copy())
    if suffix == ".npz":
        position = _numbers(parse_npz(data, path, "position", _holding(3)), 3, "'position'", path)
        orientation = _numbers(parse_npz(data, path, "orientation", _holding(4)), 4,
                               "'orientation'", path)
        return Pose(quaternion_to_matrix(orientation[[3, 0, 1, 2]], "'orientation'", path),
                    position)
    raise InputError(f"unsupported pose file type '{suffix}'", path=path)


def parse_pose_json(data: np.ndarray, path: str) -> Pose:
    document = loads_json(data, path)
    if not isinstance(document, dict):
        raise InputError(_EXPECTED, path=path)
    forms = [key for key in FORMS if key in document]
    if not forms and ("position" in document or "orientation" in document):
        # RPX's .npz members as keys (what Evaluator.update takes for an .npz pose)
        position = _array(document.get("position"), (3,), "'position'", path)
        orientation = _array(document.get("orientation"), (4,), "'orientation' (x, y, z, w)", path)
        return Pose(quaternion_to_matrix(orientation[[3, 0, 1, 2]], "'orientation'", path),
                    position)
    if len(forms) != 1:
        if "quaternion" in document and not forms:
            raise InputError("'quaternion' does not name its order: use 'quaternion_wxyz' or "
                             "'quaternion_xyzw'", path=path)
        if forms:
            raise InputError(f"holds more than one pose form ({', '.join(forms)}); keep one",
                             path=path)
        raise InputError(_EXPECTED, path=path)
    form = forms[0]
    if form == "matrix":
        if "t" in document:
            raise InputError("'t' beside 'matrix' is ambiguous: the 4x4 matrix holds the "
                             "translation", path=path)
        matrix = _array(document["matrix"], (4, 4), "'matrix'", path)
        last = matrix[3]
        if np.abs(last - (0.0, 0.0, 0.0, 1.0)).max() > RIGID_TOLERANCE:
            raise InputError(f"'matrix' is not rigid: last row must be [0, 0, 0, 1], got "
                             f"{last.tolist()}", path=path)
        rotation = matrix[:3, :3].copy()
        check_rotation(rotation, "the 3x3 block of 'matrix'", path)
        return Pose(rotation, matrix[:3, 3].copy())
    if "t" not in document:
        raise InputError(f"'{form}' needs a translation 't': [x, y, z]", path=path)
    t = _array(document["t"], (3,), "'t'", path)
    if form == "R":
        rotation = _array(document["R"], (3, 3), "'R'", path)
        check_rotation(rotation, "'R'", path)
        return Pose(rotation, t)
    quaternion = _array(document[form], (4,), f"'{form}'", path)
    wxyz = quaternion if form == "quaternion_wxyz" else quaternion[[3, 0, 1, 2]]
    return Pose(quaternion_to_matrix(wxyz, f"'{form}'", path), t)


def check_rotation(rotation: np.ndarray, name: str, path: str) -> None:
    """Raise unless ``rotation`` is orthonormal with det +1, both within 1e-6."""
    gram = rotation.T @ rotation
    gram.flat[::4] -= 1.0
    off = float(np.abs(gram).max())
    a, b, c, d, e, f, g, h, i = rotation.ravel().tolist()
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    if det < 0:
        raise InputError(f"{name} is a reflection (det {det:.6g}), not a rotation", path=path)
    if off > RIGID_TOLERANCE or abs(det - 1.0) > RIGID_TOLERANCE:
        raise InputError(f"{name} is not a rotation: max |R^T R - I| = {off:.3g}, det = "
                         f"{det:.9g} (tolerance {RIGID_TOLERANCE:g})", path=path)


def quaternion_to_matrix(wxyz: np.ndarray, name: str, path: str) -> np.ndarray:
    """Rotation matrix of the quaternion ``(w, x, y, z)`` after normalising it."""
    w, x, y, z = wxyz.tolist()
    norm = math.sqrt(w * w + x * x + y * y + z * z)  # components are within ±1e12
    if norm < MIN_QUATERNION_NORM:
        raise InputError(f"{name} is a zero quaternion (norm {norm:.3g})", path=path)
    w, x, y, z = w / norm, x / norm, y / norm, z / norm
    return np.array([
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
        [2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)],
        [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)],
    ])


def _array(value: object, shape: tuple[int, ...], name: str, path: str) -> np.ndarray:
    """A JSON value as a finite float64 array of exactly ``shape``."""
    # numbers only: strings, null and booleans are refused, not converted
    array = json_numbers(value, len(shape))
    if array is None or array.shape != shape:
        wanted = "x".join(map(str, shape)) if len(shape) > 1 else f"[{shape[0]}]"
        raise InputError(f"{name} must be {wanted} numbers", path=path)
    return _checked_values(array, name, path)


def _checked_values(array: np.ndarray, name: str, path: str) -> np.ndarray:
    """Finite, and within ±MAX_MAGNITUDE (a translation of 1e308 m overflows every error)."""
    if not np.isfinite(array).all():
        raise InputError(f"{name} holds a non-finite value", path=path)
    if beyond(array).any():
        raise InputError(f"{name} holds a value beyond ±{MAX_MAGNITUDE:g} (translations are "
                         "metres)", path=path)
    return array


def _holding(count: int):
    """An ``.npz`` header check: exactly ``count`` numbers (before the member is inflated)."""
    def check(shape: tuple[int, ...], dtype: np.dtype) -> str | None:
        if math.prod(shape) != count or dtype.kind not in "uif":
            return f"must hold {count} numbers, got shape {shape} of {dtype}"
        return None
    return check


def _numbers(array: np.ndarray, count: int, name: str, path: str) -> np.ndarray:
    """``count`` finite numbers from an array of any shape holding exactly that many."""
    if array.size != count or array.dtype.kind not in "uif":
        raise InputError(f"{name} must hold {count} numbers, got shape {array.shape} of "
                         f"{array.dtype}", path=path)
    return _checked_values(array.astype(np.float64).reshape(count), name, path)
