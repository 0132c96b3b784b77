"""Tasks: one module per task, registered in :mod:`rpx_cli.tasks.registry`."""

from rpx_cli.tasks import (  # noqa: F401  (register themselves)
    coherence,
    depth,
    detection,
    grounding,
    keypoints,
    nvs,
    pose,
    saliency_mb,
    segmentation,
    sparse_depth,
    tracking,
)
from rpx_cli.tasks.calculators import (
    MetricCalculator,
    available_metrics,
    clear_registry,
    compute_metrics,
    get_calculators,
    register_metric,
    unregister_metric,
)
from rpx_cli.tasks.registry import TASKS, get_task, register_task

__all__ = ["TASKS", "MetricCalculator", "available_metrics", "clear_registry", "compute_metrics",
           "get_calculators", "get_task", "register_metric", "register_task", "unregister_metric"]
