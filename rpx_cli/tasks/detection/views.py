"""The views of ``rpx eval detection`` (:mod:`rpx_cli.tasks.detection` has the task and
its definitions): the operating point of the rows and ``dataset.pooled`` (class-aware
greedy matching, vectorised over frames) with its ``by_confidence`` sweep, Aquarium's
confusion matrix (class-agnostic optimal matching per frame), COCO AP/AR with the curves
behind it, and TIDE's error breakdown. Each takes the frames as one :class:`FrameTable`
and an IoU (:class:`~rpx_cli.ops.geometry.Geometry`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rpx_cli.io.box_table import BoxTable, Frame, FrameTable
from rpx_cli.io.boxes import label_order
from rpx_cli.ops.coco import BOX_PARAMS, RECALL_THRESHOLDS, CocoInput, CocoParams
from rpx_cli.ops.coco import evaluate as coco_evaluate
from rpx_cli.ops.geometry import BOXES, Geometry
from rpx_cli.ops.matching import greedy_match, optimal_match
from rpx_cli.ops.reduce import prf, prf_arrays
from rpx_cli.ops.tide import tide

BACKGROUND = "background"


def vocabulary(stats: list[Frame]) -> list[str]:
    """Every label of the frames, in :func:`~rpx_cli.io.boxes.label_order`."""
    labels = {label for frame in stats for label in (*frame.gt.labels, *frame.pred.labels)}
    return sorted(labels, key=label_order)


def operating_point(table: FrameTable, iou_threshold: float, conf_threshold: float, *,
                    geometry: Geometry = BOXES, matches=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(TP, FP, FN) of every frame: class-aware greedy matching by descending score,
    vectorised over frames (pycocotools' matcher at one IoU threshold)."""
    d_frame, _, hit, miss = matches or greedy(table, iou_threshold, conf_threshold, geometry)
    n = table.n
    tp = np.bincount(d_frame[hit], minlength=n)
    fp = np.bincount(d_frame[miss], minlength=n)
    n_gt = np.bincount(table.gt.frame[table.gt.counted()], minlength=n)
    return tp, fp, n_gt - tp


CONFIDENCE_GRID = np.linspace(0.0, 1.0, 101)


def by_confidence(table: FrameTable, frames: np.ndarray, iou_threshold: float, *,
                  geometry: Geometry = BOXES, matches=None) -> dict[str, Any]:
    """Pooled P/R/F1 over the frames where ``frames`` is True at every threshold of
    :data:`CONFIDENCE_GRID` (a detection counts when score >= threshold). One matching of
    every detection serves all thresholds: walked by descending score, a detection's match
    never depends on those below it."""
    d_frame, d_score, hit, miss = matches or greedy(table, iou_threshold, -np.inf, geometry)
    keep = frames[d_frame]
    hit_scores = np.sort(d_score[hit & keep])
    miss_scores = np.sort(d_score[miss & keep])
    tp = hit_scores.size - np.searchsorted(hit_scores, CONFIDENCE_GRID, side="left")
    fp = miss_scores.size - np.searchsorted(miss_scores, CONFIDENCE_GRID, side="left")
    n_gt = int(np.count_nonzero(table.gt.counted() & frames[table.gt.frame]))
    figures = prf_arrays(tp, fp, n_gt - tp)
    return {"conf_threshold": CONFIDENCE_GRID.tolist(), "tp": tp.tolist(), "fp": fp.tolist(),
            **{key: figures[key].tolist() for key in ("precision", "recall", "f1")}}


def greedy(table: FrameTable, iou_threshold: float, conf_threshold: float,
           geometry: Geometry = BOXES):
    """Every detection with score >= ``conf_threshold``: (frame, score, true positive,
    false positive); a detection on a crowd region, or matched to an ignored GT (taken only
    when no regular GT passes, as COCOeval's gtIgnore), is neither. (With a threshold at or
    below every score, :func:`operating_point` and :func:`by_confidence` can share one.)"""
    gt, pred = table.gt, table.pred.where(table.pred.score >= conf_threshold)
    K = max(len(table.vocabulary), 1)
    d_group = pred.frame * K + pred.label
    order = np.lexsort((np.arange(d_group.size), -pred.score, d_group))
    d_group = d_group[order]
    g_group = gt.frame * K + gt.label
    gorder = np.argsort(g_group, kind="stable")
    # an ignored GT is one whose "area" lies outside the one range: matched once, ignored
    area, ranges = (None, None) if gt.ignore is None else (
        np.where(gt.ignore[gorder], -np.inf, 0.0), np.array([[-1.0, np.inf]]))
    matched, ignored, _ = greedy_match(
        d_group, g_group[gorder], geometry.similarity(pred.shape[order], gt.shape[gorder]),
        min(iou_threshold, 1 - 1e-10), ">=", ties="last", gt_crowd=gt.crowd[gorder],
        gt_area=area, area_ranges=ranges)
    return pred.frame[order], pred.score[order], matched[:, 0] & ~ignored[:, 0], ~matched[:, 0]


