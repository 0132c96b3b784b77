"""TIDE's error breakdown of detection AP (Bolya et al., "TIDE: A General Toolbox for
Identifying Object Detection Errors", ECCV 2020), equal to ``tidecv`` 1.0.1 in box mode.

Every detection that is not a true positive gets exactly one error type, tested in this
order (IoU with the image's non-crowd GT; ``pos`` = 0.5, ``bkg`` = 0.1):

- ``bkg`` the image has no GT;
- ``loc`` the best same-class IoU is in [bkg, pos] (right class, box not good enough);
- ``cls`` the best IoU with a GT of another class is >= pos (right box, wrong class);
- ``dupe`` a same-class GT already taken by a higher-scoring detection has IoU >= pos;
- ``bkg`` every IoU is <= bkg (a detection on background);
- ``both`` anything else (wrong class and a poor box).

A GT left unmatched that no ``loc``/``cls`` error points at is a ``miss``. Each type's dAP
is the AP gained by fixing only its errors (``loc``/``cls``: the highest-scoring error per
GT becomes a true positive of the GT's class — the others are removed; ``dupe``, ``bkg``,
``both``: the detection is removed; ``miss``: the GT is removed), clamped at 0. ``fp`` is
the AP with every false positive scored below every true positive, ``fn`` the AP with every
missed GT removed (neither clamped).

tidecv's own rules are kept, where they differ from COCO: matching per image over at most
100 detections of any class (score order, ties in input order), class-aware greedy, IoU >=
pos, ties to the *first* GT; a detection lying on a crowd region of its class (intersection
over its area > pos, strict) is ignored in AP but still gets an error; AP is 101-point
interpolated with precision ``tp / (tp + fp)``, recall points ``k / 100``; a class with
detections but no GT scores 0 and counts in the mean; a class left with neither (after a
fix) leaves the mean; ties in score keep insertion order (images in order — tidecv's is the
GT file's ``images`` list, so the caller numbers images that way —, then score order), and a
fixed AP lists the error detections before the true positives. Values here
are on rpx's 0–1 scale (tidecv prints them × 100). Masks (``--iou-type segm``) plug in
their IoU through ``data.geometry`` as tidecv's mask mode does (intersection over the
detection's mask for a crowd region).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rpx_cli.ops.coco import CocoInput, iou_similarity, iou_xywh_rows
from rpx_cli.ops.matching import greedy_match

ERROR_TYPES = ("cls", "loc", "both", "dupe", "bkg", "miss")
SPECIAL_TYPES = ("fp", "fn")
_CLS, _LOC, _BOTH, _DUPE, _BKG = range(5)
_RECALL_POINTS = np.arange(101) / 100  # tidecv: [x / 100 for x in range(101)]


@dataclass
class TideResult:
    ap: float | None  # TIDE's own AP at ``pos`` (0-1), None without any class to average
    dap: dict[str, float | None]  # every error type and fp/fn: dAP, 0-1 scale
    counts: dict[str, int]  # errors of each main type


@dataclass
class _Points:
    """AP data points of one variant: class, score, true positive, and the insertion key."""

    cls: np.ndarray
    score: np.ndarray
    tp: np.ndarray
    key: np.ndarray  # insertion order (ties in score keep it)


def tide(data: CocoInput, *, pos: float = 0.5, bkg: float = 0.1, max_dets: int = 100) -> TideResult:
    """The TIDE breakdown of ``data`` (images in ``dt_image``/``gt_image`` order)."""
    K = data.n_categories
    # detections: image order, score descending, input order; at most max_dets per image
    order = np.lexsort((np.arange(data.dt_image.size), -data.dt_score, data.dt_image))
    image = data.dt_image[order]
    rank = np.arange(image.size) - np.searchsorted(image, image, side="left")
    order = order[rank < max_dets]
    d_image, d_cls = data.dt_image[order].astype(np.int64), data.dt_category[order].astype(np.int64)
    d_box, d_score = data.dt_box[order], data.dt_score[order]
    D = d_image.size  # position = insertion order (tidecv walks images, then scores)
    crowd = data.gt_crowd.astype(bool)
    g_take = np.flatnonzero(~crowd)
    g_take = g_take[np.argsort(data.gt_image[g_take], kind="stable")]
    g_image, g_cls = data.gt_image[g_take].astype(np.int64), data.gt_category[g_take].astype(np.int64)
    g_box = data.gt_box[g_take]
    G = g_image.size
    n_gt = np.bincount(g_cls, minlength=K)

    # class-aware greedy matching, detections of a group in score order, ties to the first GT
    d_group, g_group = d_image * K + d_cls, g_image * K + g_cls
    d_sort = np.lexsort((np.arange(D), d_group))
    g_sort = np.argsort(g_group, kind="stable")
    matches = greedy_match(d_group[d_sort], g_group[g_sort],
                           iou_similarity(d_box[d_sort], g_box[g_sort]) if data.geometry is None
                           else data.geometry.similarity(d_box[d_sort], g_box[g_sort]), pos, ">=",
                           ties="first", return_gt=True)
    taken = np.full(D, -1, np.int64)
    taken[d_sort] = np.where(matches.matched[:, 0], g_sort[np.maximum(matches.gt[:, 0], 0)], -1)
    tp = taken >= 0
    g_used = np.zeros(G, bool)
    g_used[taken[tp]] = True
    ignored = ~tp & _on_crowd(data, d_image, d_cls, d_box, pos)

    # every (detection, GT) pair of an image; the errors' IoU maxima
    n_images = int(max(d_image.max(initial=-1), g_image.max(initial=-1))) + 1
    g_start = np.searchsorted(g_image, np.arange(n_images + 1))
    per_det = (g_start[d_image + 1] - g_start[d_image]) if D else np.zeros(0, np.int64)
    pd = np.repeat(np.arange(D), per_det)
    pg = g_start[d_image][pd] + (np.arange(pd.size) - np.repeat(np.cumsum(per_det) - per_det, per_det))
    if data.geometry is None:
        iou = iou_xywh_rows(d_box[pd], g_box[pg][:, None, :], np.zeros((pd.size, 1), bool))[:, 0]
    else:
        iou = data.geometry.pairs(d_box[pd], g_box[pg])
    same = d_cls[pd] == g_cls[pg]
    m_cls, a_cls = _segment_max(np.where(same, iou, 0.0), pd, pg, D)
    m_non, a_non = _segment_max(np.where(same, 0.0, iou), pd, pg, D)
    m_dup, _ = _segment_max(np.where(same & g_used[pg], iou, 0.0), pd, pg, D)
    m_all, _ = _segment_max(iou, pd, pg, D)

    wrong = ~tp  # false positives and ignored detections both get an error
    error = np.select(
        [per_det == 0, (m_cls >= bkg) & (m_cls <= pos), m_non >= pos, m_dup >= pos, m_all <= bkg],
        [_BKG, _LOC, _CLS, _DUPE, _BKG], _BOTH)
    error[~wrong] = -1
    target = np.where(error == _LOC, a_cls, np.where(error == _CLS, a_non, -1))
    # a loc/cls error pointing at a free GT can fix it: the highest score (first on ties) wins
    candidate = np.flatnonzero((target >= 0) & ~g_used[np.maximum(target, 0)])
    usable = np.zeros(G, bool)
    usable[target[candidate]] = True
    best = np.zeros(D, bool)
    if candidate.size:
        by_gt = candidate[np.lexsort((candidate, -d_score[candidate], target[candidate]))]
        first = np.r_[True, target[by_gt][1:] != target[by_gt][:-1]]
        best[by_gt[first]] = True
    fix_cls = np.where(error == _CLS, g_cls[np.maximum(target, 0)] if G else d_cls, d_cls)
    missed = ~g_used & ~usable
    counts = {name: int(np.count_nonzero(error == code))
              for name, code in zip(ERROR_TYPES[:5], (_CLS, _LOC, _BOTH, _DUPE, _BKG), strict=True)}
    counts["miss"] = int(np.count_nonzero(missed))

    fp = wrong & ~ignored
    seq = np.arange(D)
    good = np.flatnonzero(tp)
    universe = (n_gt > 0) | (np.bincount(d_cls[tp | fp], minlength=K) > 0)

    def points(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> _Points:
        """Error detections first (insertion order), then the true positives."""
        cls, score, hit, key = (np.concatenate(x) for x in zip(*parts, strict=True))
        return _Points(cls, score, hit, key)

    def base_ap() -> float | None:
        kept = np.flatnonzero(tp | fp)
        return _mean_ap(_Points(d_cls[kept], d_score[kept], tp[kept], seq[kept]), n_gt, universe)

    ap = base_ap()
    dap: dict[str, float | None] = {}
    for name, code in zip(ERROR_TYPES[:5], (_CLS, _LOC, _BOTH, _DUPE, _BKG), strict=True):
        fixed = np.flatnonzero((error == code) & best)
        kept = np.flatnonzero(fp & (error != code))
        both = np.concatenate([fixed, kept])
        both.sort()  # the error list's order
        is_fixed = np.isin(both, fixed)
        variant = points([(np.where(is_fixed, fix_cls[both], d_cls[both]), d_score[both], is_fixed, both),
                          (d_cls[good], d_score[good], np.ones(good.size, bool), D + good)])
        dap[name] = _clamped(_mean_ap(variant, n_gt, universe), ap)
    miss_gt = n_gt - np.bincount(g_cls[missed], minlength=K)
    errors_fp = np.flatnonzero(fp)
    variant = points([(d_cls[errors_fp], d_score[errors_fp], np.zeros(errors_fp.size, bool), errors_fp),
                      (d_cls[good], d_score[good], np.ones(good.size, bool), D + good)])
    dap["miss"] = _clamped(_mean_ap(variant, miss_gt, universe), ap)
    # special: every false positive below every true positive; every missed GT removed
    scored = points([(d_cls[errors_fp], np.zeros(errors_fp.size), np.zeros(errors_fp.size, bool),
                      errors_fp), (d_cls[good], np.ones(good.size), np.ones(good.size, bool), D + good)])
    dap["fp"] = _difference(_mean_ap(scored, n_gt, universe), ap)
    found_gt = n_gt - np.bincount(g_cls[~g_used], minlength=K)
    dap["fn"] = _difference(_mean_ap(variant, found_gt, universe), ap)
    return TideResult(ap, dap, counts)


def _clamped(value: float | None, base: float | None) -> float | None:
    """tidecv: ``max(new - base, 0)`` (a negative dAP is put down to binning)."""
    return None if value is None or base is None else max(value - base, 0.0)


def _difference(value: float | None, base: float | None) -> float | None:
    return None if value is None or base is None else value - base


def _segment_max(values: np.ndarray, owner: np.ndarray, gt: np.ndarray,
                 n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per owner (pairs sorted by owner, then GT order): the maximum and the GT index where
    it is first reached (``numpy.argmax``); 0 and -1 for an owner without pairs."""
    best = np.zeros(n)
    where = np.full(n, -1, np.int64)
    if not values.size:
        return best, where
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    best[owner[starts]] = np.maximum.reduceat(values, starts)
    hit = np.flatnonzero(values == best[owner])
    owners, first = np.unique(owner[hit], return_index=True)
    where[owners] = gt[hit[first]]
    return best, where


