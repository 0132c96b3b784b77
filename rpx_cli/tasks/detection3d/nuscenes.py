"""``--protocol nuscenes`` and ``--protocol autoware``: 3D boxes matched per class by BEV
centre distance (or an IoU, ``--match``) and scored as the nuScenes devkit's
``DetectionEval`` (mAP, NDS, the TP errors) or as autoware-ml scores them — one protocol
class, two columns of the conventions table (:data:`~rpx_cli.tasks.detection3d.params.CONVENTIONS`:
match test, score ties, precision envelope, absent classes, class caps, TP errors, the
orientation period, the point filter; docs/detection3d.md), a flag overriding one item.
The params are resolved and checked in :mod:`rpx_cli.tasks.detection3d.params`, the samples
filtered in :mod:`rpx_cli.tasks.detection3d.samples`, the figures computed in
:mod:`rpx_cli.tasks.detection3d.summary`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.io.boxes3d import Boxes3D, boxes3d_from_objects
from rpx_cli.params.values import Band, Threshold
from rpx_cli.tasks.base import MetricInfo, Params
from rpx_cli.tasks.detection3d.params import Conventions, check_params, resolve_params
from rpx_cli.tasks.detection3d.protocol import Protocol, register_protocol
from rpx_cli.tasks.detection3d.samples import check_frame
from rpx_cli.tasks.detection3d.summary import summarize_pairs

# the parameters the two protocols read and KITTI does not
CONVENTION_OPTIONS = ("match", "dist_th", "iou_th", "tp_threshold", "class_range", "ranges",
                      "dist_rule", "score_ties", "precision_curve", "absent_class", "cap_rule",
                      "cap_predictions", "tp_errors", "pi_period_classes", "tp_error_exempt",
                      "min_pts", "min_recall", "min_precision")


class ConventionProtocol(Protocol):
    """A column of the conventions table."""

    own = CONVENTION_OPTIONS
    families = ("rows", "ap", "tp", "aph", "curves")
    skips_others = False  # its reports predate the kitti family and do not name it

    def resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        return resolve_params(params)

    def check(self, params: Params) -> None:
        check_params(params)

    def read(self, fmt: Any, data: bytes | memoryview, path: str, *, prediction: bool,
             params: Params) -> Boxes3D:
        return fmt.boxes3d(data, path, prediction=prediction, params=params)

    def from_objects(self, objects: list[Any], path: str, *, prediction: bool, params: Params,
                     where: str) -> Boxes3D:
        return boxes3d_from_objects(objects, path, prediction=prediction,
                                    box_origin=params["box_origin"],
                                    classes=params["class_names"], where=where)

    def check_side(self, boxes: Boxes3D, params: Params, path: str, role: str) -> None:
        check_frame(boxes.distance, params, path, role)

    def check_sides(self, samples: list[Boxes3D], params: Params, path: str, role: str) -> None:
        check_frame(np.concatenate([boxes.distance for boxes in samples]), params, path, role)

    def empty(self) -> Boxes3D:
        return Boxes3D.empty(with_scores=True)

    def summarize(self, pairs: list[Any], params: Params, bands: list[Band],
                  wanted: set[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        return summarize_pairs(pairs, params, bands, wanted)

    def thresholds(self, params: Params) -> list[Threshold]:
        return list(Conventions.of(params).thresholds)

    def operating_threshold(self, params: Params) -> Threshold | None:
        c = Conventions.of(params)
        return c.tp_threshold if c.tp_threshold in c.thresholds else None

    def metric_info(self, info: Mapping[str, MetricInfo], params: Params,
                    bands: list[Band]) -> dict[str, MetricInfo]:
        info = dict(info)
        for threshold in Conventions.of(params).thresholds:
            info[threshold.key("AP")] = MetricInfo("higher", "per class: AP at match threshold "
                                                   f"{threshold.token}")
            info[threshold.key("APH")] = MetricInfo("higher", "per class: APH at match threshold "
                                                    f"{threshold.token}")
        base = dict(info)
        for band in bands:
            for name, item in base.items():
                info[band.key(name)] = MetricInfo(item.direction, f"{item.description}; boxes "
                                                  f"whose centre is in {band.label}")
        return info


@register_protocol
class NuScenes(ConventionProtocol):
    """The nuScenes devkit's ``DetectionEval`` (``eval/detection/algo.py``)."""

    name = "nuscenes"


@register_protocol
class Autoware(ConventionProtocol):
    """autoware-ml's ``metrics/detection3d``."""

    name = "autoware"
