"""Per-point building blocks of point-cloud segmentation: raw → class label maps, point
distances and the distance intervals that range buckets are made of.

- :class:`LabelMap`: a ``{raw: class}`` table (SemanticKITTI's ``learning_map``) applied to
  a whole label array at once (a lookup table for labels below 2^16, a sorted search
  otherwise); labels it does not list are reported, never guessed.
- :func:`point_distances`: ``sqrt(x² + y²)`` (or with ``z²``) in float64.
- :class:`RangeIntervals`: ``[A, B)`` ranges, possibly overlapping, cut into the
  elementary intervals between their limits. Each point gets ONE interval index; a range is
  a run of consecutive intervals, so one confusion matrix per interval (one
  ``np.bincount``) gives every range's matrix exactly, as sums.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

_LUT_SIZE = 1 << 16


class LabelMap:
    """``{raw label: class label}``, applied with :meth:`apply`."""

    def __init__(self, mapping: Mapping[int, int]) -> None:
        keys = np.array(sorted(mapping), dtype=np.int64)
        values = np.array([mapping[int(k)] for k in keys], dtype=np.int64)
        self.keys, self.values = keys, values
        # the narrowest output type that holds every class and one spare code for "unmapped"
        if values.size and values.min() >= 0 and values.max() < 255:
            self.dtype, self.unmapped = np.dtype(np.uint8), 255
        else:
            self.dtype, self.unmapped = np.dtype(np.int64), int(np.iinfo(np.int64).min)
            if values.size and values.min() == self.unmapped:
                raise ValueError(f"class label {self.unmapped} is out of range")
        in_lut = (keys >= 0) & (keys < _LUT_SIZE)
        self._lut = np.full(_LUT_SIZE, self.unmapped, dtype=self.dtype)
        self._lut[keys[in_lut]] = values[in_lut]

    def apply(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(classes, unmapped)``: every label mapped, and the sorted raw labels the map
        does not list (empty when all are listed; their points are then meaningless)."""
        labels = labels.ravel()
        if labels.dtype.kind not in "ui":
            raise TypeError(f"labels must be integers, got {labels.dtype}")
        small = labels.dtype in (np.uint8, np.uint16)
        if not small and labels.size:
            small = bool(labels.min() >= 0) and bool(labels.max() < _LUT_SIZE)
        if small:
            mapped = np.take(self._lut, labels)  # ~2x faster than self._lut[labels]
            # the spare code is the largest uint8 or the smallest int64: one reduction
            extreme = mapped.max() if self.dtype == np.uint8 else mapped.min()
            if not mapped.size or extreme != self.unmapped:
                return mapped, np.zeros(0, np.int64)
            missing = mapped == self.unmapped
        else:
            at = np.searchsorted(self.keys, labels)
            at = np.minimum(at, max(self.keys.size - 1, 0))
            found = self.keys[at] == labels if self.keys.size else np.zeros(labels.size, bool)
            mapped = np.where(found, self.values[at] if self.keys.size else 0,
                              self.unmapped).astype(self.dtype)
            missing = ~found
        unmapped = np.unique(labels[missing]).astype(np.int64) if missing.any() else \
            np.zeros(0, np.int64)
        return mapped, unmapped


def reference_label_map(mapping: Mapping[int, int], labels: np.ndarray) -> tuple[list[int], list[int]]:
    """:meth:`LabelMap.apply` written plainly (a dict lookup per label): the mapped labels
    (None where unmapped) and the sorted unmapped raw labels."""
    mapped = [mapping.get(int(label)) for label in labels.ravel()]
    unmapped = sorted({int(label) for label, m in zip(labels.ravel(), mapped, strict=True)
                       if m is None})
    return mapped, unmapped


def point_distances(points: np.ndarray, norm: str) -> np.ndarray:
    """The distance of every point from the sensor origin in float64: ``"xy"`` =
    ``sqrt(x² + y²)`` (range in the ground plane, what autoware-ml buckets by), ``"xyz"``
    adds ``z²``. ``points`` is (N, >= 2) (>= 3 for xyz), any numeric type.

    The squares of float32 coordinates are exact in float64, so this differs from
    ``numpy.hypot`` by at most one unit in the last place (``hypot`` is ~7x slower here).
    autoware-ml computes the norm in float32 (about 4e-6 m at 50 m).
    """
    columns = 3 if norm == "xyz" else 2
    if norm not in ("xy", "xyz"):
        raise ValueError(f"norm must be 'xy' or 'xyz', got {norm!r}")
    out = np.square(points[:, 0], dtype=np.float64)
    for axis in range(1, columns):
        out += np.square(points[:, axis], dtype=np.float64)
    return np.sqrt(out, out=out)


class RangeIntervals:
    """``[low, high)`` ranges (``high`` None = unbounded) as elementary intervals.

    The distinct limits ``b_0 < b_1 < ... < b_{K-1}`` cut the line into ``K + 1`` intervals:
    interval 0 is ``d < b_0`` (and NaN), interval ``k`` is ``[b_{k-1}, b_k)``, interval
    ``K`` is ``d >= b_{K-1}`` (infinity included). Range ``r`` is the run of intervals
    ``spans[r] = (first, stop)``.
    """

    def __init__(self, ranges: Sequence[tuple[float, float | None]]) -> None:
        limits = sorted({float(low) for low, _ in ranges} |
                        {float(high) for _, high in ranges if high is not None})
        self.limits = np.array(limits, dtype=np.float64)
        self.count = len(limits) + 1
        position = {value: index for index, value in enumerate(limits)}
        self.spans = [(position[float(low)] + 1,
                       self.count if high is None else position[float(high)] + 1)
                      for low, high in ranges]

    def index(self, distance: np.ndarray) -> np.ndarray:
        """Each point's interval: the number of limits ``<=`` its distance (uint8 for up to
        254 limits), by one comparison pass per limit."""
        dtype = np.uint8 if self.count <= 255 else np.uint16
        out = np.zeros(distance.shape, dtype=dtype)
        for limit in self.limits:  # a few limits: one vectorised pass each
            out += distance >= limit
        return out

    def reference_index(self, distance: np.ndarray) -> np.ndarray:
        """:meth:`index` with ``np.searchsorted`` (NaN sorts last there: mapped to 0)."""
        found = np.searchsorted(self.limits, distance, side="right")
        return np.where(np.isnan(distance), 0, found)
