"""nuScenes tracking evaluation over prepared scenes (``TrackingEval.evaluate``).

Each scene was prepared on its own (:func:`rpx_cli.ops.track_scenes.prepare_scene`: filters,
track scores, interpolation, candidate pairs). Here every class is evaluated over all scenes
at once: one threshold-free run picks the class's score thresholds
(:func:`rpx_cli.ops.amota.score_thresholds`), one run over every distinct threshold gives
the figures (:mod:`rpx_cli.ops.track_matching` walks the frame positions once for every
threshold and scene), and :mod:`rpx_cli.ops.amota` turns them into the class's curves and
figures. Per scene, each class's events at its best threshold (the one its MOTA is reported
at) make the scene's row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rpx_cli.ops.amota import (
    ClassCurves,
    class_curves,
    class_summary,
    distinct_thresholds,
    lane_figures,
    mean_over_classes,
    score_thresholds,
)
from rpx_cli.ops.track_matching import MATCH, MISS, SWITCH, ClassFrames, match_lanes
from rpx_cli.ops.track_scenes import SceneFrames

SCENE_COUNTS = ("n_gt", "n_pred", "tp", "fp", "fn", "ids", "frag", "distance")


@dataclass
class TrackingResult:
    per_class: dict[str, dict[str, float | None]]
    overall: dict[str, float | None]
    curves: dict[str, ClassCurves | None]
    scenes: dict[str, np.ndarray]  # SCENE_COUNTS -> (S,) per scene, summed over classes


def evaluate_scenes(scenes: Sequence[SceneFrames], classes: Sequence[str], *, dist_th: float,
                    num_thresholds: int, min_recall: float) -> TrackingResult:
    """Every class's figures and curves, their means, and each scene's counts."""
    n_scenes = len(scenes)
    counts = {key: np.zeros(n_scenes) for key in SCENE_COUNTS}
    per_class, curves = {}, {}
    for c, name in enumerate(classes):
        frames = class_frames(scenes, c)
        counts["n_gt"] += np.bincount(frames.gt_scene, minlength=n_scenes)
        counts["n_pred"] += np.bincount(frames.pred_scene, minlength=n_scenes)
        n_gt = frames.gt_sample.size
        if not n_gt:
            per_class[name], _ = class_summary(None)
            curves[name] = None
            counts["fp"] += np.bincount(frames.pred_scene, minlength=n_scenes)
            continue
        free = match_lanes(frames, np.array([-np.inf]), dist_th)
        thresholds, targets = score_thresholds(free.match_scores, n_gt, num_thresholds, min_recall)
        distinct = distinct_thresholds(thresholds)
        n_objects = np.unique(frames.gt_object).size
        if distinct.size:
            events = match_lanes(frames, distinct, dist_th)
            figures = lane_figures(frames, events)
        else:
            events, figures = None, None
        curve = class_curves(thresholds, targets, figures, n_gt, n_objects)
        per_class[name], best = class_summary(curve)
        curves[name] = curve
        lane = -1 if best is None else int(curve.lane[best])
        if events is None or lane < 0:
            counts["fn"] += np.bincount(frames.gt_scene, minlength=n_scenes)
            counts["fp"] += np.bincount(frames.pred_scene, minlength=n_scenes)
            continue
        status = events.status[lane]
        for key, kind in (("tp", MATCH), ("ids", SWITCH), ("fn", MISS)):
            counts[key] += np.bincount(frames.gt_scene[status == kind], minlength=n_scenes)
        false = events.active_pred[lane] & ~events.matched_pred[lane]
        counts["fp"] += np.bincount(frames.pred_scene[false], minlength=n_scenes)
        counts["distance"] += np.bincount(frames.gt_scene, weights=events.distance[lane],
                                          minlength=n_scenes)
        counts["frag"] += scene_frags(frames, status != MISS)
    return TrackingResult(per_class, mean_over_classes(per_class), curves, counts)


def class_frames(scenes: Sequence[SceneFrames], c: int) -> ClassFrames:
    """Class ``c``'s boxes of every scene, sorted by (sample, scene, frame order), with
    object and track ids made unique over the scenes."""
    gt_parts, pred_parts, pair_parts = [], [], []
    gt_base = pred_base = object_base = track_base = 0
    for s, scene in enumerate(scenes):
        g = np.flatnonzero(scene.gt_label == c)
        p = np.flatnonzero(scene.pred_label == c)
        gt_parts.append((scene.gt_sample[g], np.full(g.size, s), scene.gt_object[g] + object_base))
        pred_parts.append((scene.pred_sample[p], np.full(p.size, s),
                           scene.pred_track[p] + track_base, scene.pred_score[p]))
        # candidate pairs of this class: GT and prediction indices within the class's boxes
        g_new = np.full(scene.gt_label.size, -1)
        g_new[g] = np.arange(g.size) + gt_base
        p_new = np.full(scene.pred_label.size, -1)
        p_new[p] = np.arange(p.size) + pred_base
        mine = scene.gt_label[scene.pair_gt] == c
        pair_parts.append((g_new[scene.pair_gt[mine]], p_new[scene.pair_pred[mine]],
                           scene.pair_distance[:, mine]))
        gt_base += g.size
        pred_base += p.size
        object_base += int(scene.gt_object.max(initial=-1)) + 1
        track_base += int(scene.pred_track.max(initial=-1)) + 1

    def cat(parts: list, i: int, dtype=np.int64) -> np.ndarray:
        return np.concatenate([part[i] for part in parts]).astype(dtype, copy=False) \
            if parts else np.zeros(0, dtype)

    gt_sample, gt_scene, gt_object = cat(gt_parts, 0), cat(gt_parts, 1), cat(gt_parts, 2)
    pred_sample, pred_scene = cat(pred_parts, 0), cat(pred_parts, 1)
    pred_track, pred_score = cat(pred_parts, 2), cat(pred_parts, 3, np.float64)
    gt_order = np.lexsort((np.arange(gt_sample.size), gt_scene, gt_sample))
    pred_order = np.lexsort((np.arange(pred_sample.size), pred_scene, pred_sample))
    gt_rank = np.empty_like(gt_order)
    gt_rank[gt_order] = np.arange(gt_order.size)
    pred_rank = np.empty_like(pred_order)
    pred_rank[pred_order] = np.arange(pred_order.size)
    pair_gt = gt_rank[cat(pair_parts, 0)] if pair_parts else np.zeros(0, np.int64)
    pair_pred = pred_rank[cat(pair_parts, 1)] if pair_parts else np.zeros(0, np.int64)
    distance = np.concatenate([part[2] for part in pair_parts], axis=1) if pair_parts \
        else np.zeros((3, 0))
    pair_order = np.lexsort((pair_pred, pair_gt))
    # object ids compacted to 0..n-1 (the state array is indexed by them)
    gt_object = gt_object[gt_order]
    _, gt_object = np.unique(gt_object, return_inverse=True)
    return ClassFrames(gt_sample[gt_order], gt_scene[gt_order], gt_object.astype(np.int64),
                       pred_sample[pred_order], pred_scene[pred_order], pred_track[pred_order],
                       pred_score[pred_order], pair_gt[pair_order], pair_pred[pair_order],
                       distance[:, pair_order], len(scenes),
                       int(gt_object.max(initial=-1)) + 1)


def scene_frags(frames: ClassFrames, tracked: np.ndarray) -> np.ndarray:
    """Fragmentations per scene of one lane: each object's tracked runs minus one."""
    order = np.lexsort((frames.gt_sample, frames.gt_object))
    obj, flags = frames.gt_object[order], tracked[order]
    if not obj.size:
        return np.zeros(frames.n_scenes)
    start = np.concatenate(([True], (obj[1:] != obj[:-1]) | (flags[1:] != flags[:-1])))
    runs = np.bincount(obj[start & flags], minlength=frames.n_objects)
    scene_of = np.zeros(frames.n_objects, np.int64)
    scene_of[frames.gt_object] = frames.gt_scene
    return np.bincount(scene_of, weights=np.maximum(runs - 1, 0), minlength=frames.n_scenes)
