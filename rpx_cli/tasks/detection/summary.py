"""The figures of ``rpx eval detection`` over all frames at once: rows and pooled counts at
the operating point, the Aquarium confusion, the protocol's AP with curves, TIDE, and the
worst frames — every view on the similarity of the run's kind (boxes, shapes, masks,
keypoints), computed once, over the objects the run's protocol lets take part."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT
from rpx_cli.io.box_table import FrameTable
from rpx_cli.ops.geometry import Geometry
from rpx_cli.ops.reduce import mean_present, prf, prf_arrays
from rpx_cli.params.pictures import MAX_FRAME_BOXES
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import (
    COCO_SECTION,
    DEFAULT_PROTOCOL,
    PROTOCOLS,
    SimilarityKind,
    kind_of,
    protocol_of,
)
from rpx_cli.tasks.detection.views import (
    by_confidence,
    confusion,
    errors,
    greedy,
    operating_point,
    vocabulary,
    worst_frames,
)
from rpx_cli.tasks.stats import StatTable

ROW_KEYS = ("precision", "recall", "f1", "tp", "fp", "fn")


def filter_warnings(table: FrameTable, params: Params) -> list[str]:
    """``--conf-threshold`` above every score leaves the operating-point views nothing to
    score, and at 0 (the default) it silently drops negative scores (a GT file emptied by
    ``--class-map`` is a per-file warning, CLASS_MAP_EMPTIED)."""
    warnings = []
    n_pred = len(table.pred)
    if n_pred and not len(table.gt):
        warnings.append(f"no GT box in any of the {table.n} image(s) while the predictions hold "
                        f"{n_pred}: {SWAP_HINT}")
    kept = int(np.count_nonzero(table.pred.score >= params["conf_threshold"])) if n_pred else 0
    if n_pred and not kept:
        warnings.append(f"--conf-threshold {params['conf_threshold']:g} removed every detection "
                        f"({n_pred} before, 0 after): rows, pooled and confusion see none "
                        "(COCO AP uses every score)")
    elif n_pred and kept < n_pred and params["conf_threshold"] <= 0:
        # scores are any finite numbers (logits): below 0 they fall under the default threshold
        warnings.append(f"{n_pred - kept} detection(s) score below --conf-threshold "
                        f"{params['conf_threshold']:g} (negative scores: logits?): rows, pooled and "
                        "confusion leave them out (COCO AP uses every score)")
    return warnings


def summarize_frames(stats: StatTable, params: Params, families: Mapping[str, Any],
                     optional: tuple[str, ...]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Every view over every frame, each asking the run's parts: the protocol says which
    objects take part, the similarity kind how they compare."""
    wanted = params.get("metrics") or [f for f in families if f not in optional]
    frames = stats["frame"]
    table = frames if isinstance(frames, FrameTable) else FrameTable.from_frames(
        frames, params.get("categories") or vocabulary(frames))
    kind, protocol = kind_of(params), protocol_of(params)
    table = protocol.frames(table, params)
    gt_ignore = kind.gt_ignore(table)
    if table.gt.ignore is not None:  # ignored GT the files say (difficult, DontCare)
        gt_ignore = table.gt.ignore if gt_ignore is None else gt_ignore | table.gt.ignore
    objects = table  # the shapes, for the worst frames' pictures
    geometry, table = kind.similarity(table, frames, params)
    n = table.n
    empty = table.gt.counts(n) == 0
    skipped = empty & bool(params["skip_empty_gt"])
    dataset: dict[str, Any] = {}
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    aggregate: dict[str, Any] = {"n_frames": n, "n_empty_gt": int(np.count_nonzero(empty)),
                                 "n_skipped": int(np.count_nonzero(skipped))}
    aggregate.update(kind.aggregate(stats))
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
    if protocol.section in wanted:
        table.stems = getattr(stats, "stems", None)
        dataset[protocol.section] = protocol.evaluate(table, geometry, kind, params, gt_ignore)
    if COCO_SECTION in wanted and COCO_SECTION not in dataset:  # the COCO view besides
        dataset[COCO_SECTION] = PROTOCOLS[DEFAULT_PROTOCOL].evaluate(table, geometry, kind, params,
                                                                     gt_ignore)
    if "errors" in wanted:
        dataset["errors"] = errors(table, geometry=geometry)
    sections: dict[str, Any] = {"aggregate": aggregate, "dataset": dataset}
    warnings = filter_warnings(table, params)
    if protocol.section in wanted:
        warnings += protocol.warnings(params)
    if warnings:
        sections["warnings"] = warnings
    if params.get("keep_worst"):
        sections["worst_frames"] = _worst_frames(table, skipped, params, geometry, objects, kind)
    return sections, rows


def _worst_frames(table: FrameTable, skipped: np.ndarray, params: Params, geometry: Geometry,
                  objects: FrameTable, kind: SimilarityKind) -> dict[str, Any]:
    """``--keep-worst``: the frames worst by their row's F1, with at most
    :data:`MAX_FRAME_BOXES` of their objects a side as the kind draws them (none for kinds
    the page does not draw), and the skeleton joining keypoints, when the kind has one."""
    tp, fp, fn = operating_point(table, params["iou_threshold"], params["conf_threshold"],
                                 geometry=geometry)
    f1 = np.where(skipped, np.nan, prf_arrays(tp, fp, fn)["f1"])
    section = worst_frames(table, f1, params["keep_worst"], params["iou_threshold"],
                           params["conf_threshold"], MAX_FRAME_BOXES if kind.draws_frames else 0,
                           geometry=geometry, objects=objects, draw=kind.frame_objects)
    skeleton = kind.frame_skeleton(params)
    if skeleton and kind.draws_frames:
        section["skeleton"] = skeleton
    return section


