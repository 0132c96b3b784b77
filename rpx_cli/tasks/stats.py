"""Per-pair sufficient statistics, declared by name.

A task declares what it keeps for every evaluated pair (TrackEval's ``summed_fields``,
torchmetrics' ``add_state``) as a tuple of :class:`Stat`; its ``evaluate`` hands the values
over by name; the engine collects them into a :class:`StatTable` (one column per statistic,
rows in stem order) and the task's ``summarize`` reads the columns by name. Because a table
can be sliced, concatenated and written to JSON exactly, ``--shard`` parts, ``rpx merge``
and any other way of splitting a run rebuild the single-run numbers bit for bit.

Three kinds of statistic:

- **numbers** (the default): ``width`` floats per pair (a scalar column for width 1, an
  ``(n, width)`` block otherwise), kept in float64. ``None`` means undefined and is stored
  as NaN, written as ``null`` (no placeholder values).
- **objects** (``encode``/``decode`` given): one Python object per pair, e.g. a sparse
  confusion matrix or the boxes of an image, with how to write it to JSON and read it back.
  A column of objects is a list, or a sequence type with a ``take(order)`` method (the
  detection task's flat :class:`~rpx_cli.io.box_table.FrameTable`).
- **folded objects** (``merge`` given too, torchmetrics' ``dist_reduce_fx="sum"``): the
  pairs' objects are combined as they arrive into ONE value for the whole table (None
  while the table is empty), so memory does not grow with the number of pairs. ``merge(a,
  b)`` returns the combination without changing either argument and must be exact,
  associative and commutative (integer sums: a confusion matrix), so any split into
  ``--shard`` parts and any order give the same value. A folded statistic cannot be
  sliced to a subset of the pairs, only reordered.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Stat:
    """One statistic a task keeps per pair."""

    name: str
    width: int = 1
    encode: Callable[[Any], Any] | None = None  # object -> JSON (objects only)
    decode: Callable[[Any], Any] | None = None  # JSON -> object
    merge: Callable[[Any, Any], Any] | None = None  # (a, b) -> a + b: folded objects only
    # numbers: the least value a pair can give (0 for counts and sums of magnitudes); a
    # state read back (a --shard part, an Evaluator state) holding less is refused
    minimum: float | None = None

    def __post_init__(self) -> None:
        if self.merge is not None and (self.encode is None or self.decode is None):
            raise ValueError(f"statistic {self.name!r}: a folded statistic (merge) is an "
                             "object with encode and decode")

    @property
    def numeric(self) -> bool:
        return self.encode is None

    @property
    def folded(self) -> bool:
        """One value for the whole table (:attr:`merge`), not one per pair."""
        return self.merge is not None


class StatTable:
    """The declared statistics of a run's pairs, one column per name, rows in stem order."""

    def __init__(self, declared: Sequence[Stat], columns: Mapping[str, Any], n: int) -> None:
        self.declared = tuple(declared)
        self.columns = dict(columns)
        self.n = n
        # each row's stem (the report's order), where the run knows them: a summary that
        # reads per-image data keyed by stem (Open Images' image-level labels) looks here
        self.stems: list[str] | None = None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, name: str) -> Any:
        """A numeric column (float64, NaN = undefined; ``(n,)`` or ``(n, width)``), a
        sequence of objects, or a folded statistic's one value (None for no pairs)."""
        return self.columns[name]

    @classmethod
    def empty(cls, declared: Sequence[Stat]) -> StatTable:
        return Collector(declared).table()

    def take(self, order: Sequence[int] | np.ndarray) -> StatTable:
        """The rows ``order``, in that order (this table itself when that is every row in
        its own order)."""
        index = np.asarray(order, dtype=np.int64)
        if index.size == self.n and (index == np.arange(self.n)).all():
            return self
        columns = {}
        for stat in self.declared:
            column = self.columns[stat.name]
            if stat.folded:
                if index.size != self.n:
                    raise ValueError(f"statistic {stat.name!r} is folded over all pairs: it "
                                     "can be reordered, not sliced")
                columns[stat.name] = column
            elif isinstance(column, np.ndarray):
                columns[stat.name] = column[index]
            elif isinstance(column, list):
                columns[stat.name] = [column[i] for i in index.tolist()]
            else:
                columns[stat.name] = column.take(index)
        return StatTable(self.declared, columns, int(index.size))

    @classmethod
    def concat(cls, declared: Sequence[Stat], tables: Sequence[StatTable]) -> StatTable:
        """Rows of every table, in order."""
        collector_columns: dict[str, Any] = {}
        for stat in declared:
            parts = [table[stat.name] for table in tables]
            if stat.folded:
                collector_columns[stat.name] = _fold(stat, parts)
            elif stat.numeric:
                shape = (0,) if stat.width == 1 else (0, stat.width)
                collector_columns[stat.name] = (np.concatenate(parts) if parts
                                                else np.zeros(shape))
            else:
                collector_columns[stat.name] = [item for part in parts for item in part]
        return cls(declared, collector_columns, sum(len(table) for table in tables))

    def encode(self) -> dict[str, list[Any]]:
        """JSON for a shard report's ``state``: exact for float64, NaN written as null."""
        out: dict[str, list[Any]] = {}
        for stat in self.declared:
            column = self.columns[stat.name]
            if stat.folded:
                out[stat.name] = None if column is None else stat.encode(column)
            elif stat.numeric:
                out[stat.name] = _nulls(column.tolist())
            else:
                out[stat.name] = [stat.encode(item) for item in column]
        return out

    @classmethod
    def decode(cls, declared: Sequence[Stat], data: Mapping[str, list[Any]], n: int) -> StatTable:
        """The inverse of :meth:`encode`; raises ``ValueError`` naming what does not fit."""
        columns: dict[str, Any] = {}
        for stat in declared:
            values = data.get(stat.name)
            if stat.folded:
                if stat.name not in data:
                    raise ValueError(f"statistic {stat.name!r} is missing")
                columns[stat.name] = None if values is None else stat.decode(values)
                continue
            if not isinstance(values, list) or len(values) != n:
                raise ValueError(f"statistic {stat.name!r} is missing or has the wrong length")
            if stat.numeric:
                column = np.array(values, dtype=np.float64)  # null (None) becomes NaN
                expected = (n,) if stat.width == 1 else (n, stat.width)
                if column.shape != expected and not (n == 0 and column.size == 0):
                    raise ValueError(f"statistic {stat.name!r} has shape {column.shape}, "
                                     f"expected {expected}")
                if stat.minimum is not None and (column < stat.minimum).any():
                    raise ValueError(f"statistic {stat.name!r} holds {float(column.min()):g}, "
                                     f"below its least value {stat.minimum:g}")
                columns[stat.name] = column.reshape(expected)
            else:
                columns[stat.name] = [stat.decode(item) for item in values]
        return cls(declared, columns, n)


