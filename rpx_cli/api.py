"""The Python API: the workflows of :mod:`rpx_cli.run`, without the CLI.

>>> from rpx_cli.api import evaluate_dirs
>>> report = evaluate_dirs("depth", "runs/depth", "data/depth", max_depth=10)  # doctest: +SKIP
>>> report["aggregate"]["absrel"]  # doctest: +SKIP

The mergeable state, for any engine that evaluates batches of pairs somewhere and folds
the results (Ray, Spark, a job array; docs/distributed.md):

>>> from rpx_cli import api
>>> plan = api.plan("depth", "runs/depth", "data/depth", max_depth=10)  # doctest: +SKIP
>>> states = [api.evaluate_batch(plan, batch) for batch in plan.batches(64)]  # doctest: +SKIP
>>> report = api.state_report(api.merge_states(states))  # doctest: +SKIP
"""

from __future__ import annotations

from rpx_cli.run.compare import Comparison, run_compare
from rpx_cli.run.evaluate import default_params, evaluate_dirs, run_evaluation
from rpx_cli.run.evaluator import Evaluator
from rpx_cli.run.files import run_file_evaluation
from rpx_cli.run.invocation import Evaluation, Invocation, ProgressHooks
from rpx_cli.run.merge import merge_reports
from rpx_cli.run.options import RunOptions, Strata
from rpx_cli.run.readiness import run_readiness
from rpx_cli.run.stability import run_stability_report
from rpx_cli.run.state import Plan, State, evaluate_batch, finalize, merge_states, plan, state_report

__all__ = ["Comparison", "Evaluation", "Evaluator", "Invocation", "Plan", "ProgressHooks",
           "RunOptions", "State", "Strata", "default_params", "evaluate_batch", "evaluate_dirs",
           "finalize", "merge_reports", "merge_states", "plan", "run_compare", "run_evaluation",
           "run_file_evaluation", "run_readiness", "run_stability_report", "state_report"]
