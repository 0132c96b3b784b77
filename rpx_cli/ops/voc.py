"""PASCAL VOC's average precision — the devkit's ``voc_eval`` / ``voc_ap`` as py-faster-rcnn
and detectron2's ``PascalVOCDetectionEvaluator`` ship them (DOTA_devkit's task 1 is the same
code on polygon IoU) — over every image and class at once.

Per class, the devkit lists the class's detections (image order, then each image's order)
and walks them by descending score, ``np.argsort(-confidence)`` — numpy's default sort,
whose order among tied scores is numpy's, so :func:`class_ranks` calls that very function on
the same list. Each detection is compared with *every* GT of its class in its image, taken
or not: ``ovmax`` is the highest similarity and ``jmax`` the first GT reaching it
(``np.argmax``). Then, at threshold ``t``:

- ``ovmax > t`` (strict) and ``jmax`` is ignored (``difficult``; here also a crowd region):
  neither TP nor FP, and ``jmax`` is not taken (any number of detections can land on it);
- ``ovmax > t`` and ``jmax`` not taken yet: a TP, which takes it;
- ``ovmax > t`` and ``jmax`` taken by an earlier detection: a FP (a duplicate), even where
  another GT of the image is free and overlaps enough — the devkit never looks further;
- otherwise (no GT of the class in the image: ``ovmax = -inf``) a FP.

So a detection's fate depends only on the earlier detections with the same ``jmax``: the TP
of a GT is the best-ranked detection passing on it, and :func:`outcomes` decides every
detection and threshold without walking them one by one.

``rec = tp / npos`` (``npos`` the GT of the class that are not ignored) and ``prec = tp /
max(tp + fp, eps)`` along the walk (an ignored detection repeats the previous point);
AP is VOC2007's 11-point interpolation (``max(prec[rec >= t])`` for ``t`` in
``np.arange(0.0, 1.1, 0.1)`` — the devkit's own grid, 0.30000000000000004 included — each
over 11) or VOC2010's all-point area under the precision envelope (:func:`voc_ap`). A class
without GT has no AP (the devkit divides by zero); the mean is over the classes with GT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

ELEVEN_POINTS = np.arange(0.0, 1.1, 0.1)
"""The devkit's 11 recall levels, computed as it computes them."""
COCO_STYLE = np.arange(50, 100, 5) / 100.0
"""detectron2's ``ovthresh = thresh / 100.0`` for ``thresh`` in ``range(50, 100, 5)``."""
CURVE_RECALL = np.linspace(0.0, 1.0, 101)  # where the report keeps each class's PR curve
EPS = np.finfo(np.float64).eps

