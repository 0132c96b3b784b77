"""Shared fixtures: one CLI runner that validates every report it sees, and mask writers."""

from __future__ import annotations

import json
import math
import os
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import example_task  # noqa: F401  (registers the test-only task "cer")
import numpy as np
import pytest
from click.testing import CliRunner

from rpx_cli.cli.main import cli
from rpx_cli.report.schemas import detect_kind, validation_errors

# the digest cache of every run in the suite: a fresh folder, never the user's
os.environ["RPX_DIGEST_CACHE"] = tempfile.mkdtemp(prefix="rpx-test-digests-")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# golden cases: the product's fixtures, and those of tasks defined only in the test suite
FIXTURE_ROOTS = (FIXTURES, ROOT / "tests" / "fixtures")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="Rewrite fixtures/*/*/expected.json from the current output (review the diff).")


def assert_finite(value: Any, path: str = "$") -> None:
    """No NaN or infinity anywhere in a parsed report."""
    if isinstance(value, dict):
        for key, item in value.items():
            assert_finite(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            assert_finite(item, f"{path}[{index}]")
    elif isinstance(value, float):
        assert math.isfinite(value), f"non-finite number at {path}"


def parse_report(text: str | bytes) -> dict[str, Any]:
    """Parse strictly (NaN/Infinity tokens are rejected) and validate against the schema."""
    def refuse(token: str) -> None:
        raise AssertionError(f"report contains the non-JSON token {token}")

    report = json.loads(text, parse_constant=refuse)
    assert_finite(report)
    problems = validation_errors(report, detect_kind(report))
    assert not problems, "report does not match its schema:\n" + "\n".join(problems)
    return report


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


def write_pgm(path: Path, array: np.ndarray, maxval: int | None = None, *, ascii: bool = False,
              header: str | None = None) -> Path:
    """Write a PGM; 16-bit samples big-endian as the format requires."""
    path.parent.mkdir(parents=True, exist_ok=True)
    height, width = array.shape
    maxval = maxval if maxval is not None else (255 if array.dtype == np.uint8 else 65535)
    head = header if header is not None else f"P{'2' if ascii else '5'}\n{width} {height}\n{maxval}\n"
    if ascii:
        body = "\n".join(" ".join(str(int(v)) for v in row) for row in array) + "\n"
        path.write_bytes(head.encode() + body.encode())
    else:
        dtype = np.uint8 if maxval < 256 else np.dtype(">u2")
        path.write_bytes(head.encode() + array.astype(dtype).tobytes())
    return path


def write_png(path: Path, array: np.ndarray) -> Path:
    import imageio.v3 as iio

    path.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(path, array)
    return path


def write_npy(path: Path, array: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, array)
    return path


def assert_jobs_and_shards_agree(rpx, command: str, tmp_path: Path, *, shards: int = 3) -> None:
    """``command`` (an ``rpx eval ...`` line) gives the same numbers with --jobs 1, --jobs 2
    and as --shard parts merged with ``rpx merge``."""
    one = rpx(f"{command} --jobs 1").json
    two = rpx(f"{command} --jobs 2").json
    parts = []
    for k in range(1, shards + 1):
        out = tmp_path / f"part{k}.json"
        assert rpx(f"{command} --shard {k}/{shards} -o {out}").exit_code == 0
        parts.append(str(out))
    merged_path = tmp_path / "merged.json"
    assert rpx(["merge", *parts, "-o", str(merged_path)]).exit_code == 0
    merged = json.loads(merged_path.read_text())
    for report in (two, merged):
        for key in ("aggregate", "dataset", "rows", "params", "metric_info"):
            assert report[key] == one[key], key
