"""Image sizes from file headers, never a full decode (normalised formats — YOLO, Open
Images — need each image's width and height): PNG, JPEG (the first SOF marker), GIF, BMP,
WebP (VP8, VP8L, VP8X) and TIFF, read from the first bytes of the file (a JPEG's SOF may
come after its EXIF thumbnail: the markers are walked, reading more only as needed).

:class:`ImageSizes` finds a label file's image under ``--images-dir`` by stem: the label's
path without its suffix, matched by its longest tail of path components that is a stem
of the images folder (``labels/val/a/0001.txt`` finds ``images/val/a/0001.jpg`` through
``val/a/0001`` or ``a/0001`` or ``0001``), so it works without knowing the label folder's
root, for files and for ``Evaluator.update`` keys alike."""

from __future__ import annotations

import os
import struct

from rpx_cli.errors import InputError
from rpx_cli.io.pictures import IMAGE_SUFFIXES

_HEAD = 64 * 1024


def header_size(path: str) -> tuple[int, int]:
    """``(width, height)`` of the image ``path`` from its header."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD)
            size = _size(head, handle)
    except OSError as exc:
        raise InputError(f"cannot read the image: {exc.strerror or exc}", path=path) from None
    if size is None or size[0] <= 0 or size[1] <= 0:
        raise InputError("not an image whose size its header gives (PNG, JPEG, GIF, BMP, WebP, "
                         "TIFF)", path=path)
    return size


def _size(head: bytes, handle) -> tuple[int, int] | None:
    if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        return struct.unpack(">II", head[16:24])
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return struct.unpack("<HH", head[6:10])
    if head[:2] == b"BM" and len(head) >= 26:
        width, height = struct.unpack("<ii", head[18:26])
        return width, abs(height)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp(head)
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return _tiff(head)
    if head[:2] == b"\xff\xd8":
        return _jpeg(head, handle)
    return None


def _webp(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8 " and len(head) >= 30:
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(head) >= 25:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(head) >= 30:
        return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
    return None


def _tiff(head: bytes) -> tuple[int, int] | None:
    order = "<" if head[:2] == b"II" else ">"
    (offset,) = struct.unpack(order + "I", head[4:8])
    if offset + 2 > len(head):
        return None
    (count,) = struct.unpack(order + "H", head[offset:offset + 2])
    found = {}
    for k in range(count):
        at = offset + 2 + 12 * k
        if at + 12 > len(head):
            break
        tag, kind = struct.unpack(order + "HH", head[at:at + 4])
        if tag in (256, 257):
            value = struct.unpack(order + ("H" if kind == 3 else "I"),
                                  head[at + 8:at + (10 if kind == 3 else 12)])[0]
            found[tag] = value
    if 256 in found and 257 in found:
        return found[256], found[257]
    return None


def _jpeg(head: bytes, handle) -> tuple[int, int] | None:
    data, at = head, 2
    while True:
        while len(data) < at + 9:
            more = handle.read(_HEAD)
            if not more:
                return None
            data += more
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2:at + 4])
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD,
                      0xCE, 0xCF):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        if marker == 0xD9:
            return None
        at += 2 + length


def _parts(path: str) -> list[str]:
    return [part for part in path.replace("\\", "/").split("/") if part]


class ImageSizes:
    """``(height, width)`` of the image of each label file: ``--image-size W,H`` for every
    image, else the header of the file of the same stem under ``--images-dir``. One per
    process, memoised (a folder is listed once, a header read once)."""

    def __init__(self, images_dir: str | None, image_size: tuple[int, int] | None) -> None:
        self.images_dir = images_dir
        self.fixed = None if image_size is None else (int(image_size[1]), int(image_size[0]))
        self._stems: dict[str, str] | None = None
        self._sizes: dict[str, tuple[int, int]] = {}

    def _index(self) -> dict[str, str]:
        if self._stems is None:
            stems: dict[str, str] = {}
            root = self.images_dir or ""
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    base, dot, suffix = name.rpartition(".")
                    if dot and not name.startswith(".") and "." + suffix.lower() in IMAGE_SUFFIXES:
                        rel = os.path.relpath(os.path.join(folder, base), root).replace(os.sep, "/")
                        stems.setdefault(rel, os.path.join(folder, name))
            self._stems = stems
        return self._stems

    def of(self, path: str) -> tuple[int, int]:
        """``(height, width)`` for the label file (or ``Evaluator`` key) ``path``."""
        if self.fixed is not None:
            return self.fixed
        if not self.images_dir:
            raise InputError("normalised coordinates need the image size: give --images-dir "
                             "DIR (image headers, paired by stem) or --image-size W,H", path=path)
        parts = _parts(os.path.splitext(path)[0] if "." in os.path.basename(path) else path)
        index = self._index()
        for k in range(len(parts)):
            stem = "/".join(parts[k:])
            if stem in index:
                image = index[stem]
                if image not in self._sizes:
                    width, height = header_size(image)
                    self._sizes[image] = (height, width)
                return self._sizes[image]
        raise InputError(f"no image for this file in --images-dir {self.images_dir} (an image "
                         "with its stem: .jpg, .png, ...)", path=path)


_CACHE: dict[tuple, ImageSizes] = {}


def image_sizes(images_dir: str | None, image_size) -> ImageSizes:
    """The process's :class:`ImageSizes` for these options (workers are forked: each keeps
    its own)."""
    key = (images_dir, None if image_size is None else tuple(image_size))
    if key not in _CACHE:
        _CACHE[key] = ImageSizes(images_dir, image_size)
    return _CACHE[key]
