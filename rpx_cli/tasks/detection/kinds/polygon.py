"""Multi-polygons (``--geometry polygon``), repaired as Aquarium does; needs shapely >= 2
(the ``rpx-eval[geometry]`` extra).

An object is ``"polygons": [part, ...]``, a part a ring ``[[x, y], ...]`` or
``{"exterior": ring, "holes": [ring, ...]}`` (:mod:`rpx_cli.io.polygon_set`). Each part
becomes a polygon, an invalid one (a bowtie, a self-touching corner) is repaired with
``make_valid`` (never ``buffer(0)``, which drops a lobe), lines and points left by
collapsed rings are dropped and the parts are unioned (:mod:`rpx_cli.ops.polygons`); each
row counts ``n_repaired``, the objects that needed it. Two are compared by IoU =
``area(A ∩ B) / area(A ∪ B)`` (over the detection's own area for a crowd region), 0 when the
union is empty; the area is the repaired polygon's. Equal to shapely on the same shapes to
1e-9. No TIDE.

Intersections are computed per pair of files, in the workers (shapely's time is per pair of
polygons), and kept with the frame — only where a view can tell, so that shapely intersects
as few pairs as it can (each costs tens of microseconds):

- pairs of the same class whose IoU can reach the lowest threshold a greedy view or COCO
  tests (an upper bound from the areas and the bounding boxes; intersection over the
  detection's area for a crowd region): the greedy matching, the crowd test and COCO only
  compare a detection with GT of its class, and only above a threshold;
- of the others, those Aquarium's class-agnostic assignment needs: it is solved with the
  upper bounds in their place and made exact where it uses one, until it uses none
  (:func:`rpx_cli.ops.geometry.settled_entries`).

Every pair left out reads as IoU 0, which changes no view's result (the tests compare every
view with loops that compute every IoU).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.box_table import Frame, Overlaps
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.objects import BOX, QUAD, Objects
from rpx_cli.io.objects import POLYGON as POLYGON_FORM
from rpx_cli.io.shapes import POLYGON
from rpx_cli.ops.geometry import OverlapTable, require_shapely, settled_entries
from rpx_cli.tasks.base import MetricInfo, Params
from rpx_cli.tasks.detection.frames import frame_stat
from rpx_cli.tasks.detection.parts import object_attributes, register_kind
from rpx_cli.tasks.detection.shapes import ShapeKind
from rpx_cli.tasks.stats import Stat


def _wkb_to_json(shapes: np.ndarray) -> list[str]:
    return [wkb.hex() for wkb in shapes]


def _wkb_from_json(values: list[str]) -> np.ndarray:
    out = np.empty(len(values), object)
    out[:] = [bytes.fromhex(text) for text in values]
    return out


@register_kind
class Polygon(ShapeKind):
    name, rank, iou_type, geometry = "polygon", 2, "bbox", "polygon"
    title = "polygons"
    layout = POLYGON
    codec = (_wkb_to_json, _wkb_from_json)  # a polygon travels as WKB bytes (hex in a part)
    forms = (QUAD, POLYGON_FORM, BOX)

    def rpx_objects(self, objects: Objects, path: str) -> list[dict[str, Any]]:
        """Quads, rings and boxes (their four corners) as ``"polygons"``."""
        out = []
        for i in range(len(objects)):
            if objects.form == QUAD:
                rings = [objects.quads[i].tolist()]
            elif objects.form == POLYGON_FORM:
                rings = [ring.tolist() for ring in objects.polygons[i]]
            else:
                x1, y1, x2, y2 = objects.boxes[i].tolist()
                rings = [[[x1, y1], [x2, y1], [x2, y2], [x1, y2]]]
            out.append({"polygons": rings, **object_attributes(objects, i)})
        return out

    def check(self, params: Params) -> None:
        super().check(params)
        require_shapely()

    def metric_info(self, info: dict[str, MetricInfo], params: Params) -> None:
        info["n_repaired"] = MetricInfo(
            "none", "objects (GT and predictions) whose polygons needed a repair: an invalid "
            "ring repaired with make_valid, lines and points left by collapsed rings dropped, "
            "overlapping parts unioned")

    def statistics(self) -> tuple[Stat, ...]:
        return (frame_stat(self.codec), Stat("n_repaired"))

    def aggregate(self, stats: Any) -> dict[str, Any]:
        return {"n_repaired": int(np.nansum(stats["n_repaired"]))}

    def pair(self, pred: Boxes, gt: Boxes, params: Params | None, *, pred_path: str | None = None,
             gt_path: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
        """Polygons repaired, their areas, and their intersections where a view can tell
        (``params`` None: every pair)."""
        from rpx_cli.ops import polygons

        pred_shapes, pred_area, pred_repaired = _prepared(pred, pred_path)
        gt_shapes, gt_area, gt_repaired = _prepared(gt, gt_path)
        try:
            d, g, inter = _polygon_intersections(pred, gt, pred_shapes, gt_shapes, pred_area,
                                                 gt_area, params)
        except InputError as exc:
            raise InputError(f"{exc} ({pred_path} against {gt_path})", path=gt_path) from None
        repaired = int(pred_repaired.sum() + gt_repaired.sum())
        frame = Frame(replace(gt, shape=polygons.portable(gt_shapes),
                              area=np.where(np.isnan(gt.area), gt_area, gt.area)),
                      replace(pred, shape=polygons.portable(pred_shapes), area=pred_area),
                      overlaps=Overlaps(d, g, inter, pred_area, gt_area))
        return {"frame": frame, "n_repaired": repaired}, {"n_repaired": repaired}

    def overlaps(self, frames: Any, table: Any) -> OverlapTable:
        """The intersections the frames keep (computed in the workers)."""
        return OverlapTable.from_frames(frames)


def _prepared(boxes: Boxes, path: str | None) -> tuple[Any, np.ndarray, np.ndarray]:
    """``polygons.prepare`` of one file's objects; a repair too costly to run (an object
    whose rings cross themselves thousands of times) is that file's input error."""
    from rpx_cli.ops import polygons

    try:
        return polygons.prepare(boxes.shape)
    except ValueError as exc:
        if getattr(exc, "obj", None) is None:
            raise
        raise InputError(f"object {exc.obj}: {exc}", path=path) from None


def _polygon_intersections(pred: Boxes, gt: Boxes, pred_shapes, gt_shapes, pred_area: np.ndarray,
                           gt_area: np.ndarray, params: Params | None):
    """``(pred index, gt index, intersection area)`` of the pairs a frame keeps (see
    :meth:`Polygon.pair`)."""
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
