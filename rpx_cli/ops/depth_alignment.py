"""Aligning a relative-depth prediction to the GT before scoring (``--align``): the
median ratio, least squares in depth, or least squares in disparity."""

from __future__ import annotations

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.ops.depth import PRED_FLOOR


def align(pred: np.ndarray, gt: np.ndarray, method: str) -> tuple[np.ndarray, float | None,
                                                                  float | None]:
    """Fit the prediction to GT (the valid pixels given) and apply the fit: returns
    ``(aligned, scale, shift)``.

    - ``median``: ``p · median(g) / median(p)`` (shift None);
    - ``ls_affine``: least squares of ``s·p + t`` onto g;
    - ``ls_disparity``: least squares of ``s/p + t`` onto ``1/g``, mapped back to depth
      ``1 / max(s/p + t, 1e-6)`` (a non-positive fitted disparity would be a depth at or
      beyond infinity). ``1/p`` uses ``max(p, 1e-6)``.

    A degenerate fit (a constant prediction) keeps scale 0 and the mean as shift.
    """
    if method == "none" or pred.size == 0:
        return pred, None, None
    scale, shift = fit_alignment(pred, gt, method)
    return apply_alignment(pred, method, scale, shift), scale, shift


def fit_alignment(pred: np.ndarray, gt: np.ndarray, method: str) -> tuple[float, float | None]:
    if method == "median":
        median_pred = float(np.median(pred))
        if not median_pred > 0:
            raise InputError(f"median alignment needs a positive median prediction, got {median_pred:g}")
        return float(np.median(gt)) / median_pred, None
    if method == "ls_affine":
        return _least_squares(pred, gt)
    if method == "ls_disparity":
        return _least_squares(1.0 / np.maximum(pred, PRED_FLOOR), 1.0 / gt)
    raise ValueError(f"unknown alignment {method!r}")


def apply_alignment(pred: np.ndarray, method: str, scale: float, shift: float | None) -> np.ndarray:
    if method == "median":
        return pred * scale
    if method == "ls_affine":
        return pred * scale + shift
    if method == "ls_disparity":
        return 1.0 / np.maximum(scale / np.maximum(pred, PRED_FLOOR) + shift, PRED_FLOOR)
    raise ValueError(f"unknown alignment {method!r}")


def _least_squares(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Minimise Σ (s·x + t − y)², centred for accuracy."""
    x_mean, y_mean = float(x.mean()), float(y.mean())
    xc = x - x_mean
    var = float(np.dot(xc, xc))
    if var == 0.0:
        return 0.0, y_mean
    scale = float(np.dot(xc, y - y_mean)) / var
    return scale, y_mean - scale * x_mean
