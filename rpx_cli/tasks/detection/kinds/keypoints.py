"""Keypoints (``--iou-type keypoints``), as pycocotools' ``iouType="keypoints"``.

An object is ``"keypoints": [x1, y1, v1, ...]`` (COCO's flat triplets), kept as the row
``[x1, y1, v1, ..., bx, by, bw, bh, num_keypoints]``; a GT's ``bbox`` defaults to the extent
of its visible points and its ``area`` to the box's ``w · h``, a prediction's area is its
box's (pycocotools' ``loadRes``). Two are compared by Object Keypoint Similarity as
``computeOks`` (:mod:`rpx_cli.ops.oks`): the mean over the GT's visible points of
``exp(−d² / (2 s² (2σ)²))`` with ``s²`` the GT's area, ``σ`` the ``--oks-sigmas`` (COCO's 17
by default; their number checked against every object's); a GT without a visible point
measures against its box's extent, and is ignored (``num_keypoints`` 0). COCO's summary is
maxDets 20, areas all/medium/large (AP, AP50, AP75, APm, APl, AR, AR50, AR75, ARm, ARl). The
rows, pooled and confusion use OKS with ``--iou-threshold`` as its threshold. No TIDE.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.io import instances as read_instances
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.coco_objects import KEYPOINT_FIELD
from rpx_cli.io.instances import VISIBILITY
from rpx_cli.io.objects import KEYPOINTS, Objects
from rpx_cli.tasks.base import MetricInfo, Params
from rpx_cli.tasks.detection import instances
from rpx_cli.tasks.detection.frames import frame_stat, rows_codec
from rpx_cli.tasks.detection.parts import SimilarityKind, object_attributes, register_kind
from rpx_cli.tasks.stats import Stat

KEYPOINT_STAT_NAMES = ("AR", "AR50", "AR75")


@register_kind
class Keypoints(SimilarityKind):
    name, rank, iou_type = "keypoints", 5, "keypoints"
    title = "keypoints"
    noun = "object"
    measure = "OKS"
    no_tide = ("--metrics errors (TIDE) is for boxes and masks; --iou-type keypoints supports "
               "rows, pooled, confusion and coco")
    area_given = True
    draws_frames = True  # the worst frames: each object's points, skeleton and box
    coco_field = KEYPOINT_FIELD
    forms = (KEYPOINTS,)

    def rpx_objects(self, objects: Objects, path: str) -> list[dict[str, Any]]:
        """Points ``(K, 3)`` and the object's box (``[x, y, w, h]``) as COCO keypoints."""
        xyxy = objects.boxes.reshape(-1, 4)
        items = []
        for i in range(len(objects)):
            x1, y1, x2, y2 = xyxy[i].tolist()
            items.append({"keypoints": objects.keypoints[i].reshape(-1).tolist(),
                          "bbox": [x1, y1, x2 - x1, y2 - y1], **object_attributes(objects, i)})
        return items

    def build_params(self, params):
        return {**params, "box_format": "xywh"}

    @property
    def coco_params(self):
        from rpx_cli.ops.coco import KEYPOINT_PARAMS

        return KEYPOINT_PARAMS

    def normalise(self, out: dict[str, Any], given: dict[str, Any]) -> None:
        from rpx_cli.ops.oks import COCO_SIGMAS

        sigmas = given.get("oks_sigmas")
        out["oks_sigmas"] = [float(x) for x in (COCO_SIGMAS.tolist() if sigmas is None else sigmas)]

    def metric_info(self, info: dict[str, MetricInfo], params: Params) -> None:
        for name in ("AR1", "AR10", "AR100", "ARs", "APs"):
            info.pop(name)
        info.update({name: MetricInfo("higher", "pycocotools COCOeval keypoints: average recall "
                                      "over OKS .50:.05:.95 (AR), at .50 (AR50) or .75 (AR75), "
                                      "maxDets 20") for name in KEYPOINT_STAT_NAMES})

    def read_rpx(self, data: Any, path: str, *, prediction: bool, params: Params) -> Boxes:
        boxes, _ = read_instances.parse_instances(
            data, path, prediction=prediction, read_objects=read_instances.keypoints,
            box_format=params.get("box_format", "xyxy"))
        instances.keypoint_count_error(boxes.shape, params["oks_sigmas"], path)
        return boxes

    def statistics(self) -> tuple[Stat, ...]:
        return (frame_stat(rows_codec(-1), check_keypoint_rows),)

    def pair_all(self, table):
        return {"frame": table}  # a pair is its two sides, as they are

    def similarity(self, table, frames, params):
        similarity = instances.keypoint_geometry(table, params["oks_sigmas"],
                                                 floor=min(params["iou_threshold"], 0.5))
        return similarity, table.as_ids()

    def frame_objects(self, shapes: np.ndarray) -> dict[str, list]:
        """Each object's box and its points ``[x1, y1, v1, ...]`` (v 0: not labelled)."""
        rows = np.asarray(shapes, np.float64).reshape(len(shapes), -1)
        k3 = rows.shape[1] - 5
        return {"box": rows[:, k3:k3 + 4].tolist(), "points": rows[:, :k3].tolist()}

    def frame_skeleton(self, params: Params) -> list[list[int]] | None:
        """COCO's person skeleton when the points are COCO's 17 (its sigmas)."""
        from rpx_cli.ops.oks import COCO_SIGMAS, COCO_SKELETON

        sigmas = params.get("oks_sigmas")
        if sigmas is not None and len(sigmas) == COCO_SIGMAS.size and np.allclose(sigmas, COCO_SIGMAS):
            return [list(pair) for pair in COCO_SKELETON]
        return None

    def gt_ignore(self, table) -> np.ndarray:
        return table.gt.shape[:, -1] == 0 if len(table.gt) else np.zeros(0, bool)

    def check_files(self, coco, gt_file: str, dt_file: str, params: Params) -> None:
        instances.keypoint_count_error(coco.gt.shape, params["oks_sigmas"], gt_file)
        instances.keypoint_count_error(coco.pred.shape, params["oks_sigmas"], dt_file)

    def coco_shapes(self, boxes: Boxes, *, prediction: bool) -> list[dict[str, Any]]:
        """``keypoints`` and ``bbox`` (GT: ``num_keypoints`` too) from each row."""
        out = []
        for row in np.asarray(boxes.shape, np.float64).tolist() if len(boxes) else []:
            k3 = len(row) - 5
            item: dict[str, Any] = {"keypoints": row[:k3], "bbox": row[k3:k3 + 4]}
            if not prediction:
                item["num_keypoints"] = int(row[-1])
            out.append(item)
        return out


