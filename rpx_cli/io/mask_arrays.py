"""Binary masks as a training loop holds them, and as a JSON file must not hold them.

In memory (``rpx_cli.Evaluator``) a detection's ``segmentation`` may be a 2-D array of
bool or 0/1 integers, any tensor-like object (anything with ``__array__`` or ``.numpy()``:
torch, jax; :func:`as_array`), or pycocotools' ``encode`` output (``counts`` as bytes).
:func:`mask_runs` turns an array into COCO's uncompressed RLE — the runs of 0s and 1s in
column-major order, starting with 0s — which the mask readers then check and compress
like any RLE of a file (``rpx_cli.ops.masks``: the native encoder on checked runs).

A JSON file cannot hold an array, so a mask written there as a list of rows of 0/1 would
read as polygons (each row a polygon of ``w / 2`` vertices) and score nothing.
:func:`rows_shape` is the rule that tells such rows from polygons: a list of lists of one
length whose every value is 0 or 1 (``true``/``false`` included). A polygon with every
coordinate 0 or 1 lies within the image's first pixel, so no real annotation is refused.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np

from rpx_cli.errors import InputError, first_line

MAX_SIDE = 1_000_000  # an RLE's h and w, as the readers bound a file's


def as_array(value: Any) -> np.ndarray | None:
    """``value`` as a plain numpy array when it is an array (a subclass such as ``np.matrix``
    as its values; a masked array is refused) or tensor-like (``__array__``, or a
    ``.numpy()`` method), else None. A tensor-like that cannot be converted (a torch tensor
    on a GPU, or one that requires grad) is an :class:`InputError` saying how to hand it
    over."""
    if type(value) is np.ndarray:
        return value
    if isinstance(value, np.ma.MaskedArray):
        raise InputError("a masked array: fill its masked values first (np.ma.filled)")
    if isinstance(value, np.ndarray):  # np.matrix, memmap, ...: the values as a plain array
        return np.asarray(value)
    if value is None or isinstance(value, (str, bytes, bytearray, memoryview, dict, list, tuple,
                                           int, float, bool, np.generic)):
        return None
    numpy = getattr(value, "numpy", None)
    if not hasattr(value, "__array__") and not callable(numpy):
        return None
    try:
        array = np.asarray(value) if hasattr(value, "__array__") else np.asarray(numpy())
    except Exception as exc:  # a tensor-like's own refusal, whatever its type
        raise InputError(f"a {type(value).__name__} that cannot be read as a numpy array "
                         f"({first_line(exc)}): give it on the CPU, detached "
                         "(torch: .detach().cpu())") from None
    if array.dtype == object:
        raise InputError(f"a {type(value).__name__} that is not an array of numbers")
    return array


def mask_runs(mask: np.ndarray, where: str, path: str) -> dict[str, Any]:
    """COCO's uncompressed RLE ``{"size": [h, w], "counts": [runs]}`` of a 2-D binary
    ``mask`` (bool, or integers 0 and 1); an :class:`InputError` naming ``where`` for any
    other array (a float mask of probabilities: threshold it first)."""
    if mask.ndim != 2 or not all(0 < side <= MAX_SIDE for side in mask.shape):
        raise InputError(f"{where}: a mask must be a 2-D (h, w) array with sides of 1 to "
                         f"{MAX_SIDE:,}, got shape {mask.shape}", path=path)
    if mask.dtype != bool:
        if not np.issubdtype(mask.dtype, np.integer):
            raise InputError(f"{where}: a mask must be bool or integers 0 and 1, got {mask.dtype} "
                             "(threshold a float mask first)", path=path)
        if mask.min() < 0 or mask.max() > 1:
            raise InputError(f"{where}: a mask must hold 0 and 1 only, got values "
                             f"{int(mask.min())}..{int(mask.max())}", path=path)
    flat = mask.ravel(order="F").astype(bool, copy=False)
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    runs = np.diff(np.concatenate(([0], change, [flat.size])))
    if flat[0]:  # runs start with 0s
        runs = np.concatenate(([0], runs))
    return {"size": [int(mask.shape[0]), int(mask.shape[1])], "counts": runs.tolist()}


def rows_shape(value: list[Any]) -> tuple[int, int] | None:
    """``(h, w)`` when ``value`` (a ``segmentation`` list) is a binary mask written as rows:
    ``h`` lists of one length ``w``, every value 0 or 1 (or true/false); else None. Real
    polygons leave at their first coordinate that is not 0 or 1."""
    if not value or type(value[0]) is not list or not value[0] or \
            not set(map(type, value)) <= {list}:
        return None
    width = len(value[0])
    if set(map(len, value)) != {width} or not set(map(type, value[0][:16])) <= {int, float, bool} \
            or not set(value[0][:16]) <= {0, 1}:
        return None
    items = list(chain.from_iterable(value))
    if not set(map(type, items)) <= {int, float, bool} or not set(items) <= {0, 1}:
        return None
    return len(value), width
