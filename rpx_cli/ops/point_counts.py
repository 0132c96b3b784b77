"""A lidar scan's confusion counts straight from its SemanticKITTI label words, in one pass.

A ``.label`` file holds one little-endian uint32 a point (semantic label in the low 16 bits).
:func:`word_confusions` gives what :func:`~rpx_cli.ops.confusion.interval_confusions` gives
for the two scans' labels mapped by ``--label-map`` — ``(gt_values, pred_values, counts)``,
the same arrays — in one pass of the native core (``point_label_counts``, ``csrc/seg3d.c``):
per point, both words masked, mapped through the learning map as a lookup table and counted
at ``(interval, GT class, predicted class)``, where the numpy form makes a dozen passes (two
gathers through the table, the codes, ``np.bincount``). :func:`reference_word_confusions` is
that numpy form, the twin (``RPX_NATIVE=0``).

It declines (None) whatever it does not take — no native core, a map whose classes are not
all in 0..254, an empty scan, scans of different sizes, more than 255 intervals — and every
scan holding a raw label the map does not list: the caller's numpy path then words the error
exactly as before (the kernel only counts such points, under the table's spare class).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from rpx_cli import native
from rpx_cli.ops.confusion import interval_confusions, not_in
from rpx_cli.ops.lidar import LabelMap

_MAX_DENSE_COUNTS = 1 << 20  # interval_confusions' bound on dense matrices (same arrays here)


def native_pass() -> bool:
    """Whether :func:`word_confusions` runs the native core's single pass (its caller then
    keeps a scan's raw label words for it)."""
    return native.core() is not None


def word_confusions(gt: np.ndarray, pred: np.ndarray, label_map: LabelMap,
                    interval: np.ndarray | None, n_intervals: int,
                    ignore: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`reference_word_confusions` by the native core, or None where it declines (see
    the module): ``gt`` and ``pred`` are the scans' uint32 words (little-endian, as read),
    ``interval`` each point's uint8 interval (None: one)."""
    core = native.core()
    table = label_map.class_table()
    if (core is None or table is None or sys.byteorder != "little" or gt.dtype != np.uint32
            or pred.dtype != np.uint32 or gt.size != pred.size or not gt.size):
        return None
    if interval is None:
        n_intervals = 1
    elif interval.dtype != np.uint8 or interval.size != gt.size or n_intervals > 255:
        return None
    lut, width = table
    out = np.zeros((n_intervals, width, width), np.int64)
    # classes 0 .. rows - 1 and 0 .. cols - 1 hold the counts: the numpy form's values
    rows, cols = core.point_label_counts(
        np.ascontiguousarray(gt), np.ascontiguousarray(pred), lut, width,
        None if interval is None else np.ascontiguousarray(interval), n_intervals, out)
    if rows == width or cols == width:  # the spare class: a raw label the map does not list
        return None
    if n_intervals * rows * cols > _MAX_DENSE_COUNTS:  # the numpy form compacts these
        return None
    gt_values, pred_values = _values(rows), _values(cols)
    counts = out[:, :rows, :cols]
    if len(ignore):
        keep = _kept(rows, tuple(ignore))
        gt_values, counts = gt_values[keep], counts[:, keep]
    return gt_values, pred_values, counts


@lru_cache(maxsize=512)
def _values(size: int) -> np.ndarray:
    values = np.arange(size, dtype=np.int64)
    values.flags.writeable = False  # shared by every scan with this many classes
    return values


@lru_cache(maxsize=512)
def _kept(size: int, ignore: tuple[int, ...]) -> np.ndarray:
    return not_in(_values(size), ignore)


def reference_word_confusions(gt: np.ndarray, pred: np.ndarray, label_map: LabelMap,
                              interval: np.ndarray | None, n_intervals: int,
                              ignore: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The numpy form: each side's semantic labels (the low 16 bits of each word) through
    :meth:`LabelMap.apply`, then :func:`interval_confusions`. A ``ValueError`` when a side
    holds a raw label the map does not list."""
    mapped = []
    for words in (gt, pred):
        labels, unmapped = label_map.apply(semantic_labels(words))
        if unmapped.size:
            raise ValueError(f"label(s) {unmapped.tolist()} are not in the label map")
        mapped.append(labels)
    return interval_confusions(mapped[0], mapped[1], interval, n_intervals, tuple(ignore))


def semantic_labels(words: np.ndarray) -> np.ndarray:
    """The semantic label of each SemanticKITTI word, ``word & 0xFFFF``: a zero-copy view of
    the low halves of little-endian uint32 words (as :func:`rpx_cli.io.lidar.read_point_labels`
    reads them)."""
    return words.view("<u2")[0::2]
