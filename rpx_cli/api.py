"""The Python API: evaluate two directories and get the report as a dict.

No click here: the CLI parses flags and calls :func:`run_evaluation`; notebooks and
scripts call :func:`evaluate_dirs`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rpx_cli.engine import default_jobs, run_pairs
from rpx_cli.errors import EvaluationFailed, InputError, PairError, ParameterError
from rpx_cli.io.discover import MISSING_POLICIES, Pairing, pair_dirs
from rpx_cli.report.envelope import build_report
from rpx_cli.report.provenance import (
    Stopwatch,
    build_provenance,
    collect_environment,
    collect_git,
    directory_input,
)
from rpx_cli.tasks.registry import get_task

ON_ERROR_POLICIES = ("fail", "skip")


@dataclass
class Evaluation:
    """A finished run: the report and what the user should be told on stderr."""

    report: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Invocation:
    """How the run was asked for, for ``run_provenance``."""

    command: str
    argv: list[str]
    args: Mapping[str, Any]
    out: str = "-"


class ProgressHooks:
    """Progress callbacks; the CLI passes a rich progress bar, the API nothing."""

    def start(self, total: int) -> Callable[[int], None] | None:
        return None

    def stop(self) -> None:
        pass


def run_evaluation(
    task_name: str,
    pred_dir: str,
    gt_dir: str,
    params: Mapping[str, Any],
    *,
    missing: str | None = None,
    on_error: str = "fail",
    jobs: int | None = None,
    include_rows: bool = True,
    invocation: Invocation | None = None,
    progress: ProgressHooks | None = None,
) -> Evaluation:
    """Pair, evaluate and assemble the report. Raises :class:`rpx_cli.errors.RpxError`."""
    task = get_task(task_name)
    missing = task.default_missing if missing is None else missing
    if missing not in MISSING_POLICIES:
        raise ParameterError(f"missing must be one of {', '.join(MISSING_POLICIES)}")
    if on_error not in ON_ERROR_POLICIES:
        raise ParameterError(f"on_error must be one of {', '.join(ON_ERROR_POLICIES)}")
    params = task.normalise_params(params)
    task.validate_params(params)
    params = {**params, "missing": missing, "on_error": on_error}
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ParameterError(f"jobs must be >= 1, got {jobs}")
    stopwatch = Stopwatch()

    pairing = pair_dirs(pred_dir, gt_dir, task.suffixes, missing=missing)
    _check_pairing(pairing, pred_dir, gt_dir, task.suffixes, missing)

    hooks = progress or ProgressHooks()
    advance = hooks.start(len(pairing.pairs))
    try:
        result = run_pairs(task, pairing.pairs, params, jobs=jobs, progress=advance,
                           keep_rows=include_rows)
    finally:
        hooks.stop()
    if result.errors and on_error == "fail":
        raise EvaluationFailed(result.errors, len(pairing.pairs))
    if not len(result.stats):
        raise EvaluationFailed(
            result.errors, len(pairing.pairs),
            f"none of the {len(pairing.pairs)} pairs could be evaluated; no report written",
        )

    n_pairs = len(result.stats)
    summary = task.summarize(result.stats, params)
    report = build_report(
        task=task,
        params=params,
        summary=summary,
        rows=result.rows,
        n_pairs=n_pairs,
        unpaired=pairing.unpaired,
        errors=result.errors,
        include_rows=include_rows,
    )
    invocation = invocation or Invocation(
        command=f"rpx_cli.evaluate_dirs({task_name!r})", argv=[], args={}
    )
    report["run_provenance"] = build_provenance(
        command=invocation.command,
        argv=invocation.argv,
        args=invocation.args,
        inputs={
            "pred_dir": directory_input(pred_dir, result.pred_digests),
            "gt_dir": directory_input(gt_dir, result.gt_digests),
        },
        outputs={"report": {"path": invocation.out}},
        clock=stopwatch.stop(),
        environment=collect_environment(),
        git=collect_git(os.getcwd()),
    )
    warnings = [task.warning_text(kind, paths) for kind, paths in sorted(result.warnings.items())]
    return Evaluation(report=report, warnings=warnings)


def _check_pairing(pairing: Pairing, pred_dir: str, gt_dir: str, suffixes: tuple[str, ...],
                   missing: str) -> None:
    if missing == "error" and (pairing.pred_only or pairing.gt_only):
        problems = [
            PairError(stem, os.path.join(gt_dir, pairing.gt_only_files[stem]),
                      f"no prediction with this stem in {pred_dir}")
            for stem in pairing.gt_only
        ] + [
            PairError(stem, os.path.join(pred_dir, pairing.pred_only_files[stem]),
                      f"no ground truth with this stem in {gt_dir}")
            for stem in pairing.pred_only
        ]
        raise EvaluationFailed(
            problems,
            len(problems),
            f"{len(problems)} stem(s) are not in both directories; no report written "
            "(--missing skip evaluates the stems in both and lists the rest under 'unpaired')",
        )
    if not pairing.pairs:
        kinds = "/".join(suffixes)
        raise InputError(
            f"no pairs to evaluate: {pred_dir} has {pairing.n_pred_files} and {gt_dir} has "
            f"{pairing.n_gt_files} {kinds} file(s), and no stem is in both",
            path=pred_dir,
        )


def evaluate_dirs(task: str, pred_dir: str | os.PathLike[str], gt_dir: str | os.PathLike[str],
                  **options: Any) -> dict[str, Any]:
    """Evaluate two directories and return the report as a dict.

    ``options``: the task's parameters (``block_size=16, threshold=0.5`` for saliency-mb)
    plus ``missing``, ``on_error``, ``jobs``, ``include_rows``.

    >>> report = evaluate_dirs("saliency-mb", "pred", "gt", block_size=16)  # doctest: +SKIP
    >>> report["micro_iou"]  # doctest: +SKIP
    """
    runner_keys = {"missing", "on_error", "jobs", "include_rows"}
    run_options = {k: options.pop(k) for k in list(options) if k in runner_keys}
    params = {**default_params(task), **options}
    unknown = set(params) - set(default_params(task))
    if unknown:
        raise ParameterError(f"unknown option(s) for {task}: {', '.join(sorted(unknown))}")
    return run_evaluation(task, os.fspath(pred_dir), os.fspath(gt_dir), params,
                          **run_options).report


def default_params(task: str) -> dict[str, Any]:
    return dict(get_task(task).default_params)
