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

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError, PairError, ParameterError, RecordError
from rpx_cli.io.boxes import load_class_map
from rpx_cli.io.class_names import read_class_names
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.labels import LabelDoc, parse_label_file, read_label_csv, record_stem
from rpx_cli.io.regular import read_bytes
from rpx_cli.params.parsers import LABEL_MAP, NAMES
from rpx_cli.tasks.base import FileInput, MetricInfo, Option, Params, Sample, Task, Warn, probability
from rpx_cli.tasks.classification.columns import (
    MAX_CLASSES,
    Columns,
    Labels,
    LabelSet,
    Record,
    columns_of,
    decode_record,
    encode_record,
    fingerprint,
    label_set,
    merge_columns,
    name_index,
    table_plan,
)
from rpx_cli.tasks.classification.figures import multi_label_figures, single_label_figures
from rpx_cli.tasks.classification.tables import columns_from_tables
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

FAMILIES = ("rows", "report", "ranking", "calibration", "curves")
# rows of --gt-file/--pred-file that --on-error skip sets aside before it refuses the file
MAX_BAD_RECORDS = 100


# --- the task -----------------------------------------------------------------------------------


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
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("correct",), "aggregate": ("correct", "n_samples"),
              "dataset": ("", "n_samples", "n_classes")}
    primary_metric = "correct"
    rank_metric = "correct"  # the worst rows: wrong ones, most confident first (their confidence)
    headline = ("dataset.accuracy", "dataset.balanced_accuracy", "dataset.macro_f1", "dataset.mAP",
                "dataset.ece", "dataset.subset_accuracy", "dataset.micro_f1")
    page_view = "calibration"
    row_labels = ("label", "predicted")  # single-label rows: the worst show "cat → dog"
    row_properties = {"label": {"type": "string", "description": "single-label: the GT class"},
                      "predicted": {"type": ["string", "null"], "description": "single-label: "
                                    "the predicted class (null: no prediction)"}}
    stats = (Stat("record", encode=encode_record, decode=decode_record),)
    report_properties = {"dataset": {"type": "object", "properties": {"curves": {
        "type": "object", "description": "Per class (one-vs-rest, over the score tables): the "
        "interpolated precision and the score at each of the 101 recall points, from "
        "scikit-learn's precision_recall_curve; null for a class without GT support.",
        "required": ["recall", "per_class"],
        "properties": {
            "recall": {"type": "array", "minItems": 101, "maxItems": 101, "items": {"type": "number"}},
            "per_class": {"type": "object", "additionalProperties": {"oneOf": [
                {"type": "null"},
                {"type": "object", "required": ["precision", "score"], "properties": {
                    "precision": {"type": "array", "minItems": 101, "maxItems": 101,
                                  "items": {"type": "number"}},
                    "score": {"type": "array", "minItems": 101, "maxItems": 101,
                              "items": {"type": ["number", "null"]}}}}]}}}}}}}
    families = {"rows": (("correct", "confidence", "label_errors", "label", "predicted"), ()),
                "report": ((), ()), "ranking": ((), ()), "calibration": ((), ()),
                "curves": ((), ())}
    options = (
        Option("class_names", "--class-names", "file", None, metavar="FILE", recorded=NAMES,
               help="Classes, one per line or a JSON list: the label set and the class order "
                    "(ties go to the class listed first); a label outside it is an input error "
                    "[default: every label that appears, integers by value, then text]."),
        Option("class_map", "--class-map", "file", None, metavar="FILE", recorded=LABEL_MAP,
               help="JSON {raw label: evaluated label, or null to drop}, applied to GT and "
                    "predictions first (merged classes' scores add; with --multi-label the "
                    "largest is kept)."),
        Option("top_k", "--top-k", "int", (5,), multiple=True, minimum=1, metavar="K",
               help="Top-k accuracy for each K (repeatable) when predictions carry a score "
                    "per class."),
        Option("multi_label", "--multi-label", "flag", False,
               help="GT lists several labels per stem; predictions are thresholded score "
                    "tables or label lists."),
        Option("threshold", "--threshold", "parsed", 0.5, parse=probability("threshold"),
               metavar="T",
               help="With --multi-label, a class is predicted when its score >= T (scores "
                    "must then lie in [0, 1])."),
        Option("ece_bins", "--ece-bins", "int", 15, minimum=1, maximum=10_000,
               help="Equal-width confidence bins of the expected calibration error."),
    )
    file_inputs = (
        Option("gt_file", "--gt-file", "file", None, urls=True, metavar="CSV",
               help="One CSV of GT instead of --gt-dir: stem,label (or stem,<one 0/1 column "
                    "per class> with --multi-label); a header row names the columns."),
        Option("pred_file", "--pred-file", "file", None, urls=True, metavar="CSV",
               help="One CSV of predictions instead of --pred-dir: stem,label, "
                    "stem,label,score or stem,<one score column per class>."),
    )

    # --- parameters -------------------------------------------------------------------

    def normalise_params(self, params: Params) -> dict[str, Any]:
        names = params.get("class_names")
        if isinstance(names, str):
            names = read_class_names(names)
        if names is not None and len(names) > MAX_CLASSES:
            raise ParameterError(f"--class-names: {len(names):,} classes, more than the "
                                 f"{MAX_CLASSES:,} rpx evaluates in one run")
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
            index = name_index(names)
            unknown = [label for label in labels if label not in index]
            if unknown:
                raise InputError(f"label {unknown[0]!r} is not in --class-names", path=path)
        multi = params["multi_label"]
        if role == "gt":
            if doc.classes is not None or doc.score is not None:
                raise InputError(f"a GT file holds labels, not scores ({SWAP_HINT})", path=path)
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
        key = (fingerprint(params.get("class_map")), fingerprint(params.get("class_names")),
               params["multi_label"])
        plan = raw.cache.get(key)
        if plan is None:
            plan = raw.cache[key] = table_plan(raw.labels, params)
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
        """``--gt-file``/``--pred-file``. Under ``--on-error skip`` a bad row is set aside
        and the tables are read again without it (at most :data:`MAX_BAD_RECORDS`): a bad
        GT row drops its stem, a bad prediction row leaves its stem predicting nothing."""
        paths = {"gt": files["gt_file"], "pred": files["pred_file"]}
        raw = {side: read_bytes(path) for side, path in paths.items()}
        skip: dict[str, set[int]] = {"gt": set(), "pred": set()}
        dropped: dict[str, PairError] = {}  # GT stems set aside
        emptied: dict[str, PairError] = {}  # stems whose prediction row was set aside
        loose: list[PairError] = []  # rows whose stem cannot be read: no sample
        tables: dict[str, Any] = {}
        while True:
            side = "gt"
            try:
                for side in ("gt", "pred"):
                    if side not in tables:
                        read = True  # a reader's error: the file is read again without the line
                        tables[side] = read_label_csv(paths[side], raw=raw[side], skip=skip[side])
                read = False
                gt_table = tables["gt"].without(dropped)
                pred_table = tables["pred"].without(dropped.keys() | emptied.keys())
                columns, stems = columns_from_tables(gt_table, pred_table, params,
                                                     set(emptied) - set(dropped))
                break
            except RecordError as exc:
                if params.get("on_error") != "skip":
                    raise
                if not read:
                    side = "gt" if exc.path == paths["gt"] else "pred"
                stem = exc.stem if exc.stem is not None else record_stem(raw[side], exc.line)
                if read or not stem:
                    skip[side].add(exc.line)
                    tables.pop(side, None)
                error = PairError.of(exc, stem, side=side if stem else None, path=paths[side])
                if stem:
                    (dropped if side == "gt" else emptied).setdefault(stem, error)
                else:
                    loose.append(error)
                if len(dropped) + len(emptied) + len(loose) > MAX_BAD_RECORDS:
                    raise InputError(f"more than {MAX_BAD_RECORDS} bad rows (--on-error skip "
                                     "sets at most that many aside): is it the right file?",
                                     path=exc.path) from None
        stats = StatTable(self.stats, {"record": columns}, len(stems))
        errors = [*dropped.values(), *(e for s, e in emptied.items() if s not in dropped), *loose]
        return FileInput(stems, stats=stats, rows=[{} for _ in stems],
                         pred_path=files["pred_file"], gt_path=files["gt_file"], errors=errors,
                         sample=partial(_sample, columns))

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


def _sample(columns: Columns, i: int) -> tuple[Labels, Labels]:
    """Stem i's (prediction, GT) labels of the CSV tables, as ``read`` gives a pair
    (calculators)."""
    record = columns.record(i)
    return record.pred, Labels(record.gt)
