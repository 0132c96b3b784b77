"""``rpx readiness``: one deployment-readiness report from an eval report (with strata),
an optional temporal-stability report, an optional geometric-coherence report and the
model's cost figures (the RPX ``DeploymentReadinessReport``).

Pure: takes the parsed reports (and their file digests) and returns the report body. The
inputs must describe one model on one task: the stability report's task must equal the
eval report's. Each input is carried along as ``{path, sha256, inputs}``, where ``inputs``
holds the digests of the data it was computed from (its own ``run_provenance``), so the
readiness report names exactly what it summarises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.deploy.figures import COST_METRICS
from rpx_cli.errors import InputError

COST_KEYS = tuple(COST_METRICS)


def _source(path: str, sha256: str, report: Mapping[str, Any]) -> dict[str, Any]:
    inputs = (report.get("run_provenance") or {}).get("inputs") or {}
    return {"path": path, "sha256": sha256,
            "inputs": {name: entry.get("sha256") for name, entry in sorted(inputs.items())
                       if isinstance(entry, Mapping)}}


def _expect(report: Any, schema: str, path: str) -> Mapping[str, Any]:
    if not isinstance(report, Mapping) or report.get("schema") != schema:
        found = report.get("schema") if isinstance(report, Mapping) else type(report).__name__
        raise InputError(f"is not an {schema} report (schema: {found!r})", path=path)
    if "state" in report:
        raise InputError("is a --shard partial report: run rpx merge on the parts first", path=path)
    return report


def build_readiness(evaluation: tuple[str, str, Any], *,
                    stability: tuple[str, str, Any] | None = None,
                    coherence: tuple[str, str, Any] | None = None,
                    cost: Mapping[str, float | None] | None = None,
                    model_name: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """``(report body, warnings)``. Each input is ``(path, sha256 of the file, parsed)``."""
    eval_path, eval_sha, eval_doc = evaluation
    eval_doc = _expect(eval_doc, "rpx.eval", eval_path)
    task = eval_doc.get("task")
    warnings: list[str] = []
    strata = eval_doc.get("strata")
    if strata is None:
        warnings.append(f"{eval_path} has no strata (run rpx eval with --manifest): the phase "
                        "table is empty")
    metric = strata.get("primary_metric") if strata else None
    info = (eval_doc.get("metric_info") or {}).get(metric or "", {})
    body: dict[str, Any] = {
        "schema": "rpx.readiness",
        "schema_version": 1,
        "task": task,
        "model_name": model_name,
        "primary_metric": metric,
        "direction": strata.get("direction") if strata else info.get("direction"),
        "eval": {**_source(eval_path, eval_sha, eval_doc), "n_pairs": eval_doc.get("n_pairs"),
                 "params": eval_doc.get("params"),
                 "primary_aggregate": (eval_doc.get("aggregate") or {}).get(metric) if metric else None},
        "strata": strata,
        "stability": None,
        "coherence": None,
        "cost": {key: (cost or {}).get(key) for key in COST_KEYS},
    }
    if stability is not None:
        path, sha, doc = stability
        doc = _expect(doc, "rpx.stability", path)
        if doc.get("task") != task:
            raise InputError(f"is a stability report for task {doc.get('task')!r}, but {eval_path} "
                             f"evaluates {task!r}: readiness combines one model on one task",
                             path=path)
        body["stability"] = {**_source(path, sha, doc), "task": doc.get("task"),
                             "warp": doc.get("warp"), "ts_score": doc.get("ts_score"),
                             "num_pairs": doc.get("num_pairs")}
    if coherence is not None:
        path, sha, doc = coherence
        doc = _expect(doc, "rpx.coherence", path)
        if doc.get("task") not in (None, "coherence", task):
            raise InputError(f"is a coherence report for task {doc.get('task')!r}, but "
                             f"{eval_path} evaluates {task!r}", path=path)
        body["coherence"] = {**_source(path, sha, doc), "sgc": doc.get("sgc"),
                             "precision": doc.get("precision"), "recall": doc.get("recall"),
                             "n_pairs": doc.get("n_pairs")}
    body["summary"] = _summary(body)
    return body, warnings


def _summary(body: Mapping[str, Any]) -> dict[str, Any]:
    """The headline figures, flat, for ``jq`` and ``--require``."""
    wps = (body.get("strata") or {}).get("weighted_phase_score") or {}
    return {
        "primary_aggregate": body["eval"]["primary_aggregate"],
        "s_clutter": wps.get("clutter"), "s_interaction": wps.get("interaction"),
        "s_clean": wps.get("clean"), "s_overall": wps.get("overall"),
        "delta_int": wps.get("delta_int"), "delta_rec": wps.get("delta_rec"),
        "degrades": wps.get("degrades"), "recovers": wps.get("recovers"),
        "ts_score": (body.get("stability") or {}).get("ts_score"),
        "sgc": (body.get("coherence") or {}).get("sgc"),
        **body["cost"],
    }
