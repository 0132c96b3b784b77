"""Point-cloud files: per-point labels and point coordinates, read from bytes in memory.

Labels (one per point):

- ``.label`` — SemanticKITTI: little-endian uint32, the semantic label in the low 16 bits
  and the instance id in the high 16 bits; returned as a zero-copy uint16 view of the low
  halves (``label & 0xFFFF``).
- ``.bin`` — what it holds is said by the caller (``bin_labels``): ``"nuscenes"`` (lidarseg,
  one uint8 per point) or ``"semantickitti"`` (as ``.label``).
- ``.npy`` — an integer array of shape (N,) (any other shape is read in row-major
  order, as ``np_ioueval`` does); bool is read as 0/1.

Points: ``.bin`` float32 with ``fields`` values per point (4: SemanticKITTI x, y, z,
remission; 5: nuScenes x, y, z, intensity, ring), or ``.npy`` of shape (N, >= 2), any
numeric type; returned as an (N, fields) view.
"""

from __future__ import annotations

import os

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.npy import parse_npy
from rpx_cli.io.values import check_labels_fit

LABEL_SUFFIXES = (".label", ".bin", ".npy")
POINT_SUFFIXES = (".bin", ".npy")
BIN_LABELS = ("auto", "semantickitti", "nuscenes")


def read_point_labels(path: str, buffer: FileBuffer, *, bin_labels: str = "auto",
                      words: bool = False) -> np.ndarray:
    """One integer label per point (a view of ``buffer`` where possible). ``words``: a
    SemanticKITTI file (:func:`holds_words`) comes back as its uint32 words, unmasked (the
    caller takes the low 16 bits itself: :mod:`rpx_cli.ops.point_counts`)."""
    suffix = os.path.splitext(path)[1].lower()
    data = buffer.read(path)
    if suffix == ".bin":
        if bin_labels == "nuscenes":
            return data
        if bin_labels != "semantickitti":
            raise InputError(
                "a .bin label file can hold nuScenes lidarseg labels (uint8) or SemanticKITTI "
                "labels (uint32): say which with --label-format nuscenes|semantickitti",
                path=path)
        suffix = ".label"
    if suffix == ".label":
        if data.size % 4:
            raise InputError(f"{data.size} bytes is not a whole number of uint32 labels "
                             "(SemanticKITTI .label: 4 bytes a point)", path=path)
        if words:
            return data.view("<u4")
        return data.view("<u2")[0::2]  # the low 16 bits of each little-endian uint32
    if suffix == ".npy":
        labels = parse_npy(data, path)
        if labels.ndim != 1:  # (N, 1), or a grid as np_ioueval's example: row-major order
            labels = labels.reshape(-1)
        if labels.dtype == np.bool_:
            return labels.view(np.uint8)
        if labels.dtype.kind not in "iu":
            raise InputError(f"labels have dtype {labels.dtype}; per-point labels must be "
                             "integers (a float array is scores, not labels)", path=path)
        check_labels_fit(labels, path)
        return labels
    raise InputError(f"unsupported label file type '{suffix}' (.label, .bin, .npy)", path=path)


def holds_words(path: str, bin_labels: str) -> bool:
    """Whether ``path`` is read as SemanticKITTI uint32 words (``.label``, or ``.bin`` with
    ``bin_labels`` ``"semantickitti"``)."""
    suffix = os.path.splitext(path)[1].lower()
    return suffix == ".label" or (suffix == ".bin" and bin_labels == "semantickitti")


def read_points(path: str, buffer: FileBuffer, *, fields: int, columns: int = 2) -> np.ndarray:
    """The points of a cloud as an (N, F) array with at least ``columns`` coordinates."""
    suffix = os.path.splitext(path)[1].lower()
    data = buffer.read(path)
    if suffix == ".bin":
        width = 4 * fields
        if data.size % width:
            raise InputError(
                f"{data.size} bytes is not a whole number of points of {fields} float32 values "
                f"({width} bytes; --point-fields {fields})", path=path)
        return data.view("<f4").reshape(-1, fields)
    if suffix == ".npy":
        points = parse_npy(data, path)
        if points.ndim != 2 or points.shape[1] < columns:
            raise InputError(f"points must have shape (N, >= {columns}) (x, y{', z' if columns > 2 else ''}"
                             f", ...), got {points.shape}", path=path)
        if points.dtype.kind not in "iuf":
            raise InputError(f"points have dtype {points.dtype}; expected numbers", path=path)
        return points
    raise InputError(f"unsupported point file type '{suffix}' (.bin, .npy)", path=path)
