"""DOTA task 1, oriented objects (``--protocol dota``), as DOTA_devkit's
``dota_evaluation_task1.py``: the VOC devkit's walk (``--protocol voc07``: per class by
descending score, the best GT must exceed IoU 0.5 strictly and be free, difficult GT
ignored) on the IoU of polygons (``--geometry polygon``, shapely's exact areas where the
devkit calls its ``polyiou``) or rotated boxes (``--geometry rotated``), with VOC2007's
11-point AP; ``mAP`` the mean over classes with GT (the devkit divides by its class list,
all of which have GT in DOTA's sets). Keys as ``voc07``'s but ``mAP_coco_style``/``AP75``:
``mAP`` (= ``AP50``), ``per_class.<name>.{AP, n_gt, n_pred, n_ignored}``, ``ignored``,
``curves``.
"""

from __future__ import annotations

from rpx_cli.tasks.detection.parts import register_protocol
from rpx_cli.tasks.detection.protocols.voc07 import VocFamily


@register_protocol
class Dota(VocFamily):
    name, rank, section = "dota", 4, "dota"
    label = "DOTA"
    title = "DOTA task 1 (VOC2007 11-point AP, polygon IoU)"
    kinds = ("polygon", "rotated")
    iou_types_text = ("oriented objects: polygons or rotated boxes (--geometry polygon|rotated, "
                      "as the devkit's polygon IoU)")
    coco_style = False
    headline = ("mAP",)
