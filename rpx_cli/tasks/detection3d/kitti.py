"""``--protocol kitti``: the KITTI object benchmark as
``kitti_object_eval_python`` (OpenPCDet / mmdet3d, checked by its authors against the
official ``evaluate_object.cpp``) scores it.

- **Classes** Car, Pedestrian, Cyclist by default (``--class-names`` may add Van,
  Person_sitting and Truck, the other classes the reference has thresholds for); names
  compare lowercased. ``Van`` GT are ignored for Car and ``Person_sitting`` GT for
  Pedestrian (neither a TP nor a miss); ``DontCare`` GT are don't-care regions: a 2D
  detection left unmatched that covers one by more than the class's 2D threshold (over its
  own area) is not a false positive.
- **Difficulties** easy / moderate / hard: a GT counts when its 2D box is taller than 40 /
  25 / 25 px (a box exactly 40 px tall is not easy), its occlusion at most 0 / 1 / 2 and
  its truncation at most 0.15 / 0.3 / 0.5; other GT of the class are ignored. A detection
  lower than the level's minimum height is ignored whatever its class.
- **Overlaps** ``bbox`` (2D IoU), ``bev`` (the ground-plane footprints' IoU), ``3d``
  (footprint intersection × height overlap over the union of volumes; boxes rotate about
  the vertical axis only), each strictly above the class's threshold (``--kitti-iou
  strict``: Car / Van / Truck 0.7, Pedestrian / Person_sitting / Cyclist 0.5 everywhere;
  ``loose`` relaxes ``bev`` and ``3d`` to 0.5 / 0.25 / 0.25, and Truck's 2D to 0.5, as the
  reference's second table). ``aos``: the 2D matching's TPs weighted by ``(1 + cos Δα) / 2``;
  computed when the predictions carry orientations (the first prediction's ``alpha`` is not
  −10, the reference's test), else null.
- **AP** with 40 recall positions (``AP_R40``, the default) or 11 (``--recall-points 11``),
  as a fraction in [0, 1] (the reference prints percent); a class without a valid GT at a
  difficulty has AP 0, as the reference. The matching and sampling rules are in
  :mod:`rpx_cli.ops.kitti_eval`, the overlaps in :mod:`rpx_cli.ops.kitti_overlaps`.

Keys: ``dataset.kitti.<Class>.<metric>_<difficulty>`` (``Car.3d_moderate``) with
``n_gt_<difficulty>`` (the valid GT), and ``dataset.kitti.mAP_<metric>_<difficulty>``, the
mean over the evaluated classes. Rows (per frame, summed over the classes): ``tp``, ``fp``,
``fn`` of the 3D matching at the moderate difficulty and the class thresholds, counting
predictions scored ``>= --conf-threshold``, with ``n_gt`` (valid moderate GT), ``n_pred``,
``precision``, ``recall``, ``f1``.

Inputs: KITTI label folders (:mod:`rpx_cli.io.kitti_labels`; ``--pred-format kitti``), or
rpx 3D boxes (``--pred-format rpx``) that carry ``bbox_2d`` ``[x1, y1, x2, y2]``, and on GT
``truncated`` and ``occluded`` (``alpha`` optional: a GT's is derived from its location,
a prediction without one has none), converted to the camera frame as mmdet3d does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.errors import ParameterError
from rpx_cli.io.kitti_labels import DONT_CARE, NO_ALPHA, KittiObjects, kitti_from_box_objects
from rpx_cli.ops import kitti_benchmark as kb
from rpx_cli.ops import kitti_eval as ke
from rpx_cli.ops import kitti_overlaps as ko
from rpx_cli.ops.reduce import mean_present, prf, prf_arrays, worst_order
from rpx_cli.params.pictures import MAX_FRAME_BOXES
from rpx_cli.params.values import Band
from rpx_cli.tasks.base import MetricInfo, Params
from rpx_cli.tasks.detection3d.params import load_names
from rpx_cli.tasks.detection3d.protocol import Protocol, register_protocol

NAME = "kitti"
CLASSES = ("Car", "Pedestrian", "Cyclist", "Van", "Person_sitting", "Truck")
DEFAULT_CLASSES = ("Car", "Pedestrian", "Cyclist")
NEIGHBOURS = {"Car": "Van", "Pedestrian": "Person_sitting"}
# the reference's two overlap tables: metric -> threshold per class (in CLASSES order)
OVERLAPS = {
    "strict": {"bbox": (0.7, 0.5, 0.5, 0.7, 0.5, 0.7), "bev": (0.7, 0.5, 0.5, 0.7, 0.5, 0.7),
               "3d": (0.7, 0.5, 0.5, 0.7, 0.5, 0.7)},
    "loose": {"bbox": (0.7, 0.5, 0.5, 0.7, 0.5, 0.5), "bev": (0.5, 0.25, 0.25, 0.5, 0.25, 0.5),
              "3d": (0.5, 0.25, 0.25, 0.5, 0.25, 0.5)},
}
RECALL_POINTS = (40, 11)
METRICS = ("bbox", "bev", "3d", "aos")
LEVELS = tuple(level.name for level in ke.DIFFICULTIES)
ROWS_AT = ("3d", "moderate")  # the rows' matching


KITTI_OPTIONS = ("recall_points", "kitti_iou")


@register_protocol
class Kitti(Protocol):
    """The KITTI object benchmark (this module's docstring)."""

    name = NAME
    own = KITTI_OPTIONS
    families = ("rows", "kitti")

    def resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        out = dict(params)
        out["class_names"] = class_names(load_names(out.get("class_names") or None))
        out["recall_points"] = int(out["recall_points"] or RECALL_POINTS[0])
        out["kitti_iou"] = out["kitti_iou"] or "strict"
        out["conf_threshold"] = float(out["conf_threshold"])
        out["max_boxes"] = int(out["max_boxes"])
        return out

    def check(self, params: Params) -> None:
        names = params["class_names"]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ParameterError(f"--class-names repeats {', '.join(repeated)}")

    def read(self, fmt: Any, data: bytes | memoryview, path: str, *, prediction: bool,
             params: Params) -> KittiObjects:
        return fmt.kitti_objects(data, path, prediction=prediction, params=params)

    def from_objects(self, objects: list[Any], path: str, *, prediction: bool, params: Params,
                     where: str) -> KittiObjects:
        return kitti_from_box_objects(objects, path, prediction=prediction,
                                      box_origin=params["box_origin"], where=where)

    def empty(self) -> KittiObjects:
        return KittiObjects.empty(with_scores=True)

    def summarize(self, pairs: list[Any], params: Params, bands: list[Band],
                  wanted: set[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        return summarize(pairs, params, wanted)

    def metric_info(self, info: Mapping[str, MetricInfo], params: Params,
                    bands: list[Band]) -> dict[str, MetricInfo]:
        out = {key: info[key] for key in ("precision", "recall", "f1")}
        out.update({
            "tp": MetricInfo("higher", "row: predictions (score >= conf threshold) matched in 3D "
                             "at the moderate difficulty and the class IoU thresholds"),
            "fp": MetricInfo("lower", "row: unmatched predictions of the evaluated classes "
                             "(score >= conf threshold; at least 25 px tall)"),
            "fn": MetricInfo("lower", "row: valid moderate GT left unmatched"),
            "n_gt": MetricInfo("none", "valid GT at the moderate difficulty (dataset: every GT "
                               "box but DontCare)"),
            "n_pred": MetricInfo("none", "predictions of the evaluated classes (rows: score >= "
                                 "conf threshold; dataset: every prediction)")})
        points = f"AP_R{params['recall_points']}"
        for metric in METRICS:
            for level in LEVELS:
                what = "orientation similarity (AOS)" if metric == "aos" else f"{metric} {points}"
                out[f"{metric}_{level}"] = MetricInfo("higher", f"per class: {what}, {level}")
                out[f"mAP_{metric}_{level}"] = MetricInfo("higher", f"mean over the classes of "
                                                          f"{what}, {level}")
        for level in LEVELS:
            out[f"n_gt_{level}"] = MetricInfo("none", f"per class: valid GT at {level}")
        return out


def class_names(given: list[str] | None) -> list[str]:
    """The evaluated classes, checked against the reference's table (any case: ``car`` is
    ``Car``, as the reference compares names lowercased)."""
    canonical = {name.lower(): name for name in CLASSES}
    names = [canonical.get(name.lower(), name) for name in given] if given else list(DEFAULT_CLASSES)
    unknown = [name for name in names if name not in CLASSES]
    if unknown:
        raise ParameterError(f"--protocol kitti evaluates {', '.join(CLASSES)} (the classes "
                             f"the reference has IoU thresholds for), not {', '.join(unknown)}")
    return names


def summarize(pairs: list[Any], params: Params,
              wanted: set[str] | frozenset[str] = frozenset({"rows", "kitti"})):
    """``({"aggregate", "dataset"[, "warnings"]}, rows)`` of every frame's (GT, prediction)
    objects in stem order; the APs when ``wanted`` holds ``kitti``, the rows' counts always."""
    n = len(pairs)
    classes = class_names(params["class_names"])
    det_objects = [pair.pred for pair in pairs]
    vocabulary = {name.lower(): k for k, name in enumerate(CLASSES)}
    gt, gt_geo = _table([pair.gt for pair in pairs], vocabulary, scores=False)
    det, det_geo = _table(det_objects, vocabulary, scores=True)
    table_name = params["kitti_iou"]
    specs = [kb.ClassSpec(name, vocabulary[name.lower()],
                          vocabulary[NEIGHBOURS[name].lower()] if name in NEIGHBOURS else -1,
                          {m: OVERLAPS[table_name][m][CLASSES.index(name)] for m in kb.METRICS})
             for name in classes]
    overlaps = kb.overlaps(gt, det, gt_geo, det_geo, n)
    dc = np.flatnonzero(gt.dontcare)
    dontcare = ko.dontcare_cover(det.bbox, det.frame, gt.bbox[dc], gt.frame[dc], n)
    with_alpha = bool(next((objects.alpha[0] != NO_ALPHA for objects in det_objects
                            if len(objects)), False))
    dataset: dict[str, Any] = {"classes": classes, "n_gt": int(np.count_nonzero(~gt.dontcare)),
                               "n_pred": int(det.frame.size)}
    rows_at = (*ROWS_AT, params["conf_threshold"])
    if "kitti" in wanted:
        table, frames = kb.benchmark(gt, det, overlaps, dontcare, specs, params["recall_points"],
                                     with_alpha, rows_at, n)
        kitti: dict[str, Any] = {name: table[name] for name in classes}
        for metric in METRICS:
            for level in LEVELS:
                kitti[f"mAP_{metric}_{level}"] = dataset[f"mAP_{metric}_{level}"] = mean_present(
                    [table[name][f"{metric}_{level}"] for name in classes])
        dataset["kitti"] = kitti
    else:
        frames = kb.frame_counts(gt, det, overlaps, specs, rows_at, n)
    moderate = ke.DIFFICULTIES[1]
    n_gt = np.zeros(n, np.int64)
    for spec in specs:
        valid = ke.ignored_gt(gt, spec.code, spec.neighbour, moderate) == 0
        n_gt += np.bincount(gt.frame[valid], minlength=n)
    evaluated = np.isin(det.cls, [spec.code for spec in specs])
    n_pred = np.bincount(det.frame[evaluated & (det.score >= params["conf_threshold"])], minlength=n)
    figures = prf_arrays(frames.tp, frames.fp, frames.fn)
    columns = {"tp": frames.tp.tolist(), "fp": frames.fp.tolist(), "fn": frames.fn.tolist(),
               "n_gt": n_gt.tolist(), "n_pred": n_pred.tolist(),
               **{k: figures[k].tolist() for k in ("precision", "recall", "f1")}}
    rows = [{key: values[i] for key, values in columns.items()} for i in range(n)]
    totals = [int(x.sum()) for x in (frames.tp, frames.fp, frames.fn)]
    dataset["pooled"] = {**prf(*totals), "tp": totals[0], "fp": totals[1], "fn": totals[2]}
    aggregate = {"n_samples": n, **{k: mean_present(figures[k]) for k in ("precision", "recall", "f1")}}
    sections: dict[str, Any] = {"aggregate": aggregate, "dataset": dataset}
    if params.get("keep_worst"):
        sections["worst_frames"] = worst_frames(gt, gt_geo, det, det_geo, frames, figures["f1"],
                                                specs, params)
    if not with_alpha and det.frame.size and "kitti" in wanted:
        sections["warnings"] = ["the predictions carry no orientation (alpha -10 on the first "
                                "one, the reference's test): aos is null"]
    return sections, rows


def worst_frames(gt: ke.Table, gt_geo: kb.Geometry, det: ke.Table, det_geo: kb.Geometry,
                 frames: kb.FrameCounts, f1: np.ndarray, specs: list[kb.ClassSpec],
                 params: Params) -> dict[str, Any]:
    """The ``--keep-worst`` frames worst by their row's F1, each with the boxes of the
    evaluated classes as the page's bird's-eye view draws them (rpx's frame: footprints
    ``[x, y, w, l, yaw]`` of the camera boxes converted as :func:`~rpx_cli.io.kitti_labels.to_boxes3d`
    does), and whether each is a TP of the rows' matching."""
    names = {spec.code: spec.name for spec in specs}
    keep_det = np.isin(det.cls, list(names)) & (det.score >= params["conf_threshold"])
    keep_gt = np.isin(gt.cls, list(names))
    out = []
    for index in worst_order(f1, "higher")[:params["keep_worst"]].tolist():
        gi = np.flatnonzero((gt.frame == index) & keep_gt)[:MAX_FRAME_BOXES]
        di = np.flatnonzero((det.frame == index) & keep_det)
        di = di[np.argsort(-det.score[di], kind="stable")][:MAX_FRAME_BOXES]
        out.append({"index": index, "value": float(f1[index]),
                    "gt": _footprints(gt, gt_geo, gi, names) | {"matched": frames.gt_tp[gi].tolist()},
                    "pred": _footprints(det, det_geo, di, names) | {
                        "score": det.score[di].tolist(), "matched": frames.det_tp[di].tolist()}})
    return {"metric": "f1", "direction": "higher", "ranked": int(f1.size),
            "match": "3D IoU above the class threshold, moderate",
            "conf_threshold": params["conf_threshold"], "frames": out}


def _footprints(table: ke.Table, geo: kb.Geometry, index: np.ndarray,
                names: dict[int, str]) -> dict[str, Any]:
    x, z = geo.location[index, 0], geo.location[index, 2]
    boxes = np.column_stack([z, -x, geo.hwl[index, 1], geo.hwl[index, 2],
                             -geo.rotation_y[index] - np.pi / 2])
    return {"label": [names[k] for k in table.cls[index].tolist()], "box": boxes.tolist()}


def _table(objects: list[KittiObjects], vocabulary: dict[str, int],
           scores: bool) -> tuple[ke.Table, kb.Geometry]:
    """Every frame's objects flattened in frame order, names coded lowercased."""
    counts = np.fromiter(map(len, objects), np.int64, count=len(objects))
    frame = np.repeat(np.arange(len(objects)), counts)
    nonempty = [o for o in objects if len(o)]

    def cat(get, shape, dtype=np.float64):
        arrays = [get(o) for o in nonempty]
        return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(shape, dtype)

    # each frame's label codes -> global, through one lookup over every frame's names
    offsets = np.repeat(np.cumsum([0] + [len(o.names) for o in objects])[:-1], counts)
    names = [name for o in objects for name in o.names]
    local = cat(lambda o: o.label, (0,), np.int64) + offsets
    codes = np.array([vocabulary.get(name.lower(), -1) for name in names], np.int64)[local] \
        if names else np.zeros(0, np.int64)
    dontcare = np.array([name == DONT_CARE for name in names], bool)[local] \
        if names else np.zeros(0, bool)
    table = ke.Table(frame, codes, dontcare, cat(lambda o: o.truncated, (0,)),
                     cat(lambda o: o.occluded, (0,), np.int64), cat(lambda o: o.alpha, (0,)),
                     cat(lambda o: o.bbox, (0, 4)),
                     cat(lambda o: o.score, (0,)) if scores else None)
    geometry = kb.Geometry(cat(lambda o: o.location, (0, 3)), cat(lambda o: o.hwl, (0, 3)),
                           cat(lambda o: o.rotation_y, (0,)))
    return table, geometry
