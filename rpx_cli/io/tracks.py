"""Multi-object tracks of one sequence: MOTChallenge ``.txt`` or JSON.

MOTChallenge text: one box per line, ``frame, id, x, y, w, h, conf, ...`` (commas or
whitespace). In a GT file column 7 is the "consider" flag (0 = ignore this box; TrackEval's
``zero_marked``) and column 8 the class; in a results file column 7 is the confidence.
MOTChallenge GT files are sorted by track id and results files by frame, so lines may come
in any order, with one rule that both layouts satisfy: each track's frames increase down
the file. A frame listed again for one id is a duplicate, an earlier one is out of order.

JSON: ``{"frames": [{"frame": n, "objects": [{"id": ..., "bbox": [x1, y1, x2, y2],
"score"?: s}, ...]}, ...]}`` with frames in increasing order; ids are integers or strings.
Confidences are checked but not kept: CLEAR, Identity and HOTA do not use them.

Boxes are kept as ``[x1, y1, x2, y2]`` float64; MOT ``x + w`` is computed exactly as
TrackEval does, so IoUs agree bit for bit.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.json import loads_json
from rpx_cli.io.mask_arrays import as_array
from rpx_cli.io.memory import InMemory
from rpx_cli.io.values import MAX_MAGNITUDE

_SEPARATORS = re.compile(rb"[,\s]+")
_MAX_EXACT = 2.0**53
_JSON_NUMBER_TEXT = b"0123456789+-.eE,\r\n"


@dataclass
class Tracks:
    """The boxes of one sequence in file order (``frame`` and ``ids`` int64)."""

    frame: np.ndarray  # (N,)
    ids: np.ndarray  # (N,) integer track ids (JSON string ids numbered by first appearance)
    box: np.ndarray  # (N, 4) x1, y1, x2, y2
    flag: np.ndarray  # (N,) MOT GT column 7 (1 when absent)
    cls: np.ndarray  # (N,) MOT GT column 8 (-1 when absent)
    # MOT text whose column 7 holds a fraction: confidences, as a results file has (in a GT
    # file the column is the 0/1 consider flag, and a fraction truncates to 0: ignored)
    scored: bool = False

    @classmethod
    def empty(cls) -> Tracks:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 4)),
                   np.ones(0, np.int64), np.full(0, -1, np.int64))

    def __len__(self) -> int:
        return len(self.frame)

    def where(self, keep: np.ndarray) -> Tracks:
        return Tracks(self.frame[keep], self.ids[keep], self.box[keep], self.flag[keep],
                      self.cls[keep])


def read_tracks(path: str, buffer: FileBuffer, *, box_format: str = "xyxy") -> Tracks:
    """Load a sequence; ``box_format`` applies to JSON (MOT text is always x, y, w, h). In
    memory (``Evaluator.update``) an array stands for the MOT text's rows (:func:`mot_rows`)."""
    content = buffer.read(path)
    if isinstance(content, InMemory) and as_array(content.value) is not None:
        return mot_rows(as_array(content.value), path)
    data = content.tobytes()
    if path.lower().endswith(".json"):
        return parse_tracks_json(data, path, box_format=box_format)
    return parse_mot_text(data, path)


# --------------------------------------------------------------------------- MOT text


def parse_mot_text(data: bytes, path: str) -> Tracks:
    lines = data.splitlines()
    if b"" not in lines and not data.translate(None, _JSON_NUMBER_TEXT):
        content: Sequence[int] = range(len(lines))  # numbers and commas only: no blank line
    else:
        content = [i for i, line in enumerate(lines) if line.strip()]
    if not content:
        return Tracks.empty()
    width = len(_fields(lines[content[0]]))
    values = _parse_numbers(data, len(content) * width)
    if values is None:
        _raise_malformed(lines, content, width, path)
    return _mot_table(values.reshape(len(content), width), np.asarray(content) + 1, path)


def mot_rows(rows: np.ndarray, path: str) -> Tracks:
    """MOT text's rows given as an ``(N, >= 6)`` array of numbers (``Evaluator.update``),
    checked as the file's lines are (messages number them as rows, from 1)."""
    if rows.ndim != 2 or (rows.size and rows.dtype.kind not in "biuf"):
        raise InputError("MOT rows must be an (N, >= 6) array of numbers (frame, id, x, y, w, "
                         f"h, conf, ...), got shape {rows.shape} of {rows.dtype}", path=path)
    if not len(rows):
        return Tracks.empty()
    return _mot_table(rows.astype(np.float64), np.arange(1, len(rows) + 1), path, unit="row")


