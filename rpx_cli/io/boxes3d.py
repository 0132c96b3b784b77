"""3D boxes: per-sample JSON files and nuScenes submission files.

A sample's boxes are a JSON list, or an object ``{"boxes": [...]}``. Each box is either

- **nuScenes-style**: ``{"translation": [x, y, z], "size": [w, l, h], "rotation": [w, x, y,
  z], "velocity"?: [vx, vy], "detection_name" | "label", "detection_score" | "score",
  "attribute_name"?, "num_pts"?, "ego_translation"?}`` — the centre, the size in the
  devkit's order (width, length, height) and a quaternion whose yaw is taken as the devkit
  does (:func:`quaternion_yaw`); or
- **compact**: ``{"box": [x, y, z, l, w, h, yaw(, vx, vy)], "label", "score",
  "attribute"?, "num_pts"?, "ego_translation"?}`` — yaw in radians, counter-clockwise about
  +z, 0 along +x; ``z`` is the centre, or the bottom face with ``box_origin="bottom"``.

Ground truth needs no score (a score on a GT box is ignored); a prediction's score is a
number in [0, 1]. Labels are strings or integers (compared as their decimal string). An
unknown velocity (absent, ``null`` or NaN components) is NaN; ``num_pts`` absent is -1;
``attribute_name`` absent or ``""`` is no attribute. Distances for class caps and range
windows are the XY norm of ``ego_translation`` when the box has one, else of the centre.

The submission layout is ``{"results": {sample: [boxes]}, "meta"?: {...}}``, one file for
predictions and one for GT.

Every problem is an :class:`~rpx_cli.errors.InputError` naming the file, the sample (in a
submission file), the box index and what is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError
from rpx_cli.io.json import loads_json
from rpx_cli.io.values import MAX_MAGNITUDE, MIN_EXTENT, beyond

BOX_ORIGINS = ("center", "bottom")
_NUMBER = {int, float}


@dataclass
class Boxes3D:
    """One sample's boxes as float64 columns. Labels and attributes are codes into the
    sample's own ``names`` / ``attributes`` lists (attribute -1: none)."""

    center: np.ndarray  # (N, 3) box centre
    size: np.ndarray  # (N, 3) w, l, h (> 0)
    yaw: np.ndarray  # (N,)
    velocity: np.ndarray  # (N, 2), NaN when unknown
    label: np.ndarray  # (N,) int64 into names
    names: list[str]
    score: np.ndarray | None  # (N,) predictions only
    attribute: np.ndarray  # (N,) int64 into attributes, -1 = none
    attributes: list[str]
    num_pts: np.ndarray  # (N,) int64, -1 = not given
    distance: np.ndarray  # (N,) XY norm of ego_translation, else of the centre

    def __len__(self) -> int:
        return int(self.yaw.size)

    @classmethod
    def empty(cls, with_scores: bool) -> Boxes3D:
        return cls(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 2)),
                   np.zeros(0, np.int64), [], np.zeros(0) if with_scores else None,
                   np.zeros(0, np.int64), [], np.zeros(0, np.int64), np.zeros(0))

    def label_names(self) -> list[str]:
        return [self.names[k] for k in self.label.tolist()]

    def as_json(self) -> dict[str, Any]:
        """Exact JSON (float64 round-trips; unknown velocities as null)."""
        velocity = self.velocity.ravel().tolist()
        out = {"center": self.center.ravel().tolist(), "size": self.size.ravel().tolist(),
               "yaw": self.yaw.tolist(), "velocity": [None if v != v else v for v in velocity],
               "label": self.label.tolist(), "names": list(self.names),
               "attribute": self.attribute.tolist(), "attributes": list(self.attributes),
               "num_pts": self.num_pts.tolist(), "distance": self.distance.tolist()}
        if self.score is not None:
            out["score"] = self.score.tolist()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Boxes3D:
        def floats(values: list[Any]) -> np.ndarray:
            return np.array([math.nan if v is None else v for v in values], np.float64)

        score = data.get("score")
        return cls(floats(data["center"]).reshape(-1, 3), floats(data["size"]).reshape(-1, 3),
                   floats(data["yaw"]), floats(data["velocity"]).reshape(-1, 2),
                   np.asarray(data["label"], np.int64), list(data["names"]),
                   None if score is None else floats(score),
                   np.asarray(data["attribute"], np.int64), list(data["attributes"]),
                   np.asarray(data["num_pts"], np.int64), floats(data["distance"]))


