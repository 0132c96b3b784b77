"""A synthetic scene for temporal stability: textured rectangles at known depths, rendered
exactly (ray-plane intersection, pure numpy) from a moving pinhole camera.

Used by tests/test_stability.py, fixtures/make_stability_fixtures.py and
benchmarks/stability.py. Conventions as rpx_cli.ops.warp: pixel centres at integer
coordinates, camera x right / y down / z forward, poses 4x4 camera-to-world, depth along z.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Plane:
    """A rectangle ``origin + s*axis_u + t*axis_v`` (0 <= s <= size_u, 0 <= t <= size_v)
    with a checkerboard of ``square``-metre cells labelled ``label`` and ``label + 1``."""

    origin: tuple[float, float, float]
    axis_u: tuple[float, float, float]
    axis_v: tuple[float, float, float]
    size_u: float
    size_v: float
    label: int
    square: float = 0.25


def room() -> list[Plane]:
    """A back wall 4 m away, a floor, two boxes and a shelf in front (world z forward, y
    down: the first camera looks along +z from the origin). Edges sit off round numbers so
    no pixel centre looks exactly at a texture edge."""
    return [
        Plane((-4.0123, -3.0071, 4.0), (1, 0, 0), (0, 1, 0), 8, 6, 1, 0.5),  # back wall, 4 m
        Plane((-4.0123, 1.2013, 0.3), (1, 0, 0), (0, 0, 1), 8, 3.7, 3, 0.4),  # floor, y = 1.2
        Plane((-0.9071, -0.2013, 2.2), (1, 0, 0), (0, 1, 0), 0.8, 0.9, 5, 0.2),  # box, 2.2 m
        Plane((0.3037, 0.1011, 1.6), (1, 0, 0), (0, 1, 0), 0.5, 0.6, 7, 0.15),  # box, 1.6 m
        Plane((-0.3029, -0.6043, 3.0), (1, 0, 0), (0, 1, 0), 1.2, 0.3, 9, 0.3),  # shelf, 3 m
    ]


def render(planes: list[Plane], pose: np.ndarray, intrinsics: tuple[float, float, float, float],
           shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(depth along the optical axis in metres, float64; labels, int32) of the nearest
    plane hit by each pixel's ray; depth 0 and label 0 where no plane is hit."""
    h, w = shape
    fx, fy, cx, cy = intrinsics
    u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    rays = np.stack([(u - cx) / fx, (v - cy) / fy, np.ones_like(u)], axis=-1)  # z = 1
    rotation, centre = pose[:3, :3], pose[:3, 3]
    directions = rays @ rotation.T  # world directions; distance along them = camera z
    depth = np.full(shape, np.inf)
    labels = np.zeros(shape, dtype=np.int32)
    for plane in planes:
        origin = np.asarray(plane.origin, dtype=np.float64)
        a, b = np.asarray(plane.axis_u, np.float64), np.asarray(plane.axis_v, np.float64)
        normal = np.cross(a, b)
        with np.errstate(all="ignore"):  # rays parallel to the plane: no hit
            z = ((origin - centre) @ normal) / (directions @ normal)
            points = centre + directions * z[..., None]
            s, t = (points - origin) @ a, (points - origin) @ b
            hit = (z > 1e-6) & (s >= 0) & (s <= plane.size_u) & (t >= 0) & (t <= plane.size_v)
        hit &= z < depth
        depth[hit] = z[hit]
        cells = np.floor(s[hit] / plane.square) + np.floor(t[hit] / plane.square)
        labels[hit] = plane.label + cells.astype(np.int64) % 2
    depth[~np.isfinite(depth)] = 0.0
    return depth, labels


def pose(yaw_deg: float = 0.0, pitch_deg: float = 0.0, roll_deg: float = 0.0,
         position: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    """Camera-to-world: rotations about the camera's y (yaw), x (pitch), z (roll) axes."""
    def rot(axis: int, degrees: float) -> np.ndarray:
        c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
        i, j = [k for k in range(3) if k != axis]
        m = np.eye(3)
        m[i, i], m[i, j], m[j, i], m[j, j] = c, -s, s, c
        return m

    matrix = np.eye(4)
    matrix[:3, :3] = rot(1, yaw_deg) @ rot(0, pitch_deg) @ rot(2, roll_deg)
    matrix[:3, 3] = position
    return matrix


def trajectory(n: int, *, step_m: float = 0.03, yaw_deg: float = 1.0, roll_deg: float = 0.5,
               start: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> list[np.ndarray]:
    """A camera sliding right and forward while turning and rolling a little per frame."""
    return [pose(yaw_deg * i, 0.3 * i, roll_deg * i,
                 (start[0] + step_m * i, start[1] - 0.3 * step_m * i, start[2] + 0.5 * step_m * i))
            for i in range(n)]


def facing_planes() -> list[Plane]:
    """Fronto-parallel textured rectangles at 1, 2 and 4 m (a wall filling the view at 4 m):
    a camera translating parallel to them by ``s`` metres shifts them by exactly
    ``f s / z`` pixels, so with f = 100 and 4 cm steps every layer moves by whole pixels
    (4, 2 and 1) and a perfect prediction is matched pixel for pixel."""
    return [
        Plane((-20.0123, -20.0071, 4.0), (1, 0, 0), (0, 1, 0), 40, 40, 1, 0.37),
        Plane((-0.5013, -0.3021, 2.0), (1, 0, 0), (0, 1, 0), 0.9, 0.7, 3, 0.23),
        Plane((0.0517, 0.0231, 1.0), (1, 0, 0), (0, 1, 0), 0.25, 0.2, 5, 0.07),
    ]


def sliding(n: int, step_m: float = 0.04) -> list[np.ndarray]:
    """A camera translating right and down by ``step_m`` per frame, without turning."""
    return [pose(position=(step_m * i, step_m * i, 0.0)) for i in range(n)]
