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
    outside = (dt_area[None, :] < ranges[:, :1]) | (dt_area[None, :] > ranges[:, 1:])
    ignored |= ~matched & outside[:, None, :]

    gt_ignored = gt_crowd[None, :] | (gt_area[None, :] < ranges[:, :1]) | (gt_area[None, :] > ranges[:, 1:])
    gt_category = gt_group % K
    precision = -np.ones((T, len(RECALL_THRESHOLDS), K, A, M))
    recall = -np.ones((T, K, A, M))
    # one sort for every cell: score descending, ties by image then rank (pycocotools'
    # concatenation order); selecting a subset of a sorted array keeps it sorted
    ranked = np.lexsort((rank, dt_image, -dt_score))
    for k in range(K):
        in_k = ranked[dt_category[ranked] == k]
        gts_k = gt_category == k
        if not in_k.size and not gts_k.any():
            continue  # no image has anything of this category
        for a in range(A):
            regular = int(np.count_nonzero(gts_k & ~gt_ignored[a]))
            if regular == 0:
                continue
            for m, max_det in enumerate(MAX_DETS):
                sel = in_k[rank[in_k] < max_det]
                _accumulate(matched[a][:, sel], ignored[a][:, sel], regular,
                            precision[:, :, k, a, m], recall[:, k, a, m])
    return CocoResult(precision, recall)


def greedy_match(dt_group, dt_box, rank, gt_group, gt_box, gt_area, gt_crowd, thresholds,
                 ranges, n_groups) -> tuple[np.ndarray, np.ndarray]:
    """pycocotools' greedy matching, for every group at once.

    Detections are given sorted by group and rank (best score first) and GT sorted by
    group in input order. Returns ``(matched, ignored)`` of shape (areas, thresholds,
    detections): matched to any GT, and matched to an ignored GT (crowd, or area outside
    the range ``ranges[a]``).
    """
    A, T = len(ranges), len(thresholds)
    gt_start = np.searchsorted(gt_group, np.arange(n_groups), side="left")
    gt_count = np.searchsorted(gt_group, np.arange(n_groups), side="right") - gt_start
    matched = np.zeros((A, T, dt_group.size), bool)
    ignored = np.zeros((A, T, dt_group.size), bool)
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
    """Greedy matching of the detections ``dets`` (their groups have <= ``width`` GTs)."""
    if width == 0:
        return  # no GT: nothing to match
    groups, local = np.unique(dt_group[dets], return_inverse=True)
    slots = gt_start[groups][:, None] + np.arange(width)[None, :]
    valid = np.arange(width)[None, :] < gt_count[groups][:, None]
    slots = np.where(valid, slots, 0)
    crowd = gt_crowd[slots] & valid
    area = gt_area[slots]
    boxes = gt_box[slots]  # (groups, width, 4)
    det_boxes = dt_box[dets]
    ious = iou_xywh_rows(det_boxes, boxes[local], crowd[local])
    ious = np.where(valid[local], ious, -1.0)
    T = thresholds.size
    for a, (low, high) in enumerate(ranges):
        gt_ig = crowd | (area < low) | (area > high)
        taken = np.zeros((groups.size, T, width), bool)
        for r in range(int(rank[dets].max()) + 1):
            at = np.flatnonzero(rank[dets] == r)
            if not at.size:
                continue
            g = local[at]
            iou = ious[at][:, None, :]  # (n, 1, width)
            free = ~(taken[g] & ~crowd[g][:, None, :])
            eligible = (iou >= thresholds[None, :, None]) & free & valid[g][:, None, :]
            ig = gt_ig[g][:, None, :]
            regular = eligible & ~ig
            has_regular = regular.any(axis=2, keepdims=True)
            candidates = np.where(has_regular, regular, eligible & ig)
            score = np.where(candidates, iou, -2.0)
            best = width - 1 - np.argmax(score[:, :, ::-1], axis=2)  # ties: the last GT
            hit = candidates.any(axis=2)
            rows, ts = np.nonzero(hit)
            matched[a][:, dets[at]] = hit.T
            ignored[a][ts, dets[at][rows]] = gt_ig[g[rows], best[rows, ts]]
            taken[g[rows], ts, best[rows, ts]] = True


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


def _accumulate(matched, ignored, regular, precision_out, recall_out) -> None:
    """One (category, area, maxDets) cell: pycocotools' accumulate, vectorised over T."""
    tps = matched & ~ignored
    fps = ~matched & ~ignored
    tp = np.cumsum(tps, axis=1).astype(float)
    fp = np.cumsum(fps, axis=1).astype(float)
    nd = tp.shape[1]
    rc = tp / regular
    pr = tp / (fp + tp + np.spacing(1))
    recall_out[:] = rc[:, -1] if nd else 0.0
    pr = np.maximum.accumulate(pr[:, ::-1], axis=1)[:, ::-1]
    for t in range(rc.shape[0]):
        inds = np.searchsorted(rc[t], RECALL_THRESHOLDS, side="left")
        inside = inds < nd
        q = np.zeros(RECALL_THRESHOLDS.size)
        q[inside] = pr[t, inds[inside]]
        precision_out[t] = q
