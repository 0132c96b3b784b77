"""Tasks: one module per task, registered in :mod:`rpx_cli.tasks.registry`."""

from rpx_cli.tasks import saliency_mb  # noqa: F401  (registers itself)
from rpx_cli.tasks.registry import TASKS, get_task, register_task

__all__ = ["TASKS", "get_task", "register_task"]
