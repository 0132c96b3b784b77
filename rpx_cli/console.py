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
    """A rich progress bar with count, rate and ETA (``enabled``, on a terminal); else, with
    ``plain`` (a CI log), a plain line on stderr every 10 % or 30 s once the run has taken
    ``after`` seconds (a short run prints nothing but its summary); else nothing."""

    def __init__(self, description: str, *, enabled: bool, plain: bool = False,
                 clock: Callable[[], float] | None = None, after: float = 5.0) -> None:
        self.description = description
        self.enabled = enabled
        self.plain = plain and not enabled
        self.clock = clock
        self.after = after
        self._progress = None
        self._task = None

    def start(self, total: int) -> Callable[[int], None] | None:
        if not self.enabled:
            return self._plain(total) if self.plain and total else None
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

    def _plain(self, total: int) -> Callable[[int], None]:
        import time

        clock = self.clock or time.monotonic
        start = clock()
        state = {"done": 0, "step": 0, "last": start}

        def advance(n: int) -> None:
            state["done"] += n
            now = clock()
            step = state["done"] * 10 // total  # tenths completed
            if now - start < self.after:
                state["step"] = step
                return
            if step > state["step"] or now - state["last"] >= 30.0 or state["done"] == total:
                state["step"], state["last"] = step, now
                elapsed = now - start
                rate = state["done"] / elapsed if elapsed > 0 else 0.0
                left = (total - state["done"]) / rate if rate > 0 else 0.0
                print_lines([f"{self.description}: {state['done']}/{total} "
                             f"({100 * state['done'] // total}%), {rate:,.1f}/s, "
                             f"{elapsed:.0f} s elapsed, ~{left:.0f} s left"])

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
    """A rich table on ``stream`` (stdout by default: the output of ``rpx show``).

    Off a terminal (a pipe, a CI log) the table is as wide as its content, so no metric name
    is cut at 80 columns; on a terminal a long name folds onto the next line, never "…".
    A reader that goes away (``| head``) surfaces as ``BrokenPipeError`` (rich would exit 1)."""
    from rich.console import Console
    from rich.table import Table

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

    stream = stream or sys.stdout
    table = Table(title=title, title_justify="left", show_lines=False)
    cells = [[str(cell) for cell in row] for row in rows]
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right",
                         overflow="fold", no_wrap=index == 0)
    for row in cells:
        table.add_row(*row)
    width = None
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if not terminal:
        widths = [max([len(str(c)) for c in (column, *(row[i] for row in cells if i < len(row)))])
                  for i, column in enumerate(columns)]
        width = max(80, sum(widths) + 3 * len(columns) + 1, len(title))
    _Console(file=stream, highlight=False, soft_wrap=True, width=width).print(table)
