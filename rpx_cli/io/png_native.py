"""PNGs read by the native core: the chunks walked and checked here, the image data inflated
by libdeflate (the ``fast-png`` extra: the ``deflate`` package; the standard library's zlib
otherwise), and the rows unfiltered in C (``png_unfilter``; ``png_rgb_ids`` straight into
panoptic segment ids).

Why: every PNG decoder on the package index inflates with zlib, and on label maps, depth
maps and id maps the inflate is most of the decode — 3.2 ms of Pillow's 5.9 ms for a
1024x512 Cityscapes-like id PNG, where libdeflate takes 0.15 ms (zlib-ng 0.16, ISA-L 0.55),
and 2.3 of 3.6 ms for a noisy 480x640 16-bit depth PNG (libdeflate 1.5; zlib-ng 2.2)
(``benchmarks/RESULTS.md``).

Only the plain case is read here: not interlaced, compression and filter method 0, every
chunk's CRC right, the IDAT chunks consecutive, no unknown critical chunk, one zlib stream
holding exactly the image's bytes (its check sum right), and a pixel format whose array Pillow
gives without conversion (:data:`FORMATS`: 8-bit grey, palette indices, grey+alpha, RGB,
RGBA; 16-bit grey). For anything else these functions return None and Pillow reads the file
(or words its error), as it does on the numpy path — so the native path only reads files
Pillow reads the same way (``tests/test_native_png.py`` compares the arrays with Pillow's).
"""

from __future__ import annotations

import struct
import sys
import zlib
from typing import NamedTuple

import numpy as np

from rpx_cli import native

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_KNOWN_CRITICAL = {b"IHDR", b"PLTE", b"IDAT", b"IEND"}
# (bit depth, colour type) -> channels of the array Pillow gives (L, P, LA, RGB, RGBA, I;16)
FORMATS = {(8, 0): 1, (8, 3): 1, (8, 4): 2, (8, 2): 3, (8, 6): 4, (16, 0): 1}
_PILLOW_LIMIT = 89_478_485  # Pillow's default MAX_IMAGE_PIXELS


def pixel_limit() -> float:
    """The most pixels a PNG read here may have: Pillow's ``MAX_IMAGE_PIXELS`` (its current
    value when Pillow is loaded, else its default; no limit when it is None). Above it Pillow
    warns (DecompressionBombWarning) and above twice it refuses the file: such files go to
    Pillow, so the warning and the error stay its own."""
    image = sys.modules.get("PIL.Image")
    limit = getattr(image, "MAX_IMAGE_PIXELS", _PILLOW_LIMIT) if image is not None else _PILLOW_LIMIT
    return float("inf") if limit is None else limit


class PlainPng(NamedTuple):
    width: int
    height: int
    depth: int
    color: int
    data: bytes  # the IDAT chunks' data joined: one zlib stream


def libdeflate():
    """libdeflate's Python binding (``pip install 'rpx-eval[fast-png]'``: the ``deflate``
    package), or None: the standard library's zlib inflates then."""
    try:
        import deflate
    except ImportError:
        return None
    return deflate


def decode(data) -> np.ndarray | None:
    """The pixels of a plain PNG (bytes or a uint8 array holding the file) as Pillow's
    ``np.asarray`` gives them — ``(H, W)`` uint8 (grey, palette indices), ``(H, W, C)`` uint8
    (grey+alpha, RGB, RGBA) or ``(H, W)`` uint16 (16-bit grey) — or None where the native core
    is off or the file is not the plain case (module docstring)."""
    if native.core() is None:
        return None
    png = read_plain(data)
    if png is None or (png.depth, png.color) not in FORMATS or png.width * png.height > pixel_limit():
        return None
    channels = FORMATS[png.depth, png.color]
    bpp = channels * png.depth // 8
    raw = inflate(png.data, png.height * (1 + bpp * png.width))
    if raw is None:
        return None
    out = np.empty((png.height, png.width * bpp), np.uint8)
    if native.core().png_unfilter(raw, png.width, png.height, bpp, png.depth == 16, out) is not None:
        return None  # a filter type above 4: Pillow words it
    if png.depth == 16:
        return out.view("<u2").reshape(png.height, png.width)
    return out.reshape((png.height, png.width) if channels == 1 else (png.height, png.width, channels))


def rgb_ids(data, width: int, height: int) -> np.ndarray | None:
    """The ``(height, width)`` uint32 segment ids (R + 256·G + 256²·B) of an 8-bit RGB PNG whose
    header says ``width`` x ``height``, or None where the native core is off or the file is not
    the plain case."""
    core = native.core()
    if core is None:
        return None
    png = read_plain(data)
    if png is None or (png.depth, png.color) != (8, 2) or (png.width, png.height) != (width, height):
        return None
    raw = inflate(png.data, height * (1 + 3 * width))
    if raw is None:
        return None
    ids = np.empty((height, width), "<u4")
    if core.png_rgb_ids(raw, width, height, ids.view(np.uint8)) is not None:
        return None
    return ids


def inflate(stream: bytes, expected: int) -> bytes | None:
    """The zlib ``stream`` inflated, when it holds exactly ``expected`` bytes (what follows
    the stream's end is ignored, as Pillow ignores it); None otherwise. Never more than
    ``expected + 1`` bytes are made: no decompression bomb. libdeflate when installed (one
    call into a buffer of the known size: 1.5-20x zlib's speed on PNG data), else zlib."""
    fast = libdeflate()
    if fast is not None:
        try:
            raw = fast.zlib_decompress(stream, expected)
        except fast.DeflateError:  # bad data, a wrong check sum, or more than expected bytes
            return None
        return raw if len(raw) == expected else None
    inflating = zlib.decompressobj()
    try:
        raw = inflating.decompress(stream, expected + 1)
    except zlib.error:
        return None
    return raw if len(raw) == expected and inflating.eof else None


def read_plain(data) -> PlainPng | None:
    """The header and joined image data of a PNG, or None for anything but the plain case."""
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    if bytes(view[:8]) != _SIGNATURE:
        return None
    parts: list[memoryview] = []
    header = None
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
            if header is not None or length != 13 or bytes(body[10:13]) != b"\x00\x00\x00":
                return None  # compression 0, filter 0, not interlaced
            width, height = struct.unpack_from(">II", body)
            header = (width, height, body[8], body[9])
        elif kind == b"IDAT":
            if after_image_data or header is None:
                return None
            parts.append(body)
        elif kind == b"IEND":
            if header is None or not parts or not (header[0] and header[1]):
                return None
            return PlainPng(*header, b"".join(parts))
        elif kind[:1].isupper() and kind not in _KNOWN_CRITICAL:
            return None
        elif parts:
            after_image_data = True
        pos = end
