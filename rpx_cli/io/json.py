"""Every JSON document rpx reads is parsed here, by one of two functions:

- :func:`loads_json` for data files (per-stem JSON, COCO files, manifests, tracks, poses):
  orjson, with the standard library's message when it refuses; an in-memory document
  (``Evaluator.update``'s, :class:`~rpx_cli.io.memory.InMemory`) is taken as parsed, so a
  reader built on it accepts what ``Evaluator.update`` passes;
- :func:`strict_json` for the small files a user writes by hand (a label map, a class map,
  class names, storage options): the standard library only (the CLI checks
  ``--storage-options`` with it at start-up), a key given twice refused.
"""

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


def loads_json(data: bytes | memoryview, path: str, what: str = "") -> Any:
    """Parse JSON (orjson: a third of the stdlib's time); the cyclic garbage collector is
    paused meanwhile, as the containers built are all alive (a 28 MB results file: 0.65 s
    with it running, 0.21 s without). Every JSON input of rpx is parsed here: bad JSON,
    and JSON nested deeper than the parsers follow, is ``path``'s input error
    (``what``, e.g. ``"class map: "``, prefixes the message). A document given in memory
    (:class:`~rpx_cli.io.memory.InMemory`) is taken as parsed."""
    import gc

    import numpy as np

    from rpx_cli.io.memory import InMemory

    if isinstance(data, InMemory):
        return data.value
    if isinstance(data, np.ndarray):  # a file's bytes as a FileBuffer holds them
        data = memoryview(data)

    import orjson

    enabled = gc.isenabled()
    gc.disable()
    try:  # (the collector as it was, after: parsed or not)
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # the standard library also reads NaN and Infinity, and says where it stopped
        try:
            return json.loads(bytes(data))
        except RecursionError:
            raise InputError(f"{what}not valid JSON (nested too deeply)", path=path) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"{what}not valid JSON ({exc})", path=path) from None
    finally:
        if enabled:
            gc.enable()
