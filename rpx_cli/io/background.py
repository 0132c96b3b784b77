"""Work started in a thread now and collected later: :func:`started` runs a call in a daemon
thread and returns its :class:`~concurrent.futures.Future`; ``result()`` gives the value, or
raises the call's exception there — where the caller would have raised it had it made the
call itself. Worth it where the call spends its time in the native core (the GIL released)
while this thread has Python work of its own (a COCO GT's masks rasterised while the results'
RLE dicts are built)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


def started(call: Callable[..., Any], *args: Any, name: str) -> Future:
    """``call(*args)`` running in a thread named ``name``."""
    future: Future = Future()
    future.set_running_or_notify_cancel()

    def run() -> None:
        try:
            future.set_result(call(*args))
        except BaseException as exc:  # (raised by result(), in the caller's thread)
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True, name=name).start()
    return future
