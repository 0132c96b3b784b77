"""``rpx eval classification --pred-file/--gt-file``: the columns every figure is computed
from (:class:`~rpx_cli.tasks.classification.columns.Columns`) built straight from the two
CSV tables, vectorised over rows: rows matched by stem, classes mapped and reordered into
the run's class order, single- and multi-label."""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import InputError, RecordError
from rpx_cli.io.labels import (
    LabelTable,
    label_key,
    sort_labels,
)
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.classification.columns import (
    Columns,
    check_size,
    merge_columns,
    name_index,
)

# --- the CSV form --------------------------------------------------------------------------------


def columns_from_tables(gt: LabelTable, pred: LabelTable, params: Params,
                        empty: frozenset[str] | set[str] = frozenset()) -> tuple[Columns, list[str]]:
    """Pair two CSV tables by stem and build the columns (vectorised: no loop over rows or
    classes beyond label lookups). ``empty``: GT stems whose prediction record was set aside
    (``--on-error skip``): not in ``pred``, scored as predicting nothing. A bad row is a
    :class:`~rpx_cli.errors.RecordError` naming its line and stem."""
    multi = params["multi_label"]
    for table in (gt, pred):
        _check_unique(table)
    if gt.kind == "label_score":
        raise InputError("line 1: a GT table is stem,label (or one 0/1 column per class with "
                         "--multi-label), not stem,label,score", path=gt.path)
    if gt.kind == "scores" and not multi:
        raise InputError("line 1: a GT table with one column per class is multi-label: pass "
                         "--multi-label", path=gt.path)
    position = {stem: i for i, stem in enumerate(pred.stems)}
    missing = [stem for stem in gt.stems if stem not in position and stem not in empty]
    if missing or len(pred.stems) + sum(stem in empty for stem in gt.stems) != len(gt.stems):
        gt_stems = set(gt.stems)
        extra = [stem for stem in pred.stems if stem not in gt_stems]
        raise InputError(f"the files do not hold the same stems: {len(missing)} only in "
                         f"{gt.path} (e.g. {missing[:3]}), {len(extra)} only in {pred.path} "
                         f"(e.g. {extra[:3]})", path=pred.path)
    align = np.array([position.get(stem, -1) for stem in gt.stems], dtype=np.int64)
    held = align >= 0  # rows with a prediction
    if not held.all():
        align = np.where(held, align, 0)  # rows without one are blanked below
    mapping = params.get("class_map")
    names = params.get("class_names")

    def mapped(labels: list[str]) -> list[str | None]:
        return [mapping.get(label, label) for label in labels] if mapping else list(labels)

    # labels given by name
    gt_labels = mapped(gt.labels) if gt.labels is not None else None
    pred_labels = None
    if pred.labels is not None:
        renamed = mapped(pred.labels)
        pred_labels = [renamed[i] if h else None for i, h in zip(align.tolist(), held.tolist(),
                                                                 strict=True)]
    score_classes = None
    scores = None
    if pred.kind == "scores":
        assert pred.classes is not None and pred.scores is not None
        score_classes, scores = _mapped_table(pred.classes, pred.scores[align], mapping, multi,
                                              pred.path)
    gt_classes = gt_matrix = None
    if gt.kind == "scores":
        assert gt.classes is not None and gt.scores is not None
        bad = np.flatnonzero(~np.isin(gt.scores, (0.0, 1.0)).all(axis=1))
        if bad.size:
            raise RecordError(gt.line(int(bad[0])), "a multi-label GT column holds 0 or 1",
                              path=gt.path, stem=gt.stems[int(bad[0])])
        gt_classes, gt_matrix = _mapped_table(gt.classes, gt.scores, mapping, True, gt.path)
    # the label set
    if names:
        index = name_index(names)
        for labels, path in ((gt_labels, gt.path), (pred_labels, pred.path),
                             (gt_classes, gt.path), (score_classes, pred.path)):
            unknown = sorted({label for label in labels or () if label is not None
                              and label not in index}, key=label_key)
            if unknown:
                text = f"label {unknown[0]!r} is not in --class-names"
                if labels is gt_labels or labels is pred_labels:
                    row = labels.index(unknown[0])
                    table = gt if labels is gt_labels else pred
                    at = row if labels is gt_labels else int(align[row])
                    raise RecordError(table.line(at), text, path=path, stem=gt.stems[row])
                raise InputError(text, path=path)
        classes = list(names)
    else:
        seen: set[str] = set()
        for labels in (gt_labels, pred_labels, gt_classes, score_classes):
            seen.update(label for label in labels or () if label is not None)
        classes = sort_labels(seen)
    index = {label: i for i, label in enumerate(classes)}
    n, n_classes = len(gt.stems), len(classes)
    check_size(n_classes, n, gt.path)
    # GT indicators
    if gt_matrix is not None:
        gt_ind = _reorder(gt_classes, gt_matrix, index, gt.path, "the GT table") > 0.5
    else:
        assert gt_labels is not None
        dropped = [i for i, label in enumerate(gt_labels) if label is None]
        if dropped:
            raise RecordError(gt.line(dropped[0]), "the GT label is mapped to null by "
                              "--class-map; a single-label sample needs a class", path=gt.path,
                              stem=gt.stems[dropped[0]])
        gt_ind = np.zeros((n, n_classes), dtype=bool)
        gt_ind[np.arange(n), _codes(gt_labels, index)] = True
    # predictions
    given = np.zeros((n, n_classes), dtype=bool)
    score = np.full(n, np.nan)
    table = None
    has_table = np.zeros(n, dtype=bool)
    form = "label"
    if scores is not None:
        table = _reorder(score_classes, scores, index, pred.path, "the score table",
                         header=True)
        has_table[:] = held
        table[~held] = -np.inf  # no prediction: as a per-stem empty prediction
        form = "scores"
        if multi:
            bad = np.flatnonzero(((table < 0.0) | (table > 1.0)).any(axis=1) & held)
            if bad.size:
                raise RecordError(pred.line(int(align[bad[0]])), "a score is outside [0, 1] "
                                  "(--threshold needs probabilities)", path=pred.path,
                                  stem=gt.stems[int(bad[0])])
    else:
        assert pred_labels is not None
        present = np.array([label is not None for label in pred_labels], dtype=bool)
        codes = _codes([label for label in pred_labels if label is not None], index)
        given[np.flatnonzero(present), codes] = True
        if pred.kind == "label_score":
            assert pred.score is not None
            form = "score"
            score = np.where(present, pred.score[align], np.nan)
            if multi:
                bad = np.flatnonzero((score < 0.0) | (score > 1.0))
                if bad.size:
                    raise RecordError(pred.line(int(align[bad[0]])), "score outside [0, 1]",
                                      path=pred.path, stem=gt.stems[int(bad[0])])
    columns = Columns(classes, gt_ind, given, score, table, has_table, form, [pred.path] * n)
    return columns, list(gt.stems)


