"""From a task's statistics to a report body: the summary, plugin metrics, rows, and the
``--metrics`` families left out. Shared by every workflow that evaluates (folders, files,
merge), so a merged report is assembled exactly as a single run's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rpx_cli.errors import PairError
from rpx_cli.ops.reduce import mean_present
from rpx_cli.report.envelope import build_report
from rpx_cli.tasks.base import Task
from rpx_cli.tasks.stats import StatTable


def assemble(task: Task, params: Mapping[str, Any], stats: StatTable, *,
             rows: list[dict[str, Any]], extras: Sequence[Mapping[str, Any]],
             unpaired: Mapping[str, list[str]], errors: list[PairError], include_rows: bool,
             calculators: Sequence[Any] = ()) -> dict[str, Any]:
    """The report without ``run_provenance``: envelope, the task's summary (per-row values
    it computes across pairs merged into ``rows``, stem order), the mean of every plugin
    metric over its non-null rows, and the skipped families' keys removed."""
    summary: dict[str, Any] = {}
    # an empty --shard part has no summary, unless its kind's schema requires the keys
    if len(stats) or task.summarize_empty:
        summary, values = task.summarize_rows(stats, params)
        if values is not None and rows:
            for row, extra in zip(rows, values, strict=True):
                row.update(extra)
    if extras:
        aggregate = summary.setdefault("aggregate", {})
        for key in sorted({k for extra in extras for k in extra}):
            aggregate[key] = mean_present([extra.get(key) for extra in extras])
    report = build_report(task=task, params=params, summary=summary, rows=rows,
                          n_pairs=len(stats), unpaired=unpaired, errors=errors,
                          include_rows=include_rows, calculators=calculators)
    drop_skipped(task, params, report)
    return report


def drop_skipped(task: Task, params: Mapping[str, Any], report: dict[str, Any]) -> None:
    """Leave the keys of skipped families out of rows, aggregate and the report."""
    for family in params.get("skipped_metrics", ()):
        sections = task.families[family][1]
        for section in sections:  # "dataset" or a nested "dataset.pooled"
            *parents, last = section.split(".")
            node = report
            for key in parents:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict):
                node.pop(last, None)
        dropped = task.family_keys(family, params)
        for mapping in [*report.get("rows", ()), report.get("aggregate") or {}]:
            for key in dropped & mapping.keys():
                del mapping[key]
