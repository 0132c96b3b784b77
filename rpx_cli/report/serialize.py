"""The one place reports become bytes (orjson), and the atomic write.

orjson silently writes NaN/Infinity as ``null`` and refuses numpy scalars; :func:`to_json`
converts numpy values on purpose and refuses a non-finite float outright, because a
metric that is undefined must already be ``None`` with a count that explains it (SPEC §3).
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from typing import Any

import orjson


class NonFiniteValue(ValueError):
    """A NaN or infinity reached the serializer: a bug in the task that produced it."""


def to_json(value: Any, path: str = "$") -> Any:
    """A copy of ``value`` made of plain JSON types; raises on any non-finite number."""
    if isinstance(value, dict):
        return {str(k): to_json(v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NonFiniteValue(f"non-finite number {value} at {path}")
        return float(value)  # np.float64 is a float subclass: make it plain
    item = getattr(value, "item", None)  # numpy scalars and 0-d arrays
    if item is not None and getattr(value, "ndim", 1) == 0:
        return to_json(item(), path)
    tolist = getattr(value, "tolist", None)
    if tolist is not None:
        return to_json(tolist(), path)
    raise TypeError(f"cannot serialise {type(value).__name__} at {path}")


def dumps(report: dict[str, Any], *, compact: bool = False) -> bytes:
    """Sorted keys, 2-space indent (or one line), trailing newline."""
    option = orjson.OPT_SORT_KEYS
    if not compact:
        option |= orjson.OPT_INDENT_2
    return orjson.dumps(to_json(report), option=option) + b"\n"


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory and a rename,
    so a reader (or a failed run) never sees a partial report. A path that exists and is not
    a regular file (``/dev/null``, a FIFO) is written directly."""
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "wb") as handle:
            handle.write(data)
        return
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".rpx-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