def _check_unique(table: LabelTable) -> None:
    seen: dict[str, int] = {}
    for row, stem in enumerate(table.stems):
        line = table.line(row)
        if stem in seen:
            raise RecordError(line, f"stem {stem!r} repeats line {seen[stem]}", path=table.path,
                              stem=stem)
        seen[stem] = line
        if not stem:
            raise RecordError(line, "the stem is empty", path=table.path, stem="")


def _mapped_table(classes: list[str], scores: np.ndarray, mapping: Any, multi: bool,
                  path: str) -> tuple[list[str], np.ndarray]:
    if not mapping:
        return list(classes), scores
    renamed = [mapping.get(label, label) for label in classes]
    distinct = list(dict.fromkeys(r for r in renamed if r is not None))
    if not distinct:
        raise InputError("--class-map drops every column", path=path)
    if len(distinct) == len(classes):
        return distinct, scores
    where = {label: i for i, label in enumerate(distinct)}
    groups = np.array([-1 if r is None else where[r] for r in renamed], dtype=np.int64)
    return distinct, merge_columns(scores, groups, len(distinct), multi)


def _reorder(table_classes: list[str] | None, matrix: np.ndarray, index: dict[str, int],
             path: str, what: str, *, header: bool = False) -> np.ndarray:
    assert table_classes is not None
    present = set(table_classes)
    missing = [label for label in index if label not in present]
    if missing:
        raise InputError(f"line 1: {what} has no column for class(es) "
                         f"{', '.join(map(repr, missing[:5]))}{' …' if len(missing) > 5 else ''}",
                         path=path)
    order = [table_classes.index(label) for label in index] if len(index) < 64 else \
        list(map({label: i for i, label in enumerate(table_classes)}.__getitem__, index))
    return np.ascontiguousarray(matrix[:, order])


def _codes(labels: list[str], index: dict[str, int]) -> np.ndarray:
    if not labels:
        return np.zeros(0, dtype=np.int64)
    uniques, inverse = np.unique(np.array(labels, dtype=object).astype(str), return_inverse=True)
    lookup = np.array([index[str(u)] for u in uniques], dtype=np.int64)
    return lookup[inverse]
