"""3D tracking boxes: one sample's JSON, a scene of samples, nuScenes tracking submissions.

A sample is a JSON list of boxes, or ``{"boxes": [...], "timestamp"?: T}``. A box is the
nuScenes tracking box::

    {"translation": [x, y, z], "size"?: [w, l, h], "rotation"?: [w, x, y, z],
     "velocity"?: [vx, vy], "tracking_id": "...", "tracking_name": "car",
     "tracking_score": 0.8,                     # predictions
     "num_pts"?: 12, "ego_translation"?: [x, y, z], "timestamp"?: T, "scene_token"?: "..."}

Only the centre's x and y, the class, the track and the score take part in the metrics;
``size``, ``rotation`` and ``velocity`` are checked when present (finite, a size > 0, a
quaternion that is not zero) and otherwise unused. ``tracking_id`` is a string or an
integer (its decimal string), unique within a sample; ``num_pts`` an integer >= -1 (-1 or
absent: not given); a score a finite number. The distance from the ego (class ranges) is
the XY norm of ``ego_translation`` when given, else of ``translation``.

A scene given in memory (``Evaluator.update``) is ``{sample_token: sample, ...}`` in time
order (or ``{"samples": {...}}``). The submission layout is ``{"meta"?, "results":
{sample_token: [box]}}``; a GT file adds ``"scenes": {scene_token: [sample tokens in time
order]}`` and may add ``"timestamps": {sample_token: T}``.

Every problem is an :class:`~rpx_cli.errors.InputError` naming the file, the sample and the
box index.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.json import loads_json
from rpx_cli.io.values import MAX_MAGNITUDE, MIN_EXTENT

_NUMBER = {int, float}
_OPTIONAL = (("size", 3), ("rotation", 4), ("velocity", 2), ("ego_translation", 3))


@dataclass
class TrackSample:
    """One sample's boxes as columns."""

    xy: np.ndarray  # (N, 2)
    distance: np.ndarray  # (N,)
    names: list[str]  # (N,) class of each box
    ids: list[str]  # (N,) tracking_id of each box
    score: np.ndarray | None  # (N,) predictions
    num_pts: np.ndarray  # (N,) int64, -1 = not given
    timestamp: int | None  # the sample's, when the document or its boxes give one

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def empty(cls, prediction: bool) -> TrackSample:
        return cls(np.zeros((0, 2)), np.zeros(0), [], [], np.zeros(0) if prediction else None,
                   np.zeros(0, np.int64), None)


def read_sample(data: Any, path: str, *, prediction: bool, where: str = "") -> TrackSample:
    """One sample's document (bytes of a file, or parsed) -> :class:`TrackSample`."""
    document = loads_json(data, path) if not isinstance(data, (list, dict)) else data
    return sample_of(document, path, prediction=prediction, where=where)


def sample_of(document: Any, path: str, *, prediction: bool, where: str = "") -> TrackSample:
    timestamp = None
    if isinstance(document, dict) and "boxes" in document:
        timestamp = document.get("timestamp")
        if timestamp is not None and not _is_timestamp(timestamp):
            raise InputError(f"{where}'timestamp' must be an integer (microseconds), got "
                             f"{timestamp!r}", path=path)
        document = document["boxes"]
    if not isinstance(document, list):
        raise InputError(f"{where}expected a list of tracking boxes or {{\"boxes\": [...]}}",
                         path=path)
    boxes = _fast(document, prediction)
    if boxes is None:
        boxes = _checked(document, path, prediction, where)
    ids = boxes.ids
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        twice = next(i for i in ids if i in seen or seen.add(i))
        raise InputError(f"{where}two boxes have the tracking_id {twice!r}: a track has one box "
                         "in a sample", path=path)
    stamps = {item["timestamp"] for item in document if "timestamp" in item}
    if stamps:
        if len(stamps) > 1 or not all(map(_is_timestamp, stamps)):
            raise InputError(f"{where}the boxes' timestamps must be one integer (microseconds), "
                             f"got {sorted(map(repr, stamps))[:3]}", path=path)
        stamp = stamps.pop()
        if timestamp is not None and stamp != timestamp:
            raise InputError(f"{where}the boxes' timestamp {stamp} is not the sample's {timestamp}",
                             path=path)
        timestamp = stamp
    boxes.timestamp = timestamp
    return boxes


