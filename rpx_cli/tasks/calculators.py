"""Metric calculators: the RPX-style plugin registry.

A :class:`MetricCalculator` computes extra per-sample metrics for a task from the data the
task loaded (its ``read``: e.g. ``DepthMap`` with ``.metres(dtype)`` for depth, ``Mask``
for saliency-mb, label arrays for segmentation). Its values join each row, and
``aggregate`` gets their mean over the rows where they are not null. Built-in tasks are
listed through the same registry (as built-in calculators); third-party calculators
register with :func:`register_metric`, in code or from the entry-point group
``rpx.calculators.v1`` (loaded on first use; a plugin that fails to load is reported and
skipped).

Example::

    from rpx_cli.tasks.calculators import MetricCalculator, register_metric

    @register_metric("depth")
    class MedianAbsError(MetricCalculator):
        name = "median_abs_error"
        directions = {"median_abs_error": "lower"}

        def compute(self, prediction, ground_truth):
            import numpy as np
            p, g = prediction.metres(np.float64), ground_truth.metres(np.float64)
            valid = g > 0
            if not valid.any():
                return {"median_abs_error": None}
            return {"median_abs_error": float(np.median(np.abs(p - g)[valid]))}
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from rpx_cli.tasks.registry import TASKS

ENTRY_POINT_GROUP = "rpx.calculators.v1"

_CALCULATORS: dict[str, dict[str, MetricCalculator]] = {}
PLUGIN_ERRORS: list[str] = []  # "name: message" of plugins that failed to load
_plugins_loaded = False


class MetricCalculator(ABC):
    """A family of per-sample metrics for one task. Stateless; hyperparameters via
    ``__init__``. ``compute`` returns metric name -> float (or None when undefined — never
    NaN); ``directions`` says which way is better for each metric."""

    name: ClassVar[str]
    directions: ClassVar[Mapping[str, str]] = {}
    builtin: ClassVar[bool] = False

    @abstractmethod
    def compute(self, prediction: Any, ground_truth: Any) -> dict[str, float | None]:
        """Metrics of one sample."""


class BuiltinCalculator(MetricCalculator):
    """A built-in task's own metrics, seen through the calculator interface."""

    builtin = True

    def __init__(self, task_name: str) -> None:
        self.task_name = task_name
        self.name = task_name  # type: ignore[misc]

    @property
    def task(self):
        return TASKS[self.task_name]

    @property
    def directions(self) -> dict[str, str]:  # type: ignore[override]
        return {name: info.direction for name, info in self.task.metrics.items()}

    def compute(self, prediction: Any, ground_truth: Any, **params: Any) -> dict[str, Any]:
        task = self.task
        from rpx_cli.params import resolve

        merged = resolve(task, params)
        sample = task.evaluate(prediction, ground_truth, merged, pred_path=None, gt_path="")
        return dict(sample.row)


C = TypeVar("C", bound=type[MetricCalculator])


def register_metric(task: str):
    """Class decorator: register an instance of the calculator for ``task``."""

    def decorate(cls: C) -> C:
        if not (isinstance(cls, type) and issubclass(cls, MetricCalculator)):
            raise TypeError("register_metric decorates MetricCalculator subclasses")
        _CALCULATORS.setdefault(task, {})[cls.name] = cls()
        return cls

    return decorate


def unregister_metric(task: str, name: str) -> None:
    """Remove a third-party calculator (KeyError if it is not registered)."""
    del _CALCULATORS[task][name]


def clear_registry(task: str | None = None) -> None:
    """Remove every third-party calculator (of ``task``, or of all tasks)."""
    if task is None:
        _CALCULATORS.clear()
    else:
        _CALCULATORS.pop(task, None)


def plugin_calculators(task: str) -> list[MetricCalculator]:
    load_plugins()
    return list(_CALCULATORS.get(task, {}).values())


def get_calculators(task: str) -> list[MetricCalculator]:
    """The task's built-in calculator first, then third-party ones."""
    from rpx_cli.tasks.registry import get_task

    get_task(task)  # KeyError for an unknown task
    return [BuiltinCalculator(task), *plugin_calculators(task)]


