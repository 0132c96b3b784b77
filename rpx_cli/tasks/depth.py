"""``rpx eval depth``: monocular depth against dense ground truth.

Rows are per frame; ``aggregate`` is the mean of the rows (frames weighted equally, a
frame without a valid pixel excluded and counted in ``n_empty``); ``dataset`` pools every
valid pixel of every frame (pixels weighted equally). See :mod:`rpx_cli.ops.depth` for the
metric definitions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.arrays import read_array
from rpx_cli.io.depth_maps import DepthMap, to_depth
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.values import MAX_MAGNITUDE, MIN_DEPTH
from rpx_cli.ops.depth import (
    METRICS,
    DepthSums,
    NonFinitePrediction,
    apply_alignment,
    combine_columns,
    finalize,
    finalize_columns,
    fit_alignment,
    shared_kernel,
)
from rpx_cli.ops.reduce import mean_present
from rpx_cli.ops.resize import RESIZE_METHODS, resize
from rpx_cli.params import banded
from rpx_cli.params.parsers import parse_band
from rpx_cli.tasks.base import (
    SWAP_HINT,
    MetricInfo,
    Option,
    Params,
    Sample,
    Task,
    Warn,
    shape_text,
)
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

ALIGN_METHODS = ("none", "median", "ls_affine", "ls_disparity")
# per-file observations that only warn together: GT stored as float metres (as a model
# writes its output) and predictions stored as integers (as a depth sensor writes GT)
GT_FLOAT = "gt-float"
PRED_INTEGER = "pred-integer"

_INFO = {
    "absrel": MetricInfo("lower", "mean(|p - g| / g)"),
    "sqrel": MetricInfo("lower", "mean((p - g)^2 / g) (Eigen et al. convention, divided by g, not g^2)",
                        "m"),
    "rmse": MetricInfo("lower", "sqrt(mean((p - g)^2)), metres", "m"),
    "rmse_log": MetricInfo("lower", "sqrt(mean((ln p - ln g)^2))"),
    "log10": MetricInfo("lower", "mean(|log10 p - log10 g|)"),
    "silog": MetricInfo("lower", "sqrt(mean(d^2) - mean(d)^2), d = ln p - ln g; unscaled (no x100)"),
    "delta1": MetricInfo("higher", "fraction of pixels with max(p/g, g/p) < 1.25 (strict)"),
    "delta2": MetricInfo("higher", "fraction of pixels with max(p/g, g/p) < 1.25^2 (strict)"),
    "delta3": MetricInfo("higher", "fraction of pixels with max(p/g, g/p) < 1.25^3 (strict)"),
    "n_valid": MetricInfo("none", "valid GT pixels (finite, > 0, strictly inside the caps)"),
}
# a frame's sums stay far below this when depths lie in [MIN_DEPTH, MAX_MAGNITUDE] m (and
# the dataset's sums, pooled over frames, can then never overflow either)
_SUM_LIMIT = 1e100


@register_task
class Depth(Task):
    name = "depth"
    primary_metric = "absrel"
    headline = ("aggregate.absrel", "aggregate.rmse", "aggregate.delta1", "dataset.absrel", "dataset.rmse",
                "dataset.delta1")
    band_metrics = METRICS
    page_view = "error_bands"
    suffixes = (".npy", ".npz", ".png", ".pgm", ".tif", ".tiff")
    help = "Monocular depth: AbsRel, SqRel, RMSE, RMSE log, log10, SILog, delta < 1.25^k."
    formats = (
        'Prediction and GT, one file per stem, either side in any of:\n'
        '  .npy            float metres (an integer array is divided by --depth-scale)\n'
        "  .npz            the array under key 'depth', same rule\n"
        '  .png .pgm .tif  16-bit integers / --depth-scale (default 1000: mm); 8-bit is refused\n'
        'Valid pixels: GT finite and > 0 (0 = no measurement), within --min-depth/--max-depth.'
    )
    example = (
        'rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt \\\n'
        '    --max-depth 10 | jq .aggregate.absrel\n'
        'rpx eval depth --pred-dir fixtures/depth/indoor/pred --gt-dir fixtures/depth/indoor/gt \\\n'
        '    --range 0:2 --range 2: --align ls_affine -o depth.json'
    )
    metrics = _INFO
    families = {"rows": (METRICS, ()), "dataset": ((), ("dataset",))}
    options = (
        Option("depth_scale", "--depth-scale", "float", 1000.0, minimum=0.0, open_min=True,
               help="Integer depth (16-bit PNG/PGM/TIFF, integer .npy) is divided by this to "
                    "get metres: 1000 = millimetres, 256 = KITTI."),
        Option("min_depth", "--min-depth", "float", None, minimum=0.0,
               help="Evaluate only GT depths strictly above this (metres)."),
        Option("max_depth", "--max-depth", "float", None, minimum=0.0, open_min=True,
               help="Evaluate only GT depths strictly below this (metres)."),
        Option("ranges", "--range", "parsed", (), multiple=True, parse=parse_band, metavar="A:B", unique=True,
               help="Also report every metric for GT depth in [A, B) metres, suffixed like "
                    "absrel_0p3m_1m; A: is open-ended. Repeatable."),
        Option("align", "--align", "choice", "none", choices=ALIGN_METHODS,
               help="Per-frame alignment of relative-depth predictions, fitted on valid pixels."),
        Option("resize_pred", "--resize-pred", "choice", None, choices=RESIZE_METHODS,
               help="Resize predictions to the GT size instead of failing on a shape mismatch."),
    )

    # --- parameters -------------------------------------------------------------------

    def validate_params(self, params: Params) -> None:
        low, high = params["min_depth"], params["max_depth"]
        if low is not None and high is not None and not low < high:
            raise ParameterError(f"min depth {low} must be below max depth {high}")

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        info = dict(self.metrics)
        if params.get("min_depth") is not None or params.get("max_depth") is not None:
            info["n_capped"] = MetricInfo("none", "GT pixels excluded by --min-depth/--max-depth")
        if params.get("align", "none") != "none":
            info["align_scale"] = MetricInfo("none", f"fitted scale ({params['align']})")
            info["align_shift"] = MetricInfo("none", f"fitted shift ({params['align']})")
        for band in self.bands(params):
            for metric in METRICS:
                base = self.metrics[metric]
                info[band.key(metric)] = MetricInfo(base.direction, f"{base.description}, "
                                                    f"GT depth in {band.label}")
            info[band.key("n_valid")] = MetricInfo("none", "valid GT pixels in the band")
        return info

    # --- per pair ---------------------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> DepthMap:
        loaded = read_array(path, buffer, npz_key="depth")
        depth = to_depth(loaded.array, loaded.format, params["depth_scale"], path)
        if role == "gt" and depth.scale is None:
            warn(GT_FLOAT, path)
        elif role == "pred" and depth.scale is not None:
            warn(PRED_INTEGER, path)
        return depth

    def warning_lines(self, warnings: Any) -> list[str]:
        """Float GT beside integer predictions is the two folders swapped, most likely
        (absrel computed the wrong way round: 0.277 instead of 0.117 on the fixtures);
        either alone is an ordinary layout and says nothing."""
        floats, integers = warnings.get(GT_FLOAT, []), warnings.get(PRED_INTEGER, [])
        lines = super().warning_lines({kind: paths for kind, paths in warnings.items()
                                       if kind not in (GT_FLOAT, PRED_INTEGER)})
        if floats and integers:
            lines.append(f"{len(floats)} GT map(s) hold float metres as predictions do (e.g. "
                         f"{floats[0]}) and {len(integers)} prediction(s) hold integers ÷ "
                         f"--depth-scale as sensor GT does (e.g. {integers[0]}): {SWAP_HINT}")
        return lines

    def empty_prediction(self, gt: DepthMap, params: Params) -> DepthMap:
        return DepthMap(np.zeros(gt.values.shape, dtype=np.float32))

    def evaluate(self, pred: DepthMap, gt: DepthMap, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        shape = gt.values.shape
        if pred.values.shape != shape and params["resize_pred"] is None:
            raise InputError(
                f"shapes differ: {pred_path} is {shape_text(pred.values)}, {gt_path} is "
                f"{shape_text(gt.values)} "
                "(--resize-pred nearest|bilinear resizes predictions)",
                path=pred_path,
            )
        align_method = params["align"]
        # float32 arithmetic where it holds the inputs (see DepthKernel); alignment,
        # bilinear resizing and integer or float64 predictions take float64.
        fast = (pred.exact_in_float32 and (gt.exact_in_float32 or gt.scale is not None)
                and align_method == "none" and params["resize_pred"] != "bilinear")
        p = pred.values if fast else pred.metres(np.float64)
        if p.shape != shape:
            p = resize(p, shape, params["resize_pred"])
        valid, row = self._valid(gt, params)
        n_valid = int(np.count_nonzero(valid))
        flat_valid = None if n_valid == valid.size else valid.ravel()
        p = p.ravel()
        if align_method != "none":
            p, row["align_scale"], row["align_shift"] = self._align(p, gt, flat_valid, align_method,
                                                                    pred_path)
        kernel = shared_kernel(np.float32 if fast else np.float64)
        gt_values = gt.values.ravel() if (fast or gt.scale is None) else gt.metres(np.float64).ravel()
        try:
            sums = kernel.sums(p, gt_values, valid=flat_valid,
                               gt_scale=gt.scale if fast else None,
                               bands=self.bands(params))
        except NonFinitePrediction as exc:
            raise InputError(str(exc), path=pred_path) from None
        if not all(abs(value) < _SUM_LIMIT for part in sums for value in part.as_tuple()):
            self._out_of_range(pred, gt, valid, pred_path, gt_path)
        row.update(finalize(sums[0]))
        row["n_valid"] = n_valid
        stats = {"sums": sums[0].as_tuple(), "n_capped": row.get("n_capped", 0)}
        for band, band_sums in zip(self.bands(params), sums[1:], strict=True):
            row.update({band.key(k): v for k, v in finalize(band_sums).items()})
            row[band.key("n_valid")] = band_sums.n
            stats[band.key("sums")] = band_sums.as_tuple()
        return Sample(row, stats)

    @staticmethod
    def _out_of_range(pred: DepthMap, gt: DepthMap, valid: np.ndarray, pred_path: str | None,
                      gt_path: str) -> None:
        """The metric sums overflowed (or came near): name the file whose depths are outside
        the physical range. Depths within [MIN_DEPTH, MAX_MAGNITUDE] m keep every per-pixel
        term below 1e30 and a frame's sums below 1e40, so this runs only for such files."""
        # predictions below the range are clipped (PRED_FLOOR): only their top matters
        for depth, floor, name, path in ((gt, MIN_DEPTH, "GT", gt_path),
                                         (pred, -np.inf, "predicted", pred_path)):
            values = depth.metres(np.float64)
            values = values[valid] if values.shape == valid.shape else values.ravel()
            bad = (values < floor) | (values > MAX_MAGNITUDE)
            if bad.any():
                raise InputError(f"{name} depth {float(values[np.argmax(bad)]):g} m at a valid "
                                 f"pixel is outside the physical range [{MIN_DEPTH:g}, "
                                 f"{MAX_MAGNITUDE:g}] m: the metrics would overflow", path=path)
        raise InputError(f"the depth metrics overflow on {pred_path} against {gt_path}",
                         path=pred_path or gt_path)

    @staticmethod
    def _valid(gt: DepthMap, params: Params) -> tuple[np.ndarray, dict[str, Any]]:
        """Valid GT pixels (finite, > 0, strictly inside the caps) and ``n_capped``."""
        low, high = params["min_depth"], params["max_depth"]
        raw = gt.values if gt.scale is not None else None
        if low is not None or high is not None:  # compare in float64: exactly as written
            metres = gt.metres(np.float64) if raw is not None else gt.values
            valid = np.greater(metres, np.float64(0.0 if low is None else low))
            valid &= np.less(metres, np.float64(np.inf if high is None else high))
            plausible = (raw > 0) if raw is not None else ((metres > 0) & (metres < np.inf))
            return valid, {"n_capped": int(np.count_nonzero(plausible)) - int(np.count_nonzero(valid))}
        if raw is not None:
            return raw > 0, {}
        g = gt.values
        valid = np.greater(g, g.dtype.type(0))
        valid &= np.less(g, g.dtype.type(np.inf))
        return valid, {}

    @staticmethod
    def _align(p: np.ndarray, gt: DepthMap, valid: np.ndarray | None, method: str,
               pred_path: str | None) -> tuple[np.ndarray, float, float | None]:
        """Fit on the valid pixels, apply to every pixel (float64)."""
        g = gt.metres(np.float64).ravel()
        fit_p, fit_g = (p, g) if valid is None else (p[valid], g[valid])
        if not np.isfinite(fit_p).all():
            bad = int(fit_p.size - np.count_nonzero(np.isfinite(fit_p)))
            raise InputError(str(NonFinitePrediction(bad)), path=pred_path)
        try:
            scale, shift = fit_alignment(fit_p, fit_g, method) if fit_p.size else (1.0, 0.0)
        except InputError as exc:
            raise InputError(str(exc), path=pred_path) from None
        return apply_alignment(p, method, scale, shift), scale, shift

    # --- over all rows ------------------------------------------------------------------

    def statistics(self, params: Params) -> tuple[Stat, ...]:
        """Per band (the whole frame first): the :class:`DepthSums` of the frame."""
        width = len(DepthSums.__slots__)
        return (*(Stat(banded("sums", band), width) for band in [None, *self.bands(params)]),
                Stat("n_capped"))

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        aggregate: dict[str, Any] = {}
        dataset: dict[str, Any] = {}
        for band in [None, *self.bands(params)]:
            block = stats[banded("sums", band)]
            per_row = finalize_columns(block)  # the very numbers in the rows
            present = block[:, 0] > 0
            for metric in METRICS:
                aggregate[banded(metric, band)] = mean_present(per_row[metric][present])
            aggregate[banded("n_empty", band)] = int(np.count_nonzero(~present))
            pooled = combine_columns(block)
            dataset.update({banded(k, band): v for k, v in finalize(pooled).items()})
            dataset[banded("n_valid", band)] = pooled.n
        if params["min_depth"] is not None or params["max_depth"] is not None:
            dataset["n_capped"] = int(stats["n_capped"].sum())
        aggregate["n_frames"] = len(stats)
        return {"aggregate": aggregate, "dataset": dataset}