def read_samples(documents: Mapping[str, Any], path: str, *,
                 prediction: bool) -> dict[str, TrackSample]:
    """Many samples' documents (name -> document) at once: the columns of every box pulled
    out in one pass when all are well formed (a submission file's 10,000 samples), each
    sample read on its own otherwise, so the error names it."""
    lists, stamps = [], []
    for document in documents.values():
        stamp = None
        if isinstance(document, dict) and "boxes" in document:
            stamp, document = document.get("timestamp"), document["boxes"]
        if not isinstance(document, list) or (stamp is not None and not _is_timestamp(stamp)):
            lists = None
            break
        lists.append(document)
        stamps.append(stamp)
    boxes = None
    if lists is not None:
        everything = list(chain.from_iterable(lists))
        boxes = _fast(everything, prediction)
        if boxes is not None and not _box_stamps(everything, lists, stamps):
            boxes = None
    if boxes is None:
        return {str(name): sample_of(document, path, prediction=prediction,
                                     where=f"sample {name!r}: ")
                for name, document in documents.items()}
    counts = np.fromiter(map(len, lists), np.int64, count=len(lists))
    sample = np.repeat(np.arange(len(lists)), counts)
    if len({(s, i) for s, i in zip(sample.tolist(), boxes.ids, strict=True)}) != len(boxes.ids):
        return {str(name): sample_of(document, path, prediction=prediction,
                                     where=f"sample {name!r}: ")
                for name, document in documents.items()}  # names the repeated id
    bounds = np.concatenate(([0], np.cumsum(counts))).tolist()
    out = {}
    for k, name in enumerate(documents):
        a, b = bounds[k], bounds[k + 1]
        out[str(name)] = TrackSample(boxes.xy[a:b], boxes.distance[a:b], boxes.names[a:b],
                                     boxes.ids[a:b], None if boxes.score is None else boxes.score[a:b],
                                     boxes.num_pts[a:b], stamps[k])
    return out


def _box_stamps(objects: list[dict[str, Any]], lists: list[list[Any]], stamps: list[Any]) -> bool:
    """Each sample's timestamp from its boxes' (one integer a sample, the document's if it
    gives one), into ``stamps``; False when anything is off (the per-sample path says what)."""
    if not any("timestamp" in item for item in objects):
        return True
    column = _column(objects, "timestamp")
    if column is None or not set(map(type, column)) <= {int}:
        return False
    values = np.array(column, dtype=object)
    if not all(abs(v) < 2**53 for v in column):
        return False
    values = values.astype(np.int64)
    counts = np.fromiter(map(len, lists), np.int64, count=len(lists))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    filled = np.flatnonzero(counts > 0)
    if filled.size:
        low = np.minimum.reduceat(values, starts[filled])
        high = np.maximum.reduceat(values, starts[filled])
        if (low != high).any():
            return False
        for k, stamp in zip(filled.tolist(), low.tolist(), strict=True):
            if stamps[k] is not None and stamps[k] != stamp:
                return False
            stamps[k] = stamp
    return True


def read_submission(data: Any, path: str, *, gt: bool) -> dict[str, Any]:
    """A submission-layout file: ``{"results": {sample: [boxes]}}`` (GT: with ``scenes`` and
    optional ``timestamps``); the sample documents are read with the scene."""
    document = loads_json(data, path)
    if not isinstance(document, dict) or not isinstance(document.get("results"), dict):
        raise InputError('expected the nuScenes submission layout {"results": {sample: [boxes]}}',
                         path=path)
    if gt:
        scenes = document.get("scenes")
        if not isinstance(scenes, dict) or not all(
                isinstance(v, list) and all(isinstance(s, str) for s in v) for v in scenes.values()):
            raise InputError('a GT file needs "scenes": {scene_token: [sample tokens in time '
                             'order]}', path=path)
        stamps = document.get("timestamps", {})
        if not isinstance(stamps, dict) or not all(map(_is_timestamp, stamps.values())):
            raise InputError('"timestamps" must map sample tokens to integers (microseconds)',
                             path=path)
    return document


def _is_timestamp(value: Any) -> bool:
    return type(value) is int and abs(value) < 2**53


def _column(objects: list[dict[str, Any]], key: str) -> list[Any] | None:
    try:
        return list(map(itemgetter(key), objects))
    except KeyError:
        return None


def _numbers(rows: list[Any], width: int) -> np.ndarray | None:
    if set(map(type, rows)) != {list} or set(map(len, rows)) != {width}:
        return None
    flat = list(chain.from_iterable(rows))
    if not set(map(type, flat)) <= _NUMBER:
        return None
    values = np.array(flat, np.float64).reshape(len(rows), width)
    if not np.isfinite(values).all() or (np.abs(values) > MAX_MAGNITUDE).any():
        return None
    return values


