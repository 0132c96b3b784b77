"""The task registry: a plain dict filled by a decorator.

Built-in tasks register on import of :mod:`rpx_cli.tasks`; third-party tasks come in
through the same door (entry-point group ``rpx.calculators.v1``).
"""

from __future__ import annotations

from typing import TypeVar

from rpx_cli.tasks.base import Task

TASKS: dict[str, Task] = {}

T = TypeVar("T", bound=type[Task])


def register_task(cls: T) -> T:
    """Class decorator: instantiate and register a task under ``cls.name``."""
    TASKS[cls.name] = cls()
    return cls


def get_task(name: str) -> Task:
    from rpx_cli import tasks  # noqa: F401  (registers the built-ins)

    try:
        return TASKS[name]
    except KeyError:
        known = ", ".join(sorted(TASKS))
        raise KeyError(f"unknown task '{name}' (known: {known})") from None
