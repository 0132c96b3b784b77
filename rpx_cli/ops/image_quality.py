"""Full-reference image quality: PSNR and SSIM.

``ssim`` is the Wang et al. (2004) index as scikit-image computes it with
``structural_similarity(x, y, data_range=R, channel_axis=-1, gaussian_weights=True,
sigma=1.5, use_sample_covariance=False)``: per channel, local means, variances and covariance
from a Gaussian window (sigma 1.5, truncated at 3.5 sigma: 11x11, ``scipy.ndimage`` with
``mode="reflect"``), population statistics, C1 = (0.01 R)², C2 = (0.03 R)²; the SSIM map
is averaged after cropping (11 − 1)/2 = 5 pixels from every border, then over channels.
Same filters, same arithmetic, in float64: equal to scikit-image to ~1e-15.

``ssim_global`` is the RPX single-window form: one window over the whole image with every
channel pooled, population statistics, the same C1 and C2.
"""

from __future__ import annotations

import math

import numpy as np

SIGMA = 1.5
TRUNCATE = 3.5
RADIUS = int(TRUNCATE * SIGMA + 0.5)  # 5: scipy.ndimage's radius for this sigma
WINDOW = 2 * RADIUS + 1
PSNR_CAP = 100.0
K1, K2 = 0.01, 0.03


def psnr(x: np.ndarray, y: np.ndarray, data_range: float) -> tuple[float, bool]:
    """``(10 log10(R² / MSE), identical)``; identical images get ``PSNR_CAP`` (100 dB)."""
    diff = x.astype(np.float64) - y
    mse = float(np.dot(diff.ravel(), diff.ravel())) / diff.size
    if mse == 0.0:
        return PSNR_CAP, True
    return 10.0 * math.log10(data_range * data_range / mse), False


def ssim(x: np.ndarray, y: np.ndarray, data_range: float) -> float:
    """Mean SSIM (Gaussian window) of two (H, W) or (H, W, C) images."""
    if x.ndim == 2:
        x, y = x[..., None], y[..., None]
    if min(x.shape[:2]) < WINDOW:
        raise ValueError(f"images smaller than the {WINDOW}x{WINDOW} SSIM window")
    work = _workspace(x.shape[:2])
    return float(np.mean([work.channel(x[..., c], y[..., c], data_range)
                          for c in range(x.shape[2])]))


_WORKSPACES: dict[tuple[int, int], _Workspace] = {}


def _workspace(shape: tuple[int, int]) -> _Workspace:
    """Buffers for one image size, kept between calls (a run's images share a size)."""
    if shape not in _WORKSPACES:
        if len(_WORKSPACES) >= 4:
            _WORKSPACES.pop(next(iter(_WORKSPACES)))
        _WORKSPACES[shape] = _Workspace(shape)
    return _WORKSPACES[shape]


class _Workspace:
    """Preallocated float64 buffers for one image size: inputs, the five filtered moments
    and scratch for the SSIM map. No array is allocated per call."""

    def __init__(self, shape: tuple[int, int]) -> None:
        self.x, self.y, self.product = (np.empty(shape) for _ in range(3))
        self.maps = [np.empty(shape) for _ in range(5)]
        inner = (shape[0] - 2 * RADIUS, shape[1] - 2 * RADIUS)
        self.scratch = [np.empty(inner) for _ in range(4)]

    def channel(self, x: np.ndarray, y: np.ndarray, data_range: float) -> float:
        from scipy import ndimage  # imported on first use: ~0.1 s that other commands skip

        np.copyto(self.x, x, casting="unsafe")
        np.copyto(self.y, y, casting="unsafe")
        x, y, product = self.x, self.y, self.product
        ux, uy, uxx, uyy, uxy = self.maps
        gauss = {"sigma": SIGMA, "truncate": TRUNCATE, "mode": "reflect"}
        ndimage.gaussian_filter(x, output=ux, **gauss)
        ndimage.gaussian_filter(y, output=uy, **gauss)
        ndimage.gaussian_filter(np.multiply(x, x, out=product), output=uxx, **gauss)
        ndimage.gaussian_filter(np.multiply(y, y, out=product), output=uyy, **gauss)
        ndimage.gaussian_filter(np.multiply(x, y, out=product), output=uxy, **gauss)
        inner = (slice(RADIUS, -RADIUS), slice(RADIUS, -RADIUS))
        ux, uy, uxx, uyy, uxy = (m[inner] for m in (ux, uy, uxx, uyy, uxy))
        c1 = (K1 * data_range) ** 2
        c2 = (K2 * data_range) ** 2
        t0, t1, t2, t3 = self.scratch
        # scikit-image's expressions, operation for operation (so the floats are the same):
        vx = np.subtract(uxx, np.multiply(ux, ux, out=t0), out=t0)  # uxx - ux * ux
        vy = np.subtract(uyy, np.multiply(uy, uy, out=t1), out=t1)  # uyy - uy * uy
        vxy = np.subtract(uxy, np.multiply(ux, uy, out=t2), out=t2)  # uxy - ux * uy
        a1 = np.multiply(np.multiply(2, ux, out=uxx), uy, out=uxx)  # 2 * ux * uy + C1
        a1 += c1
        a2 = np.multiply(2, vxy, out=vxy)  # 2 * vxy + C2
        a2 += c2
        b1 = np.add(np.square(ux, out=uyy), np.square(uy, out=t3), out=uyy)  # ux**2 + uy**2 + C1
        b1 += c1
        b2 = np.add(vx, vy, out=vx)  # vx + vy + C2
        b2 += c2
        np.multiply(b1, b2, out=b1)  # D = B1 * B2
        np.multiply(a1, a2, out=a1)  # S = (A1 * A2) / D
        np.divide(a1, b1, out=a1)
        return float(a1.mean(dtype=np.float64))


def reference_ssim(x: np.ndarray, y: np.ndarray, data_range: float) -> float:
    """:func:`ssim` written as the formula (Wang et al. 2004 with scikit-image's Gaussian
    window), one temporary per term: the readable reference a test compares the
    workspace kernel with."""
    from scipy import ndimage

    if x.ndim == 2:
        x, y = x[..., None], y[..., None]
    c1, c2 = (K1 * data_range) ** 2, (K2 * data_range) ** 2
    values = []
    for c in range(x.shape[2]):
        a, b = x[..., c].astype(np.float64), y[..., c].astype(np.float64)

        def blur(image: np.ndarray) -> np.ndarray:
            return ndimage.gaussian_filter(image, sigma=SIGMA, truncate=TRUNCATE, mode="reflect")

        mx, my = blur(a), blur(b)
        vx, vy, vxy = blur(a * a) - mx * mx, blur(b * b) - my * my, blur(a * b) - mx * my
        index = ((2 * mx * my + c1) * (2 * vxy + c2)) / ((mx**2 + my**2 + c1) * (vx + vy + c2))
        values.append(index[RADIUS:-RADIUS, RADIUS:-RADIUS].mean())
    return float(np.mean(values))


def ssim_global(x: np.ndarray, y: np.ndarray, data_range: float) -> float:
    """RPX single-window SSIM: whole image, channels pooled, population statistics."""
    x = x.astype(np.float64).ravel()
    y = y.astype(np.float64).ravel()
    mx, my = float(x.mean()), float(y.mean())
    dx, dy = x - mx, y - my
    n = x.size
    vx, vy = float(np.dot(dx, dx)) / n, float(np.dot(dy, dy)) / n
    cov = float(np.dot(dx, dy)) / n
    c1 = (K1 * data_range) ** 2
    c2 = (K2 * data_range) ** 2
    return ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
