"""Samples given in memory (``rpx_cli.Evaluator``) read by the very readers that read files.

A reader gets a :class:`MemoryBuffer` where it would get a :class:`~rpx_cli.io.filebuffer.
FileBuffer`, and a path whose suffix says which file format the value stands for
(:func:`memory_path`): ``.npy`` for an array, ``.json`` for the per-stem JSON structure,
``.txt`` for text. Text goes through the readers' byte parsers as the file's bytes would; an
array or a JSON structure is handed over as :class:`InMemory`, which the two places where
file contents are parsed (``io.npy.parse_npy`` and ``io.json.loads_json``) take as the
value they would have parsed — so every check a reader makes on a file's content runs on
the value, and nothing is encoded into bytes to be parsed again (nor copied: a reader builds
its arrays from the structure as it does from a parsed file). A structure holding numpy
values where JSON has lists and numbers (``{"boxes": array}``) is read as :func:`plain` makes
it, the one copy, when a reader refuses it as given (:func:`read_in_memory`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.mask_arrays import as_array


class InMemory:
    """What a reader would have parsed from a file: an array, or a JSON document."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def tobytes(self) -> InMemory:  # readers call buffer.read(path).tobytes() on JSON files
        return self


class MemoryBuffer:
    """Stands in for a ``FileBuffer``: ``read`` gives the in-memory value (text as bytes)."""

    def __init__(self, value: Any) -> None:
        if isinstance(value, str):
            value = value.encode("utf-8")
        if isinstance(value, (bytes, bytearray, memoryview)):
            self._value: Any = np.frombuffer(value, np.uint8)
        else:
            self._value = InMemory(value)

    def read(self, path: str) -> Any:
        return self._value


# the file format a value stands for, in the order tried
_SUFFIXES = {"array": (".npy",), "document": (".json",), "text": (".txt", ".json")}


def memory_path(value: Any, name: str, suffixes: tuple[str, ...], array_suffix: str = ".npy") -> str:
    """``name`` with the suffix of the file format ``value`` stands for among the task's
    ``suffixes`` (an array or tensor-like: ``array_suffix``, ``.npy`` unless the task's
    arrays stand for text rows; a dict or list: ``.json``; text: ``.txt``). A value the task
    has no in-memory form for is an :class:`InputError` naming ``name`` and the forms it
    takes."""
    if isinstance(value, np.ndarray) or as_array(value) is not None:
        kind = "array"
    elif isinstance(value, (dict, list, tuple)):
        kind = "document"
    elif isinstance(value, (str, bytes)):
        kind = "text"
    else:
        kind = ""
    tried = {**_SUFFIXES, "array": (array_suffix,)}
    for suffix in tried.get(kind, ()):
        if suffix in suffixes:
            return name + suffix
    forms = [what for form, what in _FORMS.items()
             if any(suffix in suffixes for suffix in tried[form])]
    got = "None" if value is None else f"a {type(value).__name__}"
    raise InputError(f"takes {' or '.join(forms) or 'nothing in memory'}, not {got}", path=name)


_FORMS = {"array": "an array", "document": "a dict or list", "text": "text"}


def plain(value: Any) -> Any:
    """A JSON document with numpy arrays and scalars as Python lists and numbers, and keys as
    text: what ``json.loads`` of the file would have given. Parts that need nothing are
    returned as they are (``plain(doc) is doc`` when nothing changed)."""
    if isinstance(value, dict):
        changed = {}
        for key, item in value.items():
            # a binary mask stays an array: its JSON form is RLE, made by the mask reader
            # (rpx_cli.io.mask_arrays), never the rows its list would be
            new = item if type(item) in _SCALARS or (key == "segmentation" and as_array(item)
                                                     is not None) else plain(item)
            if new is not item or not isinstance(key, str):
                changed[key] = new
        if not changed:
            return value
        return {str(key) if not isinstance(key, str) else key: changed.get(key, item)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        if set(map(type, value)) <= _SCALARS:
            return value if type(value) is list else list(value)
        items = [item if type(item) in _SCALARS else plain(item) for item in value]
        same = type(value) is list and all(a is b for a, b in zip(items, value, strict=True))
        return value if same else items
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    array = as_array(value)  # a tensor-like (torch, jax): its values as lists
    return value if array is None else array.tolist()


_SCALARS = {int, float, str, bool, type(None)}


def read_in_memory(read: Any, value: Any, path: str) -> Any:
    """``read(path, MemoryBuffer(value))``, a reader on an in-memory value; a structure the
    reader refuses as given — or trips on: numpy values where a reader expects JSON's — is
    read again as :func:`plain` makes it (numpy values as JSON's), and refused then, it is
    the reader's error on the plain form, the one its file would give."""
    try:
        return read(path, MemoryBuffer(value))
    except (InputError, TypeError, ValueError, AttributeError, IndexError, KeyError):
        if isinstance(value, np.ndarray) or not isinstance(value, (dict, list, tuple)):
            raise
        try:
            converted = plain(value)
        except InputError as exc:  # a tensor-like that is no array: named by the value's path
            raise InputError(exc.args[0], path=path) from None
        if converted is value:
            raise
    return read(path, MemoryBuffer(converted))
