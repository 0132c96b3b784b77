"""DOTA oriented-object labels: one ``.txt`` per image, ``x1 y1 x2 y2 x3 y3 x4 y4 category
difficult`` per line (pixels; the header lines ``imagesource:`` and ``gsd:`` are
skipped); a per-image prediction line ends ``category score``. The Task1 results files
hold every image of one class: ``Task1_<class>.txt`` with ``image score x1 y1 … x4 y4``.
``difficult`` objects are ignored GT. Malformed is an input error naming ``file:line``."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.objects import QUAD, Objects, by_image

TASK1_FILE = re.compile(r"^Task1_(.+)\.txt$", re.IGNORECASE)


def _lines(data: Any, path: str):
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or line.lstrip().startswith(("imagesource", "gsd")):
            continue
        yield n, fields


def _numbers(fields: list[str], path: str, n: int) -> np.ndarray:
    try:
        values = np.array(fields, np.float64)
    except ValueError:
        raise InputError("not a number", path=f"{path}:{n}") from None
    if not np.isfinite(values).all():
        raise InputError("not a finite number", path=f"{path}:{n}")
    return values


def read_dota(data: Any, path: str, *, prediction: bool) -> Objects:
    """One DOTA label file's objects (quads in pixels)."""
    labels, quads, last, where = [], [], [], []
    for n, fields in _lines(data, path):
        if len(fields) not in (9, 10):
            raise InputError(f"{len(fields)} fields where a DOTA line has 10 (x1 y1 ... x4 y4 "
                             "category difficult|score)", path=f"{path}:{n}")
        quads.append(_numbers(fields[:8], path, n).reshape(4, 2))
        labels.append(fields[8])
        tail = fields[9] if len(fields) == 10 else ("0" if not prediction else None)
        if prediction:
            if tail is None:
                raise InputError("a prediction line needs its score last", path=f"{path}:{n}")
            last.append(float(_numbers([tail], path, n)[0]))
        else:
            if tail not in ("0", "1"):
                raise InputError(f"difficult must be 0 or 1, got {tail!r}", path=f"{path}:{n}")
            last.append(tail == "1")
        where.append(str(n))
    quads_array = np.asarray(quads, np.float64).reshape(-1, 4, 2)
    return Objects(QUAD, labels, np.asarray(last, np.float64) if prediction else None,
                   quads=quads_array, ignore=None if prediction else np.asarray(last, bool),
                   lines=where)


def task1_class(name: str) -> str | None:
    """The class of a Task1 results file name (``Task1_plane.txt`` → ``plane``), or None."""
    match = TASK1_FILE.match(os.path.basename(name))
    return match.group(1) if match else None


def read_task1(files: Mapping[str, Any], path: str) -> dict[str, Objects]:
    """DOTA Task1 results (``{relative path: bytes}`` of ``Task1_<class>.txt`` files) as each
    image's quads: ``{image: objects}``, an image's detections in the files' order (sorted by
    name) then line order."""
    ids, labels, values, where = [], [], [], []
    for rel in sorted(files):
        label = task1_class(rel)
        if label is None:
            raise InputError("a DOTA Task1 results file is named Task1_<class>.txt",
                             path=f"{path}/{rel}")
        at = f"{path}/{rel}" if len(files) > 1 or not path.endswith(rel) else path
        for n, fields in _lines(files[rel], at):
            if len(fields) != 10:
                raise InputError(f"{len(fields)} fields where a Task1 line has 10 (image score x1 "
                                 "y1 ... x4 y4)", path=f"{at}:{n}")
            values.append(_numbers(fields[1:], at, n))
            ids.append(fields[0])
            labels.append(label)
            where.append(f"{rel}:{n}")
    table = np.asarray(values, np.float64).reshape(-1, 9)
    return {stem: Objects(QUAD, [labels[i] for i in rows.tolist()], table[rows, 0],
                          quads=table[rows, 1:].reshape(-1, 4, 2),
                          lines=[where[i] for i in rows.tolist()])
            for stem, rows in by_image(ids)}
