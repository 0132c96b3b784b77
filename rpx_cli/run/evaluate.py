"""Evaluate two folders with a task: pair by stem, run the pairs through the engine,
assemble the report, stamp provenance. ``rpx eval TASK``, ``rpx saliency-mb`` and
``rpx coherence`` all come here; :func:`evaluate_dirs` is the Python API."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rpx_cli.engine import CacheTally, default_jobs
from rpx_cli.engine.pairs import run_pairs
from rpx_cli.errors import EvaluationFailed, InputError, PairError, ParameterError
from rpx_cli.io.digest_cache import DigestCache
from rpx_cli.io.discover import MISSING_POLICIES, Pairing, pair_dirs
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.run.assemble import assemble, resolve_params
from rpx_cli.run.invocation import (
    Evaluation,
    Invocation,
    ProgressHooks,
    file_input,
    input_entry,
    open_digest_cache,
    stamp,
)
from rpx_cli.tasks.calculators import plugin_calculators
from rpx_cli.tasks.registry import get_task


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
    shard: tuple[int, int] | None = None,
    invocation: Invocation | None = None,
    progress: ProgressHooks | None = None,
    manifest: str | None = None,
    primary_metric: str | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    aux: Mapping[str, str | None] | None = None,
    digest_cache: str | bool | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Evaluation:
    """Pair, evaluate and assemble the report. Raises :class:`rpx_cli.errors.RpxError`.

    ``shard=(k, n)`` evaluates only shard k of n (1-based, by a stable hash of the stem)
    and adds ``state``: what :func:`rpx_cli.run.merge.merge_reports` needs to rebuild the
    single-run report. ``manifest`` adds ``strata`` of ``primary_metric`` (the task's
    default when None), with ``bootstrap`` seeded resamples for 95 % intervals when > 0.
    ``aux``: the task's auxiliary folders (``aux_inputs`` param -> folder, None = not given).
    ``digest_cache``: where file digests are cached (None: the default folder; False: off).
    ``executor="dask"`` evaluates the pairs on the workers of the Dask scheduler at
    ``scheduler`` (docs/distributed.md); ``storage_options``: fsspec options for folders
    and files given as URLs (docs/remote.md; None keeps those already configured).
    """
    task = get_task(task_name)
    missing = task.default_missing if missing is None else missing
    if missing not in MISSING_POLICIES:
        raise ParameterError(f"missing must be one of {', '.join(MISSING_POLICIES)}")
    # the auxiliary folders given are parameters too (their presence can change numbers);
    # the task's normalise_params decides how they are recorded
    aux_dirs = {option.param: (aux or {}).get(option.param) for option in task.aux_inputs}
    params = resolve_params(task, {**params, **aux_dirs}, missing=missing, on_error=on_error)
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ParameterError(f"jobs must be >= 1, got {jobs}")
    check_shard(shard)
    if storage_options is not None:
        from rpx_cli.io import remote

        remote.configure(storage_options)
    runner = _executor(executor, scheduler)
    stopwatch = Stopwatch()

    pairing = pair_dirs(pred_dir, gt_dir, task.suffixes, missing=missing)
    _check_pairing(pairing, pred_dir, gt_dir, task.suffixes, missing)
    whole = pairing.digest()
    for option in task.aux_inputs:
        if aux_dirs[option.param] is not None:
            pairing = pairing.with_aux(option.param, aux_dirs[option.param], option.suffixes)
    plan = None
    if manifest is not None:
        from rpx_cli.deploy import eval_strata

        plan = eval_strata.plan(manifest, task, params, [pair.stem for pair in pairing.pairs],
                                primary_metric=primary_metric, bootstrap=bootstrap, seed=seed,
                                missing=missing)
        params = {**params, "strata": plan.params}
    if shard is not None:
        pairing = pairing.shard(*shard)

    calculators = plugin_calculators(task_name)
    cache = open_digest_cache(digest_cache if runner is None else False)
    hooks = progress or ProgressHooks()
    advance = hooks.start(len(pairing.pairs))
    try:
        result = run_pairs(task, pairing.pairs, params, jobs=jobs, progress=advance, cache=cache,
                           keep_rows=include_rows or plan is not None, calculators=calculators,
                           executor=runner)
    finally:
        hooks.stop()
    cache_warnings = save_digest_cache(cache, result.tally)
    if result.errors and on_error == "fail":
        raise EvaluationFailed(result.errors, len(pairing.pairs))
    if not len(result.stats) and shard is None:
        raise EvaluationFailed(
            result.errors, len(pairing.pairs),
            f"none of the {len(pairing.pairs)} pairs could be evaluated; no report written",
        )

    report = assemble(task, params, result.stats, rows=result.rows, extras=result.extras,
                      unpaired=pairing.unpaired, errors=result.errors, include_rows=include_rows,
                      calculators=calculators)
    strata_inputs = None
    if plan is not None:
        from rpx_cli.deploy import eval_strata

        strata_inputs = eval_strata.inputs(plan, result.rows)
        if shard is None:
            report["strata"] = eval_strata.section(plan.params, plan.direction, strata_inputs,
                                                   plan.problems)
    digests = {task.input_names[0]: {k: v.hex() for k, v in result.digests.get("pred", {}).items()},
               task.input_names[1]: {k: v.hex() for k, v in result.digests.get("gt", {}).items()}}
    paths = {task.input_names[0]: pred_dir, task.input_names[1]: gt_dir}
    for name, folder in aux_dirs.items():
        if folder is not None:
            paths[name] = folder
            digests[name] = {k: v.hex() for k, v in result.digests.get(name, {}).items()}
    if shard is not None:
        report["state"] = shard_state(shard, whole, paths, result.stems, result.stats.encode(),
                                      result.extras, digests)
        if plan is not None:
            report["state"]["strata"] = {"inputs": strata_inputs, "direction": plan.direction,
                                         "problems": plan.problems}
    inputs = {name: input_entry(paths[name], digests[name]) for name in paths}
    if plan is not None:
        inputs["manifest"] = file_input(manifest, plan.sha256)
    invocation = invocation or Invocation(command=f"rpx_cli.evaluate_dirs({task_name!r})")
    stamp(report, invocation, inputs, stopwatch,
          digests={"computed": result.tally.computed, "reused": result.tally.reused},
          executor={"name": "local", "jobs": jobs} if runner is None else runner.describe())
    warnings = [task.warning_text(kind, paths) for kind, paths in sorted(result.warnings.items())]
    warnings += [f"manifest: {problem}" for problem in (plan.problems if plan else [])]
    warnings += cache_warnings
    return Evaluation(report=report, warnings=warnings)


def _executor(name: str, scheduler: str | None) -> Any:
    """None for the local worker processes, else the executor that runs the pairs."""
    if name == "local":
        return None
    if name != "dask":
        raise ParameterError(f"executor must be local or dask, got {name!r}")
    if not scheduler:
        raise ParameterError("executor dask needs the scheduler's address (tcp://HOST:PORT)")
    from rpx_cli.io import remote
    from rpx_cli.run.dask_executor import DaskExecutor

    return DaskExecutor(scheduler, storage_options=remote.current_options() or None)


def save_digest_cache(cache: DigestCache | None, tally: CacheTally) -> list[str]:
    """Store the run's new digests; the cache's warnings (a corrupt segment, an unwritable
    folder) for stderr."""
    if cache is None:
        return []
    cache.add(tally.new)
    cache.save()
    return [text.removeprefix("warning: ") for text in cache.warnings]


def check_shard(shard: tuple[int, int] | None) -> None:
    if shard is not None and not 1 <= shard[0] <= shard[1]:
        raise ParameterError(f"shard {shard[0]}/{shard[1]}: expected 1 <= K <= N")


def shard_state(shard: tuple[int, int], pairing: str, inputs: Mapping[str, str],
                stems: list[str], stats: Mapping[str, Any], extras: list[dict[str, Any]],
                digests: Mapping[str, Any]) -> dict[str, Any]:
    """A ``--shard`` part's ``state``: which part of which run it is, and the statistics
    of its pairs by name (what ``rpx merge`` needs)."""
    return {"shard": {"index": shard[0], "count": shard[1]}, "pairing": pairing,
            "inputs": dict(inputs), "stems": stems, "stats": dict(stats), "extras": extras,
            "digests": dict(digests)}


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

    ``options``: the task's parameters (``block_size=16, threshold=0.5`` for saliency-mb),
    its auxiliary folders (``points_dir=`` for segmentation3d) and ``missing``,
    ``on_error``, ``jobs``, ``include_rows``, ``digest_cache``.

    >>> report = evaluate_dirs("saliency-mb", "pred", "gt", block_size=16)  # doctest: +SKIP
    >>> report["micro_iou"]  # doctest: +SKIP
    """
    runner_keys = {"missing", "on_error", "jobs", "include_rows", "digest_cache", "executor",
                   "scheduler", "storage_options", "shard"}
    run_options = {k: options.pop(k) for k in list(options) if k in runner_keys}
    aux_names = {option.param for option in get_task(task).aux_inputs}  # e.g. points_dir
    aux = {k: None if options[k] is None else os.fspath(options[k])
           for k in list(options) if k in aux_names}
    for key in aux:
        options.pop(key)
    params = {**default_params(task), **options}
    unknown = set(params) - set(default_params(task))
    if unknown:
        raise ParameterError(f"unknown option(s) for {task}: {', '.join(sorted(unknown))}")
    return run_evaluation(task, os.fspath(pred_dir), os.fspath(gt_dir), params, aux=aux,
                          **run_options).report


def default_params(task: str) -> dict[str, Any]:
    return dict(get_task(task).default_params)
