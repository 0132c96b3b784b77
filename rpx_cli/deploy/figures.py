"""The figures of the deployment workflows' reports, declared once: which way is better for
each and what it is, and which ones a reader looks at first.

``rpx stability`` writes its ``metric_info`` from :data:`STABILITY_METRICS`. ``rpx
readiness`` keeps the model's cost under the keys of :data:`COST_METRICS` and flattens into
its ``summary`` the primary metric's phase scores, the stability report's ``ts_score``, the
coherence report's ``sgc`` and the cost; a readiness report has no ``metric_info``, so the
human views (``rpx_cli/report/``) read which way each of those is better here
(:func:`readiness_direction`), with each report's headline (:data:`STABILITY_HEADLINE`,
:data:`READINESS_HEADLINE`). Nothing here imports numpy.
"""

from __future__ import annotations

from rpx_cli.tasks.base import MetricInfo

STABILITY_METRICS = {
    "ts_score": MetricInfo(
        "higher",
        "mean over consecutive frame pairs of IoU(P_t, warp(P_t+1)) (segmentation, mean over "
        "classes present) or max(0, 1 - mean|D_t - warp(D_t+1)| / max(range(D_t), 1e-3)) "
        "(depth); 1.0 = perfectly stable"),
}
STABILITY_HEADLINE = ("ts_score",)  # an rpx stability report's figure a reader looks at first

# the model's cost, given to rpx readiness by flags of the same names
COST_METRICS = {
    "params_m": MetricInfo("lower", "parameters, millions"),
    "flops_g": MetricInfo("lower", "GFLOPs per sample"),
    "latency_ms": MetricInfo("lower", "latency per sample, ms"),
    "actmem_gb": MetricInfo("lower", "peak activation memory, GB (fp16)"),
}
# the task whose report rpx readiness takes as --coherence; its figures in the summary
COHERENCE_TASK = "coherence"
COHERENCE_FIGURES = ("sgc",)
# the readiness summary's figures a reader looks at first (the page's cards), in order
READINESS_HEADLINE = ("summary.s_overall", "summary.primary_aggregate", "summary.delta_int",
                      "summary.delta_rec", "summary.ts_score", "summary.sgc", "summary.latency_ms",
                      "summary.params_m", "summary.flops_g")


def readiness_direction(name: str, primary: str | None) -> str:
    """``higher``, ``lower`` or ``none`` for the readiness summary's figure ``name``: the
    primary metric's direction (``primary``, the report's ``direction``) for its mean
    (``primary_aggregate``) and phase scores (``s_*``); the stability report's for
    ``ts_score``; the coherence task's for ``sgc``; a cost's (lower); ``none`` for the
    rest (the transitions ``delta_int``/``delta_rec`` read by the primary direction's sign,
    the flags ``degrades``/``recovers``)."""
    if name == "primary_aggregate" or name.startswith("s_"):
        return str(primary or "none")
    declared = STABILITY_METRICS.get(name) or COST_METRICS.get(name)
    if declared is None and name in COHERENCE_FIGURES:
        from rpx_cli.tasks.registry import find_task

        task = find_task(COHERENCE_TASK)
        declared = task.metrics.get(name) if task is not None else None
    return declared.direction if declared is not None else "none"
