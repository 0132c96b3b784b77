"""2-D label maps (class indices per pixel) as ``segmentation``, ``coherence`` and
``stability`` read them: a single-channel PNG (L, P, I;16) or an integer ``.npy``."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.arrays import Loaded, read_array
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.values import check_labels_fit


def read_label_image(path: str, buffer: FileBuffer) -> Loaded:
    """The label map at ``path`` (integers; a boolean map as uint8) with its format; a
    colour image, a map that is not 2-D or a float map is an :class:`InputError`."""
    loaded = read_array(path, buffer)
    labels = loaded.array
    if labels.ndim == 3 and labels.shape[2] in (3, 4):
        raise InputError(
            f"label map has {labels.shape[2]} channels (a colour image?); save class "
            "indices as a single-channel (L, P or I;16) PNG or an integer .npy",
            path=path,
        )
    if labels.ndim != 2:
        raise InputError(f"label map must be 2-D (H, W), got shape {labels.shape}", path=path)
    if labels.dtype == np.bool_:
        return replace(loaded, array=labels.view(np.uint8))
    if labels.dtype.kind not in "iu":
        raise InputError(
            f"label map has dtype {labels.dtype}; labels must be integers (a float map is "
            "a score map, not labels)",
            path=path,
        )
    check_labels_fit(labels, path)
    return loaded
