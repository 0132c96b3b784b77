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


def parse_npy(data: np.ndarray, path: str) -> np.ndarray:
    """Parse an in-memory ``.npy`` file; the result is a zero-copy view of ``data``."""
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
    offset = head.tell()
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
