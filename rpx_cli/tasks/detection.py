"""``rpx eval detection``: three views of the same detections, each labelled.

- **Rows (RPX)** and ``dataset.pooled``: at ``--conf-threshold`` (a detection is kept when
  score >= threshold) and ``--iou-threshold``, detections in descending score order (stable
  for ties) each take the best-IoU unmatched GT of the same label, accepted when
  IoU >= threshold (ties: the last GT, as pycocotools). Rows: ``precision``, ``recall``,
  ``f1``, ``tp``, ``fp``, ``fn``, ``n_gt``, ``n_pred``; both empty → 1/1/1, predictions but
  no GT → 0/0/0, GT but no prediction → 0/0/0. ``aggregate`` is the per-image mean (macro),
  ``dataset.pooled`` the same figures from summed counts (micro).
- **``dataset.confusion`` (Aquarium)**: after the confidence threshold, per image a
  class-agnostic optimal one-to-one matching maximising total IoU
  (``scipy.optimize.linear_sum_assignment``); pairs below the IoU threshold are unmatched;
  unmatched GT → (class, background), unmatched detection → (background, class). Per class
  precision = M[c,c] / column sum, recall = M[c,c] / row sum, F1; 0/0 = 0.
- **``dataset.coco``**: pycocotools' COCOeval (bbox, 10 IoU thresholds, 101 recall points,
  maxDets 1/10/100, areas from the GT ``area`` field or the box area) on every detection —
  no confidence threshold — with images numbered 1..N in stem order.

Crowd GT (``iscrowd``) is honoured in every view as COCO does: a detection that lands on
a crowd region (intersection over its own area >= the IoU threshold) and matches no
regular GT is ignored — neither a true nor a false positive — and crowd regions are never
missed. A frame whose GT file is empty is a labelled empty frame (its detections are
false positives) unless ``--skip-empty-gt``, which leaves such frames out of rows, pooled
and confusion (not COCO), as Aquarium does by default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rpx_cli.errors import ParameterError
from rpx_cli.io.boxes import Boxes, apply_class_map, load_class_map, parse_boxes
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.ops.boxes import iou_xywh
from rpx_cli.ops.coco import STAT_NAMES, CocoInput, greedy_match
from rpx_cli.ops.coco import evaluate as coco_evaluate
from rpx_cli.tasks.base import MetricInfo, Option, Params, Task, Warn
from rpx_cli.tasks.registry import register_task

BACKGROUND = "background"
ROW_KEYS = ("precision", "recall", "f1", "tp", "fp", "fn")


@dataclass
class Frame:
    """One image's GT and predictions (labels already mapped). ``image_id``: the COCO id
    for COCO-file input (it orders images in the COCO view, as pycocotools does); None for
    per-stem input, whose images are numbered in stem order."""

    gt: Boxes
    pred: Boxes
    image_id: int | None = None


def _probability(name: str):
    def parse(text: str) -> float:
        value = float(text)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {text}")
        return value
    return parse


@register_task
class Detection(Task):
    name = "detection"
    report_schema = "rpx.eval"
    suffixes = (".json",)
    help = ("Object detection: per-image P/R/F1 at an operating point, the Aquarium confusion "
            "matrix, and COCO AP/AR equal to pycocotools.")
    vector_stats = False
    metrics = {
        "precision": MetricInfo("higher", "TP / (TP + FP) at the operating point (IoU >= threshold, "
                                "score >= conf threshold, greedy by descending score, stable ties)"),
        "recall": MetricInfo("higher", "TP / (TP + FN) at the operating point"),
        "f1": MetricInfo("higher", "2PR / (P + R); both empty = 1, 0/0 = 0"),
        "tp": MetricInfo("higher", "true positives"),
        "fp": MetricInfo("lower", "false positives"),
        "fn": MetricInfo("lower", "missed GT boxes"),
        "n_gt": MetricInfo("none", "GT boxes (crowd regions excluded)"),
        "n_pred": MetricInfo("none", "detections at or above the confidence threshold"),
        **{name: MetricInfo("higher", "pycocotools COCOeval bbox: 10 IoU thresholds .50:.05:.95, "
                            "101-point interpolated precision, maxDets 1/10/100, areas from the GT "
                            "'area' field or the box") for name in STAT_NAMES},
        "AP": MetricInfo("higher", "COCO AP (and per class): pycocotools COCOeval bbox, "
                         "IoU .50:.05:.95, 101 recall points, maxDets 100"),
    }
    families = {"rows": (ROW_KEYS, ()), "pooled": ((), ("dataset.pooled",)),
                "confusion": ((), ("dataset.confusion",)), "coco": ((), ("dataset.coco",))}
    options = (
        Option("box_format", "--box-format", "choice", "xyxy", choices=("xyxy", "xywh"),
               help="Boxes in per-stem files are [x1, y1, x2, y2] or [x, y, w, h]."),
        Option("iou_threshold", "--iou-threshold", "parsed", 0.5, parse=_probability("IoU threshold"),
               metavar="T", help="IoU a match needs (>=), for rows, pooled and confusion."),
        Option("conf_threshold", "--conf-threshold", "parsed", 0.0,
               parse=_probability("confidence threshold"), metavar="S",
               help="Keep detections with score >= S for rows, pooled and confusion (COCO AP "
                    "always uses every detection)."),
        Option("class_map", "--class-map", "file", None, metavar="FILE",
               help="JSON {raw label: evaluated label, or null to drop}, applied to GT and "
                    "predictions first."),
        Option("skip_empty_gt", "--skip-empty-gt", "flag", False,
               help="Leave frames with an empty GT file out of rows, pooled and confusion "
                    "(Aquarium's default); COCO always counts them."),
    )
    default_params = {option.param: option.default for option in options}
    file_inputs = (
        Option("coco_gt", "--coco-gt", "file", None, metavar="FILE",
               help="COCO instances JSON (images, annotations, categories) instead of --gt-dir; "
                    "stems come from file_name."),
        Option("coco_dt", "--coco-dt", "file", None, metavar="FILE",
               help="COCO results JSON [{image_id, category_id, bbox, score}] instead of "
                    "--pred-dir."),
    )

    def normalise_params(self, params: Params) -> dict[str, Any]:
        mapping = params.get("class_map")
        if isinstance(mapping, str):
            mapping = load_class_map(mapping)
        return {**params, "class_map": mapping, "iou_threshold": float(params["iou_threshold"]),
                "conf_threshold": float(params["conf_threshold"])}

    def validate_params(self, params: Params) -> None:
        for key in ("iou_threshold", "conf_threshold"):
            if not 0.0 <= params[key] <= 1.0:
                raise ParameterError(f"{key.replace('_', ' ')} must be in [0, 1], got {params[key]}")
        if params["box_format"] not in ("xyxy", "xywh"):
            raise ParameterError("box format must be xyxy or xywh")

    # --- per pair ---------------------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Boxes:
        boxes = parse_boxes(buffer.read(path).tobytes(), path, prediction=role == "pred",
                            box_format=params["box_format"])
        return apply_class_map(boxes, params.get("class_map"))

    def empty_prediction(self, gt: Boxes, params: Params) -> Boxes:
        return Boxes.empty(with_scores=True)

    def evaluate(self, pred: Boxes, gt: Boxes, params: Params, *, pred_path: str | None,
                 gt_path: str) -> dict[str, Any]:
        n_pred = int(np.count_nonzero(pred.scores >= params["conf_threshold"])) if len(pred) else 0
        return {"n_gt": int(np.count_nonzero(~gt.crowd)), "n_pred": n_pred,
                "_frame": Frame(gt, pred)}

    def row_stats(self, row: dict[str, Any], params: Params) -> Frame:
        return row["_frame"]

    def encode_stats(self, stats: list[Frame]) -> list[dict[str, Any]]:
        return [{"gt": frame.gt.as_json(), "pred": frame.pred.as_json(), "image_id": frame.image_id}
                for frame in stats]

    def decode_stats(self, encoded: list[dict[str, Any]]) -> list[Frame]:
        return [Frame(Boxes.from_json(item["gt"]), Boxes.from_json(item["pred"]),
                      item.get("image_id")) for item in encoded]

    # --- over all frames ----------------------------------------------------------------

    def summarize(self, stats: list[Frame], params: Params) -> dict[str, Any]:
        return self.summarize_rows(stats, params)[0]

    def summarize_rows(self, stats: list[Frame], params: Params):
        wanted = params.get("metrics") or list(self.families)
        vocabulary = params.get("categories") or _vocabulary(stats)
        index = {label: i for i, label in enumerate(vocabulary)}
        skipped = np.array([params["skip_empty_gt"] and len(frame.gt) == 0 for frame in stats], bool)
        dataset: dict[str, Any] = {}
        rows: list[dict[str, Any]] = [{} for _ in stats]
        aggregate: dict[str, Any] = {"n_frames": len(stats),
                                     "n_empty_gt": sum(1 for f in stats if len(f.gt) == 0),
                                     "n_skipped": int(np.count_nonzero(skipped))}
        if {"rows", "pooled"} & set(wanted):
            counts = operating_point(stats, index, params["iou_threshold"], params["conf_threshold"])
            for i, (tp, fp, fn) in enumerate(counts):
                if skipped[i]:
                    rows[i] = dict.fromkeys(ROW_KEYS)
                else:
                    rows[i] = {**prf(tp, fp, fn), "tp": tp, "fp": fp, "fn": fn}
            used = [row for row, skip in zip(rows, skipped, strict=True) if not skip]
            for key in ("precision", "recall", "f1"):
                values = [row[key] for row in used]
                aggregate[key] = math.fsum(values) / len(values) if values else None
            totals = [sum(row[k] for row in used) for k in ("tp", "fp", "fn")]
            dataset["pooled"] = {**prf(*totals), **dict(zip(("tp", "fp", "fn"), totals, strict=True))}
        if "confusion" in wanted:
            frames = [frame for frame, skip in zip(stats, skipped, strict=True) if not skip]
            dataset["confusion"] = confusion(frames, vocabulary, index, params["iou_threshold"],
                                             params["conf_threshold"])
        if "coco" in wanted:
            dataset["coco"] = coco(stats, vocabulary, index)
        return {"aggregate": aggregate, "dataset": dataset}, rows


def _vocabulary(stats: list[Frame]) -> list[str]:
    labels = {label for frame in stats for label in (*frame.gt.labels, *frame.pred.labels)}
    return sorted(labels, key=lambda label: (0, int(label), "") if label.lstrip("-").isdigit()
                  else (1, 0, label))


def prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    """Precision, recall, F1; nothing to find and nothing predicted is 1/1/1, any other
    0/0 is 0."""
    if tp + fp + fn == 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def _flatten(stats: list[Frame], index: dict[str, int], conf: float | None):
    """Every frame's boxes as flat arrays (image index, category index, ...)."""
    gt_parts, dt_parts = [], []
    for i, frame in enumerate(stats):
        gt_labels = np.array([index[label] for label in frame.gt.labels], np.int64)
        gt_parts.append((np.full(len(frame.gt), i), gt_labels, frame.gt.box, frame.gt.area,
                         frame.gt.crowd))
        keep = slice(None) if conf is None else frame.pred.scores >= conf
        labels = np.array([index[label] for label in frame.pred.labels], np.int64)
        dt_parts.append((np.full(len(frame.pred), i)[keep], labels[keep] if labels.size else labels,
                         frame.pred.box[keep], frame.pred.scores[keep]))

    def cat(parts, k, dtype, shape=(0,)):
        arrays = [p[k] for p in parts]
        return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(shape, dtype)

    gt = tuple(cat(gt_parts, k, d, s) for k, d, s in ((0, np.int64, (0,)), (1, np.int64, (0,)),
                                                       (2, np.float64, (0, 4)), (3, np.float64, (0,)),
                                                       (4, bool, (0,))))
    dt = tuple(cat(dt_parts, k, d, s) for k, d, s in ((0, np.int64, (0,)), (1, np.int64, (0,)),
                                                       (2, np.float64, (0, 4)), (3, np.float64, (0,))))
    return gt, dt


