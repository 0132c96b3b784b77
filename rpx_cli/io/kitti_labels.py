"""KITTI object labels: one ``.txt`` per frame, one object per line.

A line is 15 fields, and a 16th, the score, in a results (prediction) file::

    type truncated occluded alpha x1 y1 x2 y2 h w l x y z rotation_y [score]

- ``type``: the class (``Car``, ``Van``, ``Truck``, ``Pedestrian``, ``Person_sitting``,
  ``Cyclist``, ``Tram``, ``Misc``, ``DontCare``);
- ``truncated`` (float, 0 = fully in the image … 1), ``occluded`` (integer 0 fully visible,
  1 partly, 2 largely, 3 unknown; ``DontCare`` writes -1);
- ``alpha``: the observation angle in [-π, π] (a results file without one writes -10);
- ``x1 y1 x2 y2``: the 2D box in the image, pixels (left, top, right, bottom);
- ``h w l``: the 3D size in metres; ``x y z``: the bottom centre of the 3D box in the camera
  frame (x right, y down, z forward); ``rotation_y``: the rotation about the camera's y axis,
  0 when the object's length points along +x (``DontCare`` writes -1 sizes, -1000
  locations and -10).

:func:`parse_kitti_labels` reads a file into :class:`KittiObjects`, the camera-frame columns
as written. Both detection tasks read KITTI through it: ``detection`` takes the 2D box
(``bbox``), the class and the ``DontCare`` regions; ``detection3d`` the 3D box, converted to
rpx's centre/size/yaw by :func:`to_boxes3d` as mmdet3d's ``CameraInstance3DBoxes`` converts
a camera box to a LiDAR one without a calibration (``x_l = z``, ``y_l = −x``, ``z_l = −y``;
the bottom centre lifted by ``h/2`` to the centre; size ``(w, l, h)``; ``yaw = −rotation_y −
π/2``), and the KITTI protocol the columns themselves.

Malformed is an error (docs/detection3d.md): a line with another field count, a field that is not a
number, a non-finite value, a negative size (except on ``DontCare`` lines), a non-integer
``occluded`` or a 2D box with ``x2 < x1`` or ``y2 < y1`` is an
:class:`~rpx_cli.errors.InputError` naming ``file:line``. Blank lines are skipped; an empty
file is a frame without objects. The well-formed file is read without a Python loop over its
lines: every line's field count comes from the bytes at once, and the numbers from one
conversion of every field; the per-line walk runs only to word an error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.boxes3d import Boxes3D, boxes3d_from_objects

DONT_CARE = "DontCare"
NO_ALPHA = -10.0  # a results file's alpha when it has no orientation
FIELDS = 15  # a label line; a results line adds the score


@dataclass
class KittiObjects:
    """One frame's objects as the file writes them (camera frame). ``label`` codes into
    ``names`` (first-seen order)."""

    label: np.ndarray  # (N,) int64 into names
    names: list[str]
    truncated: np.ndarray  # (N,)
    occluded: np.ndarray  # (N,) int64
    alpha: np.ndarray  # (N,)
    bbox: np.ndarray  # (N, 4) x1 y1 x2 y2 (pixels)
    hwl: np.ndarray  # (N, 3) height, width, length (m)
    location: np.ndarray  # (N, 3) bottom centre x, y, z (m, camera frame)
    rotation_y: np.ndarray  # (N,)
    score: np.ndarray | None  # (N,) results files only

    def __len__(self) -> int:
        return int(self.label.size)

    @classmethod
    def empty(cls, with_scores: bool) -> KittiObjects:
        z = np.zeros(0)
        return cls(np.zeros(0, np.int64), [], z, np.zeros(0, np.int64), z.copy(), np.zeros((0, 4)),
                   np.zeros((0, 3)), np.zeros((0, 3)), z.copy(), z.copy() if with_scores else None)

    def label_names(self) -> list[str]:
        return [self.names[k] for k in self.label.tolist()]

    def as_json(self) -> dict[str, Any]:
        """Exact JSON (float64 round-trips)."""
        out = {"kitti": True, "label": self.label.tolist(), "names": list(self.names),
               "truncated": self.truncated.tolist(), "occluded": self.occluded.tolist(),
               "alpha": self.alpha.tolist(), "bbox": self.bbox.ravel().tolist(),
               "hwl": self.hwl.ravel().tolist(), "location": self.location.ravel().tolist(),
               "rotation_y": self.rotation_y.tolist()}
        if self.score is not None:
            out["score"] = self.score.tolist()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KittiObjects:
        def f(key: str, width: int = 0) -> np.ndarray:
            values = np.asarray(data[key], np.float64)
            return values.reshape(-1, width) if width else values

        score = data.get("score")
        return cls(np.asarray(data["label"], np.int64), list(data["names"]), f("truncated"),
                   np.asarray(data["occluded"], np.int64), f("alpha"), f("bbox", 4), f("hwl", 3),
                   f("location", 3), f("rotation_y"),
                   None if score is None else np.asarray(score, np.float64))


def parse_kitti_labels(data: bytes | memoryview, path: str, *, prediction: bool) -> KittiObjects:
    """One KITTI label (GT: 15 fields, a 16th ignored) or results (predictions: 16 fields,
    the last the score) file."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not a KITTI label file (not UTF-8 text: {exc.reason} at byte "
                         f"{exc.start})", path=path) from None
    lines = text.split("\n")
    counts = np.fromiter(map(len, map(str.split, lines)), np.int64, count=len(lines))
    line_numbers = np.flatnonzero(counts) + 1
    counts = counts[counts > 0]
    if not counts.size:
        return KittiObjects.empty(prediction)
    widths = (FIELDS + 1,) if prediction else (FIELDS, FIELDS + 1)
    table = None
    if counts.min() == counts.max() and int(counts[0]) in widths:
        table = _table(text.split(), int(counts[0]))
    if table is None:
        _walk(text, path, widths, prediction)  # raises, naming the line
        raise InputError("not a KITTI label file", path=path)  # pragma: no cover
    names, numbers = table
    objects = _objects(names, numbers, prediction)
    problem = _first_problem(objects, numbers)
    if problem is not None:
        index, message = problem
        raise InputError(f"{path}:{int(line_numbers[index])}: {message}", path=path)
    return objects


