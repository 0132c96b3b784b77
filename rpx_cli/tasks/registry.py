"""The task registry: a plain dict filled by a decorator.

Built-in tasks are the modules of :mod:`rpx_cli.tasks` (each registers itself on import;
:func:`load_builtin_tasks` imports them all, :func:`find_task` only the one it is asked for);
third-party tasks come in through the same door, a module that calls :func:`register_task`
(loaded from the entry-point group ``rpx.calculators.v1``, or imported by the user). The
CLI's ``rpx eval`` subcommands, the JSON Schemas, ``rpx metrics`` and the golden tests are
generated from this dict.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TypeVar

from rpx_cli.tasks.base import Task

TASKS: dict[str, Task] = {}
# modules of rpx_cli.tasks that hold the protocol, not a task
_NOT_TASKS = {"base", "stats", "registry", "calculators"}
_PACKAGE = "rpx_cli.tasks"
_loaded = False

T = TypeVar("T", bound=type[Task])


def register_task(cls: T) -> T:
    """Class decorator: instantiate and register a task under ``cls.name``."""
    existing = TASKS.get(cls.name)
    if existing is not None and type(existing).__qualname__ != cls.__qualname__:
        raise ValueError(f"task {cls.name!r} is registered twice ({type(existing).__module__} "
                         f"and {cls.__module__})")
    TASKS[cls.name] = cls()
    return cls


def load_builtin_tasks() -> None:
    """Import every task module of the package (each registers itself), once."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    package = importlib.import_module(_PACKAGE)
    for module in pkgutil.iter_modules(package.__path__):
        if module.name not in _NOT_TASKS:
            importlib.import_module(f"{_PACKAGE}.{module.name}")


def builtin_tasks() -> dict[str, Task]:
    """The tasks defined in rpx itself (for the committed schemas), sorted by name."""
    load_builtin_tasks()
    return {name: TASKS[name] for name in sorted(TASKS)
            if type(TASKS[name]).__module__.startswith(_PACKAGE + ".")}


def find_task(name: str) -> Task | None:
    """The task registered as ``name``, importing as little as it can: a built-in task
    lives in the module named like it (``saliency-mb`` in ``saliency_mb``), so ``rpx eval
    depth`` imports the depth module (and what it imports) rather than every task (~0.2 s
    of start-up). Anything else loads every built-in task first. None when unknown."""
    task = TASKS.get(name)
    module = name.replace("-", "_")
    if task is None and not _loaded and module.isidentifier() and module not in _NOT_TASKS:
        try:
            importlib.import_module(f"{_PACKAGE}.{module}")
        except ModuleNotFoundError as exc:  # not a built-in module's name: look everywhere
            if exc.name != f"{_PACKAGE}.{module}":
                raise
        task = TASKS.get(name)
    if task is None:
        load_builtin_tasks()
        task = TASKS.get(name)
    return task


def get_task(name: str) -> Task:
    task = find_task(name)  # every built-in task is loaded when it returns None
    if task is None:
        known = ", ".join(sorted(TASKS))
        raise KeyError(f"unknown task '{name}' (known: {known})") from None
    return task
