"""CLEAR-MOT events of one class at many score thresholds, over many scenes at once.

The nuScenes tracking devkit runs py-motmetrics' ``MOTAccumulator`` (1.1.3) once per score
threshold and scene, frame by frame, on the predictions with ``tracking_score >=
threshold``. A frame's update, for GT objects (rows, in frame order) and predictions
(columns, in frame order), with distances ``>= dist_th`` not allowed:

1. **carry**: each GT object whose previous match is in the frame and within reach is
   matched to it again (``MATCH``); a prediction already taken this way is not available to
   a later row (rows in order);
2. **assignment**: the rest by ``scipy.optimize.linear_sum_assignment`` on the distances, the
   disallowed entries (and the carried rows and columns) replaced by ``2 * max + 1`` of the
   allowed ones; an assigned pair that is allowed is a ``SWITCH`` when the object was
   matched to another track before (ever, in this scene), else a ``MATCH``;
3. the other GT objects are ``MISS``es, the other predictions ``FP``s.

Here every (threshold, scene) pair is a *lane*; :func:`match_lanes` walks the frame
positions once and treats every lane of that position together: the carry is a comparison
of arrays, and the assignment is settled without a solver when the allowed pairs left form a
matching (each object and prediction in at most one): the solver then chooses all of them
(each lowers the cost, and no two compete). Only frames where pairs compete call the solver,
on the devkit's very matrix (same rows, columns, values and fill), so its ties break alike.

What it returns per lane (:class:`LaneEvents`): each GT box's event (miss, match, switch) and
distance, the matched predictions, the frames with a box, and — for the threshold-free run
that chooses the thresholds — the scores of the ``MATCH``ed predictions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rpx_cli.ops.assignment import solver
from rpx_cli.ops.center_distances import kernel_index

MISS, MATCH, SWITCH = 0, 1, 2


@dataclass
class ClassFrames:
    """One class's boxes over every scene, sorted by (sample, scene, frame order)."""

    gt_sample: np.ndarray  # (G,)
    gt_scene: np.ndarray
    gt_object: np.ndarray  # (G,) object id, unique over the scenes
    pred_sample: np.ndarray  # (P,)
    pred_scene: np.ndarray
    pred_track: np.ndarray  # (P,) track id, unique over the scenes
    pred_score: np.ndarray
    pair_gt: np.ndarray  # (C,) into the GT boxes, sorted by GT
    pair_pred: np.ndarray  # (C,) into the predictions
    pair_distance: np.ndarray  # (3, C)
    n_scenes: int
    n_objects: int


@dataclass
class LaneEvents:
    """The events of every lane (threshold) over every scene."""

    status: np.ndarray  # (K, G) int8: MISS, MATCH, SWITCH of each GT box
    distance: np.ndarray  # (K, G) the distance of a match or switch (0 for a miss)
    matched_pred: np.ndarray  # (K, P) bool
    active_pred: np.ndarray  # (K, P) bool: score >= threshold
    frames: np.ndarray  # (K, S) frames with a GT box or an active prediction, per scene
    gt_frame: np.ndarray  # (K, G) each GT box's frame number in its scene (frames with a box)
    match_scores: np.ndarray  # scores of the MATCHed predictions of lane 0


