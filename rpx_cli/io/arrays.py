"""Read one array-valued file of any supported format, chosen by suffix."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.images import decode_image
from rpx_cli.io.npy import parse_npy, parse_npz
from rpx_cli.io.pgm import parse_pgm

ARRAY_SUFFIXES = (".npy", ".npz")
IMAGE_SUFFIXES = (".png", ".pgm", ".tif", ".tiff", ".jpg", ".jpeg")


@dataclass(frozen=True)
class Loaded:
    """An array and what its file said about its scale.

    ``format`` is ``npy``, ``npz``, ``pgm``, ``png``, ``jpeg`` or ``tiff``; ``maxval`` is the largest
    value the encoding can hold (PGM maxval; 255 or 65535 for 8/16-bit PNG and TIFF) and
    None for ``.npy``/``.npz`` and float images, whose values carry their own scale.
    """

    array: np.ndarray
    format: str
    maxval: int | None


def read_array(path: str, buffer: FileBuffer, *, npz_key: str | None = None) -> Loaded:
    """Read ``path`` through ``buffer``. Zero-copy for ``.npy`` and P5 PGM."""
    suffix = os.path.splitext(path)[1].lower()
    data = buffer.read(path)
    if suffix == ".npy":
        return Loaded(parse_npy(data, path), "npy", None)
    if suffix == ".npz":
        if npz_key is None:
            raise InputError(".npz files are not read by this command", path=path)
        return Loaded(parse_npz(data, path, npz_key, check=_map_shaped), "npz", None)
    if suffix == ".pgm":
        samples, maxval = parse_pgm(data, path)
        return Loaded(samples, "pgm", maxval)
    if suffix in (".png", ".tif", ".tiff", ".jpg", ".jpeg"):
        image = decode_image(data, path)
        fmt = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg"}.get(suffix, "tiff")
        return Loaded(image, fmt, _dtype_maxval(image.dtype))
    raise InputError(f"unsupported file type '{suffix}'", path=path)


def _map_shaped(shape: tuple[int, ...], dtype: np.dtype) -> str | None:
    """Why an ``.npz`` member cannot be a map (checked on its header, before inflating)."""
    if len(shape) not in (2, 3):
        return f"must be 2-D (H, W), got shape {shape}"
    if dtype.kind not in "biuf":
        return f"has unsupported dtype {dtype}"
    return None


def _dtype_maxval(dtype: np.dtype) -> int | None:
    if dtype == np.uint8:
        return 255
    if dtype == np.uint16:
        return 65535
    return None
