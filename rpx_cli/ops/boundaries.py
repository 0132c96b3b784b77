"""Boundary maps and their agreement: the building blocks of Stack-Level Geometric Coherence.

SGC (RPX ``deployment.compute_sgc``) asks whether a stack's segmentation and depth agree on
where objects end: "SGC = F-score(boundary(mask), boundary(depth_gradient > τ))". With
``M`` an integer label map and ``D`` a depth map of the same H x W shape (metres):

- mask boundary ``B_m[y, x] = (x+1 < W and M[y,x] != M[y,x+1]) or (y+1 < H and M[y,x] !=
  M[y+1,x])``: the pixel whose right or lower 4-neighbour has another label (one pixel wide,
  on the near side of the edge).
- depth boundary ``B_d = hypot(g_x, g_y) > tau`` (strict), ``g = numpy.gradient(D)``: central
  differences ``(D[x+1] - D[x-1]) / 2`` inside, one-sided ``D[1] - D[0]`` and ``D[W-1] -
  D[W-2]`` at the borders (``edge_order=1``), unit spacing (metres per pixel); an axis of
  length 1 has gradient 0. (The seed's docstring says "Sobel"; central differences are the
  definition that reproduces its reference case, and τ then reads in metres per pixel.)
- dilation by ``k`` one-pixel steps of the 4-neighbour cross: the diamond ``|dy| + |dx| <= k``
  (``scipy.ndimage.binary_dilation(b, generate_binary_structure(2, 1), iterations=k)``,
  with ``k = 0`` meaning no dilation, not scipy's "until stable").
- per frame, as the seed counts them, both boundaries dilated (the mask is the prediction,
  the depth edges the reference)::

      P_m = dilate(B_m, k),  P_d = dilate(B_d, k),  overlap = |P_m ∩ P_d|
      precision = overlap / |P_m|   (1.0 when |P_m| = 0)
      recall    = overlap / |P_d|   (1.0 when |P_d| = 0)

- over frames: ``sgc = 2 P R / (P + R)`` (0 when ``P + R = 0``) of the *mean* precision ``P``
  and the *mean* recall ``R`` — not the mean of per-frame F-scores.

Pixels without depth (``D <= 0``) are excluded: ``V = D > 0``; a depth boundary needs ``V``
at the pixel and at every pixel its differences read; a mask boundary counts only on ``V``;
the dilated bands are counted on ``V`` only. Non-finite depth is the caller's input error.

Reference case (the issue's): 8 x 8, labels 1 for ``x >= 4``, depth 1 m left / 2 m right:
``B_m`` = column 3, ``B_d`` = columns 3-4 (gradient 0.5), ``k = 2``: ``P_m`` = columns 1-5
(40 px), ``P_d`` = columns 1-6 (48 px), overlap 40: precision 1, recall 5/6, sgc 10/11.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from rpx_cli.ops.reduce import f_score, mean_present


class FrameAgreement(NamedTuple):
    """One frame's boundary counts (pixels) and its precision and recall."""

    precision: float
    recall: float
    n_mask_boundary: int  # |B_m| on counted pixels, before dilation
    n_depth_boundary: int  # |B_d|, before dilation
    n_mask_band: int  # |P_m| on counted pixels: the precision denominator
    n_depth_band: int  # |P_d| on counted pixels: the recall denominator
    n_overlap: int  # |P_m ∩ P_d|
    n_no_depth: int  # pixels excluded for depth <= 0


def mask_boundary(labels: np.ndarray) -> np.ndarray:
    """``B_m``: True where the right or the lower 4-neighbour holds another label."""
    boundary = np.zeros(labels.shape, dtype=bool)
    np.not_equal(labels[:, :-1], labels[:, 1:], out=boundary[:, :-1])
    boundary[:-1, :] |= labels[:-1, :] != labels[1:, :]
    return boundary


