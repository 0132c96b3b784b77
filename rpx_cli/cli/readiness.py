"""``rpx readiness``: the deployment-readiness report of one model on one task."""

from __future__ import annotations

from typing import Any

import click

from rpx_cli.cli.options import (
    compact_option,
    config_option,
    declared_options,
    html_option,
    out_option,
    refuse_overwriting_inputs,
    require_option,
    traceback_option,
)
from rpx_cli.cli.output import finish, invocation_of
from rpx_cli.params.workflows import COST_OPTIONS, MODEL_NAME

_FILE = click.Path(exists=True, dir_okay=False)


@click.command()
@click.option("--eval", "eval_report", required=True, type=_FILE, metavar="REPORT",
              help="An rpx eval report made with --manifest (its strata give the phase table).")
@click.option("--stability", type=_FILE, default=None, metavar="FILE",
              help="An rpx stability report of the same task.")
@click.option("--coherence", type=_FILE, default=None, metavar="FILE",
              help="An rpx coherence report (mask/depth boundary agreement).")
@declared_options((*COST_OPTIONS, MODEL_NAME))
@out_option()
@compact_option
@html_option
@click.option("-q", "--quiet", is_flag=True, help="No warnings on stderr.")
@require_option
@traceback_option
@config_option
@click.pass_context
def readiness(ctx: click.Context, eval_report: str, stability: str | None,
              coherence: str | None, params_m: float | None, flops_g: float | None,
              latency_ms: float | None, actmem_gb: float | None, model_name: str | None,
              out: str, compact: bool, quiet: bool, require: tuple[Any, ...],
              html: str | None = None) -> None:
    """Combine an eval report (with strata), temporal stability, geometric coherence and
    cost figures into one deployment-readiness report.

    The inputs must be of one task (a stability report of another task is an input error);
    each is named with its sha256 and the digests of the data it was computed from. Read
    it with `rpx show` (phase table, transitions coloured by direction, TS, SGC, cost).

    \b
    Example:
      rpx eval depth --pred-dir fixtures/stability/kitchen/pred/depth \\
          --gt-dir fixtures/stability/kitchen/gt/depth \\
          --manifest fixtures/stability/kitchen/manifest.json -o eval.json
      rpx stability --task depth --pred-dir fixtures/stability/kitchen/pred/depth \\
          --manifest fixtures/stability/kitchen/manifest.json -o ts.json
      rpx readiness --eval eval.json --stability ts.json --latency-ms 12 -o ready.json
      rpx show ready.json
    """
    from rpx_cli.run.readiness import run_readiness

    refuse_overwriting_inputs(ctx)
    cost = {"params_m": params_m, "flops_g": flops_g, "latency_ms": latency_ms,
            "actmem_gb": actmem_gb}
    evaluation = run_readiness(eval_report, stability=stability, coherence=coherence, cost=cost,
                               model_name=model_name, invocation=invocation_of(ctx, out))
    finish(evaluation, out=out, compact=compact, quiet=quiet, verbose=not quiet, require=require,
           html=html)
