"""Class labels and scores: per-stem JSON/txt files, one-file CSV tables, class-name lists.

Per stem (``rpx eval classification``):

- GT: JSON ``{"label": L}`` or ``{"labels": [L, ...]}`` (multi-label), a bare JSON label
  (``"cat"``, ``3``), or a ``.txt`` file holding the label (one label per line for several);
- prediction: JSON ``{"label": L}``, ``{"label": L, "score": s}``, ``{"labels": [...]}`` or
  ``{"scores": {L: s, ...}}`` (a score per class).

Labels are strings or integers, always handled as their text (``3`` and ``"3"`` are one
label). The natural order of labels (:func:`label_key`) puts integer labels first, by value,
then the others by code point, so integer class ids sort as numbers (as scikit-learn's
``np.unique`` does on integer arrays).

One file per side: :func:`read_label_csv` reads ``stem,label``, ``stem,label,score`` or
``stem,<one column per class>`` (a header row names the columns) into arrays in one pass:
the score block is parsed as a whole (no Python loop over rows or cells), every row's column
count is checked with numpy, and any problem names the file and the line.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from rpx_cli.errors import InputError, RecordError
from rpx_cli.io.json import loads_json
from rpx_cli.io.values import MAX_MAGNITUDE

_INTEGER = re.compile(r"-?[0-9]+\Z")


def label_key(label: str) -> tuple[int, int, str]:
    """Sort key of the natural label order: integers by value first, then text."""
    if _INTEGER.match(label):
        return (0, int(label), label)
    return (1, 0, label)


def sort_labels(labels: Any) -> list[str]:
    """Distinct labels in the natural order."""
    return sorted(set(labels), key=label_key)


# --- per-stem files ------------------------------------------------------------------------------


@dataclass
class LabelDoc:
    """What one per-stem file says: labels given by name, a score for the single label,
    and a score table (class names in the file's order, and their scores)."""

    labels: tuple[str, ...] = ()
    score: float | None = None
    classes: tuple[str, ...] | None = None
    scores: np.ndarray | None = None  # float64, aligned with ``classes``


def _label(value: Any, where: str, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{where}: a label must be a string or an integer, got {value!r}",
                         path=path)
    return str(value)


def _number(value: Any, where: str, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where} must be a number, got {value!r}", path=path)
    number = float(value)
    if not abs(number) <= MAX_MAGNITUDE:  # (NaN fails too)
        raise InputError(f"{where} is not finite within ±{MAX_MAGNITUDE:g} ({value!r})",
                         path=path)
    return number


def parse_label_file(data: bytes, path: str) -> LabelDoc:
    """Parse one per-stem file (``.json`` or ``.txt``, told apart by the suffix)."""
    if path.lower().endswith(".txt"):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", path=path) from None
        labels = tuple(line.strip() for line in text.splitlines() if line.strip())
        if not labels:
            raise InputError("the file holds no label", path=path)
        return LabelDoc(labels=labels)
    document = loads_json(data, path)
    if not isinstance(document, dict):
        if isinstance(document, list):
            return LabelDoc(labels=tuple(_label(v, "labels", path) for v in document))
        return LabelDoc(labels=(_label(document, "label", path),))
    known = {"label", "labels", "score", "scores"} & document.keys()
    if not known:
        raise InputError('expected {"label": L}, {"labels": [...]}, {"label": L, "score": s} '
                         f'or {{"scores": {{L: s, ...}}}}; found keys {sorted(document)[:6]}',
                         path=path)
    if "scores" in document:
        if "label" in document or "labels" in document:
            raise InputError('give either "scores" (a score per class) or "label"/"labels", '
                             "not both", path=path)
        return LabelDoc(**_score_table(document["scores"], path))
    if "label" in document and "labels" in document:
        raise InputError('give either "label" or "labels", not both', path=path)
    if "label" in document:
        labels: tuple[str, ...] = (_label(document["label"], "label", path),)
    elif isinstance(document.get("labels"), list):
        labels = tuple(_label(v, "labels", path) for v in document["labels"])
    else:
        raise InputError(f'"labels" must be a list, got {document.get("labels")!r}', path=path)
    score = None
    if "score" in document:
        if len(labels) != 1:
            raise InputError('"score" goes with one "label"', path=path)
        score = _number(document["score"], "score", path)
    return LabelDoc(labels=labels, score=score)


def _score_table(table: Any, path: str) -> dict[str, Any]:
    if not isinstance(table, dict) or not table:
        raise InputError('"scores" must be an object {label: score, ...} with one entry per '
                         "class", path=path)
    classes = tuple(table)
    try:
        if not set(map(type, table.values())) <= {int, float}:  # "0.9" and true would convert
            raise TypeError
        scores = np.fromiter(table.values(), dtype=np.float64, count=len(classes))
    except (TypeError, ValueError):
        bad = next((k for k, v in table.items()
                    if isinstance(v, bool) or not isinstance(v, (int, float))), classes[0])
        raise InputError(f"scores: the score of {bad!r} must be a number, got {table[bad]!r}",
                         path=path) from None
    if not (np.abs(scores) <= MAX_MAGNITUDE).all():
        bad = classes[int(np.flatnonzero(~(np.abs(scores) <= MAX_MAGNITUDE))[0])]
        raise InputError(f"scores: the score of {bad!r} is not finite within "
                         f"±{MAX_MAGNITUDE:g} ({table[bad]!r})", path=path)
    return {"classes": classes, "scores": scores}


# --- one CSV file per side ------------------------------------------------------------------------


@dataclass
class LabelTable:
    """A CSV of labels or scores: ``kind`` is ``"label"`` (``stem,label``), ``"label_score"``
    (``stem,label,score``) or ``"scores"`` (``stem,<classes>``: ``classes`` names the
    columns of ``scores``)."""

    path: str
    stems: list[str]
    kind: str
    labels: list[str] | None = None
    score: np.ndarray | None = None
    classes: list[str] | None = None
    scores: np.ndarray | None = None  # (n, C) float64
    lines: np.ndarray | None = None  # each row's line in the file (None: row i is line i + 2)

    def line(self, row: int) -> int:
        """The file's line number of row ``row``."""
        return row + 2 if self.lines is None else int(self.lines[row])

    def without(self, stems: Any) -> LabelTable:
        """The table without the rows of ``stems`` (records set aside by ``--on-error skip``)."""
        if not stems:
            return self
        keep = np.array([stem not in stems for stem in self.stems], dtype=bool)
        rows = np.flatnonzero(keep)
        lines = np.arange(len(self.stems)) + 2 if self.lines is None else self.lines
        return LabelTable(
            self.path, [self.stems[i] for i in rows.tolist()], self.kind,
            None if self.labels is None else [self.labels[i] for i in rows.tolist()],
            None if self.score is None else self.score[keep], self.classes,
            None if self.scores is None else self.scores[keep], lines[keep])


def read_label_csv(path: str, *, raw: bytes | None = None,
                   skip: frozenset[int] | set[int] = frozenset()) -> LabelTable:
    """Read a whole CSV file at once (see the module docstring). Fields may be quoted only
    in the header and the label forms; a score table is plain numbers. A bad row is a
    :class:`~rpx_cli.errors.RecordError` naming its line; ``skip``: lines (1-based) to set
    aside (``raw``: the file's bytes, read once by a caller that reads it again)."""
    from rpx_cli.io.regular import read_bytes

    raw = read_bytes(path) if raw is None else raw
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    header_bytes, _, body = raw.partition(b"\n")
    body = body.rstrip(b"\r\n")
    original = None
    if skip:
        lines = body.split(b"\n")
        kept = [k for k in range(len(lines)) if k + 2 not in skip]
        body = b"\n".join(lines[k] for k in kept)
        original = np.array(kept, dtype=np.int64) + 2
    try:
        table = _parse_table(path, header_bytes, body)
    except RecordError as exc:
        if original is None:
            raise
        raise exc.relined(int(original[exc.line - 2])) from None
    table.lines = original
    return table


def record_stem(raw: bytes, line: int) -> str:
    """The stem (first field) of a CSV file's ``line``, "" when it cannot be read."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    lines = raw.split(b"\n", line)
    if line > len(lines):
        return ""
    try:
        fields = next(csv.reader([lines[line - 1].decode("utf-8").rstrip("\r")]))
    except (UnicodeDecodeError, StopIteration, csv.Error):
        return ""
    return fields[0].strip() if fields else ""


def _parse_table(path: str, header_bytes: bytes, body: bytes) -> LabelTable:
    try:
        header = next(csv.reader([header_bytes.decode("utf-8").rstrip("\r")]))
    except (UnicodeDecodeError, StopIteration):
        raise InputError("line 1: expected a header row naming the columns", path=path) from None
    header = [name.strip() for name in header]
    if len(header) < 2 or not all(header):
        raise InputError(f"line 1: the header must name a stem column and at least one more "
                         f"(got {header_bytes[:80]!r})", path=path)
    columns = [name.lower() for name in header[1:]]
    if columns == ["label"]:
        kind = "label"
    elif columns == ["label", "score"]:
        kind = "label_score"
    else:
        kind = "scores"
        repeated = sorted({n for n in header[1:] if header[1:].count(n) > 1})
        if repeated:
            raise InputError(f"line 1: class column(s) named twice: {', '.join(repeated[:5])}",
                             path=path)
    if kind == "scores":
        stems, scores = _score_block(body, len(header), path)
        return LabelTable(path, stems, kind, classes=header[1:], scores=scores)
    rows = _text_rows(body, len(header), path)
    stems = [row[0] for row in rows]
    labels = [row[1] for row in rows]
    for line, label in enumerate(labels, 2):
        if not label:
            raise RecordError(line, "the label is empty", path=path, stem=stems[line - 2])
    score = None
    if kind == "label_score":
        score = _numbers([row[2] for row in rows], path, start_line=2)
    return LabelTable(path, stems, kind, labels=labels, score=score)


def _text_rows(body: bytes, width: int, path: str) -> list[list[str]]:
    """Rows of a small-width CSV (label forms), quoting allowed, every row ``width`` wide."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body[:exc.start].count(b"\n") + 2
        raise RecordError(line, "not UTF-8 text", path=path) from None
    rows = list(csv.reader(io.StringIO(text)))
    widths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    bad = np.flatnonzero(widths != width)
    if bad.size:
        i = int(bad[0])
        raise RecordError(i + 2, f"{widths[i]} column(s), the header has {width}", path=path)
    return [[field.strip() for field in row] for row in rows]


def _numbers(tokens: list[str], path: str, *, start_line: int, column: str = "score") -> np.ndarray:
    try:
        values = np.array(tokens, dtype=np.float64) if tokens else np.zeros(0)
    except ValueError:
        values = None
    if values is None or not (np.abs(values) <= MAX_MAGNITUDE).all():
        for i, token in enumerate(tokens):
            try:
                good = abs(float(token)) <= MAX_MAGNITUDE
            except ValueError:
                good = False
            if not good:
                raise RecordError(start_line + i, f"{column} {token!r} is not a finite number "
                                  f"within ±{MAX_MAGNITUDE:g}", path=path)
    assert values is not None
    return values


def _score_block(body: bytes, width: int, path: str) -> tuple[list[str], np.ndarray]:
    """Stems and the (n, width - 1) float64 scores of a ``stem,<classes>`` CSV body.

    Column counts are checked per line with numpy; the stem fields are cut out with one
    boolean mask; the numbers are then parsed in one call (orjson on the block written as a
    flat JSON array: it parses decimal text to the correctly rounded double, as ``float``
    does). A block orjson refuses (an empty field, ``nan``, ``.5``) is parsed cell by cell
    only to find and name the bad cell, or to accept the forms ``float`` reads.
    """
    n_classes = width - 1
    if not body:
        return [], np.zeros((0, n_classes))
    if b'"' in body:
        raise InputError('quoted fields (") are not supported in a score table; write stems '
                         "and numbers without quotes", path=path)
    data = np.frombuffer(body, dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    ends = np.append(newlines, data.size)
    starts = np.concatenate(([0], newlines + 1))
    commas = np.flatnonzero(data == 44)
    # commas before each line's end, minus those before its start
    per_line = np.searchsorted(commas, ends) - np.searchsorted(commas, starts)
    bad = np.flatnonzero(per_line != n_classes)
    if bad.size:
        i = int(bad[0])
        raise RecordError(i + 2, f"{int(per_line[i]) + 1} column(s), the header has {width}",
                          path=path)
    first_comma = commas[np.searchsorted(commas, starts)]
    # stem bytes (and the comma after each) are cut out; a newline becomes a separator
    marks = np.zeros(data.size + 1, dtype=np.int8)
    marks[starts] += 1
    marks[first_comma + 1] -= 1
    in_stem = np.cumsum(marks[:-1], dtype=np.int8).view(bool)
    stem_text = data[in_stem].tobytes()
    try:
        stems = stem_text.decode("utf-8").split(",")[:-1]
    except UnicodeDecodeError:
        raise InputError("a stem is not UTF-8 text", path=path) from None
    stems = [stem.strip() for stem in stems]
    numbers = data[~in_stem].copy()
    numbers[numbers == 10] = 44
    scores = _parse_flat(numbers, path)
    if scores is None or scores.size != len(stems) * n_classes:
        scores = _parse_cells(numbers.tobytes(), len(stems), n_classes, path)
    scores = scores.reshape(len(stems), n_classes)
    if not (np.abs(scores) <= MAX_MAGNITUDE).all():
        row, column = (int(x[0]) for x in np.nonzero(~(np.abs(scores) <= MAX_MAGNITUDE)))
        raise RecordError(row + 2, f"the score in column {column + 2} is not finite within "
                          f"±{MAX_MAGNITUDE:g}", path=path, stem=stems[row])
    return stems, scores


_NUMBER_BYTES = np.zeros(256, dtype=bool)
_NUMBER_BYTES[np.frombuffer(b"0123456789eE+-., \t\r", dtype=np.uint8)] = True


def _parse_flat(numbers: np.ndarray, path: str) -> np.ndarray | None:
    if not _NUMBER_BYTES[numbers].all():  # true, null, "0.5": read cell by cell (refused)
        return None
    try:
        values = loads_json(b"[" + numbers.tobytes() + b"]", path)
    except InputError:
        return None
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def _parse_cells(text: bytes, n_rows: int, n_classes: int, path: str) -> np.ndarray:
    tokens = text.decode("utf-8", errors="replace").split(",")
    out = np.empty(n_rows * n_classes)
    for i, token in enumerate(tokens):
        try:
            out[i] = float(token)
        except ValueError:
            raise RecordError(i // n_classes + 2, f"the score in column {i % n_classes + 2} "
                              f"is not a number ({token.strip()!r})", path=path) from None
    return out
