"""Domain errors and exit statuses.

The core raises these; ``rpx_cli.cli`` is the one place that turns them into exit codes
and one-line messages (the exit codes are listed in README.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from typing import Any


def escaped(text: str) -> str:
    """``text`` as ``ls -b`` shows a file name, when it holds anything unprintable: a byte
    that is not UTF-8 (a surrogate from Python's ``surrogateescape`` decoding of the name)
    as ``\\ooo`` octal, a control character as ``\\n``, ``\\t`` or octal, a backslash as
    ``\\\\``. Printable text is returned as it is. Names on disk keep their bytes (files are
    still opened and evaluated); only what is shown (stderr, reports, which must be valid
    UTF-8) is escaped."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif "\udc80" <= char <= "\udcff":  # an undecodable byte
            out.append(f"\\{ord(char) - 0xDC00:03o}")
        elif char in _C_ESCAPES:
            out.append(_C_ESCAPES[char])
        elif not char.isprintable():
            out.extend(f"\\{byte:03o}" for byte in char.encode("utf-8", "surrogatepass"))
        else:
            out.append(char)
    return "".join(out)


_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v",
              "\f": "\\f", "\r": "\\r"}
_C_UNESCAPES = {escape[1]: char for char, escape in _C_ESCAPES.items()}
_ESCAPE = re.compile(r"(?:\\[0-7]{3})+|\\[\\abtnvfr]")


def unescaped(text: str) -> str:
    """The name :func:`escaped` showed as ``text`` (``unescaped(escaped(t)) == t`` for every
    ``t`` that needed escaping): octal runs are the bytes of the name, decoded as it was
    (UTF-8 with ``surrogateescape``). Reports hold escaped stems; whatever orders stems as
    the files were ordered (``rpx merge``) sorts by this. A printable name is shown as it
    is, so one holding a backslash before three octal digits or an escape letter reads
    back differently: only its place in a merged report's order can differ."""
    if "\\" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        token = match.group()
        if len(token) == 2:
            return "\\" if token == "\\\\" else _C_UNESCAPES[token[1]]
        raw = bytes(int(token[i:i + 3], 8) for i in range(1, len(token), 4))
        return raw.decode("utf-8", "surrogateescape")

    return _ESCAPE.sub(one, text)


# the end of every warning or error about inputs that look like the other side's (GT files
# given as predictions, predictions as GT)
SWAP_HINT = "did you swap --pred-dir and --gt-dir?"
SWAP_COCO_HINT = "did you swap --coco-gt and --coco-dt?"


def first_line(value: object) -> str:
    """The first line of an exception's (or any value's) text, or its type's name when it
    has none: one line for stderr from a library's multi-line message."""
    if isinstance(value, BaseException) and value.args and isinstance(value.args[0], str):
        text = value.args[0].strip().splitlines()
    else:
        text = str(value).strip().splitlines()
    return text[0] if text else type(value).__name__


def located(path: str | None, message: str) -> str:
    """``path: message``, unless the message already starts with the path (an
    :class:`InputError`'s text names its file first)."""
    return message if not path or message.startswith(path) else f"{path}: {message}"


class GroundTruthWarning(UserWarning):
    """A task's warning about a pair's ground truth (a GT segment's JSON area that differs
    from its pixels): shown naming the GT file, where other warnings name the prediction."""


class ExitStatus(IntEnum):
    """Process exit codes."""

    OK = 0
    FAILED = 1  # the evaluation could not be completed; no report written
    USAGE = 2  # invalid flags or flag values
    GATE_FAILED = 3  # report written, but a gate failed
    HANGUP = 129  # SIGHUP (128 + 1): the terminal or session went away; no report written
    INTERRUPTED = 130  # SIGINT, Ctrl-C (128 + 2)
    TERMINATED = 143  # SIGTERM (128 + 15): CI cancellation, Slurm, timeout, kill


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread by the CLI's handler: a subclass of
    KeyboardInterrupt, so it stops a run exactly as Ctrl-C does (workers terminated, no
    report, no temporary file); the exit status is 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


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


class RecordError(InputError):
    """A bad line of a one-file table (a CSV row): ``line`` (1-based, the file's own
    numbering) and the row's ``stem`` when it is known, so that ``--on-error skip`` can
    set the record aside (:class:`PairError` ``side``) and go on."""

    def __init__(self, line: int, text: str, *, path: str, stem: str | None = None) -> None:
        super().__init__(f"line {line}: {text}", path=path)
        self.line, self.text, self.stem = line, text, stem

    def relined(self, line: int) -> RecordError:
        """The same error at the file's ``line`` (rows before it were set aside)."""
        return RecordError(line, self.text, path=str(self.path), stem=self.stem)


class ParameterError(RpxError):
    """An option value the core cannot accept (a block size of 0, a threshold of 1.5).

    The CLI validates flags before they reach the core; this is the same check for callers
    of the Python API, and it maps to the usage exit code.
    """

    exit_status = ExitStatus.USAGE


# what became of a pair whose file (or record) could not be read or evaluated, by the side
# at fault: a prediction is scored as an empty one (its GT counted as misses: a model never
# gains by breaking a prediction); only a GT that cannot be read drops the pair
EFFECTS = {"pred": "empty_prediction", "gt": "dropped"}


@dataclass(frozen=True)
class PairError:
    """One pair that could not be evaluated (``side`` None), or whose prediction (``side``
    ``"pred"``: the pair scored with an empty prediction) or ground truth (``"gt"``: the
    pair dropped) could not be read or evaluated."""

    stem: str
    path: str
    message: str
    side: str | None = None

    @property
    def effect(self) -> str | None:
        return EFFECTS.get(self.side or "")

    def as_dict(self) -> dict[str, str]:
        out = {"stem": self.stem, "path": self.path, "message": self.message}
        if self.side is not None:
            out["side"] = self.side
            out["effect"] = EFFECTS[self.side]
        return out

    @classmethod
    def of(cls, exc: RpxError, stem: str, *, side: str | None, path: str) -> PairError:
        """A record's error (an input file's sample): ``path`` unless the error names its own."""
        return cls(stem, exc.path or path, str(exc), side)

    @classmethod
    def from_dict(cls, data: Any) -> PairError:
        """The inverse of :meth:`as_dict` (a report's ``errors`` entry)."""
        side = data.get("side")
        return cls(str(data["stem"]), str(data["path"]), str(data["message"]),
                   side if side in EFFECTS else None)


# at most this many lines name single files in one message (a flood of 4,000 errors is
# read as its first lines and a count: "… and 3,980 more")
MAX_LISTED = 20


def capped(lines: list[str], limit: int = MAX_LISTED, *, more: str = "") -> list[str]:
    """The first ``limit`` of ``lines``, then ``… and N more`` (``more``: what follows,
    e.g. " (see 'errors' in the report)")."""
    if len(lines) <= limit:
        return list(lines)
    return [*lines[:limit], f"… and {len(lines) - limit:,} more{more}"]


class EvaluationFailed(RpxError):
    """Some pairs could not be evaluated under ``--on-error fail``: every one is recorded
    (the CLI lists the first :data:`MAX_LISTED`)."""

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


class UnknownGatePath(RpxError):
    """A gate names a key the report does not have (a typo, most likely): a mistake on the
    command line, exit 2 — not a regression (3). The report, when there is one, is written."""

    exit_status = ExitStatus.USAGE


class MissingExtra(RpxError):
    """A feature needs an optional dependency that is not installed; the message names the
    extra to install (``pip install 'rpx-eval[geometry]'``). Exit 1: the flags are valid,
    this environment cannot run them."""
