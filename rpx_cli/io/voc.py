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
from collections.abc import Mapping
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
    the files' order (sorted by name) then line order."""
    ids, labels, values, where = [], [], [], []
    for rel in sorted(files):
        label = results_class(rel)
        if label is None:
            raise InputError("a VOC results file is named comp4_det_<set>_<class>.txt or "
                             "<class>.txt", path=f"{path}/{rel}")
        at = f"{path}/{rel}" if len(files) > 1 or not path.endswith(rel) else path
        for n, line in enumerate(bytes(files[rel]).decode("utf-8", "replace").splitlines(), 1):
            fields = line.split()
            if not fields:
                continue
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
            ids.append(fields[0])
            labels.append(label)
            values.append(row)
            where.append(f"{rel}:{n}")
    table = np.asarray(values, np.float64).reshape(-1, 5)
    boxes = table[:, 1:] - (1.0, 1.0, 0.0, 0.0)  # VOC's 1-based inclusive pixels
    return {stem: Objects(BOX, [labels[i] for i in rows.tolist()], table[rows, 0], boxes=boxes[rows],
                          lines=[where[i] for i in rows.tolist()])
            for stem, rows in by_image(ids)}