def parse_boxes3d(data: bytes | memoryview, path: str, *, prediction: bool, box_origin: str = "center",
                  classes: Sequence[str] | None = None, where: str = "") -> Boxes3D:
    """Parse and validate one sample's JSON (a list of boxes or ``{"boxes": [...]}``)."""
    document = loads_json(data, path)
    return boxes3d_from_objects(sample_objects(document, path, where), path, prediction=prediction,
                                box_origin=box_origin, classes=classes, where=where)


def sample_objects(document: Any, path: str, where: str = "") -> list[Any]:
    """The list of box objects of a sample document."""
    if isinstance(document, dict) and "boxes" in document:
        document = document["boxes"]
    if not isinstance(document, list):
        raise InputError(f"{where}expected a list of 3D boxes or {{\"boxes\": [...]}}", path=path)
    return document


def read_submission(data: bytes | memoryview, path: str) -> dict[str, Any]:
    """A nuScenes submission-layout file: ``{"results": {sample: [boxes]}}`` → the box
    objects of every sample (file order)."""
    document = loads_json(data, path)
    if not isinstance(document, dict) or not isinstance(document.get("results"), dict):
        raise InputError('expected the nuScenes submission layout {"results": {sample: [boxes]}}',
                         path=path)
    return document["results"]  # each sample's boxes checked with it (sample_objects)


def boxes3d_from_objects(objects: list[Any], path: str, *, prediction: bool,
                         box_origin: str = "center", classes: Sequence[str] | None = None,
                         where: str = "") -> Boxes3D:
    """Validate box objects: columns pulled out with C-level ``map`` when every box is
    well-formed; the per-box walk runs only to word the error when something is wrong."""
    boxes = _fast(objects, prediction, box_origin)
    if boxes is None:
        boxes = _checked(objects, path, prediction, box_origin, where)
    if classes is not None:
        known = set(classes)
        unknown = [name for name in boxes.names if name not in known]
        if unknown:
            first = int(np.flatnonzero(np.isin(boxes.label, [boxes.names.index(u) for u in unknown]))[0])
            raise InputError(f"{where}box {first}: class {unknown[0]!r} is not one of --class-names "
                             f"({', '.join(classes)})", path=path)
    return boxes


def quaternion_yaw(q: np.ndarray) -> np.ndarray:
    """Yaw (radians, in [-π, π]) of ``(w, x, y, z)`` quaternions ``q`` (N, 4).

    The devkit rotates the x axis by the quaternion's rotation matrix and measures the
    angle of the result in the XY plane: ``atan2(R[1, 0], R[0, 0])`` with
    ``R[0, 0] = w² + x² − y² − z²`` and ``R[1, 0] = 2 (x y + w z)`` of the normalised
    quaternion (pyquaternion normalises only when ``|1 − |q|²| >= 1e-14``). Pitch and roll
    are ignored, as the devkit does for boxes in a lidar, ego or global frame. A quaternion
    is first divided by its largest component, so one of a tiny or huge norm (``[k, 0, 0, k]``
    with k = 1e-200 or 1e200, whose squares underflow or overflow) still has its yaw (90°),
    never 0.
    """
    q = np.asarray(q, dtype=np.float64).reshape(-1, 4)
    squares = np.einsum("ij,ij->i", q, q)
    unit = np.abs(1.0 - squares) < 1e-14
    largest = np.abs(q).max(axis=1, initial=0.0)
    scaled = q / np.where(largest == 0, 1.0, largest)[:, None]
    norm = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
    q = np.where(unit[:, None] | (norm[:, None] == 0), q,
                 scaled / np.where(norm == 0, 1.0, norm)[:, None])
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.arctan2(x * y + w * z + w * z + x * y, x * x + w * w - z * z - y * y)


