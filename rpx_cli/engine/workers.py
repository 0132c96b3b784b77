"""Run units of work through worker processes: file reading with digests, stem order,
error collection, progress. The only place that creates workers.

A *job* is a picklable callable ``job(worker, unit) -> result``:
:class:`~rpx_cli.engine.pairs.PairJob` evaluates one pair of files with a task (``rpx eval``,
``saliency-mb``, ``coherence``; :func:`~rpx_cli.engine.pairs.run_pairs`); temporal
stability's job scores a run of consecutive frames. Each process has one :class:`Worker`
holding reused file buffers (every file is read once, into memory that is kept between
files, and its sha256 is computed alongside for ``run_provenance``). Results come back in
submission order whatever ``jobs`` is, so nothing a job returns can depend on it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from rpx_cli.allocator import tune_allocator
from rpx_cli.engine.jobs import Probe, default_jobs, idle_now
from rpx_cli.errors import (
    GroundTruthWarning,
    InputError,
    PairError,
    RpxError,
    WorkerCrashed,
    first_line,
)
from rpx_cli.io.digest_cache import DigestCache
from rpx_cli.io.filebuffer import FileBuffer, shutdown_digest_thread

Progress = Callable[[int], None]
T = TypeVar("T")
Digests = dict[str, dict[str, bytes]]  # role ("pred", "gt", "depth") -> relative path -> sha256


class Executor(Protocol):
    """Runs units on workers this process did not fork (:mod:`rpx_cli.run.dask_executor`):
    ``job(worker, unit)`` for every unit by a :class:`Worker` over there (see
    :func:`run_batch`), results yielded in submission order, ``progress`` called as work
    completes."""

    def map(self, job: Callable[[Worker, Any], T], units: Sequence[Any], *, digest: bool,
            progress: Progress | None,
            weight: Callable[[Any], int] | None) -> Iterator[T]: ...


_batch_workers = threading.local()


def run_batch(job: Callable[[Worker, Any], T], units: Sequence[Any], *, digest: bool = True) -> list[T]:
    """``job(worker, unit)`` for each unit, by this thread's reused :class:`Worker` (one per
    thread of a process that runs batches for an :class:`Executor`: buffers are kept
    between batches, never shared between threads)."""
    workers = getattr(_batch_workers, "by_digest", None)
    if workers is None:
        workers = _batch_workers.by_digest = {}
    worker = workers.get(digest)
    if worker is None:
        worker = workers[digest] = Worker(digest=digest)
    return [job(worker, unit) for unit in units]


class Worker:
    """Per-process state: reused file buffers (one per role and slot), the sha256 of every
    file read, and warnings noted while reading.

    A value parsed from a buffer is valid until the next read into the same slot; a job
    that keeps two files of one role alive (frame t while t+1 is read) alternates slots.
    A file's digest is collected when its buffer is reused or at :meth:`take_digests`, so
    hashing (on a helper thread) overlaps the arithmetic."""

    def __init__(self, *, digest: bool = True, cache: DigestCache | None = None) -> None:
        tune_allocator()
        self.digest = digest
        self.cache = cache
        self._buffers: dict[tuple[str, int], FileBuffer] = {}
        self._held: dict[tuple[str, int], str] = {}  # (role, slot) -> relative path read into it
        self._digests: Digests = {}
        self.tally = CacheTally()
        self.warnings: dict[tuple[str, str], None] = {}  # (kind, path), once each, in order

    def read(self, role: str, path: str, rel: str | None, parse: Callable[[str, FileBuffer], T],
             *, slot: int = 0) -> T:
        """``parse(path, buffer)`` with ``path`` read into the (role, slot) buffer;
        ``rel`` (the path relative to its folder) names the digest, None keeps none."""
        key = (role, slot)
        buffer = self._buffers.get(key)
        if buffer is None:
            buffer = self._buffers[key] = FileBuffer(digest=self.digest)
        self._settle(key)
        cache = self.cache
        if cache is not None and rel is not None:
            cache = cache if cache.usable_for(path[:len(path) - len(rel)] or ".") else None
        buffer.cache = cache if rel is not None else None
        value = guarded_parse(parse, path, buffer, self.warn)
        if rel is not None:
            self._held[key] = rel
        return value

    def warn(self, kind: str, path: str) -> None:
        self.warnings[(kind, path)] = None  # a file counts once per kind

    def take_digests(self) -> Digests:
        """The digests of every file read since the last call (waits for the hashing)."""
        for key in list(self._held):
            self._settle(key)
        out, self._digests = self._digests, {}
        return out

    def take_tally(self) -> CacheTally:
        """Digests computed and reused since the last call, and the new cache entries."""
        out, self.tally = self.tally, CacheTally()
        return out

    def take_warnings(self) -> list[tuple[str, str]]:
        out, self.warnings = list(self.warnings), {}
        return out

    def forget(self, role: str | None = None) -> None:
        """Drop what was read since the last :meth:`take_digests` (a pair that failed), or
        only the files of ``role`` (a prediction scored as empty instead)."""
        if role is not None:
            for key in [key for key in self._held if key[0] == role]:
                del self._held[key]
            self._digests.pop(role, None)
            return
        for key in list(self._held):
            self._settle(key)
        self._digests = {}

    def _settle(self, key: tuple[str, int]) -> None:
        rel = self._held.pop(key, None)
        if rel is not None:
            buffer = self._buffers[key]
            value = buffer.digest()
            if value is not None:
                self._digests.setdefault(key[0], {})[rel] = value
                self.tally.count(buffer, value)


def guarded_parse(parse: Callable[[str, FileBuffer], T], path: str, buffer: FileBuffer,
                  warn: Callable[[str, str], None]) -> T:
    """``parse(path, buffer)``, the one guard where file contents enter rpx.

    A reader meeting a file that exhausts memory, nests deeper than the parser can follow
    or holds a number no type can hold raises that file's :class:`InputError` (exit 1, or
    an ``errors`` entry under ``--on-error skip``), whatever line raised it. Only the read
    step is guarded: the same exceptions from the metric arithmetic stay internal errors.
    Warnings a parser emits (Pillow, numpy) become rpx's one-line warnings for the file.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = parse(path, buffer)
        except MemoryError:
            raise InputError("too large to read into memory", path=path) from None
        except RecursionError:
            raise InputError("nested too deeply to read", path=path) from None
        except OverflowError as exc:
            raise InputError(f"holds a value out of range ({first_line(exc)})", path=path) from None
    for record in caught:  # a file that is refused gets its error line only
        warn(warning_kind(record), path)
    return value