Pairs = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""``pairs(det, gt, crowd) -> similarity`` of ``det[k]`` with ``gt[k]`` (crowd: over the
detection's own area)."""


@dataclass
class VocInput:
    """Every image's objects, flattened: detections in the devkit's list order (image order,
    then each image's), GT likewise (each image's in its file's order)."""

    n_categories: int
    gt_image: np.ndarray
    gt_category: np.ndarray
    gt_ignored: np.ndarray  # bool: difficult (or crowd): never TP, never missed
    gt_crowd: np.ndarray  # bool: compared by intersection over the detection's area
    dt_image: np.ndarray
    dt_category: np.ndarray
    dt_score: np.ndarray
    pairs: Pairs


@dataclass
class VocMatches:
    """The walk's outcome: each detection's rank in its class's walk, ``ovmax`` and
    ``jmax`` (-1: no GT of its class in its image) and, per threshold, whether it is a TP
    or ignored (the rest are FP); ``npos`` per class."""

    rank: np.ndarray  # (D,)
    ovmax: np.ndarray  # (D,)
    jmax: np.ndarray  # (D,) index into the GT arrays
    tp: np.ndarray  # (D, T) bool
    ignored: np.ndarray  # (D, T) bool
    npos: np.ndarray  # (K,) int


def class_ranks(category: np.ndarray, score: np.ndarray, n_categories: int) -> np.ndarray:
    """Each detection's place in its class's walk: ``np.argsort(-confidence)`` of the
    class's detections in list order (numpy's default kind, so ties fall as in the
    devkit). One sort per class present — the devkit's own call, on the same array."""
    rank = np.zeros(category.size, np.int64)
    order = np.argsort(category, kind="stable")
    bounds = np.searchsorted(category[order], np.arange(n_categories + 1))
    for k in np.flatnonzero(np.diff(bounds)).tolist():
        members = order[bounds[k]:bounds[k + 1]]  # list order
        rank[members[np.argsort(-score[members])]] = np.arange(members.size)
    return rank


def best_gt(data: VocInput) -> tuple[np.ndarray, np.ndarray]:
    """``(ovmax, jmax)`` of every detection against every GT of its class in its image:
    the highest similarity and the first GT reaching it; ``(-inf, -1)`` without such GT."""
    K = max(data.n_categories, 1)
    return best_in_group(data.dt_image.astype(np.int64) * K + data.dt_category,
                         data.gt_image.astype(np.int64) * K + data.gt_category, data.pairs,
                         data.gt_crowd)


def best_in_group(d_key: np.ndarray, g_key: np.ndarray, pairs: Pairs, gt_crowd: np.ndarray, *,
                  last: bool = False, ties: bool = False):
    """For each detection, the GT of its group (``g_key == d_key``: an image × class) most
    similar to it: ``(value, GT index)``, ties to the first GT in list order (``last``: the
    last); ``(-inf, -1)`` for a detection whose group has no GT. Every (detection, GT) pair
    of a group is compared once, in one call of ``pairs`` per crowd flag. ``ties``: a third
    array, whether two GT or more reach the best value."""
    gorder = np.argsort(g_key, kind="stable")  # each group's GT in list order
    start = np.searchsorted(g_key[gorder], d_key, side="left")
    count = np.searchsorted(g_key[gorder], d_key, side="right") - start
    D = d_key.size
    best, which = np.full(D, -np.inf), np.full(D, -1, np.int64)
    total = int(count.sum())
    if not total:
        return (best, which, np.zeros(D, bool)) if ties else (best, which)
    det = np.repeat(np.arange(D), count)
    local = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    gt = gorder[np.repeat(start, count) + local]
    values = np.zeros(total)
    crowd = gt_crowd[gt]
    for flag in (False, True):
        where = np.flatnonzero(crowd == flag)
        if where.size:
            values[where] = pairs(det[where], gt[where], np.full(where.size, flag))
    has = np.flatnonzero(count)
    first = np.cumsum(count) - count  # each detection's first pair
    best[has] = np.maximum.reduceat(values, first[has])
    at_max = values == best[det]
    if last:
        slot = np.where(at_max, local, -1)
        which[has] = gt[first[has] + np.maximum.reduceat(slot, first[has])]
    else:
        slot = np.where(at_max, local, np.iinfo(np.int64).max)
        which[has] = gt[first[has] + np.minimum.reduceat(slot, first[has])]
    if ties:
        tied = np.zeros(D, bool)
        tied[has] = np.add.reduceat(at_max.astype(np.int64), first[has]) > 1
        return best, which, tied
    return best, which


def outcomes(data: VocInput, thresholds: np.ndarray) -> VocMatches:
    """Every detection's fate at every threshold (``ovmax > t``), as the devkit's walk."""
    thresholds = np.atleast_1d(np.asarray(thresholds, np.float64))
    rank = class_ranks(data.dt_category, data.dt_score, data.n_categories)
    ovmax, jmax = best_gt(data)
    D, T = rank.size, thresholds.size
    tp, ignored = np.zeros((D, T), bool), np.zeros((D, T), bool)
    on_ignored = np.zeros(D, bool)
    found = jmax >= 0
    on_ignored[found] = data.gt_ignored[jmax[found]]
    order = np.lexsort((rank, jmax))  # by GT, best-ranked first
    for t, threshold in enumerate(thresholds.tolist()):
        passing = ovmax > threshold
        ignored[:, t] = passing & on_ignored
        competing = order[(passing & ~on_ignored)[order]]
        j = jmax[competing]
        first = np.ones(j.size, bool)
        first[1:] = j[1:] != j[:-1]
        tp[competing[first], t] = True
    npos = np.bincount(data.gt_category[~data.gt_ignored], minlength=data.n_categories)
    return VocMatches(rank, ovmax, jmax, tp, ignored, npos[:data.n_categories])


def voc_ap(rec: np.ndarray, prec: np.ndarray, eleven_point: bool) -> float:
    """The devkit's ``voc_ap``: VOC2007's 11-point AP or the all-point area under the
    precision envelope, on one class's walk (``rec`` non-decreasing). At most 1: the
    devkit's running sum of eleven 1/11 is 1.0000000000000002, which a gate such as
    ``--require 'dataset.voc07.mAP<=1'`` would refuse (the difference is the last bit)."""
    if eleven_point:
        ap = 0.0
        for value in (envelope_at(rec, prec, ELEVEN_POINTS) / 11.0).tolist():
            ap = ap + value  # the devkit's running sum, in its order
        return min(float(ap), 1.0)
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    i = np.flatnonzero(mrec[1:] != mrec[:-1])
    return min(float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])), 1.0)


