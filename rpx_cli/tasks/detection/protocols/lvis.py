"""LVIS' federated evaluation (``--protocol lvis``), as the ``lvis`` package's ``LVISEval``
(v0.5.3).

Per image, only the categories of its GT and its ``neg_category_ids`` are evaluated:
detections of other categories are left out (nothing is known of them); an unmatched
detection of one of its ``not_exhaustive_category_ids`` is ignored, not a false positive;
at most ``--max-dets`` (300) detections per image are kept, the highest scores (ties in
input order), before anything else; every GT is compared as a regular one (no crowd);
objects whose area is not in (0, inf) are left out. AP over 10 IoU thresholds and 101
recall points, one maxDets, four area ranges: ``AP``, ``AP50``, ``AP75``, ``APs``, ``APm``,
``APl``, ``APr``/``APc``/``APf`` (by the category's ``frequency``), ``AR@300``, ``ARs@300``,
``ARm@300``, ``ARl@300`` under ``dataset.coco``. The operating-point views see the same
capped and filtered detections. It reads LVIS files (``--coco-gt``/``--coco-dt``: the
categories' frequency and the images' category lists are not in per-stem files), boxes or
masks, and has no TIDE.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.box_table import FrameTable
from rpx_cli.ops.coco import CocoInput, CocoParams, lvis_params
from rpx_cli.tasks.base import MetricInfo, Params
from rpx_cli.tasks.detection.parts import DetectionProtocol, register_protocol
from rpx_cli.tasks.detection.views import coco

LVIS_STAT_NAMES = ("APr", "APc", "APf", "AR@300", "ARs@300", "ARm@300", "ARl@300")
FREQUENCIES = ("r", "c", "f")


@register_protocol
class Lvis(DetectionProtocol):
    name, rank = "lvis", 1
    label = "LVIS"
    iou_types = ("bbox", "segm")
    iou_types_text = "boxes or masks (--iou-type bbox|segm)"
    tide = False
    no_tide = ("--metrics errors (TIDE) is COCO's; --protocol lvis supports rows, pooled, "
               "confusion and coco")
    needs = frozenset({"lvis_categories"})
    needs_text = ("--protocol lvis reads LVIS files (--coco-gt/--coco-dt): categories' "
                  "frequency and images' neg_category_ids are not in per-stem files")
    memory_text = ("Evaluator('detection', protocol='lvis'): LVIS needs the GT's category table "
                   "(each category's 'frequency') and each image's neg_category_ids and "
                   "not_exhaustive_category_ids, which samples given in memory do not carry; "
                   "evaluate the LVIS files instead (rpx_cli.api.run_file_evaluation, or "
                   "rpx eval detection --protocol lvis with the LVIS GT and results files)")

    options = ("max_dets",)
    headline = ("AP", "AP50", "AP75", "APr", "APc", "APf")

    def normalise(self, out: dict[str, Any], given: Any) -> None:
        super().normalise(out, given)
        out["max_dets"] = 300 if given.get("max_dets") is None else int(given["max_dets"])

    def metric_info(self, info: dict[str, MetricInfo], params: Params) -> None:
        n = params.get("max_dets", 300)
        for name in ("AR1", "AR10", "AR100", "ARs", "ARm", "ARl"):
            info.pop(name)
        info.update({name: MetricInfo("higher", "LVISEval: AP over the rare (APr), common (APc) "
                                      "or frequent (APf) categories, by the GT file's "
                                      "'frequency'") for name in LVIS_STAT_NAMES[:3]})
        info.update({name.replace("300", str(n)): MetricInfo(
            "higher", f"LVISEval: average recall at {n} detections per image (all, small, "
            "medium, large areas)") for name in LVIS_STAT_NAMES[3:]})

    def coco_params(self, kind: Any, params: Params) -> CocoParams:
        return lvis_params(params.get("max_dets", 300))

    def cap(self, table: FrameTable, params: Params) -> FrameTable:
        return lvis_detections(table, params["max_dets"])

    def frames(self, table: FrameTable, params: Params) -> FrameTable:
        # per-stem frames (from shards) are capped alike; federated for every view
        return federated(self.cap(table, params))

    def file_params(self, coco_files: Any, gt_file: str) -> dict[str, Any]:
        missing = [name for name, f in zip(coco_files.categories, coco_files.frequency, strict=True)
                   if f not in FREQUENCIES]
        if missing:
            raise InputError(f"category {missing[0]!r} has no LVIS 'frequency' (r, c or f): "
                             "--protocol lvis needs every category's frequency for APr, APc "
                             "and APf", path=gt_file)
        return {"category_frequency": list(coco_files.frequency)}

    def evaluate(self, table: FrameTable, similarity: Any, kind: Any, params: Params,
                 gt_ignore: np.ndarray | None = None) -> dict[str, Any]:
        frequency = params.get("category_frequency")
        if frequency is None:
            raise InputError("--protocol lvis needs each category's frequency: evaluate LVIS "
                             "files (--coco-gt/--coco-dt)")
        return coco(table, geometry=similarity, params=self.coco_params(kind, params),
                    area_given=kind.area_given, noun=kind.noun, gt_ignore=gt_ignore,
                    frequency=frequency, restrict=_lvis_input)


def _lvis_input(table: FrameTable, data: CocoInput) -> CocoInput:
    """``LVISEval._prepare`` on the table: objects whose area is not in (0, inf) are left out
    (its ``get_ann_ids`` filter, GT and detections alike); per image, detections of a
    category neither in the image's GT nor in its ``neg_category_ids`` are left out; an
    unmatched detection of a ``not_exhaustive_category_ids`` category is ignored."""
    K = max(len(table.vocabulary), 1)
    g_keep = (data.gt_area > 0) & (data.gt_area < np.inf)
    d_area = data.dt_area if data.dt_area is not None else (
        data.dt_box[:, 2] * data.dt_box[:, 3] if data.geometry is None else data.geometry.area(data.dt_box))
    positive = np.unique(data.gt_image[g_keep] * K + data.gt_category[g_keep])
    neg = _pair_keys(table.neg, K)
    code = data.dt_image * K + data.dt_category
    d_keep = (d_area > 0) & (d_area < np.inf) & (np.isin(code, positive) | np.isin(code, neg))
    g, d = np.flatnonzero(g_keep), np.flatnonzero(d_keep)
    return CocoInput(0, data.n_categories, data.gt_image[g], data.gt_category[g], data.gt_box[g],
                     data.gt_area[g], np.zeros(g.size, bool), data.dt_image[d], data.dt_category[d],
                     data.dt_box[d], data.dt_score[d], data.geometry,
                     dt_area=None if data.dt_area is None else data.dt_area[d],
                     dt_unmatched_ignored=np.isin(code[d], _pair_keys(table.not_exhaustive, K)))


def _pair_keys(pairs: tuple[np.ndarray, np.ndarray] | None, K: int) -> np.ndarray:
    return np.zeros(0, np.int64) if pairs is None else pairs[0] * K + pairs[1]


def lvis_detections(table: FrameTable, max_dets: int) -> FrameTable:
    """``LVISResults``' cap: per image, the ``max_dets`` highest-scoring detections of any
    category (ties in input order; Python's stable sort); crowd flags dropped (``LVISEval``
    compares every GT as a regular one)."""
    pred = table.pred
    order = np.lexsort((np.arange(len(pred)), -pred.score, pred.frame))
    rank = np.arange(order.size) - np.searchsorted(pred.frame[order], pred.frame[order], side="left")
    keep = np.sort(order[rank < max_dets])
    gt = replace(table.gt, crowd=np.zeros(len(table.gt), bool))
    return replace(table, gt=gt, pred=pred.take(keep))


def federated(table: FrameTable) -> FrameTable:
    """LVIS for the operating-point views: detections of a category that is neither in its
    image's GT nor among its negative categories are left out (nothing is known of them)."""
    K = max(len(table.vocabulary), 1)
    positive = np.unique(table.gt.frame * K + table.gt.label)
    code = table.pred.frame * K + table.pred.label
    keep = np.isin(code, positive) | np.isin(code, _pair_keys(table.neg, K))
    return replace(table, pred=table.pred.where(keep))