def warning_kind(record: warnings.WarningMessage) -> str:
    """A library warning as rpx's own one-line text (no source line, no file position)."""
    if record.category.__name__ == "DecompressionBombWarning":  # Pillow's, between 1x and 2x
        return ("very large image (over the decoder's decompression-bomb warning limit of "
                "89,478,485 pixels; read anyway)")
    if issubclass(record.category, GroundTruthWarning):  # rpx's own words
        return first_line(record.message)
    return f"{record.category.__name__}: {first_line(record.message)}"


@dataclass
class CacheTally:
    """Digests computed and reused from the digest cache, and the entries to store."""

    computed: int = 0
    reused: int = 0
    new: list[tuple[bytes, bytes]] = field(default_factory=list)

    def count(self, buffer: FileBuffer, digest: bytes) -> None:
        if buffer.reused:
            self.reused += 1
        else:
            self.computed += 1
            if buffer.store_key is not None:
                self.new.append((buffer.store_key, digest))

    def add(self, other: CacheTally) -> None:
        self.computed += other.computed
        self.reused += other.reused
        self.new.extend(other.new)


def run_units(job: Callable[[Worker, Any], T], units: Sequence[Any], *, jobs: int | None = 1,
              digest: bool = True, cache: DigestCache | None = None,
              progress: Progress | None = None,
              weight: Callable[[Any], int] | None = None,
              executor: Executor | None = None,
              chosen: dict[str, Any] | None = None, heavy: bool = False) -> Iterator[T]:
    """``job(worker, unit)`` for every unit, in ``jobs`` processes, results in order.
    ``jobs=None`` chooses the number from the work (:class:`Probe`; ``chosen`` receives the
    choice and what it was based on); ``heavy``: each unit is known to take tens of
    milliseconds or more (a task's ``heavy_pairs``), so with ``jobs=None`` the workers start
    at once on the CPUs that are idle, instead of after timing the first units (which would
    cost a whole unit's time in one process). ``progress(weight(unit))`` is called as each finishes
    (weight 1 by default). A worker that dies is :class:`WorkerCrashed`; on any error or
    interrupt the workers stop at once. ``executor``: run the units elsewhere instead (a
    Dask cluster's workers), each batch by a :class:`Worker` there, results in the same order.
    """
    def advance(unit: Any) -> None:
        if progress is not None:
            progress(1 if weight is None else weight(unit))

    if executor is not None:
        yield from executor.map(job, units, digest=digest, progress=progress, weight=weight)
        return
    worker = None
    start = 0
    if jobs is None and heavy and len(units) > 1:
        free = idle_now()
        jobs = max(1, min(len(units), default_jobs(), int(free + 0.5)))
        if chosen is not None:
            chosen.update({"jobs": jobs, "chosen_by": "auto", "heavy_pairs": True,
                           "free_cpus": round(free, 2)})
    if jobs is None:
        worker = Worker(digest=digest, cache=cache)
        probe = Probe()
        for result in probe.run(job, worker, units, advance):
            yield result
        start = probe.done
        jobs = probe.choose(len(units) - start, default_jobs())
        if chosen is not None:
            chosen.update({"jobs": jobs, "chosen_by": "auto", **probe.figures()})
    elif chosen is not None:
        chosen.update({"jobs": jobs})
    rest = units[start:] if start else units
    if jobs <= 1 or len(rest) <= 1:
        worker = worker or Worker(digest=digest, cache=cache)
        for unit in rest:
            result = job(worker, unit)
            advance(unit)
            yield result
        return
    jobs = min(jobs, len(rest))
    # Small chunks keep the progress bar live and the tail short; big enough to amortise IPC.
    chunksize = max(1, min(8, len(rest) // (jobs * 16)))
    results = _parallel_map(rest, jobs=jobs, chunksize=chunksize, initargs=(job, digest, cache))
    try:
        for unit, result in zip(rest, results, strict=True):
            advance(unit)
            yield result
    finally:  # closed early (an error or a signal in the consumer): stop the workers now
        results.close()


_job: tuple[Callable[[Worker, Any], Any], Worker] | None = None
_parent_pid = os.getpid()  # set again before each pool is forked


_STOP_SIGNALS = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                 if hasattr(signal, name)}


def _block_stop_signals() -> set[int] | None:
    """Block the stop signals in this thread (pending ones wait); the previous mask."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)


def _restore_signal_mask(mask: set[int] | None) -> None:
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _init_process(job: Callable[[Worker, Any], Any], digest: bool,
                  cache: DigestCache | None) -> None:
    global _job
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C, once
    for name in ("SIGTERM", "SIGHUP"):  # the parent's handlers raise; a worker just stops
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):  # forked with them blocked: now they may come
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    _die_with_parent()
    gc.disable()  # its pairs build no reference cycles: the collector would only rewalk them
    _job = (job, Worker(digest=digest, cache=cache))


def _die_with_parent() -> None:
    """Linux: the kernel sends this worker SIGKILL when the process that forked it dies, even
    by SIGKILL, so no worker outlives its run (PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if os.getppid() != _parent_pid:  # the parent died before the call (rpx may be PID 1)
        os._exit(1)


def _run_in_process(unit: Any) -> Any:
    assert _job is not None
    job, worker = _job
    return job(worker, unit)


def map_in_processes(fn: Callable[[Any], T], items: Sequence[Any], *, jobs: int,
                     chosen: dict[str, Any] | None = None) -> Iterator[T]:
    """``fn(item)`` for every item, started now in up to ``jobs`` worker processes forked
    from this one (``fn`` and what it refers to are inherited, not pickled; the items and
    results are), results in order as the returned iterator is read; closing it early
    stops the workers. One job or one item: ``fn`` runs here, lazily. ``chosen`` receives
    the number of pieces. The run lends this to the readers for the pieces of one large
    file (``rpx_cli.io.pieces``)."""
    if chosen is not None:
        chosen["pieces"] = len(items)
    jobs = min(jobs, len(items))
    if jobs <= 1:
        return map(fn, items)
    results = _parallel_map(items, jobs=jobs, chunksize=1,
                            initargs=(lambda worker, item: fn(item), False, None), started=True)
    next(results)  # the items are submitted: the workers run while this process goes on
    return results


def _parallel_map(units: Sequence[Any], *, jobs: int, chunksize: int,
                  initargs: tuple[Any, ...], started: bool = False) -> Iterator[Any]:
    """The results of the job for ``units`` from ``jobs`` forked workers, in order.
    ``started``: first yield ``None`` as soon as every unit is submitted."""
    global _parent_pid
    # (imported here: ~15 ms of start-up that a run without workers does not need)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    shutdown_digest_thread()  # fork only a single-threaded process
    from rpx_cli.io.prefetch import settle

    settle()  # (the thread of start-up reading the COCO files)
    _parent_pid = os.getpid()
    method = "fork" if sys.platform.startswith("linux") else None
    # ProcessPoolExecutor, not multiprocessing.Pool: a worker killed by the OOM killer
    # breaks the pool (an error) instead of losing its task (a hang).
    executor = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context(method),
                                   initializer=_init_process, initargs=initargs)
    finished = False
    quiet = _quiet_manager(executor)
    quiet.__enter__()
    try:
        # the workers are forked with the stop signals blocked (a signal to the process
        # group in that moment would meet a child still running the parent's handlers, and
        # print a traceback from it); each unblocks them once its own handlers are set
        blocked = _block_stop_signals()
        try:
            results = executor.map(_run_in_process, units, chunksize=chunksize)
        finally:
            _restore_signal_mask(blocked)
        if started:
            yield None
        yield from results
        finished = True
    except BrokenProcessPool:
        raise WorkerCrashed(
            "a worker process died (killed, or out of memory?); fewer --jobs use less memory"
        ) from None
    finally:
        try:
            if finished:
                executor.shutdown(wait=True)
            else:
                _terminate(executor)
        finally:
            quiet.__exit__(None, None, None)


def _terminate(executor: Any) -> None:
    """Stop the workers now (interrupt, error or crash): no result is waited for; the
    pool's manager thread is waited for briefly (see :func:`_quiet_manager`)."""
    # the processes, before shutdown() forgets them (it sets ``_processes`` to None)
    processes = list((getattr(executor, "_processes", None) or {}).values())
    terminate = getattr(executor, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
    executor.shutdown(wait=False, cancel_futures=True)
    if terminate is None:
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5)
    manager = getattr(executor, "_executor_manager_thread", None)
    if manager is not None:
        manager.join(timeout=5)
        if not manager.is_alive():
            # CPython's exit hook wakes every pool's manager thread through a pipe that a
            # broken pool's thread has closed already: "Exception ignored ... Bad file
            # descriptor" at exit (before 3.12). A thread that has ended needs no waking.
            from concurrent.futures import process as futures_process

            wakeups = getattr(futures_process, "_threads_wakeups", None)
            if wakeups is not None:
                wakeups.pop(manager, None)


@contextlib.contextmanager
def _quiet_manager(executor: Any) -> Iterator[None]:
    """While the pool runs and stops: when a signal to the whole process group killed the
    workers too, the pool's manager thread marks every pending future broken — and one that
    ``Executor.map`` cancelled as it was closed makes CPython (before 3.12) raise
    ``InvalidStateError`` in that thread, a traceback on stderr. That one exception of that
    thread is not printed."""
    from concurrent.futures import InvalidStateError

    previous = threading.excepthook

    def quiet(args: Any) -> None:
        manager = getattr(executor, "_executor_manager_thread", None)
        if args.thread is manager and args.exc_type is InvalidStateError:
            return
        previous(args)

    threading.excepthook = quiet
    try:
        yield
    finally:
        if threading.excepthook is quiet:
            threading.excepthook = previous


def pair_error(exc: RpxError, stem: str, default_path: str, *,
               side: str | None = None) -> PairError:
    """A domain error of one unit as the report's ``errors`` entry (``side``: the file at
    fault is the prediction or the GT, see :class:`~rpx_cli.errors.PairError`)."""
    return PairError(stem=stem, path=exc.path or default_path, message=str(exc), side=side)
