"""COCO bbox AP/AR, equal to pycocotools' ``COCOeval`` and vectorised.

pycocotools matches detections to GT per (image, category) in Python: for every IoU
threshold, every detection (best score first), every GT. Here the greedy step is a loop
over detection *rank* only (at most ``maxDets[-1]`` = 100), vectorised over every
(image, category) group and all ten IoU thresholds at once; groups are bucketed by their
GT count so padding stays small. The rules are pycocotools', exactly:

- detections sorted by score, ties in input order (mergesort); at most 100 per group;
- a detection matches a GT with IoU >= min(t, 1 − 1e-10) that is not already matched
  (crowd GTs can match again); among candidates the highest IoU wins, ties going to the
  *last* GT in order; GTs that are ignored (crowd, or area outside the range) are only
  considered when no regular GT qualifies;
- crowd IoU is intersection over the detection's area; a detection matched to an ignored
  GT, or unmatched with its area outside the range, is ignored;
- per category: detections of every image pooled and sorted by score (ties by image, then
  rank), precision made monotone from the right, read at 101 recall points with
  ``searchsorted(side="left")``; a category without regular GT is left out (-1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
RECALL_THRESHOLDS = np.linspace(0.0, 1.0, 101)
MAX_DETS = (1, 10, 100)
AREA_RANGES = {"all": (0.0, 1e5**2), "small": (0.0, 32.0**2), "medium": (32.0**2, 96.0**2),
               "large": (96.0**2, 1e5**2)}
STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")


@dataclass
class CocoInput:
    """Boxes of every image, flattened. Images are indexed 0..n_images-1 in COCO image id
    order, categories 0..n_categories-1 in category id order; ``*_order`` is the position
    in the input (annotation or result order), which decides ties."""

    n_images: int
    n_categories: int
    gt_image: np.ndarray
    gt_category: np.ndarray
    gt_box: np.ndarray  # (G, 4) x, y, w, h
    gt_area: np.ndarray
    gt_crowd: np.ndarray  # bool
    dt_image: np.ndarray
    dt_category: np.ndarray
    dt_box: np.ndarray
    dt_score: np.ndarray


@dataclass
class CocoResult:
    precision: np.ndarray  # (T, R, K, A, M), -1 where undefined
    recall: np.ndarray  # (T, K, A, M)

    def stats(self) -> dict[str, float | None]:
        """pycocotools' ``summarize()`` figures; None where it would print -1."""
        def mean(values: np.ndarray) -> float | None:
            valid = values[values > -1]
            return float(np.mean(valid)) if valid.size else None

        p, r = self.precision, self.recall
        t50, t75 = 0, 5
        return {
            "AP": mean(p[:, :, :, 0, 2]), "AP50": mean(p[t50, :, :, 0, 2]),
            "AP75": mean(p[t75, :, :, 0, 2]), "APs": mean(p[:, :, :, 1, 2]),
            "APm": mean(p[:, :, :, 2, 2]), "APl": mean(p[:, :, :, 3, 2]),
            "AR1": mean(r[:, :, 0, 0]), "AR10": mean(r[:, :, 0, 1]), "AR100": mean(r[:, :, 0, 2]),
            "ARs": mean(r[:, :, 1, 2]), "ARm": mean(r[:, :, 2, 2]), "ARl": mean(r[:, :, 3, 2]),
        }

    def per_category_ap(self) -> list[float | None]:
        """AP per category (all areas, 100 detections); None for a category without GT."""
        out = []
        for k in range(self.precision.shape[2]):
            values = self.precision[:, :, k, 0, 2]
            valid = values[values > -1]
            out.append(float(np.mean(valid)) if valid.size else None)
        return out