def _mot_table(table: np.ndarray, line_numbers: np.ndarray, path: str, unit: str = "line") -> Tracks:
    """The boxes of MOT rows (``table`` float64, ``line_numbers`` naming each ``unit``)."""
    width = table.shape[1]
    if width < 6:
        raise InputError(f"{unit} {line_numbers[0]}: {width} columns, need at least 6 "
                         "(frame, id, x, y, w, h)", path=path)
    used = table[:, : min(width, 8)]
    bad = ~np.isfinite(used).all(axis=1)
    _first_error(bad, line_numbers, "a value is not a finite number", path, unit)
    _first_error((np.abs(table[:, 2:6]) > MAX_MAGNITUDE).any(axis=1), line_numbers,
                 f"a box value is beyond ±{MAX_MAGNITUDE:g} (pixels)", path, unit)
    if width > 6:  # the confidence (a flag in GT files): a float64 beyond it has no int64
        _first_error(np.abs(table[:, 6]) > MAX_MAGNITUDE, line_numbers,
                     f"the score (column 7) is beyond ±{MAX_MAGNITUDE:g}", path, unit)
    for column, name in ((0, "frame"), (1, "id")):
        _first_error(table[:, column] != np.floor(table[:, column]), line_numbers,
                     f"{name} must be an integer", path, unit)
        # beyond 2^53 a float64 cannot tell neighbouring integers apart (two ids would merge)
        _first_error(np.abs(table[:, column]) > _MAX_EXACT, line_numbers,
                     f"{name} must be within ±2^53", path, unit)
    _first_error((table[:, 4] < 0) | (table[:, 5] < 0), line_numbers,
                 "box width and height must be >= 0", path, unit)
    frame, ids = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
    _check_track_order(frame, ids, line_numbers, path, unit)
    box = table[:, 2:6].copy()
    box[:, 2] = box[:, 0] + box[:, 2]  # TrackEval's arithmetic, for identical IoUs
    box[:, 3] = box[:, 1] + box[:, 3]
    n = len(table)
    flag = table[:, 6].astype(np.int64) if width > 6 else np.ones(n, np.int64)
    cls = table[:, 7].astype(np.int64) if width > 7 else np.full(n, -1, np.int64)
    scored = width > 6 and bool((table[:, 6] != flag).any())
    return Tracks(frame, ids, box, flag, cls, scored)


def _fields(line: bytes) -> list[bytes]:
    return [field for field in _SEPARATORS.split(line.strip()) if field]


