"""Netpbm PGM (P2 ASCII and P5 binary) parsing from bytes in memory.

The header is ``P2``/``P5``, width, height and maxval separated by whitespace, with ``#``
comments allowed between tokens (one-line headers such as ``P5 640 480 255`` included);
one whitespace byte ends the header. P5 samples are 8-bit when maxval < 256, else 16-bit
big-endian. Payloads are parsed with numpy (no Python loop over pixels) and their size is
checked against the header; a sample above maxval is a corrupt file.
"""

from __future__ import annotations

import re

import numpy as np

from rpx_cli.errors import InputError

_TOKEN = re.compile(rb"(?:[ \t\r\n\v\f]|#[^\r\n]*)*(\d+)")
_WHITESPACE = b" \t\r\n\v\f"
_COMMENT = re.compile(rb"#[^\r\n]*")
_HEAD = 1024


def parse_pgm(data: np.ndarray, path: str) -> tuple[np.ndarray, int]:
    """Return ``(samples, maxval)``; samples are uint8 (maxval < 256) or uint16."""
    magic = bytes(data[:2])
    if magic not in (b"P2", b"P5"):
        raise InputError(f"not a PGM file (magic {magic!r}, expected b'P2' or b'P5')", path=path)
    try:
        width, height, maxval, start = _parse_header(bytes(data[:_HEAD]))
        if start >= _HEAD - 1 and data.size > _HEAD:  # a header longer than the first chunk
            width, height, maxval, start = _parse_header(bytes(data))
    except ValueError as exc:
        if data.size <= _HEAD:
            raise InputError(f"bad PGM header: {exc}", path=path) from None
        try:
            width, height, maxval, start = _parse_header(bytes(data))
        except ValueError as exc2:
            raise InputError(f"bad PGM header: {exc2}", path=path) from None
    if width < 1 or height < 1:
        raise InputError(f"bad PGM header: size {width}x{height}", path=path)
    if not 1 <= maxval <= 65535:
        raise InputError(f"bad PGM header: maxval {maxval} outside 1..65535", path=path)
    dtype = np.dtype(np.uint8) if maxval < 256 else np.dtype(">u2")
    count = width * height
    if magic == b"P5":
        available = data.size - start
        needed = count * dtype.itemsize
        if available < needed:
            raise InputError(
                f"truncated PGM: {width}x{height} at maxval {maxval} needs {needed} bytes, "
                f"file has {available}",
                path=path,
            )
        samples = np.frombuffer(data, dtype=dtype, count=count, offset=start)
    else:
        tokens = _COMMENT.sub(b" ", bytes(data[start:])).split()
        if len(tokens) != count:
            raise InputError(
                f"PGM payload has {len(tokens)} samples, header says {width}x{height}={count}",
                path=path,
            )
        try:
            values = np.array(tokens, dtype=np.bytes_).astype(np.int64)
        except ValueError:
            raise InputError("PGM payload holds a non-integer sample", path=path) from None
        except OverflowError:
            raise InputError("PGM payload holds a sample beyond 64 bits (maxval is at most "
                             "65535)", path=path) from None
        if values.min() < 0:
            raise InputError("PGM payload holds a negative sample", path=path)
        if values.max() > maxval:
            raise InputError(f"PGM sample {int(values.max())} exceeds maxval {maxval}", path=path)
        samples = values.astype(dtype.newbyteorder("="))
    if magic == b"P5" and maxval not in (255, 65535) and int(samples.max()) > maxval:
        raise InputError(f"PGM sample {int(samples.max())} exceeds maxval {maxval}", path=path)
    return samples.reshape(height, width), maxval


def _parse_header(head: bytes) -> tuple[int, int, int, int]:
    values = []
    pos = 2
    for name in ("width", "height", "maxval"):
        match = _TOKEN.match(head, pos)
        if match is None:
            raise ValueError(f"missing or malformed {name}")
        values.append(int(match.group(1)))
        pos = match.end()
    if pos >= len(head) or head[pos] not in _WHITESPACE:
        raise ValueError("no whitespace after maxval")
    return values[0], values[1], values[2], pos + 1
