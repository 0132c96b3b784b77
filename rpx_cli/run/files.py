"""Evaluate inputs given as files instead of two folders (a task's ``file_inputs``, e.g.
``rpx eval detection --coco-gt F --coco-dt F``): the task reads the files
(:meth:`~rpx_cli.tasks.base.Task.read_files`), each sample goes through the same per-pair
step as a pair of files (:func:`rpx_cli.engine.pairs.score_loaded`) into a
:class:`~rpx_cli.run.state.State` — or the task builds the statistics in bulk, and the
plugin calculators score each sample it gives (:attr:`FileInput.sample`). The samples are
the pairs of a :class:`~rpx_cli.io.discover.Pairing` (``--shard`` chooses them as it
chooses the pairs of folders), and the report is concluded exactly as for folders."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from functools import partial
from typing import Any

from rpx_cli import native
from rpx_cli.engine import CacheTally, tune_allocator
from rpx_cli.engine.jobs import processes_for
from rpx_cli.engine.pairs import RunResult, collect, score_loaded
from rpx_cli.engine.workers import map_in_processes
from rpx_cli.errors import EvaluationFailed, InputError, ParameterError, RpxError
from rpx_cli.io.discover import Pair, Pairing, shard_layout, shard_of
from rpx_cli.io.filebuffer import cached_sha256_file, in_digest_thread
from rpx_cli.io.pieces import lent
from rpx_cli.params import resolve
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.run.evaluate import conclude, save_digest_cache
from rpx_cli.run.invocation import Evaluation, Invocation, open_digest_cache
from rpx_cli.run.options import RunOptions
from rpx_cli.run.plan import Plan
from rpx_cli.run.state import State
from rpx_cli.tasks.base import FileInput, Task
from rpx_cli.tasks.calculators import plugin_calculators, run_calculators
from rpx_cli.tasks.registry import get_task


def run_file_evaluation(task_name: str, files: Mapping[str, str], params: Mapping[str, Any],
                        options: RunOptions | None = None, *,
                        invocation: Invocation | None = None) -> Evaluation:
    """Evaluate the task's input files (option name -> path, every one of
    ``task.file_inputs``; each checked by its declaration). Rows are ordered by stem;
    ``options`` as for folders (``on_error``, ``include_rows``, ``shard``, ``digest_cache``;
    ``missing`` does not apply)."""
    task = get_task(task_name)
    options = (options or RunOptions()).for_task("error")
    declared = {option.param: option for option in task.file_inputs}
    if sorted(files) != sorted(declared):
        raise ParameterError(f"{task.name} needs the files {', '.join(declared)}")
    files = {name: declared[name].convert(path) for name, path in files.items()}
    if task.files_list_pairs:
        raise ParameterError(f"{task.name}'s input files list the pairs of --pred-dir and "
                             "--gt-dir: evaluate them with run_evaluation(..., files=...)")
    params = {**resolve(task, params), "missing": "error", "on_error": options.on_error}
    # a file of every sample is read and scored here, in bulk: its temporaries (hundreds of
    # megabytes for 500,000 masks or keypoint rows) are reused instead of faulted in anew
    tune_allocator()
    stopwatch = Stopwatch()
    # a large input file is read in pieces (rpx_cli.io.pieces): side by side in worker
    # processes, --jobs of them (default: the free CPUs), while this process reads the rest
    execution: dict[str, Any] = {}
    jobs = processes_for(options.jobs, execution)
    with lent(partial(map_in_processes, jobs=jobs, chosen=execution) if jobs > 1 else None), \
            native.lend_threads(jobs):
        loaded = task.read_files(files, params)
    params = {**params, **(loaded.params or {})}
    # the files' sha256 (run_provenance) in a thread while the samples are scored: hashlib
    # lets go of the GIL over large buffers (273 MB at Objects365 scale: ~0.3 s)
    cache = open_digest_cache(options.digest_cache)
    digesting = in_digest_thread(_digests, files, cache)
    stems = loaded.stems
    repeated = sorted(stem for stem, n in Counter(stems).items() if n > 1)
    expected = list(declared)
    if repeated:
        raise InputError(f"several samples have the stem(s) {', '.join(repeated[:5])}: stems "
                         "must be unique", path=files[expected[0]])
    order = sorted(range(len(stems)), key=stems.__getitem__)
    whole = hashlib.sha256("".join(f"{stems[i]}\n" for i in order).encode(
        "utf-8", "surrogateescape")).hexdigest()
    pred_path = loaded.pred_path or files[expected[-1]]
    gt_path = loaded.gt_path or files[expected[0]]
    # every sample is a pair of the run, and so is one whose GT record is bad (left out, but
    # its shard's): sharded by Pairing as the pairs of folders are
    dropped = {error.stem for error in loaded.errors if error.side == "gt" and error.stem}
    dropped -= set(stems)
    pairing = Pairing(sorted([*(Pair.record(stems[i], i, pred_path, gt_path) for i in order),
                              *(Pair.record(stem, None, pred_path, gt_path) for stem in dropped)],
                             key=lambda pair: pair.stem))
    shard_digests = None
    # bad records (docs/usage.md, --on-error): a prediction record's sample is scored with its empty
    # prediction, a GT record's sample is not in ``stems``; --on-error decides
    record_errors = loaded.errors
    if options.shard is not None:
        shard_digests = shard_layout(pairing.lines(), options.shard[1])
        pairing = pairing.shard(*options.shard)
        mine = {pair.stem for pair in pairing.pairs}
        # a record that names no sample goes with the shard of the stem "" (one of them)
        mine |= {""} if shard_of("", options.shard[1]) == options.shard[0] else set()
        record_errors = [error for error in record_errors if error.stem in mine]
    order = [pair.entry for pair in pairing.pairs if pair.entry is not None]
    stems = [stems[i] for i in order]
    n_samples = len(stems) + sum(error.side != "pred" for error in record_errors)
    if record_errors and options.on_error == "fail":
        raise EvaluationFailed(sorted(record_errors, key=lambda error: error.stem), n_samples)
    broken = {error.stem: error for error in record_errors if error.side == "pred"}
    plan = Plan(task.name, params, pairing.pairs, whole, {"pred_only": [], "gt_only": []},
                dict(files), options.include_rows, shard=options.shard,
                shard_digests=shard_digests)
    calculators = plugin_calculators(task_name)
    if loaded.samples is not None:
        outcomes = (score_loaded(task, params, stem, *loaded.samples[i], pred_path=pred_path,
                                 gt_path=gt_path, calculators=calculators,
                                 keep_rows=options.include_rows, broken=broken.get(stem))
                    for stem, i in zip(stems, order, strict=True))
        result = collect(task, params, stems, outcomes)
        result.errors += [error for error in record_errors if error.side != "pred"]
        if result.errors and options.on_error == "fail":
            raise EvaluationFailed(result.errors, n_samples)
    else:
        result = _bulk_result(task, loaded, stems, order, calculators, broken,
                              keep_rows=options.include_rows, pred_path=pred_path,
                              gt_path=gt_path)
        result.errors = list(record_errors)
    if not len(result.stems) and options.shard is None:
        raise InputError("no sample could be evaluated", path=gt_path)
    digests, tally = digesting.result()
    result.tally = tally
    state = State.of_result(plan, result, digests=digests)
    invocation = invocation or Invocation(command=f"rpx_cli.run_file_evaluation({task_name!r})")
    with native.lend_threads(jobs):  # the kernels of the summary (COCO's matcher, ...) too
        return conclude(state, invocation, stopwatch,
                        warnings=list(loaded.warnings or []) + save_digest_cache(cache, tally),
                        executor={"name": "local", **execution}, keep_state=options.keep_state)


def _bulk_result(task: Task, loaded: FileInput, stems: list[str], order: list[int],
                 calculators: list[Any], broken: Mapping[str, Any], *, keep_rows: bool,
                 pred_path: str, gt_path: str) -> RunResult:
    """The samples a task scored in bulk (``loaded.stats``), in stem order, with their rows;
    the plugin calculators run on each sample as :meth:`FileInput.sample` gives it (the
    reader gave a broken prediction record as the sample's empty prediction), so their
    values join the rows and ``aggregate`` as for folders."""
    extras: list[dict[str, Any]] = []
    if calculators:
        if loaded.sample is None:
            names = ", ".join(calculator.name for calculator in calculators)
            raise ParameterError(f"the plugin calculator(s) {names} of {task.name} need each "
                                 f"sample, which {task.name}'s input files do not give one by "
                                 "one: evaluate --pred-dir/--gt-dir")
        for stem, i in zip(stems, order, strict=True):
            try:
                extras.append(run_calculators(calculators, *loaded.sample(i)))
            except RpxError:
                raise
            except Exception as exc:
                raise RuntimeError(f"unexpected error while evaluating '{stem}': {exc!r}") from exc
    assert loaded.stats is not None and loaded.rows is not None
    rows = [{"stem": stem, "pred_path": None if stem in broken else pred_path,
             "gt_path": gt_path, **loaded.rows[i], **(extras[k] if extras else {})}
            for k, (stem, i) in enumerate(zip(stems, order, strict=True))] if keep_rows else []
    return RunResult(stats=loaded.stats.take(order), stems=stems, extras=extras, rows=rows)


def _digests(files: Mapping[str, str], cache: Any) -> tuple[dict[str, str], CacheTally]:
    """Each input file's sha256 (from the digest cache when it has it) and the tally."""
    digests, tally = {}, CacheTally()
    for name, path in files.items():
        digests[name], reused, key = cached_sha256_file(path, cache)
        tally.reused += reused
        tally.computed += not reused
        if key is not None:
            tally.new.append((key, bytes.fromhex(digests[name])))
    return digests, tally
