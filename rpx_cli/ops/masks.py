"""Instance masks (``--iou-type segm``): COCO's polygons and RLEs as compressed RLEs, their
areas, and every frame's (prediction, GT) intersections, as pycocotools computes them.

Two paths give the same numbers (:mod:`rpx_cli.native`):

- **native** (the default where the extension is built): polygons rasterised as
  ``rleFrPoly`` and merged, runs encoded, strings decoded and every frame's pairs
  intersected by the C kernels of ``rpx_cli/csrc/rle.c`` (GIL released, 64-bit sums);
  pycocotools is not needed;
- **numpy** (``RPX_NATIVE=0``, or no compiler at install): strings decoded and checked by
  rpx's vectorised decoder (:func:`rpx_cli.ops.rle.decode_counts`, 64-bit), polygons
  rasterised and pairs intersected by ``pycocotools.mask`` (the ``rpx-eval[coco]`` extra,
  imported here only) — on checked data only.

Either way nothing reaches a rasteriser or a run walk unchecked: polygons keep the bounds
of :mod:`rpx_cli.ops.polygon_raster` and masks at most ``2^31 - 1`` pixels (checked by the
caller, ``tasks/detection/instances.py``), and every string is decoded in 64 bits and its
runs checked (none negative, summing to ``h · w``) before any intersection.

Intersections are exact integers: ``maskUtils.iou`` with every GT flagged as a crowd
region gives ``intersection / prediction area`` (a double of two integers), which times the
area and rounded is the integer again; IoU is then ``i / (a_d + a_g − i)`` — pycocotools'
own ``(double) i / (double) u`` — in :class:`~rpx_cli.ops.geometry.OverlapTable`.
:func:`reference_intersections` is the pixel-by-pixel twin the tests compare both with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from itertools import chain, pairwise
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli import native
from rpx_cli.errors import MissingExtra
from rpx_cli.ops.polygon_raster import MAX_STEPS, flatten

INSTALL_COCO = "pip install 'rpx-eval[coco]'"


def require_pycocotools():
    """``pycocotools.mask``, or :class:`~rpx_cli.errors.MissingExtra` naming the extra."""
    try:
        from pycocotools import mask
    except ImportError:
        raise MissingExtra("--iou-type segm without rpx's native core (RPX_NATIVE=0, or "
                           "installed without a C compiler) needs pycocotools (polygons and "
                           f"RLEs), which is not installed: {INSTALL_COCO}") from None
    return mask


def require_kernels() -> None:
    """The mask kernels can run: the native core, else pycocotools (or MissingExtra)."""
    if native.core() is None:
        require_pycocotools()


def joined(strings: Sequence[bytes]) -> tuple[bytes, np.ndarray]:
    """Compressed strings as one buffer and their offsets (N + 1, int64)."""
    offsets = np.zeros(len(strings) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, strings), np.int64, count=len(strings)), out=offsets[1:])
    return b"".join(strings), offsets


def joins_strings() -> bool:
    """The kernels that run read the strings joined (the native core's): worth keeping them
    so (:func:`joined_counts`)."""
    return native.core() is not None


def joined_counts(rles: Sequence[dict[str, Any]]) -> tuple[bytes, np.ndarray]:
    """The RLEs' strings as one buffer and their offsets: those an array of them holds
    already (``packed``: ``rpx_cli.io.packed_rles``, set where the strings were made, None in
    any array derived from it), else joined here."""
    packed = getattr(rles, "packed", None)
    if packed is not None and len(packed[1]) == len(rles) + 1:
        return packed
    return joined([rle["counts"] for rle in rles])


def sizes_of(rles: Sequence[dict[str, Any]]) -> np.ndarray:
    """Each RLE's ``size`` ``[h, w]`` as an (N, 2) int64 array: those an array of them holds
    already (``sizes``, beside :func:`joined_counts`' strings), else read in one C-level
    pass."""
    sizes = getattr(rles, "sizes", None)
    if sizes is not None and len(sizes) == len(rles):
        return sizes
    n = len(rles)
    return np.fromiter(chain.from_iterable(map(itemgetter("size"), rles)), np.int64,
                       count=2 * n).reshape(n, 2)


def _split(text: bytes, offsets: np.ndarray) -> list[bytes]:
    bounds = offsets.tolist()
    return [text[a:b] for a, b in pairwise(bounds)]


def compressed(segmentations: Sequence[Any],
               sizes: np.ndarray | Sequence[tuple[int, int]]) -> list[dict[str, Any]]:
    """Each segmentation (polygons ``[[x1, y1, ...], ...]``, an uncompressed RLE
    ``{"size", "counts": [ints]}`` or a compressed one) as a compressed RLE ``{"size": [h,
    w], "counts": bytes}``, as pycocotools' ``annToRLE`` makes it (polygon parts merged).
    ``sizes[i]`` is the image's ``(h, w)`` (polygons need it; an (N, 2) array or pairs,
    read only where a segmentation is not a compressed RLE already). Polygons must keep
    :mod:`rpx_cli.ops.polygon_raster`'s bounds and uncompressed runs be checked (the
    callers do both)."""
    return start_compressed(segmentations, sizes)()


def start_compressed(segmentations: Sequence[Any], sizes: np.ndarray | Sequence[tuple[int, int]],
                     *, background: bool = False) -> Callable[[], list[dict[str, Any]]]:
    """:func:`compressed` in two steps: the polygons flattened now, then what the returned
    function (called once) gives. ``background``: the native core's rasterisation — one
    call, the GIL released throughout — runs in a thread meanwhile, while the caller goes on
    with its own Python (on the numpy path, and without it, everything waits for the call)."""
    if set(map(type, segmentations)) <= {dict} and \
            set(map(type, map(itemgetter("counts"), segmentations))) <= {bytes}:
        made = list(segmentations)  # compressed already (a results file): nothing to make
        return lambda: made
    core = native.core()
    if core is None:
        return lambda: _compressed_pycocotools(segmentations, sizes)
    polygons = [i for i, s in enumerate(segmentations) if type(s) is list]
    rasterised = None
    if polygons:
        xy, vertex_starts, polygon_starts = flatten([segmentations[i] for i in polygons])
        hw = np.asarray(sizes, np.int64).reshape(-1, 2)[polygons]
        rasterised = _rasterising(core, xy, vertex_starts, polygon_starts, hw, background)
    return partial(_finish_compressed, core, segmentations, sizes, polygons, rasterised)


def _rasterising(core: Any, xy: np.ndarray, vertex_starts: np.ndarray, polygon_starts: np.ndarray,
                 hw: np.ndarray, background: bool) -> Callable[[], tuple]:
    """The ``polygons_rle`` call of these polygons, started in a thread (``background``) or
    waiting to be made: the function that gives its ``(text, offsets)``."""
    # the kernel's own bound (the caller checked each polygon's, which is tighter)
    most = MAX_STEPS + int(np.diff(vertex_starts).max())
    args = (xy, vertex_starts, polygon_starts, np.ascontiguousarray(hw, np.int64), most,
            native.threads())
    if background:
        return native.started(core.polygons_rle, *args, name="rpx-polygons").result
    return partial(core.polygons_rle, *args)


def _put_rasterised(out: list, rasterised: Callable[[], tuple], objects: Sequence[int],
                    hw: np.ndarray) -> None:
    """The rasterised objects' compressed RLEs into ``out`` at ``objects``."""
    text, offsets = rasterised()
    strings = _split(text, np.frombuffer(offsets, np.int64))
    for i, counts, (h, w) in zip(objects, strings, hw.tolist(), strict=True):
        out[i] = {"size": [h, w], "counts": counts}


