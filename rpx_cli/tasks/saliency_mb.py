"""Block-level saliency IoU: the original ``eval_saliency_per_mb.py``, same numbers.

Each mask is reduced to a grid of ``block_size`` x ``block_size`` blocks (partial edge
blocks cropped); a block is *on* when the mean of its values, scaled to [0, 1], is
``>= threshold``. Per pair, with P and G the on-blocks of prediction and GT::

    intersection = |P ∩ G|,  union = |P ∪ G|,  iou = intersection / union  (1.0 if union = 0)

and over all pairs ``macro_iou`` = mean of the row IoUs, ``micro_iou`` = Σ intersection /
Σ union (1.0 when Σ union = 0).

Scaling to [0, 1]:

- ``.npy``: if the maximum exceeds 1 the array is divided by its maximum; then values are
  clipped to [0, 1] (negatives count as 0).
- images (PGM, PNG): divided by the largest value the encoding holds (PGM maxval, 255 or
  65535 for PNG), or by ``mask_scale`` when given; then clipped to [0, 1].

Block decisions are exact where the original's float32 mean was not: integer masks compare
an integer block sum against ``ceil(threshold * n * divisor)``; float masks sum in float64.
A block whose mean equals the threshold is therefore on regardless of summation order.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.arrays import read_array
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.ops.blocks import block_grid, block_sums, integer_sum_threshold
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks.base import MetricInfo, Option, Params, Sample, Task, Warn, shape_text
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

PNG_BINARY = "png-binary"


class Mask(NamedTuple):
    """A loaded mask: raw values and the divisor that scales them (None: the .npy rule)."""

    values: np.ndarray
    divisor: float | None


def mask_to_blocks(
    mask: np.ndarray, *, block_size: int, threshold: float, divisor: float | None = None
) -> np.ndarray:
    """Boolean block grid: True where the block's mean scaled value is >= ``threshold``.

    ``divisor`` None applies the ``.npy`` rule (divide by the maximum when it exceeds 1);
    otherwise values are divided by ``divisor``. Scaled values are clipped to [0, 1].
    Raises :class:`InputError` for a non-2-D, non-finite or too-small mask.
    """
    if mask.ndim != 2:
        raise InputError(f"mask must be 2-D, got shape {mask.shape}")
    height, width = mask.shape
    if height < block_size or width < block_size:
        raise InputError(
            f"mask {width}x{height} is smaller than one {block_size}x{block_size} block"
        )
    count = block_size * block_size
    if mask.dtype == np.bool_:
        mask = mask.view(np.uint8)
    if mask.dtype.kind in "iu":
        low, high = int(mask.min()), int(mask.max())
        scale = (high if high > 1 else 1) if divisor is None else divisor
        if float(scale).is_integer():
            scale = int(scale)
            values = mask if low >= 0 and high <= scale else np.clip(mask, 0, scale)
            top = min(high, scale)
            accumulator = np.uint32 if count * top < 2**32 else np.uint64
            if count * top >= 2**64:
                return _float_blocks(values.astype(np.float64), block_size, threshold, scale)
            sums = block_sums(values, block_size, dtype=accumulator)
            return sums >= integer_sum_threshold(threshold, count, scale)
        return _float_blocks(mask.astype(np.float64), block_size, threshold, scale)
    if mask.dtype.kind == "f":
        low, high = float(mask.min()), float(mask.max())
        if not (math.isfinite(low) and math.isfinite(high)):
            bad = int(mask.size - np.count_nonzero(np.isfinite(mask)))
            raise InputError(f"mask holds {bad} non-finite value(s) (NaN or inf)")
        scale = (high if high > 1.0 else 1.0) if divisor is None else float(divisor)
        values = mask if low >= 0.0 and high <= scale else np.clip(mask, 0.0, scale)
        return _float_blocks(values, block_size, threshold, scale)
    raise InputError(f"mask has unsupported dtype {mask.dtype} (expected numbers)")


def _float_blocks(values: np.ndarray, block_size: int, threshold: float, scale: float) -> np.ndarray:
    if block_size * block_size * scale > 1e300:  # values near the float maximum: a block's
        values, scale = values / scale, 1.0      # sum would overflow, so divide first
    sums = block_sums(values, block_size, dtype=np.float64)
    return sums / (block_size * block_size * scale) >= threshold


def block_iou(pred: np.ndarray, gt: np.ndarray) -> tuple[int, int, float]:
    """``(intersection, union, iou)`` of two boolean block grids; IoU 1.0 for an empty union."""
    intersection = int(np.count_nonzero(pred & gt))
    union = int(np.count_nonzero(pred | gt))
    return intersection, union, 1.0 if union == 0 else intersection / union


@register_task
class SaliencyMB(Task):
    name = "saliency-mb"
    report_schema = "rpx.saliency-mb"
    rank_metric = "iou"
    help = "Block-level IoU of saliency masks, as ROI encoders consume them."
    details = (
        "Each mask (.npy, .pgm P2/P5, 8/16-bit .png) is scaled to [0, 1], cut into "
        "BLOCK-SIZE x BLOCK-SIZE blocks (partial edge blocks dropped) and a block is on when "
        "its mean is >= THRESHOLD. Per pair: intersection, union and IoU of the on-blocks "
        "(1.0 when neither has a block on); overall: macro_iou (mean of row IoUs) and "
        "micro_iou (total intersection / total union). Same numbers, flags and keys as "
        "eval_saliency_per_mb.py; unpaired stems are skipped and listed under 'unpaired'."
    )
    example = (
        "rpx saliency-mb --pred-dir fixtures/saliency-mb/ctu64/pred \\\n"
        "    --gt-dir fixtures/saliency-mb/ctu64/gt --block-size 64 --threshold 0.4 | jq .micro_iou"
    )
    suffixes = (".npy", ".pgm", ".png")
    default_missing = "skip"
    options = (
        Option("block_size", "--block-size", "int", 16, minimum=1,
               help="Block edge in pixels (16: H.264 macroblocks; 64: AV1/VVC CTUs)."),
        Option("threshold", "--threshold", "float", 0.5, minimum=0.0, maximum=1.0,
               help="A block is on when its mean scaled value is >= this."),
        Option("mask_scale", "--mask-scale", "float", None, minimum=0.0, open_min=True,
               help="Divisor for image masks (PNG, PGM) [default: PGM maxval; 255 or 65535 "
                    "for PNG]. Use 1 for PNG masks stored as 0/1."),
    )
    stats = (Stat("intersection_blocks", minimum=0), Stat("union_blocks", minimum=0),
             Stat("iou", minimum=0), Stat("blocks", minimum=0))
    # the original tool's top-level and row keys
    report_properties = {
        "block_size": {"type": "integer", "minimum": 1},
        "threshold": {"type": "number", "minimum": 0, "maximum": 1},
        "macro_iou": {"type": "number", "minimum": 0, "maximum": 1},
        "micro_iou": {"type": "number", "minimum": 0, "maximum": 1},
        "totals": {"type": "object", "required": ["intersection_blocks", "union_blocks", "blocks"],
                   "properties": {key: {"type": "integer", "minimum": 0}
                                  for key in ("intersection_blocks", "union_blocks", "blocks")}},
    }
    report_required = ("block_size", "threshold", "macro_iou", "micro_iou", "totals")
    row_properties = {
        "gt_path": {"type": ["string", "null"]},
        "width": {"type": "integer", "minimum": 1}, "height": {"type": "integer", "minimum": 1},
        "block_size": {"type": "integer", "minimum": 1},
        **{key: {"type": "integer", "minimum": 0} for key in
           ("pred_blocks", "gt_blocks", "intersection_blocks", "union_blocks")},
        "iou": {"type": "number", "minimum": 0, "maximum": 1},
    }
    row_required = ("width", "height", "block_size", "pred_blocks", "gt_blocks",
                    "intersection_blocks", "union_blocks", "iou")
    metrics = {
        "iou": MetricInfo("higher", "block IoU of one pair (1.0 when both have no block on)"),
        "macro_iou": MetricInfo("higher", "mean of the row IoUs"),
        "micro_iou": MetricInfo("higher", "total intersection blocks / total union blocks"),
    }

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Mask:
        loaded = read_array(path, buffer)
        if loaded.format == "npy":
            return Mask(loaded.array, None)
        if loaded.maxval is None:
            raise InputError(
                f"{loaded.format} mask of dtype {loaded.array.dtype}: expected 8- or 16-bit",
                path=path,
            )
        scale = params.get("mask_scale")
        if scale is None and loaded.format == "png" and int(loaded.array.max(initial=0)) == 1:
            warn(PNG_BINARY, path)
        return Mask(loaded.array, loaded.maxval if scale is None else scale)

    def prediction_size(self, gt: Mask, params: Params) -> tuple[tuple[int, int], int]:
        return gt.values.shape[:2], 1  # the mask must match the GT's size

    def empty_prediction(self, gt: Mask, params: Params) -> Mask:
        return Mask(np.zeros(gt.values.shape, dtype=np.uint8), 1)

    def evaluate(self, pred: Mask, gt: Mask, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        if pred.values.shape != gt.values.shape:
            raise InputError(
                f"mask shapes differ: {pred_path} is {shape_text(pred.values)}, "
                f"{gt_path} is {shape_text(gt.values)}",
                path=pred_path,
            )
        block_size, threshold = params["block_size"], params["threshold"]
        pred_blocks = _blocks(pred, block_size, threshold, pred_path)
        gt_blocks = _blocks(gt, block_size, threshold, gt_path)
        intersection, union, iou = block_iou(pred_blocks, gt_blocks)
        height, width = gt.values.shape
        hb, wb = block_grid((height, width), block_size)
        return Sample({
            "width": int(width),
            "height": int(height),
            "block_size": int(block_size),
            "pred_blocks": int(np.count_nonzero(pred_blocks)),
            "gt_blocks": int(np.count_nonzero(gt_blocks)),
            "intersection_blocks": intersection,
            "union_blocks": union,
            "iou": iou,
        }, {"intersection_blocks": intersection, "union_blocks": union, "iou": iou,
            "blocks": hb * wb})

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        n_rows = len(stats)
        intersection = int(stats["intersection_blocks"].sum())  # integers: exact in float64
        union = int(stats["union_blocks"].sum())
        # math.fsum: the correctly rounded sum, independent of row order and of sharding
        # (the original's np.mean may differ in the last bit: 7/9 vs 0.7777777777777777).
        macro = mean_present(stats["iou"]) if n_rows else None
        return {
            "block_size": params["block_size"],
            "threshold": params["threshold"],
            "macro_iou": macro,
            "micro_iou": (1.0 if union == 0 else intersection / union) if n_rows else None,
            "totals": {
                "intersection_blocks": intersection,
                "union_blocks": union,
                "blocks": int(stats["blocks"].sum()),
            },
        }

    def warning_text(self, kind: str, paths: list[str]) -> str:
        if kind == PNG_BINARY:
            return (
                f"{len(paths)} PNG mask(s) hold only 0 and 1 (e.g. {paths[0]}); divided by "
                "255 they never reach the threshold — pass --mask-scale 1 if 1 means salient"
            )
        return super().warning_text(kind, paths)


def _blocks(mask: Mask, block_size: int, threshold: float, path: str | None) -> np.ndarray:
    try:
        return mask_to_blocks(
            mask.values, block_size=block_size, threshold=threshold, divisor=mask.divisor
        )
    except InputError as exc:
        raise InputError(str(exc), path=path) from None
