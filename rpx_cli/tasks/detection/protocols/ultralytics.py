"""What ``yolo val`` prints (``--protocol ultralytics``), as ``ultralytics.utils.metrics``
(``ap_per_class``, ``compute_ap``) and the validator's ``match_predictions`` compute it
(:mod:`rpx_cli.ops.ultralytics` has the rules): per image, detections by descending
confidence matched to GT of their class at ten IoU thresholds 0.50:0.05:0.95 — by IoU with
``np.unique`` (Ultralytics up to 8.4.175) or greedily by confidence (8.4.176 on) —; per
class, AP by ``compute_ap``'s 101-point ``np.interp`` integrated with ``np.trapezoid`` (the
curve ramping to recall 1 up to 8.4.36, closed at the last recall from 8.4.37);
``--ultralytics-version`` (default 8.3.0, the YOLOv8/YOLO11 releases) picks the rules;
``precision`` and ``recall`` at the confidence where the smoothed mean F1 is highest.

Keys (``dataset.ultralytics``): ``mAP50``, ``mAP50_95`` (means over classes with GT),
``precision``, ``recall``, ``f1`` and ``confidence`` (that operating point), ``per_class.<name>``
``{precision, recall, AP50, AP50_95, n_gt, n_images}`` (the rows ``yolo val`` prints:
Images, Instances, P, R, mAP50, mAP50-95) and ``curves`` (precision at 101 recall points,
IoU 0.5, as its PR plot draws). Every kind rpx compares: boxes (detect), masks (segment),
keypoints (pose: OKS) and rotated boxes (obb) with rpx's similarity for each (Ultralytics'
own differ: ``box_iou`` adds 1e-7 to the union, OBB uses ``probiou``, masks are compared at
the network's resolution). Ignored GT (difficult, crowd regions), which Ultralytics has
not, excuse the detections on them as COCO's ``gtIgnore``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.io.box_table import FrameTable
from rpx_cli.ops.ultralytics import (
    DEFAULT_VERSION,
    RECALL_101,
    Rules,
    UltralyticsInput,
    ap_per_class,
    correct,
    image_order,
)
from rpx_cli.tasks.base import MetricInfo, Params
from rpx_cli.tasks.detection.parts import DetectionProtocol, register_protocol

INFO = {
    "mAP50": "Ultralytics (yolo val): mean over classes with GT of AP at IoU 0.5 (101-point interp)",
    "mAP50_95": "Ultralytics: mean over classes with GT and IoU 0.50:0.05:0.95 of AP",
    "AP50": "Ultralytics: the class's AP at IoU 0.5",
    "AP50_95": "Ultralytics: the class's AP averaged over IoU 0.50:0.05:0.95",
    "confidence": "Ultralytics: the confidence where the smoothed mean F1 is highest",
    "n_images": "images holding a GT object of the class",
}


@register_protocol
class Ultralytics(DetectionProtocol):
    name, rank, section = "ultralytics", 5, "ultralytics"
    label = "Ultralytics"
    title = "Ultralytics (yolo val)"
    curves_at, class_ap = "IoU 0.5", "AP50"
    headline = ("mAP50_95", "mAP50", "precision", "recall")
    options = ("ultralytics_version",)

    def normalise(self, out: dict[str, Any], given: Any) -> None:
        super().normalise(out, given)
        out["ultralytics_version"] = given.get("ultralytics_version") or DEFAULT_VERSION

    def metric_info(self, info: dict[str, MetricInfo], params: Params) -> None:
        info.update({key: MetricInfo("none" if key == "n_images" else "higher", text)
                     for key, text in INFO.items()})

    def evaluate(self, table: FrameTable, similarity: Any, kind: Any, params: Params,
                 gt_ignore: np.ndarray | None = None) -> dict[str, Any]:
        rules = Rules.of(tuple(int(part) for part in params["ultralytics_version"].split(".")))
        return ultralytics_view(table, similarity, gt_ignore, rules)


def ultralytics_view(table: FrameTable, geometry: Any, gt_ignore: np.ndarray | None,
                     rules: Rules) -> dict[str, Any]:
    """``dataset.ultralytics`` (module docstring)."""
    gt = table.gt
    pred = table.pred.take(image_order(table.pred.frame, table.pred.score))
    ignored_gt = gt.crowd.copy() if gt_ignore is None else gt.crowd | gt_ignore

    def pairs(det: np.ndarray, ground: np.ndarray, crowd: np.ndarray) -> np.ndarray:
        return geometry.pairs(np.take(pred.shape, det, axis=0), np.take(gt.shape, ground, axis=0),
                              crowd=bool(crowd[0]))

    def similarity(order: np.ndarray, gorder: np.ndarray):
        return geometry.similarity(pred.shape[order], gt.shape[gorder])

    data = UltralyticsInput(len(table.vocabulary), gt.frame, gt.label, ignored_gt,
                            gt.crowd.astype(bool), pred.frame, pred.label, pred.score, pairs,
                            similarity)
    tp, ignored = correct(data, rules.matching)
    counted = ~ignored_gt
    result = ap_per_class(tp, ignored, pred.score, pred.label, gt.label[counted], rules.drop)
    K = len(table.vocabulary)
    n_images = np.zeros(K, np.int64)
    if counted.any():
        present = np.unique(gt.frame[counted] * K + gt.label[counted])
        n_images = np.bincount(present % K, minlength=K)
    nc = result.classes.size

    def mean(values: np.ndarray) -> float | None:
        return float(values.mean()) if nc else None

    per_class: dict[str, Any] = {}
    for c, k in enumerate(result.classes.tolist()):
        per_class[table.vocabulary[k]] = {
            "precision": float(result.p[c]), "recall": float(result.r[c]),
            "AP50": float(result.ap[c, 0]), "AP50_95": float(result.ap[c].mean()),
            "n_gt": int(result.n_gt[c]), "n_images": int(n_images[k])}
    for label in table.vocabulary:
        if label not in per_class:
            per_class[label] = {"precision": None, "recall": None, "AP50": None, "AP50_95": None,
                                "n_gt": 0, "n_images": 0,
                                "reason": "no GT of this class: Ultralytics leaves it out"}
    out: dict[str, Any] = {
        "mAP50": mean(result.ap[:, 0]), "mAP50_95": mean(result.ap),
        "precision": mean(result.p), "recall": mean(result.r), "f1": mean(result.f1),
        "confidence": result.confidence if nc else None, "per_class": per_class,
        "ignored": {"gt": int(np.count_nonzero(ignored_gt)),
                    "pred": int(np.count_nonzero(ignored[:, 0])),
                    "why": "GT marked difficult, ignored by the files or crowd regions (Ultralytics "
                           "has none) count nowhere; a detection matching no other GT but one "
                           "of them is left out at that IoU threshold"},
        "matching": rules.matching,
        "curve_end": "drop at the last recall" if rules.drop else "ramp to recall 1",
        "curves": {"recall": RECALL_101.tolist(),
                   "per_class": {table.vocabulary[k]: {"precision": result.pr_curve[c].tolist()}
                                 for c, k in enumerate(result.classes.tolist())},
                   "overall": {"precision": result.pr_curve.mean(axis=0).tolist() if nc
                               else [None] * RECALL_101.size}},
    }
    if not nc:
        out["null_reasons"] = {"mAP50": "no GT object of any class"}
    return out
