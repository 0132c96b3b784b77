"""Reading JSON documents the workflows take as input (reports, parts): bytes for their
digest, the parsed content, and one-line input errors naming the file. ``-`` is stdin."""

from __future__ import annotations

import hashlib
import sys
from typing import Any

from rpx_cli.errors import InputError
from rpx_cli.io.regular import read_bytes as read_regular
from rpx_cli.report.serialize import loads


def read_bytes(path: str) -> bytes:
    """A document's bytes: stdin for ``-``, else a regular file only (a FIFO given by
    mistake is an input error, never a read that waits)."""
    if path == "-":
        return sys.stdin.buffer.read()
    return read_regular(path)


def read_json(path: str) -> tuple[Any, bytes]:
    """The parsed document and its bytes."""
    data = read_bytes(path)
    try:
        return loads(data), data
    except ValueError as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from None


def read_report(path: str) -> tuple[dict[str, Any], bytes]:
    """A report (a JSON object) and its bytes."""
    document, data = read_json(path)
    if not isinstance(document, dict):
        raise InputError("is not an rpx report (a JSON object)", path=path)
    return document, data


def read_valid_report(path: str) -> tuple[dict[str, Any], bytes]:
    """A report checked against its kind's JSON Schema before anything is built from it
    (``rpx report``, ``show``, ``compare``): valid JSON that is not an rpx report is an
    input error naming the file and the first wrong key."""
    from rpx_cli.report.schemas import check_report

    document, data = read_report(path)
    check_report(document, path)
    return document, data


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


GLOB_CHARACTERS = frozenset("*?[")


def expand_parts(paths: tuple[str, ...] | list[str]) -> list[str]:
    """``rpx merge`` arguments with globs expanded, in order: a URL with ``*``, ``?`` or
    ``[`` is listed in its store ('s3://bucket/run/part-*.json', quoted so the shell leaves
    it); a local pattern that is not itself a file is expanded as the shell would. A
    pattern that matches nothing is an input error naming it."""
    import glob as local_glob
    import os

    from rpx_cli.io.remote import is_url

    out: list[str] = []
    for path in paths:
        if not GLOB_CHARACTERS & set(path) or (not is_url(path) and os.path.exists(path)):
            out.append(path)
            continue
        if is_url(path):
            from rpx_cli.io import remote

            matches = remote.glob(path)
        else:
            matches = sorted(local_glob.glob(path, recursive=True))
        if not matches:
            raise InputError("no file matches this pattern", path=path)
        out += matches
    return out
