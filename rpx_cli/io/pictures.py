"""Pictures embedded in a report for its page (``--images-dir``, ``--keep-worst``): an
image found by stem, downscaled and encoded as a ``data:`` URI, and an overlay (an RGBA
array a task drew) encoded at the same size. The page is built from the report alone, so
what it shows of a frame must be in the report, and small: every picture is capped.

Pillow (imageio's image backend) is imported here only, on first use. A missing or
unreadable image is the caller's warning, never a failed run: :func:`thumbnail` raises
:class:`~rpx_cli.errors.InputError` naming the file and the problem.
"""

from __future__ import annotations

import base64
import io
import os
from dataclasses import dataclass

import numpy as np

from rpx_cli.errors import InputError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
MAX_SIDE = 320  # pixels: the longest side of an embedded picture
MAX_PICTURE_BYTES = 48_000  # one encoded picture; past it JPEG quality, then size, go down
JPEG_QUALITY = 80


@dataclass(frozen=True)
class Picture:
    """An encoded picture: its ``data:`` URI, its size, and the factor from the source's
    pixels to its own (boxes in source pixels are drawn multiplied by ``scale``)."""

    uri: str
    width: int
    height: int
    scale: float

    def as_json(self) -> dict[str, object]:
        return {"data": self.uri, "width": self.width, "height": self.height, "scale": self.scale}


def find_image(images_dir: str, stem: str) -> str | None:
    """The image of ``stem`` under ``images_dir`` (``<stem>.<suffix>``, the suffix matched
    case-insensitively, as pairing matches them), or None."""
    folder, base = os.path.split(os.path.join(images_dir, *stem.split("/")))
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    for name in names:
        head, dot, suffix = name.rpartition(".")
        if dot and head == base and "." + suffix.lower() in IMAGE_SUFFIXES:
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                return path
    return None


def fitted(width: int, height: int, max_side: int = MAX_SIDE) -> tuple[int, int, float]:
    """``(width, height, scale)`` of a ``width`` x ``height`` picture shrunk to fit
    ``max_side`` (never enlarged)."""
    scale = min(1.0, max_side / max(width, height, 1))
    return max(1, round(width * scale)), max(1, round(height * scale)), scale


def thumbnail(path: str, max_side: int = MAX_SIDE) -> Picture:
    """The image at ``path`` shrunk to fit ``max_side`` and encoded as JPEG (within
    :data:`MAX_PICTURE_BYTES`). Raises :class:`InputError` for a file Pillow cannot read."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image.load()
            source = image.size
            picture = _rgb(image)
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError) as exc:
        raise InputError(f"cannot read the image ({exc})", path=path) from None
    width, height, _ = fitted(*source, max_side)
    picture = picture.resize((width, height), Image.Resampling.BOX)
    uri, picture = _jpeg(picture)
    return Picture(uri, picture.width, picture.height, picture.width / source[0])


def overlay(rgba: np.ndarray, width: int, height: int, *, smooth: bool = False) -> Picture:
    """An RGBA array (``uint8``, H x W x 4) resized to ``width`` x ``height`` (nearest
    neighbour for labels, ``smooth``: box filter) and encoded as PNG."""
    from PIL import Image

    picture = Image.fromarray(np.ascontiguousarray(rgba), "RGBA")
    method = Image.Resampling.BOX if smooth else Image.Resampling.NEAREST
    source = picture.width
    picture = picture.resize((width, height), method)
    while True:
        data = _encode(picture, "PNG", optimize=True)
        if len(data) <= MAX_PICTURE_BYTES or max(picture.size) <= 32:
            break
        picture = picture.resize((max(1, picture.width * 3 // 4), max(1, picture.height * 3 // 4)),
                                 method)
    return Picture(_uri("image/png", data), picture.width, picture.height, picture.width / source)


def _rgb(image):
    if image.mode in ("RGB", "L"):
        return image.convert("RGB")
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):  # depth-like: stretch to 8 bits
        array = np.asarray(image, dtype=np.float64)
        finite = array[np.isfinite(array)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        scaled = np.clip((array - lo) / ((hi - lo) or 1.0) * 255.0, 0, 255)
        from PIL import Image

        return Image.fromarray(np.nan_to_num(scaled).astype(np.uint8), "L").convert("RGB")
    return image.convert("RGB")


def _jpeg(picture):
    quality = JPEG_QUALITY
    while True:
        data = _encode(picture, "JPEG", quality=quality, optimize=True)
        if len(data) <= MAX_PICTURE_BYTES or max(picture.size) <= 32:
            return _uri("image/jpeg", data), picture
        if quality > 50:
            quality -= 15
        else:
            picture = picture.resize((max(1, picture.width * 3 // 4), max(1, picture.height * 3 // 4)))


def _encode(picture, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    picture.save(buffer, fmt, **options)
    return buffer.getvalue()


def _uri(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