def operating_point(stats: list[Frame], index: dict[str, int], iou_threshold: float,
                    conf_threshold: float) -> list[tuple[int, int, int]]:
    """(TP, FP, FN) of every frame: class-aware greedy matching by descending score,
    vectorised over frames (pycocotools' matcher at one IoU threshold)."""
    (g_img, g_cat, g_box, g_area, g_crowd), (d_img, d_cat, d_box, d_score) = \
        _flatten(stats, index, conf_threshold)
    K = max(len(index), 1)
    d_group = d_img * K + d_cat
    order = np.lexsort((np.arange(d_group.size), -d_score, d_group))
    d_group, d_box, d_img = d_group[order], d_box[order], d_img[order]
    rank = np.arange(d_group.size) - np.searchsorted(d_group, d_group, side="left")
    g_group = g_img * K + g_cat
    gorder = np.argsort(g_group, kind="stable")
    matched, ignored = greedy_match(
        d_group, d_box, rank, g_group[gorder], g_box[gorder], g_area[gorder], g_crowd[gorder],
        np.array([min(iou_threshold, 1 - 1e-10)]), np.array([[-np.inf, np.inf]]), len(stats) * K)
    tp_det = matched[0, 0] & ~ignored[0, 0]
    fp_det = ~matched[0, 0]
    n = len(stats)
    tp = np.bincount(d_img[tp_det], minlength=n)
    fp = np.bincount(d_img[fp_det], minlength=n)
    n_gt = np.bincount(g_img[~g_crowd], minlength=n)
    return [(int(a), int(b), int(c - a)) for a, b, c in zip(tp, fp, n_gt, strict=True)]


