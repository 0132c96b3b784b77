"""How large a prediction may be, known before it is decoded (issue 31.9).

The engine reads a pair's ground truth first; a task that knows from it how many pixels
its prediction can have (a depth map the GT's size, or a few times it under
``--resize-pred``) says so (:meth:`rpx_cli.tasks.base.Task.prediction_pixels`), and the
prediction is read inside :func:`pixel_budget`. The decoders that inflate (``.npz``
members, PNG/JPEG/TIFF) compare the size their header declares with the budget first: a
2 MB ``.npz`` whose member claims 16384 x 16384 is refused before 1 GB is allocated."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

from rpx_cli.errors import InputError

_BUDGET: ContextVar[int | None] = ContextVar("rpx_pixel_budget", default=None)


@contextlib.contextmanager
def pixel_budget(pixels: int | None) -> Iterator[None]:
    """Within: a map read may hold at most ``pixels`` pixels (None: no budget)."""
    token = _BUDGET.set(pixels)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def check_pixels(shape: Sequence[int], path: str, what: str = "") -> None:
    """An :class:`InputError` when a map of ``shape`` (H, W, ...) is larger than the budget."""
    budget = _BUDGET.get()
    if budget is None or len(shape) < 2:
        return
    pixels = math.prod(shape[:2])
    if pixels > budget:
        raise InputError(f"{what}is {shape[1]}x{shape[0]}: more pixels than its ground truth "
                         f"allows ({budget:,}; checked before it is decoded)", path=path)
