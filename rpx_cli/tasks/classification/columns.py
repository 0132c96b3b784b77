"""The columns every classification figure is computed from (``rpx eval classification``,
:mod:`rpx_cli.tasks.classification`): the label sets and score tables shared between
predictions, the record kept per stem and their columns (built from the two CSV tables
instead by :mod:`rpx_cli.tasks.classification.tables`)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.labels import (
    label_key,
    sort_labels,
)
from rpx_cli.tasks.base import Params

# --- score tables shared between predictions ------------------------------------------------------


class LabelSet:
    """The classes of a score table, in class order. Predictions with the same classes share
    one object, so a table's checks and orderings are worked out once, and a worker sends
    the names to the parent process once (later pickles carry only a digest)."""

    __slots__ = ("__weakref__", "cache", "index", "key", "labels")

    def __init__(self, labels: tuple[str, ...], key: str | None = None) -> None:
        self.labels = labels
        self.key = key or hashlib.sha1("\x1f".join(labels).encode()).hexdigest()
        self.index = {label: i for i, label in enumerate(labels)}
        self.cache: dict[Any, Any] = {}

    def __len__(self) -> int:
        return len(self.labels)

    def __reduce__(self):
        pid, sent = _SENT
        if pid != os.getpid():
            sent = set()
            _SENT[:] = [os.getpid(), sent]
        if self.key in sent:
            return _label_set_by_key, (self.key,)
        sent.add(self.key)
        return _label_set_from, (self.labels, self.key)


_BY_LABELS: dict[tuple[str, ...], LabelSet] = {}
_BY_KEY: dict[str, LabelSet] = {}
_SENT: list[Any] = [os.getpid(), set()]


def label_set(labels: tuple[str, ...]) -> LabelSet:
    """The shared :class:`LabelSet` of these labels (in this order)."""
    found = _BY_LABELS.get(labels)
    if found is None:
        if len(_BY_LABELS) > 512:
            _BY_LABELS.clear()
        found = _BY_LABELS[labels] = LabelSet(labels)
        _BY_KEY.setdefault(found.key, found)
    return found


def _label_set_from(labels: tuple[str, ...], key: str) -> LabelSet:
    found = _BY_KEY.get(key)
    if found is None:
        found = _BY_KEY[key] = label_set(labels)
    return found


def _label_set_by_key(key: str) -> LabelSet:
    try:
        return _BY_KEY[key]
    except KeyError:
        raise RuntimeError("a score table's classes arrived before their names") from None


_MEMO: dict[int, tuple[Any, Any]] = {}


def fingerprint(value: Any) -> Any:
    """A hashable stand-in for a parameter value (a class map, a class-name list), memoised
    by identity so a per-stem lookup costs nothing."""
    if value is None:
        return None
    memo = _MEMO.get(id(value))
    if memo is None or memo[0] is not value:
        if len(_MEMO) > 64:
            _MEMO.clear()
        if isinstance(value, Mapping):
            key = tuple(sorted(value.items(), key=lambda kv: kv[0]))
        else:
            key = tuple(value)
        memo = _MEMO[id(value)] = (value, key)
    return memo[1]


# --- what evaluate keeps per stem ----------------------------------------------------------------


@dataclass
class Labels:
    """One side of a pair after ``--class-map`` and the class-name checks: labels given by
    name, the score of a single label, a score table in class order."""

    labels: tuple[str, ...] = ()
    score: float | None = None
    table: LabelSet | None = None
    scores: np.ndarray | None = None

    @property
    def form(self) -> str:
        if self.table is not None:
            return "scores"
        if self.score is not None:
            return "score"
        return "label" if self.labels else "none"


@dataclass
class Record:
    """One evaluated stem: GT labels, the prediction and its file (for messages)."""

    gt: tuple[str, ...]
    pred: Labels
    path: str | None


def encode_record(record: Record) -> dict[str, Any]:
    pred = record.pred
    out: dict[str, Any] = {"gt": list(record.gt), "pred": list(pred.labels), "path": record.path}
    if pred.score is not None:
        out["score"] = pred.score
    if pred.table is not None and pred.scores is not None:  # lists: reports sort keys
        out["classes"] = list(pred.table.labels)
        out["scores"] = pred.scores.tolist()
    return out


def decode_record(data: dict[str, Any]) -> Record:
    table = scores = None
    if data.get("scores") is not None:
        table = label_set(tuple(data["classes"]))
        scores = np.array(data["scores"], dtype=np.float64)
        if scores.shape != (len(table),):
            raise ValueError("a score table's classes and scores differ in length")
    return Record(tuple(data["gt"]), Labels(tuple(data["pred"]), data.get("score"), table, scores),
                  data.get("path"))


# --- the columns every figure is computed from -----------------------------------------------------


@dataclass
class Columns:
    """Every stem at once: ``classes`` in class order; ``gt`` and ``given`` (labels the
    prediction names) as (n, C) indicators; ``score`` (n,) the score of a named label (NaN:
    none); ``scores`` (n, C) the score tables (-inf on a row without one); ``form`` of the
    predictions (``scores``, ``score``, ``label`` or ``none``: all missing)."""

    classes: list[str]
    gt: np.ndarray
    given: np.ndarray
    score: np.ndarray
    scores: np.ndarray | None
    has_table: np.ndarray
    form: str
    paths: list[str | None]

    def __len__(self) -> int:
        return int(self.gt.shape[0])

    def take(self, order: Any) -> Columns:
        index = np.asarray(order, dtype=np.int64)
        return Columns(self.classes, self.gt[index], self.given[index], self.score[index],
                       None if self.scores is None else self.scores[index],
                       self.has_table[index], self.form, [self.paths[i] for i in index.tolist()])

    def record(self, i: int) -> Record:
        """Stem i's record alone."""
        return next(iter(self.take([i])))

    def __iter__(self):
        """Per-stem records (what a ``--shard`` part writes)."""
        table = label_set(tuple(self.classes)) if self.scores is not None else None
        classes = np.array(self.classes, dtype=object)
        for i in range(len(self)):
            pred = Labels(tuple(classes[self.given[i]]),
                          None if np.isnan(self.score[i]) else float(self.score[i]))
            if table is not None and self.has_table[i]:
                pred.table, pred.scores = table, self.scores[i]
            yield Record(tuple(classes[self.gt[i]]), pred, self.paths[i])