def worst_frames(table: FrameTable, f1: np.ndarray, keep: int, iou_threshold: float,
                 conf_threshold: float, max_boxes: int, *, geometry: Geometry = BOXES,
                 objects: FrameTable | None = None,
                 draw: Callable[[np.ndarray], dict[str, list]] | None = None) -> dict[str, Any]:
    """The ``keep`` frames worst by their row's F1 (:func:`operating_point`), each with its
    boxes for the page: ``[x, y, w, h]`` in pixels, labels, crowd flags, scores, and whether
    each matched at the operating point (the rows' greedy matching, redone on these frames
    alone: a frame's matches depend on its own boxes only). At most ``max_boxes`` a side
    (the highest-scored predictions); ``max_boxes`` 0: the frames without boxes (kinds the
    page does not draw). Matches are by ``geometry`` over ``table`` (objects as ids where it
    looks intersections up: their shapes are then ``objects``'); ``draw(shapes)`` says what
    the page draws of a side's objects (default ``{"box": shapes}``: masks add their RLE,
    keypoints their points)."""
    from rpx_cli.ops.reduce import worst_order

    chosen = worst_order(f1, "higher")[:keep]
    section = {"metric": "f1", "direction": "higher", "ranked": int(np.count_nonzero(~np.isnan(f1))),
               "iou_threshold": iou_threshold, "conf_threshold": conf_threshold}
    if not max_boxes:
        return {**section, "frames": [{"index": i, "value": float(f1[i])} for i in chosen.tolist()]}
    sub = table.subset(chosen)
    gt, pred = sub.gt, sub.pred
    kept = np.flatnonzero(pred.score >= conf_threshold)
    K = max(len(sub.vocabulary), 1)
    group = pred.frame[kept] * K + pred.label[kept]
    order = kept[np.lexsort((np.arange(kept.size), -pred.score[kept], group))]  # as _greedy
    g_group = gt.frame * K + gt.label
    gorder = np.argsort(g_group, kind="stable")
    # an ignored GT is matched once, its match ignored (as greedy)
    area, ranges = (None, None) if gt.ignore is None else (
        np.where(gt.ignore[gorder], -np.inf, 0.0), np.array([[-1.0, np.inf]]))
    found = greedy_match(pred.frame[order] * K + pred.label[order], g_group[gorder],
                         geometry.similarity(pred.shape[order], gt.shape[gorder]),
                         min(iou_threshold, 1 - 1e-10), ">=", ties="last", gt_crowd=gt.crowd[gorder],
                         gt_area=area, area_ranges=ranges, return_gt=True)
    pred_hit = np.zeros(len(pred), bool)
    pred_hit[order] = found.matched[:, 0] & ~found.ignored[:, 0]
    gt_hit = np.zeros(len(gt), bool)
    taken = found.gt[:, 0][pred_hit[order]]
    gt_hit[gorder[taken]] = True
    def drawn(side: BoxTable, shown: BoxTable | None, index: np.ndarray) -> dict[str, list]:
        shapes = side.shape[index] if shown is None else shown.shape[side.shape[index]]
        return draw(shapes) if draw is not None else {"box": np.asarray(shapes).tolist()}

    ids = objects is not None and objects is not table
    frames = []
    for k, index in enumerate(chosen.tolist()):
        gi = np.flatnonzero(gt.frame == k)[:max_boxes]
        pi = np.flatnonzero(pred.frame == k)
        pi = pi[np.argsort(-pred.score[pi], kind="stable")][:max_boxes]
        frames.append({"index": index, "value": float(f1[index]),
                       "gt": {"label": [sub.vocabulary[v] for v in gt.label[gi].tolist()],
                              **drawn(gt, objects.gt if ids else None, gi), "crowd": gt.crowd[gi].tolist(),
                              "matched": gt_hit[gi].tolist()},
                       "pred": {"label": [sub.vocabulary[v] for v in pred.label[pi].tolist()],
                                **drawn(pred, objects.pred if ids else None, pi),
                                "score": pred.score[pi].tolist(), "matched": pred_hit[pi].tolist()}})
    return {**section, "frames": frames}


