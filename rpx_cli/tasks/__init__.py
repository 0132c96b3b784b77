"""Tasks: one module per task, each registering itself with ``@register_task``.

Every module of this package is imported on first use (:func:`load_builtin_tasks`), so
adding a task is adding a module: nothing else lists the tasks. The protocol a task
implements is :mod:`rpx_cli.tasks.base`; ``docs/architecture.md`` walks through it.
"""

from rpx_cli.tasks.calculators import (
    MetricCalculator,
    available_metrics,
    clear_registry,
    compute_metrics,
    get_calculators,
    register_metric,
    unregister_metric,
)
from rpx_cli.tasks.registry import TASKS, builtin_tasks, get_task, load_builtin_tasks, register_task

load_builtin_tasks()

__all__ = ["TASKS", "MetricCalculator", "available_metrics", "builtin_tasks", "clear_registry",
           "compute_metrics", "get_calculators", "get_task", "register_metric", "register_task",
           "unregister_metric"]
