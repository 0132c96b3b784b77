"""Sparse depth points: ``.npy`` of shape (N, 3) ``[x, y, depth]`` or JSON
``{"coordinates": [[x, y], ...], "depths": [...]}``."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.boxes import loads_json
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.npy import parse_npy


class Points(NamedTuple):
    xy: np.ndarray  # (N, 2) float64 pixel coordinates
    depth: np.ndarray  # (N,) float64 metres


def points_from_array(array: np.ndarray, path: str) -> Points:
    if array.ndim != 2 or array.shape[1] != 3 or array.dtype.kind not in "uif":
        raise InputError(f"points must be a numeric (N, 3) array [x, y, depth], got shape "
                         f"{array.shape} of {array.dtype}", path=path)
    values = array.astype(np.float64)
    if not np.isfinite(values[:, :2]).all():
        raise InputError("point coordinates must be finite", path=path)
    return Points(values[:, :2].copy(), values[:, 2].copy())


def parse_points_json(data: np.ndarray, path: str) -> Points:
    document = loads_json(memoryview(data), path)
    if not isinstance(document, dict) or "coordinates" not in document or "depths" not in document:
        raise InputError('expected {"coordinates": [[x, y], ...], "depths": [...]}', path=path)
    try:
        xy = np.asarray(document["coordinates"], dtype=np.float64).reshape(-1, 2)
        depth = np.asarray(document["depths"], dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError("coordinates must be [x, y] number pairs and depths numbers", path=path) from None
    if len(document["coordinates"]) != depth.size or xy.shape[0] != depth.size:
        raise InputError(f"{len(document['coordinates'])} coordinates but {depth.size} depths",
                         path=path)
    if not np.isfinite(xy).all():
        raise InputError("point coordinates must be finite", path=path)
    return Points(xy, depth)


def read_points(path: str, buffer: FileBuffer) -> Points:
    data = buffer.read(path)
    if path.lower().endswith(".json"):
        return parse_points_json(data, path)
    return points_from_array(parse_npy(data, path), path)
