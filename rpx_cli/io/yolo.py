"""Ultralytics YOLO label files: one ``.txt`` per image, one object per line, every
coordinate normalised (pixel = value × image width for x, × height for y, nothing added).

A line is ``cls`` then the object in the run's form, and a prediction line ends with its
confidence (``yolo predict save_txt=True save_conf=True``):

- detect (``box``): ``cls xc yc w h``;
- segment (``polygon``): ``cls x1 y1 … xn yn`` (n ≥ 3);
- pose (``keypoints``): ``cls xc yc w h`` then ``K`` points of ``kpt_shape[1]`` values,
  ``px py [v]`` (``K,2``: a point written ``0 0`` is not visible, every other is, as
  Ultralytics reads them);
- obb (``quad``): ``cls x1 y1 x2 y2 x3 y3 x4 y4``.

``cls`` is an index into the class names (``data.yaml``'s ``names`` or
``--class-names``; without names the index's text is the label). An empty file is an
image without objects. Malformed is an :class:`~rpx_cli.errors.InputError` naming
``file:line``: a wrong field count (a GT line with a confidence or a prediction line
without one says which side looks swapped), a non-number, a class id that is not an index
of the names, a normalised value outside [0, 1] by more than 1e-6, ``w`` or ``h`` < 0.

:func:`read_data_yaml` reads the two keys of a ``data.yaml`` rpx needs (``names``, a list or
a mapping of index to name, and ``kpt_shape``) with a small reader of its own (PyYAML is no
dependency): block and flow lists, block and flow mappings, quoted or plain scalars."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError
from rpx_cli.io.objects import BOX, KEYPOINTS, POLYGON, QUAD, Objects
from rpx_cli.io.regular import read_bytes

TOLERANCE = 1e-6
_SHAPES = {BOX: "cls xc yc w h", POLYGON: "cls x1 y1 ... xn yn", QUAD: "cls x1 y1 x2 y2 x3 y3 x4 y4",
           KEYPOINTS: "cls xc yc w h px py [v] ..."}


def _text(data: Any, path: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("a YOLO label file must be UTF-8 text", path=path) from None


def read_yolo(data: Any, path: str, *, prediction: bool, form: str, size: Any,
              names: list[str] | None, kpt_shape: tuple[int, int] | None = None) -> Objects:
    """One YOLO file's objects in pixels. ``size``: a callable giving the image's
    ``(height, width)`` (called only when the file has objects)."""
    lines = [(n, line.split()) for n, line in enumerate(_text(data, path).splitlines(), 1)]
    lines = [(n, fields) for n, fields in lines if fields]
    empty = Objects(form, [], np.zeros(0) if prediction else None,
                    keypoints=np.zeros((0, (kpt_shape or (0, 3))[0], 3)) if form == KEYPOINTS else None,
                    quads=np.zeros((0, 4, 2)) if form == QUAD else None,
                    polygons=[] if form == POLYGON else None)
    if not lines:
        return empty
    if form == KEYPOINTS and kpt_shape is None:
        raise InputError("YOLO pose labels need kpt_shape: --data-yaml data.yaml or --kpt-shape "
                         "K,2|K,3", path=path)
    height, width = size()
    extra = 1 if prediction else 0
    if form == POLYGON:
        values, classes, scores, numbers = [], [], [], []
        for n, fields in lines:
            if len(fields) - extra < 7 or (len(fields) - extra) % 2 == 0:
                _count_error(path, n, fields, prediction, form, None)
            row = _floats(fields, path, n)
            numbers.append(str(n))
            classes.append(_class(fields[0], path, n, names))
            scores.append(row[-1] if prediction else np.nan)
            points = row[1:len(row) - extra].reshape(-1, 2)
            _normalised(points, path, n)
            values.append([points * (width, height)])
        objects = Objects(POLYGON, classes, np.asarray(scores) if prediction else None,
                          polygons=values, lines=numbers)
        objects.boxes = np.zeros((len(values), 4))
        return objects
    if form == BOX:
        width_needed = 5
    elif form == QUAD:
        width_needed = 9
    else:
        width_needed = 5 + kpt_shape[0] * kpt_shape[1]
    for n, fields in lines:
        if len(fields) != width_needed + extra:
            _count_error(path, n, fields, prediction, form, width_needed)
    table = _table([fields for _, fields in lines], path, [n for n, _ in lines])
    numbers = [str(n) for n, _ in lines]
    classes = [_class(fields[0], path, n, names) for n, fields in lines]
    body = table[:, 1:width_needed]
    _normalised(body, path, None, numbers=numbers, keep=form != KEYPOINTS)
    scores = table[:, -1].copy() if prediction else None
    scale = np.array([width, height], np.float64)
    if form == QUAD:
        quads = body.reshape(-1, 4, 2) * scale
        return Objects(QUAD, classes, scores, quads=quads, lines=numbers)
    xc, yc, w, h = body[:, 0], body[:, 1], body[:, 2], body[:, 3]
    bad = np.flatnonzero((w < 0) | (h < 0))
    if bad.size:
        raise InputError("w and h must be >= 0 (xmax < xmin)", path=f"{path}:{numbers[bad[0]]}")
    boxes = np.stack([(xc - w / 2) * width, (yc - h / 2) * height,
                      (xc + w / 2) * width, (yc + h / 2) * height], axis=1)
    if form == BOX:
        return Objects(BOX, classes, scores, boxes=boxes, lines=numbers)
    k, d = kpt_shape
    points = body[:, 4:].reshape(-1, k, d)
    _normalised(points[:, :, :2], path, None, numbers=numbers)
    xy = points[:, :, :2] * scale
    if d == 3:
        visible = points[:, :, 2]
    else:
        visible = np.where((points[:, :, 0] == 0) & (points[:, :, 1] == 0), 0.0, 2.0)
    keypoints = np.concatenate([xy, visible[:, :, None]], axis=2)
    return Objects(KEYPOINTS, classes, scores, boxes=boxes, keypoints=keypoints, lines=numbers)


def _count_error(path: str, n: int, fields: list[str], prediction: bool, form: str,
                 expected: int | None) -> None:
    got = len(fields)
    shape = _SHAPES[form]
    if prediction:
        if (expected is not None and got == expected) or (expected is None and got % 2 == 1 and got >= 7):
            raise InputError(f"a prediction line without a confidence ({shape} conf expected; "
                             f"yolo predict save_conf=True writes it; {SWAP_HINT})",
                             path=f"{path}:{n}")
        want = "an even number >= 8" if expected is None else str(expected + 1)
        raise InputError(f"{got} fields where a YOLO prediction line has {want} ({shape} conf)",
                         path=f"{path}:{n}")
    if (expected is not None and got == expected + 1) or (expected is None and got % 2 == 0 and got >= 8):
        raise InputError(f"a GT line with a confidence ({shape} expected; {SWAP_HINT})",
                         path=f"{path}:{n}")
    want = "an odd number >= 7" if expected is None else str(expected)
    raise InputError(f"{got} fields where a YOLO GT line has {want} ({shape})", path=f"{path}:{n}")


def _floats(fields: list[str], path: str, n: int) -> np.ndarray:
    try:
        row = np.array(fields, np.float64)
    except ValueError:
        bad = next(f for f in fields if not _is_number(f))
        raise InputError(f"not a number: {bad!r}", path=f"{path}:{n}") from None
    if not np.isfinite(row).all():
        raise InputError("not a finite number", path=f"{path}:{n}")
    return row


def _table(rows: list[list[str]], path: str, numbers: list[int]) -> np.ndarray:
    try:
        table = np.array(rows, np.float64)
    except ValueError:
        for n, fields in zip(numbers, rows, strict=True):
            _floats(fields, path, n)
        raise
    if not np.isfinite(table).all():
        row = int(np.flatnonzero(~np.isfinite(table).all(axis=1))[0])
        raise InputError("not a finite number", path=f"{path}:{numbers[row]}")
    return table


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_INTEGER = re.compile(r"^\d+(\.0*)?$")


def _class(text: str, path: str, n: int, names: list[str] | None) -> str:
    if not _INTEGER.match(text):
        raise InputError(f"the class id must be an integer >= 0, got {text!r}", path=f"{path}:{n}")
    index = int(float(text))
    if names is None:
        return str(index)
    if index >= len(names):
        raise InputError(f"class id {index} is not one of the {len(names)} names (0..{len(names) - 1})",
                         path=f"{path}:{n}")
    return names[index]


def _normalised(values: np.ndarray, path: str, n: int | None, *, numbers: list[str] | None = None,
                keep: bool = True) -> None:
    """Normalised coordinates in [0, 1] within :data:`TOLERANCE`."""
    if not keep:
        values = values[:, :4]
    bad = (values < -TOLERANCE) | (values > 1 + TOLERANCE)
    if bad.any():
        if n is None:
            row = int(np.flatnonzero(bad.reshape(len(values), -1).any(axis=1))[0])
            n = numbers[row]
            value = values.reshape(len(values), -1)[row][bad.reshape(len(values), -1)[row]][0]
        else:
            value = values[bad][0]
        raise InputError(f"normalised coordinate {float(value)!r} outside [0, 1] (pixels? YOLO "
                         "coordinates are divided by the image size)", path=f"{path}:{n}")


# --- data.yaml ------------------------------------------------------------------------------


def read_data_yaml(path: str) -> tuple[list[str] | None, tuple[int, int] | None]:
    """``(names, kpt_shape)`` of an Ultralytics ``data.yaml`` (None where absent)."""
    try:
        text = read_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("data.yaml: not UTF-8 text", path=path) from None
    lines = text.splitlines()
    names = kpt_shape = None
    i = 0
    while i < len(lines):
        raw = _strip_comment(lines[i])
        match = re.match(r"^(names|kpt_shape)\s*:\s*(.*)$", raw)
        i += 1
        if not match:
            continue
        key, rest = match.group(1), match.group(2).strip()
        block = []
        while i < len(lines) and (not _strip_comment(lines[i]).strip()
                                  or lines[i][:1] in (" ", "\t", "-")):
            if _strip_comment(lines[i]).strip():
                block.append(_strip_comment(lines[i]).strip())
            i += 1
        value = _value(rest, block, path, key)
        if key == "names":
            if isinstance(value, dict):
                try:
                    keys = sorted(int(k) for k in value)
                except ValueError:
                    raise InputError("data.yaml: 'names' keys must be class indices", path=path) from None
                if keys != list(range(len(keys))):
                    raise InputError("data.yaml: 'names' must number the classes 0..N-1", path=path)
                names = [str(value[str(k)] if str(k) in value else value[k]) for k in keys]
            elif isinstance(value, list):
                names = [str(v) for v in value]
            else:
                raise InputError("data.yaml: 'names' must be a list or a mapping", path=path)
        else:
            try:
                shape = [int(v) for v in value]
            except (TypeError, ValueError):
                raise InputError("data.yaml: 'kpt_shape' must be [K, 2] or [K, 3]", path=path) from None
            if len(shape) != 2 or shape[0] < 1 or shape[1] not in (2, 3):
                raise InputError("data.yaml: 'kpt_shape' must be [K, 2] or [K, 3]", path=path)
            kpt_shape = (shape[0], shape[1])
    return names, kpt_shape


def _strip_comment(line: str) -> str:
    out, quote = [], None
    for ch in line:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            break
        out.append(ch)
    return "".join(out).rstrip()


def _scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _split_flow(text: str) -> list[str]:
    items, depth, quote, current = [], 0, None, []
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append("".join(current))
            current = []
            continue
        current.append(ch)
    if "".join(current).strip():
        items.append("".join(current))
    return [item.strip() for item in items]


def _value(rest: str, block: list[str], path: str, key: str) -> Any:
    if rest.startswith("["):
        if not rest.endswith("]"):
            raise InputError(f"data.yaml: '{key}': a flow list must be on one line", path=path)
        return [_scalar(item) for item in _split_flow(rest[1:-1])]
    if rest.startswith("{"):
        if not rest.endswith("}"):
            raise InputError(f"data.yaml: '{key}': a flow mapping must be on one line", path=path)
        pairs = [item.split(":", 1) for item in _split_flow(rest[1:-1])]
        return {_scalar(k): _scalar(v) for k, v in pairs}
    if rest:
        raise InputError(f"data.yaml: '{key}' must be a list or a mapping", path=path)
    if block and all(line.startswith("-") for line in block):
        return [_scalar(line[1:]) for line in block]
    out = {}
    for line in block:
        if ":" not in line:
            raise InputError(f"data.yaml: '{key}': cannot read {line!r}", path=path)
        k, v = line.split(":", 1)
        out[_scalar(k)] = _scalar(v)
    return out


# --- many files at once ------------------------------------------------------------------------

_NUMBER_BYTES = np.zeros(256, bool)
_NUMBER_BYTES[np.frombuffer(b"0123456789.+-eE", np.uint8)] = True
_SPACE_BYTES = np.zeros(256, bool)
_SPACE_BYTES[np.frombuffer(b" \t\r\n", np.uint8)] = True


def read_yolo_boxes(datas: list[bytes], *, prediction: bool, sizes: np.ndarray,
                    names: list[str] | None) -> tuple[Objects, np.ndarray] | None:
    """Detect lines (``cls xc yc w h [conf]``) of many files at once, vectorised over every
    line: ``(objects in pixels, each object's file index)``. ``sizes``: each file's
    ``(height, width)``. None when anything needs a closer look — a byte outside plain
    numbers and spaces, a line of another length, a class id, a value out of range — so
    that :func:`read_yolo`, file by file, decides (and names ``file:line`` when it is an
    error): on what it accepts, the two agree object for object."""
    width = 6 if prediction else 5
    if not datas:
        return Objects(BOX, [], np.zeros(0) if prediction else None), np.zeros(0, np.int64)
    ends = [data if not data or data.endswith(b"\n") else data + b"\n" for data in datas]
    blob = b"".join(ends)
    if not blob.strip():
        return Objects(BOX, [], np.zeros(0) if prediction else None), np.zeros(0, np.int64)
    raw = np.frombuffer(blob, np.uint8)
    space = _SPACE_BYTES[raw]
    if not (space | _NUMBER_BYTES[raw]).all() or blob.count(b"\r") != blob.count(b"\r\n"):
        return None
    breaks = np.flatnonzero(raw == 10)
    starts = np.flatnonzero(~space & np.concatenate([[True], space[:-1]]))
    line = np.searchsorted(breaks, starts)  # the line (0..) each token is on
    per_line = np.bincount(line, minlength=breaks.size)
    used = np.flatnonzero(per_line)
    if (per_line[used] != width).any():
        return None
    tokens = np.array(blob.split(), dtype="S")
    try:
        table = tokens.astype(np.float64).reshape(-1, width)
    except ValueError:
        return None
    if not np.isfinite(table).all():
        return None
    lines_per_file = np.fromiter((data.count(b"\n") for data in ends), np.int64, count=len(ends))
    image = np.searchsorted(np.cumsum(lines_per_file), used, side="right")
    labels = _class_labels(tokens[0::width], names)
    if labels is None:
        return None
    body = table[:, 1:5]
    if ((body < -TOLERANCE) | (body > 1 + TOLERANCE)).any() or (body[:, 2:] < 0).any():
        return None
    height, width_px = sizes[image, 0], sizes[image, 1]
    xc, yc, w, h = body[:, 0], body[:, 1], body[:, 2], body[:, 3]
    boxes = np.stack([(xc - w / 2) * width_px, (yc - h / 2) * height,
                      (xc + w / 2) * width_px, (yc + h / 2) * height], axis=1)
    return Objects(BOX, labels, table[:, -1].copy() if prediction else None, boxes=boxes), image


def _class_labels(tokens: np.ndarray, names: list[str] | None) -> list[str] | None:
    """Each class token's label, as :func:`_class` reads it (each distinct token checked
    once); None when one is not a class id of the names."""
    distinct, inverse = np.unique(tokens, return_inverse=True)
    labels = []
    for token in distinct.tolist():
        text = token.decode("ascii")
        if not _INTEGER.match(text):
            return None
        index = int(float(text))
        if names is not None and index >= len(names):
            return None
        labels.append(str(index) if names is None else names[index])
    return np.array(labels, dtype=object)[inverse.reshape(-1)].tolist()
