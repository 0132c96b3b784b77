"""Depth temporal stability under reprojection, fused: the agreement between a depth
prediction and the next frame's prediction warped back onto it, in one chunked pass over
the frame with a reused workspace.

:func:`reference_reprojected_agreement` is the readable version: the warp steps of
:mod:`rpx_cli.ops.warp` one after the other (reproject, bilinear cells, z-buffer
self-occlusion, edge-aware sampling, back into frame t) and :func:`agreement` over the
pixels that survive. :class:`ReprojectionKernel` computes exactly the same numbers — every
per-pixel value by the same float32 operations in the same order, the sum over the same
blocks — but row chunk by row chunk, so the ~60 passes of one chunk stay in the CPU cache
instead of streaming ~40 frame-sized temporaries through memory, and into buffers kept
between frames (no page faults). ``tests/test_reference_kernels.py`` compares the two bit
for bit.

Two passes are needed because the z-buffer must hold every point of frame t before any
point can be tested against it: pass 1 reprojects each chunk and enters it in the z-buffer,
keeping what pass 2 needs (locations, cells, z', inside); pass 2 tests occlusion, samples
frame t+1, moves the samples back into frame t and writes the per-pixel terms.

Measured alternative, not used: ``scipy.ndimage.map_coordinates(order=1, prefilter=False)``
for the bilinear samples is 6-10x *slower* than the gathers below on 480x640 frames (it
also rounds differently: float64 weights, ~20 % of samples differ in the last float32 bit).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rpx_cli.ops import warp as ops

CHUNK_PIXELS = 1 << 16  # rows per chunk: about this many pixels (~256 KB per float32 array)


class Agreement(NamedTuple):
    """Sufficient numbers of ``mean|d_t - other|`` and ``range(d_t)`` over the valid
    pixels: their count, ``Σ|d_t - other|`` (float32 terms, :func:`blocked_sum`), and the
    largest and smallest ``d_t`` (None when no pixel is valid)."""

    n: int
    total: float
    high: float | None
    low: float | None


def blocked_sum(values: np.ndarray) -> float:
    """Pairwise float32 sums of blocks of 4096, added in float64 (deterministic)."""
    size = values.size
    blocks = size // 4096
    total = np.add.reduce(values[:blocks * 4096].reshape(blocks, 4096), axis=1).sum(dtype=np.float64)
    return float(total + np.add.reduce(values[blocks * 4096:], dtype=np.float64))


def agreement(d_t: np.ndarray, other: np.ndarray, valid: np.ndarray) -> Agreement:
    """:class:`Agreement` of flat float32 ``d_t`` (> 0 where valid) and ``other`` over the
    flat bool ``valid``."""
    n = int(np.count_nonzero(valid))
    if n == 0:
        return Agreement(0, 0.0, None, None)
    weight = valid.view(np.uint8).astype(np.float32)
    term = np.subtract(d_t, other)
    np.abs(term, out=term)
    np.fmin(term, np.float32(3e38), out=term)  # NaN (invalid anyway) -> finite, then x 0
    term *= weight
    total = blocked_sum(term)
    weight *= d_t  # d_t > 0 where valid: max over valid = max of d_t x valid (NaN ignored)
    high = float(np.fmax.reduce(weight))
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(valid, d_t, out=weight)  # 1/d_t where valid, 0 or NaN elsewhere
    low = 1.0 / float(np.fmax.reduce(weight))
    return Agreement(n, total, high, low)


def reference_reprojected_agreement(d_t: np.ndarray, d_t1: np.ndarray,
                                    intrinsics_t: ops.Intrinsics, intrinsics_t1: ops.Intrinsics,
                                    transform: np.ndarray, *, occlusion: tuple[float, float],
                                    edge: tuple[float, float]) -> Agreement:
    """The agreement of ``d_t`` with ``d_t1`` reprojected into frame t, step by step: the
    readable reference of :class:`ReprojectionKernel` (float32 depth maps of one shape;
    ``occlusion`` and ``edge``: (relative, absolute) tolerances, see
    :func:`rpx_cli.ops.warp.self_occluded` and :func:`rpx_cli.ops.warp.sample_surface`)."""
    grid = ops.reproject(d_t, intrinsics_t, intrinsics_t1, transform, d_t1.shape)
    at = ops.cells(grid, d_t1.shape)
    occluded = ops.self_occluded(grid, at, d_t1.shape, *occlusion)
    sampled = ops.sample_surface(ops.pad_for_bilinear(d_t1), at, grid, *edge)
    other = ops.depth_in_frame_t(sampled, grid, intrinsics_t1, transform)
    valid = np.equal(other, other)
    valid &= grid.inside
    valid &= ~occluded
    return agreement(d_t.reshape(-1), other, valid)


class ReprojectionKernel:
    """:func:`reference_reprojected_agreement` for frames of one shape, chunk by chunk in a
    reused workspace (see the module docstring)."""

    _FLOATS = ("x", "y", "z", "fx", "fy", "term")
    _CHUNK_FLOATS = ("a", "b", "c", "e", "m")
    _CHUNK_BOOLS = ("p", "q")
    exact_float_indices = 1 << 24  # padded frames smaller than this index in float32

    def __init__(self, shape: tuple[int, int], chunk_pixels: int = CHUNK_PIXELS) -> None:
        h, w = shape
        self.shape = shape
        self.rows = max(1, min(h, chunk_pixels // max(w, 1)))
        size, chunk = h * w, self.rows * w
        self._f = {name: np.empty(size, np.float32) for name in self._FLOATS}
        self._inside = np.empty(size, bool)
        self._index = np.empty(size, np.intp)
        self._nearest = np.empty(size, np.intp)
        self._c = {name: np.empty(chunk, np.float32) for name in self._CHUNK_FLOATS}
        self._cb = {name: np.empty(chunk, bool) for name in self._CHUNK_BOOLS}
        self._zbuffer = np.empty((h + 2) * (w + 2), np.float32)
        self._padded = np.empty((h + 2, w + 2), np.float32)

    def agreement(self, d_t: np.ndarray, d_t1: np.ndarray, intrinsics_t: ops.Intrinsics,
                  intrinsics_t1: ops.Intrinsics, transform: np.ndarray, *,
                  occlusion: tuple[float, float], edge: tuple[float, float]) -> Agreement:
        """Equal to :func:`reference_reprojected_agreement` (float32 maps of this shape)."""
        h, w = self.shape
        if d_t.shape != self.shape or d_t1.shape != self.shape:
            raise ValueError(f"frames of {d_t.shape} and {d_t1.shape} for a kernel of {self.shape}")
        d = np.ascontiguousarray(d_t, dtype=np.float32).reshape(-1)
        geometry = _Geometry(intrinsics_t, intrinsics_t1, transform, self.shape)
        self._zbuffer.fill(np.inf)
        count, high, inverse_low = 0, None, None
        # locations outside frame t+1 may be inf or NaN (never counted): no warnings
        with np.errstate(all="ignore"):
            for start in range(0, h, self.rows):
                self._project(d, geometry, start, min(start + self.rows, h))
            padded = self._pad(d_t1)
            for start in range(0, h, self.rows):
                n, top, bottom = self._score(d, padded, geometry, start * w,
                                             min(start + self.rows, h) * w, occlusion, edge)
                if n:
                    count += n
                    high = top if high is None else max(high, top)
                    inverse_low = bottom if inverse_low is None else np.fmax(inverse_low, bottom)
        if count == 0:
            return Agreement(0, 0.0, None, None)
        return Agreement(count, blocked_sum(self._f["term"]), float(high),
                         1.0 / float(inverse_low))

    def _project(self, d: np.ndarray, geometry: _Geometry, first: int, last: int) -> None:
        """Pass 1 over rows [first, last): ``reproject`` and ``cells`` of the chunk, and
        its points entered in the z-buffer (``self_occluded``'s first half)."""
        h, w = self.shape
        w2 = w + 2
        span = slice(first * w, last * w)
        size = (last - first) * w
        f = {name: self._f[name][span] for name in ("x", "y", "z", "fx", "fy")}
        depth = d[span]
        z, x, y = f["z"], f["x"], f["y"]
        for out, (across, down, offset) in zip((z, x, y), geometry.rows, strict=True):
            np.add(across[None, :], down[first:last, None], out=out.reshape(last - first, w))
            out *= depth
            out += offset
        # in front of camera t+1 with a known depth (before z' is raised to MIN_Z)
        inside, test = self._inside[span], self._cb["q"][:size]
        np.greater(z, np.float32(ops.MIN_Z), out=inside)
        np.greater(depth, np.float32(0.0), out=test)
        inside &= test
        np.maximum(z, np.float32(ops.MIN_Z), out=z)
        x /= z
        y /= z
        small = (h + 2) * w2 < self.exact_float_indices  # float32 holds every flat index
        if not small:  # _grid's clip (NaN to -1): every index below is in range
            for values, limit in ((x, w), (y, h)):
                np.fmax(values, np.float32(-1.0), out=values)
                np.fmin(values, np.float32(limit - 0.5), out=values)
        # inside frame t+1. Unlike _grid, x and y are not clipped first: clipping to
        # [-1, w - 0.5] leaves every location inside unchanged and every other one outside
        # (NaN compares False), and only locations inside reach a number; the indices of
        # the others are clipped into range below instead.
        for values, compare, limit in ((x, np.greater_equal, -0.5), (x, np.less, w - 0.5),
                                       (y, np.greater_equal, -0.5), (y, np.less, h - 0.5)):
            compare(values, np.float32(limit), out=test)
            inside &= test
        # cells: floor, fractions, padded flat index of the top-left pixel
        x0, y0 = self._c["a"][:size], self._c["b"][:size]
        np.floor(x, out=x0)
        np.floor(y, out=y0)
        np.subtract(x, x0, out=f["fx"])
        np.subtract(y, y0, out=f["fy"])
        index, nearest = self._index[span], self._nearest[span]
        if small:
            y0 *= np.float32(w2)
            y0 += x0
            y0 += np.float32(w2 + 1)
            # outside locations only: into [0, the bottom-right cell] (NaN to 0)
            np.fmax(y0, np.float32(0.0), out=y0)
            np.fmin(y0, np.float32(h * w2 + w), out=y0)
            np.copyto(index, y0, casting="unsafe")
            # the nearest pixel of each point (self_occluded), exact in float32 too
            np.greater_equal(f["fy"], np.float32(0.5), out=test)
            np.multiply(test, np.float32(w2), out=x0)
            x0 += y0
            np.greater_equal(f["fx"], np.float32(0.5), out=test)
            x0 += test
            np.copyto(nearest, x0, casting="unsafe")
        else:
            np.copyto(index, y0, casting="unsafe")
            index += 1
            index *= w2
            index += x0.astype(np.intp)
            index += 1
            np.greater_equal(f["fy"], np.float32(0.5), out=test)
            np.copyto(nearest, test, casting="unsafe")
            nearest *= w2
            nearest += index
            np.greater_equal(f["fx"], np.float32(0.5), out=test)
            nearest += test
        # the points entered in the z-buffer at their nearest pixel
        masked = self._c["c"][:size]
        np.divide(z, inside, out=masked)  # z' > 0; inf where not inside: never wins
        np.minimum.at(self._zbuffer, nearest, masked)

    def _pad(self, d_t1: np.ndarray) -> np.ndarray:
        """:func:`rpx_cli.ops.warp.pad_for_bilinear` into the workspace."""
        padded = self._padded
        image = np.asarray(d_t1, dtype=np.float32)
        padded[1:-1, 1:-1] = image
        padded[0, 1:-1], padded[-1, 1:-1] = image[0], image[-1]
        padded[:, 0], padded[:, -1] = padded[:, 1], padded[:, -2]
        invalid = ~(padded > 0)
        if invalid.any():
            np.copyto(padded, np.float32(np.nan), where=invalid)
        return padded

    def _score(self, d: np.ndarray, padded: np.ndarray, geometry: _Geometry, start: int,
               stop: int, occlusion: tuple[float, float],
               edge: tuple[float, float]) -> tuple[int, float, float]:
        """Pass 2 over pixels [start, stop): occlusion, edge-aware sampling of frame t+1,
        back into frame t, the chunk's terms; returns (valid pixels, max d_t, max 1/d_t)."""
        size = stop - start
        span = slice(start, stop)
        x, y, z = self._f["x"][span], self._f["y"][span], self._f["z"][span]
        inside, index = self._inside[span], self._index[span]
        fx, fy = self._f["fx"][span], self._f["fy"][span]
        a, b, c, e, high = (self._c[name][:size] for name in self._CHUNK_FLOATS)
        valid, test = self._cb["p"][:size], self._cb["q"][:size]
        # occlusion: the z-buffer's nearest point below z' (1 - relative) - absolute
        np.take(self._zbuffer, self._nearest[span], mode="wrap", out=a)
        np.multiply(z, np.float32(1.0 - occlusion[0]), out=b)
        b -= np.float32(occlusion[1])
        np.greater_equal(a, b, out=valid)  # not occluded (exactly "not <" where inside:
        valid &= inside  # neither is NaN there)
        # sample_surface: four corners, edge test, bilinear, the closest pixel at edges
        w2 = padded.shape[1]
        flat = padded.reshape(-1)
        top, right, bottom, corner = a, b, c, e
        for out, offset in ((top, 0), (right, 1), (bottom, w2), (corner, w2 + 1)):
            np.take(flat[offset:], index, mode="wrap", out=out)
        low = self._f["term"][span]  # scratch until the terms are written
        np.minimum(top, right, out=low)
        np.minimum(low, bottom, out=low)
        np.minimum(low, corner, out=low)
        np.maximum(top, right, out=high)
        np.maximum(high, bottom, out=high)
        np.maximum(high, corner, out=high)
        low *= np.float32(1.0 + edge[0])
        low += np.float32(edge[1])
        np.greater(high, low, out=test)  # False where a pixel is NaN
        test &= inside
        edges = np.flatnonzero(test)
        right -= top
        right *= fx
        top += right
        corner -= bottom
        corner *= fx
        bottom += corner
        bottom -= top
        bottom *= fy
        top += bottom
        sampled = top
        if edges.size:
            corner_index = index[edges]
            four = np.stack([flat[corner_index + offset] for offset in (0, 1, w2, w2 + 1)])
            closest = np.argmin(np.abs(four - z[edges]), axis=0)
            sampled[edges] = four[closest, np.arange(edges.size)]
        # depth_in_frame_t
        scale_x, scale_y, shift, move = geometry.back
        other = b
        np.multiply(x, scale_x, out=other)
        np.multiply(y, scale_y, out=c)
        other += c
        other += shift
        other *= sampled
        other += move
        # valid: a sample (not NaN), inside, not occluded
        np.equal(other, other, out=test)
        valid &= test
        n = int(np.count_nonzero(valid))
        term = self._f["term"][span]
        if n == 0:
            term.fill(0)
            return 0, 0.0, 0.0
        weight = c
        np.copyto(weight, valid, casting="unsafe")
        depth = d[span]
        np.subtract(depth, other, out=term)
        np.abs(term, out=term)
        np.fmin(term, np.float32(3e38), out=term)
        term *= weight
        weight *= depth
        top_d = float(np.fmax.reduce(weight))
        np.divide(valid, depth, out=weight)
        return n, top_d, float(np.fmax.reduce(weight))


class _Geometry:
    """The per-pair constants of the reprojection, computed exactly as
    :func:`rpx_cli.ops.warp.reproject` and :func:`rpx_cli.ops.warp.depth_in_frame_t` do."""

    def __init__(self, intrinsics_t: ops.Intrinsics, intrinsics_t1: ops.Intrinsics,
                 transform: np.ndarray, shape: tuple[int, int]) -> None:
        h, w = shape
        fx, fy, cx, cy = intrinsics_t
        fx1, fy1, cx1, cy1 = intrinsics_t1
        rotation, shift = transform[:3, :3], transform[:3, 3]
        rx = (np.arange(w, dtype=np.float64) - cx) / fx
        ry = (np.arange(h, dtype=np.float64) - cy) / fy
        rows = (rotation[2], fx1 * rotation[0] + cx1 * rotation[2],
                fy1 * rotation[1] + cy1 * rotation[2])
        offsets = (shift[2], fx1 * shift[0] + cx1 * shift[2], fy1 * shift[1] + cy1 * shift[2])
        self.rows = [((row[0] * rx).astype(np.float32), (row[1] * ry + row[2]).astype(np.float32),
                      np.float32(offset)) for row, offset in zip(rows, offsets, strict=True)]
        back = ops.rigid_inverse(transform)
        r0, r1, r2 = back[2, :3]
        self.back = (np.float32(r0 / fx1), np.float32(r1 / fy1),
                     np.float32(r2 - r0 * cx1 / fx1 - r1 * cy1 / fy1), np.float32(back[2, 3]))


_SHARED: dict[tuple[int, int], ReprojectionKernel] = {}


def shared_reprojection_kernel(shape: tuple[int, int]) -> ReprojectionKernel:
    """This process's kernel for frames of ``shape`` (a module-level cache of the last few
    shapes; workers are processes)."""
    kernel = _SHARED.get(shape)
    if kernel is None:
        if len(_SHARED) >= 4:
            _SHARED.clear()
        kernel = _SHARED[shape] = ReprojectionKernel(shape)
    return kernel