def evaluate(data: CocoInput) -> CocoResult:
    """COCOeval(iouType="bbox") evaluate + accumulate on ``data``."""
    T, A, M = len(IOU_THRESHOLDS), len(AREA_RANGES), len(MAX_DETS)
    K = data.n_categories
    n_groups = data.n_images * K
    # detections: group, then score (descending), ties in input order; rank within group
    dt_group = data.dt_image.astype(np.int64) * K + data.dt_category
    order = np.lexsort((np.arange(dt_group.size), -data.dt_score, dt_group))
    dt_group, dt_box, dt_score = dt_group[order], data.dt_box[order], data.dt_score[order]
    dt_image, dt_category = data.dt_image[order], data.dt_category[order]
    starts = np.searchsorted(dt_group, dt_group, side="left")
    rank = np.arange(dt_group.size) - starts
    keep = rank < MAX_DETS[-1]
    if not keep.all():
        dt_group, dt_box, dt_score, rank = dt_group[keep], dt_box[keep], dt_score[keep], rank[keep]
        dt_image, dt_category = dt_image[keep], dt_category[keep]
    dt_area = dt_box[:, 2] * dt_box[:, 3]
    # GT: group, then input order
    gt_group = data.gt_image.astype(np.int64) * K + data.gt_category
    gorder = np.argsort(gt_group, kind="stable")
    gt_group, gt_box = gt_group[gorder], data.gt_box[gorder]
    gt_area, gt_crowd = data.gt_area[gorder], data.gt_crowd[gorder].astype(bool)

    ranges = np.array(list(AREA_RANGES.values()))
    matched, ignored = greedy_match(dt_group, dt_box, rank, gt_group, gt_box, gt_area, gt_crowd,
                                    np.minimum(IOU_THRESHOLDS, 1 - 1e-10), ranges, n_groups)
    outside = (dt_area[:, None] < ranges[None, :, 0]) | (dt_area[:, None] > ranges[None, :, 1])
    ignored |= ~matched & np.repeat(outside, T, axis=1)  # (detections, areas * thresholds)

    gt_ignored = gt_crowd[None, :] | (gt_area[None, :] < ranges[:, :1]) | (gt_area[None, :] > ranges[:, 1:])
    gt_category = gt_group % K
    regular = np.stack([np.bincount(gt_category[~gt_ignored[a]], minlength=K) for a in range(A)])
    precision = -np.ones((T, len(RECALL_THRESHOLDS), K, A, M))
    recall = -np.ones((T, K, A, M))
    # category-major, then score descending, ties by image then rank (pycocotools'
    # concatenation order): every category is one contiguous slice
    # (the detections are in image, category, rank order: a stable sort by category, then
    # score keeps image and rank order among ties)
    ranked = np.lexsort((-dt_score, dt_category))
    bounds = np.searchsorted(dt_category[ranked], np.arange(K + 1))
    rank_sorted = rank[ranked]
    # (areas * thresholds, detections), contiguous along the detections to run sums fast
    tps = np.ascontiguousarray((matched & ~ignored)[ranked].T)
    fps = np.ascontiguousarray(~(matched | ignored)[ranked].T)
    for k in range(K):
        lo, hi = bounds[k], bounds[k + 1]
        for m, max_det in enumerate(MAX_DETS):
            if max_det >= MAX_DETS[-1]:  # detections past the last were dropped already
                tp, fp = tps[:, lo:hi], fps[:, lo:hi]
            else:
                sel = lo + np.flatnonzero(rank_sorted[lo:hi] < max_det)
                tp, fp = tps[:, sel], fps[:, sel]
            fp_before = np.cumsum(fp, axis=1, dtype=np.int32)
            for a in np.flatnonzero(regular[:, k]).tolist():
                cells = slice(a * T, (a + 1) * T)
                _accumulate(tp[cells], fp_before[cells], int(regular[a, k]),
                            precision[:, :, k, a, m], recall[:, k, a, m])
    return CocoResult(precision, recall)