def match_lanes(frames: ClassFrames, thresholds: np.ndarray, dist_th: float) -> LaneEvents:
    """The devkit's events for every threshold in ``thresholds`` (one lane each)."""
    k_lanes = thresholds.size
    n_gt, n_pred, n_scenes = frames.gt_sample.size, frames.pred_sample.size, frames.n_scenes
    status = np.zeros((k_lanes, n_gt), np.int8)
    distance = np.zeros((k_lanes, n_gt))
    matched_pred = np.zeros((k_lanes, n_pred), bool)
    active_pred = frames.pred_score[None, :] >= thresholds[:, None]
    n_frames = np.zeros((k_lanes, n_scenes), np.int64)
    gt_frame = np.zeros((k_lanes, n_gt), np.int64)
    previous = np.full((k_lanes, frames.n_objects), -1, np.int64)  # motmetrics' m: object -> track
    match_scores: list[np.ndarray] = []
    last = max(int(frames.gt_sample.max(initial=-1)), int(frames.pred_sample.max(initial=-1)))
    gt_bounds = np.searchsorted(frames.gt_sample, np.arange(last + 2))
    pred_bounds = np.searchsorted(frames.pred_sample, np.arange(last + 2))
    pair_bounds = np.searchsorted(frames.pair_gt, gt_bounds)
    lanes = np.arange(k_lanes)[:, None]
    for t in range(last + 1):
        g0, g1 = gt_bounds[t], gt_bounds[t + 1]
        p0, p1 = pred_bounds[t], pred_bounds[t + 1]
        c0, c1 = pair_bounds[t], pair_bounds[t + 1]
        gt_count = np.bincount(frames.gt_scene[g0:g1], minlength=n_scenes)
        active = active_pred[:, p0:p1]
        flat_scene = (lanes * n_scenes + frames.pred_scene[p0:p1][None, :])[active]
        act_count = np.bincount(flat_scene, minlength=k_lanes * n_scenes).reshape(k_lanes, n_scenes)
        gt_frame[:, g0:g1] = n_frames[:, frames.gt_scene[g0:g1]]
        n_frames += (gt_count[None, :] > 0) | (act_count > 0)
        if c1 == c0:
            continue
        pg, pp = frames.pair_gt[c0:c1], frames.pair_pred[c0:c1]
        scene = frames.gt_scene[pg]
        pair_active = active_pred[:, pp]
        kernel = kernel_index(gt_count[scene][None, :], act_count[:, scene])
        d = np.take_along_axis(frames.pair_distance[:, c0:c1], np.minimum(kernel, 2), axis=0) \
            if k_lanes else np.zeros((0, c1 - c0))
        valid = pair_active & (d < dist_th)
        prev = previous[:, frames.gt_object[pg]]
        track = frames.pred_track[pp]
        carry = valid & (prev == track[None, :])
        if carry.any():  # a prediction carried by two objects goes to the first row
            lane_i, pair_i = np.nonzero(carry)
            key = lane_i * (p1 - p0) + (pp[pair_i] - p0)
            _, first = np.unique(key, return_index=True)
            keep = np.zeros(carry.shape, bool)
            keep[lane_i[first], pair_i[first]] = True
            carry = keep
        carried_g = np.zeros((k_lanes, g1 - g0), bool)
        carried_p = np.zeros((k_lanes, p1 - p0), bool)
        lane_c, pair_c = np.nonzero(carry)
        carried_g[lane_c, pg[pair_c] - g0] = True
        carried_p[lane_c, pp[pair_c] - p0] = True
        left = valid & ~carried_g[:, pg - g0] & ~carried_p[:, pp - p0]
        assigned = _assign(left, pg - g0, pp - p0, scene, d, frames, active, g0, p0, g1)
        lane_a, pair_a = np.nonzero(assigned)
        obj = frames.gt_object[pg[pair_a]]
        before = previous[lane_a, obj]
        switch = (before >= 0) & (before != track[pair_a])
        previous[lane_a, obj] = track[pair_a]
        status[lane_c, pg[pair_c]] = MATCH
        status[lane_a, pg[pair_a]] = np.where(switch, SWITCH, MATCH)
        distance[lane_c, pg[pair_c]] = d[lane_c, pair_c]
        distance[lane_a, pg[pair_a]] = d[lane_a, pair_a]
        matched_pred[lane_c, pp[pair_c]] = True
        matched_pred[lane_a, pp[pair_a]] = True
        if k_lanes:  # the first lane's MATCHed predictions (the threshold-free run)
            first_lane = np.concatenate((pp[pair_c[lane_c == 0]],
                                         pp[pair_a[(lane_a == 0) & ~switch]]))
            match_scores.append(frames.pred_score[first_lane])
    scores = np.concatenate(match_scores) if match_scores else np.zeros(0)
    return LaneEvents(status, distance, matched_pred, active_pred, n_frames, gt_frame, scores)


def _assign(left: np.ndarray, row: np.ndarray, col: np.ndarray, scene: np.ndarray,
            d: np.ndarray, frames: ClassFrames, active: np.ndarray, g0: int, p0: int,
            g1: int) -> np.ndarray:
    """The pairs the assignment step matches (K x C bool) among the allowed pairs ``left``
    (``row``/``col``: each pair's GT and prediction within the frame position)."""
    k_lanes = left.shape[0]
    if not left.any():
        return left
    lane_i, pair_i = np.nonzero(left)
    rows_deg = np.bincount(lane_i * (g1 - g0) + row[pair_i], minlength=k_lanes * (g1 - g0))
    cols_deg = np.bincount(lane_i * active.shape[1] + col[pair_i],
                           minlength=k_lanes * active.shape[1])
    crowded = (rows_deg[lane_i * (g1 - g0) + row[pair_i]] > 1) | \
              (cols_deg[lane_i * active.shape[1] + col[pair_i]] > 1)
    assigned = left.copy()
    if not crowded.any():
        return assigned
    groups = np.unique(lane_i[crowded] * frames.n_scenes + scene[pair_i[crowded]])
    for group in groups.tolist():
        lane, s = divmod(group, frames.n_scenes)
        mine = (lane_i == lane) & (scene[pair_i] == s)
        pairs = pair_i[mine]
        assigned[lane, pairs] = False
        # the devkit's matrix: every GT box of the frame, every active prediction, in order
        gt_rows = np.flatnonzero(frames.gt_scene[g0:g1] == s)
        pred_cols = np.flatnonzero(active[lane] & (frames.pred_scene[p0:p0 + active.shape[1]] == s))
        matrix = np.full((gt_rows.size, pred_cols.size), np.nan)
        r = np.searchsorted(gt_rows, row[pairs])
        c = np.searchsorted(pred_cols, col[pairs])
        matrix[r, c] = d[lane, pairs]
        fill = 2 * np.nanmax(matrix) + 1
        rids, cids = solver()(np.where(np.isnan(matrix), fill, matrix))
        chosen = ~np.isnan(matrix[rids, cids])
        lookup = {(a, b): pair for a, b, pair in zip(r.tolist(), c.tolist(), pairs.tolist(), strict=True)}
        for a, b in zip(rids[chosen].tolist(), cids[chosen].tolist(), strict=True):
            assigned[lane, lookup[(a, b)]] = True
    return assigned
