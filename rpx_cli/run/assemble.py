"""From a task's statistics to a report body: the summary, plugin metrics, rows, and the
``--metrics`` families left out. Shared by every workflow that evaluates (folders, files,
merge), so a merged report is assembled exactly as a single run's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rpx_cli.errors import PairError, unescaped
from rpx_cli.ops.reduce import mean_present, worst_order
from rpx_cli.report.envelope import build_report
from rpx_cli.tasks.base import Task
from rpx_cli.tasks.stats import StatTable


def assemble(task: Task, params: Mapping[str, Any], stats: StatTable, *,
             rows: list[dict[str, Any]], extras: Sequence[Mapping[str, Any]],
             unpaired: Mapping[str, list[str]], errors: list[PairError], include_rows: bool,
             calculators: Sequence[Any] = (), stems: Sequence[str] | None = None,
             part: bool = False) -> dict[str, Any]:
    """The report without ``run_provenance``: envelope, the task's summary (per-row values
    it computes across pairs merged into ``rows``, stem order), the mean of every plugin
    metric over its non-null rows, the worst frames (``--keep-worst``; not in a ``--shard``
    ``part``) and the skipped families' keys removed."""
    summary: dict[str, Any] = {}
    # an empty --shard part has no summary, unless its kind's schema requires the keys
    if stems is not None and len(stems) == len(stats):
        stats.stems = [unescaped(stem) for stem in stems]
    if len(stats) or task.summarize_empty:
        summary, values = task.summarize_rows(stats, params)
        if values is not None and rows:
            for row, extra in zip(rows, values, strict=True):
                row.update(extra)
    summary = dict(summary)
    drawn = summary.pop("worst_frames", None)
    if params.get("keep_worst") and not part:
        frames = worst_frames(task, params, rows, drawn, stems)
        if frames is not None:
            summary["worst_frames"] = frames
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
    dropped: set[str] = set()
    for family in params.get("skipped_metrics", ()):
        sections = task.families[family][1]
        for section in sections:  # "dataset" or a nested "dataset.pooled"
            *parents, last = section.split(".")
            node = report
            for key in parents:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict):
                node.pop(last, None)
        dropped |= task.family_keys(family, params)
    if dropped:  # every skipped family's keys at once: one pass over the rows
        for mapping in [*report.get("rows", ()), report.get("aggregate") or {}]:
            for key in dropped & mapping.keys():
                del mapping[key]


def worst_frames(task: Task, params: Mapping[str, Any], rows: list[dict[str, Any]],
                 drawn: Mapping[str, Any] | None, stems: Sequence[str] | None) -> dict[str, Any] | None:
    """``worst_frames``: the ``keep_worst`` frames worst by the task's rank metric, worst
    first (:func:`~rpx_cli.ops.reduce.worst_order`), each with its stem, value and files.
    A task that draws its frames from its statistics (boxes) gives them from ``summarize``
    (``drawn``: its frames hold their ``index`` in stem order); any other task's are ranked
    here from the rows, and the pictures of files are added later
    (:mod:`rpx_cli.run.pictures`). None without rows to rank."""
    by_stem = {row["stem"]: row for row in rows if isinstance(row, Mapping) and "stem" in row}
    if drawn is not None:
        frames = []
        for frame in drawn["frames"]:
            frame = dict(frame)
            index = frame.pop("index")
            stem = stems[index] if stems is not None else rows[index]["stem"]
            row = by_stem.get(stem, {})
            frames.append({"stem": stem, **_files(row), **frame})
        return {**{k: v for k, v in drawn.items() if k != "frames"}, "frames": frames}
    metric = task.rank_metric or task.primary_metric
    if not rows or metric is None or metric not in rows[0]:
        return None
    info = task.metric_info(params).get(metric)
    direction = info.direction if info is not None else "higher"
    values = np.array([np.nan if row.get(metric) is None else float(row[metric]) for row in rows])
    confidence = np.array([np.nan if not isinstance(row.get("confidence"), (int, float))
                           else float(row["confidence"]) for row in rows])
    order = worst_order(values, direction, confidence)[:params["keep_worst"]]
    return {"metric": metric, "direction": direction, "ranked": int(np.count_nonzero(~np.isnan(values))),
            "frames": [{"stem": rows[i]["stem"], "value": rows[i][metric], **_files(rows[i])}
                       for i in order.tolist()]}


def _files(row: Mapping[str, Any]) -> dict[str, Any]:
    return {key: row.get(key) for key in ("pred_path", "gt_path")}
