"""``rpx coherence``: Stack-Level Geometric Coherence of masks against depth maps."""

from __future__ import annotations

import click

from rpx_cli.cli.options import depth_scale_option, int_range, pair_options
from rpx_cli.cli.output import run_pair_command

# The shared pair options name the directories --pred-dir/--gt-dir; here the mask folder
# plays the prediction and the depth folder the ground truth, under their own names.
_RENAMED = ("pred_dir", "gt_dir")


@click.command("coherence")
@click.option("--mask-dir", required=True, type=click.Path(file_okay=False, path_type=str),
              help="Folder of label maps (PNG L/P/I;16, integer .npy).")
@click.option("--depth-dir", required=True, type=click.Path(file_okay=False, path_type=str),
              help="Folder of depth maps (.npy metres, .npz 'depth', 16-bit PNG/PGM/TIFF).")
@pair_options(default_missing="error", dirs_required=False)
@click.option("--tau", type=click.FloatRange(min=0.0, min_open=True), default=0.1,
              show_default=True,
              help="Depth boundary: central-difference gradient magnitude strictly above this "
                   "(metres per pixel).")
@click.option("--dilation", type=int_range(0), default=2, show_default=True,
              help="Both boundaries grow by this many 4-neighbour steps (a diamond) before "
                   "matching; 0 = exact pixels.")
@depth_scale_option
@click.pass_context
def coherence(ctx: click.Context, mask_dir: str, depth_dir: str, tau: float, dilation: int,
              depth_scale: float, **common) -> None:
    """Stack-Level Geometric Coherence: do mask boundaries sit on depth discontinuities?

    Pairs masks and depth maps by stem. Per pair: the mask boundary (a pixel whose right
    or lower neighbour has another label) and the depth boundary (numpy.gradient magnitude
    > TAU) are both grown by DILATION 4-neighbour steps; precision = overlap / grown mask
    boundary, recall = overlap / grown depth boundary (1.0 when nothing to match). sgc is
    the F-score of the mean precision and the mean recall (RPX compute_sgc). Depth <= 0
    marks a pixel without depth (excluded); NaN/inf depth is an input error.

    \b
    Example:
      rpx coherence --mask-dir fixtures/coherence/shelf/mask \\
          --depth-dir fixtures/coherence/shelf/depth --require 'sgc>=0.8' | jq .sgc
    """
    params = {"tau": tau, "dilation": dilation, "depth_scale": depth_scale}
    run_pair_command(ctx, "coherence", params, pred_dir=mask_dir, gt_dir=depth_dir, **common)


coherence.params = [param for param in coherence.params if param.name not in _RENAMED]
