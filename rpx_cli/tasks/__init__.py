"""Tasks: one module per task, each registering itself with ``@register_task``.

Every module of this package is imported on first use of ``TASKS``
(:func:`load_builtin_tasks`), so adding a task is adding a module: nothing else lists the
tasks; a command that runs one task imports only its module (:func:`find_task`). The
protocol a task implements is :mod:`rpx_cli.tasks.base`; ``docs/architecture.md`` walks
through it.
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
from rpx_cli.tasks.registry import (
    builtin_tasks,
    find_task,
    get_task,
    load_builtin_tasks,
    register_task,
)


def __getattr__(name: str):
    """``TASKS`` holds every built-in task: the modules are imported on first use of it (a
    command that needs one task imports only that one, :func:`find_task`)."""
    if name == "TASKS":
        from rpx_cli.tasks import registry

        load_builtin_tasks()
        return registry.TASKS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["TASKS", "MetricCalculator", "available_metrics", "builtin_tasks", "clear_registry",
           "compute_metrics", "find_task", "get_calculators", "get_task", "register_metric",
           "register_task", "unregister_metric"]