@dataclass
class ClassCurves:
    """Per class and threshold: AP (NaN without GT), and at the first threshold the
    precision envelope at :data:`CURVE_RECALL` (NaN rows without GT)."""

    ap: np.ndarray  # (K, T)
    curve: np.ndarray  # (K, 101)
    n_pred: np.ndarray  # (K,)
    n_ignored: np.ndarray  # (K,) detections ignored at the first threshold


def class_curves(data: VocInput, matches: VocMatches, eleven_point: bool) -> ClassCurves:
    """Each class's walk: cumulative TP/FP in rank order, ``rec``, ``prec`` and AP per
    threshold (one loop over the classes with GT, each a few array operations)."""
    K, T = data.n_categories, matches.tp.shape[1]
    ap = np.full((K, T), np.nan)
    curve = np.full((K, CURVE_RECALL.size), np.nan)
    order = np.lexsort((matches.rank, data.dt_category))  # class by class, in walk order
    bounds = np.searchsorted(data.dt_category[order], np.arange(K + 1))
    n_pred = np.diff(bounds)
    n_ignored = np.bincount(data.dt_category[matches.ignored[:, 0]], minlength=K)[:K] if T else \
        np.zeros(K, np.int64)
    for k in np.flatnonzero(matches.npos > 0).tolist():
        walk = order[bounds[k]:bounds[k + 1]]
        npos = float(matches.npos[k])
        tp = matches.tp[walk]  # (n, T): the class's walk, every threshold at once
        fp = ~tp & ~matches.ignored[walk]
        tp_c, fp_c = np.cumsum(tp, axis=0, dtype=np.float64), np.cumsum(fp, axis=0, dtype=np.float64)
        rec = (tp_c / npos).T.copy()
        prec = (tp_c / np.maximum(tp_c + fp_c, EPS)).T.copy()
        for t in range(T):
            ap[k, t] = voc_ap(rec[t], prec[t], eleven_point)
        curve[k] = envelope_at(rec[0], prec[0], CURVE_RECALL)
    return ClassCurves(ap, curve, n_pred, n_ignored)


def envelope_at(rec: np.ndarray, prec: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """``max(prec[rec >= r])`` at each level ``r`` (0 where recall never reaches it): the
    interpolated precision VOC reads at its 11 levels, here at any."""
    if not rec.size:
        return np.zeros(levels.size)
    envelope = np.maximum.accumulate(prec[::-1])[::-1]
    at = np.searchsorted(rec, levels, side="left")
    return np.where(at < rec.size, envelope[np.minimum(at, rec.size - 1)], 0.0)


def mean_defined(values: np.ndarray) -> float | None:
    """The mean over the classes with an AP (None when there is none)."""
    kept = values[~np.isnan(values)]
    return float(np.mean(kept)) if kept.size else None
