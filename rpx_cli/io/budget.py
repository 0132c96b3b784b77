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

_BUDGET: ContextVar[tuple[tuple[int, int], int, str] | None] = ContextVar("rpx_pixel_budget",
                                                                      default=None)


@contextlib.contextmanager
def pixel_budget(size: tuple[tuple[int, int], int] | None, gt_path: str) -> Iterator[None]:
    """Within: a map read may hold at most ``factor`` times the pixels of the ground truth's
    ``(H, W)`` (``size`` = ((H, W), factor); None: no budget); ``gt_path`` is named in the
    error."""
    token = _BUDGET.set(None if size is None else (size[0], size[1], gt_path))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def check_pixels(shape: Sequence[int], path: str, what: str = "") -> None:
    """An :class:`InputError` when a map of ``shape`` (H, W, ...) is larger than the budget."""
    given = _BUDGET.get()
    if given is None or len(shape) < 2:
        return
    (height, width), factor, gt_path = given
    if math.prod(shape[:2]) <= factor * height * width:
        return
    if factor == 1:
        raise InputError(f"{what}is {shape[1]}x{shape[0]}, its ground truth {gt_path} is "
                         f"{width}x{height}: a prediction map has its GT's size (checked before "
                         "it is decoded)", path=path)
    raise InputError(f"{what}is {shape[1]}x{shape[0]}: more than {factor} times the pixels of its "
                     f"ground truth {gt_path} ({width}x{height}; checked before it is decoded)",
                     path=path)
