"""The report envelope shared by every pair-reading command (``docs/architecture.md``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rpx_cli.errors import PairError
from rpx_cli.tasks.base import Task

SCHEMA_VERSION = 1


def build_report(
    *,
    task: Task,
    params: Mapping[str, Any],
    summary: Mapping[str, Any],
    rows: list[dict[str, Any]],
    n_pairs: int,
    unpaired: Mapping[str, list[str]],
    errors: list[PairError],
    include_rows: bool = True,
    calculators: Sequence[Any] = (),
) -> dict[str, Any]:
    """Assemble a report (without ``run_provenance``, added last)."""
    report: dict[str, Any] = {
        "schema": task.report_schema,
        "schema_version": SCHEMA_VERSION,
        "task": task.name,
        "params": dict(params),
        "n_pairs": n_pairs,
        "unpaired": {"pred_only": list(unpaired["pred_only"]), "gt_only": list(unpaired["gt_only"])},
        "errors": [error.as_dict() for error in errors],
        "metric_info": {name: info.as_dict() for name, info in task.metric_info(params).items()},
    }
    for calculator in calculators:  # plugin metrics carry their directions too
        for name, way in calculator.directions.items():
            report["metric_info"].setdefault(name, {"direction": way,
                                                    "description": f"plugin {calculator.name}"})
    report.update(summary)
    if include_rows:
        report["rows"] = rows
    return report
