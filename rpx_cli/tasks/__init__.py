"""Tasks: one module per task, registered in :mod:`rpx_cli.tasks.registry`."""

from rpx_cli.tasks import (  # noqa: F401  (register themselves)
    depth,
    nvs,
    saliency_mb,
    segmentation,
    sparse_depth,
)
from rpx_cli.tasks.registry import TASKS, get_task, register_task

__all__ = ["TASKS", "get_task", "register_task"]
