"""Strict JSON for the small files a user writes by hand (a label map, a class map, class
names, storage options). Standard library only: the CLI checks ``--storage-options`` with
it at start-up."""

from __future__ import annotations

import json
from typing import Any

from rpx_cli.errors import InputError, first_line


class _RepeatedKey(Exception):
    pass


def _unique_pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in items:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


def strict_json(data: bytes | str, path: str, what: str = "") -> Any:
    """Parse a small JSON file a user writes by hand (a label map, a class map, class
    names, storage options): nesting too deep or a number too long is an input error, as is
    a key given twice in one object (JSON parsers keep the last value without a word)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except _RepeatedKey as exc:
        raise InputError(f"{what}the key {exc.args[0]!r} is given twice in one object (JSON "
                         "would keep the last value)", path=path) from None
    except RecursionError:
        raise InputError(f"{what}not valid JSON (nested too deeply)", path=path) from None
    except (ValueError, UnicodeDecodeError) as exc:
        reason = first_line(exc)
        if "integer string conversion" in reason:  # Python's guard against huge integers
            reason = "a number of more than 4,300 digits"
        raise InputError(f"{what}not valid JSON ({reason})", path=path) from None
