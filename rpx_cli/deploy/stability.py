"""Temporal stability (TS): how much a model's prediction for a frame agrees with
its prediction for the next frame once the camera's motion is undone.

Frames are grouped by the manifest's ``sequence`` (else ``scene/phase``; a manifest naming
none of them is one sequence, ``all``) and ordered by ``frame``; every consecutive pair
``(t, t+1)`` scores one value:

- segmentation: ``mean over classes c present in either map of IoU_c(P_t, warp(P_t+1))``,
  over the pixels valid after warping whose label is not an ignore index in either map
  (``--ignore-index``, default -1 like ``rpx eval segmentation``);
- depth: ``max(0, 1 - mean|D_t - warp(D_t+1)| / max(range(D_t), 1e-3))`` over the pixels
  valid in both (finite and > 0, after warping); ``range`` = max - min of ``D_t`` over
  those pixels.

A pair with no valid pixel scores null: it is counted (``n_null_pairs``) but not averaged.
``ts_score`` is the mean of the non-null pair values — per sequence, and overall over all
pairs of all sequences (not a mean of sequence means). A sequence of one frame has no pair
and scores 1.0 (the RPX convention) without adding to the overall mean; a report with no
pair at all scores 1.0 with ``num_pairs`` 0.

Warps (:mod:`rpx_cli.ops.warp` has the geometry and its conventions):

- ``reproject``: back-project every pixel of frame t with a depth map, move it by
  ``inv(T_t1) @ T_t`` (poses camera-to-world; the issue's ``inv(T_t) @ T_t1`` is camera
  t+1's pose in frame t, the inverse of this point mapping), project with frame t+1's
  intrinsics (pixel centres at integer coordinates, depth along the optical axis), and
  read frame t+1's map there: the nearest pixel for labels; bilinear for depth, where a
  cell touching a pixel without depth gives nothing and a cell spanning a depth edge
  (four depths differing by more than 5 % + 5 cm, :data:`EDGE_RELATIVE`) takes the pixel
  closest to the point's projected depth rather than a depth between two surfaces. The
  depth read in t+1 is back-projected in t+1 and moved into frame t, and that z is
  compared with ``D_t``. Excluded: locations whose nearest pixel is outside frame t+1,
  points less than 1e-6 m in front of camera t+1, and occluded points.
  The depth that drives it is the prediction ``D_t`` for ``--task depth`` and the ground
  truth of frame t (``--depth-dir``) for segmentation.
  Occlusion, tolerance ``1 % + 1 cm`` (:data:`OCCLUSION_RELATIVE`,
  :data:`OCCLUSION_ABSOLUTE_M`): a point at depth z' in camera t+1 is occluded when a
  surface nearer than ``0.99 z' - 0.01`` lies at its nearest pixel in t+1. For
  segmentation that surface is the GT depth of frame t+1 (a hole in it: not occluded). For
  depth it is the nearest point of frame t itself that lands on the same pixel (a z-buffer
  of the reprojected ``D_t``): never ``D_t+1``, the map being scored — testing against it
  would excuse a prediction that jumps nearer as "occluded" instead of penalising it.
  Sub-pixel motion still aliases label maps (nearest sampling): a perfect prediction of a
  finely textured scene scores below 1 unless the motion is whole pixels.
- ``inplane``: the RPX approximation, no depth needed — frame t+1 is rotated about
  ``(w/2, h/2)`` to undo the roll of the relative rotation (OpenCV's getRotationMatrix2D
  convention); the RPX code rotates the wrong way for camera-to-world poses and fills the
  uncovered border with 0 / -1 (scored as wrong): both fixed, the border is excluded.
- ``none``: frames compared pixel for pixel.

The default (``auto``) is ``reproject`` when every frame has a pose and intrinsics and a
depth source exists; else ``inplane`` when every frame has a pose; else ``none``. The report
names the warp used, and a warning says why when it is not ``reproject``.

Predicted depth must be finite (0 marks a pixel without prediction); a non-finite value is
an input error, as in ``rpx eval depth``. Ground-truth depth may hold NaN or 0 (no
measurement). Two frames of a pair must have the same size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from rpx_cli.deploy.figures import STABILITY_METRICS
from rpx_cli.errors import ParameterError
from rpx_cli.ops import reprojection
from rpx_cli.ops import warp as ops
from rpx_cli.ops.reduce import mean_present
from rpx_cli.params.workflows import IGNORE_INDEX, WARPS, stability_task

SCHEMA = "rpx.stability"
SCHEMA_VERSION = 1
OCCLUSION_RELATIVE = 0.01
OCCLUSION_ABSOLUTE_M = 0.01
EDGE_RELATIVE = 0.05  # a bilinear cell spans a depth edge when max > min (1 + 5 %) + 5 cm
EDGE_ABSOLUTE_M = 0.05
MIN_RANGE_M = 1e-3
DEPTH_SUFFIXES = (".npy", ".npz", ".png", ".pgm", ".tif", ".tiff")
LABEL_SUFFIXES = (".png", ".npy")
METRIC_INFO = {name: info.as_dict() for name, info in STABILITY_METRICS.items()}

Intrinsics = tuple[float, float, float, float]
Progress = Callable[[int], None]


class PairScore(NamedTuple):
    """One pair's value (None when no pixel could be compared) and the pixels compared."""

    value: float | None
    n_valid: int


