"""rpx's per-stem JSON (docs/detection.md): one ``.json`` file per image in each folder,
paired by stem.

A file is a list of objects ``[{<shape>, "label", "score"?, "iscrowd"?, "area"?}, ...]``
or columns ``{"boxes": [...], "labels": [...], "scores": [...]}`` (masks and keypoints:
``{"size": [h, w], "objects": [...]}`` or a list); the shape's fields are the kind's (boxes
``"bbox"`` as ``--box-format``, rotated boxes ``"bbox"`` of five, cuboids ``"center"``,
``"size"``, ``"yaw"``, polygons ``"polygons"``, masks ``"segmentation"``, keypoints
``"keypoints"``), read by the kind (``read_rpx``). GT has no ``score``; labels are strings or
integers. It expresses every kind; it cannot carry what a set-wide file does (LVIS' category
frequencies and per-image category lists), so ``--protocol lvis`` refuses it.
"""

from __future__ import annotations

from typing import Any

from rpx_cli.io.boxes import Boxes
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import DetectionFormat, SimilarityKind, register_format


@register_format
class RpxJson(DetectionFormat):
    name, rank = "rpx", 0
    suffixes = (".json",)

    def sniff(self, head: bytes, name: str) -> bool:
        """A ``.json`` file holding a list or an object that is not a COCO file's."""
        if not name.lower().endswith(".json"):
            return False
        text = head.lstrip()
        return text[:1] in (b"[", b"{") and b'"images"' not in head and b'"image_id"' not in head

    def read(self, data: Any, path: str, *, prediction: bool, kind: SimilarityKind,
             params: Params) -> Boxes:
        return kind.read_rpx(data, path, prediction=prediction, params=params)