def available_metrics(task: str | None = None) -> dict[str, dict[str, list[str]]]:
    """``{task: {calculator: [metric, ...]}}``."""
    from rpx_cli.tasks.registry import load_builtin_tasks

    load_builtin_tasks()
    names = [task] if task is not None else sorted(TASKS)
    return {name: {calc.name: sorted(calc.directions) for calc in get_calculators(name)}
            for name in names}


def compute_metrics(task: str, prediction: Any, ground_truth: Any, **params: Any) -> dict[str, Any]:
    """Every calculator of ``task`` on one sample, merged into one dict."""
    out: dict[str, Any] = {}
    for calculator in get_calculators(task):
        if isinstance(calculator, BuiltinCalculator):
            out.update(calculator.compute(prediction, ground_truth, **params))
        else:
            out.update(run_calculator(calculator, prediction, ground_truth))
    return out


def run_calculators(calculators: Sequence[MetricCalculator], prediction: Any,
                    ground_truth: Any) -> dict[str, Any]:
    """Every plugin calculator's values of one sample, merged (each through
    :func:`run_calculator`)."""
    values: dict[str, Any] = {}
    for calculator in calculators:
        values.update(run_calculator(calculator, prediction, ground_truth))
    return values


def run_calculator(calculator: MetricCalculator, prediction: Any, ground_truth: Any) -> dict[str, Any]:
    """A plugin's values, checked: numbers or None; NaN/inf become None (never NaN in a report)."""
    values = calculator.compute(prediction, ground_truth)
    if not isinstance(values, Mapping):
        raise TypeError(f"calculator {calculator.name!r} returned {type(values).__name__}, not a dict")
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            out[str(key)] = None
            continue
        number = float(value)
        out[str(key)] = number if math.isfinite(number) else None
    return out


def load_plugins() -> None:
    """Import the entry points of ``rpx.calculators.v1`` once. An entry point is a module
    that registers calculators on import, or a MetricCalculator subclass with a ``task``
    attribute. Failures are recorded in :data:`PLUGIN_ERRORS`, never raised."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from rpx_cli.distributions import declares_entry_points

    if not declares_entry_points(ENTRY_POINT_GROUP):  # no plugin installed: the common case
        return
    from importlib import metadata

    try:
        entry_points = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # a broken installation must not stop rpx
        PLUGIN_ERRORS.append(f"entry points: {exc}")
        return
    for entry_point in entry_points:
        try:
            loaded = entry_point.load()
            if isinstance(loaded, type) and issubclass(loaded, MetricCalculator):
                task = getattr(loaded, "task", None)
                if not isinstance(task, str):
                    raise TypeError("a MetricCalculator entry point needs a 'task' attribute")
                register_metric(task)(loaded)
        except Exception as exc:
            PLUGIN_ERRORS.append(f"{entry_point.name} ({entry_point.value}): "
                                 f"{type(exc).__name__}: {exc}")


def metric_listing(names: list[str]) -> tuple[dict[str, dict[str, dict[str, str]]],
                                              dict[str, dict[str, list[str]]]]:
    """What ``rpx metrics`` shows for the tasks ``names``: per task, every metric with its
    direction, description and origin (built-in or a plugin calculator), and the task's
    ``--metrics`` families (family -> the keys and sections it holds)."""
    table: dict[str, dict[str, dict[str, str]]] = {}
    for name in names:
        entries = {metric: {**info.as_dict(), "calculator": "built-in"}
                   for metric, info in TASKS[name].metrics.items()}
        for calculator in plugin_calculators(name):
            for metric, direction in calculator.directions.items():
                entries[metric] = {"direction": direction, "description": "",
                                   "calculator": f"plugin {calculator.name}"}
        table[name] = entries
    families = {name: {family: list(keys) + list(sections)
                       for family, (keys, sections) in TASKS[name].families.items()}
                for name in names if TASKS[name].families}
    return table, families
