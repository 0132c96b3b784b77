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
  :meth:`RangeIntervals.index_points` gives float32 points their interval without the
  float64 distances: squared norms in float32 decide every point that is not within a
  relative 2^-18 of a limit, and the few that are get the exact float64 distance — the
  same index as :meth:`RangeIntervals.index` of :func:`point_distances`, at ~half the cost.
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
        self._table: tuple[np.ndarray, int] | None = None

    def class_table(self) -> tuple[np.ndarray, int] | None:
        """``(table, width)`` for the native pass over 16-bit raw labels
        (:mod:`rpx_cli.ops.point_counts`): ``table[raw]`` (uint8, 65,536 entries) is the
        class of ``raw``, or ``width - 1`` (the spare class, past every class) when the map
        does not list it. None when the classes are not all in 0..254."""
        if self.dtype != np.uint8:
            return None
        if self._table is None:
            width = int(self.values.max()) + 2
            table = self._lut.copy()
            table[table == self.unmapped] = width - 1
            self._table = (table, width)
        return self._table

    def apply(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(classes, unmapped)``: every label mapped, and the sorted raw labels the map
        does not list (empty when all are listed; their points are then meaningless)."""
        if labels.ndim != 1:
            labels = labels.ravel()  # (a 1-D strided view would be copied: kept as it is)
        if labels.dtype.kind not in "ui":
            raise TypeError(f"labels must be integers, got {labels.dtype}")
        small = labels.dtype in (np.uint8, np.uint16)
        if not small and labels.size:
            small = bool(labels.min() >= 0) and bool(labels.max() < _LUT_SIZE)
        if small:
            mapped = np.take(self._lut, labels)  # ~2x faster than self._lut[labels]
            if not mapped.size:  # an empty scan: nothing to reduce
                return mapped, np.zeros(0, np.int64)
            # the spare code is the largest uint8 or the smallest int64: one reduction
            extreme = mapped.max() if self.dtype == np.uint8 else mapped.min()
            if extreme != self.unmapped:
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
        self._bands = _float32_bands(limits)

    def index_points(self, points: np.ndarray, norm: str) -> np.ndarray:
        """``index(point_distances(points, norm))``, exactly, computed from squared norms.

        ``sqrt`` is monotonic, so ``d >= L`` is ``s >= T`` for the float64 squared norm
        ``s`` and ``T`` the smallest float64 whose square root is ``>= L`` (:func:`_root_floor`).
        For float32 points the float32 squared norm is within a relative 3 x 2^-24 of ``s``:
        a point whose float32 value is clear of ``T`` by a relative 2^-18 is decided by it;
        the rest (a handful a scan, NaN and overflows decide consistently) get the exact
        distance. Other dtypes, and limits whose squares fall outside [1e-20, 1e36], take
        the exact path for every point."""
        bands = self._bands if points.dtype == np.float32 else None
        if bands is None:
            return self.index(point_distances(points, norm))
        columns = 3 if norm == "xyz" else 2
        if norm not in ("xy", "xyz"):
            raise ValueError(f"norm must be 'xy' or 'xyz', got {norm!r}")
        if not bands:
            return np.zeros(points.shape[0], dtype=np.uint8)
        with np.errstate(over="ignore", invalid="ignore"):  # inf decides like float64 does
            squared = np.square(points[:, 0])
            for axis in range(1, columns):
                squared += np.square(points[:, axis])
        dtype = np.uint8 if self.count <= 255 else np.uint16
        sure = np.zeros(squared.shape, dtype=dtype)  # limits passed for sure
        # limits passed for sure or possibly; a limit of 0 has no band (s >= 0 is exact in
        # float32 too), so without a band there is nothing to check
        maybe = None if all(low == high for low, high in bands) else np.zeros_like(sure)
        for low, high in bands:
            passed = squared >= high
            sure += passed
            if maybe is not None:
                maybe += passed if low == high else squared >= low
        if maybe is not None:
            unsure = maybe != sure
            if unsure.any():
                unsure = np.flatnonzero(unsure)
                sure[unsure] = self.index(point_distances(points[unsure], norm))
        return sure

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


def _root_floor(limit: float) -> float:
    """The smallest float64 ``s >= 0`` with ``np.sqrt(s) >= limit`` (0 for a limit <= 0):
    ``sqrt(s) >= limit`` is then exactly ``s >= _root_floor(limit)`` (sqrt is monotonic)."""
    if not limit > 0:
        return 0.0
    s = np.float64(limit) * np.float64(limit)
    while s > 0 and np.sqrt(np.nextafter(s, 0.0)) >= limit:
        s = np.nextafter(s, 0.0)
    while np.sqrt(s) < limit:
        s = np.nextafter(s, np.inf)
    return float(s)


_BAND = 2.0 ** -18  # relative half-width of the undecided band: 21x the float32 error


def _float32_bands(limits: Sequence[float]) -> list[tuple[np.float32, np.float32]] | None:
    """Per limit, float32 ``(low, high)`` bounds on a float32 squared norm: at or above
    ``high`` the float64 distance is ``>= limit`` for sure, below ``low`` it is below for
    sure. None when a limit's square is outside [1e-20, 1e36] (float32 underflow and
    overflow would void the bound): every point then takes the exact path."""
    bands = []
    for limit in limits:
        root = _root_floor(limit)
        if root == 0.0:
            bands.append((np.float32(0.0), np.float32(0.0)))
            continue
        if not 1e-20 <= root <= 1e36:
            return None
        low = np.float32(root * (1 - _BAND))
        if float(low) > root * (1 - _BAND):
            low = np.nextafter(low, np.float32(0))
        high = np.float32(root * (1 + _BAND))
        if float(high) < root * (1 + _BAND):
            high = np.nextafter(high, np.float32(np.inf))
        bands.append((low, high))
    return bands
