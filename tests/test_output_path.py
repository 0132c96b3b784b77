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
from rpx_cli.cli.options import check_output_path

DEPTH = FIXTURES / "depth" / "indoor"


def writing_commands() -> list[list[str]]:
    """Every command (eval subcommands included) whose ``-o/--out`` names the report it
    writes."""
    found = []

    def walk(group: click.Group, path: list[str]) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                walk(command, [*path, name])
            elif any("--out" in getattr(p, "opts", ()) and p.callback is check_output_path
                     for p in command.params):  # (rpx convert's -o is a folder it fills)
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

    import rpx_cli.io.atomic_files

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rpx_cli.io.atomic_files, "write_atomic", full)
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


# --- issue 31.3: an output never overwrites an input --------------------------------------------


def _copy_tree(source: Path, target: Path) -> Path:
    import shutil

    shutil.copytree(source, target)
    return target


def _unchanged(paths: list[Path]):
    before = {p: p.read_bytes() for p in paths}

    def check() -> None:
        for path, data in before.items():
            assert path.read_bytes() == data, f"{path} was overwritten"
    return check


def test_outputs_that_would_overwrite_an_input_are_refused_before_reading(
        rpx, tmp_path: Path, monkeypatch) -> None:
    import rpx_cli.run.state

    read = []
    monkeypatch.setattr(rpx_cli.run.state, "run_pairs", lambda *a, **k: read.append(1))
    shelf = _copy_tree(FIXTURES / "detection" / "shelf", tmp_path / "shelf")
    gt_file = next((shelf / "gt").glob("*.json"))
    coco = _copy_tree(FIXTURES / "detection" / "coco", tmp_path / "coco")
    check = _unchanged([gt_file, coco / "results.json", coco / "instances.json"])
    det = ["eval", "detection", "--pred-dir", str(shelf / "pred"), "--gt-dir", str(shelf / "gt")]
    cases = [
        ([*det, "-o", str(gt_file)], "-o/--out", "is an input of this command (in --gt-dir)"),
        ([*det, "--html", str(gt_file)], "--html", "is an input of this command (in --gt-dir)"),
        ([*det, "-o", str(shelf / "pred" / "report.json")], "-o/--out", "would be read as an input"),
        ([*det, "-o", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.json")], "--html",
         "is also -o/--out's file"),
        (["eval", "detection", "--coco-gt", str(coco / "instances.json"), "--coco-dt",
          str(coco / "results.json"), "-o", str(coco / "results.json")], "-o/--out",
         "is an input of this command (--coco-dt)"),
    ]
    for argv, flag, words in cases:
        run = rpx(argv)
        assert run.exit_code == 2, (argv, run.stderr)
        assert run.stdout == "" and run.stderr.startswith(f"rpx: {flag} "), run.stderr
        assert words in run.stderr, run.stderr
    assert read == []
    check()


def test_merge_report_compare_refuse_to_write_onto_what_they_read(rpx, tmp_path: Path) -> None:
    parts = [tmp_path / f"part{k}.json" for k in (1, 2)]
    for k, part in enumerate(parts, 1):
        assert rpx(["eval", "depth", *dirs(DEPTH).split(), "--shard", f"{k}/2", "-o",
                    str(part)]).exit_code == 0
    whole = tmp_path / "whole.json"
    assert rpx(["eval", "depth", *dirs(DEPTH).split(), "-o", str(whole)]).exit_code == 0
    check = _unchanged([*parts, whole])
    for argv in (["merge", *map(str, parts), "-o", str(parts[1])],
                 ["merge", str(tmp_path / "part*.json"), "-o", str(parts[0])],
                 ["report", str(whole), "-o", str(whole)],
                 ["compare", str(whole), str(parts[0]), "-o", str(whole)],
                 ["compare", str(whole), str(whole), "--html", str(whole)]):
        run = rpx(argv)
        assert run.exit_code == 2, (argv, run.stderr)
        assert "is an input of this command" in run.stderr and run.stdout == "", run.stderr
    check()
    # a symlink to an input is the input
    (tmp_path / "link.json").symlink_to(whole)
    run = rpx(["report", str(whole), "-o", str(tmp_path / "link.json")])
    assert run.exit_code == 2 and "is an input of this command" in run.stderr
    check()
