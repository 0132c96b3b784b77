"""Axis-aligned boxes (``--iou-type bbox``, ``--geometry box``: the default).

An object is ``[x, y, w, h]`` in pixels (per-stem files: ``"bbox"`` as ``--box-format``
says, ``xyxy`` or ``xywh``; COCO files: ``bbox``, ``xywh``). Two are compared by IoU
exactly as pycocotools computes it: ``inter / (area_dt + area_gt − inter)``, over the
detection's own area for a crowd region, 0 when they do not intersect — a formula of two
boxes, evaluated wherever a view asks (:data:`rpx_cli.ops.geometry.BOXES`). An object's area
is ``w · h`` (a GT's ``area`` field, when given, for the COCO area ranges). TIDE runs on it,
and the page draws the worst frames' boxes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.boxes import Boxes, parse_boxes
from rpx_cli.io.coco_objects import BOX_FIELD
from rpx_cli.io.objects import BOX as BOX_FORM
from rpx_cli.io.objects import Objects
from rpx_cli.ops.geometry import BOXES
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import SimilarityKind, register_kind


def boxes_of_masks(results: list[Any], path: str) -> None:
    """pycocotools' ``loadRes`` on a mask-only result: its ``bbox`` is the mask's bounding
    box (``toBbox``), set in place — after the compressed RLE is checked (64-bit runs summing
    to h · w), an input error naming the detection otherwise."""
    from itertools import repeat

    lacking = [n for n, has in enumerate(map(dict.__contains__, results, repeat("bbox")))
               if not has] if results and isinstance(results[0], dict) and \
        all(isinstance(item, dict) for item in results) else []
    lacking = [n for n in lacking if isinstance(results[n].get("segmentation"), dict)]
    if not lacking:
        return
    from rpx_cli.io.instances import masks as read_masks
    from rpx_cli.ops import masks

    read = read_masks([results[n] for n in lacking], path, prediction=True, box_format="xywh",
                      given_area=np.full(len(lacking), np.nan))
    rles = [rle for rle in read.shape if isinstance(rle, dict) and isinstance(rle["counts"], bytes)]
    if len(rles) != len(lacking):
        return  # (uncompressed runs: left to the reader's own message, missing 'bbox')
    _, total, ok = masks.totals(rles)
    expected = np.array([rle["size"][0] * rle["size"][1] for rle in rles], np.int64)
    bad = np.flatnonzero(~ok | (total != expected))
    if bad.size:
        raise InputError(f"detection {lacking[int(bad[0])]}: a malformed RLE (its runs do not "
                         "sum to h·w): no box can be taken from it", path=path)
    for n, box in zip(lacking, masks.boxes(rles).tolist(), strict=True):
        results[n]["bbox"] = box


@register_kind
class Box(SimilarityKind):
    name, rank, iou_type, geometry = "box", 0, "bbox", "box"
    tide = True
    draws_frames = True
    coco_field = replace(BOX_FIELD, fill=boxes_of_masks)
    forms = (BOX_FORM,)

    def read_rpx(self, data: Any, path: str, *, prediction: bool, params: Params) -> Boxes:
        return parse_boxes(data, path, prediction=prediction, box_format=params["box_format"])

    def build(self, objects: Objects, path: str, *, prediction: bool, params: Params) -> Boxes:
        """``[x1, y1, x2, y2]`` as ``[x, y, w, h]``; area ``w · h`` unless given."""
        xyxy = objects.boxes.reshape(-1, 4)
        shape = np.concatenate([xyxy[:, :2], xyxy[:, 2:] - xyxy[:, :2]], axis=1)
        area = objects.given_area()
        area = np.where(np.isnan(area), shape[:, 2] * shape[:, 3], area)
        return Boxes(shape, list(objects.labels), None if not prediction else
                     np.asarray(objects.scores, np.float64), objects.crowds().copy(), area,
                     **objects.flags(prediction=prediction))

    def empty(self, gt: Boxes) -> Boxes:
        return Boxes.empty(with_scores=True)

    def pair_all(self, table):
        return {"frame": table}  # a pair is its two sides, as they are

    def similarity(self, table, frames, params):
        return BOXES, table

    def coco_shapes(self, boxes: Boxes, *, prediction: bool) -> list[dict[str, Any]]:
        return [{"bbox": row} for row in boxes.shape.tolist()]
