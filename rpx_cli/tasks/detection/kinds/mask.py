"""Instance masks (``--iou-type segm``), as pycocotools' ``iouType="segm"``.

An object is a ``"segmentation"`` as COCO writes it: polygons ``[[x1, y1, x2, y2, ...],
...]`` (rasterised at the image's size: ``{"size": [h, w], "objects": [...]}`` in a per-stem
file, ``images[].height/width`` in a COCO file), an uncompressed RLE ``{"size", "counts":
[ints]}`` or a compressed one (``counts`` a string); each becomes a compressed RLE when it is
read (runs summing to ``h · w``, one image size per frame). Two are compared by mask IoU as
``maskUtils.iou``: intersection over union of the pixels, over the detection's own mask for
a crowd GT; every frame's intersections are computed at once in the summary. The area is
the mask's pixel count — for COCO's area ranges a GT's ``area`` field when given, and a
result's box ``w · h`` when it carries a ``bbox`` (pycocotools' ``loadRes``). Runs on rpx's
native core; without it (``RPX_NATIVE=0``, no compiler at install) needs pycocotools (the
``rpx-eval[coco]`` extra). TIDE runs on it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io import instances as read_instances
from rpx_cli.io.box_table import Frame
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.coco_objects import MASK_FIELD
from rpx_cli.io.objects import BOX, POLYGON, Objects
from rpx_cli.ops.coco import STAT_NAMES
from rpx_cli.tasks.base import MetricInfo, Params
from rpx_cli.tasks.detection import instances
from rpx_cli.tasks.detection.frames import frame_stat
from rpx_cli.tasks.detection.parts import SimilarityKind, object_attributes, register_kind
from rpx_cli.tasks.stats import Stat


@register_kind
class Mask(SimilarityKind):
    name, rank, iou_type = "mask", 4, "segm"
    title = "masks"
    noun = "object"
    tide = True
    draws_frames = True  # the worst frames: each mask, and its box
    area_given = True
    coco_field = MASK_FIELD
    forms = (POLYGON, BOX)

    def rpx_objects(self, objects: Objects, path: str) -> dict[str, Any]:
        """Rings (and boxes, as their four corners: pycocotools' ``loadRes`` scores a box so)
        as COCO polygons at the image's size."""
        if objects.size is None:
            raise InputError("--iou-type segm rasterises polygons at the image's size: the file "
                             "gives none (--images-dir or --image-size)", path=path)
        items = []
        for i in range(len(objects)):
            if objects.form == POLYGON:
                segmentation = [ring.reshape(-1).tolist() for ring in objects.polygons[i]]
            else:
                x1, y1, x2, y2 = objects.boxes[i].tolist()
                segmentation = [[x1, y1, x1, y2, x2, y2, x2, y1]]
            items.append({"segmentation": segmentation, **object_attributes(objects, i)})
        return {"size": [int(objects.size[0]), int(objects.size[1])], "objects": items}

    def check(self, params: Params) -> None:
        super().check(params)
        from rpx_cli.ops.masks import require_kernels

        require_kernels()

    def metric_info(self, info: dict[str, MetricInfo], params: Params) -> None:
        info.update({name: MetricInfo("higher", "pycocotools COCOeval segm (mask IoU): 10 IoU "
                                      "thresholds .50:.05:.95, 101 recall points, maxDets "
                                      "1/10/100, areas from the GT 'area' field or the mask")
                     for name in STAT_NAMES})

    def read_rpx(self, data: Any, path: str, *, prediction: bool, params: Params) -> Boxes:
        boxes, sizes = read_instances.parse_instances(
            data, path, prediction=prediction, read_objects=read_instances.masks,
            box_format=params.get("box_format", "xyxy"))
        boxes.shape, area = instances.prepare_masks(boxes.shape, sizes, path)
        boxes.area = np.where(np.isnan(boxes.area), area, boxes.area)
        return boxes

    def statistics(self) -> tuple[Stat, ...]:
        return (frame_stat((instances.rle_to_json, instances.rle_from_json)),)

    def pair(self, pred: Boxes, gt: Boxes, params: Params, *, pred_path: str | None,
             gt_path: str) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            instances.frame_size([*gt.shape, *pred.shape])
        except InputError as exc:
            raise InputError(f"{exc.args[0]} ({pred_path} against {gt_path})", path=gt_path) from None
        return {"frame": Frame(gt, pred)}, {}

    def similarity(self, table, frames, params):
        return instances.mask_geometry(table), table.as_ids()

    def frame_objects(self, shapes: np.ndarray) -> dict[str, list]:
        """Each mask's box (pycocotools' ``toBbox``) and its compressed RLE (``size``,
        ``counts``), which the page draws."""
        from rpx_cli.ops.masks import boxes

        return {"box": boxes(list(shapes)).tolist(),
                "mask": [{"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")
                          if isinstance(rle["counts"], bytes) else str(rle["counts"])} for rle in shapes]}

    def check_files(self, coco, gt_file: str, dt_file: str, params: Params) -> None:
        for side, sizes, path, what in ((coco.gt, coco.gt_size, gt_file, "annotation"),
                                        (coco.pred, coco.pred_size, dt_file, "detection")):
            if side is coco.gt and coco.gt_prepared is not None:  # (started on reading)
                side.shape, area = coco.gt_prepared()
            else:
                side.shape, area = instances.prepare_masks(side.shape, sizes, path, what)
            side.area = np.where(np.isnan(side.area), area, side.area)
        instances.check_mask_sizes(coco, gt_file, dt_file)

    def prepare_coco_gt(self):
        """The GT's masks started as soon as the GT file is read: checked, their polygons
        flattened, and rasterised by the native core in a thread (the GIL released
        throughout) while this one reads the results (on the numpy path pycocotools
        rasterises them when they are finished: it holds the GIL)."""
        return partial(instances.start_masks, what="annotation", background=True)

    def coco_shapes(self, boxes: Boxes, *, prediction: bool) -> list[dict[str, Any]]:
        """Compressed RLEs (``counts`` as text)."""
        return [{"segmentation": {"size": [int(v) for v in rle["size"]],
                                  "counts": rle["counts"].decode() if isinstance(rle["counts"], bytes)
                                  else rle["counts"]}} for rle in boxes.shape]
