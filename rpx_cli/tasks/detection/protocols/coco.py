"""COCO AP/AR (``--protocol coco``, the default), as pycocotools' ``COCOeval``.

Every detection takes part (no confidence threshold); per image and category, detections
by descending score (ties in input order), at most maxDets, each matched greedily to the
best untaken GT of IoU >= t for ten thresholds .50:.05:.95 (ties to the last GT; crowd GT
matched again, a detection on one ignored); per category, precision made monotone and read
at 101 recall points; AP the mean over thresholds and categories with GT. The summary is
the kind's (:attr:`~rpx_cli.tasks.detection.parts.SimilarityKind.coco_params`: maxDets
1/10/100 and four area ranges — ``AP``, ``AP50``, ``AP75``, ``APs``, ``APm``, ``APl``,
``AR1``, ``AR10``, ``AR100``, ``ARs``, ``ARm``, ``ARl`` — or keypoints' maxDets 20 and three
ranges), under ``dataset.coco`` with ``per_class`` AP and the ``curves`` behind it. Images
are ordered by COCO image id (per-stem input: 1..N in stem order), which fixes tie order
across images. :mod:`rpx_cli.ops.coco` is the vectorised matcher and accumulation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import ParameterError
from rpx_cli.io.box_table import FrameTable
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import DetectionProtocol, register_protocol
from rpx_cli.tasks.detection.views import coco


@register_protocol
class Coco(DetectionProtocol):
    name, rank = "coco", 0
    label = "COCO"
    pools_image_matches = True

    def check(self, params: Params, kind: Any) -> None:
        if params.get("max_dets") is not None:
            raise ParameterError("--max-dets is LVIS' per-image cap: it needs --protocol lvis "
                                 "(COCO's maxDets are fixed: 1/10/100, keypoints 20)")
        super().check(params, kind)

    def evaluate(self, table: FrameTable, similarity: Any, kind: Any, params: Params,
                 gt_ignore: np.ndarray | None = None) -> dict[str, Any]:
        return coco(table, geometry=similarity, params=self.coco_params(kind, params),
                    area_given=kind.area_given, noun=kind.noun, gt_ignore=gt_ignore)
