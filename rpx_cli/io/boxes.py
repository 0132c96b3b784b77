"""Detection boxes: per-stem JSON files and COCO files.

Per-stem JSON, either a list of objects ``[{"bbox": [...], "label": "cup", "score": 0.9,
"iscrowd": 0}, ...]`` or columns ``{"boxes": [[...]], "labels": [...], "scores": [...],
"iscrowd": [...]}``. Boxes are ``[x1, y1, x2, y2]`` (``box_format="xyxy"``) or
``[x, y, w, h]``; labels are strings or integers (compared as their decimal string);
predictions need a score (any finite number within ±1e12: scores only order detections, so
probabilities, CrowdPose's 1.8 and negative logits alike); GT may carry ``iscrowd`` and ``area`` (ignored on
predictions, whose area is their box's, as pycocotools' ``loadRes``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError
from rpx_cli.io.json import loads_json, strict_json
from rpx_cli.io.values import MAX_MAGNITUDE


@dataclass
class Boxes:
    """The objects of one image: their shapes, labels (strings), scores (predictions),
    crowd flags and areas. ``shape`` holds what the run's similarity kind compares
    (:mod:`rpx_cli.tasks.detection.kinds`): ``[x, y, w, h]`` boxes (N, 4) float64, rotated
    boxes and cuboid footprints (N, 5) float64, polygons a
    :class:`~rpx_cli.io.polygon_set.PolygonSet` as read and WKB bytes once evaluated, masks
    an object array of RLEs, keypoints (N, 3K + 5) float64 rows. (A ``--shard`` part writes
    it under the key ``"box"``, as parts always have.)"""

    shape: np.ndarray  # (N, 4) xywh boxes, or another kind's shapes
    labels: list[str]
    scores: np.ndarray | None  # (N,) for predictions
    crowd: np.ndarray  # (N,) bool
    area: np.ndarray  # (N,) float64: the given area, else w * h
    # (N,) bool: GT that is *ignored* though not a crowd region (VOC's and DOTA's
    # ``difficult``): a detection matched to one is neither a true nor a false positive,
    # and it is not counted in recall (COCOeval's gtIgnore with the ordinary IoU); None:
    # none is
    ignore: np.ndarray | None = None
    # (N,) bool: crowd regions whose class scope is every class (KITTI's ``DontCare``): a
    # detection of any class on one is ignored, not only one of the region's own label.
    # :meth:`scoped` makes them one crowd region per class a frame's detections have,
    # before the views see them; None: none is
    every_class: np.ndarray | None = None
    # (N,) bool: group-of boxes (Open Images' ``IsGroupOf``), kept for a protocol that
    # scores them (DetectionProtocol.group_of); None: none is
    group: np.ndarray | None = None

    @classmethod
    def empty(cls, with_scores: bool) -> Boxes:
        return cls(np.zeros((0, 4)), [], np.zeros(0) if with_scores else None, np.zeros(0, bool),
                   np.zeros(0))

    def __len__(self) -> int:
        return len(self.labels)

    def take(self, index: np.ndarray) -> Boxes:
        """The objects at ``index`` (int64), in that order."""
        labels = self.labels
        return Boxes(self.shape[index], [labels[i] for i in index.tolist()],
                     None if self.scores is None else self.scores[index],
                     self.crowd[index], self.area[index],
                     *(None if column is None else column[index]
                       for column in (self.ignore, self.every_class, self.group)))

    def select(self, keep: np.ndarray) -> Boxes:
        return self.take(np.flatnonzero(keep))

    def ignored(self) -> np.ndarray:
        """(N,) bool: the ignored objects (all False without an ``ignore`` column)."""
        return np.zeros(len(self), bool) if self.ignore is None else self.ignore

    def scoped(self, labels: list[str]) -> Boxes:
        """The objects with each region of every class (:attr:`every_class`) replaced by one
        crowd region per label of ``labels`` (a frame's detections': only they can land on
        one), in :func:`label_order`, after the other objects (crowd regions come last
        wherever COCO compares): a detection of any class is then excused by a region of
        its own class, and every view honours the scope as it honours crowd regions."""
        if self.every_class is None or not self.every_class.any():
            return self if self.every_class is None else replace(self, every_class=None)
        names = sorted(set(labels), key=label_order)
        regions = np.flatnonzero(self.every_class)
        index = np.concatenate([np.flatnonzero(~self.every_class),
                                np.repeat(regions, len(names))]).astype(np.int64)
        out = replace(self, every_class=None).take(index)
        n_kept = len(self) - regions.size
        out.labels[n_kept:] = names * regions.size
        out.crowd[n_kept:] = True
        return out

    def as_json(self, encode: Callable[[Any], Any] | None = None) -> dict[str, Any]:
        """JSON; ``encode`` writes the shapes of a geometry other than boxes."""
        out = {"box": self.shape.tolist() if encode is None else encode(self.shape),
               "labels": self.labels, "crowd": self.crowd.tolist(), "area": self.area.tolist()}
        if self.scores is not None:
            out["scores"] = self.scores.tolist()
        for key in FLAG_COLUMNS:
            column = getattr(self, key)
            if column is not None and column.any():
                out[key] = column.tolist()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], decode: Callable[[Any], Any] | None = None) -> Boxes:
        """The inverse of :meth:`as_json` (``decode`` inverts its ``encode``)."""
        scores = data.get("scores")
        box = np.asarray(data["box"], np.float64).reshape(-1, 4) if decode is None else decode(data["box"])
        flags = {key: None if data.get(key) is None else np.asarray(data[key], bool)
                 for key in FLAG_COLUMNS}
        return cls(box, list(data["labels"]),
                   None if scores is None else np.asarray(scores, np.float64),
                   np.asarray(data["crowd"], bool), np.asarray(data["area"], np.float64), **flags)


# the optional flag columns of Boxes (and BoxTable), written only when one is set
FLAG_COLUMNS = ("ignore", "every_class", "group")


def label_order(label: str) -> tuple[int, int, str]:
    """The order of labels everywhere (the vocabulary's): integers by value first, then
    text."""
    return (0, int(label), "") if label.lstrip("-").isdigit() else (1, 0, label)


def label_text(value: Any, where: str, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{where}: label must be a string or an integer, got {value!r}", path=path)
    return str(value)


def box_format_problem(box: Any, box_format: str) -> str:
    """Why a ``bbox`` has no extent under ``box_format``, naming the other format (a box
    read as ``[x1, y1, x2, y2]`` whose corners are reversed is often ``[x, y, w, h]``)."""
    if box_format == "xyxy":
        return (f"'bbox' {box!r} has x2 < x1 or y2 < y1 as [x1, y1, x2, y2] (--box-format "
                "xyxy, the default); [x, y, w, h] boxes need --box-format xywh")
    return f"negative width or height in 'bbox' {box!r} ([x, y, w, h]: --box-format xywh)"


def object_attributes(item: dict[str, Any], where: str, path: str,
                      prediction: bool) -> tuple[str, float | None, bool, float | None]:
    """An object's ``(label, score, crowd, given area)``, checked: a prediction's score a
    finite number within ±1e12 (never a bool), a GT ``iscrowd`` of 0, 1, true or false and ``area`` a finite
    number >= 0 (None when absent); predictions are never crowd and have no given area."""
    if "label" not in item:
        raise InputError(f"{where}: missing 'label'", path=path)
    label = label_text(item["label"], where, path)
    if prediction:
        score = item.get("score")
        if score is None:
            raise InputError(f"{where}: a prediction needs a 'score' ({SWAP_HINT})", path=path)
        if isinstance(score, bool) or not isinstance(score, (int, float)) or \
                not abs(score) <= MAX_MAGNITUDE:  # (NaN fails too)
            raise InputError(f"{where}: 'score' must be a finite number within "
                             f"±{MAX_MAGNITUDE:g}, got {score!r}", path=path)
        return label, float(score), False, None
    flag = item.get("iscrowd", 0)
    if type(flag) not in (int, bool) or flag not in (0, 1):
        # "0" or [0] would be truthy: a silent crowd region that drops the GT object
        raise InputError(f"{where}: 'iscrowd' must be 0, 1, true or false, got {flag!r}",
                         path=path)
    given = item.get("area")
    if given is not None and (isinstance(given, bool) or not isinstance(given, (int, float))
                              or not math.isfinite(given) or given < 0):
        raise InputError(f"{where}: 'area' must be a finite number >= 0, got {given!r}",
                         path=path)
    return label, None, bool(flag), None if given is None else float(given)


IGNORE_KEYS = ("ignore", "difficult")  # an ignored GT object's flag, either name
EVERY_CLASS_KEYS = ("every_class",)  # a crowd region of every class (KITTI's DontCare)


def ignore_flags(objects: Any, path: str, *, what: str = "object",
                 keys: tuple[str, ...] = IGNORE_KEYS) -> np.ndarray | None:
    """The ignored-GT flags of a per-stem document's objects (a list of objects, columns
    with an ``"ignore"`` list, or ``{"objects": [...]}``) or of a COCO file's annotations:
    ``"ignore"`` (or VOC's ``"difficult"``) 0, 1, true or false on an object; None when no
    object has one (the common case costs one scan of the keys). ``keys``: another flag's
    names (``"every_class"``: :data:`EVERY_CLASS_KEYS`)."""
    if isinstance(objects, dict):
        if "objects" in objects:
            objects = objects["objects"]
        else:
            name = next((key for key in keys if key in objects), None)
            if name is None:
                return None
            column = objects[name]
            if not isinstance(column, list) or any(type(v) not in (int, bool) or v not in (0, 1)
                                                   for v in column):
                raise InputError(f"'{name}' must be a list of 0, 1, true or false", path=path)
            return np.asarray(column, bool)
    if not isinstance(objects, list) or not objects:
        return None
    if not any(isinstance(item, dict) and not item.keys().isdisjoint(keys) for item in objects):
        return None
    out = np.zeros(len(objects), bool)
    for index, item in enumerate(objects):
        for key in keys:
            flag = item.get(key, 0) if isinstance(item, dict) else 0
            if type(flag) not in (int, bool) or flag not in (0, 1):
                raise InputError(f"{what} {index}: '{key}' must be 0, 1, true or false, got "
                                 f"{flag!r}", path=path)
            out[index] |= bool(flag)
    return out


def parse_boxes(data: bytes, path: str, *, prediction: bool, box_format: str) -> Boxes:
    """Parse and validate one per-stem JSON file."""
    document = loads_json(data, path)
    if isinstance(document, dict) and ("boxes" in document or "labels" in document):
        objects = _columns(document, path)
    elif isinstance(document, list):
        objects = document
    else:
        raise InputError('expected a list of {"bbox", "label", "score"} objects or '
                         '{"boxes", "labels", "scores"}', path=path)
    return boxes_from_objects(objects, path, prediction=prediction, box_format=box_format)


def boxes_from_objects(objects: list[Any], path: str, *, prediction: bool, box_format: str,
                       labels: np.ndarray | None = None) -> Boxes:
    """Validate box objects with numpy; the per-object walk below only runs to word the
    error message when something is wrong. ``labels``: category indices given instead of
    each object's ``label`` (COCO files; then ``Boxes.labels`` is that int64 array)."""
    fast = _fast(objects, prediction, box_format, labels)
    if fast is not None:
        return fast
    if labels is not None:
        objects = [{**item, "label": int(code)} for item, code in zip(objects, labels, strict=True)]
        checked = _checked(objects, path, prediction, box_format)
        checked.labels = np.asarray(labels, np.int64)
        return checked
    return _checked(objects, path, prediction, box_format)


_NUMBER = {int, float}


def _fast(objects: list[Any], prediction: bool, box_format: str,
          codes: np.ndarray | None = None) -> Boxes | None:
    """Columns pulled out with C-level ``map``; None when anything needs a closer look (a
    missing key, a string where a number belongs, a bad value) so that ``_checked`` can say
    which object is wrong."""
    n = len(objects)
    if not n:
        return Boxes.empty(prediction)
    if set(map(type, objects)) != {dict}:
        return None
    try:
        bbox = list(map(itemgetter("bbox"), objects))
        labels = codes if codes is not None else list(map(itemgetter("label"), objects))
        scores = list(map(itemgetter("score"), objects)) if prediction else None
    except KeyError:
        return None
    if set(map(type, bbox)) != {list} or set(map(len, bbox)) != {4} or \
            not set(map(type, chain.from_iterable(bbox))) <= _NUMBER:
        return None
    try:  # (an integer beyond float64: the closer look words it)
        box = np.fromiter(chain.from_iterable(bbox), np.float64, count=4 * n).reshape(n, 4)
    except OverflowError:
        return None
    if not (np.abs(box) <= MAX_MAGNITUDE).all():  # NaN and inf fail too
        return None
    if codes is None:
        kinds = set(map(type, labels))
        if not kinds <= {str, int}:
            return None
        labels = list(map(str, labels)) if int in kinds else labels
    if scores is not None:
        if not set(map(type, scores)) <= _NUMBER:
            return None
        try:
            scores = np.array(scores, np.float64)
        except OverflowError:
            return None
        if not (np.abs(scores) <= MAX_MAGNITUDE).all():  # NaN fails too
            return None
    if box_format == "xyxy":
        box[:, 2] -= box[:, 0]
        box[:, 3] -= box[:, 1]
    if (box[:, 2:] < 0).any():
        return None
    area = box[:, 2] * box[:, 3]
    if prediction:  # iscrowd and area describe GT; a detection's area is its box's
        return Boxes(box, labels, scores, np.zeros(n, bool), area)
    crowd = list(map(dict.get, objects, repeat("iscrowd"), repeat(0)))
    if not (set(map(type, crowd)) <= {int, bool} and set(crowd) <= {0, 1}):
        return None
    crowd = np.array(crowd, dtype=bool)
    given = list(map(dict.get, objects, repeat("area")))
    kinds = set(map(type, given))
    if kinds <= _NUMBER:
        area = np.array(given, np.float64)
    elif kinds != {type(None)}:
        if not kinds <= {*_NUMBER, type(None)}:
            return None
        have = np.array([value is not None for value in given])
        area[have] = np.array([value for value in given if value is not None], np.float64)
    if not (np.isfinite(area).all() and (area >= 0).all()):
        return None
    return Boxes(box, labels, scores, crowd, area)


def _checked(objects: list[Any], path: str, prediction: bool, box_format: str) -> Boxes:
    boxes, labels, scores, crowd, area = [], [], [], [], []
    for index, item in enumerate(objects):
        box, label, score, flag, given = _check_one(item, f"object {index}", path, prediction,
                                                    box_format)
        labels.append(label)
        if prediction:
            scores.append(score)
        boxes.append(box)
        crowd.append(flag)
        area.append(box[2] * box[3] if given is None else float(given))
    return Boxes(np.asarray(boxes, np.float64).reshape(-1, 4), labels,
                 np.asarray(scores, np.float64) if prediction else None,
                 np.asarray(crowd, bool), np.asarray(area, np.float64))


def object_problems(objects: list[Any], path: str, *, prediction: bool, box_format: str,
                    where: str = "object", labelled: bool = True) -> dict[int, InputError]:
    """Every bad object of ``objects`` (index -> its error; ``where`` names them, e.g.
    ``"detection"``): what ``--on-error skip`` sets aside in a one-file input.
    ``labelled=False``: labels come from elsewhere (COCO category ids)."""
    out = {}
    for index, item in enumerate(objects):
        if not labelled and isinstance(item, dict):
            item = {**item, "label": 0}
        try:
            _check_one(item, f"{where} {index}", path, prediction, box_format)
        except InputError as exc:
            out[index] = exc
    return out


def _check_one(item: Any, where: str, path: str, prediction: bool,
               box_format: str) -> tuple[tuple[float, float, float, float], str, float | None,
                                         bool, float | None]:
    """One object checked: ``(xywh box, label, score, crowd, given area)``."""
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object", path=path)
    if "bbox" not in item:
        raise InputError(f"{where}: missing 'bbox'", path=path)
    box = item["bbox"]
    if not (isinstance(box, (list, tuple)) and len(box) == 4 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool)
            and abs(v) <= MAX_MAGNITUDE and math.isfinite(v) for v in box)):
        hint = (" (rotated boxes [xc, yc, w, h, angle] need --geometry rotated)"
                if isinstance(box, (list, tuple)) and len(box) == 5 else "")
        raise InputError(f"{where}: 'bbox' must be four finite numbers within ±{MAX_MAGNITUDE:g} "
                         f"(pixels), got {box!r}{hint}", path=path)
    x1, y1, a, b = (float(v) for v in box)
    w, h = (a - x1, b - y1) if box_format == "xyxy" else (a, b)
    if w < 0 or h < 0:
        raise InputError(f"{where}: {box_format_problem(box, box_format)}", path=path)
    label, score, flag, given = object_attributes(item, where, path, prediction)
    return (x1, y1, w, h), label, score, flag, given