class Collector:
    """Builds a :class:`StatTable` pair by pair (what the engine does with each result)."""

    def __init__(self, declared: Sequence[Stat]) -> None:
        self.declared = tuple(declared)
        self._numbers = {stat.name: array("d") for stat in self.declared if stat.numeric}
        self._objects: dict[str, list[Any]] = {stat.name: [] for stat in self.declared
                                               if not stat.numeric and not stat.folded}
        self._folded: dict[str, Any] = {stat.name: None for stat in self.declared if stat.folded}
        self.n = 0

    def add(self, values: Mapping[str, Any]) -> None:
        """One pair's statistics, by name (extra keys are ignored)."""
        for stat in self.declared:
            try:
                value = values[stat.name]
            except KeyError:
                raise KeyError(f"the task's evaluate gave no statistic {stat.name!r}") from None
            if stat.folded:
                current = self._folded[stat.name]
                if value is not None:
                    self._folded[stat.name] = value if current is None else stat.merge(current, value)
            elif not stat.numeric:
                self._objects[stat.name].append(value)
            elif stat.width == 1:
                self._numbers[stat.name].append(math.nan if value is None else value)
            else:
                numbers = [math.nan if v is None else v for v in value]
                if len(numbers) != stat.width:
                    raise ValueError(f"statistic {stat.name!r} has {len(numbers)} values, "
                                     f"declared {stat.width}")
                self._numbers[stat.name].extend(numbers)
        self.n += 1

    def table(self) -> StatTable:
        columns: dict[str, Any] = {**self._objects, **self._folded}
        for stat in self.declared:
            if stat.numeric:
                flat = np.frombuffer(self._numbers[stat.name], dtype=np.float64).copy() \
                    if len(self._numbers[stat.name]) else np.zeros(0)
                columns[stat.name] = flat if stat.width == 1 else flat.reshape(-1, stat.width)
        return StatTable(self.declared, columns, self.n)


def _fold(stat: Stat, values: Sequence[Any]) -> Any:
    """The folded statistic's values combined (None: no pairs)."""
    total = None
    for value in values:
        if value is not None:
            total = value if total is None else stat.merge(total, value)
    return total


def _nulls(values: list[Any]) -> list[Any]:
    return [_nulls(v) if isinstance(v, list) else (None if v != v else v) for v in values]
