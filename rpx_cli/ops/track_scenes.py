"""One scene's tracks prepared as the nuScenes tracking devkit prepares them.

The devkit (``nuscenes.eval.tracking``: ``loaders.filter_eval_boxes``,
``loaders.create_tracks``, ``loaders.interpolate_tracks``) turns each side's boxes of a
scene into frames, in this order:

1. **filter**: a box is kept when its distance from the ego is ``< class_range[name]`` and
   its ``num_pts`` is not 0 (a box without the field has -1);
2. **track scores** (predictions): every box's score becomes the mean score of its track
   (``tracking_id``, over the kept boxes of the scene, all classes): ``numpy.mean`` of the
   scores in time and file order, summed pairwise as numpy sums (:func:`numpy_mean`), so
   the thresholds the devkit derives from them compare equal;
3. **interpolation** (both sides): a track missing from samples between two of its boxes
   gets a box in each, appended to the sample after its own boxes, tracks in order of first
   appearance; between a box L at time tL and R at tR, the box at t is
   ``(1 - r) L + r R`` with ``r = (tR - t) / (tR - tL)`` — the weight the devkit gives R
   (so the new box sits nearer R when t is near tL; reproduced as it is), its score the
   same blend, its class R's.

Then per (sample, class) frame every GT box is measured against every prediction with the
devkit's distances (:mod:`rpx_cli.ops.center_distances`); only pairs that can match (below
the threshold under some BLAS kernel) are kept. The result is a :class:`SceneFrames`: the
GT boxes and the predictions of every frame in the devkit's order with their class, track
and score, and the candidate pairs with their three distances. Everything the matching
needs — nothing else about the boxes — so a ``--shard`` part stores little.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rpx_cli.ops.center_distances import devkit_distances


@dataclass
class TrackSide:
    """One side of a scene: every box of every sample, as columns (sample in time order)."""

    sample: np.ndarray  # (N,) int64: the sample's index in the scene's time order
    xy: np.ndarray  # (N, 2) the centre's x, y
    distance: np.ndarray  # (N,) from the ego (ego_translation, else the centre), XY norm
    label: np.ndarray  # (N,) int64 class code (into the run's class list)
    track: np.ndarray  # (N,) int64 code of tracking_id within the scene side
    score: np.ndarray | None  # (N,) predictions only
    num_pts: np.ndarray  # (N,) int64, -1 = not given

    def __len__(self) -> int:
        return int(self.sample.size)

    def where(self, keep: np.ndarray) -> TrackSide:
        return TrackSide(self.sample[keep], self.xy[keep], self.distance[keep], self.label[keep],
                         self.track[keep], None if self.score is None else self.score[keep],
                         self.num_pts[keep])


@dataclass
class SceneFrames:
    """A scene ready for matching: boxes sorted by (sample, devkit order within the sample)."""

    n_samples: int
    gt_sample: np.ndarray  # (G,) int64
    gt_label: np.ndarray  # (G,)
    gt_object: np.ndarray  # (G,) track code within the scene
    pred_sample: np.ndarray  # (P,)
    pred_label: np.ndarray
    pred_track: np.ndarray
    pred_score: np.ndarray  # (P,) the track's mean score (interpolated boxes: blended)
    pair_gt: np.ndarray  # (C,) index into the GT boxes
    pair_pred: np.ndarray  # (C,) index into the predictions
    pair_distance: np.ndarray  # (3, C) the devkit's distance under each BLAS kernel

    def as_json(self) -> dict[str, Any]:
        return {"n_samples": self.n_samples,
                "gt": [self.gt_sample.tolist(), self.gt_label.tolist(), self.gt_object.tolist()],
                "pred": [self.pred_sample.tolist(), self.pred_label.tolist(),
                         self.pred_track.tolist(), self.pred_score.tolist()],
                "pairs": [self.pair_gt.tolist(), self.pair_pred.tolist(),
                          self.pair_distance.ravel().tolist()]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SceneFrames:
        gt, pred, pairs = data["gt"], data["pred"], data["pairs"]
        ints = [np.asarray(v, np.int64) for v in (*gt, *pred[:3], *pairs[:2])]
        return cls(int(data["n_samples"]), *ints[:3], *ints[3:6],
                   np.asarray(pred[3], np.float64), ints[6], ints[7],
                   np.asarray(pairs[2], np.float64).reshape(3, -1))


def numpy_mean(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``numpy.mean`` of each group's values in their order (``group`` sorted ascending),
    bit for bit: numpy sums a float64 array pairwise — fewer than 8 values one by one from
    0.0, up to 128 in eight interleaved partial sums combined as a tree, then the rest one by
    one; longer runs split in halves at multiples of 8 — then divides by the count."""
    counts = np.bincount(group, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    sums = np.zeros(n_groups)
    for length in np.unique(counts[counts > 0]).tolist():
        chosen = np.flatnonzero(counts == length)
        block = values[starts[chosen][:, None] + np.arange(length)]
        sums[chosen] = _pairwise(block)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts


def _pairwise(block: np.ndarray) -> np.ndarray:
    """numpy's pairwise sum of each row of ``block`` (rows of one length n)."""
    n = block.shape[1]
    if n < 8:
        total = np.zeros(block.shape[0])
        for i in range(n):
            total = total + block[:, i]
        return total
    if n <= 128:
        lanes = block[:, :8].copy()
        i = 8
        while i < n - n % 8:
            lanes += block[:, i:i + 8]
            i += 8
        total = ((lanes[:, 0] + lanes[:, 1]) + (lanes[:, 2] + lanes[:, 3])) + \
                ((lanes[:, 4] + lanes[:, 5]) + (lanes[:, 6] + lanes[:, 7]))
        for j in range(i, n):
            total = total + block[:, j]
        return total
    half = n // 2
    half -= half % 8
    return _pairwise(block[:, :half]) + _pairwise(block[:, half:])


def keep_boxes(side: TrackSide, caps: np.ndarray) -> np.ndarray:
    """The devkit's filter: distance ``< caps[label]`` (inf: no cap) and ``num_pts != 0``."""
    return (side.distance < caps[side.label]) & (side.num_pts != 0)


def track_scores(side: TrackSide) -> np.ndarray:
    """Every box's score replaced by its track's mean score (``side`` in time and file order)."""
    order = np.argsort(side.track, kind="stable")
    n_tracks = int(side.track.max()) + 1 if len(side) else 0
    means = numpy_mean(side.score[order], side.track[order], n_tracks)
    return means[side.track]


def interpolate(side: TrackSide, timestamps: np.ndarray) -> tuple[TrackSide, np.ndarray]:
    """The side with every track's gaps filled (the devkit's ``interpolate_tracks``), and
    the order of the boxes in the devkit's frames: by sample, a sample's own boxes first in
    file order, then its interpolated ones by their track's first appearance. Returns the
    side (originals then new boxes) and that order."""
    n = len(side)
    if n == 0:
        return side, np.zeros(0, np.int64)
    by_track = np.lexsort((np.arange(n), side.sample, side.track))  # time order within a track
    track, sample = side.track[by_track], side.sample[by_track]
    same = track[1:] == track[:-1]
    gap = sample[1:] - sample[:-1] - 1
    left = np.flatnonzero(same & (gap > 0))  # position in by_track of L; L+1 is R
    first_seen = np.full(int(side.track.max()) + 1, n, np.int64)
    np.minimum.at(first_seen, side.track, np.arange(n))  # (sample, file) order = index order
    if left.size:
        lengths = gap[left]
        which = np.repeat(left, lengths)
        offset = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        li, ri = by_track[which], by_track[which + 1]
        at = side.sample[li] + 1 + offset
        t_left, t_right, t = timestamps[side.sample[li]], timestamps[side.sample[ri]], timestamps[at]
        ratio = (t_right - t).astype(np.float64) / (t_right - t_left).astype(np.float64)
        keep = 1.0 - ratio
        xy = keep[:, None] * side.xy[li] + ratio[:, None] * side.xy[ri]
        score = None if side.score is None else keep * side.score[li] + ratio * side.score[ri]
        new = TrackSide(at, xy, side.distance[ri], side.label[ri], side.track[ri], score,
                        np.full(at.size, -1, np.int64))
        side = _concat(side, new)
    rank = np.concatenate((np.arange(n), n + first_seen[side.track[n:]]))
    order = np.lexsort((rank, side.sample))
    return side, order


def _concat(a: TrackSide, b: TrackSide) -> TrackSide:
    return TrackSide(np.concatenate((a.sample, b.sample)), np.concatenate((a.xy, b.xy)),
                     np.concatenate((a.distance, b.distance)), np.concatenate((a.label, b.label)),
                     np.concatenate((a.track, b.track)),
                     None if a.score is None else np.concatenate((a.score, b.score)),
                     np.concatenate((a.num_pts, b.num_pts)))


def prepare_scene(gt: TrackSide, pred: TrackSide, timestamps: np.ndarray, caps: np.ndarray,
                  n_classes: int, dist_th: float) -> SceneFrames:
    """The devkit's frames of one scene (``timestamps``: each sample's, increasing) and the
    GT-prediction pairs that can match (:class:`SceneFrames`)."""
    gt = gt.where(keep_boxes(gt, caps))
    pred = pred.where(keep_boxes(pred, caps))
    if len(pred):
        pred = TrackSide(pred.sample, pred.xy, pred.distance, pred.label, pred.track,
                         track_scores(pred), pred.num_pts)
    gt, gt_order = interpolate(gt, timestamps)
    pred, pred_order = interpolate(pred, timestamps)
    gt, pred = gt.where(gt_order), pred.where(pred_order)
    pair_gt, pair_pred, distance = candidate_pairs(gt, pred, n_classes, dist_th)
    return SceneFrames(int(timestamps.size), gt.sample, gt.label, gt.track, pred.sample,
                       pred.label, pred.track,
                       pred.score if pred.score is not None else np.zeros(0),
                       pair_gt, pair_pred, distance)


def candidate_pairs(gt: TrackSide, pred: TrackSide, n_classes: int,
                    dist_th: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (GT, prediction) of one (sample, class) frame that matches under some kernel
    (distance < ``dist_th``), ordered by GT then prediction (both in frame order)."""
    key_g = gt.sample * n_classes + gt.label
    key_p = pred.sample * n_classes + pred.label
    order_p = np.argsort(key_p, kind="stable")
    lo = np.searchsorted(key_p[order_p], key_g, "left")
    hi = np.searchsorted(key_p[order_p], key_g, "right")
    counts = hi - lo
    total = int(counts.sum())
    if not total:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((3, 0))
    g = np.repeat(np.arange(len(gt)), counts)
    p = order_p[np.repeat(lo, counts) + np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)]
    x, y = gt.xy[g], pred.xy[p]
    # cheap exact-difference filter first, with room for the expansion's rounding
    dx, dy = x[:, 0] - y[:, 0], x[:, 1] - y[:, 1]
    slack = 1e-9 + 1e-13 * (np.abs(x).sum(axis=1) + np.abs(y).sum(axis=1)) ** 2
    near = np.flatnonzero(dx * dx + dy * dy < dist_th * dist_th + slack)
    g, p = g[near], p[near]
    distance = devkit_distances(gt.xy[g], pred.xy[p])
    can = (distance < dist_th).any(axis=0)
    return g[can], p[can], np.ascontiguousarray(distance[:, can])
