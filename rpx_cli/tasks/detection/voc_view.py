"""The PASCAL VOC view of a detection run (``dataset.voc07``, ``dataset.voc``,
``dataset.dota``): :mod:`rpx_cli.ops.voc` on the run's table and similarity, written as the
protocols' keys.

Keys: ``mAP`` (= ``AP50``: the mean over classes with GT of AP at IoU > 0.5), ``AP75``,
``mAP_coco_style`` (the mean over IoU .50:.05:.95 of the mAP at each, as detectron2's
``PascalVOCDetectionEvaluator`` reports ``AP``; with ``coco_style``), ``per_class.<name>``
``{AP, n_gt, n_pred, n_ignored}`` (``n_gt``: GT neither difficult nor crowd; ``n_ignored``:
detections that landed on one, neither TP nor FP), ``ignored`` (what was ignored and why)
and ``curves`` (each class's interpolated precision at 101 recall levels, IoU > 0.5: the
envelope VOC reads its 11 points from). A class without GT has AP null with its reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.io.box_table import FrameTable
from rpx_cli.ops.geometry import Geometry
from rpx_cli.ops.voc import (
    COCO_STYLE,
    CURVE_RECALL,
    VocInput,
    class_curves,
    mean_defined,
    outcomes,
)


def voc_input(table: FrameTable, geometry: Geometry, gt_ignore: np.ndarray | None) -> VocInput:
    """The table as the devkit lists it: frames in order, each frame's objects in order;
    ignored GT = ``gt_ignore`` (difficult, and the kind's) or crowd."""
    gt, pred = table.gt, table.pred
    ignored = gt.crowd.copy() if gt_ignore is None else gt.crowd | gt_ignore

    def pairs(det: np.ndarray, ground: np.ndarray, crowd: np.ndarray) -> np.ndarray:
        # np.take: ~3x faster than fancy indexing of 2-D rows
        return geometry.pairs(np.take(pred.shape, det, axis=0), np.take(gt.shape, ground, axis=0),
                              crowd=bool(crowd[0]))

    return VocInput(len(table.vocabulary), gt.frame, gt.label, ignored, gt.crowd.astype(bool),
                    pred.frame, pred.label, pred.score, pairs)


def voc_view(table: FrameTable, geometry: Geometry, gt_ignore: np.ndarray | None, *,
             eleven_point: bool, coco_style: bool, noun: str = "box") -> dict[str, Any]:
    """``dataset.<section>`` of a VOC-style protocol (module docstring)."""
    data = voc_input(table, geometry, gt_ignore)
    thresholds = COCO_STYLE if coco_style else COCO_STYLE[:1]
    matches = outcomes(data, thresholds)
    curves = class_curves(data, matches, eleven_point)
    ap = curves.ap
    out: dict[str, Any] = {"mAP": mean_defined(ap[:, 0])}
    out["AP50"] = out["mAP"]
    if coco_style:
        out["AP75"] = mean_defined(ap[:, 5])
        per_threshold = [mean_defined(ap[:, t]) for t in range(thresholds.size)]
        out["mAP_coco_style"] = None if None in per_threshold else float(np.mean(per_threshold))
    per_class: dict[str, Any] = {}
    for k, label in enumerate(table.vocabulary):
        entry: dict[str, Any] = {"AP": None if np.isnan(ap[k, 0]) else float(ap[k, 0]),
                                 "n_gt": int(matches.npos[k]), "n_pred": int(curves.n_pred[k]),
                                 "n_ignored": int(curves.n_ignored[k])}
        if coco_style:
            entry["AP75"] = None if np.isnan(ap[k, 5]) else float(ap[k, 5])
        if entry["AP"] is None:
            entry["reason"] = f"no GT {noun} of this class (the devkit divides by zero)"
        per_class[label] = entry
    out["per_class"] = per_class
    ignored_gt = data.gt_ignored
    out["ignored"] = {
        "gt": int(np.count_nonzero(ignored_gt & ~data.gt_crowd)),
        "gt_crowd": int(np.count_nonzero(data.gt_crowd)),
        "pred": int(np.count_nonzero(matches.ignored[:, 0])),
        "why": f"GT marked difficult (or ignored by the files, or crowd regions) count in no "
               f"class's n_gt; a detection whose best-overlapping GT {noun} of its class is one "
               "(IoU > 0.5) is neither a TP nor a FP",
    }
    with_gt = ~np.isnan(curves.curve[:, 0])
    out["curves"] = {
        "recall": CURVE_RECALL.tolist(),
        "per_class": {label: {"precision": curves.curve[k].tolist()}
                      for k, label in enumerate(table.vocabulary) if with_gt[k]},
        "overall": {"precision": curves.curve[with_gt].mean(axis=0).tolist() if with_gt.any()
                    else [None] * CURVE_RECALL.size},
    }
    if out["mAP"] is None:
        out["null_reasons"] = {"mAP": f"no GT {noun} of any class"}
    return out
