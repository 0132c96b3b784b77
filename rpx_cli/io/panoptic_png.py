"""Panoptic id PNGs by the native core: the chunks walked and checked here, the image data
inflated by zlib-ng (the ``fast-png`` extra; the standard library's zlib otherwise), and the
rows unfiltered into segment ids in C (``png_rgb_ids``).

Why: every PNG decoder on the package index inflates at zlib's speed, and on flat-colour id
maps zlib is the cost — 3.2 ms of Pillow's 5.9 ms for a 1024x512 Cityscapes-like PNG, where
zlib-ng's inflate takes 0.16 ms (``benchmarks/RESULTS.md``).

Only the plain case is read here: 8-bit RGB, not interlaced, compression and filter method
0, every chunk's CRC right, the IDAT chunks consecutive, no unknown critical chunk, one zlib
stream holding exactly ``height · (1 + 3 · width)`` bytes and nothing after it. For
anything else :func:`native_ids` returns None and Pillow reads the file (or words its
error), as it does on the numpy path — so the native path only ever reads files Pillow
reads the same way (``tests/test_native_png.py`` compares the ids with Pillow's).
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from rpx_cli import native

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_KNOWN_CRITICAL = {b"IHDR", b"PLTE", b"IDAT", b"IEND"}


def inflater():
    """The zlib module that inflates: zlib-ng's (``pip install 'rpx-eval[fast-png]'``) when
    installed, else the standard library's."""
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        return zlib
    return zlib_ng


def native_ids(data: bytes, width: int, height: int) -> np.ndarray | None:
    """The ``(height, width)`` uint32 segment ids of an 8-bit RGB PNG whose header says
    ``width`` x ``height``, or None where the native core is off or the file is not the plain
    case (module docstring)."""
    core = native.core()
    if core is None:
        return None
    image_data = _image_data(data)
    if image_data is None:
        return None
    expected = height * (1 + 3 * width)
    inflate = inflater().decompressobj()
    try:
        raw = inflate.decompress(image_data, expected + 1)
    except zlib.error:
        return None
    except Exception as exc:  # zlib-ng raises its own error class
        if type(exc).__name__ != "error":
            raise
        return None
    if len(raw) != expected or not inflate.eof or inflate.unused_data:
        return None
    ids = np.empty((height, width), "<u4")
    if core.png_rgb_ids(raw, width, height, ids.view(np.uint8)) is not None:
        return None  # a filter type above 4: Pillow words it
    return ids


def _image_data(data: bytes) -> bytes | None:
    """The IDAT chunks' data joined, or None for anything but the plain case."""
    view = memoryview(data)
    if bytes(view[:8]) != _SIGNATURE:
        return None
    parts: list[memoryview] = []
    after_image_data = False
    pos = 8
    while True:
        if pos + 12 > len(view):
            return None
        length, kind = struct.unpack_from(">I4s", view, pos)
        end = pos + 12 + length
        if end > len(view):
            return None
        body = view[pos + 8:pos + 8 + length]
        if zlib.crc32(view[pos + 4:pos + 8 + length]) != int.from_bytes(view[end - 4:end], "big"):
            return None
        if kind == b"IHDR":
            if length != 13 or bytes(body[8:13]) != b"\x08\x02\x00\x00\x00":
                return None  # 8-bit RGB, compression 0, filter 0, not interlaced
        elif kind == b"IDAT":
            if after_image_data:
                return None
            parts.append(body)
        elif kind == b"IEND":
            return b"".join(parts) if parts else None
        elif kind[:1].isupper() and kind not in _KNOWN_CRITICAL:
            return None
        elif parts:
            after_image_data = True
        pos = end
