"""``rpx eval segmentation``: semantic label maps.

Rows (RPX): ``miou`` = mean IoU over the classes present in that frame's GT (a class that
appears only in the prediction gets no IoU of its own, but its pixels are false positives
of the classes it covers), ``pixel_acc`` = correct / labelled pixels. Pixels whose GT
label is ignored are excluded from everything — unions, accuracy, confusion (the RPX code
kept them in unions: fixed).

``dataset`` comes from one confusion matrix pooled over all frames (rows GT, columns
predicted): ``miou``, ``fwiou`` (support-weighted), ``acc``, ``mprecision``, ``mrecall``,
``mf1`` — means over the classes with GT support (autoware-ml) — and ``per_class``
``{iou, precision, recall, f1, support}``. A 0/0 precision or F1 is 0. A predicted label
outside the known classes counts as wrong for its GT pixel (column ``"other"``): never
dropped, which would reward garbage.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.class_names import read_class_names
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.label_images import read_label_image
from rpx_cli.ops.confusion import (
    MAX_CLASSES,
    OTHER,
    FrameConfusion,
    TooManyLabels,
    average_scores,
    class_axis,
    confusion_scores,
    decode_confusion,
    dense_matrix,
    encode_confusion,
    frame_confusion,
    has_other,
    sum_confusions,
)
from rpx_cli.ops.pictures import error_overlay, label_overlay
from rpx_cli.ops.reduce import mean_present
from rpx_cli.params.parsers import NAMES
from rpx_cli.params.pictures import IMAGES_DIR, KEEP_WORST
from rpx_cli.tasks.base import MetricInfo, Option, Params, Sample, Task, Warn, shape_text
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

PNG_255 = "png-255"  # warning: an 8-bit GT PNG holds 255, which is not ignored


@register_task
class Segmentation(Task):
    name = "segmentation"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("miou", "pixel_acc", "n_labelled"),
              "aggregate": ("miou", "pixel_acc", "n_frames", "n_empty"),
              "dataset": ("", "miou", "fwiou", "acc", "mprecision", "mrecall", "mf1", "per_class",
                          "confusion", "n_labelled")}
    primary_metric = "miou"
    headline = ("dataset.miou", "dataset.acc", "dataset.mf1", "dataset.fwiou", "aggregate.miou")
    page_view = "class_iou"
    suffixes = (".png", ".npy")
    help = "Semantic segmentation: per-frame mIoU and accuracy, pooled confusion-matrix metrics."
    formats = (
        'Label maps, one per stem: single-channel PNG (L, P or I;16) or an integer .npy (H, W);\n'
        'a pixel holds its class id. Pred and GT of a stem have one shape.\n'
        '255 is scored as a class unless --ignore-index 255 (the usual "unlabelled" value).\n'
        '--class-names FILE: one name per line (line i names label i), or a JSON list.'
    )
    example = (
        'rpx eval segmentation --pred-dir fixtures/segmentation/street/pred \\\n'
        '    --gt-dir fixtures/segmentation/street/gt --ignore-index 255 \\\n'
        '    --class-names fixtures/segmentation/street/names.txt | jq .dataset.miou'
    )
    # the frame's RPX row values and its sparse confusion matrix (labels that occur only)
    stats = (Stat("miou"), Stat("pixel_acc"),
             Stat("confusion", encode=encode_confusion, decode=decode_confusion))
    metrics = {
        "miou": MetricInfo("higher", "row: mean IoU over classes present in the frame's GT; "
                           "dataset: mean IoU over classes with GT support, pooled matrix"),
        "pixel_acc": MetricInfo("higher", "correct / labelled pixels (ignored GT excluded)"),
        "n_labelled": MetricInfo("none", "pixels whose GT label is not ignored"),
        "fwiou": MetricInfo("higher", "frequency-weighted IoU: sum of support share x IoU"),
        "acc": MetricInfo("higher", "pooled pixel accuracy"),
        "mprecision": MetricInfo("higher", "mean precision over classes with GT support (0/0 = 0)"),
        "mrecall": MetricInfo("higher", "mean recall over classes with GT support"),
        "mf1": MetricInfo("higher", "mean F1 over classes with GT support (0/0 = 0)"),
        "iou": MetricInfo("higher", "per class: TP / (TP + FP + FN)"),
        "precision": MetricInfo("higher", "per class: TP / (TP + FP)"),
        "recall": MetricInfo("higher", "per class: TP / (TP + FN)"),
        "f1": MetricInfo("higher", "per class: 2PR / (P + R)"),
        "support": MetricInfo("none", "per class: GT pixels"),
    }
    families = {"rows": (("miou", "pixel_acc"), ()), "confusion": ((), ("dataset",))}
    options = (
        Option("ignore_index", "--ignore-index", "int", (-1,), multiple=True,
               help="GT label to exclude from everything (repeatable; PNG users usually pass 255)."),
        Option("num_classes", "--num-classes", "int", None, minimum=1, maximum=MAX_CLASSES,
               help="Classes are 0..N-1: a GT label >= N is an input error, a predicted one "
                    "counts in the 'other' column [default: the labels that appear]."),
        Option("class_names", "--class-names", "file", None, metavar="FILE", recorded=NAMES,
               help="Class names, one per line or a JSON list; label i is line i. Keys "
                    "dataset.per_class by name and implies --num-classes."),
        KEEP_WORST, IMAGES_DIR,
    )

    def normalise_params(self, params: Params) -> dict[str, Any]:
        names = params.get("class_names")
        if isinstance(names, str):
            names = read_class_names(names, reserved=(OTHER,))
        ignore = params.get("ignore_index", (-1,))
        ignore = [ignore] if isinstance(ignore, int) else list(ignore)
        num_classes = params.get("num_classes")
        if names is not None:
            if num_classes is not None and num_classes != len(names):
                raise ParameterError(f"--num-classes {num_classes} but {len(names)} class names")
            if len(names) > MAX_CLASSES:
                raise ParameterError(f"--class-names: {len(names):,} classes, more than the "
                                     f"{MAX_CLASSES:,} a confusion matrix holds")
            num_classes = len(names)
        return {**params, "ignore_index": sorted(set(int(i) for i in ignore)),
                "num_classes": num_classes, "class_names": names}

    # --- per pair ---------------------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> np.ndarray:
        loaded = read_label_image(path, buffer)
        labels = loaded.array
        if (role == "gt" and loaded.format == "png" and labels.dtype == np.uint8
                and params["num_classes"] is None and 255 not in params["ignore_index"]
                and labels.max() == 255):
            warn(PNG_255, path)  # 255 is "void" in VOC, Cityscapes, ADE20K... PNGs
        return labels

    def prediction_size(self, gt: np.ndarray, params: Params) -> tuple[tuple[int, int], int]:
        return gt.shape[:2], 1  # the label map must match the GT's size

    def empty_prediction(self, gt: np.ndarray, params: Params) -> np.ndarray:
        return np.full(gt.shape, -1, dtype=np.int64)  # predicts nothing: every pixel wrong

    def warning_text(self, kind: str, paths: list[str]) -> str:
        if kind == PNG_255:
            return (f"{len(paths)} GT PNG label map(s) hold 255 (e.g. {paths[0]}), scored as a "
                    "class — pass --ignore-index 255 if 255 marks unlabelled pixels")
        return super().warning_text(kind, paths)

    def evaluate(self, pred: np.ndarray, gt: np.ndarray, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        if pred.shape != gt.shape:
            raise InputError(
                f"shapes differ: {pred_path} is {shape_text(pred)}, {gt_path} is {shape_text(gt)}",
                path=pred_path
            )
        try:
            confusion = frame_confusion(gt, pred, tuple(params["ignore_index"]))
        except TooManyLabels as exc:
            raise InputError(str(exc), path=gt_path if exc.side == "gt" else pred_path) from None
        bad_gt = confusion.gt_labels[confusion.gt_labels < 0]
        if bad_gt.size:
            raise InputError(
                f"GT holds negative label(s) {bad_gt.tolist()} that are not --ignore-index",
                path=gt_path,
            )
        num_classes = params["num_classes"]
        if num_classes is not None and confusion.gt_labels.size and confusion.gt_labels[-1] >= num_classes:
            raise InputError(
                f"GT label {int(confusion.gt_labels[-1])} is outside --num-classes {num_classes}"
                + (" (pass --ignore-index 255 if 255 marks unlabelled pixels)"
                   if confusion.gt_labels[-1] == 255 else ""),
                path=gt_path,
            )
        miou, pixel_acc = frame_scores(confusion)
        row = {"miou": miou, "pixel_acc": pixel_acc, "n_labelled": confusion.total}
        return Sample(row, {"miou": miou, "pixel_acc": pixel_acc, "confusion": confusion})

    # --- the page's pictures of a worst frame ----------------------------------------------

    draws_overlays = True

    def frame_overlays(self, pred: np.ndarray, gt: np.ndarray, params: Params) -> dict[str, Any]:
        """``errors`` (wrong pixels vermillion, ignored grey) and ``classes`` (the prediction
        in the class colours)."""
        if pred.shape != gt.shape:
            raise InputError(f"shapes differ: {shape_text(pred)} and {shape_text(gt)}")
        ignored = np.isin(gt, params["ignore_index"])
        return {"errors": (error_overlay(pred, gt, ignored), False),
                "classes": (label_overlay(pred), False)}

    # --- over all rows ------------------------------------------------------------------

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        aggregate: dict[str, Any] = {"n_frames": len(stats),
                                     "miou": mean_present(stats["miou"]),
                                     "pixel_acc": mean_present(stats["pixel_acc"]),
                                     "n_empty": int(np.count_nonzero(np.isnan(stats["miou"])))}
        return {"aggregate": aggregate, "dataset": pooled_dataset(stats["confusion"], params)}


def frame_scores(confusion: FrameConfusion) -> tuple[float | None, float | None]:
    """RPX per-frame ``(miou, pixel_acc)``: IoU averaged over the classes in this GT."""
    total = confusion.total
    if total == 0:
        return None, None
    gt_labels, pred_labels, counts = confusion.gt_labels, confusion.pred_labels, confusion.counts
    column = np.searchsorted(pred_labels, gt_labels)
    column = np.minimum(column, pred_labels.size - 1)
    matched = pred_labels[column] == gt_labels
    rows = np.arange(gt_labels.size)
    tp = np.where(matched, counts[rows, column], 0)
    support = counts.sum(axis=1)
    predicted = np.where(matched, counts[:, column].sum(axis=0), 0)
    iou = tp / (support + predicted - tp)
    present = support > 0
    return float(iou[present].mean()), float(tp.sum() / total)


def pooled_dataset(frames: list[FrameConfusion], params: Params) -> dict[str, Any]:
    """Sum the frames' counts into one matrix and derive the dataset metrics (means over the
    classes with GT support)."""
    num_classes, names = params["num_classes"], params["class_names"]
    classes = class_axis(frames, num_classes)
    pooled = sum_confusions(frames)
    other = has_other(pooled, classes)
    matrix = dense_matrix(pooled, classes, other=other)
    labels = [names[int(c)] if names else str(int(c)) for c in classes]
    scores = confusion_scores(matrix)
    supported = scores.support > 0
    dataset: dict[str, Any] = {
        "confusion": {"labels": labels, "columns": labels + ([OTHER] if other else []),
                      "matrix": matrix.tolist()},
        "n_labelled": int(scores.support.sum()),
        **average_scores(scores),
    }
    dataset["per_class"] = {
        labels[c]: {"iou": float(scores.iou[c]), "precision": float(scores.precision[c]),
                    "recall": float(scores.recall[c]), "f1": float(scores.f1[c]),
                    "support": int(scores.support[c])}
        for c in np.flatnonzero(supported)
    }
    return dataset