def _columns(document: dict[str, Any], path: str) -> list[dict[str, Any]]:
    boxes = document.get("boxes")
    labels = document.get("labels")
    if not isinstance(boxes, list) or not isinstance(labels, list):
        raise InputError("'boxes' and 'labels' must be lists", path=path)
    n = len(boxes)
    for key in ("labels", "scores", "iscrowd", "areas"):
        if key in document and (not isinstance(document[key], list) or len(document[key]) != n):
            raise InputError(f"'{key}' must be a list as long as 'boxes' ({n})", path=path)
    objects = []
    for i in range(n):
        item = {"bbox": boxes[i], "label": labels[i]}
        if "scores" in document:
            item["score"] = document["scores"][i]
        if "iscrowd" in document:
            item["iscrowd"] = document["iscrowd"][i]
        if "areas" in document:
            item["area"] = document["areas"][i]
        objects.append(item)
    return objects


def load_class_map(path: str) -> dict[str, str | None]:
    """JSON object: raw label -> evaluated label, or null to drop the label."""
    from rpx_cli.io.regular import read_bytes

    mapping = strict_json(read_bytes(path), path, "class map: ")
    if not isinstance(mapping, dict):
        raise InputError("class map must be a JSON object {raw label: label or null}", path=path)
    out = {}
    for key, value in mapping.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
            raise InputError(f"class map: {key!r} maps to {value!r}; expected a label or null",
                             path=path)
        out[str(key)] = None if value is None else str(value)
    return out


def apply_class_map(boxes: Boxes, mapping: dict[str, str | None] | None) -> Boxes:
    """Rename labels; drop those mapped to null (labels not in the map are kept)."""
    if not mapping:
        return boxes
    renamed = [mapping.get(label, label) for label in boxes.labels]
    keep = np.array([label is not None for label in renamed], bool)
    kept = boxes.select(keep) if not keep.all() else boxes
    kept.labels = [label for label in renamed if label is not None]
    return kept
