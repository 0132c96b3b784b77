"""The Python API: the workflows of :mod:`rpx_cli.run`, without the CLI.

>>> from rpx_cli.api import evaluate_dirs
>>> report = evaluate_dirs("depth", "runs/depth", "data/depth", max_depth=10)  # doctest: +SKIP
>>> report["aggregate"]["absrel"]  # doctest: +SKIP
"""

from __future__ import annotations

from rpx_cli.run.compare import Comparison, run_compare
from rpx_cli.run.evaluate import default_params, evaluate_dirs, run_evaluation
from rpx_cli.run.files import run_file_evaluation
from rpx_cli.run.invocation import Evaluation, Invocation, ProgressHooks
from rpx_cli.run.merge import merge_reports
from rpx_cli.run.readiness import run_readiness
from rpx_cli.run.stability import run_stability_report

__all__ = ["Comparison", "Evaluation", "Invocation", "ProgressHooks", "default_params",
           "evaluate_dirs", "merge_reports", "run_compare", "run_evaluation",
           "run_file_evaluation", "run_readiness", "run_stability_report"]
