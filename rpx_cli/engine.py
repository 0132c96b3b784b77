"""Run pairs through a task: process pool, stem order, error collection, progress.

The result never depends on ``jobs``: pairs are evaluated independently, results come
back in submission (stem) order, and every reduction over rows happens afterwards.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rpx_cli.errors import PairError, RpxError, WorkerCrashed
from rpx_cli.io.discover import Pair
from rpx_cli.io.filebuffer import FileBuffer, shutdown_digest_thread
from rpx_cli.tasks.base import Params, Task
from rpx_cli.tasks.calculators import run_calculator

Progress = Callable[[int], None]


@dataclass
class Outcome:
    """What one pair produced: statistics (and the public row, if kept) or an error."""

    stats: Sequence[float] | None
    extra: dict[str, Any] | None  # plugin calculators' values
    row: dict[str, Any] | None
    error: PairError | None
    pred_sha256: bytes | None
    gt_sha256: bytes | None
    warnings: list[tuple[str, str]]


@dataclass
class RunResult:
    """Everything the report needs, in stem order. ``stats`` holds one row of sufficient
    statistics per evaluated pair; ``rows`` the public rows, when they were kept."""

    stats: np.ndarray | list[Any]
    stems: list[str] = field(default_factory=list)  # of the evaluated pairs, in order
    extras: list[dict[str, Any]] = field(default_factory=list)  # plugin values, when any
    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[PairError] = field(default_factory=list)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    pred_digests: dict[str, bytes] = field(default_factory=dict)  # relative path -> sha256
    gt_digests: dict[str, bytes] = field(default_factory=dict)


def default_jobs() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_malloc_tuned = False


def tune_allocator() -> None:
    """Keep freed memory in the process (glibc): per-frame temporaries of a few MB are then
    reused instead of being unmapped and page-faulted back in on every pair, which cost
    more than the arithmetic (PERF-NOTES: 8.4 -> 4 ms per depth pair). Once per process; a
    no-op where glibc's ``mallopt`` is not available."""
    global _malloc_tuned
    if _malloc_tuned or not sys.platform.startswith("linux"):
        return
    _malloc_tuned = True
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, 32 * 1024 * 1024)
        libc.mallopt(_M_TRIM_THRESHOLD, 256 * 1024 * 1024)
    except (OSError, AttributeError):
        pass


class _Worker:
    """Per-process state: the task, its parameters and two reused file buffers."""

    def __init__(self, task: Task, params: Params, digest: bool, keep_rows: bool,
                 calculators: Sequence[Any] = ()) -> None:
        tune_allocator()
        self.task = task
        self.params = params
        self.keep_rows = keep_rows
        self.calculators = calculators
        self.pred_buffer = FileBuffer(digest=digest)
        self.gt_buffer = FileBuffer(digest=digest)

    def __call__(self, pair: Pair) -> Outcome:
        warnings: list[tuple[str, str]] = []

        def warn(kind: str, path: str) -> None:
            warnings.append((kind, path))

        task, params = self.task, self.params
        pred_path, gt_path = pair.pred_path, pair.gt_path
        pred_sha = gt_sha = None
        try:
            gt = task.read(gt_path, self.gt_buffer, params, warn, role="gt")
            if pred_path is None:
                pred = task.empty_prediction(gt, params)
            else:
                pred = task.read(pred_path, self.pred_buffer, params, warn, role="pred")
            row = task.evaluate(pred, gt, params, pred_path=pred_path, gt_path=gt_path)
            stats = task.row_stats(row, params)
            extra = None
            if self.calculators:
                extra = {}
                for calculator in self.calculators:
                    extra.update(run_calculator(calculator, pred, gt))
            gt_sha = self.gt_buffer.digest()
            if pred_path is not None:
                pred_sha = self.pred_buffer.digest()
        except RpxError as exc:
            path = getattr(exc, "path", None) or pred_path or gt_path
            error = PairError(stem=pair.stem, path=path, message=str(exc))
            return Outcome(None, None, None, error, None, None, warnings)
        except Exception as exc:
            raise RuntimeError(f"unexpected error while evaluating '{pair.stem}': {exc!r}") from exc
        public = None
        if self.keep_rows:  # private "_" keys never leave the worker
            public = {"stem": pair.stem, "pred_path": pred_path, "gt_path": gt_path}
            public.update((k, v) for k, v in row.items() if not k.startswith("_"))
            public.update(extra or {})
        return Outcome(stats, extra, public, None, pred_sha, gt_sha, warnings)