def _parse_numbers(data: bytes, expected: int) -> np.ndarray | None:
    """Every number of the text (commas and whitespace separate), or None when the text
    holds anything else or a different count (then the slow path finds the line).

    The usual file (comma-separated lines of numbers, nothing else) is read as one JSON
    array by orjson, 2.5x faster than ``np.fromstring`` (26 against 67 ns a number,
    benchmarks/RESULTS.md, issue 33); the same float64 values (both round correctly).
    Only digits, signs, points, exponents, commas and line ends may be in it, so the array
    can hold nothing but numbers; anything else (spaces, blank lines, ``nan``) takes
    ``np.fromstring``."""
    if not data.translate(None, _JSON_NUMBER_TEXT):
        try:
            values = np.array(loads_json(b"[" + data.replace(b"\r", b"").strip()
                                         .replace(b"\n", b",") + b"]", ""), dtype=np.float64)
        except (InputError, OverflowError):
            values = None
        if values is not None and values.ndim == 1 and values.size == expected:
            return values
    text = data.replace(b",", b" ").decode("ascii", errors="replace")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            values = np.fromstring(text, dtype=np.float64, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    return values if values.size == expected else None


def _raise_malformed(lines: list[bytes], content: list[int], width: int, path: str) -> None:
    for index in content:
        fields = _fields(lines[index])
        if len(fields) != width:
            raise InputError(f"line {index + 1}: {len(fields)} columns, expected {width} "
                             f"like line {content[0] + 1}", path=path)
        for field in fields:
            try:
                float(field)
            except ValueError:
                text = field.decode("utf-8", errors="replace")
                raise InputError(f"line {index + 1}: '{text}' is not a number", path=path) from None
    raise InputError("malformed MOTChallenge text", path=path)


def _first_error(bad: np.ndarray, line_numbers: np.ndarray, message: str, path: str,
                 unit: str = "line") -> None:
    if bad.any():
        raise InputError(f"{unit} {line_numbers[np.argmax(bad)]}: {message}", path=path)


def _check_track_order(frame: np.ndarray, ids: np.ndarray, where: np.ndarray, path: str,
                       unit: str = "line") -> None:
    """Each track's frames must increase in file order; ``where`` numbers the lines."""
    order = np.argsort(ids, kind="stable")
    same = ids[order][1:] == ids[order][:-1]
    step = np.diff(frame[order])
    bad = np.zeros(len(frame), bool)
    bad[order[1:][same & (step <= 0)]] = True
    if not bad.any():
        return
    at = int(np.argmax(bad))  # the first offending line in file order
    track = ids[at]
    if np.count_nonzero((frame == frame[at]) & (ids == track)) > 1:
        raise InputError(f"{unit} {where[at]}: id {track} appears twice in frame {frame[at]}",
                         path=path)
    raise InputError(f"{unit} {where[at]}: frames out of order: id {track} in frame {frame[at]} "
                     f"after a later frame (each track's {unit}s must be in frame order)", path=path)


# --------------------------------------------------------------------------- JSON


def parse_tracks_json(data: bytes, path: str, *, box_format: str = "xyxy") -> Tracks:
    document = loads_json(data, path)
    frames = document.get("frames") if isinstance(document, dict) else None
    if not isinstance(frames, list):
        raise InputError('expected {"frames": [{"frame": n, "objects": [...]}, ...]}', path=path)
    frame_of, objects = [], []
    previous = None
    for k, entry in enumerate(frames):
        if not isinstance(entry, dict) or not isinstance(entry.get("objects"), list):
            raise InputError(f'frames[{k}]: expected {{"frame": n, "objects": [...]}}', path=path)
        number = entry.get("frame")
        if not isinstance(number, int) or isinstance(number, bool):
            raise InputError(f"frames[{k}].frame must be an integer, got {number!r}", path=path)
        if abs(number) > _MAX_EXACT:
            raise InputError(f"frames[{k}].frame must be within ±2^53, got {number}", path=path)
        if previous is not None and number <= previous:
            raise InputError(f"frames[{k}]: frames out of order: frame {number} after frame "
                             f"{previous}", path=path)
        previous = number
        frame_of.extend([number] * len(entry["objects"]))
        objects.extend((k, obj) for obj in entry["objects"])
    return _tracks_from_objects(np.asarray(frame_of, np.int64), objects, path, box_format)


def _tracks_from_objects(frame: np.ndarray, objects: list[tuple[int, Any]], path: str,
                         box_format: str) -> Tracks:
    n = len(objects)
    if n == 0:
        return Tracks.empty()
    raw_ids = []
    boxes = []
    for k, obj in objects:
        where = f"frames[{k}]"
        if not isinstance(obj, dict):
            raise InputError(f"{where}: each object must be a JSON object", path=path)
        track = obj.get("id")
        if isinstance(track, bool) or not isinstance(track, int | str):
            raise InputError(f"{where}: 'id' must be an integer or a string, got {track!r}",
                             path=path)
        raw_ids.append(track)
        box = obj.get("bbox")
        if not (isinstance(box, list) and len(box) == 4 and all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in box)):
            raise InputError(f"{where}: 'bbox' must be four numbers, got {box!r}", path=path)
        boxes.append(box)
        score = obj.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)
                                  or not abs(score) <= MAX_MAGNITUDE):
            raise InputError(f"{where}: 'score' must be a number within ±{MAX_MAGNITUDE:g}, "
                             f"got {score!r}", path=path)
    # ids numbered in sorted order (integers numerically, then strings), as TrackEval
    # relabels MOT ids: the order of ids decides assignment ties and summation order
    codes = {track: code for code, track in enumerate(
        sorted(set(raw_ids), key=lambda v: (isinstance(v, str), v)))}
    ids = np.fromiter(map(codes.__getitem__, raw_ids), np.int64, n)
    box = np.asarray(boxes, np.float64)
    if not (np.abs(box) <= MAX_MAGNITUDE).all():  # NaN and inf fail too
        bad = int(np.argmax(~(np.abs(box) <= MAX_MAGNITUDE).all(axis=1)))
        raise InputError(f"frames[{objects[bad][0]}]: 'bbox' must be finite and within "
                         f"±{MAX_MAGNITUDE:g} (pixels)", path=path)
    if box_format == "xywh":
        box[:, 2] = box[:, 0] + box[:, 2]
        box[:, 3] = box[:, 1] + box[:, 3]
    inverted = (box[:, 2] < box[:, 0]) | (box[:, 3] < box[:, 1])
    if inverted.any():
        bad = int(np.argmax(inverted))
        raise InputError(f"frames[{objects[bad][0]}]: bbox {boxes[bad]} has x2 < x1 or y2 < y1",
                         path=path)
    key = frame * (len(codes) + 1) + ids
    unique, counts = np.unique(key, return_counts=True)
    if (counts > 1).any():
        twice = unique[np.argmax(counts > 1)]
        bad = int(np.argmax(key == twice))
        name = next(k for k, v in codes.items() if v == ids[bad])
        raise InputError(f"frames[{objects[bad][0]}]: id {name!r} appears twice in frame "
                         f"{frame[bad]}", path=path)
    return Tracks(frame, ids, box, np.ones(n, np.int64), np.full(n, -1, np.int64))
