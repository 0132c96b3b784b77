"""Box geometry: IoU matrices by broadcasting (no loop over boxes)."""

from __future__ import annotations

import numpy as np


def iou_xywh(dt: np.ndarray, gt: np.ndarray, crowd: np.ndarray | None = None) -> np.ndarray:
    """IoU of every detection with every GT box, (D, G), both ``[x, y, w, h]``.

    pycocotools' ``maskUtils.iou`` for boxes, operation for operation: the overlap width is
    ``min(dx + dw, gx + gw) − max(dx, gx)`` (no overlap when ``<= 0``), and for a crowd GT the
    union is the detection's area (intersection over detection area)."""
    dx, dy, dw, dh = (dt[:, None, k] for k in range(4))
    gx, gy, gw, gh = (gt[None, :, k] for k in range(4))
    w = np.minimum(dx + dw, gx + gw) - np.maximum(dx, gx)
    h = np.minimum(dy + dh, gy + gh) - np.maximum(dy, gy)
    inter = np.where((w > 0) & (h > 0), w * h, 0.0)
    da, ga = dw * dh, gw * gh
    union = da + ga - inter
    if crowd is not None:
        union = np.where(crowd[None, :], da, union)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(inter > 0, inter / union, 0.0)


def iou_pairs(dt: np.ndarray, gt: np.ndarray, crowd: bool = False) -> np.ndarray:
    """IoU of ``dt[i]`` with ``gt[i]`` (both (N, 4) ``[x, y, w, h]``), the operations of
    :func:`iou_xywh`; ``crowd``: intersection over the detection's area."""
    dx, dy, dw, dh = dt.T
    gx, gy, gw, gh = gt.T
    w = np.minimum(dx + dw, gx + gw) - np.maximum(dx, gx)
    h = np.minimum(dy + dh, gy + gh) - np.maximum(dy, gy)
    inter = np.where((w > 0) & (h > 0), w * h, 0.0)
    da = dw * dh
    union = da if crowd else da + gw * gh - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(inter > 0, inter / union, 0.0)


def xyxy_to_xywh(boxes: np.ndarray) -> np.ndarray:
    out = boxes.astype(np.float64, copy=True)
    out[:, 2] = boxes[:, 2] - boxes[:, 0]
    out[:, 3] = boxes[:, 3] - boxes[:, 1]
    return out
