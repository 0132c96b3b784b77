"""Class-name files, read one way for every task that takes ``--class-names FILE``: one
name per line (``#`` comments skipped; a blank line between names is an input error, as it
would shift every later name; blank lines after the last are fine) or a JSON list of names (integers are
read as their text). The order is the class order."""

from __future__ import annotations

from collections.abc import Iterable

from rpx_cli.errors import InputError
from rpx_cli.io.json import strict_json
from rpx_cli.io.regular import read_bytes


def read_class_names(path: str, *, reserved: Iterable[str] = ()) -> list[str]:
    """The names in ``path``; an empty list, a repeated name or a ``reserved`` one (e.g.
    segmentation's ``"other"`` column) is an :class:`InputError` naming the file."""
    try:
        text = read_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("class names: not UTF-8 text", path=path) from None
    if text.lstrip().startswith("["):
        names = strict_json(text.encode(), path, "class names: ")
        if not isinstance(names, list) or not all(
                isinstance(n, (str, int)) and not isinstance(n, bool) for n in names):
            raise InputError("class names: expected a JSON list of strings", path=path)
        names = [str(n) for n in names]
    else:
        lines = [line.strip() for line in text.splitlines()]
        last = max((i for i, line in enumerate(lines) if line), default=-1)
        blank = next((i for i in range(last) if not lines[i]), None)
        if blank is not None:  # a class's place is its line: a gap would shift every later name
            raise InputError(f"class names: line {blank + 1} is blank; names are one per line "
                             "in class order, and a blank line would shift every later class "
                             "(remove it, or name that class)", path=path)
        names = [name for name in lines if name and not name.startswith("#")]
    if not names:
        raise InputError("class names: the file names no class", path=path)
    seen: set[str] = set()
    duplicates = sorted({name for name in names if name in seen or seen.add(name)})
    if duplicates:
        raise InputError(f"class names: duplicated {', '.join(duplicates[:5])}", path=path)
    for name in reserved:
        if name in seen:
            raise InputError(f"class names: '{name}' is reserved for out-of-range predictions",
                             path=path)
    return names
