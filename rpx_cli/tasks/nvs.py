"""``rpx eval nvs``: novel-view synthesis, rendered images against captured ones.

Rows: ``psnr`` (data range from the dtype — 255 for 8-bit, 65535 for 16-bit — or
``--data-range``; identical images are capped at 100 dB and counted in
``aggregate.n_identical``, no other pair is capped), ``ssim`` (scikit-image's Gaussian SSIM,
see :mod:`rpx_cli.ops.image_quality`) and ``ssim_global`` (RPX's single-window form).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.arrays import read_array
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.values import MAX_MAGNITUDE
from rpx_cli.ops.image_quality import PSNR_CAP, WINDOW, psnr, ssim, ssim_global
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks.base import MetricInfo, Option, Params, Sample, Task, Warn, shape_text
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

ALPHA_DROPPED = "alpha-dropped"
_RANGE_BY_DTYPE = {np.dtype(np.uint8): 255.0, np.dtype(np.uint16): 65535.0}


class Image(NamedTuple):
    values: np.ndarray  # (H, W) or (H, W, C), alpha removed


@register_task
class NovelViewSynthesis(Task):
    name = "nvs"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("psnr", "ssim", "ssim_global"),
              "aggregate": ("psnr", "ssim", "ssim_global", "n_frames"), "dataset": ("",)}
    primary_metric = "psnr"
    suffixes = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".npy")
    heavy_pairs = True  # a sequence / an image pair: tens of ms to seconds each
    help = "Novel-view synthesis: PSNR, SSIM (scikit-image's Gaussian form) and RPX's global SSIM."
    formats = (
        'Rendered (pred) and captured (GT) image per stem, one shape per pair: 8- or 16-bit PNG,\n'
        'JPEG or TIFF, or .npy (H, W) / (H, W, 3); an alpha channel is dropped (with a warning).\n'
        "PSNR's data range: 255 (8-bit), 65535 (16-bit); float images need --data-range."
    )
    example = (
        'rpx eval nvs --pred-dir fixtures/nvs/render/pred --gt-dir fixtures/nvs/render/gt \\\n'
        "    | jq '.aggregate | {psnr, ssim}'"
    )
    metrics = {
        "psnr": MetricInfo("higher", "10 log10(R^2 / MSE) over all pixels and channels, dB; "
                           f"identical images capped at {PSNR_CAP:g}", "dB"),
        "ssim": MetricInfo("higher", "mean SSIM, Gaussian window sigma 1.5 truncated at 3.5 "
                           "(11x11), population covariance, reflect borders, 5-pixel border "
                           "cropped, averaged per channel then over channels (= skimage "
                           "structural_similarity(gaussian_weights=True, sigma=1.5, "
                           "use_sample_covariance=False, channel_axis=-1))"),
        "ssim_global": MetricInfo("higher", "RPX single-window SSIM: whole image, channels "
                                  "pooled, population statistics"),
    }
    families = {"psnr": (("psnr",), ()), "ssim": (("ssim",), ()),
                "ssim_global": (("ssim_global",), ())}
    options = (
        Option("data_range", "--data-range", "float", None, minimum=0.0, open_min=True, maximum=MAX_MAGNITUDE,
               help="Peak value range R for PSNR and SSIM [default: 255 for 8-bit images, "
                    "65535 for 16-bit; required for float images]."),
    )
    stats = (Stat("psnr"), Stat("ssim"), Stat("ssim_global"), Stat("identical", minimum=0))

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Image:
        image = read_array(path, buffer).array
        if image.ndim == 3 and image.shape[2] in (2, 4):  # LA / RGBA: drop alpha
            warn(ALPHA_DROPPED, path)
            image = image[..., :-1]
            if image.shape[2] == 1:
                image = image[..., 0]
        if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] != 3):
            raise InputError(f"expected an (H, W) or (H, W, 3) image, got shape {image.shape}",
                             path=path)
        if image.dtype.kind not in "uif" or image.dtype == np.bool_:
            raise InputError(f"image has unsupported dtype {image.dtype}", path=path)
        if image.dtype.kind == "f" and not np.isfinite(image).all():
            raise InputError("image holds NaN or inf", path=path)
        if image.dtype.kind == "f" and image.size and np.abs(image).max() > MAX_MAGNITUDE:
            raise InputError(f"image holds values beyond ±{MAX_MAGNITUDE:g}: squared errors "
                             "would overflow", path=path)
        return Image(image)

    def prediction_size(self, gt: Image, params: Params) -> tuple[tuple[int, int], int]:
        return gt.values.shape[:2], 1  # the render must match the GT's size

    def empty_prediction(self, gt: Image, params: Params) -> Image:
        return Image(np.zeros_like(gt.values))

    def evaluate(self, pred: Image, gt: Image, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        p, g = pred.values, gt.values
        if p.shape != g.shape:
            raise InputError(
                f"shapes differ: {pred_path} is {shape_text(p)}, {gt_path} is {shape_text(g)}",
                path=pred_path,
            )
        data_range = params["data_range"]
        if data_range is None:
            if p.dtype != g.dtype:
                raise InputError(
                    f"bit depths differ: {pred_path} is {p.dtype}, {gt_path} is {g.dtype} "
                    "(pass --data-range to compare them on one scale)",
                    path=pred_path,
                )
            data_range = _RANGE_BY_DTYPE.get(g.dtype)
            if data_range is None:
                raise InputError(
                    f"{g.dtype} images have no implied peak value: pass --data-range", path=gt_path
                )
        if min(g.shape[:2]) < WINDOW:
            raise InputError(f"image {shape_text(g)} is smaller than the {WINDOW}x{WINDOW} SSIM window",
                             path=gt_path)
        wanted = params.get("metrics") or self.families
        value, identical = psnr(p, g, data_range)
        row = {"psnr": value,
               "ssim": ssim(p, g, data_range) if "ssim" in wanted else None,
               "ssim_global": ssim_global(p, g, data_range) if "ssim_global" in wanted else None}
        return Sample(row, {**row, "identical": identical})

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        aggregate: dict[str, Any] = {key: mean_present(stats[key])
                                     for key in ("psnr", "ssim", "ssim_global")}
        aggregate["n_identical"] = int(stats["identical"].sum())
        aggregate["n_frames"] = len(stats)
        return {"aggregate": aggregate, "dataset": {}}

    def warning_text(self, kind: str, paths: list[str]) -> str:
        if kind == ALPHA_DROPPED:
            return (f"{len(paths)} image(s) have an alpha channel (e.g. {paths[0]}); it was "
                    "dropped and only the colour channels compared")
        return super().warning_text(kind, paths)