def start_compressed_columns(columns: Any, sizes: np.ndarray, *,
                             background: bool = False) -> Callable[[], list[dict[str, Any]]]:
    """:func:`start_compressed` of a masks GT the native scanner read into columns
    (``io.coco_gt_columns.MaskColumns``, file order; the native core's only): its polygons
    rasterised at ``sizes`` (each annotation's image ``(h, w)``, (N, 2) in file order; a
    thread of its own with ``background``), its uncompressed runs encoded, its strings cut.
    The polygons must keep :mod:`rpx_cli.ops.polygon_raster`'s bounds (the caller checks)."""
    core = native.core()
    kind = columns.kind
    polygons = np.flatnonzero(kind == 0)
    rasterised = None
    if polygons.size:
        # (an RLE owns no polygon: the polygon objects' own are contiguous)
        polygon_starts = np.append(columns.polygon_starts[polygons], columns.polygon_starts[-1])
        rasterised = _rasterising(core, columns.xy, columns.vertex_starts, polygon_starts,
                                  sizes[polygons], background)
    return partial(_finish_columns, core, columns, sizes, polygons, rasterised)


def _finish_columns(core: Any, columns: Any, sizes: np.ndarray, polygons: np.ndarray,
                    rasterised: Callable[[], tuple] | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any] | None] = [None] * len(columns.kind)
    if rasterised is not None:
        _put_rasterised(out, rasterised, polygons.tolist(), sizes[polygons])
    size = columns.rle_size.tolist()
    runs = np.flatnonzero(columns.kind == 1)
    if runs.size:
        starts = np.append(columns.runs_at[runs], columns.runs_at[-1])
        text, offsets = core.rle_encode(columns.runs, starts)
        for i, string in zip(runs.tolist(), _split(text, np.frombuffer(offsets, np.int64)), strict=True):
            out[i] = {"size": size[i], "counts": string}
    bounds = columns.text_at.tolist()
    for i in np.flatnonzero(columns.kind == 2).tolist():
        out[i] = {"size": size[i], "counts": columns.text[bounds[i]:bounds[i + 1]]}
    return out  # type: ignore[return-value]