def _table(tokens: list[str], width: int) -> tuple[list[str], np.ndarray] | None:
    """The names and the (N, width − 1) numbers; None when a field is not a number."""
    names = tokens[::width]
    del tokens[::width]
    try:
        numbers = np.array(list(map(float, tokens)), np.float64).reshape(len(names), width - 1)
    except ValueError:
        return None
    return names, numbers


def _objects(names: list[str], numbers: np.ndarray, prediction: bool) -> KittiObjects:
    vocabulary = list(dict.fromkeys(names))  # first-seen order
    index = {name: k for k, name in enumerate(vocabulary)}
    label = np.fromiter(map(index.__getitem__, names), np.int64, count=len(names))
    return KittiObjects(label, vocabulary, numbers[:, 0].copy(), numbers[:, 1].astype(np.int64),
                        numbers[:, 2].copy(), numbers[:, 3:7].copy(), numbers[:, 7:10].copy(),
                        numbers[:, 10:13].copy(), numbers[:, 13].copy(),
                        numbers[:, 14].copy() if prediction else None)


def _first_problem(objects: KittiObjects, numbers: np.ndarray) -> tuple[int, str] | None:
    """The first line (index) whose values are out of bounds, and why (one pass when none
    is)."""
    box = objects.bbox
    # one pass for a well-formed file: a finite sum means every value is finite (an overflow
    # to inf goes the slow way), no size or box extent below 0, every occlusion an integer
    if math.isfinite(float(numbers.sum())) and float(objects.hwl.min()) >= 0 and \
            float(np.minimum(box[:, 2] - box[:, 0], box[:, 3] - box[:, 1]).min()) >= 0 and \
            (objects.occluded == numbers[:, 1]).all():
        return None
    negative = (objects.hwl < 0).any(axis=1)
    flipped = (box[:, 2] < box[:, 0]) | (box[:, 3] < box[:, 1])
    fraction = numbers[:, 1] != np.round(numbers[:, 1])
    finite = np.isfinite(numbers).all(axis=1)
    if finite.all() and not (negative.any() or flipped.any() or fraction.any()):
        return None
    dont_care = np.array([name == DONT_CARE for name in objects.names], bool)[objects.label]
    checks = ((~finite, "a non-finite value"), (fraction, "'occluded' must be an integer"),
              (negative & ~dont_care, "a negative size (h w l)"),
              (flipped, "a 2D box with x2 < x1 or y2 < y1"))
    first = None
    for bad, message in checks:
        where = np.flatnonzero(bad)
        if where.size and (first is None or where[0] < first[0]):
            first = (int(where[0]), message)
    if first is None:
        return None
    index, message = first
    fields = ["truncated", "occluded", "alpha", "x1", "y1", "x2", "y2", "h", "w", "l", "x", "y",
              "z", "rotation_y", "score"]
    values = " ".join(f"{name}={value:g}" for name, value in zip(fields, numbers[index].tolist(),
                                                                   strict=False))
    return index, f"{message} ({objects.names[int(objects.label[index])]} {values})"