def confusion(table: FrameTable, frames: np.ndarray, iou_threshold: float,
              conf_threshold: float, *, geometry: Geometry = BOXES) -> dict[str, Any]:
    """Aquarium's confusion matrix (rows GT, columns predicted, background last) over the
    frames where ``frames`` is True. The optimal assignment is solved per frame (scipy has
    no batched solver); everything else is flat."""
    n, vocabulary = table.n, table.vocabulary
    K = len(vocabulary)
    pred = table.pred.where((table.pred.score >= conf_threshold) & frames[table.pred.frame])
    gt_all = table.gt.where(frames[table.gt.frame])
    gt, crowd = gt_all.where(gt_all.counted()), gt_all.where(gt_all.crowd)
    ignored = gt_all.where(gt_all.ignored() & ~gt_all.crowd)
    d_bounds, g_bounds = pred.bounds(n), gt.bounds(n)
    det_matched = np.zeros(len(pred), bool)
    gt_matched = np.zeros(len(gt), bool)
    pairs_d, pairs_g = [], []
    both = np.flatnonzero((np.diff(d_bounds) > 0) & (np.diff(g_bounds) > 0))
    matrices = _frame_matrices(geometry, pred, gt, d_bounds, g_bounds, both)
    for i in both.tolist():
        d0, g0 = d_bounds[i], g_bounds[i]
        matrix = next(matrices)
        rows, cols = optimal_match(matrix, iou_threshold, ">=")
        pairs_d.append(rows + d0)
        pairs_g.append(cols + g0)
    if pairs_d:
        matched_d, matched_g = np.concatenate(pairs_d), np.concatenate(pairs_g)
        det_matched[matched_d] = True
        gt_matched[matched_g] = True
    else:
        matched_d = matched_g = np.zeros(0, np.int64)
    lonely = np.flatnonzero(~det_matched)
    lonely = lonely[~_on_crowd(pred, lonely, crowd, n, iou_threshold, geometry)]
    # ignored GT (difficult) take no part in the assignment; an unmatched detection of its
    # class on one (the ordinary IoU >= the threshold) is ignored, not background
    lonely = lonely[~_on_crowd(pred, lonely, ignored, n, iou_threshold, geometry, crowd_iou=False)]
    side = K + 1
    cells = np.concatenate([gt.label[matched_g] * side + pred.label[matched_d],
                            gt.label[~gt_matched] * side + K, K * side + pred.label[lonely]])
    matrix = np.bincount(cells, minlength=side * side).reshape(side, side)
    diagonal = np.diagonal(matrix)[:K].astype(np.float64)
    column = matrix[:, :K].sum(axis=0).astype(np.float64)
    row = matrix[:K, :].sum(axis=1).astype(np.float64)
    scores = prf_arrays(diagonal, column - diagonal, row - diagonal, empty=None)
    precision, recall, f1 = scores["precision"], scores["recall"], scores["f1"]
    overall = prf(int(diagonal.sum()), int(column.sum() - diagonal.sum()), int(row.sum() - diagonal.sum()))
    return {
        "labels": [*vocabulary, BACKGROUND],
        "matrix": matrix.tolist(),
        "per_class": {label: {"precision": float(precision[k]), "recall": float(recall[k]),
                              "f1": float(f1[k]), "support": int(row[k])}
                      for k, label in enumerate(vocabulary)},
        **overall,
    }


def _frame_matrices(geometry: Geometry, pred: BoxTable, gt: BoxTable, d_bounds: np.ndarray,
                    g_bounds: np.ndarray, frames: np.ndarray, chunk: int = 1 << 14):
    """Each frame's (D, G) similarity matrix, in order. Boxes: per frame, by their formula.
    Other geometries: the pairs of many frames in one call of ``geometry.pairs`` (about
    ``chunk`` pairs at a time; OKS costs as many array operations for 700 pairs as for
    200,000), then cut into the frames' matrices."""
    if geometry is BOXES:
        for i in frames.tolist():
            yield geometry.matrix(pred.shape[d_bounds[i]:d_bounds[i + 1]],
                                  gt.shape[g_bounds[i]:g_bounds[i + 1]])
        return
    nd, ng = np.diff(d_bounds)[frames], np.diff(g_bounds)[frames]
    sizes = nd * ng
    start = 0
    while start < frames.size:
        stop = start + max(1, int(np.searchsorted(np.cumsum(sizes[start:]), chunk, side="right")))
        stop = min(stop, frames.size)
        block = frames[start:stop]
        counts = sizes[start:stop]
        first = np.repeat(np.cumsum(counts) - counts, counts)
        local = np.arange(int(counts.sum())) - first
        width = np.repeat(ng[start:stop], counts)
        dt = np.repeat(d_bounds[block], counts) + local // width
        gt_ids = np.repeat(g_bounds[block], counts) + local % width
        values = geometry.pairs(pred.shape[dt], gt.shape[gt_ids])
        offset = 0
        for k in range(block.size):
            size = int(counts[k])
            yield values[offset:offset + size].reshape(int(nd[start + k]), int(ng[start + k]))
            offset += size
        start = stop


