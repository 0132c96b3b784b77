"""What the mask and keypoint kinds (``kinds/mask.py``, ``kinds/keypoints.py``) do with
their objects beside reading them:

- masks: each object's segmentation becomes a compressed RLE when it is read
  (:func:`prepare_masks`: polygons rasterised and RLEs checked — runs summing to ``h · w``,
  one image size per frame), kept as ``{"size", "counts", "area"}`` (``area`` the mask's
  pixels); the summary computes every frame's intersections at once
  (:func:`mask_geometry`) into an :class:`~rpx_cli.ops.geometry.OverlapTable`;
- keypoints: rows ``[x1, y1, v1, ..., bx, by, bw, bh, num_keypoints]`` and
  :class:`~rpx_cli.ops.oks.OksGeometry` (OKS computed for the pairs a view asks for).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.box_table import FrameTable
from rpx_cli.io.coco_files import CocoFiles
from rpx_cli.io.coco_gt_columns import MaskColumns
from rpx_cli.io.packed_rles import packed_rles
from rpx_cli.ops.geometry import OverlapTable
from rpx_cli.ops.oks import OksGeometry


def prepare_masks(segmentations: np.ndarray, sizes: np.ndarray, path: str,
                  what: str = "object", index: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Raw segmentations (:mod:`rpx_cli.io.instances`) as RLE dicts ``{"size", "counts"
    (bytes), "area"}`` and their mask areas. ``sizes`` (N, 2): the image's ``(h, w)`` of
    each (-1: unknown; RLEs carry theirs, a polygon then cannot be read); ``index`` numbers
    the objects in messages (default 0..N-1)."""
    return start_masks(segmentations, sizes, path, what, index)()


def start_masks(segmentations: np.ndarray, sizes: np.ndarray, path: str, what: str = "object",
                index: np.ndarray | None = None, *,
                background: bool = False) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    """:func:`prepare_masks` in two steps: the checks and the polygons flattened now, the
    rest when the returned function is called (once). ``background``: the polygons'
    rasterisation runs in a thread meanwhile (``ops.masks.start_compressed``). An error of
    the first step is raised by the second, where :func:`prepare_masks` raises it — a
    caller that starts the masks early keeps its errors in their order."""
    try:
        return _start_masks(segmentations, sizes, path, what, index, background)
    except InputError as exc:
        error = exc  # (``exc`` itself is unbound when the block ends)

        def fail() -> tuple[np.ndarray, np.ndarray]:
            raise error
        return fail


def _start_masks(segmentations: np.ndarray | MaskColumns, sizes: np.ndarray, path: str, what: str,
                 index: np.ndarray | None, background: bool) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    from rpx_cli.ops import masks

    if isinstance(segmentations, MaskColumns):  # a masks GT the native scanner read
        made = _start_columns(segmentations, sizes, path, what, index, background)
        if made is not None:
            return made
        segmentations = _raw(segmentations)  # a problem: the objects' own path words it

    n = len(segmentations)
    index = np.arange(n) if index is None else index
    shapes = np.array(sizes, np.int64).reshape(n, 2)
    # a results file's RLEs as the reader made them: compressed, their strings joined
    read = getattr(segmentations, "packed", None) is not None
    is_rle = np.ones(n, bool) if read else \
        np.fromiter(map(isinstance, segmentations, repeat(dict)), bool, count=n)
    own = np.full((n, 2), -1, np.int64)
    if is_rle.all():
        own = masks.sizes_of(segmentations)
    elif is_rle.any():
        own[is_rle] = masks.sizes_of(segmentations[is_rle])
    clash = np.flatnonzero(is_rle & (shapes[:, 0] >= 0) & (own != shapes).any(axis=1))
    if clash.size:
        i = int(clash[0])
        raise InputError(f"{what} {index[i]}: RLE size {own[i].tolist()} is not the image's "
                         f"{shapes[i].tolist()}", path=path)
    shapes = np.where(is_rle[:, None], own, shapes)
    unsized = np.flatnonzero(shapes[:, 0] < 0)
    if unsized.size:
        raise InputError(f"{what} {index[unsized[0]]}: a polygon needs the image size "
                         "(a per-stem file: {\"size\": [h, w], \"objects\": [...]}; a COCO "
                         "file: images[].height and width)", path=path)
    check_bounds(segmentations, shapes, index, path, what, none_polygons=read)
    if read:  # (its dicts are not read: they may not be made yet, PackedRles.fill)
        return partial(_finish_masks, segmentations, None, shapes, index, path, what)
    making = masks.start_compressed(list(segmentations), shapes, background=background)
    return lambda: _finish_masks(segmentations, making(), shapes, index, path, what)


