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
    PRED_FLOOR,
    DepthSums,
    combine_columns,
    finalize,
    finalize_columns,
)
from rpx_cli.ops.depth_alignment import apply_alignment, fit_alignment
from rpx_cli.ops.depth_bins import EDGES, N_BINS, DepthHistogram
from rpx_cli.ops.depth_kernel import NonFinitePrediction, shared_kernel
from rpx_cli.ops.pictures import depth_error_overlay
from rpx_cli.ops.reduce import mean_present
from rpx_cli.ops.resize import RESIZE_METHODS, resize
from rpx_cli.params import banded
from rpx_cli.params.parsers import parse_band
from rpx_cli.params.pictures import IMAGES_DIR, KEEP_WORST
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


# --resize-pred: a prediction may have this many times the GT's pixels (8x per side)
RESIZE_BUDGET = 64


@register_task
class Depth(Task):
    name = "depth"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("absrel", "sqrel", "rmse", "rmse_log", "log10", "silog", "delta1",
                       "delta2", "delta3", "n_valid"),
              "aggregate": ("absrel", "sqrel", "rmse", "rmse_log", "log10", "silog", "delta1",
                            "delta2", "delta3", "n_frames", "n_empty"),
              "dataset": ("", "absrel", "sqrel", "rmse", "rmse_log", "log10", "silog", "delta1",
                          "delta2", "delta3", "n_valid")}
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
    families = {"rows": (METRICS, ()), "dataset": ((), ("dataset",)),
                "by_depth": ((), ("dataset.by_depth", "dataset.pred_vs_gt"))}
    # the error by depth costs about twice the metrics' own passes: computed when asked
    optional_families = ("by_depth",)
    report_properties = {"dataset": {"type": "object", "properties": {
        "by_depth": {"type": "object", "description": "The error per quarter-octave bin of GT "
                     "depth (the bins holding a valid pixel, from the first to the last): "
                     "[low, high) metres (high null: open-ended), pixels, AbsRel and RMSE.",
                     "required": ["bins", "n", "absrel", "rmse"],
                     "properties": {"bins": {"type": "array", "items": {
                         "type": "array", "minItems": 2, "maxItems": 2,
                         "items": {"type": ["number", "null"]}}},
                         "n": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                         "absrel": {"type": "array", "items": {"type": ["number", "null"]}},
                         "rmse": {"type": "array", "items": {"type": ["number", "null"]}}}},
        "pred_vs_gt": {"type": "object", "description": "Pixels per (GT bin, predicted bin): "
                       "counts[i][j], rows the GT's bins, columns the prediction's, both the "
                       "quarter-octave bins of edges (the span holding a pixel on either side).",
                       "required": ["edges", "counts"],
                       "properties": {"edges": {"type": "array", "items": {"type": ["number", "null"]}},
                                      "counts": {"type": "array", "items": {"type": "array", "items": {
                                          "type": "integer", "minimum": 0}}}}}}}}
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
        KEEP_WORST, IMAGES_DIR,
    )

    # --- parameters -------------------------------------------------------------------

    def validate_params(self, params: Params) -> None:
        low, high = params["min_depth"], params["max_depth"]
        if low is not None and high is not None and not low < high:
            raise ParameterError(f"min depth {low} must be below max depth {high}")
        chosen = params.get("metrics") or ()
        if "by_depth" in chosen and "dataset" not in chosen:
            raise ParameterError("--metrics: by_depth is pooled into dataset: name dataset too "
                                 "(--metrics rows,dataset,by_depth)")

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

    def prediction_size(self, gt: DepthMap, params: Params) -> tuple[tuple[int, int], int]:
        """The GT's size; under ``--resize-pred`` up to 64 times its pixels (8x per side)."""
        height, width = gt.values.shape[:2]
        return (height, width), 1 if params["resize_pred"] is None else RESIZE_BUDGET

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
        capped = params["min_depth"] is not None or params["max_depth"] is not None
        # without caps or alignment the kernel finds the valid pixels itself (one pass)
        from_gt = fast and not capped and align_method == "none"
        valid, row = (None, {}) if from_gt else self._valid(gt, params)
        n_valid = None if from_gt else int(np.count_nonzero(valid))
        flat_valid = None if valid is None or n_valid == valid.size else valid.ravel()
        p = p.ravel()
        if align_method != "none":
            p, row["align_scale"], row["align_shift"] = self._align(p, gt, flat_valid, align_method,
                                                                    pred_path)
        kernel = shared_kernel(np.float32 if fast else np.float64)
        gt_values = gt.values.ravel() if (fast or gt.scale is None) else gt.metres(np.float64).ravel()
        histogram = DepthHistogram.empty() if _by_depth(params) else None
        try:
            sums = kernel.sums(p, gt_values, valid=flat_valid, valid_from_gt=from_gt,
                               gt_scale=gt.scale if fast else None,
                               bands=self.bands(params), histogram=histogram)
        except NonFinitePrediction as exc:
            raise InputError(str(exc), path=pred_path) from None
        if not all(abs(value) < _SUM_LIMIT for part in sums for value in part.as_tuple()):
            self._out_of_range(pred, gt, self._valid(gt, params)[0] if valid is None else valid,
                               pred_path, gt_path)
        row.update(finalize(sums[0]))
        row["n_valid"] = sums[0].n if n_valid is None else n_valid
        stats = {"sums": sums[0].as_tuple(), "n_capped": row.get("n_capped", 0)}
        if histogram is not None:
            stats["by_depth"] = np.concatenate([histogram.abs_rel, histogram.sq_err]).tolist()
            stats["pred_vs_gt"] = histogram.counts
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

    # --- the page's pictures of a worst frame ----------------------------------------------

    draws_overlays = True

    def frame_overlays(self, pred: DepthMap, gt: DepthMap, params: Params) -> dict[str, Any]:
        """``absrel``: the frame's relative error map (after ``--resize-pred`` and
        ``--align``, as it was scored), valid pixels only."""
        shape = gt.values.shape
        p = pred.metres(np.float64)
        if p.shape != shape:
            if params["resize_pred"] is None:
                raise InputError(f"shapes differ: {shape_text(pred.values)} and {shape_text(gt.values)}")
            p = resize(p, shape, params["resize_pred"])
        valid, _ = self._valid(gt, params)
        p = p.ravel()
        if params["align"] != "none":
            p, _, _ = self._align(p, gt, valid.ravel(), params["align"], None)
        p = np.maximum(p, PRED_FLOOR).reshape(shape)
        return {"absrel": (depth_error_overlay(p, gt.metres(np.float64), valid), True)}

    # --- over all rows ------------------------------------------------------------------

    def statistics(self, params: Params) -> tuple[Stat, ...]:
        """Per band (the whole frame first): the :class:`DepthSums` of the frame."""
        width = len(DepthSums.__slots__)
        by_depth = (Stat("by_depth", 2 * N_BINS),  # per GT bin: Σ |p - g| / g, then Σ (p - g)²
                    Stat("pred_vs_gt", encode=_encode_counts, decode=_decode_counts,
                         merge=np.add)) if _by_depth(params) else ()
        return (*(Stat(banded("sums", band), width) for band in [None, *self.bands(params)]),
                Stat("n_capped", minimum=0), *by_depth)

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        aggregate: dict[str, Any] = {}
        dataset: dict[str, Any] = {}
        warnings = []
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
            if band is not None and pooled.n == 0 and dataset["n_valid"]:
                warnings.append(f"--range {band.label} holds no valid GT pixel in any frame (of "
                                f"the {dataset['n_valid']:,} the other filters keep): its "
                                "metrics are null")
        if params["min_depth"] is not None or params["max_depth"] is not None:
            dataset["n_capped"] = int(stats["n_capped"].sum())
        if _by_depth(params):
            dataset.update(by_depth_sections(stats["by_depth"], stats["pred_vs_gt"]))
        aggregate["n_frames"] = len(stats)
        return {"aggregate": aggregate, "dataset": dataset,
                **({"warnings": warnings} if warnings else {})}


