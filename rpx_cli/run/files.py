"""Evaluate inputs given as files instead of two folders (a task's ``file_inputs``, e.g.
``rpx eval detection --coco-gt F --coco-dt F``): the task reads the files
(:meth:`~rpx_cli.tasks.base.Task.read_files`), rows are ordered by stem, and the report is
assembled and stamped exactly as for folders."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from typing import Any

from rpx_cli.engine import CacheTally
from rpx_cli.errors import EvaluationFailed, InputError, PairError, ParameterError
from rpx_cli.io.discover import shard_of
from rpx_cli.io.filebuffer import cached_sha256_file
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.run.assemble import assemble, resolve_params
from rpx_cli.run.evaluate import check_shard, save_digest_cache, shard_state
from rpx_cli.run.invocation import Evaluation, Invocation, file_input, open_digest_cache, stamp
from rpx_cli.tasks.calculators import plugin_calculators
from rpx_cli.tasks.registry import get_task
from rpx_cli.tasks.stats import Collector


def run_file_evaluation(
    task_name: str,
    files: Mapping[str, str],
    params: Mapping[str, Any],
    *,
    on_error: str = "fail",
    include_rows: bool = True,
    shard: tuple[int, int] | None = None,
    invocation: Invocation | None = None,
    digest_cache: str | bool | None = None,
) -> Evaluation:
    """Evaluate the task's input files (option name -> path, every one of
    ``task.file_inputs``). Rows are ordered by stem; ``shard`` as for folders;
    ``digest_cache`` as :func:`rpx_cli.run.evaluate.run_evaluation`'s."""
    task = get_task(task_name)
    expected = [option.param for option in task.file_inputs]
    if sorted(files) != sorted(expected):
        raise ParameterError(f"{task.name} needs the files {', '.join(expected)}")
    params = resolve_params(task, params, missing="error", on_error=on_error)
    check_shard(shard)
    stopwatch = Stopwatch()
    loaded = task.read_files(files, params)
    params = {**params, **(loaded.params or {})}
    stems = loaded.stems
    repeated = sorted(stem for stem, n in Counter(stems).items() if n > 1)
    if repeated:
        raise InputError(f"several samples have the stem(s) {', '.join(repeated[:5])}: stems "
                         "must be unique", path=files[expected[0]])
    order = sorted(range(len(stems)), key=stems.__getitem__)
    whole = hashlib.sha256("".join(f"{stems[i]}\n" for i in order).encode(
        "utf-8", "surrogateescape")).hexdigest()
    if shard is not None:
        order = [i for i in order if shard_of(stems[i], shard[1]) == shard[0]]
    stems = [stems[i] for i in order]
    pred_path = loaded.pred_path or files[expected[-1]]
    gt_path = loaded.gt_path or files[expected[0]]
    calculators = plugin_calculators(task_name)
    errors: list[PairError] = []
    if loaded.samples is not None:
        collector = Collector(task.statistics(params))
        rows, kept = [], []
        for stem, i in zip(stems, order, strict=True):
            pred, gt = loaded.samples[i]
            try:
                sample = task.evaluate(pred, gt, params, pred_path=pred_path, gt_path=gt_path)
            except InputError as exc:
                errors.append(PairError(stem, exc.path or pred_path, str(exc)))
                continue
            collector.add(sample.values)
            rows.append(sample.row)
            kept.append(stem)
        stats, stems = collector.table(), kept
        if errors and on_error == "fail":
            raise EvaluationFailed(errors, len(order))
    else:
        assert loaded.stats is not None and loaded.rows is not None
        stats = loaded.stats.take(order)
        rows = [loaded.rows[i] for i in order]
    rows = [{"stem": stem, "pred_path": pred_path, "gt_path": gt_path, **row}
            for stem, row in zip(stems, rows, strict=True)] if include_rows else []
    if not len(stats) and shard is None:
        raise InputError("no sample could be evaluated", path=gt_path)
    report = assemble(task, params, stats, rows=rows, extras=[],
                      unpaired={"pred_only": [], "gt_only": []}, errors=errors,
                      include_rows=include_rows, calculators=calculators)
    cache = open_digest_cache(digest_cache)
    digests, tally = {}, CacheTally()
    for name, path in files.items():
        digests[name], reused, key = cached_sha256_file(path, cache)
        tally.reused += reused
        tally.computed += not reused
        if key is not None:
            tally.new.append((key, bytes.fromhex(digests[name])))
    warnings = list(loaded.warnings or []) + save_digest_cache(cache, tally)
    if shard is not None:
        report["state"] = shard_state(shard, whole, files, stems, stats.encode(), [], digests)
    inputs = {name: file_input(files[name], digests[name]) for name in expected}
    invocation = invocation or Invocation(command=f"rpx_cli.run_file_evaluation({task_name!r})")
    stamp(report, invocation, inputs, stopwatch,
          digests={"computed": tally.computed, "reused": tally.reused})
    return Evaluation(report=report, warnings=warnings)
