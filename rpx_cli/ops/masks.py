"""Instance masks (``--iou-type segm``): COCO's polygons and RLEs as compressed RLEs, their
areas, and every frame's (prediction, GT) intersections, as pycocotools computes them.

Polygons are rasterised and RLEs compressed by ``pycocotools.mask`` (the ``rpx-eval[coco]``
extra, imported here only): its polygon rasteriser is the reference every COCO number is
defined by, and its C run-merging intersection is what rpx measured fastest for the pairs
of one frame (benchmarks/RESULTS.md). Areas and the checks pycocotools leaves out (runs
summing to ``h · w``, no negative run) come from rpx's own vectorised decoder
(:mod:`rpx_cli.ops.rle`).

Intersections are exact integers: ``maskUtils.iou`` with every GT flagged as a crowd
region gives ``intersection / prediction area`` (a double of two integers), which times the
area and rounded is the integer again; IoU is then ``i / (a_d + a_g − i)`` — pycocotools'
own ``(double) i / (double) u`` — in :class:`~rpx_cli.ops.geometry.OverlapTable`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rpx_cli.errors import MissingExtra

INSTALL_COCO = "pip install 'rpx-eval[coco]'"


def require_pycocotools():
    """``pycocotools.mask``, or :class:`~rpx_cli.errors.MissingExtra` naming the extra."""
    try:
        from pycocotools import mask
    except ImportError:
        raise MissingExtra("--iou-type segm needs pycocotools (polygons and RLEs), which is not "
                           f"installed: {INSTALL_COCO}") from None
    return mask


def compressed(segmentations: Sequence[Any], sizes: Sequence[tuple[int, int]]) -> list[dict[str, Any]]:
    """Each segmentation (polygons ``[[x1, y1, ...], ...]``, an uncompressed RLE
    ``{"size", "counts": [ints]}`` or a compressed one) as a compressed RLE ``{"size": [h,
    w], "counts": bytes}``, as pycocotools' ``annToRLE`` makes it (polygon parts merged).
    ``sizes[i]`` is the image's ``(h, w)`` (polygons need it)."""
    out: list[dict[str, Any]] = []
    mask = None
    for segmentation, (h, w) in zip(segmentations, sizes, strict=True):
        if isinstance(segmentation, dict) and isinstance(segmentation["counts"], (bytes, str)):
            counts = segmentation["counts"]
            out.append({"size": [int(h), int(w)],
                        "counts": counts.encode("ascii") if isinstance(counts, str) else counts})
            continue
        mask = mask or require_pycocotools()
        if isinstance(segmentation, list):
            rle = mask.merge(mask.frPyObjects(segmentation, int(h), int(w)))
        else:
            rle = mask.frPyObjects(segmentation, int(h), int(w))
        out.append({"size": [int(h), int(w)], "counts": rle["counts"]})
    return out


def frame_intersections(pred: Sequence[dict[str, Any]], gt: Sequence[dict[str, Any]],
                        pred_area: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pred index, gt index, intersection in pixels)`` of the pairs of one frame whose
    masks intersect (pycocotools' C run merge, boxes tested first)."""
    if not len(pred) or not len(gt):
        empty = np.zeros(0, np.int64)
        return empty, empty.copy(), np.zeros(0)
    ioa = np.asarray(require_pycocotools().iou(list(pred), list(gt), [1] * len(gt)), np.float64)
    ioa = ioa.reshape(len(pred), len(gt))
    inter = np.rint(ioa * np.asarray(pred_area, np.float64)[:, None])
    d, g = np.nonzero(inter > 0)
    return d, g, inter[d, g]


def table_intersections(pred: np.ndarray, gt: np.ndarray, pred_frame: np.ndarray,
                        gt_frame: np.ndarray, pred_area: np.ndarray, n: int):
    """:func:`frame_intersections` of every frame, ids numbered as the tables lay the masks
    out (frames in order). One call into pycocotools per frame with both sides."""
    d_bounds = np.searchsorted(pred_frame, np.arange(n + 1))
    g_bounds = np.searchsorted(gt_frame, np.arange(n + 1))
    both = np.flatnonzero((np.diff(d_bounds) > 0) & (np.diff(g_bounds) > 0))
    ds, gs, inters = [], [], []
    for i in both.tolist():
        d0, d1, g0, g1 = d_bounds[i], d_bounds[i + 1], g_bounds[i], g_bounds[i + 1]
        d, g, inter = frame_intersections(pred[d0:d1], gt[g0:g1], pred_area[d0:d1])
        ds.append(d + d0)
        gs.append(g + g0)
        inters.append(inter)
    if not ds:
        empty = np.zeros(0, np.int64)
        return empty, empty.copy(), np.zeros(0)
    return np.concatenate(ds), np.concatenate(gs), np.concatenate(inters)
