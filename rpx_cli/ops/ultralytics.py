"""What ``yolo val`` prints: Ultralytics' ``match_predictions`` and ``ap_per_class`` /
``compute_ap`` (``ultralytics.utils.metrics``) over every image and class at once.

**Matching**, per image, at each IoU threshold of ``torch.linspace(0.5, 0.95, 10)`` (float32
values, compared with ``>=``), detections in the image's order — by descending confidence
(the order NMS hands them over; rpx sorts each image's detections so, ties in file order) —
against the GT of their class, one of two rules by Ultralytics' release:

- ``unique`` (up to 8.4.175, the YOLOv8/11 releases): by IoU, not by confidence — every
  (GT, detection) pair passing the threshold, sorted by IoU descending; each detection keeps
  its best GT (``np.unique`` over detections), then each GT keeps, among the detections that
  chose it, the *first in the image's order* (``np.unique`` over the GT of the
  detection-ordered pairs): a detection whose best GT went to another is wrong even where a
  second GT would pass. Which of two GT at an equal IoU a detection keeps is whatever
  numpy's (unstable, SIMD) ``argsort`` makes of the image's whole list of pairs: in an
  image where that happens, the validator's own steps are run on the image's IoU matrix
  (:func:`literal_unique`), elsewhere the outcome needs no sort;
- ``greedy`` (8.4.176 on): detections in order each take the best unclaimed GT of their class
  (ties: the first), correct when its IoU passes — COCO's greedy rule at every threshold.

Ultralytics has no ignored GT; rpx's ignored GT (difficult, crowd regions) are matched as
COCO's ``gtIgnore`` is: a detection that matches no regular GT but passes one of them is left
out of that threshold's counts, and they are never missed.

**AP**, ``ap_per_class``: every detection sorted by ``np.argsort(-conf)`` (numpy's default
kind, on the images' detections concatenated in order: Ultralytics' own call, so ties fall
as in it); classes are those with GT (``np.unique(target_cls)``); per class the cumulative
TP/FP, ``recall = tpc / (n_l + 1e-16)``, ``precision = tpc / (tpc + fpc)``; AP by
``compute_ap``: sentinels ``[0, recall, 1]`` / ``[1, precision, 0]``, the precision envelope,
then ``np.trapezoid(np.interp(linspace(0, 1, 101), mrec, mpre))`` (its ``interp`` method).
(From 8.4.37 the curve gets one more point, precision 0 at the last recall, so AP no longer
counts the ramp from there to recall 1: ``--ultralytics-version`` picks the release's rules,
:class:`Rules`.) ``mAP50`` / ``mAP50_95``: the means over classes with GT of AP at 0.5 and over the ten
thresholds (a class without detections scores 0). ``precision`` / ``recall``: per class the
IoU-0.5 curves read at 1,000 confidences (``np.interp`` on ``-conf``, ``left`` 1 / 0); the
confidence is where the mean over classes of F1 (``2pr / (p + r + 1e-16)``), smoothed by a
box filter of 0.1 × 1,000 points (``smooth``: ``round(n · 0.1 · 2) // 2 + 1`` = 101 taps,
edges padded with the end values), is highest; the figures are the class means there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from rpx_cli.ops.matching import greedy_match
from rpx_cli.ops.voc import Pairs, best_in_group

IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10).astype(np.float32).astype(np.float64)
"""``torch.linspace(0.5, 0.95, 10)`` (float32), as the validator compares with it."""
CONFIDENCE = np.linspace(0, 1, 1000)  # ap_per_class's x: the P/R/F1-confidence curves
RECALL_101 = np.linspace(0, 1, 101)  # compute_ap's interpolation points
EPS = 1e-16
Matching = Literal["unique", "greedy"]
DEFAULT_VERSION = "8.3.0"  # the YOLOv8 / YOLO11 releases' rules (they hold to 8.4.36)
GREEDY_SINCE = (8, 4, 176)  # match_predictions by confidence from this release on
DROP_SINCE = (8, 4, 37)  # compute_ap's precision drops to 0 after the last recall from here


@dataclass(frozen=True)
class Rules:
    """The conventions of one Ultralytics release: the matching rule and whether
    ``compute_ap`` closes the curve at the last recall (``drop``) or ramps to recall 1."""

    matching: Matching
    drop: bool

    @classmethod
    def of(cls, version: tuple[int, ...]) -> Rules:
        return cls("greedy" if version >= GREEDY_SINCE else "unique", version >= DROP_SINCE)


@dataclass
class UltralyticsInput:
    """Every image's objects: detections in each image's order (descending confidence),
    images in order; GT in each image's order."""

    n_categories: int
    gt_image: np.ndarray
    gt_category: np.ndarray
    gt_ignored: np.ndarray  # bool: never counted (difficult, crowd)
    gt_crowd: np.ndarray  # bool: compared over the detection's own area
    dt_image: np.ndarray
    dt_category: np.ndarray
    dt_score: np.ndarray
    pairs: Pairs  # pairs(det, gt, crowd) -> IoU of det[k] with gt[k]
    similarity: Callable  # the greedy matcher's similarity on (detections, GT) in its orders