def _fast(objects: list[Any], prediction: bool) -> TrackSample | None:
    """Columns with C-level ``map`` when every box is well formed; None otherwise (the
    checked path then names the box)."""
    if not objects:
        return TrackSample.empty(prediction)
    if set(map(type, objects)) != {dict}:
        return None
    translation = _column(objects, "translation")
    names = _column(objects, "tracking_name")
    ids = _column(objects, "tracking_id")
    if translation is None or names is None or ids is None:
        return None
    centre = _numbers(translation, 3)
    if centre is None or set(map(type, names)) != {str} or not set(map(type, ids)) <= {str, int}:
        return None
    if int in set(map(type, ids)):
        ids = list(map(str, ids))
    ego = centre[:, :2]
    for key, width in _OPTIONAL:
        if any(key in o for o in objects):
            values = _column(objects, key)
            checked = None if values is None else _numbers(values, width)
            if checked is None:  # absent from some boxes, null (unknown velocity), or bad
                return None
            if key == "size" and not (checked >= MIN_EXTENT).all():
                return None
            if key == "rotation" and not (np.abs(checked).max(axis=1) > 0).all():
                return None
            if key == "ego_translation":
                ego = checked[:, :2]
    score = None
    if prediction:
        given = _column(objects, "tracking_score")
        if given is None or not set(map(type, given)) <= _NUMBER:
            return None
        score = np.array(given, np.float64)
        if not np.isfinite(score).all():
            return None
    num_pts = np.full(len(objects), -1, np.int64)
    if any("num_pts" in o for o in objects):
        given = _column(objects, "num_pts")
        if given is None or set(map(type, given)) != {int} or min(given) < -1 or max(given) >= 2**63:
            return None
        num_pts = np.array(given, np.int64)
    distance = np.sqrt(ego[:, 0] * ego[:, 0] + ego[:, 1] * ego[:, 1])
    return TrackSample(np.ascontiguousarray(centre[:, :2]), distance, names, ids, score, num_pts,
                       None)


def _checked(objects: list[Any], path: str, prediction: bool, where: str) -> TrackSample:
    xy, distance, names, ids, scores, num_pts = [], [], [], [], [], []
    for index, item in enumerate(objects):
        at = f"{where}box {index}"

        def fail(message: str, at: str = at) -> InputError:
            return InputError(f"{at}: {message}", path=path)

        if not isinstance(item, dict):
            raise fail(f"expected an object, got {type(item).__name__}")
        for key in ("translation", "tracking_id", "tracking_name"):
            if key not in item:
                hint = " (a tracking box needs one; detection boxes are for detection3d)" \
                    if key == "tracking_id" else ""
                raise fail(f"missing {key!r}{hint}")
        centre = _vector(item["translation"], 3, "translation", fail)
        for key, width in _OPTIONAL:
            if item.get(key) is not None:
                value = _vector(item[key], width, key, fail, unknown=key == "velocity")
                if key == "size" and min(value) < MIN_EXTENT:
                    raise fail(f"'size' must be positive (at least {MIN_EXTENT:g} m), got "
                               f"{_short(item[key])}")
                if key == "rotation" and not any(value):
                    raise fail("'rotation' is the zero quaternion")
        track = item["tracking_id"]
        if isinstance(track, bool) or not isinstance(track, (str, int)):
            raise fail(f"'tracking_id' must be a string or an integer, got {_short(track)}")
        name = item["tracking_name"]
        if not isinstance(name, str):
            raise fail(f"'tracking_name' must be a string, got {_short(name)}")
        if prediction:
            score = item.get("tracking_score")
            if score is None:
                raise fail("a prediction needs a 'tracking_score'")
            if type(score) not in _NUMBER or not math.isfinite(score):
                raise fail(f"'tracking_score' must be a finite number, got {_short(score)}")
            scores.append(float(score))
        pts = item.get("num_pts", -1)
        if pts is None:
            pts = -1
        if type(pts) is not int or not -1 <= pts < 2**63:
            raise fail(f"'num_pts' must be an integer >= 0 (or -1: not given), got {_short(pts)}")
        ego = item.get("ego_translation")
        ex, ey = (float(ego[0]), float(ego[1])) if ego is not None else centre[:2]
        xy.append(centre[:2])
        distance.append(math.sqrt(ex * ex + ey * ey))
        names.append(name)
        ids.append(str(track))
        num_pts.append(pts)
    n = len(objects)
    return TrackSample(np.array(xy, np.float64).reshape(n, 2), np.array(distance, np.float64),
                       names, ids, np.array(scores, np.float64) if prediction else None,
                       np.array(num_pts, np.int64), None)


def _vector(value: Any, width: int, key: str, fail: Any, *, unknown: bool = False) -> list[float]:
    if not (isinstance(value, list) and len(value) == width):
        raise fail(f"{key!r} must be a list of {width} numbers, got {_short(value)}")
    if unknown:  # velocity: null for unknown
        value = [0.0 if v is None else v for v in value]
    if not all(type(v) in _NUMBER for v in value):
        raise fail(f"{key!r} must hold numbers, got {_short(value)}")
    if not all(math.isfinite(v) for v in value):
        raise fail(f"{key!r} has a non-finite value: {_short(value)}")
    if any(abs(v) > MAX_MAGNITUDE for v in value):
        raise fail(f"{key!r} has a value beyond ±{MAX_MAGNITUDE:g}: {_short(value)}")
    return [float(v) for v in value]


def scene_document(document: Any) -> Mapping[str, Any] | None:
    """The ``{sample_token: sample}`` of a scene given in memory, or None when ``document``
    is one sample."""
    if isinstance(document, dict) and "boxes" not in document:
        samples = document.get("samples", document)
        return samples if isinstance(samples, dict) else None
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
