"""Every pair of a batch read at once (``Task.read_pairs``), where the task reads faster so
than pair by pair — detection's label folders, thousands of small files parsed together —
as a :class:`~rpx_cli.engine.pairs.RunResult` like the engine's: the same statistics, rows,
warnings and file digests (tests compare the two paths). The run's worker processes are
lent for the read (:mod:`rpx_cli.io.pieces`): the task's pieces are read side by side."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from rpx_cli.engine import CacheTally, Progress
from rpx_cli.engine.jobs import processes_for
from rpx_cli.engine.pairs import RunResult
from rpx_cli.engine.workers import map_in_processes
from rpx_cli.io.discover import Pair
from rpx_cli.io.pieces import lent
from rpx_cli.run.plan import Plan
from rpx_cli.tasks.base import Task


def read_at_once(task: Task, pairs: Sequence[Pair], plan: Plan, *, keep_rows: bool = True,
                 jobs: int | None = 1, progress: Progress | None = None) -> RunResult | None:
    """``task.read_pairs``: every pair read at once, here — its pieces in ``jobs`` worker
    processes lent for the read (:mod:`rpx_cli.io.pieces`) — every file hashed (the digest
    cache has nothing to save on files read whole); or None (pair by pair)."""
    execution: dict[str, Any] = {}
    processes = processes_for(jobs, execution)
    runner = partial(map_in_processes, jobs=processes) if processes > 1 else None
    with lent(runner):
        read = task.read_pairs(pairs, plan.params)
    if read is None:
        return None
    if progress is not None:
        progress(len(pairs))
    return RunResult(stats=read.stats, stems=[pair.stem for pair in pairs],
                     rows=read.rows if keep_rows else [], warnings=read.warnings,
                     digests=read.digests,
                     tally=CacheTally(computed=sum(map(len, read.digests.values()))),
                     execution=execution)
