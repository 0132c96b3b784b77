"""Shared fixtures: one CLI runner that validates every report it sees.

Plain helpers (paths, file writers, report checks) are in helpers.py.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import parse_report

from rpx_cli.cli.main import cli


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


@pytest.fixture
def rpx(monkeypatch: pytest.MonkeyPatch):
    """Invoke the CLI in-process: ``rpx("saliency-mb --pred-dir ...")`` or a list of args.

    Every report written to stdout or to ``-o``/``--out`` is parsed strictly and validated
    against its JSON Schema.
    """
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)

    def invoke(args: str | list[str], **kwargs: Any) -> Run:
        argv = shlex.split(args) if isinstance(args, str) else [str(a) for a in args]
        outs = [Path(argv[i + 1]) for i, a in enumerate(argv[:-1]) if a in ("-o", "--out", "--out-json")]
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
