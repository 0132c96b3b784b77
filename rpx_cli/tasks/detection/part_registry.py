"""The registry of one kind of detection part (``parts.KINDS``, ``parts.PROTOCOLS``,
``parts.FORMATS``): every part listed by name before any is imported, a part's module
imported when a run first asks for it."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar

P = TypeVar("P")
PACKAGE = "rpx_cli.tasks.detection"


class Registry(Mapping[str, P]):
    """One folder's parts by name: the names (in rank order) known before any is imported,
    a part's module imported the first time the part is asked for (it registers itself:
    ``parts.register_kind``, …). ``in``, ``len`` and iterating the names import nothing;
    ``values()`` and ``items()`` import each part as they reach it."""

    def __init__(self, folder: str, names: Iterable[str]) -> None:
        self.folder, self.names = folder, tuple(names)
        self.parts: dict[str, P] = {}

    def __getitem__(self, name: str) -> P:
        part = self.parts.get(name)
        if part is None:
            if name not in self.names:
                raise KeyError(name)
            importlib.import_module(f"{PACKAGE}.{self.folder}.{name}")
            part = self.parts[name]
        return part

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def add(self, cls: type) -> None:
        """Register an instance of ``cls`` under its ``name``, which the registry must list."""
        if cls.name not in self.names:
            raise ValueError(f"{cls.__module__}: {self.folder} part {cls.name!r} is not listed in "
                             "rpx_cli/tasks/detection/parts.py (KIND_CHOICES, PROTOCOL_SECTIONS, "
                             "FORMAT_NAMES)")
        existing = self.parts.get(cls.name)
        if existing is not None and type(existing).__qualname__ != cls.__qualname__:
            raise ValueError(f"{cls.name!r} is registered twice ({type(existing).__module__} and "
                             f"{cls.__module__})")
        self.parts[cls.name] = cls()