def _finish_compressed(core: Any, segmentations: Sequence[Any], sizes: np.ndarray | Sequence[tuple[int, int]],
                       polygons: list[int], rasterised: Callable[[], tuple] | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any] | None] = [None] * len(segmentations)
    if rasterised is not None:
        _put_rasterised(out, rasterised, polygons, np.asarray(sizes, np.int64).reshape(-1, 2)[polygons])
    runs = [i for i, s in enumerate(segmentations) if type(s) is dict and type(s["counts"]) is not bytes]
    if runs:
        lists = [segmentations[i]["counts"] for i in runs]
        starts = np.zeros(len(lists) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, lists), np.int64, count=len(lists)), out=starts[1:])
        counts = np.fromiter(chain.from_iterable(lists), np.int64, count=int(starts[-1]))
        text, offsets = core.rle_encode(counts, starts)
        for i, string in zip(runs, _split(text, np.frombuffer(offsets, np.int64)), strict=True):
            h, w = sizes[i]
            out[i] = {"size": [int(h), int(w)], "counts": string}
    for i, segmentation in enumerate(segmentations):
        if out[i] is None:
            out[i] = {"size": segmentation["size"], "counts": segmentation["counts"]}
    return out  # type: ignore[return-value]


def _compressed_pycocotools(segmentations: Sequence[Any],
                            sizes: np.ndarray | Sequence[tuple[int, int]]) -> list[dict[str, Any]]:
    """:func:`compressed` with pycocotools (the numpy path)."""
    sizes = [(int(h), int(w)) for h, w in np.asarray(sizes, np.int64).reshape(-1, 2).tolist()]
    out: list[dict[str, Any] | None] = [None] * len(segmentations)
    # single polygons of one image size rasterised in one call (one RLE each, no merge)
    single: dict[tuple[int, int], list[int]] = {}
    for i, (segmentation, size) in enumerate(zip(segmentations, sizes, strict=True)):
        if type(segmentation) is list and len(segmentation) == 1:
            single.setdefault(size, []).append(i)
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
    masks intersect (pycocotools' C run merge, boxes tested first: the numpy path)."""
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
    out (frames in order): one native call for the whole table (its frames split among
    :func:`rpx_cli.native.threads` threads), else one call into
    pycocotools per frame with both sides. Every mask must have been checked
    (:func:`totals`)."""
    d_bounds = np.searchsorted(pred_frame, np.arange(n + 1))
    g_bounds = np.searchsorted(gt_frame, np.arange(n + 1))
    core = native.core()
    if core is not None:
        heights = np.ones(n, np.int64)
        for side, frame in ((pred, pred_frame), (gt, gt_frame)):
            if len(side):
                heights[frame] = sizes_of(side)[:, 0]
        pred_text, pred_offsets = joined_counts(pred)
        gt_text, gt_offsets = joined_counts(gt)
        d, g, inter = core.rle_intersections(pred_text, pred_offsets, gt_text, gt_offsets,
                                             d_bounds.astype(np.int64), g_bounds.astype(np.int64),
                                             heights, native.threads())
        return (np.frombuffer(d, np.int64), np.frombuffer(g, np.int64),
                np.frombuffer(inter, np.int64).astype(np.float64))
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


def reference_intersections(pred: Sequence[np.ndarray], gt: Sequence[np.ndarray]) -> np.ndarray:
    """The (pred, gt) intersection matrix of masks given as runs (one size), pixel by pixel:
    the formula-shaped twin of both paths (tests only: it decodes every pixel)."""
    def pixels(runs: np.ndarray) -> np.ndarray:
        runs = np.asarray(runs, np.int64)
        return np.repeat(np.arange(runs.size) % 2 == 1, runs)

    p = np.array([pixels(r) for r in pred], np.int64).reshape(len(pred), -1)
    g = np.array([pixels(r) for r in gt], np.int64).reshape(len(gt), -1)
    return p @ g.T


def totals(rles: Sequence[dict[str, Any]],
           packed: tuple[bytes, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each compressed RLE's area (its 1-runs), the sum of all its runs and whether it is
    well formed (every character in COCO's alphabet, no count cut short or over 12
    characters, no negative run), decoded in 64 bits: by the native core (the strings split
    among :func:`rpx_cli.native.threads` threads), else by
    :func:`rpx_cli.ops.rle.decode_counts`. A well-formed mask sums to ``h · w``.
    ``packed``: the RLEs' strings joined already (:func:`joined_counts`), if at hand."""
    n = len(rles)
    if not n:
        empty = np.zeros(0, np.int64)
        return empty, empty.copy(), np.zeros(0, bool)
    core = native.core()
    if core is not None:
        text, offsets = joined_counts(rles) if packed is None else packed
        area, total, bad = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.uint8)
        core.rle_check(text, offsets, area, total, bad, native.threads())
        return area, total, bad == 0
    from rpx_cli.ops.rle import decode_counts

    strings = [rle["counts"] for rle in rles]
    # in pieces of about CHECK_CHARS characters: the decoder's ~30 array passes then stay in
    # the CPU's caches instead of faulting in fresh memory for each (4-5x faster at 20,000
    # strings)
    area, total, ok = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool)
    ends = np.cumsum(np.fromiter(map(len, strings), np.int64, count=n))
    cuts = np.unique(np.searchsorted(ends, np.arange(CHECK_CHARS, int(ends[-1]) + CHECK_CHARS,
                                                     CHECK_CHARS), side="right"))
    start = 0
    for stop in [*cuts[cuts < n].tolist(), n]:
        if stop <= start:
            continue
        decoded = decode_counts(strings[start:stop])
        area[start:stop], total[start:stop] = decoded.area, decoded.total
        ok[start:stop] = [not problem for problem in decoded.problem]
        start = stop
    return area, total, ok


