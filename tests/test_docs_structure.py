"""README.md and docs/*.md render as written (issue 30, first-hour papercuts): every row of a
Markdown table has its table's column count (a `|` inside a code span breaks a row), and
every relative link — to a file, a folder or a heading — resolves from the page that holds
it (docs/ci.md once linked examples/ relative to docs/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def prose(page: Path) -> str:
    """The page without its fenced code blocks (blank lines keep the line numbers)."""
    return FENCE.sub(lambda m: "\n" * m.group().count("\n"), page.read_text())


def cells(line: str) -> int:
    """The cells of a table row: split on `|` not escaped with a backslash (GFM splits on
    them inside code spans too)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return len(re.split(r"(?<!\\)\|", body))


def tables(text: str) -> list[list[tuple[int, str]]]:
    """Each table as its (line number, line) rows, from the header to the last line that
    continues it (a table ends at the first line that is not a row)."""
    lines = text.splitlines()
    found, k = [], 0
    while k + 1 < len(lines):
        if lines[k].lstrip().startswith("|") and re.match(r"^\s*\|?\s*:?-{3,}", lines[k + 1]):
            rows = [(k + 1, lines[k])]
            k += 1
            while k < len(lines) and lines[k].strip():
                rows.append((k + 1, lines[k]))
                k += 1
            found.append(rows)
        k += 1
    return found


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_table_row_has_the_tables_column_count(page: Path) -> None:
    for rows in tables(prose(page)):
        width = cells(rows[0][1])
        for number, line in rows:
            where = f"{page.name}:{number}"
            assert line.lstrip().startswith("|"), f"{where}: a table row must start with |: {line!r}"
            assert cells(line) == width, f"{where}: {cells(line)} cells, the header has {width}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    for match in LINK.finditer(prose(page)):
        target = match.group(1) or match.group(2)
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name}: link {target!r} -> {file} does not exist"
        if anchor and file.suffix == ".md":
            headings = [slug(h) for h in re.findall(r"^#+ (.+)$", prose(file), re.M)]
            assert anchor in headings, f"{page.name}: link {target!r}: no heading #{anchor} in {file.name}"


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    broken = "| a | b |\n|---|---|\n| `x | y` | z |\n"
    [rows] = tables(broken)
    assert [cells(line) for _, line in rows] == [2, 2, 3]
    page = tmp_path / "docs" / "p.md"
    page.parent.mkdir()
    page.write_text("[x](examples/y.yml)")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "y.yml").write_text("")
    target = LINK.search(prose(page)).group(1)
    assert not (page.parent / target).exists() and (page.parent / ".." / target).exists()


def test_no_page_installs_a_tag_that_does_not_exist() -> None:
    """The documented install named ``@v0.1.0``, a tag the repository never had: pip failed
    on the first command a new user copied. A tag may be named once it exists."""
    import subprocess

    done = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True)
    tags = set(done.stdout.split()) if done.returncode == 0 else set()
    pages = [*PAGES, *sorted((ROOT / "examples").glob("*"))]
    for page in pages:
        for tag in re.findall(r"git\+https://\S+?@(v[0-9][\w.]*)", page.read_text()):
            assert tag in tags, f"{page.name} installs @{tag}, which is not a tag of the repository"


def test_the_exit_codes_are_one_table() -> None:
    """Two tables drifted apart (the README listed 129/130/143, docs/usage.md only 130): the
    README holds the one table, every code rpx exits with is in it, other pages link to it."""
    from rpx_cli.errors import ExitStatus

    holding = [page for page in PAGES
               if re.search(r"^\| code \| meaning \|$", prose(page), re.M)]
    assert holding == [ROOT / "README.md"]
    table = prose(ROOT / "README.md").split("| code | meaning |", 1)[1].split("\n\n", 1)[0]
    codes = {int(code) for code in re.findall(r"^\| (\d+) \|", table, re.M)}
    assert codes == {int(status) for status in ExitStatus}


def test_the_readmes_commands_write_under_an_ignored_folder() -> None:
    """A first run of the README must not litter the checkout: every report its commands
    write (``-o``, ``--html``, ``>``) goes under ``runs/``, which .gitignore lists."""
    text = (ROOT / "README.md").read_text()
    commands = "\n".join(re.findall(r"```sh\n(.*?)```", text, re.S))
    outputs = re.findall(r"(?:\s-o|\s--html|\s>>?)\s+(\S+)", commands)
    assert outputs
    assert [path for path in outputs if path != "-" and not path.startswith("runs/")] == []
    assert "runs/" in (ROOT / ".gitignore").read_text().split()


def test_every_extra_is_in_the_install_table_and_the_readme() -> None:
    """The README's table had no word of the [geometry] extra that polygons need."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    install = prose(ROOT / "docs" / "install.md")
    readme = prose(ROOT / "README.md")
    for extra in sorted(set(extras) - {"test"}):
        assert re.search(rf"^\| `rpx-eval\[{extra}\]` \|", install, re.M), extra
        assert f"rpx-eval[{extra}]" in readme, extra


# --- flags named with a command exist on it (issue 38: `rpx report --images-dir`) -----------

CODE_SPAN = re.compile(r"`([^`]+)`")


def _flags_of(words: list[str]) -> set[str] | None:
    """The long flags of the command ``words`` names (``["eval"]``: any eval task's)."""
    import click

    from rpx_cli.cli.main import cli

    command: click.Command = cli
    for word in words:
        if not isinstance(command, click.Group) or word not in command.list_commands(None):
            break
        command = command.get_command(None, word)
    commands = [command]
    if isinstance(command, click.Group):  # `rpx eval --images-dir`: a flag of one of its tasks
        commands = [command.get_command(None, name) for name in command.list_commands(None)]
    return {"--help"} | {opt for c in commands for p in c.params for opt in (*p.opts, *p.secondary_opts)}


def test_a_flag_named_with_a_command_is_one_of_its_flags() -> None:
    """A code span ``rpx CMD ... --flag`` names a flag CMD has, and a clause (up to the next
    `;`) of the README that offers ``rpx report`` names no flag ``rpx report`` lacks — the README once
    offered ``rpx report`` "with ``--images-dir DIR``", a flag of ``rpx eval`` only. ``--html``
    is the other commands' way to the same page."""
    wrong = []
    for page in PAGES:
        text = prose(page)
        for span in CODE_SPAN.findall(text):
            words = span.split()
            if len(words) > 2 and words[0] == "rpx" and any(w.startswith("--") for w in words):
                known = _flags_of([w for w in words[1:3] if not w.startswith("-")])
                wrong += [f"{page.name}: {span}" for w in words
                          if w.startswith("--") and w.split("=")[0] not in known]
        offers = re.findall(r"`rpx report`(?:[^;.]|\.\S)*", text) if page.name == "README.md" else []
        for clause in offers:  # the README's quick-start clauses
            known = _flags_of(["report"]) | {"--html"}
            wrong += [f"{page.name}: rpx report ... {flag}" for span in CODE_SPAN.findall(clause)
                      for flag in span.split()[:1] if flag.startswith("--") and flag not in known]
    assert not wrong, wrong
