"""``rpx eval detection --geometry rotated|polygon|cuboid``: what the detection task does
with shapes other than boxes, beside :mod:`rpx_cli.tasks.detection`.

- :func:`evaluate_shapes` (per pair, in the workers): shapes made ready (polygons repaired
  and their intersections computed where a view's result can depend on them);
- :func:`overlap_table` (in the summary): every frame's intersections as the
  :class:`~rpx_cli.ops.geometry.OverlapTable` the views look their IoU up in — kept with the
  frames (polygons) or computed for all frames at once (rotated boxes, cuboid footprints);
- :func:`encode_shapes_frame` / :func:`decode_shapes_frame`: a frame in a ``--shard`` part.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.box_table import Frame, FrameTable, Overlaps
from rpx_cli.io.boxes import Boxes
from rpx_cli.ops.geometry import OverlapTable, kernel, settled_entries

Params = Mapping[str, Any]


def encode_shapes_frame(frame: Frame, geometry: str) -> dict[str, Any]:
    """A frame of ``geometry`` objects for a ``--shard`` part: the shapes exactly (float64
    repr, WKB bytes as hex) and, for polygons, the intersections."""
    encode = _SHAPE_CODECS[geometry][0]
    out = {"gt": frame.gt.as_json(encode), "pred": frame.pred.as_json(encode), "image_id": frame.image_id}
    if frame.overlaps is not None:
        out["overlaps"] = frame.overlaps.as_json()
    return out


def decode_shapes_frame(data: dict[str, Any], geometry: str) -> Frame:
    """The inverse of :func:`encode_shapes_frame` (no shapely needed)."""
    decode = _SHAPE_CODECS[geometry][1]
    overlaps = data.get("overlaps")
    return Frame(Boxes.from_json(data["gt"], decode), Boxes.from_json(data["pred"], decode),
                 data.get("image_id"), None if overlaps is None else Overlaps.from_json(overlaps))


def _rectangles_to_json(shapes: np.ndarray) -> list[list[float]]:
    return shapes.tolist()


def _rectangles_from_json(values: list[list[float]]) -> np.ndarray:
    return np.asarray(values, np.float64).reshape(-1, 5)


def _wkb_to_json(shapes: np.ndarray) -> list[str]:
    return [wkb.hex() for wkb in shapes]


def _wkb_from_json(values: list[str]) -> np.ndarray:
    out = np.empty(len(values), object)
    out[:] = [bytes.fromhex(text) for text in values]
    return out


# how a --shard part writes each geometry's shapes (exact: float64 repr, WKB bytes)
_SHAPE_CODECS = {"rotated": (_rectangles_to_json, _rectangles_from_json),
                 "cuboid": (_rectangles_to_json, _rectangles_from_json),
                 "polygon": (_wkb_to_json, _wkb_from_json)}



def evaluate_shapes(pred: Boxes, gt: Boxes, geometry: str, params: Params | None = None, *,
                    pred_path: str | None = None, gt_path: str = "") -> tuple[Frame, int]:
    """One pair under a geometry other than boxes: shapes made ready (polygons repaired) and
    their areas; the frame to keep holds the shapes in their portable form. Returns
    ``(frame, objects repaired)``.

    Rectangles' intersections are computed later for all frames at once
    (:func:`overlap_table`). Polygons' are computed here, in the workers (shapely's time is
    per pair of polygons), and kept with the frame — only where a view can tell, so that
    shapely intersects as few pairs as it can (each costs tens of microseconds):

    - pairs of the same class whose IoU can reach the lowest threshold a greedy view or
      COCO tests (an upper bound from the areas and the bounding boxes; intersection over
      the detection's area for a crowd region): the greedy matching, the crowd test and
      COCO only compare a detection with GT of its class, and only above a threshold;
    - of the others, those Aquarium's class-agnostic assignment needs: it is solved with
      the upper bounds in their place and made exact where it uses one, until it uses none
      (:func:`rpx_cli.ops.geometry.settled_entries`).

    Every pair left out reads as IoU 0, which changes no view's result (the tests compare
    every view with loops that compute every IoU). ``params`` None: every pair."""
    shapes = kernel(geometry)
    pred_shapes, pred_area, pred_repaired = _prepared(shapes, pred, pred_path)
    gt_shapes, gt_area, gt_repaired = _prepared(shapes, gt, gt_path)
    if not shapes.PER_FRAME:
        return Frame(replace(gt, shape=gt_shapes), replace(pred, shape=pred_shapes)), 0
    try:
        d, g, inter = _polygon_intersections(pred, gt, pred_shapes, gt_shapes, pred_area, gt_area,
                                             params)
    except InputError as exc:
        raise InputError(f"{exc} ({pred_path} against {gt_path})", path=gt_path) from None
    repaired = 0 if pred_repaired is None else int(pred_repaired.sum() + gt_repaired.sum())
    frame = Frame(replace(gt, shape=shapes.portable(gt_shapes),
                          area=np.where(np.isnan(gt.area), gt_area, gt.area)),
                  replace(pred, shape=shapes.portable(pred_shapes), area=pred_area),
                  overlaps=Overlaps(d, g, inter, pred_area, gt_area))
    return frame, repaired


def _prepared(shapes: Any, boxes: Boxes, path: str | None) -> tuple[Any, np.ndarray, Any]:
    """``shapes.prepare`` of one file's objects; a repair too costly to run (an object
    whose rings cross themselves thousands of times) is that file's input error."""
    try:
        return shapes.prepare(boxes.shape)
    except ValueError as exc:
        if getattr(exc, "obj", None) is None:
            raise
        raise InputError(f"object {exc.obj}: {exc}", path=path) from None


