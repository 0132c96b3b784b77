"""How a run goes, apart from the task's parameters: :class:`RunOptions` (unpaired and
unreadable pairs, processes or a cluster, shards, rows, the digest cache, object storage,
strata), built from the run options' declarations
(:data:`rpx_cli.params.workflows.RUN_OPTIONS` and ``STRATA_OPTIONS``): every value passes
:meth:`~rpx_cli.params.Option.convert` when the options are made — ``RunOptions(shard="1/2")``
holds ``(1, 2)``, ``RunOptions(jobs=0)`` raises the CLI's ``--jobs: must be >= 1, got 0``.
The Python API's run keywords (:data:`RUN_KEYWORDS`) are the declarations' names.
``missing`` and ``on_error`` are recorded beside the task's parameters in the report's
``params`` because they change numbers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from rpx_cli.errors import ParameterError
from rpx_cli.params.option import Option, convert_all
from rpx_cli.params.workflows import RUN_OPTIONS, STRATA_OPTIONS

# the Python API's keywords that say how a run goes (the rest are the task's parameters)
RUN_KEYWORDS = tuple(option.param for option in (*RUN_OPTIONS, *STRATA_OPTIONS))


def _converted(instance: Any, options: tuple[Option, ...]) -> None:
    """Every declared field of a frozen dataclass through its option's ``convert``."""
    for option in options:
        object.__setattr__(instance, option.param, option.convert(getattr(instance, option.param)))


@dataclass(frozen=True)
class Strata:
    """``--manifest F``: strata of the primary metric by phase and difficulty (§6); every
    value converted by its declaration (:data:`STRATA_OPTIONS`)."""

    manifest: str
    primary_metric: str | None = None  # None: the task's
    bootstrap: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        _converted(self, STRATA_OPTIONS)


@dataclass(frozen=True)
class RunOptions:
    """Everything a run needs besides the task and its parameters, each value converted by
    its declaration (:data:`RUN_OPTIONS`) when the options are made.

    ``missing``: unpaired stems (``error``, ``skip``, ``empty``; None: the task's default).
    ``on_error``: an unreadable pair fails the run (``fail``) or is recorded (``skip``).
    ``jobs``: worker processes (None: as many as the work pays for, up to the CPUs
    available — ``run_provenance.executor`` says how many and why; never changes a number).
    ``include_rows``: keep per-pair rows in the report. ``shard``: ``(k, n)`` or ``"k/n"``,
    evaluate only shard k of n and write a mergeable part. ``digest_cache``: where file
    digests are cached (None: the default folder; False: off). ``executor``/``scheduler``:
    ``dask`` runs the pairs on a Dask cluster. ``storage_options``: fsspec options for URLs
    (None keeps those already configured). ``strata``: ``--manifest`` strata. ``keep_state``:
    the report carries every pair's statistics (``statistics``, for ``rpx compare``'s
    interval of pooled figures; never changes a number)."""

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
    keep_state: bool = False

    def __post_init__(self) -> None:
        _converted(self, RUN_OPTIONS)
        if self.strata is not None and not isinstance(self.strata, Strata):
            raise ParameterError(f"strata: expected rpx_cli.api.Strata, got "
                                 f"{type(self.strata).__name__}")
        if self.executor == "dask" and not self.scheduler:
            raise ParameterError("--executor dask needs --scheduler tcp://HOST:PORT (or "
                                 "DASK_SCHEDULER_ADDRESS)")

    @classmethod
    def of(cls, **values: Any) -> RunOptions:
        """From keyword arguments (the Python API's: :data:`RUN_KEYWORDS`), refusing unknown
        names; ``manifest`` with ``primary_metric``, ``bootstrap``, ``seed`` make the
        :class:`Strata` (each checked even without a manifest)."""
        values = convert_all((*RUN_OPTIONS, *STRATA_OPTIONS), values, "a run")
        strata = {option.param: values.pop(option.param) for option in STRATA_OPTIONS
                  if option.param in values}
        if strata.get("manifest") is not None:
            values["strata"] = Strata(**strata)
        return cls(**values)

    def for_task(self, default_missing: str) -> RunOptions:
        """``missing`` at the task's default when not given."""
        return self if self.missing is not None else replace(self, missing=default_missing)

    @property
    def policies(self) -> dict[str, str]:
        """What ``params`` records beside the task's parameters."""
        return {"missing": str(self.missing), "on_error": self.on_error}