def _walk(text: str, path: str, widths: tuple[int, ...], prediction: bool) -> None:
    """Find the first malformed line (field count, a non-number) and raise naming it."""
    expected = " or ".join(map(str, widths))
    for number, line in enumerate(text.split("\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) not in widths:
            extra = " (a results file needs the score as the 16th)" if prediction and \
                len(fields) == FIELDS else ""
            raise InputError(f"{path}:{number}: {len(fields)} fields, expected {expected} "
                             f"(type truncated occluded alpha x1 y1 x2 y2 h w l x y z rotation_y"
                             f"{' score' if prediction else ''}){extra}", path=path)
        for column, value in enumerate(fields[1:], start=2):
            try:
                float(value)
            except ValueError:
                raise InputError(f"{path}:{number}: field {column} is not a number: "
                                 f"{value[:40]!r}", path=path) from None
    first = None
    for number, line in enumerate(text.split("\n"), start=1):  # well formed alone, not together
        fields = len(line.split())
        if not fields:
            continue
        if first is None:
            first = (number, fields)
        elif fields != first[1]:
            raise InputError(f"{path}:{number}: {fields} fields, while line {first[0]} has "
                             f"{first[1]} (one file holds labels or results, not both)", path=path)


# --- rpx's frame --------------------------------------------------------------------------------


def to_boxes3d(objects: KittiObjects, classes: Sequence[str] | None = None) -> Boxes3D:
    """The objects other than ``DontCare`` (and, given ``classes``, of those classes only)
    as rpx 3D boxes (centre, ``(w, l, h)``, yaw CCW about +z), through mmdet3d's
    camera-to-LiDAR axis change without a calibration."""
    wanted = [name != DONT_CARE and (classes is None or name in classes) for name in objects.names]
    keep = np.array(wanted, bool)[objects.label] if len(objects) else np.zeros(0, bool)
    h, w, length = (objects.hwl[keep, k] for k in range(3))
    x, y, z = (objects.location[keep, k] for k in range(3))
    center = np.stack([z, -x, -y + h / 2], axis=1)
    size = np.stack([w, length, h], axis=1)
    yaw = -objects.rotation_y[keep] - math.pi / 2
    kept = objects.label[keep]
    used = np.unique(kept)
    remap = np.full(max(len(objects.names), 1), -1, np.int64)
    remap[used] = np.arange(used.size)
    n = int(keep.sum())
    return Boxes3D(center, size, yaw, np.full((n, 2), np.nan), remap[kept],
                   [objects.names[k] for k in used.tolist()],
                   None if objects.score is None else objects.score[keep].copy(),
                   np.full(n, -1, np.int64), [], np.full(n, -1, np.int64),
                   np.hypot(center[:, 0], center[:, 1]))


def from_boxes3d(boxes: Boxes3D, *, truncated: np.ndarray, occluded: np.ndarray,
                 bbox: np.ndarray, alpha: np.ndarray | None) -> KittiObjects:
    """rpx 3D boxes (with each box's ``truncated``, ``occluded`` and 2D box) in the camera
    frame, the inverse of :func:`to_boxes3d`; ``alpha`` None: the observation angle from the
    location, ``rotation_y − atan2(x, z)`` (as mmdet3d writes it)."""
    w, length, h = boxes.size[:, 0], boxes.size[:, 1], boxes.size[:, 2]
    x, y = -boxes.center[:, 1], -(boxes.center[:, 2] - h / 2)
    z = boxes.center[:, 0].copy()
    rotation_y = -boxes.yaw - math.pi / 2
    if alpha is None:
        alpha = rotation_y - np.arctan2(x, z)
    return KittiObjects(boxes.label.copy(), list(boxes.names), np.asarray(truncated, np.float64),
                        np.asarray(occluded, np.int64), np.asarray(alpha, np.float64),
                        np.asarray(bbox, np.float64).reshape(-1, 4), np.stack([h, w, length], axis=1),
                        np.stack([x, y, z], axis=1), rotation_y,
                        None if boxes.score is None else boxes.score.copy())


def kitti_from_box_objects(objects: list[Any], path: str, *, prediction: bool,
                           box_origin: str = "center", where: str = "") -> KittiObjects:
    """rpx 3D box objects (:mod:`rpx_cli.io.boxes3d`) that also carry ``bbox_2d`` ``[x1, y1,
    x2, y2]`` (pixels) and, on GT, ``truncated`` (a number) and ``occluded`` (an integer);
    ``alpha`` optional (GT: derived from the location; a prediction without one has none,
    -10). In the camera frame (:func:`from_boxes3d`)."""
    boxes = boxes3d_from_objects(objects, path, prediction=prediction, box_origin=box_origin,
                                 where=where)
    n = len(objects)
    columns: dict[str, list[float]] = {"bbox_2d": [], "truncated": [], "occluded": [], "alpha": []}
    for index, item in enumerate(objects):
        def fail(message: str, index: int = index) -> InputError:
            return InputError(f"{where}box {index}: {message} (--protocol kitti)", path=path)

        box = item.get("bbox_2d")
        if not (isinstance(box, list) and len(box) == 4 and all(
                type(v) in (int, float) and math.isfinite(v) for v in box)):
            raise fail(f"needs 'bbox_2d': [x1, y1, x2, y2] (four finite numbers, pixels), got "
                       f"{box!r}"[:160])
        if box[2] < box[0] or box[3] < box[1]:
            raise fail(f"'bbox_2d' has x2 < x1 or y2 < y1: {box!r}")
        columns["bbox_2d"].append(box)
        for key, kind in (("truncated", float), ("occluded", int)):
            value = item.get(key)
            if value is None and prediction:
                value = -1
            ok = type(value) is int or (kind is float and type(value) is float and
                                        math.isfinite(value))
            if not ok:
                raise fail(f"a GT box needs {key!r} ({'a number' if kind is float else 'an integer'})"
                           f", got {value!r}")
            columns[key].append(value)
        alpha = item.get("alpha")
        if alpha is not None and not (type(alpha) in (int, float) and math.isfinite(alpha)):
            raise fail(f"'alpha' must be a finite number, got {alpha!r}")
        columns["alpha"].append(math.nan if alpha is None else float(alpha))
    alpha = np.array(columns["alpha"], np.float64).reshape(n)
    objects_ = from_boxes3d(boxes, truncated=np.array(columns["truncated"], np.float64).reshape(n),
                            occluded=np.array(columns["occluded"], np.int64).reshape(n),
                            bbox=np.array(columns["bbox_2d"], np.float64).reshape(n, 4), alpha=None)
    missing = np.isnan(alpha)
    if prediction:
        objects_.alpha = np.where(missing, NO_ALPHA, alpha)
    else:
        objects_.alpha = np.where(missing, objects_.alpha, alpha)
    return objects_
