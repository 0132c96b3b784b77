"""Every ``--help`` shows examples that run as written from the repository root on the
committed fixtures, and every ``rpx eval`` task documents its input formats.

The tests walk the command tree, so a task or command added later is covered from its
registration: one without a runnable example fails here."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from helpers import ROOT, run_shell_line, shell_commands

from rpx_cli.cli.main import cli
from rpx_cli.tasks import TASKS

EXAMPLES_HEADING = re.compile(r"^\s*Examples?\b[^:]*:\s*$")


def command_paths() -> list[list[str]]:
    """``[]`` (rpx itself), every command, every subcommand of a group (``eval depth``)."""
    paths: list[list[str]] = []

    def walk(command: click.Command, path: list[str]) -> None:
        paths.append(path)
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*path, name])

    walk(cli, [])
    return paths


def help_examples(help_text: str) -> list[str]:
    """The command lines under every "Example(s):" heading of a --help text."""
    blocks, current = [], None
    for line in help_text.splitlines():
        if EXAMPLES_HEADING.match(line):
            current = []
            blocks.append(current)
        elif current is not None and line.strip():
            current.append(line)
        else:
            current = None
    return [command for block in blocks for command in shell_commands("\n".join(block))]


def test_help_examples_parses_headings_and_continuations() -> None:
    text = ("Usage: x\n\n  Examples (from the root):\n    rpx a \\\n        --b c | jq .d\n"
            "    jq .e f.json   # a comment\n\nOptions:\n  --x  rpx not an example\n")
    assert help_examples(text) == ["rpx a --b c | jq .d", "jq .e f.json"]


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "rpx")
def test_every_help_example_runs_on_the_fixtures(rpx, path: list[str], tmp_path: Path,
                                                 monkeypatch) -> None:
    """Run from a folder that looks like the repository root (its files linked), so the
    reports an example writes land in a temporary folder."""
    for entry in ROOT.iterdir():
        if not entry.name.startswith("."):
            (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    shown = rpx([*path, "--help"])
    assert shown.exit_code == 0
    # help text is not %-formatted: a doubled %% is printed as written ("a 95%% interval")
    assert "%%" not in shown.stdout, [line for line in shown.stdout.splitlines() if "%%" in line]
    lines = help_examples(shown.stdout)
    ran = [result for line in lines for result in run_shell_line(rpx, line, tmp_path)]
    assert any(command.startswith("rpx ") for command, _ in ran), \
        f"rpx {' '.join(path)} --help shows no example that runs rpx"
    failed = [(command, code) for command, code in ran if code != 0]
    assert not failed, failed


@pytest.mark.parametrize("name", sorted(n for n, t in TASKS.items() if t.kind == "eval"))
def test_every_eval_task_documents_its_input_formats(rpx, name: str) -> None:
    task = TASKS[name]
    assert task.formats.strip(), f"{name} declares no formats"
    shown = rpx(["eval", name, "--help"]).stdout
    assert "Input formats:" in shown
    for line in task.formats.strip().splitlines():
        assert line.rstrip() in shown, line
        assert len(line) <= 96, f"{name}: a formats line longer than 96 characters: {line}"
