"""rpx: one command-line evaluator for perception models.

``import rpx_cli`` is cheap (``rpx --version`` must not import numpy); the Python API is
loaded on first use: ``rpx_cli.evaluate_dirs(...)``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "evaluate_dirs"]


def __getattr__(name: str):  # lazy public API (PEP 562)
    if name == "evaluate_dirs":
        from rpx_cli.api import evaluate_dirs

        return evaluate_dirs
    raise AttributeError(f"module 'rpx_cli' has no attribute {name!r}")
