"""``rpx stability``: plan the frames of a manifest, score them on the engine, stamp the
``rpx.stability`` report."""

from __future__ import annotations

from collections.abc import Sequence

from rpx_cli.deploy.stability_run import plan_stability, run_stability
from rpx_cli.engine import default_jobs
from rpx_cli.io.filebuffer import sha256_file
from rpx_cli.params.option import convert_all
from rpx_cli.params.workflows import DIGEST_CACHE, STABILITY_OPTIONS, stability_task
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.run.evaluate import save_digest_cache
from rpx_cli.run.invocation import (
    Evaluation,
    Invocation,
    ProgressHooks,
    file_input,
    input_entry,
    open_digest_cache,
    stamp,
)


def run_stability_report(task: str, pred_dir: str, manifest: str, *, warp: str = "auto",
                         depth_dir: str | None = None, depth_scale: float = 1000.0,
                         ignore_index: Sequence[int] = (-1,), missing: str = "error",
                         jobs: int | None = None, progress: ProgressHooks | None = None,
                         invocation: Invocation | None = None,
                         digest_cache: str | bool | None = None) -> Evaluation:
    """Temporal stability of the predictions in ``pred_dir`` over the sequences of
    ``manifest`` (see :mod:`rpx_cli.deploy.stability`). Every option is converted by its
    declaration (:data:`rpx_cli.params.workflows.STABILITY_OPTIONS`), as the CLI's flags
    are, before anything is read: a bad value is the CLI's
    :class:`~rpx_cli.errors.ParameterError`."""
    stopwatch = Stopwatch()
    given = convert_all((*STABILITY_OPTIONS, DIGEST_CACHE), {
        "warp": warp, "depth_dir": depth_dir, "depth_scale": depth_scale,
        "ignore_index": ignore_index, "missing": missing, "jobs": jobs,
        "digest_cache": digest_cache}, "rpx stability")
    task, warp, depth_dir = stability_task(task), given["warp"], given["depth_dir"]
    depth_scale, ignore_index, jobs = given["depth_scale"], given["ignore_index"], given["jobs"]
    plan = plan_stability(task, pred_dir, manifest, warp=warp, depth_dir=depth_dir,
                          missing=given["missing"])
    cache = open_digest_cache(given["digest_cache"])
    hooks = progress or ProgressHooks()
    try:
        run = run_stability(plan, depth_scale=depth_scale, ignore_index=ignore_index,
                            jobs=default_jobs() if jobs is None else jobs, progress=hooks.start,
                            cache=cache)
    finally:
        hooks.stop()
    warnings = run.warnings + save_digest_cache(cache, run.tally)
    hexed = {role: {rel: value.hex() for rel, value in found.items()}
             for role, found in run.digests.items()}
    inputs = {"pred_dir": input_entry(pred_dir, hexed.get("pred", {})),
              "manifest": file_input(manifest, sha256_file(manifest))}
    if depth_dir is not None:
        inputs["depth_dir"] = input_entry(depth_dir, hexed.get("depth", {}))
    stamp(run.report, invocation or Invocation(command="rpx_cli.run_stability_report"), inputs,
          stopwatch, digests={"computed": run.tally.computed, "reused": run.tally.reused})
    return Evaluation(report=run.report, warnings=warnings)