def _on_crowd(pred: BoxTable, dets: np.ndarray, crowd: BoxTable, n: int,
              iou_threshold: float, geometry: Geometry = BOXES, *,
              crowd_iou: bool = True) -> np.ndarray:
    """Which of the detections ``dets`` lie on a crowd region of their frame and class
    (intersection over the detection's area >= the threshold): ignored, not background. As
    in COCO, a crowd region excuses detections of its own class only; a detection of another
    class on it is a false positive in every view. ``crowd_iou`` False: the ordinary IoU
    (ignored GT regions)."""
    out = np.zeros(dets.size, bool)
    if not len(crowd) or not dets.size:
        return out
    bounds = crowd.bounds(n)
    frame = pred.frame[dets]
    counts = bounds[frame + 1] - bounds[frame]
    which = np.repeat(np.arange(dets.size), counts)
    first = np.repeat(bounds[frame] - (np.cumsum(counts) - counts), counts)
    regions = first + np.arange(which.size)
    ioa = geometry.pairs(pred.shape[dets[which]], crowd.shape[regions], crowd=crowd_iou)
    same_class = pred.label[dets[which]] == crowd.label[regions]
    out[which[(ioa >= iou_threshold) & same_class]] = True
    return out


def coco(table: FrameTable, *, geometry: Geometry = BOXES, params: CocoParams = BOX_PARAMS,
         area_given: bool = False, noun: str = "box", gt_ignore: np.ndarray | None = None,
         frequency: list[str] | None = None,
         restrict: Callable[[FrameTable, CocoInput], CocoInput] | None = None) -> dict[str, Any]:
    """COCO AP/AR over every detection; None (with a reason) where pycocotools gives -1.
    ``area_given``: the detections' areas for the ranges are the table's (pycocotools'
    ``loadRes`` for masks and keypoints), not the geometry's; ``noun``: what the reasons
    call the objects; ``gt_ignore``: GT ignored though not crowd (keypoints without a
    visible point); ``restrict``: the protocol's say on which objects take part (LVIS'
    federated images); ``frequency``: LVIS' per category (APr, APc, APf)."""
    data = coco_input(table, geometry=geometry, area_given=area_given, gt_ignore=gt_ignore,
                      restrict=restrict)
    result = coco_evaluate(data, params)
    figures = result.stats()
    if frequency is not None:
        for group in ("r", "c", "f"):
            figures[f"AP{group}"] = result.ap_of(np.flatnonzero(np.array(frequency) == group))
    reasons = {name: f"no GT {noun} in this area range" if name not in ("APr", "APc", "APf")
               else f"no GT {noun} of a category of this frequency" for name, value in figures.items()
               if value is None}
    per_class = {}
    for label, ap in zip(table.vocabulary, result.per_category_ap(), strict=True):
        per_class[label] = {"AP": ap} if ap is not None else {
            "AP": None, "reason": f"no GT {noun} of this class (pycocotools: -1)"}
    out: dict[str, Any] = {**figures, "per_class": per_class, "curves": _curves(result, table.vocabulary)}
    if reasons:
        out["null_reasons"] = reasons
    return out


