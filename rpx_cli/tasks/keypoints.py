"""``rpx eval keypoints``: correspondences between two images.

GT JSON ``{"points0": [[x, y], ...], "points1": [[x, y], ...], "visibility": [...]}``
(``visibility`` optional: booleans or the numbers 0/1, default all visible); prediction JSON
``{"points0": [...], "points1": [...], "scores": [...]}`` (``scores`` optional and unused).
The lists of one file must have one length; coordinates must be finite numbers — anything
else is an input error naming the file and the field.

Each visible GT point takes the prediction whose image-0 point is nearest (Euclidean; ties
go to the prediction listed first); its error is the distance between that prediction's
image-1 point and the GT's. Row: ``keypoint_acc`` (error < ``--px-threshold``, strict),
``keypoint_acc_1px``, ``keypoint_acc_3px``, ``keypoint_acc_5px``, ``mean_match_error``
(pixels), ``n_points`` (visible GT points). A prediction with no points scores accuracy 0 and
a null ``mean_match_error`` (the RPX code gave inf, which JSON cannot hold), counted in
``aggregate.n_no_prediction``; a frame without visible GT points is null throughout,
counted in ``aggregate.n_empty``. The accuracies count unmatched points as wrong, so they
never improve by omitting predictions; ``mean_match_error`` is over matched points only.

``aggregate``: the mean over rows of each metric (where not null). ``dataset``: pooled over
every visible GT point of every frame — accuracies = hits / ``n_points``,
``mean_match_error`` = summed error / matched points, ``n_points``, ``n_unmatched``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.json import loads_json
from rpx_cli.io.values import MAX_MAGNITUDE, beyond, json_numbers
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks.base import MetricInfo, Option, Params, Sample, Task, Warn
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

FIXED_THRESHOLDS = (1.0, 3.0, 5.0)
ACCURACY_KEYS = ("keypoint_acc", "keypoint_acc_1px", "keypoint_acc_3px", "keypoint_acc_5px")
# per frame: visible GT points, points with a prediction to match, hits at --px-threshold and
# at 1, 3 and 5 px, and the summed match error
SUMS = ("n_points", "n_matched", "hits", "hits_1px", "hits_3px", "hits_5px", "error_sum")
# candidates asked of the k-d tree per GT point; rows whose candidates all tie are resolved
# by brute force, so the first-listed rule holds however many predictions tie
TREE_CANDIDATES = 4


class Correspondences(NamedTuple):
    points0: np.ndarray  # (N, 2) float64, image 0
    points1: np.ndarray  # (N, 2) float64, image 1
    visible: np.ndarray  # (N,) bool (all True for predictions)


@register_task
class Keypoints(Task):
    name = "keypoints"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("keypoint_acc", "keypoint_acc_1px", "keypoint_acc_3px", "keypoint_acc_5px",
                       "mean_match_error", "n_points"),
              "aggregate": ("keypoint_acc", "keypoint_acc_1px", "keypoint_acc_3px",
                            "keypoint_acc_5px", "mean_match_error", "n_frames", "n_empty"),
              "dataset": ("", "keypoint_acc", "keypoint_acc_1px", "keypoint_acc_3px",
                          "keypoint_acc_5px", "mean_match_error", "n_points")}
    primary_metric = "keypoint_acc"
    suffixes = (".json",)
    help = ("Keypoint correspondences: for each visible GT point the prediction nearest in "
            "image 0, scored by its distance in image 1.")
    formats = (
        'One JSON per stem; point i of points0 (image 0) matches point i of points1 (image 1):\n'
        '  GT          {"points0": [[x, y], ...], "points1": [[x, y], ...], "visibility": [1, 0, ...]}\n'
        '  prediction  {"points0": [[x, y], ...], "points1": [[x, y], ...]}\n'
        '"visibility" is optional (0/1 or booleans; default all visible).'
    )
    example = (
        'rpx eval keypoints --pred-dir fixtures/keypoints/matches/pred \\\n'
        '    --gt-dir fixtures/keypoints/matches/gt --px-threshold 2 | jq .dataset.keypoint_acc'
    )
    metrics = {
        "keypoint_acc": MetricInfo("higher", "fraction of visible GT points with match error "
                                   "< --px-threshold (strict)"),
        "keypoint_acc_1px": MetricInfo("higher", "fraction with match error < 1 px"),
        "keypoint_acc_3px": MetricInfo("higher", "fraction with match error < 3 px"),
        "keypoint_acc_5px": MetricInfo("higher", "fraction with match error < 5 px"),
        "mean_match_error": MetricInfo("lower", "mean image-1 distance, px, over matched points "
                                       "(null without predictions)", "px"),
        "n_points": MetricInfo("none", "visible GT points evaluated"),
        "n_unmatched": MetricInfo("none", "visible GT points in frames without predictions"),
    }
    options = (
        Option("px_threshold", "--px-threshold", "float", 3.0, minimum=0.0, open_min=True,
               help="A GT point is matched correctly when its error is < this many pixels."),
    )
    stats = tuple(Stat(name, minimum=0) for name in SUMS)  # counts and error sums

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        info = dict(self.metrics)
        info["keypoint_acc"] = MetricInfo(
            "higher", f"fraction of visible GT points with match error < {params['px_threshold']:g} "
                      "px (--px-threshold, strict)")
        return info

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Correspondences:
        return parse_correspondences(buffer.read(path), path, prediction=role == "pred")

    def empty_prediction(self, gt: Correspondences, params: Params) -> Correspondences:
        empty = np.zeros((0, 2))
        return Correspondences(empty, empty, np.zeros(0, dtype=bool))

    def evaluate(self, pred: Correspondences, gt: Correspondences, params: Params, *,
                 pred_path: str | None, gt_path: str) -> Sample:
        visible = gt.visible
        gt0, gt1 = gt.points0[visible], gt.points1[visible]
        n = len(gt0)
        matched = n if len(pred.points0) else 0
        if matched:
            nearest = nearest_index(pred.points0, gt0)
            error = np.hypot(*(pred.points1[nearest] - gt1).T)
            thresholds = (params["px_threshold"], *FIXED_THRESHOLDS)
            hits = tuple(int(np.count_nonzero(error < t)) for t in thresholds)
            error_sum = math.fsum(error.tolist())
        else:
            hits, error_sum = (0, 0, 0, 0), 0.0
        sums = (n, matched, *hits, error_sum)
        return Sample({**finalize(sums), "n_points": n}, dict(zip(SUMS, sums, strict=True)))

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        table = np.column_stack([stats[name] for name in SUMS])
        rows = [finalize(values) for values in table.tolist()]
        n, matched = stats["n_points"], stats["n_matched"]
        aggregate: dict[str, Any] = {
            "n_frames": len(stats),
            "n_empty": int(np.count_nonzero(n == 0)),
            "n_no_prediction": int(np.count_nonzero((n > 0) & (matched == 0))),
        }
        for key in (*ACCURACY_KEYS, "mean_match_error"):
            aggregate[key] = mean_present([row[key] for row in rows])
        pooled = [int(v) for v in table[:, :6].sum(axis=0).tolist()]
        dataset = finalize((*pooled, math.fsum(stats["error_sum"].tolist())))
        dataset.update({"n_points": pooled[0], "n_unmatched": pooled[0] - pooled[1]})
        return {"aggregate": aggregate, "dataset": dataset}


def finalize(sums: tuple[float, ...] | list[float]) -> dict[str, float | None]:
    """Metrics from ``(n_points, n_matched, hits at the threshold, at 1, 3 and 5 px, error
    sum)``: all null without points; ``mean_match_error`` null without matched points."""
    n, matched, *hits, error_sum = sums
    if n == 0:
        return dict.fromkeys((*ACCURACY_KEYS, "mean_match_error"))
    out: dict[str, float | None] = {key: h / n for key, h in zip(ACCURACY_KEYS, hits, strict=True)}
    out["mean_match_error"] = error_sum / matched if matched else None
    return out


def nearest_index(candidates: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For each query point, the index of the nearest candidate (Euclidean); among equally
    near candidates the lowest index. ``candidates`` must not be empty.

    Near-linear however many candidates tie: repeated candidates are one point of the k-d
    tree carrying their lowest index (50,000 predictions at one pixel are one point), equal
    queries are answered once, and a query whose ``TREE_CANDIDATES`` nearest all tie (points
    equally far on a circle) gathers the tied points with a ball query instead of comparing
    every candidate."""
    from scipy.spatial import cKDTree  # imported on first use

    points, first = np.unique(candidates, axis=0, return_index=True)
    asked, inverse = np.unique(queries, axis=0, return_inverse=True)
    tree = cKDTree(points)
    k = min(TREE_CANDIDATES, len(points))
    _, index = tree.query(asked, k=k)
    index = index.reshape(len(asked), k)
    # exact squared distances of the candidates, in one formula for every path
    d2 = ((points[index] - asked[:, None, :]) ** 2).sum(axis=2)
    best = d2.min(axis=1, keepdims=True)
    nearest = np.where(d2 == best, first[index], len(candidates)).min(axis=1)
    if k < len(points):
        # every candidate tied (within the tree's rounding): more may tie beyond the k asked
        crowded = np.flatnonzero(d2[:, -1] <= best[:, 0] * (1 + 1e-12))
        radius = np.sqrt(best[crowded, 0]) * (1 + 1e-9) + 1e-300
        for row, members in zip(crowded.tolist(), tree.query_ball_point(asked[crowded], radius),
                                strict=True):
            members = np.asarray(members, dtype=np.int64)
            exact = ((points[members] - asked[row]) ** 2).sum(axis=1)
            nearest[row] = first[members[exact == exact.min()]].min()
    return nearest[inverse.reshape(-1)]


