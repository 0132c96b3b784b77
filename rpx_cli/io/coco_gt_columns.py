"""A COCO GT file of boxes or keypoints read by the native core's scanner (``coco_gt`` in
``rpx_cli/csrc/coco_gt.c``) straight into columns: ids, sizes, boxes, keypoints, areas and
flags as arrays, no Python object per value (the 9.5 MB GT of ``benchmarks/detection.py``:
0.03 s instead of orjson's 0.1 s and the conversion's 0.08 s).

:func:`native_gt` answers only the ordinary case and returns None for everything else —
the scanner declines bad JSON, a missing or mistyped field, a key given twice, a non-ASCII
name; here, any value the Python path would refuse or read otherwise (ids given twice, an
annotation naming no image or category of the file, a coordinate beyond ±1e12, a negative
width, an area below 0, no annotation at all; keypoints of different lengths, a visibility
other than 0, 1, 2, a bbox or num_keypoints given on some annotations only) — so that the
Python path (:func:`rpx_cli.io.coco_files._read_gt`: orjson and the checks of
:mod:`rpx_cli.io.boxes` and :mod:`rpx_cli.io.instances`) reads the file and words the
error. Its twin is that path: the same arrays, bit for bit
(``tests/test_native_coco_gt.py``)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from rpx_cli import native
from rpx_cli.io import prefetch
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.id_positions import positions
from rpx_cli.io.instances import VISIBILITY, keypoint_boxes
from rpx_cli.io.values import MAX_MAGNITUDE

FIELD_CODES = {"bbox": 0, "segmentation": 1, "keypoints": 2}  # the scanner's code of each shape field
MAX_SIDE = 1_000_000  # an RLE's h and w (instances._size)


class MaskColumns(NamedTuple):
    """A masks GT's segmentations as the scanner read them, in file order: each one's kind
    (0 polygons, 1 an uncompressed RLE, 2 a compressed one); the polygons' coordinates
    ``xy``, each polygon's first vertex (``vertex_starts``, P + 1) and each annotation's
    first polygon (``polygon_starts``, N + 1: none for an RLE); each RLE's (h, w) ((-1, -1)
    for polygons); the uncompressed RLEs' counts cut by ``runs_at`` (N + 1) and the
    compressed ones' strings cut by ``text_at`` (N + 1). ``order``: the file index of each
    row of the GT table (annotations sorted by image). Every value was checked as the Python
    path checks it on reading (``instances._segmentation``); the masks are made of them by
    ``tasks/detection/instances.py: start_masks``."""

    kind: np.ndarray
    xy: np.ndarray
    vertex_starts: np.ndarray
    polygon_starts: np.ndarray
    rle_size: np.ndarray
    runs: np.ndarray
    runs_at: np.ndarray
    text: bytes
    text_at: np.ndarray
    order: np.ndarray


class GtColumns(NamedTuple):
    """What :func:`rpx_cli.io.coco_files._read_gt` builds its ``_Gt`` from: images in id
    order (``file_order``: each one's place in the file), their stems, ids and (h, w) (-1
    where not a positive integer); categories in id order, their ids and names (before
    :func:`rpx_cli.io.coco_files._distinct_names`); the annotations' boxes (labels: category
    indices, ``ignore`` set), their image indices, and the ``"id": 0`` annotations."""

    stems: list[str]
    image_ids: np.ndarray
    file_order: np.ndarray
    image_size: np.ndarray
    category_ids: np.ndarray
    names: list[str]
    boxes: Boxes
    category: np.ndarray
    image: np.ndarray
    zero_id: np.ndarray  # annotation indices (in file order) whose "id" is 0
    masks: MaskColumns | None = None  # segmentations (field "segmentation"); boxes.shape: None each


def native_gt(data: Any, field_name: str = "bbox") -> GtColumns | None:
    """The GT document ``data`` (bytes) whose shapes are ``field_name`` (``bbox``:
    ``[x, y, w, h]`` boxes; ``keypoints``) as the Python path reads it; None when the native
    core is not in use or the file is not the ordinary case."""
    core = native.core()
    code = FIELD_CODES.get(field_name)
    if core is None or code is None:
        return None
    read = prefetch.scanned(data, "coco_gt", code)
    if read is prefetch.MISSING:
        try:
            read = core.coco_gt(data, code)
        except TypeError:  # not bytes: the Python path takes it
            return None
    return None if read is None else columns(read, keypoints=code == 2, masks=code == 1)


def columns(read: tuple, *, keypoints: bool = False, masks: bool = False) -> GtColumns | None:
    """The scanner's raw columns checked as the Python path checks its values and made into
    arrays (None when any check fails: the Python path words the error)."""
    (n_images, _, n_annotations, ignore_keys, image_id, image_hw, image_name,
     image_name_at, image_named, category_id, category_name, category_name_at, category_named,
     ann_image, ann_category, ann_bbox, ann_area, ann_has_area, ann_crowd, ann_ignore,
     ann_zero_id, ann_keypoints, ann_keypoints_at, ann_has_bbox, ann_count, ann_has_count,
     *mask_buffers) = read
    if not n_annotations:
        return None
    image_ids = np.frombuffer(image_id, np.int64)
    category_ids = np.frombuffer(category_id, np.int64)
    # images and categories in id order (a stable sort, as Python's sorted); ids unique
    file_order = np.argsort(image_ids, kind="stable")
    category_order = np.argsort(category_ids, kind="stable")
    image_ids, category_ids = image_ids[file_order], category_ids[category_order]
    if (np.diff(image_ids) == 0).any() or (np.diff(category_ids) == 0).any():
        return None
    image = _positions(image_ids, np.frombuffer(ann_image, np.int64))
    category = _positions(category_ids, np.frombuffer(ann_category, np.int64))
    if image is None or category is None:
        return None
    box = np.frombuffer(ann_bbox, np.float64).reshape(n_annotations, 4)
    has_area = np.frombuffer(ann_has_area, np.bool_)
    given_area = np.frombuffer(ann_area, np.float64)
    if not (np.isfinite(given_area).all() and (given_area >= 0).all()):  # (null: 0 here)
        return None
    mask_columns = None
    if masks:
        mask_columns = _masks(*mask_buffers, np.argsort(image, kind="stable"))
        if mask_columns is None:
            return None
        shape = np.empty(n_annotations, object)  # (made of mask_columns by start_masks)
        boxes = Boxes(shape, [], None, np.frombuffer(ann_crowd, np.bool_).copy(),
                      np.where(has_area, given_area, np.nan))
    elif keypoints:
        boxes = _keypoints(ann_keypoints, ann_keypoints_at, box, np.frombuffer(ann_has_bbox, np.bool_),
                           ann_count, np.frombuffer(ann_has_count, np.bool_),
                           np.where(has_area, given_area, np.nan))
        if boxes is None:
            return None
        boxes.crowd = np.frombuffer(ann_crowd, np.bool_).copy()
    else:
        if not (np.abs(box) <= MAX_MAGNITUDE).all() or (box[:, 2:] < 0).any():  # (boxes._fast)
            return None
        area = np.where(has_area, given_area, box[:, 2] * box[:, 3])
        if not (np.isfinite(area).all() and (area >= 0).all()):
            return None
        boxes = Boxes(box, category, None, np.frombuffer(ann_crowd, np.bool_).copy(), area)
    boxes.ignore = np.frombuffer(ann_ignore, np.bool_).copy() if ignore_keys else None
    names = _texts(image_name, image_name_at, image_named, image_ids, file_order)
    stems = [name.rsplit(".", 1)[0] for name in names]
    return GtColumns(stems, image_ids, file_order,
                     np.frombuffer(image_hw, np.int64).reshape(n_images, 2)[file_order],
                     category_ids, _texts(category_name, category_name_at, category_named,
                                          category_ids, category_order),
                     boxes, category, image, np.flatnonzero(np.frombuffer(ann_zero_id, np.bool_)),
                     mask_columns)


def _masks(kind: bytearray, xy: bytearray, ring_at: bytearray, poly_at: bytearray,
           rle_size: bytearray, runs: bytearray, runs_at: bytearray, text: bytearray,
           text_at: bytearray, order: np.ndarray) -> MaskColumns | None:
    """The segmentations as ``instances._fast_polygons`` and ``_segmentation`` check them
    on reading: coordinates within the magnitude bound, no object of 0s and 1s only (it may
    be a binary mask written as rows: worded by the Python path), an RLE's size two
    integers in (0, 1e6], an uncompressed RLE's counts >= 0 summing to ``h · w``."""
    kind = np.frombuffer(kind, np.uint8)
    n = kind.size
    values = np.frombuffer(xy, np.float64)
    if not (np.abs(values) <= MAX_MAGNITUDE).all():  # (NaN fails)
        return None
    vertex_starts = np.frombuffer(ring_at, np.int64) // 2
    polygon_starts = np.frombuffer(poly_at, np.int64)
    if values.size:
        per_ring = np.add.reduceat((values != 0) & (values != 1), 2 * vertex_starts[:-1])
        rings = np.diff(polygon_starts)
        owners = np.flatnonzero(rings)
        if not np.add.reduceat(per_ring, polygon_starts[owners]).all():
            return None
    size = np.frombuffer(rle_size, np.int64).reshape(n, 2)
    rle = kind != 0
    if not ((size[rle] > 0) & (size[rle] <= MAX_SIDE)).all():
        return None
    counts = np.frombuffer(runs, np.int64)
    ends = np.frombuffer(runs_at, np.int64)
    uncompressed = np.flatnonzero(kind == 1)
    if uncompressed.size:
        if (counts < 0).any() or (counts > MAX_MAGNITUDE).any():  # (_numbers' bound)
            return None
        total = np.add.reduceat(np.concatenate([counts, [0]]), ends[:-1])[uncompressed]
        total[ends[uncompressed + 1] == ends[uncompressed]] = 0  # (an empty list sums to 0)
        if (total != size[uncompressed, 0] * size[uncompressed, 1]).any():
            return None
    return MaskColumns(kind, values, vertex_starts, polygon_starts, size, counts, ends,
                       bytes(text), np.frombuffer(text_at, np.int64), order)


