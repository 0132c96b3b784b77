"""``rpx readiness``: one deployment-readiness report from the files of an eval report (with
``--manifest`` strata) and optionally a stability and a coherence report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.deploy.readiness import build_readiness
from rpx_cli.params.option import convert_all
from rpx_cli.params.workflows import COST_OPTIONS, MODEL_NAME
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.run.documents import read_json, sha256_hex
from rpx_cli.run.invocation import Evaluation, Invocation, file_input, stamp


def run_readiness(eval_report: str, *, stability: str | None = None, coherence: str | None = None,
                  cost: Mapping[str, float | None] | None = None, model_name: str | None = None,
                  invocation: Invocation | None = None) -> Evaluation:
    """The ``rpx.readiness`` report: phase table and transitions from the eval report's
    strata, TS, SGC and cost figures, each input named with its digest. ``cost`` (by name:
    ``latency_ms``, ...) and ``model_name`` are converted by their declarations
    (:data:`rpx_cli.params.workflows.COST_OPTIONS`), as the CLI's flags are."""
    cost = convert_all(COST_OPTIONS, dict(cost or {}), "the cost figures")
    model_name = MODEL_NAME.convert(model_name)
    stopwatch = Stopwatch()
    loaded: dict[str, tuple[str, str, Any]] = {}
    for name, path in (("eval", eval_report), ("stability", stability), ("coherence", coherence)):
        if path is not None:
            document, data = read_json(path)
            loaded[name] = (path, sha256_hex(data), document)
    report, warnings = build_readiness(loaded["eval"], stability=loaded.get("stability"),
                                       coherence=loaded.get("coherence"), cost=cost,
                                       model_name=model_name)
    inputs = {name: file_input(path, sha) for name, (path, sha, _) in loaded.items()}
    stamp(report, invocation or Invocation(command="rpx_cli.run_readiness"), inputs, stopwatch)
    return Evaluation(report=report, warnings=warnings)
