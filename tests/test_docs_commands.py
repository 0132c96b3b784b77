"""Every command shown in README.md and docs/*.md runs on the committed fixtures.

Each ```sh block of a page is run in order, from a folder that looks like the repository
root (its entries linked), so files a block writes land in a temporary folder and later
lines of the page can read them. A command exits 0 — or 3 where the block's comment says
a gate fails (``# exit 3``). Illustrative snippets that are not commands go in ```text or
```console blocks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ROOT, run_shell_line, shell_commands

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text())


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shell_command_in_the_docs_runs(rpx, page: Path, tmp_path: Path, monkeypatch) -> None:
    for entry in ROOT.iterdir():
        if not entry.name.startswith("."):
            (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    failed = []
    for block in blocks(page):
        for line in shell_commands(block):
            assignment = re.fullmatch(r"([A-Z_]+)=(\S+)", line)
            if assignment:  # F=fixtures/...: later lines use $F
                monkeypatch.setenv(*assignment.groups())
                continue
            if line.startswith(("python", ".venv/bin/pip", "pip ", "pipx ", "python3 ")):
                continue  # set-up lines: the README's two commands are run by CI itself
            line = re.sub(r"^\.venv/bin/", "", line).replace("&& .venv/bin/rpx", "&& rpx")
            expected = 3 if "exit 3" in block.split(line, 1)[-1].split("\n", 1)[0] else 0
            for command, code in run_shell_line(rpx, line, tmp_path):
                if command.startswith("rpx") and code != expected:
                    failed.append((command, code))
    assert not failed, failed
