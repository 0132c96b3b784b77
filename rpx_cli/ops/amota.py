"""nuScenes tracking metrics of one class: AMOTA, AMOTP and the CLEAR-MOT figures at the
best threshold, as nuscenes-devkit 1.1.9 (``TrackingEvaluation.accumulate``,
``TrackingEval.evaluate``, ``metrics.py``; py-motmetrics 1.1.3 for the counts).

**Thresholds** (``compute_thresholds``): a run with every prediction gives the scores of
its ``MATCH``ed predictions (switches left out), sorted descending; recall after the k-th is
``k / n_gt``. The ``num_thresholds`` (40) recall targets ``linspace(min_recall, 1, 40)``
(rounded to 12 decimals) get the score ``numpy.interp`` reads at them (``right=0``); targets
beyond the recall reached have none. They are listed from recall 1 down, so the scores
rise; each distinct score is run once (:mod:`rpx_cli.ops.track_matching`), its figures
repeated for its duplicates, and the targets not reached get none.

**Per threshold** (from the events): ``tp`` matches, ``ids`` switches, ``fn`` misses,
``fp`` false positives, ``gt`` GT boxes; ``recall = (tp + ids) / gt``; ``mota = max(0, 1 -
(fn + ids + fp) / gt)``; ``motar = max(0, 1 - (fn + ids + fp - (1 - r) gt) / (r gt))`` with
``r = tp / gt`` (undefined when ``r gt`` is 0); ``motp`` the mean distance of the matches and
switches; ``faf = 100 fp / frames`` (frames with a GT box or a prediction); per GT object
(time counted in frames with a box, 0.5 s each): ``mt``/``ml`` the objects tracked in >= 80 %
/ < 20 % of their boxes, ``frag`` the times a tracked object is lost and found again (its
tracked runs minus one), ``tid`` the mean over tracked objects of the time before it is
first tracked, ``lgd`` the mean of its longest untracked stretch.

**Summary** (``TrackingEval.evaluate``): the figures at the threshold of best ``mota`` (the
highest recall among ties); ``amota`` the mean of ``motar`` over the 40 targets and
``amotp`` of ``motp``, a target not reached (or undefined) counting the worst value (0 and
2). A class with GT but no matched prediction at any threshold gets the worst values of the
devkit's config (``fp``, ``ids``, ``frag`` undefined: "we can't know how these error types
are distributed"); a class without GT has every figure undefined. Undefined is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rpx_cli.ops.track_matching import MISS, ClassFrames, LaneEvents

LANE_KEYS = ("recall", "motar", "gt", "mota", "motp", "mt", "ml", "faf", "tp", "fp", "fn", "ids",
             "frag", "tid", "lgd")
CLASS_KEYS = ("amota", "amotp", *LANE_KEYS)
# the devkit's tracking_nips_2019 metric_worst; -1 there: the counts below
WORST = {"amota": 0.0, "amotp": 2.0, "recall": 0.0, "motar": 0.0, "mota": 0.0, "motp": 2.0,
         "mt": 0.0, "faf": 500.0, "tp": 0.0, "tid": 20.0, "lgd": 20.0}
SUMMED = ("mt", "ml", "tp", "fp", "fn", "ids", "frag")  # over classes; the rest averaged
SAMPLE_PERIOD = 0.5  # seconds between samples, as the devkit counts TID and LGD


def score_thresholds(match_scores: np.ndarray, n_gt: int, num_thresholds: int,
                     min_recall: float) -> tuple[np.ndarray, np.ndarray]:
    """``(thresholds, recall targets)``, from recall 1 down; NaN for a target not reached."""
    targets = np.linspace(min_recall, 1, num_thresholds).round(12)
    if not match_scores.size:
        return np.full(num_thresholds, np.nan), np.full(num_thresholds, np.nan)
    scores = np.sort(match_scores)[::-1]
    recall = np.arange(1, scores.size + 1) / n_gt
    thresholds = np.interp(targets, recall, scores, right=0)
    thresholds[targets > recall.max()] = np.nan
    return thresholds[::-1].copy(), targets[::-1].copy()


def lane_figures(frames: ClassFrames, events: LaneEvents) -> dict[str, np.ndarray]:
    """Every figure of :data:`LANE_KEYS` per lane (NaN: undefined)."""
    status = events.status
    n_gt = frames.gt_sample.size
    with np.errstate(invalid="ignore", divide="ignore"):
        tp = (status == 1).sum(axis=1)
        ids = (status == 2).sum(axis=1)
        fn = (status == MISS).sum(axis=1)
        fp = (events.active_pred & ~events.matched_pred).sum(axis=1)
        detections = tp + ids
        d_sum = events.distance.sum(axis=1)
        gt = np.full(tp.shape, n_gt)
        recall = detections / gt
        mota = np.maximum(0, 1.0 - (fn + ids + fp) / gt)
        r = tp / gt
        denominator = r * gt
        nominator = (fn + ids + fp) - (1 - r) * gt
        motar = np.where(denominator == 0, np.nan,
                         np.maximum(0, 1 - 1.0 * nominator / np.where(denominator == 0, 1, denominator)))
        motp = np.where(detections == 0, np.nan, d_sum / np.maximum(detections, 1))
        n_frames = events.frames.sum(axis=1)
        faf = fp / n_frames * 100
    objects = object_figures(frames, status != MISS, events.gt_frame)
    return {"recall": recall, "motar": motar, "gt": gt.astype(np.float64), "mota": mota,
            "motp": motp, "faf": faf, "tp": tp.astype(np.float64), "fp": fp.astype(np.float64),
            "fn": fn.astype(np.float64), "ids": ids.astype(np.float64), **objects}


def object_figures(frames: ClassFrames, tracked: np.ndarray,
                   frame: np.ndarray) -> dict[str, np.ndarray]:
    """``mt``, ``ml``, ``frag``, ``tid``, ``lgd`` per lane from each GT box's tracked flag and
    frame number (K x G; motmetrics counts time in frames with a box): per object, ``frag``
    its tracked runs minus one; ``tid`` the frames from its first box to its first tracked
    one; ``lgd`` its longest stretch of frames between its first and last box without a
    tracked box (frames where it has no box count too, as the devkit loops over frame ids)."""
    k_lanes, n_gt = tracked.shape
    n_obj = frames.n_objects
    # an object's boxes are in the same order in every lane (frame numbers grow with time)
    order = np.lexsort((frames.gt_sample, frames.gt_object))
    key = (np.arange(k_lanes)[:, None] * n_obj + frames.gt_object[order][None, :]).ravel()
    hit = tracked[:, order].ravel()
    when = frame[:, order].ravel()
    size = k_lanes * n_obj
    appear = np.bincount(frames.gt_object, minlength=n_obj)
    present = appear > 0
    n_tracked = np.bincount(key[hit], minlength=size).reshape(k_lanes, n_obj)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = n_tracked / appear[None, :]
    mt = ((ratio >= 0.8) & present).sum(axis=1)
    ml = ((np.nan_to_num(ratio) < 0.2) & present).sum(axis=1)
    out = {"mt": mt.astype(np.float64), "ml": ml.astype(np.float64)}
    if not n_gt:
        nan = np.full(k_lanes, np.nan)
        return {**out, "frag": np.zeros(k_lanes), "tid": nan, "lgd": nan.copy()}
    # runs of tracked boxes per (lane, object), in frame order
    starts = np.ones(key.size, bool)
    starts[1:] = (key[1:] != key[:-1]) | (hit[1:] != hit[:-1])
    runs = np.bincount(key[starts & hit], minlength=size)
    first_box, last_box = _ends(key, when, size)
    t_key, t_when = key[hit], when[hit]
    first_hit, last_hit = _ends(t_key, t_when, size)
    gap = np.zeros(size, np.int64)
    if t_key.size > 1:
        same = t_key[1:] == t_key[:-1]
        between = np.zeros(t_key.size, np.int64)
        between[1:] = np.where(same, t_when[1:] - t_when[:-1] - 1, 0)
        group = np.flatnonzero(np.concatenate(([True], ~same)))
        gap[t_key[group]] = np.maximum.reduceat(between, group)
    tracked_obj = runs > 0
    wait = np.where(tracked_obj, first_hit - first_box, 0)
    gap = np.maximum(gap, np.maximum(wait, np.where(tracked_obj, last_box - last_hit, 0)))
    hit_obj = tracked_obj.reshape(k_lanes, n_obj)
    n_hit = hit_obj.sum(axis=1)
    frag = np.maximum(runs - 1, 0).reshape(k_lanes, n_obj).sum(axis=1)
    tid_sum = (wait.reshape(k_lanes, n_obj) * hit_obj).sum(axis=1) * SAMPLE_PERIOD
    lgd_sum = (gap.reshape(k_lanes, n_obj) * hit_obj).sum(axis=1) * SAMPLE_PERIOD
    with np.errstate(invalid="ignore", divide="ignore"):
        tid = np.where(n_hit == 0, np.nan, tid_sum / np.maximum(n_hit, 1))
        lgd = np.where(n_hit == 0, np.nan, lgd_sum / np.maximum(n_hit, 1))
    return {**out, "frag": frag.astype(np.float64), "tid": tid, "lgd": lgd}


def _ends(key: np.ndarray, values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The first and last of ``values`` of each ``key`` (``key`` sorted; 0 where absent)."""
    first, last = np.zeros(size, np.int64), np.zeros(size, np.int64)
    if key.size:
        begin = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        end = np.concatenate((begin[1:], [key.size])) - 1
        first[key[begin]] = values[begin]
        last[key[end]] = values[end]
    return first, last


