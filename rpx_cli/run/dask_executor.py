"""``--executor dask``: the pairs of a run evaluated by the workers of a Dask cluster
(``rpx[dask]``: dask.distributed), with the engine's own job and worker design.

The units (pairs) are cut into batches in stem order; each batch is one Dask task that runs
:func:`rpx_cli.engine.run_batch` on a Dask worker — a reused :class:`~rpx_cli.engine.Worker`
per worker thread, the same :class:`~rpx_cli.engine.pairs.PairJob` as a local run — and returns
the batch's outcomes (statistics, rows, errors, digests, warnings). They come back to this
process, are handed to the engine's collector in submission order whatever order the
batches finished in, and are summarised once: the report equals a local run's except
``run_provenance`` (which names the executor). The progress bar moves as futures complete.

- A worker that dies mid-batch (killed, out of memory) is Dask's to handle: the scheduler
  runs the batch again on another worker (``distributed.scheduler.allowed-failures``
  times, then ``KilledWorker``, reported as rpx's worker-crash error). Outcomes depend only
  on the batch, so a re-run batch gives the same result.
- An input error on a worker is an outcome like a local one (``--on-error``).
- The workers read the paths they are given: URLs (``s3://...``, with the run's
  ``--storage-options`` shipped with each batch, and the workers' own environment for
  credentials), or local paths that the workers see too (a shared filesystem, or a
  ``LocalCluster`` on this machine); a relative path is read from this process's working
  directory, and named as given in messages.
- The digest cache is not used (its keys are this machine's inode numbers).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rpx_cli.engine import Progress, Worker, run_batch
from rpx_cli.errors import RpxError, WorkerCrashed, first_line
from rpx_cli.io.regular import relative_to

T = TypeVar("T")
EXTRA = "pip install 'rpx-eval[dask]'"
BATCHES_PER_WORKER = 8  # enough to balance the load and keep progress live; few round trips
MAX_BATCH = 64


def _run_batch(job: Callable[[Worker, Any], T], units: Sequence[Any], digest: bool,
               storage_options: dict[str, Any] | None, cwd: str) -> list[T]:
    """What a Dask worker runs: one batch, by the engine's worker of this thread, with
    relative paths read from the client's working directory."""
    if storage_options is not None:
        from rpx_cli.io import remote

        remote.configure(storage_options)
    with relative_to(cwd):
        return run_batch(job, units, digest=digest)


SCHEMES = ("tcp", "tls", "inproc", "ucx", "ws", "wss")  # what distributed connects to
_ADDRESS = re.compile(r"^(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?"
                      r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\[\]\s]+)(?::(?P<port>[0-9]{1,5}))?/?$")


def check_address(address: str) -> None:
    """A scheduler address Dask can connect to (``tcp://HOST:PORT``, ``tls://``, ...), else
    a usage error naming it — before any client exists (a half-made client prints a
    traceback at exit)."""
    from rpx_cli.errors import ParameterError

    found = _ADDRESS.match(address.strip())
    scheme = (found.group("scheme") or "tcp").lower() if found else None
    if found is None or scheme not in SCHEMES or (
            found.group("port") is not None and not 0 < int(found.group("port")) < 65536):
        raise ParameterError(f"--scheduler {address!r} is not a Dask scheduler address "
                             f"(tcp://HOST:PORT; schemes: {', '.join(SCHEMES)})")


def _connect(client_class: Any, address: str, timeout: float) -> Any:
    """A client of the scheduler at ``address``, or an :class:`RpxError` within ``timeout``
    (plus a margin): a TCP service that is not a scheduler accepts the connection and never
    answers Dask's registration, where distributed waits without a bound — the client is
    made on a daemon thread and given up on."""
    import threading

    made: dict[str, Any] = {}

    def make() -> None:
        try:
            made["client"] = client_class(address, timeout=timeout, set_as_default=False)
        except BaseException as exc:  # reported below, in this thread
            made["error"] = exc

    thread = threading.Thread(target=make, name="rpx-dask-connect", daemon=True)
    thread.start()
    thread.join(timeout + CONNECT_MARGIN_S)
    if thread.is_alive():
        raise RpxError(f"the service at {address} did not answer as a Dask scheduler within "
                       f"{timeout + CONNECT_MARGIN_S:g} s (is it one?)")
    error = made.get("error")
    if error is not None:
        if isinstance(error, (OSError, TimeoutError, ValueError, TypeError)):
            raise RpxError(f"cannot reach the Dask scheduler at {address}: "
                           f"{first_line(error)}") from None
        raise error
    return made["client"]