# --- the metric on arrays -------------------------------------------------------------------


def depth_agreement(d_t: np.ndarray, other: np.ndarray, valid: np.ndarray) -> PairScore:
    """``max(0, 1 - mean|d_t - other| / max(range(d_t), 1e-3))`` over ``valid`` (flat
    arrays; float32 terms summed pairwise per row of 4096, rows summed in float64)."""
    return _score(reprojection.agreement(d_t, other, valid))


def _score(sums: reprojection.Agreement) -> PairScore:
    if sums.n == 0:
        return PairScore(None, 0)
    l1 = sums.total / sums.n
    return PairScore(max(0.0, 1.0 - l1 / max(sums.high - sums.low, MIN_RANGE_M)), sums.n)


def label_agreement(p_t: np.ndarray, other: np.ndarray, valid: np.ndarray | None,
                    ignore_index: Sequence[int] = (-1,)) -> PairScore:
    """Mean over the classes present in either map of ``|A_c & B_c| / |A_c | B_c|``, over
    the ``valid`` pixels (all when None) whose label is not ignored in either map."""
    a, b = p_t.reshape(-1), other.reshape(-1)
    keep = np.ones(a.shape, dtype=bool) if valid is None else valid.copy()
    for label in ignore_index:
        keep &= a != label
        keep &= b != label
    a, b = a[keep].astype(np.int64), b[keep].astype(np.int64)
    n = int(a.size)
    if n == 0:
        return PairScore(None, 0)
    low = min(int(a.min()), int(b.min()))
    size = max(int(a.max()), int(b.max())) - low + 1
    if size > 4 * n + 1024:  # sparse labels (ids in the millions): compact them first
        _, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
        a, b, low = inverse[:n], inverse[n:], 0
        size = int(inverse.max()) + 1
    a -= low
    b -= low
    area_a = np.bincount(a, minlength=size)
    area_b = np.bincount(b, minlength=size)
    both = np.bincount(a[a == b], minlength=size)
    union = area_a + area_b - both
    present = union > 0
    return PairScore(float(np.mean(both[present] / union[present])), n)


def depth_pair(d_t: np.ndarray, d_t1: np.ndarray, *, warp: str,
               pose_t: np.ndarray | None = None, pose_t1: np.ndarray | None = None,
               intrinsics_t: Intrinsics | None = None,
               intrinsics_t1: Intrinsics | None = None) -> PairScore:
    """TS of one pair of depth predictions (metres; > 0 where predicted)."""
    _same_shape(d_t, d_t1)
    d = d_t.reshape(-1)
    if warp == "none":
        valid = np.greater(d_t, 0).reshape(-1)
        valid &= np.greater(d_t1, 0).reshape(-1)
        return depth_agreement(d, d_t1.reshape(-1), valid)
    if warp == "inplane":
        grid = ops.inplane_grid(d_t.shape, ops.inplane_angle(pose_t, pose_t1))
        other = ops.sample_bilinear(ops.pad_for_bilinear(d_t1), ops.cells(grid, d_t1.shape))
        valid = np.equal(other, other)  # NaN: touching a pixel without depth
        valid &= grid.inside
        valid &= np.greater(d, 0)
        return depth_agreement(d, other, valid)
    if warp == "reproject":
        transform = ops.motion(pose_t, pose_t1)
        tolerances = {"occlusion": (OCCLUSION_RELATIVE, OCCLUSION_ABSOLUTE_M),
                      "edge": (EDGE_RELATIVE, EDGE_ABSOLUTE_M)}
        if d_t.dtype == d_t1.dtype == np.float32:  # the fused kernel: the same numbers, faster
            kernel = reprojection.shared_reprojection_kernel(d_t.shape)
            return _score(kernel.agreement(d_t, d_t1, intrinsics_t, intrinsics_t1, transform,
                                           **tolerances))
        return _score(reprojection.reference_reprojected_agreement(
            d_t, d_t1, intrinsics_t, intrinsics_t1, transform, **tolerances))
    raise ParameterError(f"unknown warp {warp!r} (expected one of {', '.join(WARPS)})")