def _start_columns(columns: MaskColumns, sizes: np.ndarray, path: str, what: str,
                   index: np.ndarray | None,
                   background: bool) -> Callable[[], tuple[np.ndarray, np.ndarray]] | None:
    """:func:`_start_masks` of a GT's segmentations as columns: their polygons rasterised
    straight from the scanner's coordinates (no Python list per polygon), then the compressed
    RLEs checked as any. None when a polygon lacks its image's size, has too many pixels or
    breaks the bounds: the raw objects' path then words it as before."""
    from rpx_cli.ops import masks
    from rpx_cli.ops.polygon_raster import MAX_PIXELS, first_problem

    n = len(columns.kind)
    shapes = np.array(sizes, np.int64).reshape(n, 2)  # table order
    file_sizes = np.empty_like(shapes)
    file_sizes[columns.order] = shapes
    polygon = columns.kind == 0
    hw = file_sizes[polygon]
    if (hw < 0).any() or (hw[:, 0] * hw[:, 1] > MAX_PIXELS).any():
        return None
    rings = np.diff(columns.polygon_starts)[polygon]
    if first_problem(columns.xy, columns.vertex_starts, np.repeat(hw, rings, axis=0)) is not None:
        return None
    making = masks.start_compressed_columns(columns, file_sizes, background=background)

    def finish() -> tuple[np.ndarray, np.ndarray]:
        made = making()
        rles = np.empty(n, object)
        rles[:] = [made[i] for i in columns.order.tolist()]
        return _start_masks(rles, shapes, path, what, index, False)()
    return finish


def _raw(columns: MaskColumns) -> np.ndarray:
    """The segmentations of ``columns`` as the Python path reads them (table order)."""
    vertex, polygon = columns.vertex_starts.tolist(), columns.polygon_starts.tolist()
    runs, text = columns.runs_at.tolist(), columns.text_at.tolist()
    out = np.empty(len(columns.kind), object)
    for row, i in enumerate(columns.order.tolist()):
        size = columns.rle_size[i].tolist()
        if columns.kind[i] == 0:
            out[row] = [columns.xy[2 * vertex[q]:2 * vertex[q + 1]].tolist()
                        for q in range(polygon[i], polygon[i + 1])]
        elif columns.kind[i] == 1:
            out[row] = {"size": size, "counts": columns.runs[runs[i]:runs[i + 1]].tolist()}
        else:
            out[row] = {"size": size, "counts": columns.text[text[i]:text[i + 1]]}
    return out


