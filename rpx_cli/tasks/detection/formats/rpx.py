"""rpx's per-stem JSON (docs/detection.md): one ``.json`` file per image in each folder,
paired by stem.

A file is a list of objects ``[{<shape>, "label", "score"?, "iscrowd"?, "area"?}, ...]``
or columns ``{"boxes": [...], "labels": [...], "scores": [...]}`` (masks and keypoints:
``{"size": [h, w], "objects": [...]}`` or a list); the shape's fields are the kind's (boxes
``"bbox"`` as ``--box-format``, rotated boxes ``"bbox"`` of five, cuboids ``"center"``,
``"size"``, ``"yaw"``, polygons ``"polygons"``, masks ``"segmentation"``, keypoints
``"keypoints"``), read by the kind (``read_rpx``). GT has no ``score``; labels are strings or
integers; a GT object with ``"ignore"`` (or ``"difficult"``) 1 is ignored GT, one with
``"every_class": 1`` a crowd region of every class (KITTI's ``DontCare``). It expresses
every kind; it cannot carry what a set-wide file does (LVIS' category frequencies and
per-image category lists), so ``--protocol lvis`` refuses it.
"""

from __future__ import annotations

from typing import Any

from rpx_cli.io.boxes import EVERY_CLASS_KEYS, Boxes, ignore_flags
from rpx_cli.io.json import loads_json
from rpx_cli.io.memory import InMemory
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import DetectionFormat, SimilarityKind, register_format


@register_format
class RpxJson(DetectionFormat):
    name, rank, title = "rpx", 0, "rpx JSON"
    suffixes = (".json",)
    forms = ()

    def sniff(self, head: bytes, name: str) -> bool:
        """A ``.json`` file holding a list or an object that is not a COCO file's."""
        if not name.lower().endswith(".json"):
            return False
        text = head.lstrip()
        return text[:1] in (b"[", b"{") and not any(
            key in head for key in (b'"images"', b'"image_id"', b'"shapes"'))

    def expresses(self, kind: SimilarityKind) -> bool:
        return True

    def read(self, data: Any, path: str, *, prediction: bool, kind: SimilarityKind,
             params: Params, skipped: Any = None) -> Boxes:
        document = loads_json(data, path)
        boxes = kind.read_rpx(InMemory(document), path, prediction=prediction, params=params)
        if not prediction:
            boxes.ignore = ignore_flags(document, path)
            regions = ignore_flags(document, path, keys=EVERY_CLASS_KEYS)
            if regions is not None and regions.any():
                boxes.every_class = regions
                boxes.crowd = boxes.crowd | regions
        return boxes
