"""Tasks: one module per task, registered in :mod:`rpx_cli.tasks.registry`."""

from rpx_cli.tasks import depth, saliency_mb, segmentation  # noqa: F401  (register themselves)
from rpx_cli.tasks.registry import TASKS, get_task, register_task

__all__ = ["TASKS", "get_task", "register_task"]
