"""Shared fixtures: one CLI runner that validates every report it sees.

Plain helpers (paths, file writers, report checks) are in helpers.py.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import example_task  # noqa: F401  (registers the test-only task "cer")
import pytest
from click.testing import CliRunner
from helpers import parse_report

from rpx_cli.cli.main import cli

# the digest cache of every run in the suite: a fresh folder, never the user's
os.environ["RPX_DIGEST_CACHE"] = tempfile.mkdtemp(prefix="rpx-test-digests-")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="Rewrite fixtures/*/*/expected.json from the current output (review the diff).")


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str
    stdout_bytes: bytes

    @property
    def json(self) -> dict[str, Any]:
        return parse_report(self.stdout_bytes)


def _command(argv: list[str]) -> click.Command | None:
    """The click command ``argv`` names (``eval depth`` -> the depth command), walking
    groups and skipping their own options (``--config FILE``)."""
    command: click.Command | None = cli
    tokens = iter(argv)
    for token in tokens:
        if not isinstance(command, click.Group):
            break
        if token.startswith("-"):
            option = next((p for p in command.params if token.split("=")[0] in p.opts), None)
            if isinstance(option, click.Option) and not option.is_flag and "=" not in token:
                next(tokens, None)  # the option's value
            continue
        command = command.get_command(click.Context(command), token)
    return command


def _sets_jobs(argv: list[str]) -> bool:
    return any(a in ("-j", "--jobs") or a.startswith(("--jobs=", "-j")) for a in argv)


def with_one_job(argv: list[str]) -> list[str]:
    """``argv`` + ``--jobs 1`` when its command takes ``--jobs`` and argv does not set it."""
    command = _command(argv)
    takes_jobs = command is not None and any("--jobs" in p.opts for p in command.params)
    return [*argv, "--jobs", "1"] if takes_jobs and not _sets_jobs(argv) else argv


@pytest.fixture
def rpx(monkeypatch: pytest.MonkeyPatch):
    """Invoke the CLI in-process: ``rpx("saliency-mb --pred-dir ...")`` or a list of args.

    Every report written to stdout or to ``-o``/``--out`` is parsed strictly and validated
    against its JSON Schema.

    Commands that take ``--jobs`` (``eval <task>``, ``saliency-mb``, ``coherence``,
    ``stability``: whichever click command declares the option) run with ``--jobs 1``
    unless the test passes ``--jobs``/``-j`` itself: the default, one worker per CPU,
    would start a process pool in every test. Tests about parallelism pass ``--jobs 2``
    (or more) explicitly.
    """
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)

    def invoke(args: str | list[str], **kwargs: Any) -> Run:
        argv = shlex.split(args) if isinstance(args, str) else [str(a) for a in args]
        argv = with_one_job(argv)
        outs = [Path(argv[i + 1]) for i, a in enumerate(argv[:-1]) if a in ("-o", "--out", "--out-json")
                and argv[0] != "report"]  # rpx report -o writes HTML
        before = {out: out.read_bytes() if out.is_file() else None for out in outs}
        runner = CliRunner()
        result = runner.invoke(cli, argv, catch_exceptions=False, **kwargs)
        run = Run(result.exit_code, result.stdout, result.stderr, result.stdout_bytes)
        if result.stdout_bytes.startswith(b"{") and '"schema"' in result.stdout and argv[0] != "schema":
            parse_report(result.stdout_bytes)
        for out in outs:  # every report this run wrote
            if out.is_file() and out.read_bytes() != before[out]:
                parse_report(out.read_bytes())
        return run

    return invoke
