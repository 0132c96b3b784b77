"""The figures of ``rpx eval detection`` over all frames at once: rows and pooled counts at
the operating point, the Aquarium confusion, COCO/LVIS AP with curves, TIDE, and the worst
frames — every view on the similarity of the run's geometry or IoU type (boxes, shapes,
masks, keypoints), computed once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError
from rpx_cli.io.box_table import FrameTable
from rpx_cli.ops.coco import COCO, KEYPOINTS, lvis_protocol
from rpx_cli.ops.geometry import BOXES, Geometry
from rpx_cli.ops.reduce import mean_present, prf, prf_arrays
from rpx_cli.params.pictures import MAX_FRAME_BOXES
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection import instances
from rpx_cli.tasks.detection.shapes import overlap_table
from rpx_cli.tasks.detection.views import (
    by_confidence,
    coco,
    confusion,
    errors,
    federated,
    greedy,
    lvis_detections,
    operating_point,
    vocabulary,
    worst_frames,
)
from rpx_cli.tasks.stats import StatTable

ROW_KEYS = ("precision", "recall", "f1", "tp", "fp", "fn")


def filter_warnings(table: FrameTable, params: Params) -> list[str]:
    """``--conf-threshold`` above every score leaves the operating-point views nothing to
    score (a GT file emptied by ``--class-map`` is a per-file warning, CLASS_MAP_EMPTIED)."""
    warnings = []
    n_pred = len(table.pred)
    if n_pred and not len(table.gt):
        warnings.append(f"no GT box in any of the {table.n} image(s) while the predictions hold "
                        f"{n_pred}: {SWAP_HINT}")
    if n_pred and not np.any(table.pred.score >= params["conf_threshold"]):
        warnings.append(f"--conf-threshold {params['conf_threshold']:g} removed every detection "
                        f"({n_pred} before, 0 after): rows, pooled and confusion see none "
                        "(COCO AP uses every score)")
    return warnings


def summarize_frames(stats: StatTable, params: Params, families: Mapping[str, Any],
                     optional: tuple[str, ...]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    wanted = params.get("metrics") or [f for f in families if f not in optional]
    frames = stats["frame"]
    table = frames if isinstance(frames, FrameTable) else FrameTable.from_frames(
        frames, params.get("categories") or vocabulary(frames))
    geometry: Geometry = BOXES
    iou_type, lvis = params.get("iou_type", "bbox"), params.get("protocol", "coco") == "lvis"
    gt_ignore = None
    if lvis:  # per-stem frames (from shards) are capped alike; federated for every view
        table = federated(lvis_detections(table, params["max_dets"]))
    if iou_type == "segm":
        geometry = instances.mask_geometry(table)
    elif iou_type == "keypoints":
        geometry = instances.keypoint_geometry(table, params["oks_sigmas"],
                                               floor=min(params["iou_threshold"], 0.5))
        gt_ignore = table.gt.shape[:, -1] == 0 if len(table.gt) else np.zeros(0, bool)
    elif params.get("geometry", "box") != "box":
        # the views see objects as ids and look their intersections up
        geometry = overlap_table(params["geometry"], frames, table)
    if geometry is not BOXES:  # (new tables: the statistics keep their shapes)
        table = replace(table, gt=replace(table.gt, shape=np.arange(len(table.gt))),
                        pred=replace(table.pred, shape=np.arange(len(table.pred))))
    n = table.n
    empty = table.gt.counts(n) == 0
    skipped = empty & bool(params["skip_empty_gt"])
    dataset: dict[str, Any] = {}
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    aggregate: dict[str, Any] = {"n_frames": n, "n_empty_gt": int(np.count_nonzero(empty)),
                                 "n_skipped": int(np.count_nonzero(skipped))}
    if params.get("geometry") == "polygon":
        aggregate["n_repaired"] = int(np.nansum(stats["n_repaired"]))
    if {"rows", "pooled"} & set(wanted):
        # every detection kept (conf 0): the operating point and the sweep share a matching
        shared = greedy(table, params["iou_threshold"], -np.inf, geometry) \
            if params["conf_threshold"] <= 0 and "pooled" in wanted else None
        tp, fp, fn = operating_point(table, params["iou_threshold"], params["conf_threshold"],
                                     matches=shared,
                                     geometry=geometry)
        figures = prf_arrays(tp, fp, fn)
        columns = [figures[key].tolist() for key in ("precision", "recall", "f1")]
        columns += [tp.tolist(), fp.tolist(), fn.tolist()]
        for i, values in enumerate(zip(*columns, strict=True)):
            rows[i] = dict(zip(ROW_KEYS, (None,) * len(ROW_KEYS) if skipped[i] else values,
                               strict=True))
        used = ~skipped
        for key in ("precision", "recall", "f1"):
            values = figures[key][used]
            aggregate[key] = mean_present(values)
        totals = [int(x[used].sum()) for x in (tp, fp, fn)]
        dataset["pooled"] = {**prf(*totals), **dict(zip(("tp", "fp", "fn"), totals, strict=True))}
        if "pooled" in wanted:
            dataset["pooled"]["by_confidence"] = by_confidence(table, used, params["iou_threshold"],
                                                               matches=shared,
                                                               geometry=geometry)
    if "confusion" in wanted:
        dataset["confusion"] = confusion(table, ~skipped, params["iou_threshold"],
                                         params["conf_threshold"], geometry=geometry)
    if "coco" in wanted:
        protocol = lvis_protocol(params["max_dets"]) if lvis else \
            KEYPOINTS if iou_type == "keypoints" else COCO
        frequency = params.get("category_frequency") if lvis else None
        if lvis and frequency is None:
            raise InputError("--protocol lvis needs each category's frequency: evaluate LVIS "
                             "files (--coco-gt/--coco-dt)")
        dataset["coco"] = coco(table, geometry=geometry, protocol=protocol,
                               instances=iou_type != "bbox", gt_ignore=gt_ignore,
                               frequency=frequency)
    if "errors" in wanted:
        dataset["errors"] = errors(table, geometry=geometry)
    sections: dict[str, Any] = {"aggregate": aggregate, "dataset": dataset}
    warnings = filter_warnings(table, params)
    if warnings:
        sections["warnings"] = warnings
    if params.get("keep_worst"):
        sections["worst_frames"] = _worst_frames(table, skipped, params, geometry)
    return sections, rows

def _worst_frames(table: FrameTable, skipped: np.ndarray, params: Params,
                  geometry: Geometry) -> dict[str, Any]:
    """``--keep-worst``: the frames worst by their row's F1, with their boxes (axis-aligned
    boxes; other geometries keep the frames without boxes)."""
    tp, fp, fn = operating_point(table, params["iou_threshold"], params["conf_threshold"],
                                 geometry=geometry)
    f1 = np.where(skipped, np.nan, prf_arrays(tp, fp, fn)["f1"])
    return worst_frames(table, f1, params["keep_worst"], params["iou_threshold"],
                        params["conf_threshold"], MAX_FRAME_BOXES if geometry is BOXES else 0)


