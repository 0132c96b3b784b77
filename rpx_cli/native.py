"""Which path runs rpx's kernels: the native core or numpy.

The native core is one C extension, ``rpx_cli._native`` (sources in ``rpx_cli/csrc/``),
built by ``pip install`` with the system C compiler when there is one (``setup.py``:
``optional=True``, so a machine without a compiler still installs rpx). Each kernel has a
numpy twin named ``reference_*`` beside its call site; the numpy path runs when the
extension is absent, was built for another ABI, or ``RPX_NATIVE=0`` is set (read on every
call: a test, or a worker process, may set it). Both paths give the same numbers, which the
suite checks by running twice (``RPX_NATIVE=0``). ``rpx --version`` and
``run_provenance.environment.kernels`` say which path ran.

Importing this module imports neither numpy nor the extension (``rpx --version`` uses it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import Future

ABI = 7
"""The kernels' signatures this Python code expects (the extension's ``ABI`` constant)."""

_THREADS: ContextVar[int] = ContextVar("rpx_native_threads", default=1)

_loaded: ModuleType | None = None
_missing: str | None = None  # why the extension cannot be used, once an import was tried


def _load() -> ModuleType | None:
    global _loaded, _missing
    if _loaded is None and _missing is None:
        try:
            from rpx_cli import _native
        except ImportError:
            _missing = "not built"
            return None
        except ValueError as exc:  # RPX_NATIVE_ISA names no copy the module has
            _missing = f"not loaded: {exc}"
            return None
        if getattr(_native, "ABI", None) != ABI:
            _missing = f"built for ABI {getattr(_native, 'ABI', '?')}, not {ABI}: reinstall rpx"
            return None
        _loaded = _native
    return _loaded


def disabled() -> bool:
    """``RPX_NATIVE=0`` (or ``false``/``no``/``off``) is set."""
    return os.environ.get("RPX_NATIVE", "").strip().lower() in ("0", "false", "no", "off")


def core() -> ModuleType | None:
    """The native module, or None when the numpy path runs."""
    if disabled():
        return None
    return _load()


def kernels() -> str:
    """``"native"`` or ``"numpy"``: the path this process's kernels take."""
    return "native" if core() is not None else "numpy"


def describe() -> str:
    """One phrase for ``rpx --version`` and provenance: ``native``, ``numpy (RPX_NATIVE=0)``
    or ``numpy (native core not built ...)``."""
    if disabled():
        return "numpy (RPX_NATIVE=0)"
    if _load() is not None:
        return "native"
    return f"numpy (native core {_missing})"


def threads() -> int:
    """How many threads a kernel that splits its work (by image or category: the numbers
    never depend on it) may run: 1 unless a run lent it more with :func:`lend_threads`."""
    return _THREADS.get()


@contextmanager
def lend_threads(n: int) -> Iterator[None]:
    """Let the kernels called within the block (in this thread) use ``n`` threads: a run
    lends its ``--jobs`` (the CPUs it may take)."""
    token = _THREADS.set(max(1, int(n)))
    try:
        yield
    finally:
        _THREADS.reset(token)


def started(call: Callable[..., Any], *args: Any, name: str) -> Future:
    """``call(*args)`` running in a daemon thread named ``name``: its
    :class:`~concurrent.futures.Future`, whose ``result()`` gives the value or raises the
    call's exception there — where the caller would have raised it had it made the call
    itself. For a kernel (the GIL released throughout) that may run while this thread has
    Python work of its own; a kernel's ``threads`` argument is the caller's to give
    (:func:`threads` reads this thread's lending, not the new one's)."""
    from concurrent.futures import Future

    future: Future = Future()
    future.set_running_or_notify_cancel()

    def run() -> None:
        try:
            future.set_result(call(*args))
        except BaseException as exc:  # (raised by result(), in the caller's thread)
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True, name=name).start()
    return future