CONNECT_MARGIN_S = 5.0  # past the connect timeout, for the registration's reply


@dataclass
class DaskExecutor:
    """Connects to the scheduler at ``scheduler`` for each :meth:`map`."""

    scheduler: str
    storage_options: dict[str, Any] | None = None
    batch_size: int | None = None  # pairs per Dask task (None: from the number of workers)
    # seconds to connect and to see a first worker (None: Dask's own setting,
    # distributed.comm.timeouts.connect, 30 s unless DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT)
    timeout: float | None = None
    workers: int = 0
    batches: int = 0

    def __post_init__(self) -> None:
        check_address(self.scheduler)  # a usage error before anything is read

    def describe(self) -> dict[str, Any]:
        """``run_provenance.executor``."""
        versions = {}
        for name in ("dask", "distributed"):
            try:
                from importlib import metadata

                versions[name] = metadata.version(name)
            except Exception:  # not installed: cannot happen after a run
                versions[name] = None
        return {"name": "dask", "scheduler": self.scheduler, "workers": self.workers,
                "batches": self.batches, **versions}

    def _client(self) -> Any:
        try:
            from distributed import Client
        except ImportError:
            raise RpxError(f"--executor dask needs the dask extra: {EXTRA}") from None
        timeout = self.timeout
        if timeout is None:
            import dask.config
            from dask.utils import parse_timedelta

            timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s")
        client = _connect(Client, self.scheduler, timeout)
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            client.close()
            raise RpxError(f"the Dask scheduler at {self.scheduler} has no worker "
                           f"({first_line(exc) or 'timed out'})") from None
        return client

    def map(self, job: Callable[[Worker, Any], T], units: Sequence[Any], *, digest: bool,
            progress: Progress | None = None,
            weight: Callable[[Any], int] | None = None) -> Iterator[T]:
        """``job(worker, unit)`` for every unit on the cluster; results in unit order."""
        if not units:
            return
        from distributed import as_completed
        from distributed.client import FutureCancelledError

        try:
            from distributed import KilledWorker
        except ImportError:  # older distributed
            from distributed.scheduler import KilledWorker

        client = self._client()
        futures: list[Any] = []
        try:
            self.workers = len(client.scheduler_info().get("workers", {})) or 1
            size = self.batch_size or max(1, min(MAX_BATCH, math.ceil(
                len(units) / (self.workers * BATCHES_PER_WORKER))))
            batches = [list(units[at:at + size]) for at in range(0, len(units), size)]
            self.batches = len(batches)
            cwd = os.getcwd()
            futures = [client.submit(_run_batch, job, batch, digest, self.storage_options, cwd,
                                     pure=False) for batch in batches]
            position = {future.key: i for i, future in enumerate(futures)}
            done: dict[int, list[T]] = {}
            following = 0
            for future in as_completed(futures, loop=client.loop):
                i = position[future.key]
                try:
                    done[i] = future.result()
                except KilledWorker as exc:
                    raise WorkerCrashed(
                        f"a batch of {len(batches[i])} pair(s) killed every Dask worker that "
                        f"ran it ({first_line(exc)}); out of memory?") from None
                except FutureCancelledError:
                    raise RpxError("the Dask cluster cancelled the run (the scheduler or "
                                   "the client went away)") from None
                if progress is not None:
                    progress(sum(1 if weight is None else weight(unit) for unit in batches[i]))
                while following in done:
                    yield from done.pop(following)
                    following += 1
        finally:
            if futures:
                client.cancel(futures)
            client.close()