CHECK_CHARS = 1 << 18
"""Characters of compressed strings decoded at once on the numpy path (:func:`totals`)."""


def boxes(rles: Sequence[dict[str, Any]]) -> np.ndarray:
    """Each well-formed compressed RLE's ``[x, y, w, h]`` bounding box (float64, pycocotools'
    ``toBbox``: ``[0, 0, 0, 0]`` for an empty mask), by the native core, else by
    :func:`reference_boxes`. The strings must have been checked (:func:`totals`)."""
    n = len(rles)
    out = np.zeros((n, 4))
    if not n:
        return out
    heights = np.array([rle["size"][0] for rle in rles], np.int64)
    core = native.core()
    if core is not None:
        text, offsets = joined([rle["counts"] for rle in rles])
        core.rle_bbox(text, offsets, heights, out)
        return out
    return reference_boxes([rle["counts"] for rle in rles], heights)


def reference_boxes(strings: Sequence[bytes], heights: np.ndarray) -> np.ndarray:
    """``toBbox`` of decoded runs, vectorised: a run's pixels ``t`` (column-major) sit at
    column ``t // h``, row ``t % h``; the box spans the first and last pixel of every 1-run,
    and every row where a 1-run crosses from one column into the next."""
    from rpx_cli.ops.rle import decode_counts

    decoded = decode_counts(list(strings))
    n = len(strings)
    counts, start = decoded.counts, decoded.start
    owner = np.repeat(np.arange(n), np.diff(start))
    index = np.arange(counts.size) - start[owner]
    end = np.cumsum(counts) - np.concatenate(([0], np.cumsum(counts)))[start[owner]]  # after each run
    ones = (index % 2 == 1) & (counts > 0)
    h = heights[owner]
    first, last = (end - counts)[ones], (end - 1)[ones]
    who, h1 = owner[ones], h[ones]
    x0, y0, x1, y1 = first // h1, first % h1, last // h1, last % h1
    out = np.zeros((n, 4))
    has = np.bincount(who, minlength=n) > 0
    xs = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(xs, who, x0)
    xe = np.zeros(n, np.int64)
    np.maximum.at(xe, who, x1)
    ys = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(ys, who, np.where(x1 > x0, 0, y0))
    ye = np.zeros(n, np.int64)
    np.maximum.at(ye, who, np.where(x1 > x0, h1 - 1, y1))
    out[has] = np.column_stack([xs, ys, xe - xs + 1, ye - ys + 1])[has]
    return out
