"""PASCAL VOC: one XML annotation per image, and the devkit's per-class results files.

An annotation: ``size/width,height``; per ``object``: ``name``, ``difficult`` (0/1, absent:
0), ``bndbox/xmin,ymin,xmax,ymax`` in VOC's 1-based inclusive pixels, read as the pixel box
``[xmin − 1, ymin − 1, xmax, ymax]`` (as detectron2 converts: continuous IoU on it equals
the devkit's "+1" IoU); a prediction written as annotation XML carries a ``score`` element
in each object. ``difficult`` objects are *ignored* GT. A results file
(``comp4_det_test_<class>.txt`` or ``<class>.txt``) holds ``image_id score xmin ymin xmax
ymax`` lines of one class, the same coordinate rule. Malformed (a missing element, a
non-number, ``xmax < xmin``) is an :class:`~rpx_cli.errors.InputError` naming the file
and the object or line."""

from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from itertools import chain
from operator import attrgetter, itemgetter, methodcaller
from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError
from rpx_cli.io.objects import BOX, Objects, by_image
from rpx_cli.io.xml_text import number_of, parse_xml, text_of

RESULTS_FILE = re.compile(r"^(?:comp\d+_det_[A-Za-z0-9]+_)?(.+)\.txt$", re.IGNORECASE)


def read_voc(data: Any, path: str, *, prediction: bool) -> Objects:
    """One VOC annotation's objects (pixel boxes ``[x1, y1, x2, y2]``)."""
    root = parse_xml(data, path)
    size = None
    size_element = root.find("size")
    if size_element is not None:
        width = text_of(size_element, "width", path, "<size>", required=False)
        height = text_of(size_element, "height", path, "<size>", required=False)
        if width is not None and height is not None:
            size = (int(number_of(height, path, "<size>", "height")),
                    int(number_of(width, path, "<size>", "width")))
    labels, boxes, scores, ignore, where = [], [], [], [], []
    for index, element in enumerate(root.findall("object")):
        at = f"object {index}"
        labels.append(text_of(element, "name", path, at))
        bndbox = element.find("bndbox")
        if bndbox is None:
            raise InputError(f"{at}: missing <bndbox>", path=path)
        x1, y1, x2, y2 = (number_of(text_of(bndbox, name, path, at), path, at, name)
                          for name in ("xmin", "ymin", "xmax", "ymax"))
        if x2 < x1 or y2 < y1:
            raise InputError(f"{at}: xmax < xmin or ymax < ymin ({x1:g}, {y1:g}, {x2:g}, {y2:g})",
                             path=path)
        boxes.append((x1 - 1, y1 - 1, x2, y2))
        difficult = text_of(element, "difficult", path, at, required=False)
        if difficult not in (None, "0", "1"):
            raise InputError(f"{at}: <difficult> must be 0 or 1, got {difficult!r}", path=path)
        ignore.append(difficult == "1")
        score = text_of(element, "score", path, at, required=False)
        if prediction:
            if score is None:
                raise InputError(f"{at}: a prediction needs a <score> ({SWAP_HINT})", path=path)
            scores.append(number_of(score, path, at, "score"))
        where.append(at)
    return Objects(BOX, labels, np.asarray(scores, np.float64) if prediction else None,
                   boxes=np.asarray(boxes, np.float64).reshape(-1, 4),
                   ignore=None if prediction else np.asarray(ignore, bool), lines=where, size=size)


def results_class(name: str) -> str | None:
    """The class of a results file name (``comp4_det_test_car.txt`` → ``car``), or None."""
    match = RESULTS_FILE.match(os.path.basename(name))
    return match.group(1) if match else None


def read_voc_results(files: Mapping[str, Any], path: str) -> dict[str, Objects]:
    """The devkit's per-class results files (``{relative path: bytes}``, the class from each
    file's name) as each image's boxes: ``{image_id: objects}``, an image's detections in
    the files' order (sorted by name) then line order. Each file's lines are taken at once
    when they all hold six fields of plain numbers, else line by line (which names the
    line at fault)."""
    ids, labels, tables, where = [], [], [], []
    for rel in sorted(files):
        label = results_class(rel)
        if label is None:
            raise InputError("a VOC results file is named comp4_det_<set>_<class>.txt or "
                             "<class>.txt", path=f"{path}/{rel}")
        at = f"{path}/{rel}" if len(files) > 1 or not path.endswith(rel) else path
        lines = list(map(str.split, bytes(files[rel]).decode("utf-8", "replace").splitlines()))
        numbers = [n for n, fields in enumerate(lines, 1) if fields]
        rows = [fields for fields in lines if fields]
        table = _results_table(rows, at, numbers)
        ids += [fields[0] for fields in rows]
        labels += [label] * len(rows)
        tables.append(table)
        where += [f"{rel}:{n}" for n in numbers]
    table = np.concatenate(tables) if tables else np.zeros((0, 5))
    boxes = table[:, 1:] - (1.0, 1.0, 0.0, 0.0)  # VOC's 1-based inclusive pixels
    return {stem: Objects(BOX, [labels[i] for i in rows.tolist()], table[rows, 0], boxes=boxes[rows],
                          lines=[where[i] for i in rows.tolist()])
            for stem, rows in by_image(ids)}


