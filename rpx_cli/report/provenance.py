"""``run_provenance`` (schema ``rpx-run-provenance-v1``): what was run, on what, when, where.

:func:`build_provenance` is a pure function of its sources (argv, clock readings,
environment, git state) so tests can fix every one of them; the ``collect_*`` helpers
read the real ones.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from typing import Any

from rpx_cli import __version__
from rpx_cli.errors import ParameterError

PROVENANCE_SCHEMA = "rpx-run-provenance-v1"
_VERSIONED = ("numpy", "scipy", "click", "imageio", "pillow", "orjson", "rich")


@dataclass(frozen=True)
class Clock:
    """Start and end of a run; ``fixed`` when ``SOURCE_DATE_EPOCH`` pins them."""

    started: float
    finished: float
    fixed: bool = False


@dataclass
class Stopwatch:
    """Reads the wall clock, or ``SOURCE_DATE_EPOCH`` when set (reproducible reports)."""

    epoch: float | None = field(default_factory=lambda: source_date_epoch())
    started: float = field(default_factory=time.time)
    _t0: float = field(default_factory=time.perf_counter)

    def stop(self) -> Clock:
        if self.epoch is not None:
            return Clock(self.epoch, self.epoch, fixed=True)
        return Clock(self.started, self.started + (time.perf_counter() - self._t0))


def source_date_epoch(environ: Mapping[str, str] = os.environ) -> float | None:
    raw = environ.get("SOURCE_DATE_EPOCH")
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ParameterError(
            f"SOURCE_DATE_EPOCH must be an integer number of seconds, got {raw!r}"
        ) from None
    if value < 0:
        raise ParameterError(f"SOURCE_DATE_EPOCH must not be negative, got {raw!r}")
    return float(value)


def utc_iso(timestamp: float) -> str:
    moment = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def directory_digest(digests: Mapping[str, str]) -> str:
    """sha256 of the ``sha256sum``-format listing (``<hex>  <relative path>\\n``, sorted by
    path) of the files evaluated, so ``sha256sum`` over the same files reproduces it."""
    paths = sorted(digests)
    listing = "".join(map("{}  {}\n".format, map(digests.__getitem__, paths), paths))
    return hashlib.sha256(listing.encode("utf-8", "surrogateescape")).hexdigest()


def directory_input(path: str, digests: Mapping[str, str]) -> dict[str, Any]:
    return {
        "path": path,
        "kind": "directory",
        "exists": os.path.isdir(path),
        "n_files": len(digests),
        "sha256": directory_digest(digests),
    }


def collect_environment() -> dict[str, Any]:
    """Python, platform, the versions of rpx's dependencies (read once per process: the
    package metadata lookups cost ~20 ms) and which path ran the kernels (``kernels``:
    ``native`` or ``numpy (why)``; :mod:`rpx_cli.native`, read each time: ``RPX_NATIVE``).
    On the numpy path pycocotools computes the masks (:mod:`rpx_cli.ops.masks`), so its
    version is recorded there (``pycocotools``, when it is installed); the native path never
    uses it and does not name it."""
    from rpx_cli.native import core, describe

    extra = {} if core() is not None else _numpy_path_versions()
    return {**_environment(), **extra, "kernels": describe()}


@cache
def _numpy_path_versions() -> dict[str, str]:
    from rpx_cli.distributions import version

    found = version("pycocotools")
    return {} if found is None else {"pycocotools": found}


@cache
def _environment() -> dict[str, Any]:
    from rpx_cli.distributions import version

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
    }
    for name in _VERSIONED:
        env[name] = version(name)
    return env


_GIT_ARGS = (("rev-parse", "--verify", "-q", "HEAD"), ("status", "--porcelain", "--untracked-files=no"))
# cwd -> the two git processes start_git started, or (once settled) what they said
_GIT_STARTED: dict[str, list[Any] | dict[str, Any] | None] = {}


def start_git(cwd: str) -> None:
    """Start the two ``git`` processes of :func:`collect_git` for ``cwd`` now, side by side
    (no thread: a thread's stack and malloc arena would count against a capped address
    space), for the run's provenance to read when it is stamped (~15 ms of waiting saved)."""
    try:
        processes = [subprocess.Popen(["git", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                     for args in _GIT_ARGS]
    except (OSError, subprocess.SubprocessError):
        return
    if not _GIT_STARTED:
        import atexit

        atexit.register(settle_git)  # reaped even when the run ends before its provenance
    _GIT_STARTED[cwd] = processes


def _git_said(processes: list[Any]) -> dict[str, Any] | None:
    outs = []
    for process in processes:
        try:
            out, _ = process.communicate(timeout=10)
        except subprocess.SubprocessError:
            process.kill()
            process.communicate()
            out = None
        outs.append(out.decode("utf-8", "replace").strip()
                    if out is not None and process.returncode == 0 else None)
    commit, status = outs
    if not commit:
        return None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def settle_git() -> None:
    """Wait for the git processes :func:`start_git` started (what they said kept)."""
    for cwd, started in list(_GIT_STARTED.items()):
        if isinstance(started, list):
            _GIT_STARTED[cwd] = _git_said(started)


def collect_git(cwd: str | None = None) -> dict[str, Any] | None:
    """``{commit, dirty}`` of the repository holding ``cwd``, or None outside one (what the
    processes :func:`start_git` started for ``cwd`` said, once, when there are some).

    ``dirty`` considers tracked files only (untracked files do not change a checkout).
    """
    if cwd is not None and cwd in _GIT_STARTED:
        started = _GIT_STARTED.pop(cwd)
        return _git_said(started) if isinstance(started, list) else started
    return _collect_git(cwd)


def _collect_git(cwd: str | None) -> dict[str, Any] | None:
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git(*_GIT_ARGS[0])
    if not commit:
        return None
    status = git(*_GIT_ARGS[1])
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def normalise_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """Sorted, JSON-ready copy of the resolved command options."""
    def plain(value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        return value

    return {key: plain(args[key]) for key in sorted(args)}


def build_provenance(
    *,
    command: str,
    argv: list[str],
    args: Mapping[str, Any],
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    clock: Clock,
    environment: Mapping[str, Any],
    git: Mapping[str, Any] | None,
    digests: Mapping[str, int] | None = None,
    executor: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``digests``: how many input digests were computed and how many reused from the
    digest cache (the one part of a report that depends on the cache); ``executor``: where
    the pairs ran (local worker processes or a Dask cluster)."""
    extra = {} if digests is None else {"digests": dict(digests)}
    if executor is not None:
        extra["executor"] = dict(executor)
        if clock.fixed and executor.get("chosen_by") == "auto":
            # the processes chosen from the work depend on the machine's load: a report
            # pinned by SOURCE_DATE_EPOCH records only that they were chosen
            extra["executor"] = {"name": executor["name"], "chosen_by": "auto"}
    return {
        "schema": PROVENANCE_SCHEMA,
        "tool": {"name": "rpx", "version": __version__},
        "command": command,
        "argv": list(argv),
        "args": normalise_args(args),
        "inputs": dict(inputs),
        "outputs": dict(outputs),
        "started_at": utc_iso(clock.started),
        "finished_at": utc_iso(clock.finished),
        "duration_s": 0.0 if clock.fixed else round(clock.finished - clock.started, 6),
        "environment": dict(environment),
        "git": None if git is None else dict(git),
        **extra,
    }
