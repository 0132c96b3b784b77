"""The default ``--jobs``, chosen from the work: the CPUs this process may use, those free
now (``/proc/stat``), and :class:`Probe`'s cost model over the first units (docs/usage.md
says how it decides; ``run_provenance.executor`` records the choice and its figures)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rpx_cli.engine.workers import Worker

T = TypeVar("T")


def default_jobs() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def processes_for(jobs: int | None, chosen: dict[str, Any] | None = None) -> int:
    """How many worker processes ``--jobs`` gives for work that is known to pay for them
    (large pieces): ``jobs``, else one per free CPU (:func:`idle_now`); 1 where processes
    cannot be forked (not Linux). ``chosen`` receives the figures."""
    if jobs is None:
        free = idle_now()
        jobs = max(1, min(default_jobs(), int(free + 0.5)))
        if chosen is not None:
            chosen.update({"chosen_by": "auto", "free_cpus": round(free, 2)})
    if not sys.platform.startswith("linux"):
        jobs = 1
    if chosen is not None:
        chosen["jobs"] = jobs
    return jobs


PROBE_SECONDS = 0.1  # units run here first, timed, before the number of processes is chosen
POOL_START_S = 0.015  # forking a pool of workers (measured: 12 ms for 2 on the build machine)
PER_RESULT_S = 15e-6  # the pool's queue per result (measured: trivial units, 2 workers)
GAIN_NEEDED = 0.85  # processes only when the model predicts at most 85 % of one process's time


class Probe:
    """The first units, run in this process and timed: the job's time per unit, the time the
    consumer spends on each result (collecting statistics), and the cost of sending a result
    between processes (pickle there, unpickle here) — what :meth:`choose` needs."""

    SAMPLED = 8  # results whose transfer is timed

    def __init__(self) -> None:
        self.done = 0
        self.work = self.consumer = self.send = self.receive = 0.0
        self.sampled = 0

    def run(self, job: Callable[[Worker, Any], T], worker: Worker, units: Sequence[Any],
            advance: Callable[[Any], None]) -> Iterator[T]:
        import pickle
        from time import perf_counter

        begin = perf_counter()
        self._idle_start = _cpu_times()
        while self.done < len(units) and perf_counter() - begin < PROBE_SECONDS:
            unit = units[self.done]
            t0 = perf_counter()
            result = job(worker, unit)
            t1 = perf_counter()
            self.work += t1 - t0
            if self.sampled < self.SAMPLED:
                blob = pickle.dumps(result, pickle.HIGHEST_PROTOCOL)
                t2 = perf_counter()
                pickle.loads(blob)
                self.send += t2 - t1
                self.receive += perf_counter() - t2
                self.sampled += 1
            self.done += 1
            advance(unit)
            t3 = perf_counter()
            yield result
            self.consumer += perf_counter() - t3
        self._idle_end = _cpu_times()

    def per_unit(self) -> tuple[float, float, float, float]:
        n, m = max(self.done, 1), max(self.sampled, 1)
        return self.work / n, self.consumer / n, self.send / m, self.receive / m

    def choose(self, remaining: int, cpus: int) -> int:
        """The processes that finish the ``remaining`` units soonest by the cost model: one
        process spends ``work + consumer`` per unit; ``J`` workers spend ``(work + send) / J``
        while this process receives and consumes each result, all on the CPUs other
        programs leave free: this process's own CPU and the CPUs that were idle while the
        units above ran (``/proc/stat``; elsewhere ``cpus`` less the 1-minute load average).
        On a busy machine a second worker only shares the first one's CPU."""
        self.load = _load_average()
        idle = _idle_cpus(getattr(self, "_idle_start", None), getattr(self, "_idle_end", None))
        self.free = min(float(cpus), 1.0 + idle) if idle is not None else max(1.0, cpus - self.load)
        if remaining <= 1 or cpus <= 1 or self.free < 1.5:
            return 1
        work, consumer, send, receive = self.per_unit()
        serial = remaining * (work + consumer)
        best, best_time = 1, serial
        for jobs in range(2, min(cpus, remaining) + 1):
            here = receive + consumer + PER_RESULT_S
            there = (work + send) / min(jobs, self.free)
            total_cpu = (work + send + here) / self.free
            predicted = POOL_START_S + remaining * max(there, here, total_cpu)
            if predicted < best_time:
                best, best_time = jobs, predicted
        return best if best_time <= GAIN_NEEDED * serial else 1

    def figures(self) -> dict[str, Any]:
        work, consumer, send, receive = self.per_unit()
        return {"probed": self.done, "unit_ms": round(work * 1e3, 4),
                "consumer_ms": round(consumer * 1e3, 4),
                "transfer_ms": round((send + receive) * 1e3, 4),
                "load_average": round(getattr(self, "load", 0.0), 2),
                "free_cpus": round(getattr(self, "free", 0.0), 2)}


def _cpu_times() -> tuple[int, int] | None:
    """``(idle, total)`` jiffies of every CPU together (Linux ``/proc/stat``), or None."""
    try:
        with open("/proc/stat", "rb") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu" or len(fields) < 5:
        return None
    values = [int(v) for v in fields[1:9]]
    return values[3] + values[4], sum(values)  # idle + iowait, everything (no guest: in user)


def _idle_cpus(start: tuple[int, int] | None, end: tuple[int, int] | None) -> float | None:
    """How many CPUs stood idle between two :func:`_cpu_times` readings (None: unknown, or
    too short a window to tell)."""
    if start is None or end is None:
        return None
    idle, total = end[0] - start[0], end[1] - start[1]
    if total < 4:  # a window of a few clock ticks says nothing
        return None
    return max(0, idle) / total * (os.cpu_count() or 1)


def idle_now(window: float = 0.02) -> float:
    """CPUs free for workers now: when this module was imported 40 ms to 1 s ago (as in
    the ``rpx`` command, which imports it while it starts), the CPUs that stood idle since
    (``/proc/stat``) plus those rpx's own threads kept busy (its start-up, digests: at
    least one); else the CPUs idle over the next ``window`` seconds while this process
    sleeps; where ``/proc/stat`` is missing, the CPUs less the 1-minute load average."""
    import time

    since = time.monotonic() - _IMPORTED[0]
    if 0.04 <= since <= 1.0:
        idle = _idle_cpus(_IMPORTED[1], _cpu_times())
        if idle is not None:
            own = (time.process_time() - _IMPORTED[2]) / since
            return min(float(default_jobs()), idle + max(1.0, own))
    start = _cpu_times()
    time.sleep(window)
    idle = _idle_cpus(start, _cpu_times())
    if idle is None:
        return max(1.0, default_jobs() - _load_average())
    return min(float(default_jobs()), idle)


def _imported() -> tuple[float, tuple[int, int] | None, float]:
    import time

    return time.monotonic(), _cpu_times(), time.process_time()


_IMPORTED = _imported()


def _load_average() -> float:
    """Runnable processes of the whole machine, averaged over a minute (0 where unknown)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0.0
