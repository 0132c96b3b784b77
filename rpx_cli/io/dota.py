"""DOTA oriented-object labels: one ``.txt`` per image, ``x1 y1 x2 y2 x3 y3 x4 y4 category
difficult`` per line (pixels; the header lines ``imagesource:`` and ``gsd:`` are
skipped); a per-image prediction line ends ``category score``. The Task1 results files
hold every image of one class: ``Task1_<class>.txt`` with ``image score x1 y1 … x4 y4``.
``difficult`` objects are ignored GT. Malformed is an input error naming ``file:line``."""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.objects import QUAD, Objects

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
    match = TASK1_FILE.match(os.path.basename(name))
    return match.group(1) if match else None


def read_task1(data: bytes, path: str) -> dict[str, tuple[list, list, list]]:
    """One class's Task1 results: ``{image: (scores, quads, lines)}``."""
    out: dict[str, tuple[list, list, list]] = {}
    for n, fields in _lines(data, path):
        if len(fields) != 10:
            raise InputError(f"{len(fields)} fields where a Task1 line has 10 (image score x1 y1 "
                             "... x4 y4)", path=f"{path}:{n}")
        values = _numbers(fields[1:], path, n)
        scores, quads, lines = out.setdefault(fields[0], ([], [], []))
        scores.append(values[0])
        quads.append(values[1:].reshape(4, 2))
        lines.append(f"{os.path.basename(path)}:{n}")
    return out
