"""``.npy`` and ``.npz`` parsing from bytes already in memory.

Never unpickles: object arrays (the only ones that need pickle) are refused with an input
error, so loading an untrusted prediction can never run code.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np

from rpx_cli.errors import InputError

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
    (numpy's parser uses ``ast.literal_eval``, ~0.1 ms a file)."""
    length = _header_length(data)
    key = bytes(data[:length]) if length is not None and length <= data.size else None
    cached = _HEADER_CACHE.get(key) if key is not None else None
    if cached is None:
        cached = _parse_header(data, path)
        if key is not None and len(_HEADER_CACHE) < 256:
            _HEADER_CACHE[key] = cached
    shape, fortran, dtype, offset = cached
    count = int(np.prod(shape, dtype=np.int64))
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
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        raise InputError(f"not a valid .npy file ({_first_line(exc)})", path=path) from None
    if dtype.hasobject:
        raise InputError(
            "holds a Python-object array; rpx never unpickles files (save a numeric array)",
            path=path,
        )
    return tuple(shape), bool(fortran), dtype, head.tell()


def parse_npz(data: np.ndarray, path: str, key: str) -> np.ndarray:
    """Read array ``key`` from an in-memory ``.npz`` archive (never with pickle)."""
    try:
        with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as archive:
            if key not in archive.files:
                found = ", ".join(archive.files) or "none"
                raise InputError(f"has no array named '{key}' (found: {found})", path=path)
            return archive[key]
    except InputError:
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise InputError(
                f"array '{key}' is a Python-object array; rpx never unpickles files", path=path
            ) from None
        raise InputError(f"not a valid .npz file ({_first_line(exc)})", path=path) from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError) as exc:
        raise InputError(f"not a valid .npz file ({_first_line(exc)})", path=path) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