def _results_table(rows: list[list[str]], at: str, numbers: list[int]) -> np.ndarray:
    """``score xmin ymin xmax ymax`` of each results line, checked (errors name the line)."""
    if rows and set(map(len, rows)) == {6}:
        try:  # float itself, as the line-by-line reading
            table = np.fromiter(map(float, chain.from_iterable(map(itemgetter(slice(1, None)), rows))),
                                np.float64, count=5 * len(rows)).reshape(-1, 5)
        except ValueError:
            table = None
        if table is not None and np.isfinite(table).all() and not (
                (table[:, 3] < table[:, 1]) | (table[:, 4] < table[:, 2])).any():
            return table
    out = []
    for n, fields in zip(numbers, rows, strict=True):
        if len(fields) != 6:
            raise InputError(f"{len(fields)} fields where a VOC results line has 6 (image_id "
                             "score xmin ymin xmax ymax)", path=f"{at}:{n}")
        try:
            row = [float(v) for v in fields[1:]]
        except ValueError:
            raise InputError("not a number", path=f"{at}:{n}") from None
        if not all(math.isfinite(v) for v in row):
            raise InputError("not a finite number", path=f"{at}:{n}")
        if row[3] < row[1] or row[4] < row[2]:
            raise InputError("xmax < xmin or ymax < ymin", path=f"{at}:{n}")
        out.append(row)
    return np.asarray(out, np.float64).reshape(-1, 5)


# --- many files at once ------------------------------------------------------------------------

_DECLARATION = re.compile(rb'^<\?xml[^>]*?\?>')
_UTF8 = re.compile(rb'encoding\s*=\s*["\']utf-?8["\']', re.IGNORECASE)
_CORNERS = ["xmin", "ymin", "xmax", "ymax"]


def read_voc_many(datas: list[bytes], *, prediction: bool) -> tuple[Objects, np.ndarray] | None:
    """Many annotation files parsed as one document (each file's XML declaration set aside,
    the files wrapped in one root), their objects gathered field by field:
    ``(objects, each object's file index)``. None when anything needs a closer look — a
    document type, another encoding, a file that is not one element, a missing or odd
    value — so that :func:`read_voc`, file by file, decides (and names the file when it is
    an error): on what it accepts, the two agree object for object."""
    bodies = []
    for data in datas:
        if data.startswith(b"<?xml"):
            match = _DECLARATION.match(data)
            if match is None or (b"encoding" in match.group(0) and not _UTF8.search(match.group(0))):
                return None
            data = data[match.end():]
        bodies.append(data)
    blob = b"".join([b"<rpx-files>", *bodies, b"</rpx-files>"])
    if b"<!" in blob.replace(b"<!--", b"") or b"\xef\xbb\xbf" in blob:
        return None  # a document type or CDATA (read_voc decides), a byte-order mark
    try:
        root = ET.fromstring(blob)
    except ET.ParseError:
        return None
    annotations = list(root)
    if len(annotations) != len(datas) or (root.text or "").strip() or any(
            map(str.strip, filter(None, map(attrgetter("tail"), annotations)))):
        return None
    # every field of every object gathered with C-level maps (no Python step per object)
    sizes = [size for size in map(methodcaller("find", "size"), annotations) if size is not None]
    widths = list(map(methodcaller("findtext", "width"), sizes))
    heights = list(map(methodcaller("findtext", "height"), sizes))
    given = [text for pair in zip(widths, heights, strict=True) if None not in pair
             and all(map(str.strip, pair)) for text in pair]
    if given and _numbers(given) is None:
        return None
    found = list(map(methodcaller("findall", "object"), annotations))
    counts = np.fromiter(map(len, found), np.int64, count=len(found))
    objects = list(chain.from_iterable(found))
    boxes = list(map(methodcaller("find", "bndbox"), objects))
    names = list(map(methodcaller("findtext", "name"), objects))
    if None in boxes or None in names:
        return None
    names = list(map(str.strip, names))
    if "" in names:
        return None
    # a box's corners, taken straight from its children when they are exactly xmin, ymin,
    # xmax, ymax (the devkit's layout), else looked up by name
    tags = list(map(attrgetter("tag"), chain.from_iterable(boxes)))
    if tags == _CORNERS * len(boxes):
        corners = list(map(attrgetter("text"), chain.from_iterable(boxes)))
        values = None if None in corners else _numbers(corners)
        values = None if values is None else values.reshape(-1, 4).T
    else:
        corners = [text for key in _CORNERS for text in map(methodcaller("findtext", key), boxes)]
        values = None if None in corners else _numbers(corners)
        values = None if values is None else values.reshape(4, -1)
    if values is None:
        return None
    x1, y1, x2, y2 = values
    if ((x2 < x1) | (y2 < y1)).any():
        return None
    difficult = [text.strip() if text else "" for text in
                 map(methodcaller("findtext", "difficult"), objects)]
    if not set(difficult) <= {"", "0", "1"}:
        return None
    scores = None
    if prediction:
        texts = list(map(methodcaller("findtext", "score"), objects))
        scores = None if None in texts else _numbers(texts)
        if scores is None:
            return None
    result = Objects(BOX, names, scores,
                     boxes=np.stack([x1 - 1, y1 - 1, x2, y2], axis=1).reshape(-1, 4),
                     ignore=None if prediction else np.array(difficult, dtype=object) == "1")
    return result, np.repeat(np.arange(len(datas)), counts)


def _numbers(texts: list[str]) -> np.ndarray | None:
    """Finite numbers as :func:`~rpx_cli.io.xml_text.number_of` reads them (``float``),
    else None."""
    try:
        values = np.fromiter(map(float, texts), np.float64, count=len(texts))
    except ValueError:
        return None
    return values if np.isfinite(values).all() else None
