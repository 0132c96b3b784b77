"""Evaluate two folders with a task: plan (resolve the parameters, pair by stem), evaluate
every pair into a :class:`~rpx_cli.run.state.State`, and :func:`conclude` — the report,
a ``--shard`` part's state, provenance, warnings — as every workflow that evaluates does.
``rpx eval TASK``, ``rpx saliency-mb`` and ``rpx coherence`` all come here;
:func:`evaluate_dirs` is the Python API."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rpx_cli.engine import CacheTally
from rpx_cli.errors import EvaluationFailed
from rpx_cli.io.digest_cache import DigestCache
from rpx_cli.params.option import unknown_names
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.run import pooled
from rpx_cli.run.invocation import (
    Evaluation,
    Invocation,
    ProgressHooks,
    file_input,
    open_digest_cache,
    stamp,
)
from rpx_cli.run.options import RUN_KEYWORDS, RunOptions
from rpx_cli.run.part_key import part_key, part_seal, signature
from rpx_cli.run.pictures import attach_pictures
from rpx_cli.run.plan import Plan, plan_folders
from rpx_cli.run.state import (
    State,
    evaluate_batch,
    finalize,
    provenance_inputs,
    skipped_lines,
)
from rpx_cli.tasks.registry import get_task


def run_evaluation(task_name: str, pred_dir: str, gt_dir: str, params: Mapping[str, Any],
                   options: RunOptions | None = None, *,
                   aux: Mapping[str, str | None] | None = None,
                   files: Mapping[str, str | None] | None = None,
                   invocation: Invocation | None = None,
                   progress: ProgressHooks | None = None) -> Evaluation:
    """Pair, evaluate and report. ``params``: the task's parameters by name (each converted
    and checked by its declaration); ``options``: how the run goes (:class:`RunOptions`:
    ``--missing``, ``--on-error``, ``--jobs``, ``--shard``, ``--no-rows``, the digest cache,
    ``--executor dask``, ``--manifest`` strata); ``aux``: the task's auxiliary folders
    (``aux_inputs`` param -> folder); ``files``: the input files of a task whose files list
    the pairs of the folders (panoptic's ``gt_json``, ``pred_json``). Raises
    :class:`rpx_cli.errors.RpxError`."""
    task = get_task(task_name)
    options = (options or RunOptions()).for_task(task.default_missing)
    if options.storage_options is not None:
        from rpx_cli.io import remote

        remote.configure(options.storage_options)
    runner = _executor(options)
    stopwatch = Stopwatch()
    plan = plan_folders(task, pred_dir, gt_dir, params, options, aux=aux, files=files)
    cache = open_digest_cache(options.digest_cache if runner is None else False)
    hooks = progress or ProgressHooks()
    advance = hooks.start(len(plan.pairs))
    try:
        state = evaluate_batch(plan, jobs=options.jobs, cache=cache, executor=runner,
                               progress=advance)
    finally:
        hooks.stop()
    cache_warnings = save_digest_cache(cache, state.tally)
    if state.errors and options.on_error == "fail":
        raise EvaluationFailed(state.errors, len(plan.pairs))
    if not len(state) and plan.shard is None:
        raise EvaluationFailed(
            state.errors, len(plan.pairs),
            f"none of the {len(plan.pairs)} pairs could be evaluated; no report written",
        )
    extra_inputs = {}
    if plan.strata is not None:
        extra_inputs["manifest"] = file_input(plan.strata.manifest.path, plan.strata.sha256)
    executor = {"name": "local", **state.execution} if runner is None else runner.describe()
    evaluation = conclude(state, invocation or Invocation(command=f"rpx_cli.evaluate_dirs({task_name!r})"),
                          stopwatch, extra_inputs=extra_inputs, executor=executor,
                          keep_state=options.keep_state)
    evaluation.warnings += [f"manifest: {problem}" for problem in
                            (plan.strata.problems if plan.strata else [])] + cache_warnings
    return evaluation


def conclude(state: State, invocation: Invocation, stopwatch: Stopwatch, *,
             extra_inputs: Mapping[str, Any] | None = None,
             executor: Mapping[str, Any] | None = None,
             warnings: list[str] | None = None, keep_state: bool = False) -> Evaluation:
    """The end of every evaluation: the report of ``state`` (a ``--shard`` state with its
    part; ``keep_state``: a full report with its pairs' ``statistics``,
    :mod:`rpx_cli.run.pooled`), ``run_provenance`` stamped once, and the warnings for
    stderr."""
    task = get_task(state.task)
    report = finalize(state, check_errors=False)
    pictures: list[str] = []
    if state.shard is not None:
        report["state"] = state.part()
        report["state"]["seal"] = part_seal(report)
        key = part_key()
        if key is not None:  # RPX_PART_KEY: signed, for a merge that checks it
            report["state"]["signature"] = signature(report["state"]["seal"], key)
    else:
        pictures = attach_pictures(report, task, state.params)
        if keep_state:
            report[pooled.SECTION] = pooled.kept_statistics(state.stems, state.stats)
    inputs = {**provenance_inputs(state), **(extra_inputs or {})}
    stamp(report, invocation, inputs, stopwatch,
          digests={"computed": state.tally.computed, "reused": state.tally.reused},
          executor=executor)
    lines = list(warnings or [])
    lines += task.warning_lines(state.warnings)
    lines += skipped_lines(state)
    lines += list(report.get("warnings") or ())  # the summary's: filters that emptied a class
    lines += pictures
    return Evaluation(report=report, warnings=lines)


def _executor(options: RunOptions) -> Any:
    """None for the local worker processes, else the executor that runs the pairs."""
    if options.executor == "local":
        return None
    from rpx_cli.io import remote
    from rpx_cli.run.dask_executor import DaskExecutor

    return DaskExecutor(str(options.scheduler), storage_options=remote.current_options() or None)


def save_digest_cache(cache: DigestCache | None, tally: CacheTally) -> list[str]:
    """Store the run's new digests; the cache's warnings (a corrupt segment, an unwritable
    folder) for stderr."""
    if cache is None:
        return []
    cache.add(tally.new)
    cache.save()
    return [text.removeprefix("warning: ") for text in cache.warnings]


def split_keywords(task_name: str, options: Mapping[str, Any]) -> tuple[dict[str, Any], RunOptions,
                                                                       dict[str, Any]]:
    """The Python API's keywords as ``(params, run options, auxiliary folders)``: the run's
    own keywords (``missing``, ``jobs``, ``manifest``, ...; :data:`RUN_KEYWORDS`, the names
    of the run options' declarations, each converted by its declaration), the task's
    auxiliary folders (``points_dir=``), and the rest the task's parameters."""
    options = dict(options)
    task = get_task(task_name)
    # a task's auxiliary folders, and the input files that list its pairs (panoptic)
    aux_names = {option.param for option in task.aux_inputs}
    if task.files_list_pairs:
        aux_names |= {option.param for option in task.file_inputs}
    unknown_names(options, [*(option.param for option in task.options), *aux_names,
                            *(["metrics"] if task.families else []), *RUN_KEYWORDS], task.name)
    run = {key: options.pop(key) for key in list(options) if key in RUN_KEYWORDS}
    aux = {key: None if options[key] is None else os.fspath(options.pop(key))
           for key in list(options) if key in aux_names}
    return options, RunOptions.of(**run), aux


def evaluate_dirs(task: str, pred_dir: str | os.PathLike[str], gt_dir: str | os.PathLike[str],
                  **options: Any) -> dict[str, Any]:
    """Evaluate two directories and return the report as a dict.

    ``options``: the task's parameters by name, each checked as its CLI flag is
    (``block_size=16, threshold=0.5`` for saliency-mb; ``ranges=["0:2", "2:"]`` for depth),
    its auxiliary folders (``points_dir=`` for segmentation3d), the input files that list
    the pairs (``gt_json=``, ``pred_json=`` for panoptic), and how the run goes:
    ``missing``, ``on_error``, ``jobs``, ``include_rows``, ``shard``, ``digest_cache``,
    ``executor``, ``scheduler``, ``storage_options``, and ``manifest`` (with
    ``primary_metric``, ``bootstrap``, ``seed``) for strata.

    >>> report = evaluate_dirs("saliency-mb", "pred", "gt", block_size=16)  # doctest: +SKIP
    >>> report["micro_iou"]  # doctest: +SKIP
    """
    params, run, aux = split_keywords(task, options)
    listing = {option.param for option in get_task(task).file_inputs} \
        if get_task(task).files_list_pairs else set()
    files = {key: aux.pop(key) for key in list(aux) if key in listing}
    return run_evaluation(task, os.fspath(pred_dir), os.fspath(gt_dir), params, run,
                          aux=aux, files=files).report


def default_params(task: str) -> dict[str, Any]:
    """Every parameter of ``task`` at its default."""
    return dict(get_task(task).default_params)


__all__ = ["RUN_KEYWORDS", "Plan", "conclude", "default_params", "evaluate_dirs", "run_evaluation",
           "save_digest_cache", "split_keywords"]
