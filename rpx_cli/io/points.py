"""Sparse depth points: ``.npy`` of shape (N, 3) ``[x, y, depth]`` or JSON
``{"coordinates": [[x, y], ...], "depths": [...]}``."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.json import loads_json
from rpx_cli.io.npy import parse_npy
from rpx_cli.io.values import MAX_MAGNITUDE, beyond, json_numbers


class Points(NamedTuple):
    xy: np.ndarray  # (N, 2) float64 pixel coordinates
    depth: np.ndarray  # (N,) float64 metres


def points_from_array(array: np.ndarray, path: str) -> Points:
    if array.ndim != 2 or array.shape[1] != 3 or array.dtype.kind not in "uif":
        raise InputError(f"points must be a numeric (N, 3) array [x, y, depth], got shape "
                         f"{array.shape} of {array.dtype}", path=path)
    values = array.astype(np.float64)
    return Points(_coordinates(values[:, :2].copy(), path), values[:, 2].copy())


def _coordinates(xy: np.ndarray, path: str) -> np.ndarray:
    if not np.isfinite(xy).all():
        raise InputError("point coordinates must be finite", path=path)
    if beyond(xy).any():
        raise InputError(f"a point coordinate is beyond ±{MAX_MAGNITUDE:g} px", path=path)
    return xy


def parse_points_json(data: np.ndarray, path: str) -> Points:
    document = loads_json(data, path)
    if not isinstance(document, dict) or "coordinates" not in document or "depths" not in document:
        raise InputError('expected {"coordinates": [[x, y], ...], "depths": [...]}', path=path)
    # numbers only: strings and booleans are refused, not converted
    coordinates, depths = document["coordinates"], document["depths"]
    xy = np.zeros((0, 2)) if isinstance(coordinates, list) and not coordinates else \
        json_numbers(coordinates, 2)
    depth = json_numbers(depths, 1)
    if xy is None or xy.shape[1] != 2 or depth is None:
        raise InputError("coordinates must be [x, y] number pairs and depths numbers", path=path)
    if xy.shape[0] != depth.size:
        raise InputError(f"{xy.shape[0]} coordinates but {depth.size} depths", path=path)
    return Points(_coordinates(xy, path), depth)


def read_points(path: str, buffer: FileBuffer) -> Points:
    data = buffer.read(path)
    if path.lower().endswith(".json"):
        return parse_points_json(data, path)
    return points_from_array(parse_npy(data, path), path)
