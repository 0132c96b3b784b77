"""``.npy`` and ``.npz`` parsing from bytes already in memory.

Never unpickles: object arrays (the only ones that need pickle) are refused with an input
error, so loading an untrusted prediction can never run code.
"""

from __future__ import annotations

import io
import math
import sys
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from rpx_cli.errors import InputError, escaped, first_line
from rpx_cli.io.budget import check_pixels

if TYPE_CHECKING:
    import zipfile  # imported by parse_npz: ~5 ms of every start-up that reads no .npz

_MAX_HEADER = 1 << 20
_HEADER_CACHE: dict[bytes, tuple[tuple[int, ...], bool, np.dtype, int]] = {}


def _header_length(data: np.ndarray) -> int | None:
    """Bytes before the array data, from the magic, version and length fields; None if the
    file is too short or not an .npy file (the full parser then says why)."""
    if data.size < 10 or bytes(data[:6]) != b"\x93NUMPY":
        return None
    major = int(data[6])
    if major == 1:
        return 10 + int(data[8]) + (int(data[9]) << 8)
    if major in (2, 3) and data.size >= 12:
        return 12 + int.from_bytes(bytes(data[8:12]), "little")
    return None


def parse_npy(data: np.ndarray, path: str) -> np.ndarray:
    """Parse an in-memory ``.npy`` file; the result is a zero-copy view of ``data``.

    Headers are memoised by their bytes: a folder of same-shaped maps parses one header
    (numpy's parser uses ``ast.literal_eval``, ~0.1 ms a file). An array given in memory
    (:class:`~rpx_cli.io.memory.InMemory`) is checked as a file's header would be and
    returned as it is."""
    from rpx_cli.io.memory import InMemory

    if isinstance(data, InMemory):
        array = data.value
        check_header(array.shape, array.dtype, path)
        return array
    length = _header_length(data)
    key = bytes(data[:length]) if length is not None and length <= data.size else None
    cached = _HEADER_CACHE.get(key) if key is not None else None
    if cached is None:
        cached = _parse_header(data, path)
        if key is not None and len(_HEADER_CACHE) < 256:
            _HEADER_CACHE[key] = cached
    shape, fortran, dtype, offset = cached
    count = math.prod(shape)  # a Python int: a huge shape cannot wrap around
    needed = count * dtype.itemsize
    available = data.size - offset
    if available < needed:
        raise InputError(
            f"truncated .npy: header promises {needed} data bytes, file has {available}",
            path=path,
        )
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C")


def _parse_header(data: np.ndarray, path: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    fmt = np.lib.format
    head = io.BytesIO(bytes(data[: min(data.size, 4096)]))
    try:
        version = fmt.read_magic(head)
        if data.size > 4096:  # a header longer than 4 KiB: give the parser all of it
            head = io.BytesIO(bytes(data[: min(data.size, _MAX_HEADER)]))
            fmt.read_magic(head)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(head, max_header_size=_MAX_HEADER)
        else:  # 2.0 and 3.0 share the 4-byte header length; 3.0 headers are UTF-8 but ASCII here
            shape, fortran, dtype = fmt.read_array_header_2_0(head, max_header_size=_MAX_HEADER)
    except Exception as exc:  # numpy's parser on untrusted bytes (tokenize errors too)
        raise InputError(f"not a valid .npy file ({first_line(exc)})", path=path) from None
    check_header(shape, dtype, path)
    return tuple(shape), bool(fortran), dtype, head.tell()


def check_header(shape: tuple[int, ...], dtype: np.dtype, path: str) -> None:
    """What numpy's header parser lets through but no array can be: a negative or
    non-integer dimension (``(-1, 4)`` is a reshape wildcard, not a size), an item size of
    0, a Python-object array (rpx never unpickles)."""
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= sys.maxsize
               for n in shape):
        raise InputError(f"not a valid .npy file (shape {shape!r}: dimensions must be "
                         "integers >= 0)", path=path)
    if dtype.hasobject:
        raise InputError(
            "holds a Python-object array; rpx never unpickles files (save a numeric array)",
            path=path,
        )
    if dtype.itemsize == 0:
        raise InputError(f"not a valid .npy file (dtype {dtype.str!r} has items of 0 bytes)",
                         path=path)


def parse_npz(data: np.ndarray, path: str, key: str,
              check: Callable[[tuple[int, ...], np.dtype], str | None] | None = None) -> np.ndarray:
    """Read array ``key`` from an in-memory ``.npz`` archive (never with pickle).

    The member's ``.npy`` header is read first and checked before anything is inflated:
    its shape and dtype (and ``check(shape, dtype)``, which returns why the caller cannot
    use such an array, or None), then its size against the zip entry's (a header claiming
    80 GB in a 1 KB member is refused, not allocated). Only then is the member inflated,
    straight into the array's memory."""
    import zipfile

    try:
        archive = zipfile.ZipFile(io.BytesIO(data.tobytes()))
        names = archive.namelist()
        files = [name.removesuffix(".npy") for name in names]
        if key not in files:
            found = ", ".join(map(escaped, files)) or "none"  # names are the file's bytes
            raise InputError(f"has no array named '{key}' (found: {found})", path=path)
        info = archive.getinfo(names[files.index(key)])
        with archive.open(info) as stream:
            return _read_member(stream, info, path, key, check)
    except InputError:
        raise
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, KeyError, ValueError,
            NotImplementedError, RuntimeError) as exc:
        raise InputError(f"not a valid .npz file ({first_line(exc)})", path=path) from None


# deflate cannot inflate more than ~1032x (stored members not at all): a zip entry that
# claims more is lying about its size
_MAX_RATIO = {0: 1, 8: 1100}  # zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED


def _read_member(stream: Any, info: zipfile.ZipInfo, path: str, key: str,
                 check: Callable[[tuple[int, ...], np.dtype], str | None] | None) -> np.ndarray:
    where = f"array '{key}'"
    head = stream.read(12)
    length = _header_length(np.frombuffer(head, np.uint8))
    if length is None or length > _MAX_HEADER:
        raise InputError(f"{where} is not a valid .npy member", path=path)
    head += stream.read(length - len(head))
    shape, fortran, dtype, offset = _parse_header(np.frombuffer(head, np.uint8), path)
    problem = check(shape, dtype) if check is not None else None
    if problem:
        raise InputError(f"'{key}' {problem}", path=path)
    needed = math.prod(shape) * dtype.itemsize
    if info.file_size != offset + needed:
        raise InputError(f"{where}: its header promises {needed} data bytes, the archive "
                         f"holds {info.file_size - offset}", path=path)
    ratio = _MAX_RATIO.get(info.compress_type)
    if ratio is not None and info.file_size > ratio * info.compress_size + 4096:
        raise InputError(f"{where}: the archive claims {info.file_size} bytes inflated from "
                         f"{info.compress_size}, more than its compression can hold", path=path)
    check_pixels(shape, path, f"array '{key}' ")  # against the GT's size, before inflating
    out = np.empty(needed, np.uint8)
    view, got = memoryview(out), 0
    while got < needed:
        more = stream.readinto(view[got:])
        if not more:
            raise InputError(f"{where} is truncated ({got} of {needed} data bytes)", path=path)
        got += more
    return out.view(dtype).reshape(shape, order="F" if fortran else "C")


