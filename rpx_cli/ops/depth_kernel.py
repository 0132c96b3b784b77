"""The sums of depth frames (:class:`~rpx_cli.ops.depth.DepthSums`): :class:`DepthKernel`,
which runs the native core's one pass (``depth_sums``, ``rpx_cli/csrc/depth.c``) where it
applies and its numpy twin, a chunk-by-chunk computation in a reused workspace, everywhere
else; :func:`shared_kernel` (one per process and precision) and :func:`frame_sums` for
tests and notebooks. The metrics' definitions are in :mod:`rpx_cli.ops.depth`."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rpx_cli import native
from rpx_cli.ops.depth import DELTA_THRESHOLDS, PRED_FLOOR, DepthSums, combine
from rpx_cli.ops.depth_bins import BIN_OFFSET, N_BINS, DepthHistogram, depth_bins
from rpx_cli.ops.depth_log import log_ratio32


def _total(values: np.ndarray) -> float:
    """Σ values accumulated in float64.

    float32 input is summed in blocks of 1024 (numpy's pairwise float32 reduction, error
    ~1e-8 relative) and the block sums in float64: as fast as a plain float32 sum and
    within ~1e-8 of an exact float64 sum. float64 input: numpy's pairwise sum.
    """
    if values.dtype != np.float32:
        return float(values.sum())
    whole = values.size // 1024 * 1024
    total = float(values[whole:].sum(dtype=np.float64))
    if whole:
        total += float(values[:whole].reshape(-1, 1024).sum(axis=1).sum(dtype=np.float64))
    return total


def gt_valid(gt: np.ndarray, gt_scale: float | None) -> np.ndarray:
    """The pixels with a GT depth: > 0 and finite (floats), > 0 (integers in 1/``gt_scale`` m)."""
    if gt_scale is not None:
        return np.greater(gt, 0)
    valid = np.greater(gt, gt.dtype.type(0))
    valid &= np.less(gt, gt.dtype.type(np.inf))
    return valid


class NonFinitePrediction(ValueError):
    """The prediction is NaN or infinite at ``count`` valid pixels."""

    def __init__(self, count: int) -> None:
        super().__init__(f"prediction has {count} non-finite value(s) (NaN or inf) at valid GT pixels")
        self.count = count


_SHARED: dict[np.dtype, DepthKernel] = {}


def shared_kernel(dtype: type) -> DepthKernel:
    """This process's :class:`DepthKernel` for ``dtype``: one workspace per process and
    precision, reused by every frame (a module-level cache; workers are processes)."""
    key = np.dtype(dtype)
    if key not in _SHARED:
        _SHARED[key] = DepthKernel(key)
    return _SHARED[key]


class DepthKernel:
    """Sufficient statistics of depth frames, computed chunk by chunk in a reused workspace.

    Per chunk of ``chunk`` pixels the prediction is copied into a work buffer and clipped,
    invalid pixels are made neutral (``p = g = 1``: every term exactly 0, every ratio
    exactly 1), and each per-pixel term is written into its own preallocated buffer. No
    array is allocated per frame (no page faults, no heap growth over a long run) and the
    working set stays in cache. Chunk sums are pooled with :func:`combine`.

    ``dtype`` float32 halves the memory traffic and is used only when it holds the
    prediction exactly (float32 or float16 sources) and the GT exactly or to one rounding
    (integers / scale): every term then has a relative error of a few float32 ulps, so the
    metrics agree with float64 to ~1e-7 for realistic errors. Two details keep it exact
    where it must be:

    - the log ratio is :func:`~rpx_cli.ops.depth_log.log_ratio32`: the ratio's exponent
      times ln 2 plus fdlibm's log1p polynomial of its mantissa, with (p − g)/g itself
      where the ratio is near 1, so p ≈ g and p << g keep full accuracy; only arithmetic
      numpy vectorises on every CPU (its ``log1p`` is a scalar loop without AVX-512);
    - deltas are decided in float32 from |d| < ln T (|d| < ln T ⇔ max(p/g, g/p) < T)
      unless |d| lies within 1e-6 (relative) of ln T; those few are re-decided in float64
      from the exact inputs with the reference expression ``max(p/g, g/p) < T``, so the
      counts are exact. (|d| is within 3e-7 of itself, and rounding integer GT / scale to
      float32 moves it by at most 6e-8, 2.7e-7 of ln 1.25.)
    """

    _AMBIGUOUS = 1e-6
    _FLOATS = ("p", "g", "d", "r", "q", "l", "w", "x", "s", "y", "c")
    _BOOLS = ("hit", "low", "band", "far")
    _INTS = ("gbin", "pbin", "bits")

    def __init__(self, dtype: type = np.float32, chunk: int = 1 << 17) -> None:
        self.dtype = np.dtype(dtype)
        self.chunk = chunk
        self._f = {name: np.empty(chunk, self.dtype) for name in self._FLOATS}
        self._b = {name: np.empty(chunk, bool) for name in self._BOOLS}
        # invalid pixels made neutral by bit selection: ``keep`` all ones where valid,
        # ``ones`` the bits of 1.0 where not (a select whose cost does not follow the mask:
        # np.copyto(where=) branches per element, ~6x slower on a scattered mask)
        bits = np.dtype(f"u{self.dtype.itemsize}")
        self._u = {name: np.empty(chunk, bits) for name in ("keep", "ones")}
        self._all_ones = np.iinfo(bits).max
        self._one_bits = np.array(1, self.dtype).view(bits)[()]
        self._i: dict[str, np.ndarray] = {}  # the histogram's bins, made when first asked

    def sums(self, pred: np.ndarray, gt: np.ndarray, *, valid: np.ndarray | None = None,
             gt_scale: float | None = None,
             bands: Sequence[tuple[float, float | None]] = (),
             histogram: DepthHistogram | None = None, valid_from_gt: bool = False) -> list[DepthSums]:
        """``[all valid pixels, band 1, band 2, ...]`` of one frame.

        ``pred``: 1-D metres; ``gt``: 1-D metres, or integers when ``gt_scale`` is given
        (metres = gt / gt_scale); ``valid``: 1-D bool, None when every pixel is valid;
        ``valid_from_gt``: instead of ``valid``, the pixels whose GT is > 0 and finite;
        ``histogram``: the frame's error by depth is added into it.
        Raises :class:`NonFinitePrediction` for NaN/inf predictions at valid pixels.

        The native core's ``depth_sums`` (one fused pass, ~3x faster) computes the whole-frame
        sums of float32 predictions against float32 or uint16 GT when no band or histogram
        is asked; the numpy chunks below are its twin and the path for everything else.
        """
        fused = self._native_sums(pred, gt, valid, gt_scale, bands, valid_from_gt)
        if fused is not None:
            if histogram is not None:  # the error by depth from the numpy chunks (its sums unused)
                self.numpy_sums(pred, gt, valid=self._valid_of(gt, valid, gt_scale, valid_from_gt),
                                gt_scale=gt_scale, histogram=histogram)
            return fused
        if valid_from_gt:
            valid = gt_valid(gt, gt_scale)
            valid = None if bool(valid.all()) else valid
        return self.numpy_sums(pred, gt, valid=valid, gt_scale=gt_scale, bands=bands,
                               histogram=histogram)

    def numpy_sums(self, pred: np.ndarray, gt: np.ndarray, *, valid: np.ndarray | None = None,
                   gt_scale: float | None = None,
                   bands: Sequence[tuple[float, float | None]] = (),
                   histogram: DepthHistogram | None = None) -> list[DepthSums]:
        """:meth:`sums` by numpy chunks: the native pass's twin, and the path for bands, the
        histogram, float64 and other dtypes."""
        parts: list[list[DepthSums]] = [[] for _ in range(1 + len(bands))]
        bad = 0
        if histogram is not None and not self._i:
            self._i = {name: np.empty(self.chunk, np.intp) for name in self._INTS}
        for start in range(0, pred.size, self.chunk):
            stop = min(start + self.chunk, pred.size)
            mask = None if valid is None else valid[start:stop]
            bad += self._chunk(pred, gt, start, stop, mask, gt_scale, bands, parts, histogram)
        if bad:
            raise NonFinitePrediction(bad)
        return [combine(chunks) for chunks in parts]

    def _native_sums(self, pred, gt, valid, gt_scale, bands, valid_from_gt) -> list[DepthSums] | None:
        """``[frame, band 1, ...]`` by the native core (a band: one more pass over the band's
        pixels), or None where it does not apply: the same arithmetic for the frame whatever
        bands or histogram are asked, so ``--range`` and ``by_depth`` change no other number."""
        core = native.core()
        if (core is None or self.dtype != np.float32 or pred.dtype != np.float32
                or gt.dtype != (np.float32 if gt_scale is None else np.uint16)
                or not (pred.flags.c_contiguous and gt.flags.c_contiguous)):
            return None
        if valid is None and not valid_from_gt:  # every pixel valid: say so with a mask
            valid = np.ones(pred.size, bool)
        elif valid is not None and not valid.flags.c_contiguous:
            valid = np.ascontiguousarray(valid)
        scale = float(gt_scale or 0.0)
        masks = [valid]
        if bands:  # the numpy chunks' band test: float32 metres against float64 limits
            metres = gt
            if gt_scale is not None:  # rounded once from float64, as the chunks divide
                metres = np.empty(gt.shape, np.float32)
                np.divide(gt, gt_scale, out=metres, casting="unsafe")
            within = self._valid_of(gt, valid, gt_scale, valid_from_gt)
            for low, high in bands:
                band = np.greater_equal(metres, np.float64(low))
                if high is not None:
                    band &= np.less(metres, np.float64(high))
                masks.append(band & within if within is not None else band)
        out = []
        for mask in masks:
            *values, bad = core.depth_sums(pred, gt, scale, mask, *DELTA_THRESHOLDS)
            if bad:
                raise NonFinitePrediction(bad)
            out.append(DepthSums(*values) if values[0] else DepthSums())
        return out

    @staticmethod
    def _valid_of(gt, valid, gt_scale, valid_from_gt) -> np.ndarray | None:
        """The frame's valid pixels as a mask (None: all of them)."""
        return gt_valid(gt, gt_scale) if valid_from_gt else valid

    def _histogram(self, p, g, abs_rel, sq_err, neutral: int, histogram: DepthHistogram) -> None:
        """The chunk's pixels into ``histogram``; the ``neutral`` pixels (p = g = 1, every
        term 0) are taken back out of the bin of 1 m."""
        size = p.size
        i = {name: buffer[:size] for name, buffer in self._i.items()}
        gbin = depth_bins(g, i["gbin"], i["bits"])
        pbin = depth_bins(p, i["pbin"], i["bits"])
        code = np.multiply(gbin, N_BINS, out=i["bits"])
        code += pbin
        counts = np.bincount(code, minlength=N_BINS * N_BINS)
        counts[BIN_OFFSET * N_BINS + BIN_OFFSET] -= neutral
        histogram.counts += counts.reshape(N_BINS, N_BINS)
        histogram.abs_rel += np.bincount(gbin, weights=abs_rel, minlength=N_BINS)
        histogram.sq_err += np.bincount(gbin, weights=sq_err, minlength=N_BINS)

    def _chunk(self, pred, gt, start, stop, mask, gt_scale, bands, parts, histogram=None) -> int:
        size = stop - start
        f = {name: buffer[:size] for name, buffer in self._f.items()}
        b = {name: buffer[:size] for name, buffer in self._b.items()}
        n = size if mask is None else int(np.count_nonzero(mask))
        if n == 0:
            return 0
        p, g = f["p"], f["g"]
        np.copyto(p, pred[start:stop], casting="unsafe")
        if gt_scale is None:
            np.copyto(g, gt[start:stop], casting="unsafe")
        else:
            np.divide(gt[start:stop], gt_scale, out=g, casting="unsafe")
        if n < size:
            keep, ones = (buffer[:size] for buffer in self._u.values())
            np.multiply(mask, self._all_ones, out=keep, dtype=keep.dtype, casting="unsafe")
            np.bitwise_and(np.invert(keep, out=ones), self._one_bits, out=ones)
            for values in (p.view(keep.dtype), g.view(keep.dtype)):
                np.bitwise_and(values, keep, out=values)
                np.bitwise_or(values, ones, out=values)
        floor = self.dtype.type(PRED_FLOOR)
        lowest, highest = np.min(p), np.max(p)  # NaN if any is: the check and the clip in two reductions
        if not (np.isfinite(lowest) and np.isfinite(highest)):
            return size - int(np.count_nonzero(np.isfinite(p, out=b["hit"])))
        if lowest < floor:
            np.maximum(p, floor, out=p)
        d = np.subtract(p, g, out=f["d"])
        r = np.divide(d, g, out=f["r"])
        q = np.divide(p, g, out=f["q"])
        log_ratio = f["l"]
        if self.dtype == np.float32:
            log_ratio32(q, r, out=log_ratio, scratch=(f["w"], f["x"], f["s"], f["y"]),
                        outside=b["far"])
        else:
            np.log(q, out=log_ratio)
        sq_err = np.multiply(d, d, out=f["x"])
        sq_rel = np.multiply(d, r, out=f["s"])
        abs_rel = np.abs(r, out=r)
        abs_log = np.abs(log_ratio, out=f["y"])
        if self.dtype == np.float32:
            worst = abs_log  # deltas from |d| (see _count)
        else:
            worst = np.divide(g, p, out=f["w"])
            np.maximum(q, worst, out=worst)  # max(p/g, g/p), the reference's expression
        terms = (abs_rel, sq_rel, sq_err, abs_log)
        if histogram is not None:
            self._histogram(p, g, abs_rel, sq_err, size - n, histogram)
        parts[0].append(self._sums(terms, log_ratio, worst, mask, n, size - n, start, pred, gt,
                                   gt_scale, f["c"], (b["hit"], b["low"])))
        for index, (low, high) in enumerate(bands, start=1):
            band = np.greater_equal(g, np.float64(low), out=b["band"])
            if high is not None:
                band &= np.less(g, np.float64(high))
            if mask is not None:
                band &= mask
            n_band = int(np.count_nonzero(band))
            if n_band:
                parts[index].append(self._sums(terms, log_ratio, worst, band, n_band, None, start,
                                               pred, gt, gt_scale, f["c"], (b["hit"], b["low"])))
        return 0

    def _sums(self, terms, log_ratio, worst, mask, n, neutral, start, pred, gt, gt_scale,
              scratch, hits) -> DepthSums:
        """Sums over ``mask`` (all pixels when None). ``neutral``: how many neutral pixels a
        mask-free count may subtract instead of masking (None: always mask)."""
        weighted = mask is not None and neutral is None
        totals = []
        for values in terms:
            if weighted:
                values = np.multiply(values, mask, out=scratch)
            totals.append(_total(values))
        log_sum = _total(np.multiply(log_ratio, mask, out=scratch) if weighted else log_ratio)
        centred = np.subtract(log_ratio, self.dtype.type(log_sum / n), out=scratch)
        if mask is not None:
            centred *= mask
        log_m2 = _total(np.multiply(centred, centred, out=centred))
        deltas = [self._count(worst, threshold, mask if neutral is None else None,
                              neutral or 0, hits, start, pred, gt, gt_scale)
                  for threshold in DELTA_THRESHOLDS]
        abs_rel, sq_rel, sq_err, abs_log = totals
        return DepthSums(n, abs_rel, sq_rel, sq_err, log_sum, log_m2, abs_log, *deltas)

    def _count(self, worst, threshold, mask, neutral, hits, start, pred, gt, gt_scale) -> int:
        """Pixels (of ``mask``) with max(p/g, g/p) < threshold; ``neutral`` pixels (ratio 1,
        always counted when no mask is given) are subtracted. ``worst``: max(p/g, g/p) in
        float64, |d| in float32. ``hits``: two bool buffers of the chunk's size."""
        def below(limit: float, hit: np.ndarray) -> int:
            np.less(worst, self.dtype.type(limit), out=hit)
            if mask is not None:
                np.logical_and(hit, mask, out=hit)
            return int(np.count_nonzero(hit))

        below_upper, below_lower = hits
        if self.dtype == np.float64:
            return below(threshold, below_upper) - neutral
        lower, upper = (math.log(threshold) * (1 + side * self._AMBIGUOUS) for side in (-1, 1))
        low = below(lower, below_lower)
        high = below(upper, below_upper)
        if low == high:  # no pixel near the threshold: float32 decided every one exactly
            return low - neutral
        # the pixels within rounding of the threshold: below upper and not below lower (a
        # pixel below lower is below upper), of the mask when there is one
        near = np.logical_xor(below_upper, below_lower, out=below_upper)
        index = np.flatnonzero(near) + start
        p = np.maximum(pred[index].astype(np.float64), PRED_FLOOR)
        g = gt[index].astype(np.float64)
        if gt_scale is not None:
            g = g / gt_scale
        exact = int(np.count_nonzero(np.maximum(p / g, g / p) < threshold))
        return low + exact - neutral


def frame_sums(pred: np.ndarray, gt: np.ndarray, **options) -> list[DepthSums]:
    """One-off :meth:`DepthKernel.sums` in the arrays' own precision (float32 if both are
    float32, else float64); for tests and notebooks."""
    dtype = np.float32 if pred.dtype == gt.dtype == np.float32 else np.float64
    return DepthKernel(dtype, chunk=max(1, min(pred.size, 1 << 17))).sums(
        np.ravel(pred), np.ravel(gt), **options)
