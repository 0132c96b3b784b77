"""Everything human-facing goes through here: the one stderr console, progress, tables.

rich is imported on first use only (``rpx --version`` must stay fast), and machine JSON
never passes through rich (it wraps long strings and prints bare NaN).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

_stderr_console = None


def stderr_console():
    """The one rich console on stderr."""
    global _stderr_console
    from rich.console import Console

    if _stderr_console is None or _stderr_console.file is not sys.stderr:
        _stderr_console = Console(stderr=True, highlight=False)
    return _stderr_console


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressBar:
    """A rich progress bar with count, rate and ETA; a no-op when disabled."""

    def __init__(self, description: str, *, enabled: bool) -> None:
        self.description = description
        self.enabled = enabled
        self._progress = None
        self._task = None

    def start(self, total: int) -> Callable[[int], None] | None:
        if not self.enabled:
            return None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=stderr_console(),
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(self.description, total=total, rate="")
        progress, task = self._progress, self._task

        def advance(n: int) -> None:
            speed = progress.tasks[0].speed
            progress.update(task, advance=n, rate=f"{speed:,.1f} pairs/s" if speed else "")

        return advance

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def print_lines(lines: Sequence[str], *, style: str | None = None) -> None:
    """Plain lines on stderr (warnings, summaries), no markup interpretation."""
    if not lines:
        return  # rich is not even imported (~25 ms)
    from rpx_cli.errors import escaped

    console = stderr_console()
    for line in lines:  # file names that are not UTF-8 escaped (ls -b), one line each
        console.print(escaped(line), style=style, markup=False, highlight=False, soft_wrap=True)


def render_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                 stream=None) -> None:
    """A rich table on ``stream`` (stdout by default: the output of ``rpx show``)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_lines=False)
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*[str(cell) for cell in row])
    Console(file=stream or sys.stdout, highlight=False, soft_wrap=True).print(table)