# --- fast path ---------------------------------------------------------------------------------


def _numbers(rows: list[Any], width: int) -> np.ndarray | None:
    """(n, width) float64 from a list of lists of numbers; None if anything else."""
    if set(map(type, rows)) != {list} or set(map(len, rows)) != {width}:
        return None
    flat = list(chain.from_iterable(rows))
    if not set(map(type, flat)) <= _NUMBER:
        return None
    return np.array(flat, np.float64).reshape(len(rows), width)


def _codes(values: list[Any]) -> tuple[np.ndarray, list[str]] | None:
    kinds = set(map(type, values))
    if not kinds <= {str, int}:
        return None
    if int in kinds:
        values = list(map(str, values))
    names = list(dict.fromkeys(values))  # first-seen order
    index = {name: k for k, name in enumerate(names)}
    return np.fromiter(map(index.__getitem__, values), np.int64, count=len(values)), names


def _attribute_codes(values: list[str]) -> tuple[np.ndarray, list[str]]:
    """Codes into the attributes that occur; ``""`` (no attribute) is -1."""
    names = [name for name in dict.fromkeys(values) if name]
    index = {name: k for k, name in enumerate(names)}
    index[""] = -1
    return np.fromiter(map(index.__getitem__, values), np.int64, count=len(values)), names


def _pick(objects: list[dict[str, Any]], *keys: str) -> list[Any] | None:
    """The values of the first of ``keys`` every object has; None when none fits."""
    first = objects[0]
    for key in keys:
        if key in first:
            try:
                return list(map(itemgetter(key), objects))
            except KeyError:
                return None
    return None


def _fast(objects: list[Any], prediction: bool, box_origin: str) -> Boxes3D | None:
    n = len(objects)
    if not n:
        return Boxes3D.empty(prediction)
    if set(map(type, objects)) != {dict}:
        return None
    first = objects[0]
    compact = "box" in first
    names = _pick(objects, "detection_name", "label")
    if names is None:
        return None
    coded = _codes(names)
    if coded is None:
        return None
    label, vocabulary = coded
    if compact:
        if "translation" in first:
            return None
        raw = _pick(objects, "box")
        if raw is None:
            return None
        widths = set(map(len, raw)) if set(map(type, raw)) == {list} else None
        if widths not in ({7}, {9}):
            return None
        values = _numbers(raw, widths.pop())
        if values is None or not np.isfinite(values).all():
            return None
        center = values[:, 0:3].copy()
        size = values[:, [4, 3, 5]]  # (l, w, h) -> (w, l, h)
        yaw = values[:, 6].copy()
        velocity = values[:, 7:9].copy() if values.shape[1] == 9 else np.full((n, 2), np.nan)
        if box_origin == "bottom":
            center[:, 2] += size[:, 2] / 2
    else:
        if "box" in first:
            return None
        parts = [_pick(objects, key) for key in ("translation", "size", "rotation")]
        if any(part is None for part in parts):
            return None
        arrays = [_numbers(part, width) for part, width in zip(parts, (3, 3, 4), strict=True)]
        if any(a is None for a in arrays):
            return None
        center, size, rotation = arrays
        if not (np.isfinite(center).all() and np.isfinite(size).all() and np.isfinite(rotation).all()):
            return None
        if beyond(rotation).any():
            return None
        if not np.einsum("ij,ij->i", rotation, rotation).all():
            return None
        yaw = quaternion_yaw(rotation)
        velocity = np.full((n, 2), np.nan)
        if "velocity" in first:
            given = _pick(objects, "velocity")
            if given is None:
                return None
            velocity = _numbers(given, 2)
            if velocity is None or np.isinf(velocity).any():
                return None
    if not (size >= MIN_EXTENT).all():
        return None
    score = None
    if prediction:
        given = _pick(objects, "detection_score", "score")
        if given is None or not set(map(type, given)) <= _NUMBER:
            return None
        score = np.array(given, np.float64)
        if not ((score >= 0) & (score <= 1)).all():  # NaN fails too
            return None
    attribute, attributes = np.full(n, -1, np.int64), []
    given = _pick(objects, "attribute_name", "attribute")
    if given is not None:
        if not set(map(type, given)) <= {str}:
            return None
        attribute, attributes = _attribute_codes(given)
    elif any("attribute_name" in o or "attribute" in o for o in objects):
        return None
    num_pts = np.full(n, -1, np.int64)
    given = _pick(objects, "num_pts")
    if given is not None:
        if set(map(type, given)) != {int}:
            return None
        if min(given) < -1 or max(given) >= 2**63:  # the checked path names the box
            return None
        num_pts = np.array(given, np.int64)
    elif any("num_pts" in o for o in objects):
        return None
    ego_xy = center[:, :2]
    if "ego_translation" in first:
        given = _pick(objects, "ego_translation")
        ego = None if given is None else _numbers(given, 3)
        if ego is None or not np.isfinite(ego).all():
            return None
        ego_xy = ego[:, :2]
    elif any("ego_translation" in o for o in objects):
        return None
    if beyond(center).any() or beyond(size).any() or beyond(velocity).any() or beyond(ego_xy).any():
        return None  # the checked path names the box
    distance = np.sqrt(ego_xy[:, 0] * ego_xy[:, 0] + ego_xy[:, 1] * ego_xy[:, 1])
    return Boxes3D(np.ascontiguousarray(center), np.ascontiguousarray(size), yaw,
                   np.ascontiguousarray(velocity), label, vocabulary, score, attribute, attributes,
                   num_pts, distance)


