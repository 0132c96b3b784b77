"""Numbers from untrusted files: numbers only, finite, and within a physical magnitude.

JSON readers take arrays of numbers through :func:`json_numbers`, which never converts a
string or a boolean (numpy would read ``[true, 0, 0]`` as ``[1, 0, 0]`` and ``"2"`` as 2).
:data:`MAX_MAGNITUDE` bounds coordinates (pixels), depths and translations (metres): no
camera, image or scene comes near 1e12 in either unit, and below it every squared
difference, sum over a billion terms and mean stays finite in float64 (and every per-pixel
depth term in float32), so a metric can never overflow into a report. A value beyond it is
an input error naming the file. Depths have a floor too (:data:`MIN_DEPTH`, the prediction
clip of the depth metrics): a GT depth of 5e-324 m would make relative errors infinite.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np

MAX_MAGNITUDE = 1e12
# the largest area a detection may have: where COCO's "all" area range ends (1e5²). A result
# of a larger area would fall outside every range and leave COCO AP unseen — a false
# positive made to vanish (a huge "bbox" on a mask or keypoint result) — so it is refused
MAX_DETECTION_AREA = 1e10
NUMBER_TYPES = frozenset({int, float})  # what a JSON number parses to (never bool)
MIN_DEPTH = 1e-6
# the smallest size of an object with an extent (a rotated box's width and height, a cuboid's
# and a 3D box's sizes, a polygon ring's width and height; pixels or metres): below it,
# areas and volumes of a plausible object underflow (a 1e-170 px box has area 0) and an
# identical prediction scored IoU 0, or ASE 1 — such an object is an input error
MIN_EXTENT = 1e-6


def json_numbers(value: Any, ndim: int) -> np.ndarray | None:
    """``value`` (lists nested ``ndim`` deep) as float64 when every leaf is a JSON number
    (an int or a float, never a bool or a string) and the nesting is regular; else None."""
    leaves = value
    try:
        if not isinstance(value, list):
            return None
        for _ in range(ndim - 1):
            if not all(type(item) is list for item in leaves):
                return None
            leaves = list(chain.from_iterable(leaves))
    except TypeError:
        return None
    if not set(map(type, leaves)) <= {int, float}:
        return None
    try:
        array = np.asarray(value, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):  # ragged, or an int beyond float64
        return None
    return array if array.ndim == ndim else None


def beyond(values: np.ndarray, limit: float = MAX_MAGNITUDE) -> np.ndarray:
    """Where ``|values| > limit`` (NaN is not beyond: callers check finiteness first)."""
    return np.abs(values) > limit


def check_labels_fit(labels: np.ndarray, path: str) -> None:
    """Integer labels are compared as int64 (ignore indices, label maps, class counts): a
    uint64 label beyond the int64 range (2^64 - 1 would read as -1, the default ignore
    index, and its point would silently drop out) is an input error naming the value."""
    if labels.dtype == np.uint64 and labels.size and int(labels.max()) > np.iinfo(np.int64).max:
        from rpx_cli.errors import InputError

        raise InputError(f"label {int(labels.max())} is beyond the int64 range labels are "
                         f"compared in (at most {np.iinfo(np.int64).max})", path=path)


def number_rows(rows: list[Any], width: int) -> np.ndarray | None:
    """(n, width) float64 from a list of lists of numbers; None if anything else."""
    if rows and (set(map(type, rows)) != {list} or set(map(len, rows)) != {width}):
        return None
    flat = list(chain.from_iterable(rows))
    if not set(map(type, flat)) <= NUMBER_TYPES:
        return None
    return np.array(flat, np.float64).reshape(len(rows), width)


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def area_problem(area: np.ndarray, what: str) -> str | None:
    """Why a detection's area cannot be (the first beyond :data:`MAX_DETECTION_AREA`, named
    ``f"{what} {index}"``), or None."""
    beyond_all = np.flatnonzero(np.asarray(area, np.float64) > MAX_DETECTION_AREA)
    if not beyond_all.size:
        return None
    k = int(beyond_all[0])
    return (f"{what} {k}: its area {float(area[k]):g} is beyond COCO's largest area range "
            f"(1e5² = {MAX_DETECTION_AREA:g} px²): it would leave COCO AP unseen")


def beyond_image(box: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Where a box ``[x, y, w, h]`` lies beyond its image (``size`` its ``(h, w)``; -1: not
    given, never beyond) by more than the image's own size on a side: ``x < -w``, ``y < -h``,
    ``x + bw > 2w`` or ``y + bh > 2h``. No detector's box is there; a false positive made
    to fall outside what is looked at is."""
    h, w = size[:, 0].astype(np.float64), size[:, 1].astype(np.float64)
    known = (h > 0) & (w > 0)
    x, y, bw, bh = box[:, 0], box[:, 1], box[:, 2], box[:, 3]
    return known & ((x < -w) | (y < -h) | (x + bw > 2 * w) | (y + bh > 2 * h))


def beyond_image_problem(box: np.ndarray, size: np.ndarray, what: str) -> str:
    """The words of :func:`beyond_image` for one box (``what``: ``"detection 7"``)."""
    shown = ", ".join(f"{v:g}" for v in box.tolist())
    return (f"{what}: its bbox [{shown}] lies beyond its {int(size[1])}x{int(size[0])} image "
            "by more than the image's own size")
