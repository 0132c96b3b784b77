"""How a reader runs the independent pieces of one large input (the parts of a COCO
results file, :mod:`rpx_cli.io.coco_files`): in this process by default; the run pipeline
lends the engine's worker processes for the length of a read (``rpx_cli.run.files``), so
the pieces are parsed side by side while this process reads the next file.

The readers stay free of processes: they hand :func:`run_pieces` a function and its items
and read the results in order."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

Runner = Callable[[Callable[[Any], Any], Sequence[Any]], Iterator[Any]]

_RUNNER: ContextVar[Runner | None] = ContextVar("rpx_pieces_runner", default=None)


def run_pieces(fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
    """``fn(item)`` for every item, results in order: by the lent runner (which may start
    them at once, elsewhere), else here, lazily, as the iterator is read."""
    runner = _RUNNER.get()
    return map(fn, items) if runner is None else runner(fn, items)


def elsewhere() -> bool:
    """Whether the pieces run elsewhere (a runner is lent), and start as they are handed."""
    return _RUNNER.get() is not None


@contextlib.contextmanager
def lent(runner: Runner | None) -> Iterator[None]:
    """Run the pieces read within the block by ``runner`` (None: in this process, lazily).
    A runner is lent only when it runs them elsewhere, at once."""
    token = _RUNNER.set(runner)
    try:
        yield
    finally:
        _RUNNER.reset(token)
