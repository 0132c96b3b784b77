"""Warps between two frames of a sequence: where each pixel of frame t is found in frame t+1.

Used by temporal stability (:mod:`rpx_cli.deploy.stability`). Pure numpy, no
OpenCV, no per-pixel Python: every per-pixel array is float32 (indices intp), and the
passes avoid masked numpy operations (``where=``, boolean indexing), which cost ten
plain passes each.

Conventions
-----------
- Pixel centres sit at integer coordinates: pixel ``(u, v)`` (column, row) covers
  ``[u - 0.5, u + 0.5) x [v - 0.5, v + 0.5)``. A location ``(x, y)`` is *inside* an image of
  ``h x w`` pixels when its nearest pixel ``(floor(x + 0.5), floor(y + 0.5))`` is, i.e.
  ``-0.5 <= x < w - 0.5`` and ``-0.5 <= y < h - 0.5``; anything else has left the image and
  is excluded (never filled with a constant).
- Pinhole camera, intrinsics ``(fx, fy, cx, cy)`` in pixels, depth ``d`` along the optical
  axis (z): pixel ``(u, v)`` back-projects to ``X = ((u - cx) d / fx, (v - cy) d / fy, d)``
  (x right, y down, z forward: OpenCV's camera frame).
- Poses ``T`` are 4x4 camera-to-world. A point in camera t's frame moves into camera t+1's
  frame by ``motion(T_t, T_t1) = inv(T_t1) @ T_t``. (``inv(T_t) @ T_t1``, the relative pose
  the RPX code computes, is camera t+1's pose *in* frame t: the inverse of this mapping.)
- Nearest sampling reads pixel ``(floor(x + 0.5), floor(y + 0.5))`` (OpenCV's INTER_NEAREST
  rounding). Bilinear sampling reads the 2x2 pixels around ``(x, y)``; in the half-pixel
  border the outermost row or column is repeated. A bilinear sample is invalid (NaN) when
  any of its four pixels is invalid (not > 0), whatever its weight: interpolating across a
  hole would invent depth.
- In-plane rotation (the RPX approximation): frame t+1 is rotated about ``(w/2, h/2)``
  with OpenCV's ``getRotationMatrix2D`` + ``warpAffine`` convention (a positive angle turns
  the image content counter-clockwise on screen, origin top-left): output pixel ``p`` reads
  the input at ``R(angle) (p - c) + c``, ``R(a) = [[cos a, -sin a], [sin a, cos a]]``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

Intrinsics = tuple[float, float, float, float]

MIN_Z = 1e-6  # metres: a point must be this far in front of the camera to project


class Grid(NamedTuple):
    """Where each pixel of frame t (flattened, row-major) is looked up in frame t+1.

    ``x``, ``y``: float32 coordinates in frame t+1, clipped to ``[-1, w - 0.5]`` and
    ``[-1, h - 0.5]`` (NaN to -1) so every later index is in range (a clipped location is
    never inside); ``inside``: in front of the camera, inside frame t+1, and (reprojection) with a
    known depth in frame t; ``z``: for a reprojection, the depth of the point in camera
    t+1's frame, raised to ``MIN_Z`` where the point is behind the camera (None
    otherwise)."""

    x: np.ndarray
    y: np.ndarray
    inside: np.ndarray
    z: np.ndarray | None = None


class Cells(NamedTuple):
    """The bilinear cell of every location: flat index of its top-left pixel in the
    padded image (:func:`pad_for_bilinear`) and the weights of the right and lower pixels."""

    index: np.ndarray
    fx: np.ndarray
    fy: np.ndarray


def rigid_inverse(pose: np.ndarray) -> np.ndarray:
    """Inverse of a 4x4 rigid transform (``[R t] -> [R^T  -R^T t]``), float64."""
    pose = np.asarray(pose, dtype=np.float64)
    inverse = np.eye(4)
    inverse[:3, :3] = pose[:3, :3].T
    inverse[:3, 3] = -pose[:3, :3].T @ pose[:3, 3]
    return inverse


def motion(pose_t: np.ndarray, pose_t1: np.ndarray) -> np.ndarray:
    """The 4x4 transform taking camera-t coordinates to camera-(t+1) coordinates:
    ``inv(T_t1) @ T_t`` for camera-to-world poses."""
    return rigid_inverse(pose_t1) @ np.asarray(pose_t, dtype=np.float64)


def inplane_angle(pose_t: np.ndarray, pose_t1: np.ndarray) -> float:
    """The RPX in-plane angle in radians: the roll ``atan2(R[1,0], R[0,0])`` of the
    relative rotation ``R`` of ``inv(T_t) @ T_t1`` (camera t+1's orientation in frame t)."""
    relative = rigid_inverse(pose_t) @ np.asarray(pose_t1, dtype=np.float64)
    return math.atan2(relative[1, 0], relative[0, 0])


def _grid(x: np.ndarray, y: np.ndarray, shape: tuple[int, int], z: np.ndarray | None = None,
          known: np.ndarray | None = None) -> Grid:
    h, w = shape
    for values, size in ((x, w), (y, h)):  # fmax/fmin: NaN (a degenerate point) becomes -1
        np.fmax(values, np.float32(-1.0), out=values)
        np.fmin(values, np.float32(size - 0.5), out=values)
    inside = np.greater_equal(x, np.float32(-0.5))
    inside &= np.less(x, np.float32(w - 0.5))
    inside &= np.greater_equal(y, np.float32(-0.5))
    inside &= np.less(y, np.float32(h - 0.5))
    if known is not None:
        inside &= known
    return Grid(x, y, inside, z)


def inplane_grid(shape: tuple[int, int], angle: float) -> Grid:
    """Locations in frame t+1 for the in-plane warp that undoes a camera roll of ``angle``
    (radians, :func:`inplane_angle`) about the optical axis.

    A camera that rolls by ``+a`` about its z axis sees the scene turned by ``-a`` (on
    screen: counter-clockwise by ``a``), so frame t+1 is sampled at ``R(-a) (p - c) + c``:
    ``cv2.warpAffine(map_t1, cv2.getRotationMatrix2D((w/2, h/2), -degrees(a), 1), (w, h))``.
    The RPX code passes ``+degrees(a)``, which doubles a roll instead of undoing it for the
    camera-to-world poses it documents (it would be right for world-to-camera poses); it
    also fills pixels from outside the image with 0 / -1, which then count as wrong: here
    they are excluded.
    """
    h, w = shape
    c, s = math.cos(-angle), math.sin(-angle)
    cx, cy = w / 2.0, h / 2.0
    xs = np.arange(w, dtype=np.float64) - cx
    ys = np.arange(h, dtype=np.float64) - cy
    # x_src = c (x - cx) - s (y - cy) + cx; y_src = s (x - cx) + c (y - cy) + cy
    x = np.add((c * xs + cx)[None, :], (-s * ys)[:, None], dtype=np.float32).reshape(-1)
    y = np.add((s * xs)[None, :], (c * ys + cy)[:, None], dtype=np.float32).reshape(-1)
    return _grid(x, y, shape)


def reproject(depth: np.ndarray, intrinsics_t: Intrinsics, intrinsics_t1: Intrinsics,
              transform: np.ndarray, shape_t1: tuple[int, int]) -> Grid:
    """Back-project every pixel of frame t with ``depth`` (h x w, metres, finite; > 0 where
    known), move it by ``transform`` (:func:`motion`) and project it into frame t+1.

    With ``r(u, v) = ((u - cx)/fx, (v - cy)/fy, 1)`` the point is ``X' = d R r + t``, so
    ``z' = d (R r)_z + t_z`` and ``x' = (fx' X'_x + cx' X'_z) / z'`` (likewise y'). Each row
    of ``K' R r`` is linear in the column and in the row, so it is an outer sum of two short
    vectors: the projection is ~12 float32 passes over the frame. ``inside`` also requires
    a known depth in frame t and ``z' > MIN_Z`` (in front of camera t+1).
    """
    h, w = depth.shape
    fx, fy, cx, cy = intrinsics_t
    fx1, fy1, cx1, cy1 = intrinsics_t1
    rotation, shift = transform[:3, :3], transform[:3, 3]
    rx = (np.arange(w, dtype=np.float64) - cx) / fx
    ry = (np.arange(h, dtype=np.float64) - cy) / fy
    rows = (rotation[2], fx1 * rotation[0] + cx1 * rotation[2], fy1 * rotation[1] + cy1 * rotation[2])
    offsets = (shift[2], fx1 * shift[0] + cx1 * shift[2], fy1 * shift[1] + cy1 * shift[2])
    d = np.asarray(depth, dtype=np.float32).reshape(-1)
    z, x, y = (_affine_in_depth(row, offset, rx, ry, d) for row, offset in zip(rows, offsets, strict=True))
    front = np.greater(z, np.float32(MIN_Z))
    front &= np.greater(d, np.float32(0.0))
    np.maximum(z, np.float32(MIN_Z), out=z)  # behind the camera: finite, and not inside
    x /= z
    y /= z
    return _grid(x, y, shape_t1, z, front)


def _affine_in_depth(row: np.ndarray, offset: float, rx: np.ndarray, ry: np.ndarray,
                     d: np.ndarray) -> np.ndarray:
    """``d * (row . (rx[u], ry[v], 1)) + offset`` for every pixel, float32."""
    across = (row[0] * rx).astype(np.float32)
    down = (row[1] * ry + row[2]).astype(np.float32)
    values = np.add(across[None, :], down[:, None]).reshape(-1)
    values *= d
    values += np.float32(offset)
    return values


def cells(grid: Grid, shape: tuple[int, int]) -> Cells:
    """Bilinear cells of the grid's locations in an ``h x w`` image (padded by one pixel)."""
    w2 = shape[1] + 2
    x0 = np.floor(grid.x)
    y0 = np.floor(grid.y)
    fx = np.subtract(grid.x, x0)
    fy = np.subtract(grid.y, y0)
    # padded index of pixel (x0, y0): (y0 + 1) (w + 2) + x0 + 1, exact in float32 below 2^24
    if (shape[0] + 2) * w2 < 1 << 24:
        y0 *= np.float32(w2)
        y0 += x0
        y0 += np.float32(w2 + 1)
        index = y0.astype(np.intp)
    else:
        index = (y0.astype(np.intp) + 1) * w2 + x0.astype(np.intp) + 1
    return Cells(index, fx, fy)


def nearest_index(grid: Grid, shape: tuple[int, int]) -> np.ndarray:
    """Flat index of the nearest pixel of an ``h x w`` image for every location (a pixel on
    the border where the location is not inside)."""
    h, w = shape
    x = np.add(grid.x, np.float32(0.5))
    y = np.add(grid.y, np.float32(0.5))
    np.floor(x, out=x)
    np.floor(y, out=y)
    np.clip(x, np.float32(0.0), np.float32(w - 1), out=x)
    np.clip(y, np.float32(0.0), np.float32(h - 1), out=y)
    if h * w >= 1 << 24:  # float32 indices are exact below 2^24 pixels
        return y.astype(np.intp) * w + x.astype(np.intp)
    y *= np.float32(w)
    y += x
    return y.astype(np.intp)


def sample_nearest(image: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``image`` read at :func:`nearest_index` (flat)."""
    return np.take(image.reshape(-1), index, mode="clip")


def pad_for_bilinear(image: np.ndarray) -> np.ndarray:
    """An ``(h+2) x (w+2)`` float32 copy of a depth map with its outermost rows and columns
    repeated and every invalid pixel (not > 0, or NaN) set to NaN."""
    image = np.asarray(image, dtype=np.float32)
    h, w = image.shape
    padded = np.empty((h + 2, w + 2), dtype=np.float32)
    padded[1:-1, 1:-1] = image
    padded[0, 1:-1], padded[-1, 1:-1] = image[0], image[-1]
    padded[:, 0], padded[:, -1] = padded[:, 1], padded[:, -2]
    with np.errstate(invalid="ignore"):
        invalid = ~(padded > 0)
    if invalid.any():
        padded[invalid] = np.nan
    return padded


def sample_bilinear(padded: np.ndarray, at: Cells) -> np.ndarray:
    """Bilinear samples of a :func:`pad_for_bilinear` image in the given cells; NaN where a
    cell touches an invalid pixel. Locations that are not inside give some value: mask
    them with the grid's ``inside``."""
    return _interpolate(*_corners(padded, at), at)


def _corners(padded: np.ndarray, at: Cells) -> tuple[np.ndarray, ...]:
    w2 = padded.shape[1]
    flat = padded.reshape(-1)
    return tuple(np.take(flat[offset:], at.index, mode="clip") for offset in (0, 1, w2, w2 + 1))


def _interpolate(top: np.ndarray, right: np.ndarray, bottom: np.ndarray, corner: np.ndarray,
                 at: Cells) -> np.ndarray:
    """Bilinear interpolation, in place in the four corner arrays; returns ``top``."""
    right -= top
    right *= at.fx
    top += right
    corner -= bottom
    corner *= at.fx
    bottom += corner
    bottom -= top
    bottom *= at.fy
    top += bottom
    return top


def sample_surface(padded: np.ndarray, at: Cells, grid: Grid, relative: float,
                   absolute: float) -> np.ndarray:
    """Bilinear samples like :func:`sample_bilinear`, except in a cell that spans a depth
    discontinuity (its four pixels' ``max > min (1 + relative) + absolute``), where the
    pixel closest to the point's projected depth ``z'`` is taken.

    Interpolating across an edge invents a depth on neither surface, which would count a
    perfectly consistent prediction as unstable along every object outline; the pixel
    nearest in depth is the surface the point lies on. This forgives an edge displaced by
    less than a pixel, never more. A cell touching a pixel without depth stays NaN.
    """
    top, right, bottom, corner = _corners(padded, at)
    low = np.minimum(top, right)
    np.minimum(low, bottom, out=low)
    np.minimum(low, corner, out=low)
    high = np.maximum(top, right)
    np.maximum(high, bottom, out=high)
    np.maximum(high, corner, out=high)
    low *= np.float32(1.0 + relative)
    low += np.float32(absolute)
    split = np.greater(high, low)  # False where a pixel is NaN
    split &= grid.inside
    edges = np.flatnonzero(split)
    sampled = _interpolate(top, right, bottom, corner, at)
    if edges.size:
        w2 = padded.shape[1]
        flat = padded.reshape(-1)
        corner_index = at.index[edges]
        four = np.stack([flat[corner_index + offset] for offset in (0, 1, w2, w2 + 1)])
        closest = np.argmin(np.abs(four - grid.z[edges]), axis=0)
        sampled[edges] = four[closest, np.arange(edges.size)]
    return sampled


def depth_in_frame_t(sampled: np.ndarray, grid: Grid, intrinsics_t1: Intrinsics,
                     transform: np.ndarray) -> np.ndarray:
    """The z in frame t of the points that frame t+1's depth ``sampled`` (at the grid's
    locations) implies: back-project in t+1, apply ``inv(transform)``, keep z. Linear in
    x and y: ``z_t = s (a x + b y + c) + e`` with ``(a, b, c, e)`` from the inverse's third
    row."""
    fx1, fy1, cx1, cy1 = intrinsics_t1
    back = rigid_inverse(transform)
    r0, r1, r2 = back[2, :3]
    scale = np.multiply(grid.x, np.float32(r0 / fx1))
    scale += np.multiply(grid.y, np.float32(r1 / fy1))
    scale += np.float32(r2 - r0 * cx1 / fx1 - r1 * cy1 / fy1)
    scale *= sampled
    scale += np.float32(back[2, 3])
    return scale


def occlusion_threshold(z: np.ndarray, relative: float, absolute: float) -> np.ndarray:
    """``z (1 - relative) - absolute``: a surface found nearer than this hides the point."""
    threshold = np.multiply(z, np.float32(1.0 - relative))
    threshold -= np.float32(absolute)
    return threshold


def self_occluded(grid: Grid, at: Cells, shape_t1: tuple[int, int], relative: float,
                  absolute: float) -> np.ndarray:
    """Pixels of frame t hidden in frame t+1 by other pixels of frame t, from frame t's
    depth alone: every reprojected point is entered in a z-buffer at its nearest pixel of
    frame t+1, and a point is occluded when that pixel holds a point nearer than
    ``z' (1 - relative) - absolute``.

    One pixel per point keeps the test blind to noise between neighbouring predictions
    (comparing with the pixels around would call a noisy surface occluded by itself); the
    price is that where a near surface is magnified in t+1, a far point can fall between
    its splats and be scored against it. ``at`` are the grid's :func:`cells`: the nearest
    pixel is the cell's corner plus one column where ``fx >= 0.5``, one row where
    ``fy >= 0.5`` (the buffer uses the padded layout of the cells' index)."""
    w2 = shape_t1[1] + 2
    index = np.greater_equal(at.fy, np.float32(0.5)).astype(np.intp)
    index *= w2
    index += at.index
    index += np.greater_equal(at.fx, np.float32(0.5))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.divide(grid.z, grid.inside)  # z' > 0; inf where not inside: never wins
    buffer = np.full((shape_t1[0] + 2) * w2, np.inf, dtype=np.float32)
    np.minimum.at(buffer, index, z)
    found = np.take(buffer, index, mode="clip")
    occluded = np.less(found, occlusion_threshold(grid.z, relative, absolute))
    occluded &= grid.inside
    return occluded