def _on_crowd(data: CocoInput, d_image: np.ndarray, d_cls: np.ndarray, d_box: np.ndarray,
              pos: float) -> np.ndarray:
    """Detections with intersection over their own area > ``pos`` on a crowd region of
    their class and image (tidecv's ignore regions)."""
    out = np.zeros(d_image.size, bool)
    crowd = np.flatnonzero(data.gt_crowd.astype(bool))
    if not crowd.size or not d_image.size:
        return out
    crowd = crowd[np.argsort(data.gt_image[crowd], kind="stable")]
    c_image = data.gt_image[crowd].astype(np.int64)
    n_images = int(max(d_image.max(), c_image.max())) + 1
    start = np.searchsorted(c_image, np.arange(n_images + 1))
    per_det = start[d_image + 1] - start[d_image]
    pd = np.repeat(np.arange(d_image.size), per_det)
    pc = crowd[start[d_image][pd] + (np.arange(pd.size) - np.repeat(np.cumsum(per_det) - per_det, per_det))]
    if data.geometry is None:
        ioa = iou_xywh_rows(d_box[pd], data.gt_box[pc][:, None, :], np.ones((pd.size, 1), bool))[:, 0]
    else:
        ioa = data.geometry.pairs(d_box[pd], data.gt_box[pc], crowd=True)
    hit = (ioa > pos) & (data.gt_category[pc] == d_cls[pd])
    out[pd[hit]] = True
    return out