def coco_input(table: FrameTable, *, geometry: Geometry = BOXES, area_given: bool = False,
               gt_ignore: np.ndarray | None = None,
               restrict: Callable[[FrameTable, CocoInput], CocoInput] | None = None) -> CocoInput:
    """The COCO view's objects as :func:`rpx_cli.ops.coco.evaluate` takes them, images in
    COCO image id order (:meth:`FrameTable.coco_image`; options as :func:`coco`)."""
    data = CocoInput(0, len(table.vocabulary), table.gt.frame, table.gt.label, table.gt.shape,
                     table.gt.area, table.gt.crowd, table.pred.frame, table.pred.label,
                     table.pred.shape, table.pred.score, None if geometry is BOXES else geometry,
                     dt_area=table.pred.area if area_given else None, gt_ignore=gt_ignore)
    if restrict is not None:
        data = restrict(table, data)
    image = table.coco_image()
    data.n_images = table.n
    data.gt_image, data.dt_image = image[data.gt_image], image[data.dt_image]
    return data


def _curves(result, vocabulary: list[str]) -> dict[str, Any]:
    """``dataset.coco.curves``: precision (and score) at the 101 recall points, per class and
    over the classes with GT, at IoU 0.5 and averaged over 0.5:0.95; null where pycocotools
    leaves -1."""
    def listed(values: np.ndarray) -> list[float | None]:
        return [None if v != v else v for v in values.tolist()]  # (v != v: NaN, without numpy)

    out: dict[str, Any] = {"recall": RECALL_THRESHOLDS.tolist()}
    for name, curve in result.curves().items():
        out[name] = {
            "per_class": {label: {"precision": listed(curve["precision"][k]),
                                  "score": listed(curve["score"][k])}
                          for k, label in enumerate(vocabulary)},
            "overall": {"precision": listed(curve["overall"])},
        }
    return out


def errors(table: FrameTable, *, geometry: Geometry = BOXES) -> dict[str, Any]:
    """``dataset.errors``: TIDE's breakdown (tidecv, IoU 0.5, background 0.1) on the COCO
    view's objects (every detection, no confidence threshold), the images in tidecv's order:
    the GT file's (per-stem input: stem order), which decides score ties across images."""
    image = table.file_image()
    gt, pred = table.gt, table.pred
    # tidecv knows ignore regions only: an ignored GT (difficult) is one for it
    result = tide(CocoInput(table.n, len(table.vocabulary), image[gt.frame], gt.label, gt.shape,
                            gt.area, gt.crowd | gt.ignored(), image[pred.frame], pred.label,
                            pred.shape, pred.score,
                            None if geometry is BOXES else geometry))
    return {**result.dap, "ap50": result.ap, "counts": result.counts,
            "iou_threshold": 0.5, "background_threshold": 0.1}


def zero_id_matches(table: FrameTable, rows: np.ndarray, similarity_of: Callable[[FrameTable], Geometry],
                    max_dets: int) -> tuple[int, int]:
    """How pycocotools' reading of GT id 0 as "unmatched" would differ: ``(detections that
    match a GT of ``rows`` at IoU 0.5, matches to one over COCO's ten thresholds)``, with
    COCOeval's matching (per image and class, at most ``max_dets`` detections by score, ties
    to the last GT; area "all") on the frames that hold those GT only. pycocotools and lvis
    store the matched GT's id and read 0 as no match: each such match is a false positive
    there (rpx, like hotcoco, counts it)."""
    from rpx_cli.ops.coco import IOU_THRESHOLDS

    flag = np.zeros(len(table.gt), bool)
    flag[rows] = True
    frames = np.unique(table.gt.frame[rows])
    new = np.full(table.n, -1, np.int64)
    new[frames] = np.arange(frames.size)
    renumbered = new[table.gt.frame]
    kept = np.flatnonzero(renumbered >= 0)
    flag = flag[kept[np.argsort(renumbered[kept], kind="stable")]]  # as subset() orders GT
    sub = table.subset(frames)
    geometry, sub = similarity_of(sub)
    gt, pred = sub.gt, sub.pred
    K = max(len(sub.vocabulary), 1)
    d_group = pred.frame * K + pred.label
    order = np.lexsort((np.arange(d_group.size), -pred.score, d_group))
    rank = np.arange(order.size) - np.searchsorted(d_group[order], d_group[order], side="left")
    order = order[rank < max_dets]
    g_group = gt.frame * K + gt.label
    gorder = np.argsort(g_group, kind="stable")
    found = greedy_match(d_group[order], g_group[gorder],
                         geometry.similarity(pred.shape[order], gt.shape[gorder]),
                         np.minimum(IOU_THRESHOLDS, 1 - 1e-10), ">=", ties="last",
                         gt_crowd=gt.crowd[gorder], return_gt=True)
    hits = found.matched & flag[gorder][np.maximum(found.gt, 0)]
    return int(np.count_nonzero(hits[:, 0])), int(np.count_nonzero(hits))