def _by_depth(params: Params) -> bool:
    return "by_depth" in (params.get("metrics") or ())


def _encode_counts(counts: np.ndarray) -> list[list[int]]:
    return counts.tolist()


def _decode_counts(data: Any) -> np.ndarray:
    counts = np.asarray(data, dtype=np.int64)
    if counts.shape != (N_BINS, N_BINS):
        raise ValueError(f"pred_vs_gt has shape {counts.shape}, expected ({N_BINS}, {N_BINS})")
    return counts


def by_depth_sections(sums: np.ndarray, counts: np.ndarray | None) -> dict[str, Any]:
    """``by_depth`` (per GT bin holding a pixel, first to last: ``[low, high)`` metres, pixels,
    AbsRel, RMSE) and ``pred_vs_gt`` (the pixel counts per GT and predicted bin over the span
    either side reaches) from every frame's per-bin sums (rows in stem order) and the summed
    counts."""
    if counts is None:  # no frame
        counts = np.zeros((N_BINS, N_BINS), np.int64)
    n = counts.sum(axis=1)
    abs_rel = sums[:, :N_BINS].sum(axis=0) if len(sums) else np.zeros(N_BINS)
    sq_err = sums[:, N_BINS:].sum(axis=0) if len(sums) else np.zeros(N_BINS)
    held = np.flatnonzero(n)
    first, last = (int(held[0]), int(held[-1]) + 1) if held.size else (0, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        absrel = np.where(n > 0, abs_rel / np.maximum(n, 1), np.nan)
        rmse = np.where(n > 0, np.sqrt(sq_err / np.maximum(n, 1)), np.nan)

    def bins(lo: int, hi: int) -> list[list[float | None]]:
        return [[0.0 if k == 0 else float(EDGES[k]),
                 None if k == N_BINS - 1 else float(EDGES[k + 1])] for k in range(lo, hi)]

    either = np.flatnonzero(counts.any(axis=0) | counts.any(axis=1))
    lo, hi = (int(either[0]), int(either[-1]) + 1) if either.size else (0, 0)
    edges = [0.0 if k == 0 else float(EDGES[k]) for k in range(lo, hi)] + \
        ([None if hi == N_BINS else float(EDGES[hi])] if hi > lo else [])
    return {"by_depth": {"bins": bins(first, last), "n": n[first:last].tolist(),
                         "absrel": [None if v != v else v for v in absrel[first:last].tolist()],
                         "rmse": [None if v != v else v for v in rmse[first:last].tolist()]},
            "pred_vs_gt": {"edges": edges, "counts": counts[lo:hi, lo:hi].tolist()}}