@dataclass
class ClassCurves:
    """The devkit's ``TrackingMetricData`` of a class: every figure at each recall target
    (from recall 1 down; NaN where not reached), the thresholds and targets, and which
    distinct threshold (lane) each target ran at (-1: none)."""

    confidence: np.ndarray
    recall_hypo: np.ndarray
    values: dict[str, np.ndarray]
    lane: np.ndarray


def distinct_thresholds(thresholds: np.ndarray) -> np.ndarray:
    """The scores each run uses: the thresholds reached, once each, ascending."""
    return np.unique(thresholds[~np.isnan(thresholds)])


def class_curves(thresholds: np.ndarray, targets: np.ndarray, figures: dict[str, np.ndarray] | None,
                 n_gt: int, n_gt_objects: int) -> ClassCurves:
    """The 40-point curves of a class with GT from its runs' ``figures`` (one per distinct
    threshold; None: no threshold reached, every point the worst value)."""
    size = thresholds.size
    if figures is None:
        worst = {**WORST, "ml": float(n_gt_objects), "gt": float(n_gt), "fn": float(n_gt),
                 "fp": np.nan, "ids": np.nan, "frag": np.nan}
        return ClassCurves(thresholds, targets, {key: np.full(size, worst[key]) for key in LANE_KEYS},
                           np.full(size, -1))
    distinct = distinct_thresholds(thresholds)
    lane = np.where(np.isnan(thresholds), -1,
                    np.searchsorted(distinct, np.nan_to_num(thresholds, nan=0.0)))
    values = {key: np.where(lane < 0, np.nan, figures[key][np.maximum(lane, 0)])
              for key in LANE_KEYS}
    return ClassCurves(thresholds, targets, values, lane)