def parse_correspondences(data: np.ndarray, path: str, *, prediction: bool) -> Correspondences:
    """Parse one GT (``visibility`` allowed) or prediction (``scores`` allowed) JSON file."""
    document = loads_json(data, path)
    if not isinstance(document, dict) or "points0" not in document or "points1" not in document:
        extra = ', "scores": [...]' if prediction else ', "visibility": [...]'
        raise InputError('expected {"points0": [[x, y], ...], "points1": [[x, y], ...]' + extra
                         + "}", path=path)
    points0 = _xy(document["points0"], "points0", path)
    points1 = _xy(document["points1"], "points1", path)
    if len(points0) != len(points1):
        raise InputError(f"'points0' has {len(points0)} points but 'points1' has {len(points1)}",
                         path=path)
    n = len(points0)
    visible = np.ones(n, dtype=bool)
    if not prediction and document.get("visibility") is not None:
        visible = _visibility(document["visibility"], n, path)
    if prediction and document.get("scores") is not None:
        scores = document["scores"]
        try:
            ok = isinstance(scores, list) and np.asarray(scores, dtype=np.float64).shape == (n,)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise InputError(f"'scores' must be a list of {n} numbers (one per point)", path=path)
    return Correspondences(points0, points1, visible)


def _xy(value: object, name: str, path: str) -> np.ndarray:
    if isinstance(value, list) and not value:
        return np.zeros((0, 2))
    # numbers only: strings, null and booleans are refused, not converted
    array = json_numbers(value, 2)
    if array is None or array.shape[1] != 2:
        raise InputError(f"'{name}' must be a list of [x, y] number pairs", path=path)
    if not np.isfinite(array).all():
        bad = int(np.flatnonzero(~np.isfinite(array).all(axis=1))[0])
        raise InputError(f"'{name}' has a non-finite coordinate (point {bad})", path=path)
    if beyond(array).any():
        bad = int(np.flatnonzero(beyond(array).any(axis=1))[0])
        raise InputError(f"'{name}' has a coordinate beyond ±{MAX_MAGNITUDE:g} px (point {bad})",
                         path=path)
    return array


def _visibility(value: object, n: int, path: str) -> np.ndarray:
    try:
        array = np.asarray(value) if isinstance(value, list) else None
    except ValueError:  # ragged nesting
        array = None
    # booleans or the numbers 0 and 1 (1.0 too); strings, null and 0.5 are refused
    if array is None or array.shape != (n,) or (n and not np.isin(array, (0, 1)).all()):
        raise InputError(f"'visibility' must be a list of {n} booleans (or 0/1), one per point",
                         path=path)
    return array.astype(bool) if n else np.zeros(0, dtype=bool)
