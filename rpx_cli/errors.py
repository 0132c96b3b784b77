"""Domain errors and exit statuses.

The core raises these; ``rpx_cli.cli`` is the one place that turns them into exit codes
and one-line messages (the exit codes are listed in README.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ExitStatus(IntEnum):
    """Process exit codes."""

    OK = 0
    FAILED = 1  # the evaluation could not be completed; no report written
    USAGE = 2  # invalid flags or flag values
    GATE_FAILED = 3  # report written, but a gate failed
    INTERRUPTED = 130


class RpxError(Exception):
    """Base of every error rpx reports to the user as one line (never a traceback)."""

    exit_status: ExitStatus = ExitStatus.FAILED
    path: str | None = None  # the file at fault, when there is one


class InputError(RpxError):
    """A data problem: a file that is missing, unreadable, malformed or inconsistent.

    ``path`` names the file at fault (or the first of two when both are involved); the
    message itself must name every file it concerns.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:
        message = super().__str__()
        if self.path and self.path not in message:
            return f"{self.path}: {message}"
        return message


class ParameterError(RpxError):
    """An option value the core cannot accept (a block size of 0, a threshold of 1.5).

    The CLI validates flags before they reach the core; this is the same check for callers
    of the Python API, and it maps to the usage exit code.
    """

    exit_status = ExitStatus.USAGE


@dataclass(frozen=True)
class PairError:
    """One pair that could not be evaluated."""

    stem: str
    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"stem": self.stem, "path": self.path, "message": self.message}


class EvaluationFailed(RpxError):
    """Some pairs could not be evaluated under ``--on-error fail``: every one is listed."""

    def __init__(self, errors: list[PairError], n_pairs: int, summary: str | None = None) -> None:
        self.errors = errors
        self.n_pairs = n_pairs
        super().__init__(
            summary
            or f"{len(errors)} of {n_pairs} pairs could not be evaluated; no report written "
            "(--on-error skip records them under 'errors' and goes on)"
        )


class WorkerCrashed(RpxError):
    """A worker process died without reporting (killed, out of memory)."""


class GateFailed(RpxError):
    """The report was written, but a gate (``--require``, ``--require-no-regression``) failed."""

    exit_status = ExitStatus.GATE_FAILED


class MissingExtra(RpxError):
    """A feature needs an optional dependency that is not installed; the message names the
    extra to install (``pip install 'rpx-eval[geometry]'``). Exit 1: the flags are valid,
    this environment cannot run them."""
