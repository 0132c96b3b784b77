"""From a task's statistics to a report body: the summary, plugin metrics, rows, and the
``--metrics`` families left out. Shared by every workflow that evaluates (folders, files,
merge), so a merged report is assembled exactly as a single run's."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rpx_cli.errors import PairError, ParameterError
from rpx_cli.ops.reduce import mean_present
from rpx_cli.params import resolve
from rpx_cli.report.envelope import build_report
from rpx_cli.tasks.base import Task
from rpx_cli.tasks.stats import StatTable

ON_ERROR_POLICIES = ("fail", "skip")


def resolve_params(task: Task, params: Mapping[str, Any], *, missing: str,
                   on_error: str) -> dict[str, Any]:
    """The task's parameters normalised and checked, with the run policies and families:
    what the report's ``params`` records."""
    if on_error not in ON_ERROR_POLICIES:
        raise ParameterError(f"on_error must be one of {', '.join(ON_ERROR_POLICIES)}")
    return {**resolve(task, params), "missing": missing, "on_error": on_error}


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
        keys, sections = task.families[family]
        for section in sections:  # "dataset" or a nested "dataset.pooled"
            *parents, last = section.split(".")
            node = report
            for key in parents:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict):
                node.pop(last, None)
        verdict: dict[str, bool] = {}  # rows share their keys: decide each key once
        for mapping in [*report.get("rows", ()), report.get("aggregate") or {}]:
            for key in list(mapping):
                drop = verdict.get(key)
                if drop is None:
                    drop = verdict[key] = _in_family(key, keys)
                if drop:
                    del mapping[key]


_BAND_SUFFIX = re.compile(r"(minus)?\d[\w]*m_((minus)?\d[\w]*m|inf)$")


def _in_family(key: str, keys: tuple[str, ...]) -> bool:
    """``key`` is one of ``keys``, or one of them with a depth-band suffix (absrel_0p3m_1m)."""
    return key in keys or any(key.startswith(k + "_") and _BAND_SUFFIX.match(key[len(k) + 1:])
                              for k in keys)
