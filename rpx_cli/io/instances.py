"""Instance masks and keypoints for ``rpx eval detection --iou-type segm|keypoints``.

Per-stem JSON: ``{"size": [h, w], "objects": [...]}`` or a list of objects (then RLEs
carry their own size and polygons cannot be read). An object has ``"label"``, ``"score"``
(predictions) and, on GT, optional ``"iscrowd"`` and ``"area"``, plus:

- ``segm``: ``"segmentation"``, as COCO writes it: polygons ``[[x1, y1, x2, y2, ...],
  ...]`` (several parts are one object), an uncompressed RLE ``{"size": [h, w], "counts":
  [ints]}`` or a compressed one (``counts`` a string); optional ``"bbox"`` on predictions
  (then the area used for COCO's area ranges is the box's, as pycocotools' ``loadRes``);
- ``keypoints``: ``"keypoints": [x1, y1, v1, ...]`` (COCO's flat triplets), GT optionally
  ``"num_keypoints"`` (default: the points with ``v > 0``), ``"bbox"`` (default: the extent
  of the visible points) and ``"area"`` (default: the box's ``w · h``); predictions
  optionally ``"bbox"`` (then their area is its ``w · h``; else the extent of all their
  points, as ``loadRes``).

Kept in :class:`~rpx_cli.io.boxes.Boxes`: ``shape`` holds the raw segmentations (an object
array, made into RLEs by the task with :mod:`rpx_cli.ops.masks`) or the keypoint rows
``[x1, y1, v1, ..., bx, by, bw, bh, num_keypoints]`` (float64). Every problem is an
:class:`~rpx_cli.errors.InputError` naming the file and the object.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.boxes import Boxes, box_format_problem, object_attributes
from rpx_cli.io.json import loads_json
from rpx_cli.io.mask_arrays import as_array, mask_runs, rows_shape
from rpx_cli.io.values import MAX_MAGNITUDE

# a GT keypoint's v (COCO): 0 not labelled, 1 labelled but hidden, 2 visible. A prediction's
# third values are not read (pycocotools' OKS looks at the GT's; some tools write each
# point's confidence there)
VISIBILITY = (0, 1, 2)


def parse_instances(data: bytes, path: str, *, prediction: bool,
                    read_objects: Callable[..., Boxes],
                    box_format: str = "xyxy") -> tuple[Boxes, np.ndarray]:
    """One per-stem file of masks or keypoints (``read_objects``: :func:`masks` or
    :func:`keypoints`): ``(objects, sizes)``; ``sizes`` (N, 2) int64 is each object's image
    ``(h, w)`` (``-1`` where the file gives none)."""
    document = loads_json(data, path)
    size = None
    if isinstance(document, dict) and "objects" in document:
        size = _size(document.get("size"), path, "'size'") if "size" in document else None
        objects = document["objects"]
    elif isinstance(document, dict) and "size" in document:
        raise InputError('expected {"size": [h, w], "objects": [...]}', path=path)
    else:
        objects = document
    if not isinstance(objects, list):
        raise InputError('expected {"size": [h, w], "objects": [...]} or a list of objects',
                         path=path)
    if objects and set(map(type, objects)) != {dict}:
        index = next(i for i, item in enumerate(objects) if not isinstance(item, dict))
        raise InputError(f"object {index}: expected an object", path=path)
    labels, scores, crowd, given = [], [], [], []
    for index, item in enumerate(objects):
        label, score, flag, area = object_attributes(item, f"object {index}", path, prediction)
        labels.append(label)
        scores.append(score)
        crowd.append(flag)
        given.append(np.nan if area is None else area)
    n = len(objects)
    sizes = np.full((n, 2), -1, np.int64)
    if size is not None:
        sizes[:] = size
    boxes = read_objects(objects, path, prediction=prediction, box_format=box_format,
                         given_area=np.asarray(given, np.float64).reshape(n))
    boxes.labels = labels
    boxes.scores = np.asarray(scores, np.float64) if prediction else None
    boxes.crowd = np.asarray(crowd, bool).reshape(n)
    return boxes, sizes


def masks(objects: list[dict[str, Any]], path: str, *, prediction: bool, box_format: str,
          given_area: np.ndarray, what: str = "object", no_literals: bool = False) -> Boxes:
    """The segmentations of ``objects`` (their labels, scores and crowd flags are the
    caller's), raw, in ``shape``; ``area`` as described above (NaN for a mask without a
    given area or a box: the mask's, once it is an RLE). ``no_literals`` is for the
    signature :func:`keypoints` shares."""
    n = len(objects)
    fast = _fast_rles(objects, prediction, given_area, box_format)
    if fast is None and not prediction:
        fast = _fast_polygons(objects, given_area, what, path)
    if fast is not None:
        return fast
    shape = np.empty(n, object)
    area = given_area.copy() if not prediction else np.full(n, np.nan)
    for index, item in enumerate(objects):
        where = f"{what} {index}"
        if "segmentation" not in item:
            if not prediction or item.get("bbox") is None:
                raise InputError(f"{where}: missing 'segmentation' (--iou-type segm)", path=path)
            # a box-only result is scored as the box's polygon (pycocotools' loadRes)
            x, y, w, h = _bbox(item["bbox"], where, path, box_format)
            shape[index] = [[x, y, x, y + h, x + w, y + h, x + w, y]]
            area[index] = w * h
            continue
        shape[index] = _segmentation(item["segmentation"], where, path)
        if prediction and item.get("bbox") is not None:
            _, _, w, h = _bbox(item["bbox"], where, path, box_format)
            area[index] = w * h
    return Boxes(shape, [], None, np.zeros(n, bool), area)


def keypoints(objects: list[dict[str, Any]], path: str, *, prediction: bool, box_format: str,
              given_area: np.ndarray, what: str = "object", no_literals: bool = False) -> Boxes:
    """The keypoint rows of ``objects`` (their labels, scores and crowd flags are the
    caller's) in ``shape``, ``area`` as described above. ``no_literals``: the JSON held no
    ``true``/``false`` at all (numbers are then converted in one call)."""
    n = len(objects)
    fast = _fast_keypoints(objects, prediction, box_format, given_area, no_literals)
    if fast is not None:
        return fast
    rows = []
    width = None
    area = np.empty(n)
    for index, item in enumerate(objects):
        where = f"{what} {index}"
        points = item.get("keypoints")
        values = _numbers(points)
        if values is None or values.size == 0 or values.size % 3:
            raise InputError(f"{where}: 'keypoints' must be a list of [x, y, v] triplets of "
                             f"finite numbers, got {_short(points)}", path=path)
        if width is not None and values.size != width:
            raise InputError(f"{where}: {values.size // 3} keypoints where object 0 has "
                             f"{width // 3}", path=path)
        width = values.size
        x, y, v = values[0::3], values[1::3], values[2::3]
        if not prediction and not np.isin(v, VISIBILITY).all():
            k = int(np.argmin(np.isin(v, VISIBILITY)))
            raise InputError(f"{where}: keypoint {k} has visibility {v[k]:g}; a GT point's v is 0 "
                             "(not labelled), 1 (labelled, hidden) or 2 (visible)", path=path)
        bbox = item.get("bbox")
        if bbox is not None:
            bbox = _bbox(bbox, where, path, box_format)
        if prediction:
            if bbox is None:
                x0, x1, y0, y1 = x.min(), x.max(), y.min(), y.max()
                bbox = (x0, y0, x1 - x0, y1 - y0)
            area[index] = bbox[2] * bbox[3]
            count = float(np.count_nonzero(v > 0))
        else:
            if bbox is None:
                seen = v > 0
                if seen.any():
                    x0, x1, y0, y1 = x[seen].min(), x[seen].max(), y[seen].min(), y[seen].max()
                    bbox = (x0, y0, x1 - x0, y1 - y0)
                else:
                    bbox = (0.0, 0.0, 0.0, 0.0)
            count = item.get("num_keypoints")
            if count is None:
                count = float(np.count_nonzero(v > 0))
            elif isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise InputError(f"{where}: 'num_keypoints' must be an integer >= 0, got "
                                 f"{count!r}", path=path)
            area[index] = given_area[index] if not math.isnan(given_area[index]) else bbox[2] * bbox[3]
        rows.append(np.concatenate([values, np.asarray(bbox, np.float64), [float(count)]]))
    box = np.stack(rows) if rows else np.zeros((0, 0))
    return Boxes(box, [], None, np.zeros(n, bool), area)


def _fast_keypoints(objects: list[dict[str, Any]], prediction: bool, box_format: str,
                    given_area: np.ndarray, no_literals: bool = False) -> Boxes | None:
    """Keypoint objects read as arrays (C-level ``map`` and one ``fromiter``); None when
    anything needs the per-object checks (which word the error)."""
    n = len(objects)
    if not n:
        return None
    try:
        points = list(map(itemgetter("keypoints"), objects))
    except KeyError:
        return None
    if set(map(type, points)) != {list}:
        return None
    widths = set(map(len, points))
    if len(widths) != 1:
        return None
    width = widths.pop()
    if not width or width % 3:
        return None
    if no_literals:  # no bool anywhere: numpy's conversion, with text or null refused by dtype
        values = np.array(points)
        if values.dtype.kind not in "if" or values.shape != (n, width):
            return None
        values = values.astype(np.float64, copy=False)
    else:
        if not set(map(type, chain.from_iterable(points))) <= {int, float}:
            return None
        try:  # (an integer beyond float64: the per-object checks word it)
            values = np.fromiter(chain.from_iterable(points), np.float64, count=n * width).reshape(n, width)
        except OverflowError:
            return None
    if not (np.abs(values) <= MAX_MAGNITUDE).all():
        return None
    if not prediction and not np.isin(values[:, 2::3], VISIBILITY).all():
        return None  # the per-object reading names it
    boxes = list(map(dict.get, objects, repeat("bbox")))
    given_box = None
    if set(map(type, boxes)) != {type(None)}:
        if set(map(type, boxes)) != {list} or set(map(len, boxes)) != {4} or \
                not set(map(type, chain.from_iterable(boxes))) <= {int, float}:
            return None
        try:
            given_box = np.array(boxes, np.float64)
        except OverflowError:
            return None
        if not (np.abs(given_box) <= MAX_MAGNITUDE).all():
            return None
        if box_format == "xyxy":
            given_box[:, 2:] -= given_box[:, :2]
        if (given_box[:, 2:] < 0).any():
            return None
    given_count = None
    if not prediction:
        counts = list(map(dict.get, objects, repeat("num_keypoints")))
        if set(map(type, counts)) == {int}:
            given_count = np.array(counts, np.float64)
            if (given_count < 0).any():
                return None
        elif set(map(type, counts)) != {type(None)}:
            return None
    return keypoint_boxes(values, given_box, prediction=prediction, given_count=given_count,
                          given_area=given_area)


def keypoint_boxes(values: np.ndarray, given_box: np.ndarray | None, *, prediction: bool,
                   given_count: np.ndarray | None, given_area: np.ndarray) -> Boxes:
    """Checked keypoint values (N, 3K) as :class:`Boxes` rows ``[x1, y1, v1, ..., bx, by,
    bw, bh, num_keypoints]``: the box ``given_box`` (N, 4 xywh), else the extent of the
    points (a prediction's every point, as ``loadRes``; a GT's visible ones), the count
    ``given_count``, else the points with ``v > 0``; the area the given one (GT), else the
    box's."""
    x, y, v = values[:, 0::3], values[:, 1::3], values[:, 2::3]
    count = np.count_nonzero(v > 0, axis=1).astype(np.float64) if given_count is None \
        else given_count
    if given_box is None and prediction:  # every point, as loadRes
        x0, x1, y0, y1 = x.min(axis=1), x.max(axis=1), y.min(axis=1), y.max(axis=1)
        given_box = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)
    elif given_box is None:  # the visible points
        seen = v > 0
        any_seen = seen.any(axis=1)
        x0 = np.where(any_seen, np.min(np.where(seen, x, np.inf), axis=1), 0.0)
        x1 = np.where(any_seen, np.max(np.where(seen, x, -np.inf), axis=1), 0.0)
        y0 = np.where(any_seen, np.min(np.where(seen, y, np.inf), axis=1), 0.0)
        y1 = np.where(any_seen, np.max(np.where(seen, y, -np.inf), axis=1), 0.0)
        given_box = np.stack([x0, y0, x1 - x0, y1 - y0], axis=1)
    box_area = given_box[:, 2] * given_box[:, 3]
    area = box_area if prediction else np.where(np.isnan(given_area), box_area, given_area)
    rows = np.concatenate([values, given_box, count[:, None]], axis=1)
    return Boxes(rows, [], None, np.zeros(len(values), bool), area)


def _fast_rles(objects: list[dict[str, Any]], prediction: bool, given_area: np.ndarray,
               box_format: str) -> Boxes | None:
    """Objects whose segmentations are all compressed RLEs (a results file), pulled out with
    C-level ``map``; None when anything needs the per-object checks (which word the error)."""
    n = len(objects)
    try:
        segmentations = list(map(itemgetter("segmentation"), objects))
        if set(map(type, segmentations)) != {dict}:
            return None
        counts = list(map(itemgetter("counts"), segmentations))
        sizes = list(map(itemgetter("size"), segmentations))
    except KeyError:
        return None
    if set(map(type, counts)) != {str} or set(map(type, sizes)) != {list} or set(map(len, sizes)) != {2}:
        return None
    shape = np.array(sizes)
    if shape.dtype != np.int64 or not ((shape > 0) & (shape <= 1_000_000)).all():
        return None
    try:
        encoded = [text.encode("ascii") for text in counts]
    except UnicodeEncodeError:
        return None
    box = np.empty(n, object)
    box[:] = [{"size": size, "counts": text} for size, text in zip(sizes, encoded, strict=True)]
    area = given_area.copy() if not prediction else np.full(n, np.nan)
    if prediction:  # a result with a bbox: its area for the ranges is the box's (loadRes)
        boxes = list(map(dict.get, objects, repeat("bbox")))
        kinds = set(map(type, boxes))
        if kinds != {type(None)}:
            if kinds != {list} or set(map(len, boxes)) != {4} or \
                    not set(map(type, chain.from_iterable(boxes))) <= {int, float}:
                return None
            try:
                xywh = np.array(boxes, np.float64)
            except OverflowError:
                return None
            if not (np.abs(xywh) <= MAX_MAGNITUDE).all() or (xywh[:, 2:] < 0).any():
                return None
            if box_format == "xyxy":
                xywh[:, 2:] -= xywh[:, :2]
            if (xywh[:, 2:] < 0).any():
                return None
            area = xywh[:, 2] * xywh[:, 3]
    return Boxes(box, [], None, np.zeros(n, bool), area)


def _fast_polygons(objects: list[dict[str, Any]], given_area: np.ndarray, what: str,
                   path: str) -> Boxes | None:
    """GT objects whose segmentations are polygons (a COCO GT file; the few others, crowd
    RLEs, one by one), every polygon checked at once as :func:`_segmentation` checks each —
    lists of at least three points of finite numbers within the magnitude bound, and none
    that looks like a binary mask of 0/1 rows; None when anything needs the per-object
    checks (which word the error in object order)."""
    try:
        segmentations = list(map(itemgetter("segmentation"), objects))
    except (KeyError, TypeError):
        return None
    types = list(map(type, segmentations))
    polygons = [i for i, kind in enumerate(types) if kind is list]
    if not polygons:
        return None
    lists = [segmentations[i] for i in polygons]
    per_list = np.fromiter(map(len, lists), np.int64, count=len(lists))
    parts = list(chain.from_iterable(lists))
    if not per_list.min() or set(map(type, parts)) != {list}:
        return None
    lengths = np.fromiter(map(len, parts), np.int64, count=len(parts))
    if (lengths < 6).any() or (lengths % 2).any() or \
            not set(map(type, chain.from_iterable(parts))) <= {int, float}:
        return None
    try:
        values = np.fromiter(chain.from_iterable(parts), np.float64, count=int(lengths.sum()))
    except OverflowError:  # an integer beyond float64
        return None
    if not (np.abs(values) <= MAX_MAGNITUDE).all():  # (NaN fails)
        return None
    # a segmentation of 0s and 1s only may be a binary mask written as rows: worded one by one
    part_starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    list_starts = np.concatenate(([0], np.cumsum(per_list)[:-1]))
    other = np.add.reduceat(np.add.reduceat((values != 0) & (values != 1), part_starts), list_starts)
    if not other.all():
        return None
    n = len(objects)
    shape = np.empty(n, object)
    for i, segmentation in zip(polygons, lists, strict=True):
        shape[i] = segmentation
    for i, kind in enumerate(types):
        if kind is not list:
            shape[i] = _segmentation(segmentations[i], f"{what} {i}", path)
    return Boxes(shape, [], None, np.zeros(n, bool), given_area.copy())


def _segmentation(value: Any, where: str, path: str) -> Any:
    """A segmentation checked for its form (the runs are checked once decoded). In memory
    a binary mask array (or tensor-like) becomes its RLE and pycocotools' ``encode`` output
    (``counts`` as bytes) is read as the string; rows of 0/1 are refused, never read as
    polygons (:mod:`rpx_cli.io.mask_arrays`)."""
    if isinstance(value, list):
        if not value:
            raise InputError(f"{where}: 'segmentation' is an empty list of polygons", path=path)
        rows = rows_shape(value)
        if rows is not None:
            raise InputError(f"{where}: 'segmentation' looks like a binary mask ({rows[0]} rows "
                             f"of {rows[1]} values, each 0 or 1), not polygons: write RLE "
                             "{\"size\": [h, w], \"counts\": ...} (pycocotools.mask.encode); "
                             "in memory, give the mask as a 2-D array", path=path)
        for part, polygon in enumerate(value):
            numbers = _numbers(polygon)
            if numbers is None or numbers.size < 6 or numbers.size % 2:
                raise InputError(f"{where}: polygon {part} must be [x1, y1, x2, y2, ...] with at "
                                 f"least 3 points of finite numbers, got {_short(polygon)}", path=path)
        return value
    try:
        mask = as_array(value)
    except InputError as exc:
        raise InputError(f"{where}: 'segmentation' is {exc.args[0]}", path=path) from None
    if mask is not None:
        value = mask_runs(mask, where, path)
    if isinstance(value, dict) and "counts" in value and "size" in value:
        size = _size(value["size"], path, f"{where}: RLE 'size'")
        counts = value["counts"]
        if isinstance(counts, bytes):  # pycocotools.mask.encode's output, in memory
            counts = counts.decode("latin-1")
        if isinstance(counts, str):
            if not counts.isascii():
                raise InputError(f"{where}: malformed RLE: a character outside COCO's RLE "
                                 "alphabet", path=path)
            return {"size": size, "counts": counts.encode("ascii")}
        runs = _numbers(counts)
        if runs is None or (runs.size and ((runs < 0).any() or (runs != np.floor(runs)).any())):
            raise InputError(f"{where}: malformed RLE: 'counts' must be a string or a list of "
                             "integers >= 0", path=path)
        if int(runs.sum()) != size[0] * size[1]:
            raise InputError(f"{where}: malformed RLE: counts sum to {int(runs.sum())}, not h·w = "
                             f"{size[0]}·{size[1]} = {size[0] * size[1]}", path=path)
        return {"size": size, "counts": [int(c) for c in runs.tolist()]}
    raise InputError(f"{where}: 'segmentation' must be polygons [[x1, y1, ...], ...] or an RLE "
                     f"{{\"size\": [h, w], \"counts\": ...}}, got {_short(value)}", path=path)


def _size(value: Any, path: str, where: str) -> list[int]:
    if not (isinstance(value, list) and len(value) == 2 and all(
            type(v) is int and 0 < v <= 1_000_000 for v in value)):
        raise InputError(f"{where} must be [h, w], two integers > 0, got {_short(value)}", path=path)
    return [int(value[0]), int(value[1])]


def _bbox(value: Any, where: str, path: str, box_format: str) -> tuple[float, float, float, float]:
    numbers = _numbers(value)
    if numbers is None or numbers.size != 4:
        raise InputError(f"{where}: 'bbox' must be four finite numbers, got {_short(value)}", path=path)
    x, y, a, b = numbers.tolist()
    w, h = (a - x, b - y) if box_format == "xyxy" else (a, b)
    if w < 0 or h < 0:
        raise InputError(f"{where}: {box_format_problem(value, box_format)}", path=path)
    return x, y, w, h


def _numbers(value: Any) -> np.ndarray | None:
    """A flat list of JSON numbers (never bools or strings) within the magnitude bound."""
    if not isinstance(value, list) or not all(
            type(v) in (int, float) for v in value):
        return None
    try:
        out = np.asarray(value, np.float64)
    except OverflowError:  # an integer beyond float64
        return None
    if out.size and not (np.abs(out) <= MAX_MAGNITUDE).all():
        return None
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