def segmentation_pair(p_t: np.ndarray, p_t1: np.ndarray, *, warp: str,
                      ignore_index: Sequence[int] = (-1,),
                      pose_t: np.ndarray | None = None, pose_t1: np.ndarray | None = None,
                      intrinsics_t: Intrinsics | None = None,
                      intrinsics_t1: Intrinsics | None = None,
                      depth_t: np.ndarray | None = None,
                      depth_t1: np.ndarray | None = None) -> PairScore:
    """TS of one pair of label maps; ``reproject`` needs the GT depth of frame t
    (``depth_t``) and uses that of frame t+1 (``depth_t1``), when given, for occlusion."""
    _same_shape(p_t, p_t1)
    if warp == "none":
        return label_agreement(p_t, p_t1, None, ignore_index)
    if warp == "inplane":
        grid = ops.inplane_grid(p_t.shape, ops.inplane_angle(pose_t, pose_t1))
    elif warp == "reproject":
        if depth_t is None:
            raise ParameterError("reprojecting label maps needs the depth of frame t")
        _same_shape(p_t, depth_t, "label map and depth")
        transform = ops.motion(pose_t, pose_t1)
        known = np.nan_to_num(np.asarray(depth_t, dtype=np.float32), nan=0.0, posinf=0.0, neginf=0.0)
        grid = ops.reproject(known, intrinsics_t, intrinsics_t1, transform, p_t1.shape)
    else:
        raise ParameterError(f"unknown warp {warp!r} (expected one of {', '.join(WARPS)})")
    index = ops.nearest_index(grid, p_t1.shape)
    other = ops.sample_nearest(p_t1, index)
    valid = grid.inside
    if warp == "reproject" and depth_t1 is not None:
        _same_shape(p_t1, depth_t1, "label map and depth")
        found = ops.sample_nearest(np.asarray(depth_t1, dtype=np.float32), index)
        with np.errstate(invalid="ignore"):
            occluded = np.greater(found, 0)
            occluded &= found < ops.occlusion_threshold(grid.z, OCCLUSION_RELATIVE,
                                                        OCCLUSION_ABSOLUTE_M)
        valid = valid & ~occluded
    return label_agreement(p_t, other, valid, ignore_index)


class ShapeMismatch(ValueError):
    pass


def _same_shape(a: np.ndarray, b: np.ndarray, what: str = "frames") -> None:
    if a.shape != b.shape:
        raise ShapeMismatch(f"{what} differ in size: {_wh(a)} and {_wh(b)}")


def _wh(array: np.ndarray) -> str:
    return "x".join(str(n) for n in reversed(array.shape))


def mean_score(values: Sequence[float | None]) -> float | None:
    """Mean of the non-null values; 1.0 when there is no pair, null when all are null."""
    return 1.0 if not values else mean_present(list(values))


def sequence_stability(task: str, maps: Sequence[np.ndarray], *, warp: str = "none",
                       poses: Sequence[np.ndarray] | None = None,
                       intrinsics: Sequence[Intrinsics] | None = None,
                       depths: Sequence[np.ndarray] | None = None,
                       ignore_index: Sequence[int] = (-1,)) -> dict[str, Any]:
    """TS of one sequence held in memory (frames in order): ``{ts_score, num_pairs,
    per_pair, n_valid}``. ``depths`` is the GT depth for segmentation's reprojection (NaN
    or 0 where unknown); predicted depth must be finite (ValueError), 0 where empty.

    >>> import numpy as np
    >>> a = np.zeros((4, 4), int); a[:2, :2] = 1
    >>> b = np.zeros((4, 4), int); b[:2, :3] = 1
    >>> sequence_stability("segmentation", [a, b])["ts_score"]
    0.75
    """
    task = stability_task(task)
    ignore_index = IGNORE_INDEX.convert(ignore_index)
    if task == "depth":
        for index, depth in enumerate(maps):
            if not np.isfinite(depth).all():
                raise ValueError(f"depth map {index} holds non-finite values; mark pixels without "
                                 "a prediction with 0")
    scores = []
    for t in range(len(maps) - 1):
        geometry = {}
        if warp != "none":
            geometry = {"pose_t": poses[t], "pose_t1": poses[t + 1]}
        if warp == "reproject":
            geometry.update(intrinsics_t=intrinsics[t], intrinsics_t1=intrinsics[t + 1])
        if task == "depth":
            d_t = np.asarray(maps[t], dtype=np.float32)
            d_t1 = np.asarray(maps[t + 1], dtype=np.float32)
            scores.append(depth_pair(d_t, d_t1, warp=warp, **geometry))
        else:
            if warp == "reproject":
                geometry.update(depth_t=depths[t], depth_t1=depths[t + 1])
            scores.append(segmentation_pair(np.asarray(maps[t]), np.asarray(maps[t + 1]), warp=warp,
                                            ignore_index=ignore_index, **geometry))
    per_pair = [s.value for s in scores]
    return {"ts_score": mean_score(per_pair), "num_pairs": len(scores), "per_pair": per_pair,
            "n_valid": [s.n_valid for s in scores]}


# --- folders and a manifest -----------------------------------------------------------------