def _keypoints(values: bytearray, ends: bytearray, box: np.ndarray, has_box: np.ndarray,
               counts: bytearray, has_count: np.ndarray, given_area: np.ndarray) -> Boxes | None:
    """Keypoint GT rows as ``instances._fast_keypoints`` reads them: every annotation the
    same number of ``[x, y, v]`` triplets, v in {0, 1, 2}, a bbox on all or none, a
    num_keypoints (>= 0) on all or none."""
    ends = np.frombuffer(ends, np.int64)
    n = ends.size - 1
    width = int(ends[1])
    if not width or width % 3 or (np.diff(ends) != width).any():
        return None
    rows = np.frombuffer(values, np.float64).reshape(n, width)
    if not (np.abs(rows) <= MAX_MAGNITUDE).all() or not np.isin(rows[:, 2::3], VISIBILITY).all():
        return None
    given_box = None
    if has_box.any():
        if not has_box.all() or not (np.abs(box) <= MAX_MAGNITUDE).all() or (box[:, 2:] < 0).any():
            return None
        given_box = box.copy()
    given_count = None
    if has_count.any():
        given_count = np.frombuffer(counts, np.int64).astype(np.float64)
        if not has_count.all() or (given_count < 0).any():
            return None
    return keypoint_boxes(rows.copy(), given_box, prediction=False, given_count=given_count,
                          given_area=given_area)


def _positions(ids: np.ndarray, values: np.ndarray) -> np.ndarray | None:
    """Each value's index in the sorted ``ids`` (None when one is not there)."""
    at = positions(ids, values)
    return None if (at < 0).any() else at


def _texts(text: bytearray, ends: bytearray, given: bytearray, ids: np.ndarray,
           order: np.ndarray) -> list[str]:
    """The names in ``order``: each given one's (ASCII) text, else its id (``str(id)``, as
    ``str(item.get("name", item["id"]))``)."""
    text = bytes(text).decode("ascii")
    bounds = np.frombuffer(ends, np.int64).tolist()
    named = np.frombuffer(given, np.bool_).tolist()
    return [text[bounds[k]:bounds[k + 1]] if named[k] else str(identity)
            for k, identity in zip(order.tolist(), ids.tolist(), strict=True)]
