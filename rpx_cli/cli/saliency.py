"""``rpx saliency-mb``: block-level saliency IoU."""

from __future__ import annotations

import click

from rpx_cli.cli.options import int_range, pair_options
from rpx_cli.cli.output import run_pair_command


@click.command("saliency-mb")
@pair_options(default_missing="skip")
@click.option("--block-size", type=int_range(1), default=16, show_default=True,
              help="Block edge in pixels (16: H.264 macroblocks; 64: AV1/VVC CTUs).")
@click.option("--threshold", type=click.FloatRange(0.0, 1.0), default=0.5, show_default=True,
              help="A block is on when its mean scaled value is >= this.")
@click.option("--mask-scale", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="Divisor for image masks (PNG, PGM) [default: PGM maxval; 255 or 65535 "
                   "for PNG]. Use 1 for PNG masks stored as 0/1.")
@click.pass_context
def saliency_mb(ctx: click.Context, block_size: int, threshold: float,
                mask_scale: float | None, **common) -> None:
    """Block-level IoU of saliency masks, as ROI encoders consume them.

    Each mask (.npy, .pgm P2/P5, 8/16-bit .png) is scaled to [0, 1], cut into
    BLOCK-SIZE x BLOCK-SIZE blocks (partial edge blocks dropped) and a block is on when
    its mean is >= THRESHOLD. Per pair: intersection, union and IoU of the on-blocks
    (1.0 when neither has a block on); overall: macro_iou (mean of row IoUs) and
    micro_iou (total intersection / total union). Same numbers, flags and keys as
    eval_saliency_per_mb.py; unpaired stems are skipped and listed under 'unpaired'.

    \b
    Example:
      rpx saliency-mb --pred-dir fixtures/saliency-mb/ctu64/pred --gt-dir fixtures/saliency-mb/ctu64/gt \\
          --block-size 64 --threshold 0.4 | jq .micro_iou
    """
    params = {"block_size": block_size, "threshold": threshold, "mask_scale": mask_scale}
    run_pair_command(ctx, "saliency-mb", params, **common)