def _mean_ap(points: _Points, n_gt: np.ndarray, universe: np.ndarray) -> float | None:
    """tidecv's ``get_mAP``: the mean AP over the classes of ``universe`` that still have a
    data point or a GT; a class without GT scores 0."""
    order = np.lexsort((points.key, -points.score, points.cls))
    cls, hit = points.cls[order], points.tp[order]
    K = n_gt.size
    bounds = np.searchsorted(cls, np.arange(K + 1))
    aps = []
    for k in np.flatnonzero(universe).tolist():
        lo, hi = bounds[k], bounds[k + 1]
        if hi == lo and n_gt[k] == 0:
            continue  # is_empty(): left out of the mean
        aps.append(_ap(hit[lo:hi], int(n_gt[k])))
    return float(np.mean(aps)) if aps else None


def _ap(hit: np.ndarray, n_gt: int) -> float:
    """101-point AP of detections in rank order (tidecv's ``APDataObject.get_ap`` / 100)."""
    if n_gt <= 0 or not hit.size:
        return 0.0
    true = np.cumsum(hit)
    precision = true / np.arange(1, hit.size + 1)
    recall = true / n_gt
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    index = np.searchsorted(recall, _RECALL_POINTS, side="left")
    inside = index < hit.size
    y = np.zeros(_RECALL_POINTS.size)
    y[inside] = envelope[index[inside]]
    return float(y.sum() / y.size)