def depth_gradient(depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(g_y, g_x)`` as ``numpy.gradient`` (``edge_order=1``, unit spacing) in float64; an
    axis of length 1 has gradient 0."""
    depth = np.asarray(depth, dtype=np.float64)
    return tuple(  # type: ignore[return-value]
        np.gradient(depth, axis=axis) if depth.shape[axis] > 1 else np.zeros_like(depth)
        for axis in (0, 1)
    )


def _stencil_valid(valid: np.ndarray, axis: int) -> np.ndarray:
    """Where the difference along ``axis`` reads only valid pixels (the pixel itself too)."""
    if valid.shape[axis] < 2:
        return valid.copy()
    v = np.moveaxis(valid, axis, 0)
    ok = v.copy()
    ok[1:-1] &= v[:-2] & v[2:]
    ok[0] &= v[1]
    ok[-1] &= v[-2]
    return np.moveaxis(ok, 0, axis)


def magnitude_above(gx: np.ndarray, gy: np.ndarray, tau: float) -> np.ndarray:
    """``np.hypot(gx, gy) > tau``, exactly, without ``hypot`` at every pixel (numpy's float64
    ``hypot`` is a scalar loop on CPUs without AVX-512: ~7x a multiply-add here). A pixel
    whose ``gx² + gy²`` is clear of ``tau²`` by a relative 1e-12 (the squares' rounding is
    ~4e-16) is decided by it; the few within that band, and any whose square is NaN, take
    ``hypot``; so does every pixel when ``tau²`` would leave float64's normal range."""
    if not 1e-150 < tau < 1e150:
        return np.hypot(gx, gy) > tau
    with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN squares are decided below
        square = np.multiply(gx, gx)
        square += np.multiply(gy, gy)
    limit = tau * tau
    above = square > limit * (1 + 1e-12)
    decided = square < limit * (1 - 1e-12)
    decided |= above  # the rest: near tau², or NaN (every comparison false)
    index = np.flatnonzero(~decided)
    if index.size:
        above.flat[index] = np.hypot(gx.flat[index], gy.flat[index]) > tau
    return above


def depth_boundary(depth: np.ndarray, *, tau: float, valid: np.ndarray | None = None) -> np.ndarray:
    """``B_d``: gradient magnitude ``hypot(g_x, g_y) > tau`` (strict), where the gradient
    is defined (``valid`` at the pixel and at the pixels its differences read; all pixels
    when ``valid`` is None). ``hypot`` is exact on an axis: a step of exactly ``2 tau``
    gives ``|g| = tau``, not a boundary."""
    gy, gx = depth_gradient(depth)
    boundary = magnitude_above(gx, gy, tau)
    if valid is not None and not valid.all():
        boundary &= _stencil_valid(valid, 0) & _stencil_valid(valid, 1)
    return boundary


def dilate_diamond(mask: np.ndarray, radius: int) -> np.ndarray:
    """Binary dilation by ``radius`` steps of the 4-neighbour cross (the diamond
    ``|dy| + |dx| <= radius``), pixels outside the image off. Vectorised shift-or; the loop
    is over the radius."""
    grown = np.array(mask, dtype=bool, copy=True)
    for _ in range(radius):
        step = grown.copy()
        step[1:, :] |= grown[:-1, :]
        step[:-1, :] |= grown[1:, :]
        step[:, 1:] |= grown[:, :-1]
        step[:, :-1] |= grown[:, 1:]
        grown = step
    return grown


def boundary_agreement(labels: np.ndarray, depth: np.ndarray, *, tau: float,
                       dilation: int) -> FrameAgreement:
    """Precision and recall of one frame's mask boundary against its depth boundary
    (module docstring). ``labels`` and ``depth`` have one 2-D shape; ``depth`` is finite
    (metres; ``<= 0`` marks a pixel without depth)."""
    if labels.shape != depth.shape or labels.ndim != 2:
        raise ValueError(f"labels {labels.shape} and depth {depth.shape} must be one 2-D shape")
    depth = np.asarray(depth, dtype=np.float64)
    valid = depth > 0
    all_valid = bool(valid.all())
    b_mask = mask_boundary(labels)
    b_depth = depth_boundary(depth, tau=tau, valid=None if all_valid else valid)
    if not all_valid:
        b_mask &= valid
    band_mask = dilate_diamond(b_mask, dilation)
    band_depth = dilate_diamond(b_depth, dilation)
    if not all_valid:
        band_mask &= valid
        band_depth &= valid
    n_mask, n_depth = int(np.count_nonzero(band_mask)), int(np.count_nonzero(band_depth))
    overlap = int(np.count_nonzero(band_mask & band_depth))
    return FrameAgreement(
        precision=overlap / n_mask if n_mask else 1.0,
        recall=overlap / n_depth if n_depth else 1.0,
        n_mask_boundary=int(np.count_nonzero(b_mask)),
        n_depth_boundary=int(np.count_nonzero(b_depth)),
        n_mask_band=n_mask,
        n_depth_band=n_depth,
        n_overlap=overlap,
        n_no_depth=int(valid.size - np.count_nonzero(valid)),
    )


def sgc_summary(precisions: Sequence[float],
                recalls: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """``(mean precision, mean recall, sgc)`` over frames; means are correctly rounded sums
    (``math.fsum``) / n, so frame order and sharding never change a bit. No frame: nulls
    (the seed returns 0.0 there: undefined is not zero)."""
    precision, recall = mean_present(list(precisions)), mean_present(list(recalls))
    if precision is None or recall is None:
        return None, None, None
    return precision, recall, f_score(precision, recall)
