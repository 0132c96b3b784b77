"""Stems: the files of a folder (or a URL prefix) by the name they are paired by.

A stem is the path of a file relative to the directory it was found under, without its
suffix, in POSIX form (``scene1/clutter/000120``). Suffixes match case-insensitively;
hidden files and folders (a name starting with ``.``) are ignored; files whose suffix the
task does not read are ignored too; two files with one stem are an input error. The same
rules hold for a folder walked on disk (:func:`folder_stems`) and for the relative paths of
the objects under a URL prefix (:func:`path_stems`, which :mod:`rpx_cli.io.remote` lists).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

from rpx_cli.errors import InputError


def split_suffix(name: str) -> tuple[str, str]:
    """``(base, suffix)`` of a file name, the suffix lower-cased (``a.PGM``: ``("a", ".pgm")``)."""
    base, dot, suffix = name.rpartition(".")
    if not dot or not base:
        return name, ""
    return base, "." + suffix.lower()


_LISTINGS: ContextVar[dict[str, list[tuple[str, str, str]]] | None] = ContextVar(
    "rpx_listings", default=None)


@contextlib.contextmanager
def listed_once() -> Iterator[None]:
    """Within the block, each folder is walked once: what one step of a run looks at several
    times (sniffing a side's format, then pairing its files) is listed a single time."""
    token = _LISTINGS.set({})
    try:
        yield
    finally:
        _LISTINGS.reset(token)


def _listing(root: str) -> list[tuple[str, str, str]]:
    """(stem, relative path, lower-case suffix) of every file under the folder ``root``,
    hidden files and folders left out, in sorted order."""
    memo = _LISTINGS.get()
    if memo is not None and root in memo:
        return memo[root]
    if not os.path.isdir(root):
        what = "does not exist" if not os.path.exists(root) else "is not a directory"
        raise InputError(f"directory {what}", path=root)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel_dir = os.path.relpath(dirpath, root)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            base, suffix = split_suffix(name)
            out.append((prefix + base, prefix + name, suffix))
    if memo is not None:
        memo[root] = out
    return out


def folder_files(root: str, suffixes: Iterable[str]) -> list[str]:
    """The relative POSIX paths of the files under the folder ``root`` with one of
    ``suffixes``, in walk order, without :func:`folder_stems`' one-stem-one-file check."""
    wanted = {s.lower() for s in suffixes}
    return [rel for _, rel, suffix in _listing(root) if suffix in wanted]


def folder_stems(root: str, suffixes: Iterable[str]) -> dict[str, str]:
    """Map stem -> relative POSIX path for every readable file under the folder ``root``.

    Raises :class:`InputError` when ``root`` is not a directory, or when two files share
    one stem (``a.npy`` and ``a.PGM``): which one is meant cannot be guessed.
    """
    wanted = {s.lower() for s in suffixes}
    found: dict[str, str] = {}
    clashes: list[str] = []
    for stem, rel, suffix in _listing(root):
        if suffix not in wanted:
            continue
        if stem in found:
            clashes.append(
                f"two files have the stem '{stem}': "
                f"{os.path.join(root, found[stem])} and {os.path.join(root, rel)}"
            )
            continue
        found[stem] = rel
    if clashes:
        raise InputError("; ".join(clashes), path=root)
    return found


def path_stems(root: str, rels: Iterable[str], suffixes: Iterable[str]) -> dict[str, str]:
    """:func:`folder_stems` over relative POSIX paths listed by other means (the objects
    under a URL prefix, sorted): the same stems, hidden names, suffixes and clashes."""
    wanted = {s.lower() for s in suffixes}
    found: dict[str, str] = {}
    clashes: list[str] = []
    join = root.rstrip("/") + "/"
    for rel in rels:
        parts = rel.split("/")
        odd = [part for part in parts if part in ("", ".", "..")]
        if odd and split_suffix(parts[-1])[1] in wanted:
            # an object key no file path can be: never silently left out
            raise InputError(f"object {join}{rel}: its key has an empty ('//'), '.' or '..' "
                             "segment, which no file path has; rename it (or move it out of "
                             "the prefix)", path=root)
        if any(part.startswith(".") or not part for part in parts):
            continue
        base, suffix = split_suffix(parts[-1])
        if suffix not in wanted:
            continue
        stem = "/".join([*parts[:-1], base])
        if stem in found:
            clashes.append(f"two files have the stem '{stem}': {join}{found[stem]} and {join}{rel}")
            continue
        found[stem] = rel
    if clashes:
        raise InputError("; ".join(clashes), path=root)
    return found
