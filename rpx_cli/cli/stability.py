"""``rpx stability``: temporal stability of predictions over the frames of a sequence."""

from __future__ import annotations

import click

from rpx_cli.cli.options import (
    MAX_JOBS,
    compact_option,
    config_option,
    depth_scale_option,
    digest_cache_options,
    digest_cache_setting,
    html_option,
    int_range,
    out_option,
    refuse_overwriting_inputs,
    require_option,
    traceback_option,
)
from rpx_cli.cli.output import finish, invocation_of, plain_progress, show_progress

_DIR = click.Path(file_okay=False, path_type=str)


@click.command("stability")
@click.option("--task", required=True, type=click.Choice(["depth", "segmentation"]),
              help="What the predictions are: depth maps or label maps.")
@click.option("--pred-dir", required=True, type=_DIR,
              help="Folder of predictions, one file per frame, named by the manifest's stems.")
@click.option("--manifest", required=True, type=click.Path(dir_okay=False, path_type=str),
              help="Per-stem sequence, frame, pose (4x4 camera-to-world) and intrinsics "
                   "[fx, fy, cx, cy].")
@click.option("--warp", type=click.Choice(["auto", "reproject", "inplane", "none"]),
              default="auto", show_default=True,
              help="How frame t+1 is brought into frame t: reproject with depth and poses, "
                   "the RPX in-plane rotation, or not at all. auto = reproject when possible, "
                   "else inplane when poses exist, else none.")
@click.option("--depth-dir", type=_DIR, default=None,
              help="GT depth per stem (segmentation): drives the reprojection and the "
                   "occlusion test.")
@depth_scale_option
@click.option("--ignore-index", type=int, multiple=True, default=(-1,), show_default=True,
              help="Segmentation: a label to leave out of both maps (repeatable; PNG users "
                   "usually pass 255).")
@click.option("--missing", type=click.Choice(["error", "skip"]), default="error",
              show_default=True,
              help="A stem in the manifest or the folder only, a frame without a number or GT "
                   "depth, two frames with one number: fail, or leave those frames out and "
                   "list them under 'unpaired' / 'skipped'.")
@click.option("-j", "--jobs", type=int_range(1, MAX_JOBS), default=None,
              help="Worker processes [default: CPUs available]. Never changes a number.")
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
