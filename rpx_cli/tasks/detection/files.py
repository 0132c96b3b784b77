"""``rpx eval detection --coco-gt F --coco-dt F``: COCO (and LVIS) files read straight into
a flat table of every image's objects, checked (mask sizes, keypoint counts, LVIS
frequencies), with ``--class-map`` and LVIS' per-image cap applied."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.box_table import FrameTable
from rpx_cli.io.coco_files import load_coco
from rpx_cli.tasks.base import FileInput, Params
from rpx_cli.tasks.detection import instances
from rpx_cli.tasks.detection.views import lvis_detections
from rpx_cli.tasks.stats import Stat, StatTable


def read_coco_files(files: Mapping[str, str], params: Params,
                    declared: tuple[Stat, ...]) -> FileInput:
    """``--coco-gt``/``--coco-dt``: read straight into a flat table (no per-image
    objects). Images keep their COCO ids (the COCO view orders them by id); stems are
    ``file_name`` without its suffix."""
    gt_file, dt_file = files["coco_gt"], files["coco_dt"]
    if params.get("geometry", "box") != "box":
        raise ParameterError("--coco-gt/--coco-dt hold axis-aligned boxes: --geometry "
                             f"{params['geometry']} reads per-stem files (--pred-dir/--gt-dir)")
    iou_type, lvis = params.get("iou_type", "bbox"), params.get("protocol", "coco") == "lvis"
    coco = load_coco(gt_file, dt_file, iou_type=iou_type, lvis=lvis,
                     skip=params.get("on_error") == "skip")
    if not coco.stems and not coco.errors:
        raise InputError("the COCO GT file has no images", path=gt_file)
    extra: dict[str, Any] = {}
    if iou_type == "segm":
        for side, sizes, path, what in ((coco.gt, coco.gt_size, gt_file, "annotation"),
                                        (coco.pred, coco.pred_size, dt_file, "detection")):
            side.box, area = instances.prepare_masks(side.box, sizes, path, what)
            side.area = np.where(np.isnan(side.area), area, side.area)
        _check_mask_sizes(coco, gt_file, dt_file)
    elif iou_type == "keypoints":
        instances.keypoint_count_error(coco.gt.box, params["oks_sigmas"], gt_file)
        instances.keypoint_count_error(coco.pred.box, params["oks_sigmas"], dt_file)
    if lvis:
        missing = [name for name, f in zip(coco.categories, coco.frequency, strict=True)
                   if f not in ("r", "c", "f")]
        if missing:
            raise InputError(f"category {missing[0]!r} has no LVIS 'frequency' (r, c or f): "
                             "--protocol lvis needs every category's", path=gt_file)
        extra["category_frequency"] = list(coco.frequency)
    table = FrameTable(len(coco.stems), coco.categories, coco.gt, coco.pred, coco.image_ids,
                       coco.neg, coco.not_exhaustive)
    n_gt = len(table.gt)
    if lvis:
        table = lvis_detections(table, params["max_dets"])
    table = table.map_labels(params.get("class_map"))
    rows = [{"n_gt": a, "n_pred": b} for a, b in
            zip(table.n_gt(), table.n_pred(params["conf_threshold"]), strict=True)]
    warnings = []
    if n_gt and not len(table.gt):
        warnings.append(f"--class-map removed every GT box of {gt_file} ({n_gt} before, 0 "
                        "after): no image has an object left to find")
    if coco.n_unknown_category:
        warnings.append(f"{coco.n_unknown_category} detection(s) name a category that is "
                        f"not in {gt_file}; they are not evaluated (as pycocotools)")
    return FileInput(coco.stems, stats=StatTable(declared, {"frame": table}, table.n),
                     rows=rows, params={"categories": table.vocabulary, **extra},
                     warnings=warnings, errors=coco.errors, sample=partial(_sample, table))


def _sample(table: FrameTable, i: int) -> tuple[Any, Any]:
    """Image i's (prediction, GT) boxes, as ``Detection.read`` gives a pair (calculators)."""
    frame = table[i]
    return frame.pred, frame.gt



def _check_mask_sizes(coco, gt_file: str, dt_file: str) -> None:
    """One image size per image: a prediction's RLE of another size than the image's GT
    masks is an input error naming both (sizes given by images[] were checked on reading)."""
    n = len(coco.stems)
    first = np.full((n, 2), -1, np.int64)
    for side in (coco.pred, coco.gt):  # the GT's size wins where both have masks
        if len(side):
            sizes = np.array([rle["size"] for rle in side.box], np.int64).reshape(-1, 2)
            first[side.frame[::-1]] = sizes[::-1]  # the first mask of each image
    for side, path, what in ((coco.gt, gt_file, "annotation"), (coco.pred, dt_file, "detection")):
        if not len(side):
            continue
        sizes = np.array([rle["size"] for rle in side.box], np.int64).reshape(-1, 2)
        wrong = np.flatnonzero((sizes != first[side.frame]).any(axis=1))
        if wrong.size:
            k = int(wrong[0])
            raise InputError(f"image {int(coco.image_ids[side.frame[k]])}: a {what} mask of size "
                             f"{sizes[k].tolist()} where the image's masks are "
                             f"{first[side.frame[k]].tolist()} ({dt_file} against {gt_file})", path=path)
