"""``-o``/``--out`` is checked before any work, in one place, for every command that writes
a report: an unusable path is one line on stderr and exit 2 (a usage error), never an
internal error after the whole run."""

from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from helpers import FIXTURES, dirs

from rpx_cli.cli.main import cli

DEPTH = FIXTURES / "depth" / "indoor"


def writing_commands() -> list[list[str]]:
    """Every command (eval subcommands included) that has an ``-o/--out`` option."""
    found = []

    def walk(group: click.Group, path: list[str]) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                walk(command, [*path, name])
            elif any("--out" in getattr(p, "opts", ()) for p in command.params):
                found.append([*path, name])

    walk(cli, [])
    return found


def assert_usage_line(run, *words: str) -> None:
    assert run.exit_code == 2, (run.exit_code, run.stderr)
    assert run.stdout == "" and "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("rpx: -o/--out "), run.stderr
    for word in words:
        assert word in run.stderr, run.stderr


def test_every_command_that_writes_a_report_checks_its_output_path_first(rpx, tmp_path: Path) -> None:
    """``-o FOLDER`` is refused before anything else is looked at (here: not even the
    missing required options)."""
    commands = writing_commands()
    assert {"merge", "compare", "readiness", "stability", "coherence", "saliency-mb"} <= \
        {c[-1] for c in commands} and ["eval", "depth"] in commands
    for command in commands:
        name = "report.html" if command == ["report"] else "report.json"
        assert_usage_line(rpx([*command, "-o", tmp_path]), "is a folder", str(tmp_path / name))


@pytest.mark.parametrize("case", ["folder", "empty", "under-a-file", "trailing-slash"])
def test_unusable_output_path_is_one_line_and_nothing_runs(rpx, tmp_path: Path, monkeypatch,
                                                           case: str) -> None:
    import rpx_cli.run.state

    def never(*args, **kwargs):
        raise AssertionError("the evaluation ran")

    monkeypatch.setattr(rpx_cli.run.state, "run_pairs", never)
    (tmp_path / "a-file").write_text("x")
    out, words = {
        "folder": (str(tmp_path), ("is a folder",)),
        "empty": ("", ("the path is empty", "'-' for stdout")),
        "under-a-file": (str(tmp_path / "a-file" / "r.json"), ("is a file, not a folder",)),
        "trailing-slash": (str(tmp_path / "new") + "/", ("names a folder",)),
    }[case]
    assert_usage_line(rpx(["eval", "depth", *dirs(DEPTH).split(), "-o", out]), *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_read_only_folder(rpx, tmp_path: Path, monkeypatch) -> None:
    """(os.access is patched: the suite may run as root, who writes anywhere.)"""
    import rpx_cli.cli.options as options

    real = os.access
    monkeypatch.setattr(options.os, "access",
                        lambda path, mode, **kw: False if str(path) == str(tmp_path) else real(path, mode))
    assert_usage_line(rpx(f"eval depth {dirs(DEPTH)} -o {tmp_path / 'r.json'}"),
                      f"folder {tmp_path} is not writable")


def test_missing_folders_are_created_and_special_files_written(rpx, tmp_path: Path) -> None:
    out = tmp_path / "new" / "deeper" / "r.json"
    assert rpx(f"eval depth {dirs(DEPTH)} -o {out}").exit_code == 0 and out.is_file()
    assert rpx(f"eval depth {dirs(DEPTH)} -o {os.devnull}").exit_code == 0
    assert rpx(f"eval depth {dirs(DEPTH)} -o -").stdout.startswith("{")


def test_a_write_that_fails_anyway_is_one_line(rpx, tmp_path: Path, monkeypatch) -> None:
    import errno

    import rpx_cli.report.serialize

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rpx_cli.report.serialize, "write_atomic", full)
    out = tmp_path / "r.json"
    run = rpx(f"eval depth {dirs(DEPTH)} -o {out}")
    assert run.exit_code == 1 and "internal error" not in run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last == f"rpx: {out}: cannot write the report: No space left on device"


@pytest.mark.parametrize("out", ["/proc/rpx-report.json", "/sys/rpx-report.json"])
def test_a_folder_that_refuses_files_whatever_access_says_is_a_usage_error(rpx, monkeypatch,
                                                                           out: str) -> None:
    """/proc and /sys pass os.access (as root, or by their permission bits) but refuse a new
    file: exit 2 before reading, not 1 after evaluating (issue 30)."""
    if not os.path.isdir(os.path.dirname(out)):
        pytest.skip(f"no {os.path.dirname(out)} here")
    import rpx_cli.run.state

    def never(*args, **kwargs):
        raise AssertionError("the evaluation ran")

    monkeypatch.setattr(rpx_cli.run.state, "run_pairs", never)
    run = rpx(f"eval depth {dirs(DEPTH)} -o {out}")
    assert_usage_line(run, f"cannot be written in {os.path.dirname(out)}")


def test_the_probe_leaves_nothing_behind(rpx, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert rpx(f"eval depth {dirs(DEPTH)} -o {out}").exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