def _finish_masks(segmentations: np.ndarray, rles: list[dict[str, Any]] | None, shapes: np.ndarray,
                  index: np.ndarray, path: str, what: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`prepare_masks`' second step: the compressed ``rles`` made of ``segmentations``
    checked (runs summing to ``h · w``), their areas set. ``rles`` None: ``segmentations``
    are a results file's RLEs as read (a :class:`PackedRles`, its dicts read by nothing
    here)."""
    from rpx_cli.ops import masks
    from rpx_cli.ops.rle import decode_counts

    n = len(segmentations)
    read = rles is None
    # the strings joined once (as read; else the rasterised ones), kept beside the dicts for
    # every frame's intersections
    packed = masks.joined_counts(segmentations if read else rles) if masks.joins_strings() else None
    # (a results file's strings: checked by the reader's thread while the GT file was read)
    checking = getattr(segmentations, "totals", None) if read else None
    known = None if checking is None else checking.result()
    area, total, readable = known if known is not None else \
        masks.totals(segmentations if read else rles, packed)
    expected = shapes[:, 0] * shapes[:, 1]
    wrong = np.flatnonzero((total != expected) | ~readable)
    if wrong.size:
        # the readable reference decoder words the problem
        i = int(wrong[0])
        if read:
            text, offsets = masks.joined_counts(segmentations)
            counts = text[offsets[i]:offsets[i + 1]]
        else:
            counts = rles[i]["counts"]
        decoded = decode_counts([counts])
        problem = decoded.problem[0] or (f"counts sum to {int(decoded.total[0])}, not h·w = "
                                         f"{shapes[i, 0]}·{shapes[i, 1]} = {int(expected[i])}")
        raise InputError(f"{what} {index[i]}: malformed RLE: {problem}", path=path)
    areas = area.astype(np.float64)
    if read:  # (its own dicts, in its own order: the array as read, its areas now known)
        segmentations.set_areas(areas)
        return segmentations, areas.copy()
    for rle, a in zip(rles, area.tolist(), strict=True):
        rle["area"] = a
    if packed is None:
        out = np.empty(n, object)
        out[:] = rles
    else:
        out = packed_rles(rles, *packed, shapes)
        out.areas = areas.copy()
    return out, areas


def check_bounds(segmentations: np.ndarray, shapes: np.ndarray, index: np.ndarray, path: str,
                 what: str, *, none_polygons: bool = False) -> None:
    """What must hold before a mask reaches a rasteriser or a run walk (native or
    pycocotools): at most ``2^31 - 1`` pixels (COCO's RLE tools count in 32 bits), and each
    polygon within :mod:`rpx_cli.ops.polygon_raster`'s bounds (coordinates near the image,
    an outline of bounded length). An :class:`InputError` naming the object otherwise.
    ``none_polygons``: the caller knows there are none (a results file's RLEs as read)."""
    from rpx_cli.ops.polygon_raster import MAX_PIXELS, first_problem, flatten

    pixels = shapes[:, 0] * shapes[:, 1]
    large = np.flatnonzero(pixels > MAX_PIXELS)
    if large.size:
        i = int(large[0])
        raise InputError(f"{what} {index[i]}: an image of {shapes[i, 0]}×{shapes[i, 1]} = "
                         f"{int(pixels[i])} pixels is more than the {MAX_PIXELS} (2^31 − 1) a "
                         "COCO mask may have", path=path)
    if none_polygons:
        return
    polygons = np.flatnonzero(np.fromiter(map(isinstance, segmentations, repeat(list)), bool,
                                          count=len(segmentations)))
    if not polygons.size:
        return
    xy, vertex_starts, polygon_starts = flatten([segmentations[i] for i in polygons.tolist()])
    owner = np.repeat(np.arange(polygons.size), np.diff(polygon_starts))
    found = first_problem(xy, vertex_starts, shapes[polygons][owner])
    if found is not None:
        q, problem = found
        o = int(owner[q])
        raise InputError(f"{what} {index[polygons[o]]}: polygon {q - int(polygon_starts[o])}: "
                         f"{problem}", path=path)


def frame_size(rles: np.ndarray) -> list[int] | None:
    """The one image size of a frame's masks (None without masks); an
    :class:`InputError` (without a path: the caller names the files) when they differ."""
    sizes = {tuple(rle["size"]) for rle in rles}
    if len(sizes) > 1:
        raise InputError(f"masks of sizes {', '.join(map(str, sorted(sizes)))} in one image")
    return list(next(iter(sizes))) if sizes else None


def rle_to_json(rles: np.ndarray) -> list[dict[str, Any]]:
    return [{"size": rle["size"], "counts": rle["counts"].decode("ascii"), "area": rle["area"]}
            for rle in rles]


def rle_from_json(values: list[dict[str, Any]]) -> np.ndarray:
    """A ``--shard`` part's masks, checked as a file's are (its runs decoded in 64 bits:
    none negative, summing to ``h · w`` of at most 2^31 − 1 pixels, the area its 1-runs)
    before any intersection: a ``ValueError`` otherwise (``State.from_part`` words it as the
    part's input error)."""
    from rpx_cli.ops import masks
    from rpx_cli.ops.polygon_raster import MAX_PIXELS

    out = np.empty(len(values), object)
    out[:] = [{"size": v["size"], "counts": v["counts"].encode("ascii"), "area": v["area"]}
              for v in values]
    if len(values):
        sizes = np.array([v["size"] for v in values], np.int64).reshape(len(values), 2)
        area, total, ok = masks.totals(list(out))
        pixels = sizes[:, 0] * sizes[:, 1]
        given = np.array([v["area"] for v in values], np.float64)
        wrong = ~ok | (sizes.min(axis=1) < 1) | (pixels > MAX_PIXELS) | (total != pixels) | (given != area)
        if wrong.any():
            raise ValueError(f"mask {int(np.argmax(wrong))} is malformed: its runs do not make "
                             "a mask of its size and area")
    return out


def mask_areas(rles: np.ndarray) -> np.ndarray:
    """Each mask's ``area``: those an array of them holds already (``areas``,
    :class:`~rpx_cli.io.packed_rles.PackedRles`), else read from the dicts."""
    areas = getattr(rles, "areas", None)
    if areas is not None and len(areas) == len(rles):
        return areas
    return np.fromiter(map(itemgetter("area"), rles), np.float64, count=len(rles))


def mask_geometry(table: FrameTable) -> OverlapTable:
    """Every frame's mask intersections (pycocotools' run merge, one call per frame)."""
    from rpx_cli.ops import masks

    pred_area, gt_area = mask_areas(table.pred.shape), mask_areas(table.gt.shape)
    d, g, inter = masks.table_intersections(table.pred.shape, table.gt.shape, table.pred.frame,
                                            table.gt.frame, pred_area, table.n)
    return OverlapTable(pred_area, gt_area, d, g, inter)


def keypoint_geometry(table: FrameTable, sigmas: np.ndarray, floor: float | None = None) -> OksGeometry:
    """OKS of the table's keypoint rows with ``sigmas``; every object's point count is
    checked against them. ``floor``: the lowest threshold a greedy view tests."""
    sigmas = np.asarray(sigmas, np.float64)
    for side in (table.pred, table.gt):
        if len(side) and side.shape.shape[1] != 3 * sigmas.size + 5:
            raise InputError(f"objects have {(side.shape.shape[1] - 5) // 3} keypoints but "
                             f"--oks-sigmas gives {sigmas.size} sigmas")
    return OksGeometry(table.pred.shape, table.gt.shape, table.pred.area, table.gt.area, sigmas, floor)


def keypoint_count_error(boxes_box: np.ndarray, sigmas: list[float], path: str) -> None:
    """An :class:`InputError` naming ``path`` when its objects' keypoint count is not the
    number of sigmas."""
    if len(boxes_box) and boxes_box.shape[1] != 3 * len(sigmas) + 5:
        raise InputError(f"object 0: {(boxes_box.shape[1] - 5) // 3} keypoints, but the sigmas "
                         f"(--oks-sigmas, COCO's 17 by default) are {len(sigmas)}", path=path)


def check_mask_sizes(coco: CocoFiles, gt_file: str, dt_file: str) -> None:
    """One image size per image: a prediction's RLE of another size than the image's GT
    masks is an input error naming both (sizes given by images[] were checked on reading)."""
    from rpx_cli.ops.masks import sizes_of

    n = len(coco.stems)
    first = np.full((n, 2), -1, np.int64)
    size = {id(side): sizes_of(side.shape) for side in (coco.pred, coco.gt)}
    for side in (coco.pred, coco.gt):  # the GT's size wins where both have masks
        if len(side):
            first[side.frame[::-1]] = size[id(side)][::-1]  # the first mask of each image
    for side, path, what in ((coco.gt, gt_file, "annotation"), (coco.pred, dt_file, "detection")):
        if not len(side):
            continue
        sizes = size[id(side)]
        wrong = np.flatnonzero((sizes != first[side.frame]).any(axis=1))
        if wrong.size:
            k = int(wrong[0])
            raise InputError(f"image {int(coco.image_ids[side.frame[k]])}: a {what} mask of size "
                             f"{sizes[k].tolist()} where the image's masks are "
                             f"{first[side.frame[k]].tolist()} ({dt_file} against {gt_file})", path=path)
