"""``rpx eval classification``: image (or crop, or scene) classification, single- or
multi-label — Aquarium's "well-defined" task, with scikit-learn's definitions.

Inputs per stem (``rpx_cli.io.labels``) or one CSV per side (``--pred-file/--gt-file``).
Every prediction of a run has one form: a label, a label with its score, or a score table
(one score per class; the prediction is the arg-max, ties to the class first in class
order). Class order is ``--class-names`` when given, else the natural label order
(integers by value, then text); it also breaks ties at the k-th place of top-k.

The label set is ``--class-names``, else every label in GT, predictions and score tables;
a score table must name every class of it. Macro means run over **every class of the label
set** (scikit-learn's ``average="macro"``), unlike segmentation's means over supported
classes; ``balanced_accuracy`` is the mean recall over classes with support (scikit-learn's
``balanced_accuracy_score`` leaves unsupported classes out), and ``mAP`` the mean AP over
classes with support (AP is undefined without a positive).

Statistics: one record per stem (its GT labels, predicted labels, score and score table),
so ``--shard`` parts, ``rpx merge`` and ``--jobs`` rebuild the single run bit for bit. Rows
and ``dataset`` are both computed from all records at once (:meth:`summarize_rows`), by the
same vectorised code for per-stem files and CSV tables.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.boxes import load_class_map
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.labels import (
    LabelDoc,
    LabelTable,
    label_key,
    parse_label_file,
    read_class_names,
    read_label_csv,
    sort_labels,
)
from rpx_cli.ops.classification import (
    average_precision,
    calibration,
    class_scores,
    confusion_counts,
    top1,
    true_rank,
)
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks.base import FileInput, MetricInfo, Option, Params, Sample, Task, Warn, probability
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

FAMILIES = ("rows", "report", "ranking", "calibration")


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


def _fingerprint(value: Any) -> Any:
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


# --- the task -----------------------------------------------------------------------------------


def _top_k(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"top-k must be >= 1, got {text}")
    return value


@register_task
class Classification(Task):
    name = "classification"
    help = ("Image classification, single- or multi-label: accuracy, balanced and top-k "
            "accuracy, macro/weighted P/R/F1, per-class report, confusion matrix, AP/mAP and "
            "calibration error, equal to scikit-learn.")
    formats = (
        'Per stem, GT: JSON {"label": L}, {"labels": [L, ...]} (multi-label), or a .txt holding L;\n'
        'prediction: JSON {"label": L}, {"label": L, "score": s} or {"scores": {L: s, ...}} (arg-max).\n'
        'Or one CSV per side (--gt-file G.csv --pred-file P.csv): stem,label or\n'
        'stem,<one score column per class>, a header row naming the columns. Labels: strings or ints.'
    )
    example = (
        'rpx eval classification --pred-dir fixtures/classification/pets/pred \\\n'
        '    --gt-dir fixtures/classification/pets/gt \\\n'
        "    --class-names fixtures/classification/pets/classes.txt | jq .dataset.accuracy\n"
        'rpx eval classification --pred-file fixtures/classification/imagenet-csv/pred.csv \\\n'
        '    --gt-file fixtures/classification/imagenet-csv/gt.csv --top-k 3 | jq .dataset.top3_accuracy'
    )
    suffixes = (".json", ".txt")
    primary_metric = "correct"
    stats = (Stat("record", encode=encode_record, decode=decode_record),)
    families = {"rows": (("correct", "confidence", "label_errors"), ()),
                "report": ((), ()), "ranking": ((), ()), "calibration": ((), ())}
    options = (
        Option("class_names", "--class-names", "file", None, metavar="FILE",
               help="Classes, one per line or a JSON list: the label set and the class order "
                    "(ties go to the class listed first); a label outside it is an input error "
                    "[default: every label that appears, integers by value, then text]."),
        Option("class_map", "--class-map", "file", None, metavar="FILE",
               help="JSON {raw label: evaluated label, or null to drop}, applied to GT and "
                    "predictions first (merged classes' scores add; with --multi-label the "
                    "largest is kept)."),
        Option("top_k", "--top-k", "parsed", (5,), multiple=True, parse=_top_k, metavar="K",
               help="Top-k accuracy for each K (repeatable) when predictions carry a score "
                    "per class."),
        Option("multi_label", "--multi-label", "flag", False,
               help="GT lists several labels per stem; predictions are thresholded score "
                    "tables or label lists."),
        Option("threshold", "--threshold", "parsed", 0.5, parse=probability("threshold"),
               metavar="T",
               help="With --multi-label, a class is predicted when its score >= T (scores "
                    "must then lie in [0, 1])."),
        Option("ece_bins", "--ece-bins", "int", 15, minimum=1,
               help="Equal-width confidence bins of the expected calibration error."),
    )
    default_params = {option.param: option.default for option in options}
    file_inputs = (
        Option("gt_file", "--gt-file", "file", None, metavar="CSV",
               help="One CSV of GT instead of --gt-dir: stem,label (or stem,<one 0/1 column "
                    "per class> with --multi-label); a header row names the columns."),
        Option("pred_file", "--pred-file", "file", None, metavar="CSV",
               help="One CSV of predictions instead of --pred-dir: stem,label, "
                    "stem,label,score or stem,<one score column per class>."),
    )

    # --- parameters -------------------------------------------------------------------

    def normalise_params(self, params: Params) -> dict[str, Any]:
        names = params.get("class_names")
        if isinstance(names, str):
            names = read_class_names(names)
        mapping = params.get("class_map")
        if isinstance(mapping, str):
            mapping = load_class_map(mapping)
        top_k = params.get("top_k", (5,))
        top_k = [top_k] if isinstance(top_k, int) else list(top_k or (5,))
        return {**params, "class_names": names, "class_map": mapping or None,
                "top_k": sorted({int(k) for k in top_k}),
                "multi_label": bool(params.get("multi_label", False)),
                "threshold": float(params.get("threshold", 0.5)),
                "ece_bins": int(params.get("ece_bins", 15))}

    def validate_params(self, params: Params) -> None:
        if any(k < 1 for k in params["top_k"]):
            raise ParameterError(f"top-k must be >= 1, got {params['top_k']}")
        if not 0.0 <= params["threshold"] <= 1.0:
            raise ParameterError(f"threshold must be in [0, 1], got {params['threshold']}")
        if params["ece_bins"] < 1:
            raise ParameterError(f"ece bins must be >= 1, got {params['ece_bins']}")

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        info = dict(self.metrics)
        for k in params.get("top_k", (5,)):
            info[f"correct_top{k}"] = MetricInfo(
                "higher", f"row: 1 when the GT class is among the {k} highest scores (ties at "
                "the k-th place in class order), else 0")
            info[f"top{k}_accuracy"] = MetricInfo(
                "higher", f"share of samples whose GT class is among the {k} highest scores "
                "(ties in class order; a missing prediction is wrong)")
        return info

    metrics = {
        "correct": MetricInfo("higher", "row: 1 when the prediction is right (single-label: the "
                              "top-1 class; multi-label: the predicted set equals the GT set)"),
        "confidence": MetricInfo("none", "row: the top-1 score, when predictions carry scores"),
        "label_errors": MetricInfo("lower", "row (multi-label): classes predicted wrongly "
                                   "(|GT set xor predicted set|)"),
        "accuracy": MetricInfo("higher", "share of samples whose top-1 class is the GT class"),
        "balanced_accuracy": MetricInfo("higher", "mean recall over the classes with GT support "
                                        "(sklearn balanced_accuracy_score)"),
        "macro_precision": MetricInfo("higher", "mean precision over EVERY class of the label "
                                      "set, 0/0 = 0 (sklearn average='macro'; segmentation "
                                      "averages over supported classes only)"),
        "macro_recall": MetricInfo("higher", "mean recall over every class of the label set "
                                   "(0/0 = 0)"),
        "macro_f1": MetricInfo("higher", "mean F1 over every class of the label set (0/0 = 0)"),
        "weighted_precision": MetricInfo("higher", "precision averaged with GT support weights"),
        "weighted_recall": MetricInfo("higher", "recall averaged with GT support weights"),
        "weighted_f1": MetricInfo("higher", "F1 averaged with GT support weights "
                                  "(sklearn average='weighted')"),
        "micro_precision": MetricInfo("higher", "multi-label: summed TP / (TP + FP)"),
        "micro_recall": MetricInfo("higher", "multi-label: summed TP / (TP + FN)"),
        "micro_f1": MetricInfo("higher", "multi-label: 2 TP / (2 TP + FP + FN), counts summed "
                               "over classes"),
        "hamming_loss": MetricInfo("lower", "multi-label: share of (sample, class) decisions "
                                   "that are wrong"),
        "subset_accuracy": MetricInfo("higher", "multi-label: share of samples whose predicted "
                                      "set equals the GT set"),
        "precision": MetricInfo("higher", "per class: TP / (TP + FP), 0/0 = 0"),
        "recall": MetricInfo("higher", "per class: TP / (TP + FN), 0/0 = 0"),
        "f1": MetricInfo("higher", "per class: 2 TP / (2 TP + FP + FN), 0/0 = 0"),
        "support": MetricInfo("none", "per class: GT samples"),
        "ap": MetricInfo("higher", "per class: one-vs-rest average precision over the score "
                         "tables (sklearn average_precision_score; tied scores enter together); "
                         "null without GT support"),
        "mAP": MetricInfo("higher", "mean AP over the classes with GT support"),
        "ece": MetricInfo("lower", "expected calibration error of the top-1 confidence: "
                          "sum over equal-width bins (b/B, (b+1)/B] of n_b/N |acc_b - conf_b|"),
        "n_samples": MetricInfo("none", "stems evaluated"),
        "n_missing": MetricInfo("none", "single-label: stems whose prediction names no class (a "
                                "missing file under --missing empty): counted wrong"),
        "n_classes": MetricInfo("none", "classes in the label set"),
    }

    # --- per pair -----------------------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Labels:
        doc = parse_label_file(buffer.read(path).tobytes(), path)
        return self._labels(doc, params, path, role=role)

    def _labels(self, doc: LabelDoc, params: Params, path: str, *, role: str) -> Labels:
        mapping = params.get("class_map")
        labels = doc.labels
        if mapping:
            labels = tuple(m for m in (mapping.get(label, label) for label in labels) if m is not None)
        names = params.get("class_names")
        if names:
            index = _name_index(names)
            unknown = [label for label in labels if label not in index]
            if unknown:
                raise InputError(f"label {unknown[0]!r} is not in --class-names", path=path)
        multi = params["multi_label"]
        if role == "gt":
            if doc.classes is not None or doc.score is not None:
                raise InputError("a GT file holds labels, not scores", path=path)
            if not multi and len(labels) != 1:
                raise InputError(
                    "a single-label GT needs exactly one label, found "
                    + (f"{len(labels)} (pass --multi-label for several)" if labels else
                       "none (dropped by --class-map?)"), path=path)
            return Labels(tuple(dict.fromkeys(labels)))
        if doc.classes is None:
            if not multi and len(labels) > 1:
                raise InputError(f"a single-label prediction names {len(labels)} labels; give "
                                 "one label, or a score per class", path=path)
            score = doc.score if labels else None
            if score is not None and multi and not 0.0 <= score <= 1.0:
                raise InputError(f"score {score} is outside [0, 1]", path=path)
            return Labels(tuple(dict.fromkeys(labels)), score)
        table, scores = self._table(doc, params, path)
        if multi:
            bad = np.flatnonzero((scores < 0.0) | (scores > 1.0))
            if bad.size:
                raise InputError(f"scores: the score of {table.labels[int(bad[0])]!r} is "
                                 f"{scores[int(bad[0])]}, outside [0, 1] (--threshold needs "
                                 "probabilities)", path=path)
        return Labels((), None, table, scores)

    def _table(self, doc: LabelDoc, params: Params, path: str) -> tuple[LabelSet, np.ndarray]:
        """A score table mapped (``--class-map``) and put in class order; the plan for each
        distinct table is worked out once and kept on its :class:`LabelSet`."""
        assert doc.classes is not None and doc.scores is not None
        raw = label_set(doc.classes)
        key = (_fingerprint(params.get("class_map")), _fingerprint(params.get("class_names")),
               params["multi_label"])
        plan = raw.cache.get(key)
        if plan is None:
            plan = raw.cache[key] = _table_plan(raw.labels, params)
        if isinstance(plan, str):
            raise InputError(plan, path=path)
        target, groups, order = plan
        scores = doc.scores
        if groups is not None:
            scores = merge_columns(scores[None, :], groups, len(order),
                                   params["multi_label"])[0]
        return target, scores[order]

    def empty_prediction(self, gt: Labels, params: Params) -> Labels:
        return Labels()

    def evaluate(self, pred: Labels, gt: Labels, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        if pred.table is not None:
            absent = [label for label in gt.labels if label not in pred.table.index]
            if absent:
                raise InputError(f"the score table has no score for class {absent[0]!r} (the "
                                 f"GT label in {gt_path})", path=pred_path)
        return Sample({}, {"record": Record(gt.labels, pred, pred_path or gt_path)})

    # --- one CSV per side -----------------------------------------------------------------

    def read_files(self, files: Mapping[str, str], params: Params) -> FileInput:
        gt_table, pred_table = read_label_csv(files["gt_file"]), read_label_csv(files["pred_file"])
        columns, stems = columns_from_tables(gt_table, pred_table, params)
        stats = StatTable(self.stats, {"record": columns}, len(stems))
        return FileInput(stems, stats=stats, rows=[{} for _ in stems],
                         pred_path=files["pred_file"], gt_path=files["gt_file"])

    # --- over all stems -------------------------------------------------------------------

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        return self.summarize_rows(stats, params)[0]

    def summarize_rows(self, stats: StatTable, params: Params):
        columns = columns_of(stats["record"], params)
        wanted = set(params.get("metrics") or FAMILIES)
        if params["multi_label"]:
            values, aggregate, dataset = multi_label_figures(columns, params, wanted)
        else:
            values, aggregate, dataset = single_label_figures(columns, params, wanted)
        keys = list(values)
        rows = [dict(zip(keys, row, strict=True)) for row in zip(*values.values(), strict=True)] \
            if keys else [{} for _ in range(len(columns))]
        return {"aggregate": aggregate, "dataset": dataset}, rows


def _name_index(names: list[str]) -> dict[str, int]:
    key = _fingerprint(names)
    found = _NAME_INDEX.get(key)
    if found is None:
        if len(_NAME_INDEX) > 16:
            _NAME_INDEX.clear()
        found = _NAME_INDEX[key] = {name: i for i, name in enumerate(names)}
    return found


_NAME_INDEX: dict[Any, dict[str, int]] = {}


def _table_plan(labels: tuple[str, ...], params: Params):
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
        index = _name_index(names)
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


# --- the CSV form --------------------------------------------------------------------------------


def columns_from_tables(gt: LabelTable, pred: LabelTable,
                        params: Params) -> tuple[Columns, list[str]]:
    """Pair two CSV tables by stem and build the columns (vectorised: no loop over rows or
    classes beyond label lookups)."""
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
    missing = [stem for stem in gt.stems if stem not in position]
    if missing or len(pred.stems) != len(gt.stems):
        gt_stems = set(gt.stems)
        extra = [stem for stem in pred.stems if stem not in gt_stems]
        raise InputError(f"the files do not hold the same stems: {len(missing)} only in "
                         f"{gt.path} (e.g. {missing[:3]}), {len(extra)} only in {pred.path} "
                         f"(e.g. {extra[:3]})", path=pred.path)
    align = np.array([position[stem] for stem in gt.stems], dtype=np.int64)
    mapping = params.get("class_map")
    names = params.get("class_names")

    def mapped(labels: list[str]) -> list[str | None]:
        return [mapping.get(label, label) for label in labels] if mapping else list(labels)

    # labels given by name
    gt_labels = mapped(gt.labels) if gt.labels is not None else None
    pred_labels = None
    if pred.labels is not None:
        renamed = mapped(pred.labels)
        pred_labels = [renamed[i] for i in align.tolist()]
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
            raise InputError(f"line {int(bad[0]) + 2}: a multi-label GT column holds 0 or 1",
                             path=gt.path)
        gt_classes, gt_matrix = _mapped_table(gt.classes, gt.scores, mapping, True, gt.path)
    # the label set
    if names:
        index = _name_index(names)
        for labels, path in ((gt_labels, gt.path), (pred_labels, pred.path),
                             (gt_classes, gt.path), (score_classes, pred.path)):
            unknown = sorted({label for label in labels or () if label is not None
                              and label not in index}, key=label_key)
            if unknown:
                line = ""
                if labels is gt_labels or labels is pred_labels:
                    row = labels.index(unknown[0])
                    stem_row = row if labels is gt_labels else int(align[row])
                    line = f"line {stem_row + 2}: "
                raise InputError(f"{line}label {unknown[0]!r} is not in --class-names", path=path)
        classes = list(names)
    else:
        seen: set[str] = set()
        for labels in (gt_labels, pred_labels, gt_classes, score_classes):
            seen.update(label for label in labels or () if label is not None)
        classes = sort_labels(seen)
    index = {label: i for i, label in enumerate(classes)}
    n, n_classes = len(gt.stems), len(classes)
    # GT indicators
    if gt_matrix is not None:
        gt_ind = _reorder(gt_classes, gt_matrix, index, gt.path, "the GT table") > 0.5
    else:
        assert gt_labels is not None
        dropped = [i for i, label in enumerate(gt_labels) if label is None]
        if dropped:
            raise InputError(f"line {dropped[0] + 2}: the GT label is mapped to null by "
                             "--class-map; a single-label sample needs a class", path=gt.path)
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
        has_table[:] = True
        form = "scores"
        if multi:
            bad = np.flatnonzero(((table < 0.0) | (table > 1.0)).any(axis=1))
            if bad.size:
                raise InputError(f"line {int(align[bad[0]]) + 2}: a score is outside [0, 1] "
                                 "(--threshold needs probabilities)", path=pred.path)
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
                    raise InputError(f"line {int(align[bad[0]]) + 2}: score outside [0, 1]",
                                     path=pred.path)
    columns = Columns(classes, gt_ind, given, score, table, has_table, form, [pred.path] * n)
    return columns, list(gt.stems)


def _check_unique(table: LabelTable) -> None:
    seen: dict[str, int] = {}
    for line, stem in enumerate(table.stems, 2):
        if stem in seen:
            raise InputError(f"line {line}: stem {stem!r} repeats line {seen[stem]}",
                             path=table.path)
        seen[stem] = line
        if not stem:
            raise InputError(f"line {line}: the stem is empty", path=table.path)


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


# --- the figures ---------------------------------------------------------------------------------


def _per_class(classes: list[str], figures: Any, ap: np.ndarray | None) -> dict[str, Any]:
    support = figures.support
    columns = [figures.precision.tolist(), figures.recall.tolist(), figures.f1.tolist(),
               support.tolist()]
    out = {label: {"precision": p, "recall": r, "f1": f, "support": s}
           for label, p, r, f, s in zip(classes, *columns, strict=True)}
    if ap is not None:
        for label, value in zip(classes, ap.tolist(), strict=True):
            out[label]["ap"] = None if value != value else value
    return out


def _averages(figures: Any, prefix: str = "") -> dict[str, float]:
    support = figures.support.astype(np.float64)
    total = support.sum()
    out = {}
    for key in ("precision", "recall", "f1"):
        values = getattr(figures, key)
        out[f"macro_{key}"] = float(values.mean()) if values.size else None
        out[f"weighted_{key}"] = float(np.sum(values * support) / total) if total else 0.0
    return out


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def _map(ap: np.ndarray) -> float | None:
    return mean_present(ap)


def single_label_figures(columns: Columns, params: Params, wanted: set[str]):
    classes, n = columns.classes, len(columns)
    n_classes = len(classes)
    truth = np.argmax(columns.gt, axis=1)
    if columns.form == "scores":
        assert columns.scores is not None
        pred = np.where(columns.has_table, top1(columns.scores), -1)
        confidence = np.where(columns.has_table,
                              columns.scores[np.arange(n), np.maximum(pred, 0)], np.nan)
    else:
        has = columns.given.any(axis=1)
        pred = np.where(has, np.argmax(columns.given, axis=1), -1)
        confidence = columns.score
    correct = pred == truth
    n_missing = int(np.count_nonzero(pred < 0))
    values: dict[str, list[Any]] = {}
    aggregate: dict[str, Any] = {"n_samples": n}
    dataset: dict[str, Any] = {"n_samples": n, "n_classes": n_classes, "n_missing": n_missing}
    ranks = None
    if columns.form == "scores":
        assert columns.scores is not None
        ranks = np.where(columns.has_table, true_rank(columns.scores, truth), n_classes)
    if "rows" in wanted:
        values["correct"] = correct.astype(np.int64).tolist()
        aggregate["correct"] = _mean(correct.astype(np.float64))
        if ranks is not None:
            for k in params["top_k"]:
                hits = ranks < k
                values[f"correct_top{k}"] = hits.astype(np.int64).tolist()
                aggregate[f"correct_top{k}"] = _mean(hits.astype(np.float64))
        if columns.form in ("scores", "score"):
            values["confidence"] = [None if c != c else c for c in confidence.tolist()]
            aggregate["confidence"] = mean_present(confidence)
    matrix = confusion_counts(truth, pred, n_classes)
    tp = np.diagonal(matrix).astype(np.int64)
    support = np.bincount(truth, minlength=n_classes)
    predicted = matrix.sum(axis=0)
    figures = class_scores(tp, predicted - tp, support - tp)
    ap = None
    if "ranking" in wanted and ranks is not None:
        assert columns.scores is not None
        for k in params["top_k"]:
            dataset[f"top{k}_accuracy"] = _mean((ranks < k).astype(np.float64))
        ap = average_precision(columns.scores, columns.gt)
        dataset["mAP"] = _map(ap)
    if "report" in wanted:
        dataset["accuracy"] = _mean(correct.astype(np.float64))
        supported = support > 0
        dataset["balanced_accuracy"] = float(figures.recall[supported].mean())
        dataset.update(_averages(figures))
        confusion: dict[str, Any] = {"labels": classes, "matrix": matrix.tolist()}
        if n_missing:
            confusion["no_prediction"] = np.bincount(truth[pred < 0],
                                                     minlength=n_classes).tolist()
        dataset["confusion"] = confusion
    if "report" in wanted or ap is not None:
        per_class = _per_class(classes, figures, ap)
        if "report" not in wanted:
            per_class = {label: {"ap": entry["ap"]} for label, entry in per_class.items()}
        dataset["per_class"] = per_class
    if "calibration" in wanted and columns.form in ("scores", "score"):
        scored = ~np.isnan(confidence)
        conf = confidence[scored]
        if conf.size and ((conf < 0.0) | (conf > 1.0)).any():
            dataset["ece"] = None
            dataset.setdefault("null_reasons", {})["ece"] = (
                "confidences outside [0, 1] (logits?): calibration needs probabilities")
        elif conf.size:
            result = calibration(conf, correct[scored], params["ece_bins"])
            dataset["ece"] = result.ece
            dataset["calibration"] = {
                "edges": result.edges.tolist(), "count": result.count.tolist(),
                "accuracy": [None if v != v else v for v in result.accuracy.tolist()],
                "confidence": [None if v != v else v for v in result.confidence.tolist()],
                "n_scored": int(conf.size)}
        else:
            dataset["ece"] = None
            dataset.setdefault("null_reasons", {})["ece"] = "no prediction has a confidence"
    return values, aggregate, dataset


def multi_label_figures(columns: Columns, params: Params, wanted: set[str]):
    classes, n = columns.classes, len(columns)
    truth = columns.gt
    if columns.form == "scores":
        assert columns.scores is not None
        predicted = (columns.scores >= params["threshold"]) & columns.has_table[:, None]
    else:
        predicted = columns.given
    wrong = truth != predicted
    label_errors = np.count_nonzero(wrong, axis=1)
    exact = label_errors == 0
    values: dict[str, list[Any]] = {}
    aggregate: dict[str, Any] = {"n_samples": n}
    dataset: dict[str, Any] = {"n_samples": n, "n_classes": len(classes)}
    if "rows" in wanted:
        values["correct"] = exact.astype(np.int64).tolist()
        values["label_errors"] = label_errors.tolist()
        aggregate["correct"] = _mean(exact.astype(np.float64))
        aggregate["label_errors"] = _mean(label_errors.astype(np.float64))
    tp = np.count_nonzero(truth & predicted, axis=0)
    fp = np.count_nonzero(~truth & predicted, axis=0)
    fn = np.count_nonzero(truth & ~predicted, axis=0)
    figures = class_scores(tp, fp, fn)
    ap = None
    if "ranking" in wanted and columns.form == "scores":
        assert columns.scores is not None
        ap = average_precision(columns.scores, truth)
        dataset["mAP"] = _map(ap)
    if "report" in wanted:
        micro = class_scores(tp.sum(keepdims=True), fp.sum(keepdims=True), fn.sum(keepdims=True))
        dataset.update({"micro_precision": float(micro.precision[0]),
                        "micro_recall": float(micro.recall[0]), "micro_f1": float(micro.f1[0])})
        dataset.update(_averages(figures))
        dataset["hamming_loss"] = float(np.count_nonzero(wrong) / wrong.size) if wrong.size else None
        dataset["subset_accuracy"] = _mean(exact.astype(np.float64))
    if "report" in wanted or ap is not None:
        per_class = _per_class(classes, figures, ap)
        if "report" not in wanted:
            per_class = {label: {"ap": entry["ap"]} for label, entry in per_class.items()}
        dataset["per_class"] = per_class
    return values, aggregate, dataset
