"""PASCAL VOC 2010 and later (``--protocol voc``), as the devkit's ``voc_eval(...,
use_07_metric=False)`` (py-faster-rcnn, detectron2's ``PascalVOCDetectionEvaluator`` for a
2012 set).

Everything as ``--protocol voc07`` (the matching, difficult GT, the "+1" pixel, the keys)
but the interpolation: all-point AP, the area under the precision envelope — precision
made non-increasing from the right, summed over the recall steps ``Σ (r[i+1] − r[i]) ·
p[i+1]``. ``mAP_coco_style`` averages it over IoU .50:.05:.95 as detectron2 reports ``AP``.
"""

from __future__ import annotations

from rpx_cli.tasks.detection.parts import register_protocol
from rpx_cli.tasks.detection.protocols.voc07 import VocFamily


@register_protocol
class Voc(VocFamily):
    name, rank, section = "voc", 3, "voc"
    label = "VOC"
    title = "PASCAL VOC 2010+ (all-point AP)"
    eleven_point = False
    interpolation = "all-point"