def class_summary(curves: ClassCurves | None) -> tuple[dict[str, float | None], int | None]:
    """``(figures, index of the best target)`` of a class (None: the class has no GT)."""
    if curves is None:
        return dict.fromkeys(CLASS_KEYS), None
    mota = curves.values["mota"]
    best = None if np.isnan(mota).all() else int(np.nanargmax(mota))
    out: dict[str, float | None] = dict.fromkeys(CLASS_KEYS)
    if best is not None:
        for key in LANE_KEYS:
            out[key] = _plain(curves.values[key][best])
    for key, source in (("amota", "motar"), ("amotp", "motp")):
        values = curves.values[source]
        if np.isnan(values).all():
            continue
        out[key] = float(np.nanmean(np.where(np.isnan(values), WORST[key], values)))
    return out, best


def mean_over_classes(per_class: dict[str, dict[str, float | None]]) -> dict[str, float | None]:
    """The devkit's figures over classes: counts summed, the rest averaged, the classes
    where a figure is undefined left out (a sum of nothing is 0, a mean of nothing None)."""
    out: dict[str, float | None] = {}
    for key in CLASS_KEYS:
        values = [v[key] for v in per_class.values() if v[key] is not None]
        if key in SUMMED:
            out[key] = float(np.sum(values)) if values else 0.0
        else:
            out[key] = float(np.mean(values)) if values else None
    return out


def _plain(value: float) -> float | None:
    value = float(value)
    return None if value != value else value
