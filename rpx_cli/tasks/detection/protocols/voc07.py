"""PASCAL VOC 2007 (``--protocol voc07``), as the devkit's ``voc_eval(..., use_07_metric=True)``
that py-faster-rcnn and detectron2's ``PascalVOCDetectionEvaluator`` ship.

Per class over the whole set, detections by descending score (``np.argsort(-confidence)``
of the class's detections in image order: numpy's tie order, as the devkit); each compared
with every GT of its class in its image, taken or not: the best (IoU, first GT on ties)
must exceed 0.5 — strictly — and be free, else the detection is a false positive (a
duplicate stays one even where another GT would do); a detection whose best GT is
``difficult`` is neither TP nor FP, and difficult GT are never missed. AP: 11-point
interpolation, ``max(precision[recall >= t])`` for ``t`` in ``np.arange(0.0, 1.1, 0.1)``,
each over 11; ``mAP`` (= ``AP50``) the mean over classes with GT. The "+1" pixel of the
devkit's IoU is the VOC reader's ``[xmin − 1, ymin − 1, xmax, ymax]`` (docs/formats.md).
Besides: ``AP75`` and ``mAP_coco_style`` (IoU .50:.05:.95 as detectron2's ``AP``), per class
``AP``, ``n_gt``, ``n_pred``, ``n_ignored``. Axis-aligned boxes only; crowd regions (COCO
files) are ignored GT compared by intersection over the detection's area.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.io.box_table import FrameTable
from rpx_cli.tasks.base import MetricInfo, Params
from rpx_cli.tasks.detection.parts import DetectionProtocol, register_protocol
from rpx_cli.tasks.detection.voc_view import voc_view

VOC_INFO = {
    "mAP": "mean over classes with GT of the class's AP at IoU > 0.5",
    "AP50": "= mAP (IoU > 0.5)",
    "AP75": "the same at IoU > 0.75",
    "mAP_coco_style": "mean over IoU .50:.05:.95 of the mAP at each (detectron2's AP)",
    "n_ignored": "detections whose best GT is difficult (or crowd): neither TP nor FP",
}


class VocFamily(DetectionProtocol):
    """What the VOC-style protocols share: the devkit's walk (:mod:`rpx_cli.ops.voc`)."""

    eleven_point = True
    coco_style = True
    kinds = ("box",)
    iou_types_text = "axis-aligned boxes (--iou-type bbox, --geometry box): the devkit's IoU"
    headline = ("mAP", "mAP_coco_style")
    interpolation = "11-point"
    curves_at = "IoU > 0.5"

    def metric_info(self, info: dict[str, MetricInfo], params: Params) -> None:
        for key, text in VOC_INFO.items():
            info[key] = MetricInfo("none" if key == "n_ignored" else "higher",
                                   f"{self.title}: {text}")
        info["AP"] = MetricInfo("higher", f"{self.title}: AP per class ({self.interpolation} "
                                "interpolation, IoU > 0.5)")

    def evaluate(self, table: FrameTable, similarity: Any, kind: Any, params: Params,
                 gt_ignore: np.ndarray | None = None) -> dict[str, Any]:
        out = voc_view(table, similarity, gt_ignore, eleven_point=self.eleven_point,
                       coco_style=self.coco_style, noun=kind.noun)
        return {**out, "interpolation": self.interpolation, "iou_threshold": 0.5}


@register_protocol
class Voc07(VocFamily):
    name, rank, section = "voc07", 2, "voc07"
    label = "VOC07"
    title = "PASCAL VOC 2007 (11-point AP)"