def image_order(image: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Each image's detections by descending confidence, ties in file order; images in
    order: the order the validator sees them in."""
    return np.lexsort((np.arange(image.size), -score, image))


def correct(data: UltralyticsInput, matching: Matching) -> tuple[np.ndarray, np.ndarray]:
    """``(tp, ignored)``, each (detections, 10): Ultralytics' ``correct`` matrix under
    ``matching`` and the detections rpx's ignored GT excuse at each threshold."""
    D, T = data.dt_score.size, IOU_THRESHOLDS.size
    K = max(data.n_categories, 1)
    d_key = data.dt_image.astype(np.int64) * K + data.dt_category
    g_key = data.gt_image.astype(np.int64) * K + data.gt_category
    if matching == "greedy":
        order = np.lexsort((np.arange(D), d_key))  # groups, each in the image's order
        gorder = np.argsort(g_key, kind="stable")
        area, ranges = None, None
        if data.gt_ignored.any():  # an ignored GT: "outside the one area range"
            area = np.where(data.gt_ignored[gorder], -np.inf, 0.0)
            ranges = np.array([[-1.0, np.inf]])
        found = greedy_match(d_key[order], g_key[gorder], data.similarity(order, gorder),
                             IOU_THRESHOLDS, ">=", ties="first", gt_crowd=data.gt_crowd[gorder],
                             gt_area=area, area_ranges=ranges)
        tp, ignored = np.zeros((D, T), bool), np.zeros((D, T), bool)
        tp[order] = found.matched & ~found.ignored
        ignored[order] = found.ignored
        return tp, ignored
    regular = np.flatnonzero(~data.gt_ignored)
    best, which, tied = best_in_group(d_key, g_key[regular],
                                      lambda d, g, c: data.pairs(d, regular[g], c),
                                      data.gt_crowd[regular], last=True, ties=True)
    # per threshold: among the detections passing on their best GT, the first in the
    # image's order (the detections are in that order) takes it
    order = np.lexsort((np.arange(D), which))
    tp = np.zeros((D, T), bool)
    for t, threshold in enumerate(IOU_THRESHOLDS.tolist()):
        passing = order[(best >= threshold)[order]]
        first = np.ones(passing.size, bool)
        first[1:] = which[passing[1:]] != which[passing[:-1]]
        tp[passing[first], t] = True
    tied &= best >= IOU_THRESHOLDS[0]
    for image in np.unique(data.dt_image[tied]).tolist():  # numpy's order decides: its steps
        dets = np.flatnonzero(data.dt_image == image)
        gts = regular[data.gt_image[regular] == image]
        iou = data.pairs(np.repeat(dets, gts.size), np.tile(gts, dets.size),
                         np.repeat(data.gt_crowd[gts][None, :], dets.size, 0).reshape(-1) & False)
        iou = iou.reshape(dets.size, gts.size).T
        tp[dets] = literal_unique(data.dt_category[dets], data.gt_category[gts], iou)
    ignored = np.zeros((D, T), bool)
    excused = np.flatnonzero(data.gt_ignored)
    if excused.size:
        best_ignored, _ = best_in_group(d_key, g_key[excused],
                                        lambda d, g, c: data.pairs(d, excused[g], c),
                                        data.gt_crowd[excused])
        ignored = ~tp & (best_ignored[:, None] >= IOU_THRESHOLDS[None, :])
    return tp, ignored


def literal_unique(pred_classes: np.ndarray, true_classes: np.ndarray,
                   iou: np.ndarray) -> np.ndarray:
    """The validator's ``match_predictions`` (``unique`` rule) on one image, step by step:
    ``iou`` (GT, detections), detections in the image's order; (detections, 10) bool."""
    correct = np.zeros((pred_classes.shape[0], IOU_THRESHOLDS.size), bool)
    iou = iou * (true_classes[:, None] == pred_classes)
    for i, threshold in enumerate(IOU_THRESHOLDS.tolist()):
        matches = np.array(np.nonzero(iou >= threshold)).T
        if matches.shape[0]:
            if matches.shape[0] > 1:
                matches = matches[iou[matches[:, 0], matches[:, 1]].argsort()[::-1]]
                matches = matches[np.unique(matches[:, 1], return_index=True)[1]]
                matches = matches[np.unique(matches[:, 0], return_index=True)[1]]
            correct[matches[:, 1].astype(int), i] = True
    return correct


def compute_ap(recall: np.ndarray, precision: np.ndarray,
               drop: bool = False) -> tuple[float, np.ndarray, np.ndarray]:
    """Ultralytics' ``compute_ap`` (its ``interp`` method): ``(ap, mpre, mrec)``. The
    sentinels: ``[0, recall, 1]`` / ``[1, precision, 0]`` (to 8.4.36: the curve ramps from
    the last point to precision 0 at recall 1), or with ``drop`` (8.4.37 on) one more point
    ``(recall[-1], 0)`` first: precision is 0 past the last recall."""
    if drop:
        mrec = np.concatenate(([0.0], recall, [recall[-1] if len(recall) else 1.0], [1.0]))
        mpre = np.concatenate(([1.0], precision, [0.0], [0.0]))
    else:
        mrec = np.concatenate(([0.0], recall, [1.0]))
        mpre = np.concatenate(([1.0], precision, [0.0]))
    mpre = np.flip(np.maximum.accumulate(np.flip(mpre)))
    return float(np.trapezoid(np.interp(RECALL_101, mrec, mpre), RECALL_101)), mpre, mrec


def smooth(y: np.ndarray, f: float = 0.05) -> np.ndarray:
    """Ultralytics' box filter: ``round(len(y) · f · 2) // 2 + 1`` taps, ends padded."""
    nf = round(len(y) * f * 2) // 2 + 1
    p = np.ones(nf // 2)
    yp = np.concatenate((p * y[0], y, p * y[-1]), 0)
    return np.convolve(yp, np.ones(nf) / nf, mode="valid")


@dataclass
class ApPerClass:
    """``ap_per_class``'s figures for the classes with GT (``classes``)."""

    classes: np.ndarray  # (C,) category indices with GT
    n_gt: np.ndarray  # (C,)
    ap: np.ndarray  # (C, 10)
    p: np.ndarray  # (C,) at the best mean F1
    r: np.ndarray
    f1: np.ndarray
    confidence: float  # the confidence of the best mean F1 (x[i])
    pr_curve: np.ndarray  # (C, 101): precision at 101 recall points, IoU 0.5


def ap_per_class(tp: np.ndarray, ignored: np.ndarray, conf: np.ndarray, pred_cls: np.ndarray,
                 target_cls: np.ndarray, drop: bool = False) -> ApPerClass:
    """Ultralytics' ``ap_per_class`` on detections listed in the validator's order; at each
    threshold the detections ``ignored`` there are left out (none: its very arithmetic)."""
    i = np.argsort(-conf)
    tp, ignored, conf, pred_cls = tp[i], ignored[i], conf[i], pred_cls[i]
    unique_classes, nt = np.unique(target_cls, return_counts=True)
    nc, T = unique_classes.shape[0], tp.shape[1]
    x = CONFIDENCE
    ap, p_curve, r_curve = np.zeros((nc, T)), np.zeros((nc, x.size)), np.zeros((nc, x.size))
    pr_curve = np.zeros((nc, RECALL_101.size))
    order = np.argsort(pred_cls, kind="stable")  # each class's detections, in sorted order
    bounds = np.searchsorted(pred_cls[order], unique_classes, side="left")
    ends = np.searchsorted(pred_cls[order], unique_classes, side="right")
    for ci in range(nc):
        members = order[bounds[ci]:ends[ci]]
        n_l = nt[ci]
        if members.size == 0 or n_l == 0:
            continue
        for j in range(T):
            kept = members[~ignored[members, j]]
            if not kept.size:  # every detection excused: as a class without any
                continue
            tpc = tp[kept, j].cumsum(0, dtype=np.float64)
            fpc = (1 - tp[kept, j]).cumsum(0, dtype=np.float64)
            recall = tpc / (n_l + EPS)
            precision = tpc / (tpc + fpc)
            if j == 0:
                r_curve[ci] = np.interp(-x, -conf[kept], recall, left=0)
                p_curve[ci] = np.interp(-x, -conf[kept], precision, left=1)
            ap[ci, j], mpre, mrec = compute_ap(recall, precision, drop)
            if j == 0:
                pr_curve[ci] = np.interp(RECALL_101, mrec, mpre)
    f1_curve = 2 * p_curve * r_curve / (p_curve + r_curve + EPS)
    best = int(smooth(f1_curve.mean(0), 0.1).argmax()) if nc else 0
    return ApPerClass(unique_classes, nt, ap, p_curve[:, best], r_curve[:, best],
                      f1_curve[:, best], float(x[best]), pr_curve)
