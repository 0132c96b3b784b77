"""``rpx eval sparse-depth``: depth at sparse GT points (LiDAR, SfM tracks).

Each GT point takes the prediction at its pixel: the nearest predicted point within
``--radius`` pixels (inclusive; several GT points may share one), or, for a dense predicted
map, the value at pixel ``(floor(y + 0.5), floor(x + 0.5))``. A GT point with no prediction
— no point in range, outside the map, or a predicted depth that is 0, negative or not
finite — is a miss and scores as a prediction of 0: relative error 1 and squared error
depth² (the RPX code added raw metres to a relative error: fixed). GT points whose depth is
not a positive finite number are left out and counted in ``n_invalid_gt``.

Row: ``sparse_absrel`` = mean |p − g| / g, ``sparse_rmse`` = sqrt(mean (p − g)²) over the GT
points, ``n_points``, ``n_missed``. ``dataset`` pools every GT point of every frame.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.arrays import read_array
from rpx_cli.io.depth_maps import DepthMap, to_depth
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.points import Points, parse_points_json, points_from_array
from rpx_cli.io.values import MAX_MAGNITUDE, MIN_DEPTH
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks.base import MetricInfo, Option, Params, Sample, Task, Warn
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

PRED_KINDS = ("auto", "points", "dense")
# per frame: GT points, missed points, sum of relative errors, sum of squared errors, GT
# points left out
SUMS = ("n_points", "n_missed", "abs_rel_sum", "sq_err_sum", "n_invalid_gt")


@register_task
class SparseDepth(Task):
    name = "sparse-depth"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("sparse_absrel", "sparse_rmse", "n_points", "n_missed"),
              "aggregate": ("sparse_absrel", "sparse_rmse", "n_frames", "n_empty"),
              "dataset": ("", "sparse_absrel", "sparse_rmse", "n_points", "n_missed")}
    primary_metric = "sparse_absrel"
    suffixes = (".npy", ".json", ".npz", ".png", ".pgm", ".tif", ".tiff")
    help = "Depth at sparse GT points, predicted as points (nearest within a radius) or dense maps."
    formats = (
        'GT points per stem, in metres: .npy (N, 3) [x, y, depth] or\n'
        'JSON {"coordinates": [[x, y], ...], "depths": [...]}. Prediction: points in the same forms\n'
        '(the nearest within --radius px answers), or a dense depth map as for rpx eval depth\n'
        '(integers / --depth-scale) sampled at the GT pixel.'
    )
    example = (
        'rpx eval sparse-depth --pred-dir fixtures/sparse-depth/lidar/pred \\\n'
        '    --gt-dir fixtures/sparse-depth/lidar/gt | jq .dataset.sparse_absrel'
    )
    metrics = {
        "sparse_absrel": MetricInfo("lower", "mean |p - g| / g over GT points (a miss counts 1)"),
        "sparse_rmse": MetricInfo("lower", "sqrt(mean (p - g)^2) over GT points (a miss counts g^2)",
                                  "m"),
        "n_points": MetricInfo("none", "GT points evaluated"),
        "n_missed": MetricInfo("none", "GT points without a prediction"),
        "n_invalid_gt": MetricInfo("none", "GT points left out: depth not a positive finite number"),
    }
    families = {"rows": (("sparse_absrel", "sparse_rmse"), ()), "dataset": ((), ("dataset",))}
    options = (
        Option("radius", "--radius", "float", 2.0, minimum=0.0,
               help="Match a GT point to the nearest predicted point within this many pixels "
                    "(inclusive)."),
        Option("depth_scale", "--depth-scale", "float", 1000.0, minimum=0.0, open_min=True,
               help="Integer dense predictions are divided by this to get metres."),
        Option("pred_kind", "--pred-kind", "choice", "auto", choices=PRED_KINDS,
               help="Predictions are points or dense maps [auto: JSON and (N, 3) .npy are "
                    "points, anything else a map]."),
    )
    stats = tuple(Stat(name, minimum=0) for name in SUMS)  # counts and error sums

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Points | DepthMap:
        if path.lower().endswith(".json"):
            return parse_points_json(buffer.read(path), path)
        loaded = read_array(path, buffer, npz_key="depth")
        array = loaded.array
        as_points = params["pred_kind"] == "points" or (
            params["pred_kind"] == "auto" and loaded.format == "npy" and array.ndim == 2
            and array.shape[1] == 3)
        if as_points:
            return points_from_array(array, path)
        return to_depth(array, loaded.format, params["depth_scale"], path)

    def empty_prediction(self, gt: Points, params: Params) -> Points:
        return Points(np.zeros((0, 2)), np.zeros(0))

    def evaluate(self, pred: Points | DepthMap, gt: Points | DepthMap, params: Params, *,
                 pred_path: str | None, gt_path: str) -> Sample:
        if not isinstance(gt, Points):
            raise InputError('GT must be points: (N, 3) [x, y, depth] rows (.npy) or '
                             '{"coordinates", "depths"} (JSON), not a dense map', path=gt_path)
        good = np.isfinite(gt.depth) & (gt.depth > 0)
        xy, depth = gt.xy[good], gt.depth[good]
        _check_range(depth, MIN_DEPTH, "GT depth", gt_path)
        if isinstance(pred, Points):
            predicted = match_points(xy, pred, params["radius"])
        else:
            predicted = sample_dense(xy, pred.metres(np.float64))
        hit = np.isfinite(predicted) & (predicted > 0)
        _check_range(predicted[hit], 0.0, "predicted depth", pred_path or gt_path)
        abs_rel = np.where(hit, np.abs(predicted - depth) / depth, 1.0)
        sq_err = np.where(hit, (predicted - depth) ** 2, depth**2)
        n = int(depth.size)
        sums = (n, n - int(np.count_nonzero(hit)), math.fsum(abs_rel.tolist()),
                math.fsum(sq_err.tolist()), int(np.count_nonzero(~good)))
        return Sample({**finalize(*sums[:4]), "n_points": n, "n_missed": sums[1],
                       "n_invalid_gt": sums[4]}, dict(zip(SUMS, sums, strict=True)))

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        n, missed, abs_rel, sq_err, invalid = (stats[name] for name in SUMS)
        rows = [finalize(*values) for values in np.column_stack([n, missed, abs_rel, sq_err]).tolist()]
        aggregate: dict[str, Any] = {"n_frames": len(stats)}
        for key in ("sparse_absrel", "sparse_rmse"):
            aggregate[key] = mean_present([row[key] for row in rows])
        aggregate["n_empty"] = int(np.count_nonzero(n == 0))
        dataset = finalize(int(n.sum()), int(missed.sum()), math.fsum(abs_rel.tolist()),
                           math.fsum(sq_err.tolist()))
        dataset.update({"n_points": int(n.sum()), "n_missed": int(missed.sum()),
                        "n_invalid_gt": int(invalid.sum())})
        return {"aggregate": aggregate, "dataset": dataset}


def _check_range(depth: np.ndarray, floor: float, name: str, path: str) -> None:
    """Depths used by the metrics must lie in [floor, MAX_MAGNITUDE] metres: beyond, a
    squared error overflows (a depth of 1e300) or a relative one does (a GT of 5e-324)."""
    bad = (depth < floor) | (depth > MAX_MAGNITUDE)
    if bad.any():
        raise InputError(f"{name} {float(depth[np.argmax(bad)]):g} m is outside the physical "
                         f"range [{floor:g}, {MAX_MAGNITUDE:g}] m", path=path)


def finalize(n: float, missed: float, abs_rel: float, sq_err: float) -> dict[str, float | None]:
    """Row or pooled metrics from the sums over GT points (None without points)."""
    if n == 0:
        return {"sparse_absrel": None, "sparse_rmse": None}
    return {"sparse_absrel": abs_rel / n, "sparse_rmse": math.sqrt(sq_err / n)}


def match_points(xy: np.ndarray, pred: Points, radius: float) -> np.ndarray:
    """Depth of the nearest predicted point within ``radius`` (inclusive), NaN where none."""
    out = np.full(xy.shape[0], np.nan)
    if pred.xy.shape[0] == 0 or xy.shape[0] == 0:
        return out
    from scipy.spatial import cKDTree  # imported on first use

    tree = cKDTree(pred.xy)
    # the tree compares squared distances strictly: search a hair wider, then apply the
    # radius exactly (inclusive) to the nearest point found
    _, index = tree.query(xy, k=1, distance_upper_bound=radius * (1 + 1e-9) + 1e-100)
    found = index < pred.xy.shape[0]
    nearest = pred.xy[index[found]]
    distance = np.hypot(nearest[:, 0] - xy[found, 0], nearest[:, 1] - xy[found, 1])
    within = np.flatnonzero(found)[distance <= radius]
    out[within] = pred.depth[index[within]]
    return out


def sample_dense(xy: np.ndarray, depth_map: np.ndarray) -> np.ndarray:
    """The map at pixel ``(floor(y + 0.5), floor(x + 0.5))``; NaN outside the image."""
    if depth_map.ndim != 2:
        raise ValueError("dense prediction must be 2-D")
    cols = np.floor(xy[:, 0] + 0.5).astype(np.int64)
    rows = np.floor(xy[:, 1] + 0.5).astype(np.int64)
    inside = (rows >= 0) & (rows < depth_map.shape[0]) & (cols >= 0) & (cols < depth_map.shape[1])
    out = np.full(xy.shape[0], np.nan)
    out[inside] = depth_map[rows[inside], cols[inside]]
    return out