# a run's classes (the confusion matrix is C x C int64: 134 MB at the bound; ImageNet-1k has
# 1,000) and its samples x classes (the GT and prediction indicators, and a score table,
# are dense: 256 MB of booleans each at the bound)
MAX_CLASSES = 4096
MAX_CELLS = 1 << 28


def check_size(n_classes: int, n_samples: int, path: str | None) -> None:
    """An :class:`InputError` naming the bound a run's classes or samples x classes pass."""
    if n_classes > MAX_CLASSES:
        raise InputError(f"the labels make {n_classes:,} classes, more than {MAX_CLASSES:,} "
                         "(a dense confusion matrix and per-class tables)", path=path)
    if n_classes * n_samples > MAX_CELLS:
        raise InputError(f"{n_samples:,} samples x {n_classes:,} classes is more than "
                         f"{MAX_CELLS:,} cells of dense per-class indicators; evaluate it in "
                         "--shard parts", path=path)


def columns_of(records: list[Record] | Columns, params: Params) -> Columns:
    """The records of the per-stem path (or of a merge) as :class:`Columns`; checks what
    needs every stem: one prediction form, and score tables naming every class."""
    if isinstance(records, Columns):
        return records
    n = len(records)
    forms: dict[str, Record] = {}
    for record in records:
        forms.setdefault(record.pred.form, record)
    forms.pop("none", None)
    if len(forms) > 1:
        examples = ", ".join(f"{form} ({rec.path})" for form, rec in sorted(forms.items()))
        raise InputError(f"the predictions mix forms: {examples}; every prediction must be a "
                         "label, a label with a score, or a score table", path=next(
                             iter(forms.values())).path)
    form = next(iter(forms), "none")
    tables: dict[int, tuple[LabelSet, Record]] = {}
    for record in records:
        if record.pred.table is not None:
            tables.setdefault(id(record.pred.table), (record.pred.table, record))
    names = params.get("class_names")
    if names:
        classes = list(names)
    else:
        seen: set[str] = set()
        for record in records:
            seen.update(record.gt)
            seen.update(record.pred.labels)
        for table, _ in tables.values():
            seen.update(table.labels)
        classes = sort_labels(seen)
    check_size(len(classes), n, records[0].path if records else None)
    whole = tuple(classes)
    reorder: dict[int, np.ndarray | None] = {}
    for key, (table, record) in tables.items():
        missing = [c for c in classes if c not in table.index]
        if missing or len(table) != len(classes):
            raise InputError(f"the score table has no score for class(es) "
                             f"{', '.join(map(repr, missing[:5]))}"
                             f"{' …' if len(missing) > 5 else ''} ({len(classes)} classes in all)",
                             path=record.path)
        reorder[key] = None if table.labels == whole else np.array(
            [table.index[c] for c in classes], dtype=np.int64)
    index = {label: i for i, label in enumerate(classes)}
    gt = _indicator([record.gt for record in records], index, n)
    given = _indicator([record.pred.labels for record in records], index, n)
    score = np.array([np.nan if r.pred.score is None else r.pred.score for r in records],
                     dtype=np.float64)
    has_table = np.array([r.pred.table is not None for r in records], dtype=bool)
    scores = None
    if form == "scores":
        scores = np.full((n, len(classes)), -np.inf)
        if has_table.any():
            scores[has_table] = np.stack([
                r.pred.scores if reorder[id(r.pred.table)] is None
                else r.pred.scores[reorder[id(r.pred.table)]]
                for r in records if r.pred.table is not None])
    return Columns(classes, gt, given, score, scores, has_table, form,
                   [record.path for record in records])


