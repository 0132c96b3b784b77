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
    if all(type(s) is dict and type(s["counts"]) is bytes for s in segmentations):
        return list(segmentations)  # compressed already (a results file): nothing to make
    out: list[dict[str, Any] | None] = [None] * len(segmentations)
    # single polygons of one image size rasterised in one call (one RLE each, no merge)
    single: dict[tuple[int, int], list[int]] = {}
    for i, (segmentation, size) in enumerate(zip(segmentations, sizes, strict=True)):
        if type(segmentation) is list and len(segmentation) == 1:
            single.setdefault(tuple(size), []).append(i)
    mask = require_pycocotools() if single else None
    for (h, w), members in single.items():
        rles = mask.frPyObjects([segmentations[i][0] for i in members], int(h), int(w))
        for i, rle in zip(members, rles, strict=True):
            out[i] = {"size": [int(h), int(w)], "counts": rle["counts"]}
    for i, (segmentation, (h, w)) in enumerate(zip(segmentations, sizes, strict=True)):
        if out[i] is not None:
            continue
        if isinstance(segmentation, dict) and isinstance(segmentation["counts"], bytes):
            out[i] = {"size": segmentation["size"], "counts": segmentation["counts"]}
            continue
        mask = mask or require_pycocotools()
        if isinstance(segmentation, list):
            rle = mask.merge(mask.frPyObjects(segmentation, int(h), int(w)))
        else:
            rle = mask.frPyObjects(segmentation, int(h), int(w))
        out[i] = {"size": [int(h), int(w)], "counts": rle["counts"]}
    return out  # type: ignore[return-value]


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


def totals(rles: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each compressed RLE's area (its 1-runs), the sum of all its runs and whether its
    first counts could be read, with pycocotools' C decoder: the sum is the area plus the
    area of the complement mask (the same runs after a leading empty run). A well-formed
    mask sums to ``h · w``. (As in pycocotools, runs are 32-bit unsigned: a crafted
    negative run wraps.) ``rpx_cli.ops.rle.decode_counts`` is the reference."""
    from rpx_cli.ops.rle import encode_values, head_groups

    mask = require_pycocotools()
    n = len(rles)
    if not n:
        empty = np.zeros(0, np.int64)
        return empty, empty.copy(), np.zeros(0, bool)
    strings = [rle["counts"] for rle in rles]
    values, found, cut, ok = head_groups(strings)
    # the complement's first counts: 0, c0, c1, c2 - c0 (then the string's own from x3 on)
    first = np.zeros((n, 4), np.int64)
    first[:, 1:] = values
    first[:, 3] = np.where(found >= 3, values[:, 2] - values[:, 0], 0)
    keep = np.minimum(found, 3) + 1
    chars, length = encode_values(first.ravel())
    chars, length = chars.reshape(n, 4, -1), length.reshape(n, 4)
    length = np.where(np.arange(4)[None, :] < keep[:, None], length, 0)
    joined = chars[np.arange(chars.shape[2])[None, None, :] < length[:, :, None]].tobytes()
    size = length.sum(axis=1)
    start = (np.cumsum(size) - size).tolist()
    size = size.tolist()
    cuts = cut.tolist()
    complement = [{"size": rle["size"], "counts": joined[a:a + b] + s[c:]}
                  for rle, s, a, b, c in zip(rles, strings, start, size, cuts, strict=True)]
    area, back = _areas(mask, list(rles)), _areas(mask, complement)
    total = area + back
    if not ok.all():  # a first count of more than 16 characters: decoded in full instead
        from rpx_cli.ops.rle import decode_counts

        rest = np.flatnonzero(~ok)
        decoded = decode_counts([strings[i] for i in rest.tolist()])
        total[rest] = decoded.total
        ok[rest] = [not problem for problem in decoded.problem]
    return area, total, ok


def _areas(mask, rles: list[dict[str, Any]]) -> np.ndarray:
    """``mask.area`` in batches of 255: with numpy 2 it builds a uint8 array of the batch's
    length first, which overflows past 255 (pycocotools 2.0.x)."""
    out = np.zeros(len(rles), np.int64)
    for start in range(0, len(rles), 255):
        out[start:start + 255] = mask.area(rles[start:start + 255])
    return out
