"""The engine: the only place that creates worker processes.

:mod:`rpx_cli.engine.workers` runs units of work through processes (reused file buffers,
digests, stem order, errors, progress); :mod:`rpx_cli.engine.pairs` is the one per-pair path
of every evaluation — a pair read from files (:class:`PairJob`) or given in memory
(:func:`evaluate_loaded`) goes through the same steps into the same statistics.
"""

from rpx_cli.allocator import tune_allocator  # bulk work in this process (input files)
from rpx_cli.engine.jobs import default_jobs
from rpx_cli.engine.workers import (
    CacheTally,
    Digests,
    Executor,
    Progress,
    Worker,
    guarded_parse,
    pair_error,
    run_batch,
    run_units,
    warning_kind,
)

__all__ = ["CacheTally", "Digests", "Executor", "Progress", "Worker", "default_jobs",
           "guarded_parse", "pair_error", "run_batch", "run_units", "tune_allocator", "warning_kind"]
