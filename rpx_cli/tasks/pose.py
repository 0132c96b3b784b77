"""``rpx eval pose``: relative camera pose, predicted against ground truth.

Both files of a stem hold the same kind of transform (the relative pose between two views,
or a camera pose in one frame): they are compared as given, never inverted or chained.
Formats and the rules that make a file an input error: :mod:`rpx_cli.io.poses`. Pred and GT
of one stem may be in different formats.

Row:

- ``rotation_error_deg`` — the geodesic angle of ``M = R_predᵀ R_gt``, computed stably as
  ``atan2(‖vee(M − Mᵀ)‖ / 2, (trace M − 1) / 2)`` (the sine from the skew part, the cosine
  from the trace): equal to ``degrees(arccos(clip((trace M − 1) / 2, −1, 1)))`` in exact
  arithmetic, but accurate for rotations of 1e-4° where arccos near 1 is not.
- ``translation_error_m`` — ``‖t_pred − t_gt‖``.
- ``translation_angular_deg`` — the angle between the translation vectors,
  ``atan2(‖a × b‖, a · b)``; 180 when either norm is < 1e-9. With
  ``--translation-sign-ambiguous`` a real angle ``e`` becomes ``min(e, 180 − e)`` (the
  SuperGlue convention for poses from essential matrices, whose translation sign is
  unknown); a degenerate translation stays 180.
- ``pose_error_max_deg`` — the larger of the two angles (SuperGlue's pose error).

A missing prediction under ``--missing empty`` is the worst case: 180° for every angle and a
null ``translation_error_m`` (there is no worst distance), counted in
``aggregate.n_missing``. The AUCs, the medians and the angle means therefore can never
improve by omitting a file, and ``aggregate.translation_error_m`` is null when a pose is
missing (the mean over the predicted rows alone, which omitting files could lower, is
``translation_error_m_predicted``, for diagnosis).

``aggregate``: the mean of each row metric, ``n_frames``, ``n_missing``. ``dataset``:
``auc_5deg``, ``auc_10deg``, ``auc_20deg`` — SuperGlue's ``pose_auc`` of
``pose_error_max_deg`` (area under the recall-against-error curve up to the threshold,
trapezoidal, divided by the threshold; a fraction in [0, 1]) — and
``median_rotation_error_deg``, ``median_translation_error_m`` over every row (a missing
prediction ranks above every error; a median that falls on one is null).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.poses import POSE_SUFFIXES, Pose, read_pose
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks.base import MetricInfo, Option, Params, Sample, Task, Warn
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

AUC_THRESHOLDS = (5.0, 10.0, 20.0)
MIN_TRANSLATION_NORM = 1e-9
ROW_KEYS = ("rotation_error_deg", "translation_error_m", "translation_angular_deg",
            "pose_error_max_deg")
_ANGLE = "angle between the translation vectors, atan2(|a x b|, a . b), deg; 180 when a norm < 1e-9"
_FOLDED = _ANGLE + "; folded to min(e, 180 - e) (--translation-sign-ambiguous, SuperGlue)"


@register_task
class RelativePose(Task):
    name = "pose"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("rotation_error_deg", "translation_error_m", "translation_angular_deg",
                       "pose_error_max_deg"),
              "aggregate": ("rotation_error_deg", "translation_error_m", "translation_angular_deg",
                            "pose_error_max_deg", "n_frames", "n_missing"),
              "dataset": ("", "auc_5deg", "auc_10deg", "auc_20deg", "median_rotation_error_deg",
                          "median_translation_error_m")}
    primary_metric = "rotation_error_deg"
    rank_metric = "pose_error_max_deg"
    stats = tuple(Stat(key) for key in ROW_KEYS)
    suffixes = POSE_SUFFIXES
    help = ("Relative camera pose: rotation and translation errors, SuperGlue pose AUC at "
            "5/10/20 degrees.")
    formats = (
        'One file per stem, the same kind of transform on both sides, in any of six forms:\n'
        '  {"R": 3x3, "t": [3]}                  {"matrix": 4x4}\n'
        '  {"quaternion_wxyz": [4], "t": [3]}    {"quaternion_xyzw": [4], "t": [3]}\n'
        '  .npy  7 numbers [x, y, z, qx, qy, qz, qw] (RPX)\n'
        "  .npz  'position' (3) and 'orientation' (4: x y z w) (RPX)"
    )
    example = (
        'rpx eval pose --pred-dir fixtures/pose/relative/pred --gt-dir fixtures/pose/relative/gt \\\n'
        '    | jq .dataset.auc_10deg'
    )
    metrics = {
        "rotation_error_deg": MetricInfo("lower", "geodesic angle of R_pred^T R_gt, deg "
                                         "(atan2 form, exact for tiny rotations)", "deg"),
        "translation_error_m": MetricInfo("lower", "|t_pred - t_gt| (null for a missing prediction)",
                                          "m"),
        "translation_angular_deg": MetricInfo("lower", _ANGLE, "deg"),
        "pose_error_max_deg": MetricInfo("lower", "max(rotation_error_deg, translation_angular_deg)",
                                         "deg"),
        "auc_5deg": MetricInfo("higher", "SuperGlue pose AUC of pose_error_max_deg up to 5 deg"),
        "auc_10deg": MetricInfo("higher", "SuperGlue pose AUC of pose_error_max_deg up to 10 deg"),
        "auc_20deg": MetricInfo("higher", "SuperGlue pose AUC of pose_error_max_deg up to 20 deg"),
        "median_rotation_error_deg": MetricInfo("lower", "median rotation_error_deg over all rows",
                                                "deg"),
        "median_translation_error_m": MetricInfo("lower", "median translation_error_m over all "
                                                 "rows, a missing prediction ranked worst", "m"),
        "n_missing": MetricInfo("none", "rows without a prediction (--missing empty)"),
        "translation_error_m_predicted": MetricInfo(
            "lower", "mean translation_error_m over the rows with a prediction (only when one "
            "is missing; aggregate.translation_error_m is then null)"),
    }
    options = (
        Option("translation_sign_ambiguous", "--translation-sign-ambiguous", "flag", False,
               help="The translation sign is unknown (poses from essential matrices): the "
                    "translation angle e counts as min(e, 180 - e), as SuperGlue does."),
    )

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        info = dict(self.metrics)
        if params.get("translation_sign_ambiguous"):
            info["translation_angular_deg"] = MetricInfo("lower", _FOLDED)
        return info

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Pose:
        return read_pose(path, buffer)

    def empty_prediction(self, gt: Pose, params: Params) -> None:
        return None  # scored as the worst case by evaluate

    def evaluate(self, pred: Pose | None, gt: Pose, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        if pred is None:
            return Sample({"rotation_error_deg": 180.0, "translation_error_m": None,
                           "translation_angular_deg": 180.0, "pose_error_max_deg": 180.0})
        rotation = rotation_angle_deg(pred.R, gt.R)
        a, b = pred.t.tolist(), gt.t.tolist()
        angle = vector_angle_deg(a, b)
        if params["translation_sign_ambiguous"] and angle is not None:
            angle = min(angle, 180.0 - angle)
        angle = 180.0 if angle is None else angle
        return Sample({"rotation_error_deg": rotation, "translation_error_m": math.dist(a, b),
                       "translation_angular_deg": angle, "pose_error_max_deg": max(rotation, angle)})

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        missing = np.isnan(stats["translation_error_m"])
        aggregate: dict[str, Any] = {"n_frames": len(stats),
                                     "n_missing": int(np.count_nonzero(missing))}
        for key in ROW_KEYS:
            aggregate[key] = mean_present(stats[key])
        if missing.any():
            # a missing pose has no translation error: the mean over all rows is undefined
            # (a mean over the predicted rows alone would reward leaving files out)
            aggregate["translation_error_m"] = None
            aggregate["translation_error_m_predicted"] = mean_present(stats["translation_error_m"])
        translation = np.where(missing, np.inf, stats["translation_error_m"])
        dataset: dict[str, Any] = {
            f"auc_{t:g}deg": auc for t, auc in zip(AUC_THRESHOLDS,
                                                   pose_auc(stats["pose_error_max_deg"]),
                                                   strict=True)}
        dataset["median_rotation_error_deg"] = float(np.median(stats["rotation_error_deg"]))
        median = float(np.median(translation))
        dataset["median_translation_error_m"] = median if math.isfinite(median) else None
        return {"aggregate": aggregate, "dataset": dataset}


def rotation_angle_deg(r_pred: np.ndarray, r_gt: np.ndarray) -> float:
    """Geodesic angle between two rotations in degrees, in [0, 180].

    With ``M = R_predᵀ R_gt``: sin θ = ‖vee(M − Mᵀ)‖ / 2 and cos θ = (trace M − 1) / 2, so
    θ = atan2(sin θ, cos θ) — accurate to relative 1e-10 for a 1e-4° rotation, where
    ``arccos`` of a cosine within 1e-12 of 1 keeps only a few digits.
    """
    m = (r_pred.T @ r_gt).tolist()
    sx = m[2][1] - m[1][2]
    sy = m[0][2] - m[2][0]
    sz = m[1][0] - m[0][1]
    sine = 0.5 * math.sqrt(sx * sx + sy * sy + sz * sz)
    cosine = 0.5 * (m[0][0] + m[1][1] + m[2][2] - 1.0)
    return math.degrees(math.atan2(sine, cosine))


def vector_angle_deg(a: list[float], b: list[float]) -> float | None:
    """Angle between two 3-vectors in degrees, atan2(‖a × b‖, a · b); None when either norm
    is below 1e-9 (no direction)."""
    if math.hypot(*a) < MIN_TRANSLATION_NORM or math.hypot(*b) < MIN_TRANSLATION_NORM:
        return None
    cx = a[1] * b[2] - a[2] * b[1]
    cy = a[2] * b[0] - a[0] * b[2]
    cz = a[0] * b[1] - a[1] * b[0]
    dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    return math.degrees(math.atan2(math.sqrt(cx * cx + cy * cy + cz * cz), dot))


def pose_auc(errors: np.ndarray, thresholds: tuple[float, ...] = AUC_THRESHOLDS) -> list[float]:
    """SuperGlue's ``pose_auc`` (magicleap/SuperGluePretrainedNetwork, ``models/utils.py``):
    the area under recall(error <= x) for x from 0 to each threshold, trapezoidal with the
    curve held flat from the last error below the threshold, divided by the threshold."""
    errors = np.sort(np.asarray(errors, dtype=np.float64))
    recall = (np.arange(len(errors)) + 1) / len(errors)
    errors = np.r_[0.0, errors]
    recall = np.r_[0.0, recall]
    aucs = []
    for t in thresholds:
        last = int(np.searchsorted(errors, t))
        r = np.r_[recall[:last], recall[last - 1]]
        e = np.r_[errors[:last], t]
        aucs.append(float(np.trapezoid(r, x=e) / t))
    return aucs
