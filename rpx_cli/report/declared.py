"""What a report's task declares for the human views (:mod:`rpx_cli.tasks.base`): the
headline paths, the row metric the worst rows are ranked by and its direction, the range
bands and the metrics charted per band.

The task is found by the report's ``task`` (:func:`rpx_cli.tasks.registry.find_task`: that
task's module, no other). A workflow's report (readiness, stability, compare) declares
nothing, nor does a report of a task not registered here (a plugin not installed): the views
then fall back to the report's own order and the first row metric with a direction. Nothing
here parses a key: a banded key is looked up as ``band.key(metric)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.params.parsers import parse_band
from rpx_cli.params.values import Band, Threshold
from rpx_cli.tasks.base import Evaluated, Task
from rpx_cli.tasks.registry import find_task

# report kinds of workflows, not tasks: each view handles them itself
WORKFLOWS = ("rpx.readiness", "rpx.stability", "rpx.compare")
_WAYS = ("higher", "lower")


def task_of(report: Mapping[str, Any]) -> Task | None:
    """The registered task that wrote ``report`` (same name, same report kind), else None."""
    name, schema = report.get("task"), report.get("schema")
    if schema in WORKFLOWS or not isinstance(name, str) or not name:
        return None
    task = find_task(name)
    return task if task is not None and task.report_schema == schema else None


def evaluated(report: Mapping[str, Any]) -> Evaluated:
    """What the report's run evaluated, as its task names it from the report's ``params``
    (``detection · masks · LVIS``, OKS, maxDets 300); a report no registered task wrote: its
    ``task`` (or kind) alone."""
    task = task_of(report)
    params = report.get("params")
    if task is not None:
        try:
            return task.evaluated(params if isinstance(params, Mapping) else {})
        except (TypeError, ValueError, KeyError):  # a hand-edited report: the task's name
            return Evaluated(task.name)
    return Evaluated(str(report.get("task") or str(report.get("schema") or "report").removeprefix("rpx.")))


def accepts_family(report: Mapping[str, Any], family: str) -> bool:
    """Whether a run with the report's ``params`` could add metric family ``family``
    (``--metrics``): what a page may suggest."""
    task = task_of(report)
    params = report.get("params")
    if task is None or not isinstance(params, Mapping):
        return False
    try:
        return task.accepts_family(family, params)
    except (TypeError, ValueError, KeyError):
        return False


def headline(report: Mapping[str, Any]) -> tuple[str, ...]:
    """The dotted paths the task declares a reader looks at first (present or not), as the
    report's ``params`` choose them (detection: the protocol's figures)."""
    task = task_of(report)
    if task is None:
        return ()
    params = report.get("params")
    try:
        return task.headline_for(params if isinstance(params, Mapping) else {})
    except (TypeError, ValueError, KeyError):  # a hand-edited report: the task's own
        return task.headline


def bands(report: Mapping[str, Any]) -> list[Band]:
    """The range bands of the report's ``params``, in the order given (none for a report
    without them, or whose ``params`` are not its task's)."""
    task = task_of(report)
    params = report.get("params")
    if task is None or not isinstance(params, Mapping):
        return []
    try:
        return task.bands(params)
    except (TypeError, ValueError):  # a hand-edited report: draw no bands rather than fail
        return []


def thresholds(report: Mapping[str, Any]) -> tuple[list[Threshold], Threshold | None]:
    """``(the match thresholds of the report's keys, the operating one or None)``: each
    renders its key token and its label (none for a report without them)."""
    task = task_of(report)
    params = report.get("params")
    if task is None or not isinstance(params, Mapping):
        return [], None
    try:
        return task.thresholds(params), task.operating_threshold(params)
    except (TypeError, ValueError, KeyError):  # a hand-edited report: no labels
        return [], None


def unit(report: Mapping[str, Any], name: str) -> str:
    """The unit the task declares for metric ``name`` (``m``, ``rad``, ``m/s``; "" when
    unitless or undeclared)."""
    task = task_of(report)
    info = task.metrics.get(name) if task is not None else None
    return info.unit if info is not None else ""


def band_param(report: Mapping[str, Any]) -> str | None:
    """The ``params`` key holding the report's range bands (``ranges``), if its task has one."""
    task = task_of(report)
    if task is None:
        return None
    return next((option.param for option in task.options if option.parse is parse_band), None)


def row_labels(report: Mapping[str, Any]) -> tuple[str, str] | None:
    """The row keys of the true and the predicted label, when the task declares them."""
    task = task_of(report)
    return task.row_labels if task is not None else None


def band_metrics(report: Mapping[str, Any]) -> tuple[str, ...]:
    """The metrics the task charts per band, in its order."""
    task = task_of(report)
    return task.band_metrics if task is not None else ()


def metric_direction(report: Mapping[str, Any], name: str) -> str:
    """``higher``, ``lower`` or ``none`` for the metric key ``name``: the report's
    ``metric_info`` (which holds the banded keys its task writes), else, for a key of one of
    the report's bands, the direction of the metric it bands."""
    info = _info(report)
    if isinstance(info.get(name), Mapping):
        return str(info[name].get("direction", "none"))
    task = task_of(report)
    if task is None:
        return "none"
    metrics = {**{key: value.direction for key, value in task.metrics.items()},
               **{key: str(value.get("direction", "none")) for key, value in info.items()
                  if isinstance(value, Mapping)}}
    for band in bands(report):
        for metric, way in metrics.items():
            if band.key(metric) == name:
                return way
    return "none"


def rank_metric(report: Mapping[str, Any]) -> tuple[str | None, str]:
    """``(metric, direction)``: the row metric the worst rows are ranked by. The strata's
    ``--primary-metric`` when the run had one, else the task's ``rank_metric`` (default its
    ``primary_metric``); when the rows do not hold it, the first row metric with a
    direction. ``(None, "none")`` when there is none."""
    rows = report.get("rows") or []
    task = task_of(report)
    declared = (task.rank_metric or task.primary_metric) if task is not None else None
    strata = report.get("strata")
    metric = (strata.get("primary_metric") if isinstance(strata, Mapping) else None) or declared
    if rows and isinstance(rows[0], Mapping) and (metric is None or metric not in rows[0]):
        info = _info(report)
        metric = next((key for key, value in rows[0].items()
                       if isinstance(info.get(key), Mapping) and info[key].get("direction") in _WAYS
                       and isinstance(value, (int, float)) and not isinstance(value, bool)), None)
    return metric, metric_direction(report, metric) if metric else "none"


def _info(report: Mapping[str, Any]) -> Mapping[str, Any]:
    info = report.get("metric_info")
    return info if isinstance(info, Mapping) else {}
