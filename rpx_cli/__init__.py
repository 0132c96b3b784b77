"""rpx: one command-line evaluator for perception models.

``import rpx_cli`` is cheap (``rpx --version`` must not import numpy); the Python API is
loaded on first use: ``rpx_cli.evaluate_dirs(...)``.
"""

from __future__ import annotations

__version__ = "0.1.0"

_REGISTRY_API = ("MetricCalculator", "register_metric", "unregister_metric", "clear_registry",
                 "get_calculators", "available_metrics", "compute_metrics")
_API = ("evaluate_dirs", "Evaluator")
__all__ = ["__version__", *_API, *_REGISTRY_API]


def __getattr__(name: str):  # lazy public API (PEP 562): importing rpx_cli stays cheap
    if name in _API:
        from rpx_cli import api

        return getattr(api, name)
    if name in _REGISTRY_API:
        from rpx_cli import tasks

        return getattr(tasks, name)
    raise AttributeError(f"module 'rpx_cli' has no attribute {name!r}")