def greedy_match(dt_group, dt_box, rank, gt_group, gt_box, gt_area, gt_crowd, thresholds,
                 ranges, n_groups) -> tuple[np.ndarray, np.ndarray]:
    """pycocotools' greedy matching, for every group at once.

    Detections are given sorted by group and rank (best score first) and GT sorted by
    group in input order. Returns ``(matched, ignored)`` of shape (detections,
    areas * thresholds), column ``a * T + t``: matched to any GT, and matched to an ignored
    GT (crowd, or area outside the range ``ranges[a]``).
    """
    A, T = len(ranges), len(thresholds)
    gt_start = np.searchsorted(gt_group, np.arange(n_groups), side="left")
    gt_count = np.searchsorted(gt_group, np.arange(n_groups), side="right") - gt_start
    matched = np.zeros((dt_group.size, A * T), bool)
    ignored = np.zeros((dt_group.size, A * T), bool)
    det_gt_count = gt_count[dt_group] if dt_group.size else np.zeros(0, np.int64)
    for low, high in _buckets(int(det_gt_count.max(initial=0))):
        dets = np.flatnonzero((det_gt_count >= low) & (det_gt_count <= high))
        if dets.size:
            _match_bucket(dets, high, dt_group, dt_box, rank, gt_start, gt_count, gt_box,
                          gt_area, gt_crowd, thresholds, ranges, matched, ignored)
    return matched, ignored


def _buckets(largest: int) -> list[tuple[int, int]]:
    """GT-count ranges [0, 0], [1, 1], [2, 3], [4, 7], ...: padding at most doubles."""
    out, low = [(0, 0)], 1
    while low <= largest:
        out.append((low, 2 * low - 1))
        low *= 2
    return out


def _match_bucket(dets, width, dt_group, dt_box, rank, gt_start, gt_count, gt_box, gt_area,
                  gt_crowd, thresholds, ranges, matched, ignored) -> None:
    """Greedy matching of the detections ``dets`` (their groups have <= ``width`` GTs).

    A detection whose IoU with every GT of its group is below the lowest threshold can
    match nothing and takes nothing away from the others, so only the rest are walked,
    round by round (the r-th such detection of every group in round r), with areas and
    thresholds on one axis."""
    if width == 0:
        return  # no GT: nothing to match
    groups, local = np.unique(dt_group[dets], return_inverse=True)
    cols = np.arange(width)
    valid = cols[None, :] < gt_count[groups][:, None]
    slots = np.where(valid, gt_start[groups][:, None] + cols[None, :], 0)
    crowd = gt_crowd[slots] & valid
    ious = iou_xywh_rows(dt_box[dets], gt_box[slots][local], crowd[local])
    ious[~valid[local]] = -1.0
    hopeful = (ious >= thresholds.min()).any(axis=1)
    if not hopeful.any():
        return
    dets, local, ious = dets[hopeful], local[hopeful], ious[hopeful]
    A, T = len(ranges), thresholds.size
    area = gt_area[slots]
    # (groups, A, width): ignored GT per area range
    gt_ig = crowd[:, None, :] | (area[:, None, :] < ranges[None, :, :1]) | \
        (area[:, None, :] > ranges[None, :, 1:])
    contested = np.zeros(groups.size, bool)
    contested[local[(ious >= thresholds.min()).sum(axis=1) > 1]] = True
    simple = ~contested[local]
    if simple.any():
        _match_simple(dets[simple], local[simple], ious[simple], rank, crowd, gt_ig, thresholds,
                      matched, ignored)
        if simple.all():
            return
        dets, local, ious = dets[~simple], local[~simple], ious[~simple]
    gt_ig = np.repeat(gt_ig, T, axis=1)  # (groups, A * T, width)
    cut = np.tile(thresholds, A)[None, :, None]
    crowd_taken_ok = crowd[:, None, :]
    taken = np.zeros((groups.size, A * T, width), bool)
    # round of each detection: its position among its group's hopeful detections (dets
    # are sorted by group, then rank)
    start = np.searchsorted(local, local, side="left")
    rounds = np.arange(local.size) - start
    order = np.argsort(rounds, kind="stable")
    bounds = np.searchsorted(rounds[order], np.arange(int(rounds.max()) + 2))
    for r in range(bounds.size - 1):
        at = order[bounds[r]:bounds[r + 1]]
        g = local[at]
        iou = ious[at][:, None, :]  # (n, 1, width)
        eligible = (iou >= cut) & ~(taken[g] & ~crowd_taken_ok[g])
        ig = gt_ig[g]
        regular = eligible & ~ig
        has_regular = regular.any(axis=2, keepdims=True)
        candidates = np.where(has_regular, regular, eligible & ig)
        score = np.where(candidates, iou, -2.0)
        best = width - 1 - np.argmax(score[:, :, ::-1], axis=2)  # ties: the last GT
        rows, cs = np.nonzero(candidates.any(axis=2))
        chosen = best[rows, cs]
        who = dets[at][rows]
        matched[who, cs] = True
        ignored[who, cs] = ig[rows, cs, chosen]
        taken[g[rows], cs, chosen] = True