def check_keypoint_rows(frame) -> None:
    """A frame's keypoint rows read back from a ``--shard`` part, as the reader makes them:
    ``[x, y, v] * K`` (a GT's v 0, 1 or 2), the box ``[bx, by, bw, bh]`` (w, h >= 0) and the count;
    a prediction's count is its points with v > 0 and its area ``bw · bh`` (``loadRes``).
    A ``ValueError`` naming the first object otherwise."""
    for side, boxes in (("GT", frame.gt), ("prediction", frame.pred)):
        rows = boxes.shape
        if not len(rows):
            continue
        if rows.ndim != 2 or rows.shape[1] < 8 or (rows.shape[1] - 5) % 3:
            raise ValueError(f"{side} keypoint rows of width {rows.shape[-1]}")
        v = rows[:, 2:-5:3]
        count = rows[:, -1]
        wrong = (rows[:, -3:-1] < 0).any(axis=1) | (count < 0) | (count != np.round(count))
        if side == "GT":
            wrong |= ~np.isin(v, VISIBILITY).all(axis=1)
        else:
            wrong |= (count != np.count_nonzero(v > 0, axis=1))
            wrong |= boxes.area != rows[:, -3] * rows[:, -2]
        if wrong.any():
            raise ValueError(f"{side} object {int(np.argmax(wrong))} is malformed: its keypoints, "
                             "box or area are not what a reader makes of a file")