def confusion(frames: list[Frame], vocabulary: list[str], index: dict[str, int],
              iou_threshold: float, conf_threshold: float) -> dict[str, Any]:
    """Aquarium's confusion matrix (rows GT, columns predicted, background last)."""
    from scipy.optimize import linear_sum_assignment

    K = len(vocabulary)
    matrix = np.zeros((K + 1, K + 1), np.int64)
    for frame in frames:
        keep = frame.pred.scores >= conf_threshold
        d_box = frame.pred.box[keep]
        d_cat = np.array([index[label] for label, k in zip(frame.pred.labels, keep, strict=True)
                          if k], np.int64)
        regular = ~frame.gt.crowd
        g_box = frame.gt.box[regular]
        g_cat = np.array([index[label] for label, r in zip(frame.gt.labels, regular, strict=True)
                          if r], np.int64)
        det_matched = np.zeros(d_box.shape[0], bool)
        gt_matched = np.zeros(g_box.shape[0], bool)
        if d_box.size and g_box.size:
            ious = iou_xywh(d_box, g_box)
            rows, cols = linear_sum_assignment(ious, maximize=True)
            good = ious[rows, cols] >= iou_threshold
            rows, cols = rows[good], cols[good]
            np.add.at(matrix, (g_cat[cols], d_cat[rows]), 1)
            det_matched[rows] = True
            gt_matched[cols] = True
        np.add.at(matrix, (g_cat[~gt_matched], K), 1)
        lonely = ~det_matched
        if frame.gt.crowd.any() and lonely.any():  # on a crowd region: ignored, not background
            ioa = iou_xywh(d_box[lonely], frame.gt.box[frame.gt.crowd],
                           np.ones(int(frame.gt.crowd.sum()), bool))
            on_crowd = np.zeros(d_box.shape[0], bool)
            on_crowd[np.flatnonzero(lonely)] = (ioa >= iou_threshold).any(axis=1)
            lonely &= ~on_crowd
        np.add.at(matrix, (K, d_cat[lonely]), 1)
    diagonal = np.diagonal(matrix)[:K].astype(np.float64)
    column = matrix[:, :K].sum(axis=0).astype(np.float64)
    row = matrix[:K, :].sum(axis=1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(column > 0, diagonal / column, 0.0)
        recall = np.where(row > 0, diagonal / row, 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    overall = prf(int(diagonal.sum()), int(column.sum() - diagonal.sum()), int(row.sum() - diagonal.sum()))
    return {
        "labels": [*vocabulary, BACKGROUND],
        "matrix": matrix.tolist(),
        "per_class": {label: {"precision": float(precision[k]), "recall": float(recall[k]),
                              "f1": float(f1[k]), "support": int(row[k])}
                      for k, label in enumerate(vocabulary)},
        **overall,
    }


def coco(stats: list[Frame], vocabulary: list[str], index: dict[str, int]) -> dict[str, Any]:
    """COCO AP/AR over every detection; None (with a reason) where pycocotools gives -1."""
    if stats and all(frame.image_id is not None for frame in stats):
        stats = sorted(stats, key=lambda frame: frame.image_id)  # COCO input keeps its ids
    (g_img, g_cat, g_box, g_area, g_crowd), (d_img, d_cat, d_box, d_score) = \
        _flatten(stats, index, None)
    result = coco_evaluate(CocoInput(len(stats), len(vocabulary), g_img, g_cat, g_box, g_area,
                                     g_crowd, d_img, d_cat, d_box, d_score))
    figures = result.stats()
    reasons = {name: "no GT box in this area range" for name, value in figures.items()
               if value is None}
    per_class = {}
    for label, ap in zip(vocabulary, result.per_category_ap(), strict=True):
        per_class[label] = {"AP": ap} if ap is not None else {
            "AP": None, "reason": "no GT box of this class (pycocotools: -1)"}
    out: dict[str, Any] = {**figures, "per_class": per_class}
    if reasons:
        out["null_reasons"] = reasons
    return out