def _match_simple(dets, local, ious, rank, crowd, gt_ig, thresholds, matched, ignored) -> None:
    """Groups where every detection has a single GT it can match (IoU >= the lowest
    threshold): there the greedy walk reduces to "the best-ranked detection over the
    threshold takes the GT" (every one does, for a crowd GT), the same in every area range."""
    width = ious.shape[1]
    column = np.argmax(ious >= thresholds.min(), axis=1)
    iou = ious[np.arange(dets.size), column]
    target = local * width + column
    order = np.lexsort((rank[dets], target))
    target, iou, column, local, dets = (x[order] for x in (target, iou, column, local, dets))
    over = iou[None, :] >= thresholds[:, None]  # (T, n)
    seen = np.cumsum(over, axis=1)
    start = np.searchsorted(target, target, side="left")
    before = np.where(start > 0, seen[:, np.maximum(start - 1, 0)], 0)
    first = over & (seen - before == 1)
    hit = np.where(crowd[local, column][None, :], over, first)
    A, T = gt_ig.shape[1], thresholds.size
    hit = np.tile(hit.T, A)  # (n, A * T)
    matched[dets] = hit
    ignored[dets] = hit & np.repeat(gt_ig[local, :, column], T, axis=1)


def iou_xywh_rows(dt: np.ndarray, gt: np.ndarray, crowd: np.ndarray) -> np.ndarray:
    """IoU of each detection (n, 4) with its own row of GT boxes (n, width, 4)."""
    dx, dy, dw, dh = (dt[:, None, k] for k in range(4))
    gx, gy, gw, gh = (gt[:, :, k] for k in range(4))
    w = np.minimum(dx + dw, gx + gw) - np.maximum(dx, gx)
    h = np.minimum(dy + dh, gy + gh) - np.maximum(dy, gy)
    inter = np.where((w > 0) & (h > 0), w * h, 0.0)
    da, ga = dw * dh, gw * gh
    union = np.where(crowd, da, da + ga - inter)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(inter > 0, inter / union, 0.0)


def _accumulate(tps, fp_before, regular, precision_out, recall_out) -> None:
    """One (category, area, maxDets) cell, pycocotools' accumulate read at the true
    positives only: recall only rises there, and precision's running maximum from the
    right is always attained at one of them (a false positive lowers precision, an ignored
    detection repeats it), so the values — the same divisions — are bit for bit the same.
    ``tps``: (thresholds, detections); ``fp_before``: false positives up to each detection.
    """
    for t in range(tps.shape[0]):
        at = np.flatnonzero(tps[t])
        recall_out[t] = at.size / regular
        tp = np.arange(1, at.size + 1, dtype=np.float64)
        fp = fp_before[t, at].astype(np.float64)
        pr = tp / (fp + tp + np.spacing(1))
        rc = tp / regular
        envelope = np.maximum.accumulate(pr[::-1])[::-1]
        inds = np.searchsorted(rc, RECALL_THRESHOLDS, side="left")
        inside = inds < at.size
        q = np.zeros(RECALL_THRESHOLDS.size)
        q[inside] = envelope[inds[inside]]
        precision_out[t] = q