def _indicator(label_lists: list[tuple[str, ...]], index: dict[str, int], n: int) -> np.ndarray:
    out = np.zeros((n, len(index)), dtype=bool)
    counts = np.fromiter(map(len, label_lists), dtype=np.int64, count=n)
    codes = np.fromiter((index[label] for labels in label_lists for label in labels),
                        dtype=np.int64, count=int(counts.sum()))
    out[np.repeat(np.arange(n), counts), codes] = True
    return out



def name_index(names: list[str]) -> dict[str, int]:
    key = fingerprint(names)
    found = _NAME_INDEX.get(key)
    if found is None:
        if len(_NAME_INDEX) > 16:
            _NAME_INDEX.clear()
        found = _NAME_INDEX[key] = {name: i for i, name in enumerate(names)}
    return found


_NAME_INDEX: dict[Any, dict[str, int]] = {}


def table_plan(labels: tuple[str, ...], params: Params):
    """How to turn a table with these classes into the class order: ``(target LabelSet,
    merge groups or None, column order)``, or the message of the input error it is."""
    mapping = params.get("class_map")
    groups = None
    mapped = list(labels)
    if mapping:
        renamed = [mapping.get(label, label) for label in labels]
        distinct = list(dict.fromkeys(r for r in renamed if r is not None))
        if len(distinct) != len(labels):
            where = {label: i for i, label in enumerate(distinct)}
            groups = np.array([-1 if r is None else where[r] for r in renamed], dtype=np.int64)
        mapped = distinct
    if not mapped:
        return "scores: --class-map drops every class of the table"
    names = params.get("class_names")
    if names:
        index = name_index(names)
        unknown = [label for label in mapped if label not in index]
        if unknown:
            return f"scores: class {unknown[0]!r} is not in --class-names"
        missing = [name for name in names if name not in set(mapped)]
        if missing:
            return (f"the score table has no score for class(es) "
                    f"{', '.join(map(repr, missing[:5]))}{' …' if len(missing) > 5 else ''} "
                    f"of --class-names")
        position = {label: i for i, label in enumerate(mapped)}
        order = np.array([position[name] for name in names], dtype=np.int64)
        target = tuple(names)
    else:
        order = np.array(sorted(range(len(mapped)), key=lambda i: label_key(mapped[i])),
                         dtype=np.int64)
        target = tuple(mapped[i] for i in order)
    return label_set(target), groups, order


def merge_columns(scores: np.ndarray, groups: np.ndarray, width: int, multi: bool) -> np.ndarray:
    """Columns mapped to one class by ``--class-map``: summed (single-label: probabilities
    of disjoint classes add) or the largest kept (multi-label), in column order (the same
    additions, in the same order, for one row or a whole table); ``groups`` -1 drops."""
    keep = groups >= 0
    out = np.full((width, scores.shape[0]), -np.inf if multi else 0.0)
    (np.maximum if multi else np.add).at(out, groups[keep], scores.T[keep])
    return out.T