# --- checked path (messages) ---------------------------------------------------------------------


def _finite_list(value: Any, width: int) -> bool:
    return isinstance(value, list) and len(value) == width and all(
        type(v) in _NUMBER and math.isfinite(v) for v in value)


def _checked(objects: list[Any], path: str, prediction: bool, box_origin: str, where: str) -> Boxes3D:
    centers, sizes, yaws, velocities, labels, scores = [], [], [], [], [], []
    attrs, num_pts, dists = [], [], []
    for index, item in enumerate(objects):
        at = f"{where}box {index}"

        def fail(message: str, at: str = at) -> InputError:
            return InputError(f"{at}: {message}", path=path)

        if not isinstance(item, dict):
            raise fail(f"expected an object, got {type(item).__name__}")
        if "box" in item and "translation" in item:
            raise fail("give either 'box' (compact) or 'translation'/'size'/'rotation', not both")
        if "box" in item:
            box = item["box"]
            if not (isinstance(box, list) and len(box) in (7, 9)):
                raise fail(f"'box' must be [x, y, z, l, w, h, yaw] or [..., vx, vy] "
                           f"(7 or 9 numbers), got {_short(box)}")
            if not all(type(v) in _NUMBER for v in box):
                raise fail(f"'box' must hold numbers, got {_short(box)}")
            if not all(math.isfinite(v) for v in box):
                raise fail(f"'box' has a non-finite value: {_short(box)}")
            if any(abs(v) > MAX_MAGNITUDE for v in box):
                raise fail(f"'box' has a value beyond ±{MAX_MAGNITUDE:g} (metres): {_short(box)}")
            x, y, z, length, width, height, yaw = (float(v) for v in box[:7])
            if min(length, width, height) < MIN_EXTENT:
                raise fail(f"size must be at least {MIN_EXTENT:g} m, got l={length:g}, w={width:g}, "
                           f"h={height:g}")
            if box_origin == "bottom":
                z += height / 2
            center, size = (x, y, z), (width, length, height)
            velocity = (float(box[7]), float(box[8])) if len(box) == 9 else (math.nan, math.nan)
        else:
            for key, width in (("translation", 3), ("size", 3), ("rotation", 4)):
                if key not in item:
                    raise fail(f"missing {key!r} (or give a compact 'box')")
                value = item[key]
                if not (isinstance(value, list) and len(value) == width):
                    raise fail(f"{key!r} must be a list of {width} numbers, got {_short(value)}")
                if not all(type(v) in _NUMBER for v in value):
                    raise fail(f"{key!r} must hold numbers, got {_short(value)}")
                if not all(math.isfinite(v) for v in value):
                    raise fail(f"{key!r} has a non-finite value: {_short(value)}")
                if any(abs(v) > MAX_MAGNITUDE for v in value):
                    raise fail(f"{key!r} has a value beyond ±{MAX_MAGNITUDE:g}: {_short(value)}")
            center = tuple(float(v) for v in item["translation"])
            size = tuple(float(v) for v in item["size"])
            if min(size) < MIN_EXTENT:
                raise fail(f"'size' must be at least {MIN_EXTENT:g} m (w, l, h), got "
                           f"{_short(item['size'])}")
            rotation = np.array(item["rotation"], np.float64)
            if not rotation.any():
                raise fail("'rotation' is the zero quaternion")
            yaw = float(quaternion_yaw(rotation[None])[0])
            velocity = (math.nan, math.nan)
            if item.get("velocity") is not None:
                value = item["velocity"]
                if not (isinstance(value, list) and len(value) == 2 and all(
                        v is None or (type(v) in _NUMBER and not math.isinf(v)
                                      and not abs(v) > MAX_MAGNITUDE) for v in value)):
                    raise fail(f"'velocity' must be [vx, vy] (numbers within ±{MAX_MAGNITUDE:g}, "
                               f"or null when unknown), got {_short(value)}")
                velocity = tuple(math.nan if v is None else float(v) for v in value)
        name = item.get("detection_name", item.get("label"))
        if name is None:
            raise fail("missing 'detection_name' (or 'label')")
        if isinstance(name, bool) or not isinstance(name, (str, int)):
            raise fail(f"the class must be a string or an integer, got {name!r}")
        score = None
        if prediction:
            score = item.get("detection_score", item.get("score"))
            if score is None:
                raise fail(f"a prediction needs a 'detection_score' (or 'score') ({SWAP_HINT})")
            if type(score) not in _NUMBER or not 0 <= score <= 1:
                raise fail(f"the score must be a number in [0, 1], got {score!r}")
        attribute = item.get("attribute_name", item.get("attribute", ""))
        if attribute is None:
            attribute = ""
        if not isinstance(attribute, str):
            raise fail(f"the attribute must be a string, got {attribute!r}")
        pts = item.get("num_pts")
        if pts is None:
            pts = -1  # not given
        elif type(pts) is not int or not -1 <= pts < 2**63:
            # -1 is the devkit's "not given" (its DetectionBox default); any other negative
            # count would read as that and pass --min-pts
            raise fail(f"'num_pts' must be an integer >= 0 (or -1: not given), got {pts!r}")
        ego = item.get("ego_translation")
        if ego is not None and not (_finite_list(ego, 3) and all(abs(v) <= MAX_MAGNITUDE for v in ego)):
            raise fail(f"'ego_translation' must be three finite numbers within ±{MAX_MAGNITUDE:g}, "
                       f"got {_short(ego)}")
        ex, ey = (float(ego[0]), float(ego[1])) if ego is not None else (center[0], center[1])
        centers.append(center)
        sizes.append(size)
        yaws.append(yaw)
        velocities.append(velocity)
        labels.append(str(name))
        scores.append(score)
        attrs.append(attribute)
        num_pts.append(pts)
        dists.append(math.sqrt(ex * ex + ey * ey))
    n = len(objects)
    index: dict[str, int] = {}
    label = np.array([index.setdefault(v, len(index)) for v in labels], np.int64)
    attribute, attributes = _attribute_codes(attrs)
    return Boxes3D(np.array(centers, np.float64).reshape(n, 3), np.array(sizes, np.float64).reshape(n, 3),
                   np.array(yaws, np.float64), np.array(velocities, np.float64).reshape(n, 2),
                   label, list(index), np.array(scores, np.float64) if prediction else None,
                   attribute, attributes, np.array(num_pts, np.int64), np.array(dists, np.float64))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
