"""``rpx stability``: temporal stability of predictions over the frames of a sequence."""

from __future__ import annotations

import click

from rpx_cli.cli.options import (
    click_option,
    compact_option,
    config_option,
    declared_options,
    digest_cache_options,
    digest_cache_setting,
    html_option,
    out_option,
    refuse_overwriting_inputs,
    require_option,
    traceback_option,
)
from rpx_cli.cli.output import finish, invocation_of, plain_progress, show_progress
from rpx_cli.params.workflows import STABILITY_OPTIONS, STABILITY_TASK

_DIR = click.Path(file_okay=False, path_type=str)


@click.command("stability")
@click_option(STABILITY_TASK, required=True)
@click.option("--pred-dir", required=True, type=_DIR,
              help="Folder of predictions, one file per frame, named by the manifest's stems.")
@click.option("--manifest", required=True, type=click.Path(dir_okay=False, path_type=str),
              help="Per-stem sequence, frame, pose (4x4 camera-to-world) and intrinsics "
                   "[fx, fy, cx, cy].")
@declared_options(STABILITY_OPTIONS[1:])
@out_option()
@digest_cache_options
@require_option
@compact_option
@html_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar, summary or warnings on stderr.")
@click.option("--progress/--no-progress", default=None,
              help="Force the progress bar on or off [default: on when stderr is a terminal].")
@traceback_option
@config_option
@click.pass_context
def stability(ctx: click.Context, task: str, pred_dir: str, manifest: str, warp: str,
              depth_dir: str | None, depth_scale: float, ignore_index: tuple[int, ...],
              missing: str, jobs: int | None, out: str, require: tuple[str, ...], compact: bool,
              quiet: bool, progress: bool | None, digest_cache: str | None,
              no_digest_cache: bool, html: str | None = None) -> None:
    """Temporal stability (TS): do a model's predictions for consecutive frames agree once
    the camera motion is undone?

    Frames are grouped by the manifest's 'sequence' (else scene/phase) and ordered by
    'frame'. Each pair (t, t+1) scores mean per-class IoU(P_t, warp(P_t+1)) for
    segmentation, or max(0, 1 - mean|D_t - warp(D_t+1)| / max(range(D_t), 1e-3)) for
    depth, over the pixels valid in both. ts_score is the mean over all pairs; a
    single-frame sequence adds no pair. reproject back-projects frame t (predicted depth
    for depth, --depth-dir GT depth for segmentation) with the poses (camera-to-world) and
    intrinsics, and excludes pixels that leave the image, fall behind the camera or are
    occluded. The report names the warp used.

    \b
    Example:
      rpx stability --task depth --pred-dir fixtures/stability/kitchen/pred/depth \\
          --manifest fixtures/stability/kitchen/manifest.json --require 'ts_score>=0.9' \\
          | jq '.ts_score, (.sequences | map_values(.ts_score))'
    """
    from rpx_cli.console import ProgressBar
    from rpx_cli.run.stability import run_stability_report

    refuse_overwriting_inputs(ctx, suffixes=(".npy", ".npz", ".png", ".pgm", ".tif", ".tiff"))
    verbose = show_progress(quiet, progress)
    evaluation = run_stability_report(
        task, pred_dir, manifest, warp=warp, depth_dir=depth_dir, depth_scale=depth_scale,
        ignore_index=ignore_index, missing=missing, jobs=jobs,
        progress=ProgressBar(f"stability {task}", enabled=verbose, plain=plain_progress(quiet, progress)),
        invocation=invocation_of(ctx, out),
        digest_cache=digest_cache_setting(digest_cache, no_digest_cache))
    finish(evaluation, out=out, compact=compact, quiet=quiet, verbose=not quiet, require=require,
           html=html)
