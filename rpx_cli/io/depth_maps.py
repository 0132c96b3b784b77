"""Depth maps as every task reads them (``depth``, ``sparse-depth``, ``coherence``,
``stability``): float metres, or integers in 1/``--depth-scale`` metres, checked for shape
and type."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rpx_cli.errors import InputError

_EIGHT_BIT_IMAGE = ("png", "pgm", "tiff")


class DepthMap(NamedTuple):
    """A depth map: float metres, or integers in 1/``scale`` metres (scale set)."""

    values: np.ndarray
    scale: float | None = None

    @property
    def exact_in_float32(self) -> bool:
        return self.scale is None and self.values.dtype in (np.float32, np.float16)

    def metres(self, dtype: type) -> np.ndarray:
        """Metres in ``dtype``: integers / scale rounded once; floats converted."""
        if self.scale is None:
            return self.values.astype(dtype, copy=False)
        return np.divide(self.values, self.scale, dtype=dtype)


def to_depth(array: np.ndarray, fmt: str, depth_scale: float, path: str) -> DepthMap:
    """Check a loaded array: 2-D and numeric; integers are read as 1/``depth_scale`` m."""
    if array.ndim == 3 and 1 in (array.shape[0], array.shape[2]):
        array = array.reshape(array.shape[1:] if array.shape[0] == 1 else array.shape[:2])
    if array.ndim != 2:
        raise InputError(f"depth map must be 2-D (H, W), got shape {array.shape}", path=path)
    if array.dtype == np.uint8 and fmt in _EIGHT_BIT_IMAGE:
        raise InputError(
            "8-bit depth image: a depth map saved through an 8-bit path has lost its values; "
            "save depth as 16-bit PNG (millimetres) or .npy",
            path=path,
        )
    kind = array.dtype.kind
    if kind in "iu":
        return DepthMap(array, float(depth_scale))
    if kind == "f":
        return DepthMap(array)
    raise InputError(f"depth map has unsupported dtype {array.dtype}", path=path)
