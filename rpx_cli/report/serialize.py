"""The one place reports become bytes (orjson) (written by :mod:`rpx_cli.io.atomic_files`).

orjson silently writes NaN/Infinity as ``null`` and refuses numpy scalars; :func:`to_json`
converts numpy values on purpose and refuses a non-finite float outright, because a
metric that is undefined must already be ``None`` with a count that explains it.
"""

from __future__ import annotations

from typing import Any

import orjson

from rpx_cli.errors import escaped


class NonFiniteValue(ValueError):
    """A NaN or infinity reached the serializer: a bug in the task that produced it."""


_PLAIN = (str, int, bool, type(None))
_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def check_finite(value: Any, path: str = "$") -> None:
    """Raise :class:`NonFiniteValue` for any NaN or infinity in ``value`` (numpy included).

    A validation pass, no copy: exact-type checks for the plain values that make up almost
    every report, numpy arrays checked at once. Paths are built only on the way to an error.
    """
    kind = type(value)
    if kind is float:
        if value - value != 0.0:  # NaN - NaN and inf - inf are NaN
            raise NonFiniteValue(f"non-finite number {value} at {path}")
    elif kind is dict:
        for key, item in value.items():
            item_kind = type(item)
            if item_kind is float:
                if item - item != 0.0:
                    raise NonFiniteValue(f"non-finite number {item} at {path}.{key}")
            elif item_kind not in _PLAIN:
                check_finite(item, f"{path}.{key}")
    elif kind is list or kind is tuple:
        for index, item in enumerate(value):
            item_kind = type(item)
            if item_kind is float:
                if item - item != 0.0:
                    raise NonFiniteValue(f"non-finite number {item} at {path}[{index}]")
            elif item_kind not in _PLAIN:
                check_finite(item, f"{path}[{index}]")
    elif kind in _PLAIN:
        return
    elif hasattr(value, "dtype"):  # numpy scalars and arrays
        import numpy as np

        array = np.asarray(value)
        if array.dtype.kind in "fc" and not np.isfinite(array).all():
            raise NonFiniteValue(f"non-finite number at {path}")
        if array.dtype.kind not in "biufc":
            raise TypeError(f"cannot serialise {array.dtype} values at {path}")
    elif isinstance(value, float):  # float subclasses
        check_finite(float(value), path)
    elif isinstance(value, (int, str)):
        return
    else:
        raise TypeError(f"cannot serialise {type(value).__name__} at {path}")


def to_json(value: Any, path: str = "$") -> Any:
    """``value`` as plain JSON types (numpy converted); raises on any non-finite number."""
    check_finite(value, path)
    return orjson.loads(_dumps(value, _OPTIONS))


def dumps(report: dict[str, Any], *, compact: bool = False, parsed: tuple[str, ...] = ()) -> bytes:
    """Sorted keys, 2-space indent (or one line), trailing newline; NaN/inf refused.

    ``parsed`` names top-level keys whose content was itself parsed from JSON (rows of a
    merge): JSON cannot hold NaN, so they are not walked again."""
    check_finite({k: v for k, v in report.items() if k not in parsed})
    option = _OPTIONS if compact else _OPTIONS | orjson.OPT_INDENT_2
    return _dumps(report, option) + b"\n"


def _dumps(value: Any, option: int) -> bytes:
    """orjson, with names that are not UTF-8 (surrogates from the file system) written as
    ``ls -b`` shows them: a report is always valid UTF-8. The walk runs only when needed."""
    try:
        return orjson.dumps(value, option=option)
    except orjson.JSONEncodeError as exc:
        if "surrogates" not in str(exc):
            raise
    return orjson.dumps(_escape_strings(value), option=option)


def _escape_strings(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return escaped(value)
        return value
    if isinstance(value, dict):
        return {_escape_strings(k): _escape_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_escape_strings(item) for item in value]
    return value


def content_digest(value: Any, *, parsed: bool = False) -> str:
    """sha256 of a JSON value's canonical form (sorted keys, one line): equal for the value
    as built and as read back from a report (``parsed``: it was read from JSON already)."""
    import hashlib

    canonical = value if parsed else to_json(value)
    return hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest()


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)