def _polygon_intersections(pred: Boxes, gt: Boxes, pred_shapes, gt_shapes, pred_area: np.ndarray,
                           gt_area: np.ndarray, params: Params | None):
    """``(pred index, gt index, intersection area)`` of the pairs a frame keeps (see
    :func:`evaluate_shapes`)."""
    from rpx_cli.ops import polygons

    d, g, bound = polygons.candidates(pred_shapes, gt_shapes)
    if params is None:
        exact = np.ones(d.size, bool)
    else:
        # same class, and an upper bound of the IoU (of the intersection over the detection's
        # area, for a crowd region) that reaches the lowest threshold a greedy view or COCO
        # tests (below it a pair never matches: reading it as 0 changes nothing)
        labels = {label: k for k, label in enumerate(dict.fromkeys([*pred.labels, *gt.labels]))}
        pred_code = np.fromiter(map(labels.__getitem__, pred.labels), np.int64, count=len(pred))
        gt_code = np.fromiter(map(labels.__getitem__, gt.labels), np.int64, count=len(gt))
        reach = np.where(gt.crowd[g], bound / pred_area[d],
                         bound / (pred_area[d] + gt_area[g] - bound)) * (1 + 1e-9)
        exact = (pred_code[d] == gt_code[g]) & (reach >= min(params["iou_threshold"], 0.5))
    inter = bound.copy()  # an upper bound where not exact
    inter[exact] = polygons.intersection_areas(pred_shapes[d[exact]], gt_shapes[g[exact]])
    # the confusion matrix (every family runs unless --metrics says otherwise) assigns across
    # classes; at threshold 0 even pairs of IoU 0 fill cells, so all are computed there
    confusion_wanted = params is not None and "confusion" in (params.get("metrics") or ("confusion",))
    if confusion_wanted and not exact.all():
        if params["iou_threshold"] <= 0:
            rest = np.flatnonzero(~exact)
            inter[rest] = polygons.intersection_areas(pred_shapes[d[rest]], gt_shapes[g[rest]])
            exact[:] = True
        else:
            exact = _settle_confusion(pred, gt, d, g, inter, exact, pred_shapes, gt_shapes,
                                      pred_area, gt_area, params)
    keep = exact & (inter > 0)
    return d[keep], g[keep], inter[keep]


def _settle_confusion(pred: Boxes, gt: Boxes, d, g, inter, exact, pred_shapes, gt_shapes, pred_area,
                      gt_area, params: Params) -> np.ndarray:
    """The pairs of different classes the frame's confusion assignment needs exactly: the
    matrix :func:`confusion` builds (detections at or above the confidence threshold, GT
    that is not a crowd region), the bounded pairs settled by
    :func:`~rpx_cli.ops.geometry.settled_entries`."""
    from rpx_cli.ops import polygons

    row = np.full(len(pred), -1, np.int64)
    kept = np.flatnonzero(pred.scores >= params["conf_threshold"]) if len(pred) else np.zeros(0, np.int64)
    row[kept] = np.arange(kept.size)
    col = np.full(len(gt), -1, np.int64)
    regular = np.flatnonzero(~gt.crowd)
    col[regular] = np.arange(regular.size)
    inside = np.flatnonzero((row[d] >= 0) & (col[g] >= 0))
    if not inside.size or exact[inside].all():
        return exact
    union = pred_area[d[inside]] + gt_area[g[inside]] - inter[inside]
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(inter[inside] > 0, inter[inside] / union, 0.0)

    def compute(which: np.ndarray) -> np.ndarray:
        k = inside[which]
        inter[k] = polygons.intersection_areas(pred_shapes[d[k]], gt_shapes[g[k]])
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(inter[k] > 0, inter[k] / (pred_area[d[k]] + gt_area[g[k]] - inter[k]), 0.0)

    settled = settled_entries(row[d[inside]], col[g[inside]], (kept.size, regular.size), iou,
                              exact[inside], compute)
    exact = exact.copy()
    exact[inside] = settled
    return exact


def overlap_table(geometry: str, frames: list[Frame], table: FrameTable) -> OverlapTable:
    """The intersections of every frame's (prediction, GT) pairs: kept with each frame
    (polygons) or computed here for all frames at once (rectangles), ids numbered as
    ``table`` lays the objects out."""
    if geometry == "polygon":
        return OverlapTable.from_frames(frames)
    shapes = kernel(geometry)
    pred, gt = shapes.prepare(table.pred.shape)[0], shapes.prepare(table.gt.shape)[0]
    d, g, inter = shapes.table_overlaps(pred, gt, table.pred.frame, table.gt.frame, table.n)
    return OverlapTable(shapes.area(pred), shapes.area(gt), d, g, inter)
