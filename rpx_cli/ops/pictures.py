"""The overlays the page lays over a worst frame (``--keep-worst``; drawn by a task's
``frame_overlays``): RGBA ``uint8`` arrays at the frame's resolution, transparent where
there is nothing to say. Colours are the page's (Okabe & Ito; viridis for magnitudes), so
an overlay reads the same as the charts beside it."""

from __future__ import annotations

import numpy as np

WRONG = (213, 94, 0, 210)  # vermillion: a wrong pixel
IGNORED = (128, 128, 128, 110)  # grey: a pixel the metric leaves out
# categorical colours for classes (Okabe & Ito first, then more distinct hues), by label id
CLASS_COLOURS = np.array([
    (0, 114, 178), (230, 159, 0), (0, 158, 115), (204, 121, 167), (86, 180, 233), (213, 94, 0),
    (240, 228, 66), (0, 0, 0), (148, 103, 189), (140, 86, 75), (127, 127, 127), (188, 189, 34),
    (23, 190, 207), (255, 152, 150), (197, 176, 213), (196, 156, 148), (247, 182, 210),
    (199, 199, 199), (219, 219, 141), (158, 218, 229)], dtype=np.uint8)
CLASS_ALPHA = 150
# viridis at 0, .25, .5, .75, 1 (the page's heatmaps)
VIRIDIS = np.array([(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)],
                   dtype=np.float64)
ABSREL_LIMIT = 0.5  # the depth error map's scale: |p - g| / g from 0 to this (and beyond)


def error_overlay(pred: np.ndarray, gt: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    """Label maps: the wrong pixels in vermillion, the ignored ones grey, the rest clear."""
    rgba = np.zeros((*gt.shape, 4), np.uint8)
    rgba[(pred != gt) & ~ignored] = WRONG
    rgba[ignored] = IGNORED
    return rgba


def label_overlay(labels: np.ndarray) -> np.ndarray:
    """A label map in the class colours (label id modulo the palette), half transparent;
    negative labels (no prediction) clear."""
    rgba = np.zeros((*labels.shape, 4), np.uint8)
    known = labels >= 0
    rgba[..., :3] = CLASS_COLOURS[np.where(known, labels, 0) % len(CLASS_COLOURS)]
    rgba[..., 3] = np.where(known, CLASS_ALPHA, 0)
    return rgba


def magnitude_colours(t: np.ndarray) -> np.ndarray:
    """Viridis of ``t`` in [0, 1] (clipped), as the page's heatmaps: (..., 3) uint8."""
    x = np.clip(np.nan_to_num(t), 0.0, 1.0) * (len(VIRIDIS) - 1)
    low = np.minimum(x.astype(np.int64), len(VIRIDIS) - 2)
    frac = (x - low)[..., None]
    return np.round(VIRIDIS[low] + (VIRIDIS[low + 1] - VIRIDIS[low]) * frac).astype(np.uint8)


def depth_error_overlay(pred: np.ndarray, gt: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The relative error ``|p - g| / g`` of every valid pixel in 16 steps of viridis from 0
    to :data:`ABSREL_LIMIT` (and beyond), invalid pixels clear."""
    rgba = np.zeros((*gt.shape, 4), np.uint8)
    with np.errstate(divide="ignore", invalid="ignore"):
        error = np.where(valid, np.abs(pred - gt) / gt, 0.0)
    # 16 steps: the legend reads them, and a PNG of few colours stays small
    rgba[..., :3] = magnitude_colours(np.floor(np.clip(error / ABSREL_LIMIT, 0, 1) * 15) / 15)
    rgba[..., 3] = np.where(valid, 220, 0)
    return rgba