_worker: _Worker | None = None


def _init_worker(task: Task, params: Params, digest: bool, keep_rows: bool,
                 calculators: Sequence[Any]) -> None:
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C, once
    _worker = _Worker(task, params, digest, keep_rows, calculators)


def _run_in_worker(pair: Pair) -> Outcome:
    assert _worker is not None
    return _worker(pair)


def _outcomes(task: Task, pairs: Sequence[Pair], params: Params, *, jobs: int,
              digest: bool, keep_rows: bool, calculators: Sequence[Any]) -> Iterator[Outcome]:
    if jobs <= 1 or len(pairs) <= 1:
        worker = _Worker(task, params, digest, keep_rows, calculators)
        for pair in pairs:
            yield worker(pair)
        return
    jobs = min(jobs, len(pairs))
    # Small chunks keep the progress bar live and the tail short; big enough to amortise IPC.
    chunksize = max(1, min(8, len(pairs) // (jobs * 16)))
    yield from parallel_map(_run_in_worker, pairs, jobs=jobs, initializer=_init_worker,
                            initargs=(task, params, digest, keep_rows, calculators),
                            chunksize=chunksize)


def parallel_map(function: Callable[[Any], Any], items: Sequence[Any], *, jobs: int,
                 initializer: Callable[..., None], initargs: tuple[Any, ...],
                 chunksize: int = 1) -> Iterator[Any]:
    """``function(item)`` for every item in ``jobs`` worker processes (forked on Linux),
    results in order. A worker that dies is :class:`WorkerCrashed`; on any error or
    interrupt the workers are stopped at once."""
    shutdown_digest_thread()  # fork only a single-threaded process
    method = "fork" if sys.platform.startswith("linux") else None
    # ProcessPoolExecutor, not multiprocessing.Pool: a worker killed by the OOM killer
    # breaks the pool (an error) instead of losing its task (a hang).
    executor = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context(method),
                                   initializer=initializer, initargs=initargs)
    finished = False
    try:
        yield from executor.map(function, items, chunksize=chunksize)
        finished = True
    except BrokenProcessPool:
        raise WorkerCrashed(
            "a worker process died (killed, or out of memory?); fewer --jobs use less memory"
        ) from None
    finally:
        if finished:
            executor.shutdown(wait=True)
        else:
            _terminate(executor)


def _terminate(executor: ProcessPoolExecutor) -> None:
    """Stop the workers now (interrupt, error or crash): no result is waited for."""
    executor.shutdown(wait=False, cancel_futures=True)
    terminate = getattr(executor, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        process.terminate()
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        process.join(timeout=5)


def run_pairs(task: Task, pairs: Sequence[Pair], params: Params, *, jobs: int = 1,
              progress: Progress | None = None, digest: bool = True,
              keep_rows: bool = True, calculators: Sequence[Any] = ()) -> RunResult:
    """Evaluate every pair; statistics, rows and errors come back in stem order."""
    stats: array[float] | list[Any] = array("d") if task.vector_stats else []
    width = None
    result = RunResult(stats=np.empty((0, 0)) if task.vector_stats else [])
    outcomes = _outcomes(task, pairs, params, jobs=jobs, digest=digest, keep_rows=keep_rows,
                         calculators=calculators)
    for pair, outcome in zip(pairs, outcomes, strict=True):
        if outcome.error is not None:
            result.errors.append(outcome.error)
        else:
            if isinstance(stats, list):
                stats.append(outcome.stats)
            else:
                if width is None:
                    width = len(outcome.stats)
                elif len(outcome.stats) != width:
                    raise RuntimeError(f"{task.name}: row statistics of varying width at '{pair.stem}'")
                stats.extend(outcome.stats)
            result.stems.append(pair.stem)
            if outcome.extra is not None:
                result.extras.append(outcome.extra)
            if outcome.row is not None:
                result.rows.append(outcome.row)
            if outcome.gt_sha256 is not None and pair.gt_rel is not None:
                result.gt_digests[pair.gt_rel] = outcome.gt_sha256
            if outcome.pred_sha256 is not None and pair.pred_rel is not None:
                result.pred_digests[pair.pred_rel] = outcome.pred_sha256
        for kind, path in outcome.warnings:
            result.warnings.setdefault(kind, []).append(path)
        if progress is not None:
            progress(1)
    if isinstance(stats, list):
        result.stats = stats
    elif width is not None:
        result.stats = np.frombuffer(stats, dtype=np.float64).reshape(-1, width).copy()
    return result
