"""How a run goes, apart from the task's parameters: :class:`RunOptions` carries what every
workflow needs (unpaired and unreadable pairs, processes or a cluster, shards, rows, the
digest cache, strata), checked once (:meth:`RunOptions.checked`). The task's parameters are
:mod:`rpx_cli.params`'; ``missing`` and ``on_error`` are recorded beside them in the
report's ``params`` because they change numbers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from rpx_cli.errors import ParameterError
from rpx_cli.io.discover import MISSING_POLICIES

ON_ERROR_POLICIES = ("fail", "skip")
EXECUTORS = ("local", "dask")


@dataclass(frozen=True)
class Strata:
    """``--manifest F``: strata of the primary metric by phase and difficulty (§6)."""

    manifest: str
    primary_metric: str | None = None  # None: the task's
    bootstrap: int = 0
    seed: int = 0


@dataclass(frozen=True)
class RunOptions:
    """Everything a run needs besides the task and its parameters.

    ``missing``: unpaired stems (``error``, ``skip``, ``empty``; None: the task's default).
    ``on_error``: an unreadable pair fails the run (``fail``) or is recorded (``skip``).
    ``jobs``: worker processes (None: as many as the work pays for, up to the CPUs
    available — ``run_provenance.executor`` says how many and why; never changes a number).
    ``include_rows``: keep per-pair rows in the report. ``shard``: ``(k, n)``, evaluate
    only shard k of n and write a mergeable part. ``digest_cache``: where file digests are
    cached (None: the default folder; False: off). ``executor``/``scheduler``: ``dask`` runs
    the pairs on a Dask cluster. ``storage_options``: fsspec options for URLs (None keeps
    those already configured). ``strata``: ``--manifest`` strata."""

    missing: str | None = None
    on_error: str = "fail"
    jobs: int | None = None
    include_rows: bool = True
    shard: tuple[int, int] | None = None
    digest_cache: str | bool | None = None
    executor: str = "local"
    scheduler: str | None = None
    storage_options: Mapping[str, Any] | None = None
    strata: Strata | None = None

    @classmethod
    def of(cls, **values: Any) -> RunOptions:
        """From keyword arguments (the Python API's), refusing unknown names."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ParameterError(f"unknown run option(s): {', '.join(unknown)} "
                                 f"(known: {', '.join(sorted(known))})")
        return cls(**values)

    def checked(self, default_missing: str) -> RunOptions:
        """Every value checked, ``missing`` at the task's default when not given."""
        missing = default_missing if self.missing is None else self.missing
        if missing not in MISSING_POLICIES:
            raise ParameterError(f"missing must be one of {', '.join(MISSING_POLICIES)}")
        if self.on_error not in ON_ERROR_POLICIES:
            raise ParameterError(f"on_error must be one of {', '.join(ON_ERROR_POLICIES)}")
        jobs = self.jobs  # None: chosen from the work when the pairs run
        if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
            raise ParameterError(f"jobs must be >= 1, got {jobs}")
        if self.shard is not None:
            index, count = self.shard
            if not 1 <= index <= count:
                raise ParameterError(f"shard {index}/{count}: expected 1 <= K <= N")
        if self.executor not in EXECUTORS:
            raise ParameterError(f"executor must be local or dask, got {self.executor!r}")
        if self.executor == "dask" and not self.scheduler:
            raise ParameterError("executor dask needs the scheduler's address (tcp://HOST:PORT)")
        if self.strata is not None and self.strata.bootstrap < 0:
            raise ParameterError(f"bootstrap must be >= 0, got {self.strata.bootstrap}")
        return replace(self, missing=missing, jobs=jobs)

    @property
    def policies(self) -> dict[str, str]:
        """What ``params`` records beside the task's parameters."""
        return {"missing": str(self.missing), "on_error": self.on_error}
