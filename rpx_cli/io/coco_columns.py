"""A COCO results file read by the native core's scanner (``coco_results`` in
``rpx_cli/csrc/coco_json.c``) straight into columns: ids, scores and shapes as arrays, no
Python object per value (a 28 MB box file: 0.09 s instead of orjson's 0.6 s with the
conversion).

:func:`native_columns` answers only the ordinary case and returns None for everything
else — the scanner declines bad JSON, a missing or mistyped field, polygons, a key given
twice; here, any value the Python path would refuse (a coordinate or score beyond ±1e12, a
negative width, an area beyond COCO's largest range, ragged keypoints, an RLE size out of
bounds) — so that the Python path (:mod:`rpx_cli.io.coco_results`, orjson and the checks of
:mod:`rpx_cli.io.boxes` and :mod:`rpx_cli.io.instances`) reads the file and words the
error. Its twin is that path: the same arrays, bit for bit
(``tests/test_native_coco_reader.py``)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import numpy as np

from rpx_cli import native
from rpx_cli.io import prefetch
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.packed_rles import deferred_rles, string_totals
from rpx_cli.io.values import MAX_MAGNITUDE, area_problem

# the scanner's code of each shape field (the JSON key); keypoints as rows with their extent
# box and visible count (code 3: the row keypoint_boxes makes, written in place)
FIELD_CODES = {"bbox": 0, "segmentation": 1, "keypoints": 3}
MAX_SIDE = 1_000_000  # an RLE's h and w (instances._fast_rles)


def native_columns(data: Any, field_name: str) -> tuple[np.ndarray, np.ndarray, Boxes] | None:
    """``(image ids, category ids, boxes)`` of the results list ``data`` (bytes) whose
    shapes are in ``field_name``, as the Python path reads them; None when the native core
    is not in use or the file is not the ordinary case."""
    return columns(scan(data, field_name), field_name)


def scan(data: Any, field_name: str, threads: int = 1) -> tuple | None:
    """The native scanner's raw columns of ``data`` (the GIL released meanwhile: a thread
    may scan while another parses; a large file in two halves with ``threads`` >= 2), or
    None (no native core, or declined)."""
    core = native.core()
    code = FIELD_CODES.get(field_name)
    if core is None or code is None:
        return None
    read = prefetch.scanned(data, "coco_results", code)
    if read is not prefetch.MISSING:  # scanned while rpx started
        return read
    try:
        return core.coco_results(data, code, threads)
    except TypeError:  # not bytes (a document given in memory): the Python path takes it
        return None


def mask_totals(read: tuple | None, field_name: str) -> tuple | None:
    """Every RLE string of a masks scan (:func:`scan` of ``segmentation``) decoded and summed
    (:func:`~rpx_cli.io.packed_rles.string_totals`, one thread: the caller's own thread is
    busy meanwhile), for :func:`columns` to keep beside them; None for another scan."""
    if read is None or read[0] == 0 or FIELD_CODES.get(field_name) != 1:
        return None
    return string_totals(read[6], np.frombuffer(read[7], np.int64))


def columns(read: tuple | None, field_name: str, totals: Future | None = None, *,
            deferred: bool = False) -> tuple[np.ndarray, np.ndarray, Boxes] | None:
    """:func:`scan`'s raw columns checked as the Python path checks its values and made
    into arrays (None when any check fails: the Python path words the error). ``totals``:
    :func:`mask_totals` of the same scan, being computed (its future), if it is;
    ``deferred``: masks' dicts made later, by whoever asked (``PackedRles.fill``)."""
    code = FIELD_CODES.get(field_name)
    if read is None or read[0] == 0:  # (an empty list: the Python path's empty arrays)
        return None
    n, image, category, score, bbox, has_bbox, shape, offsets, sizes = read
    score = np.frombuffer(score, np.float64)
    if not (np.abs(score) <= MAX_MAGNITUDE).all():  # NaN fails too
        return None
    box = np.frombuffer(bbox, np.float64).reshape(n, 4)
    has_box = np.frombuffer(has_bbox, np.bool_)
    if code == 0:
        boxes = _boxes(box, score)
    else:
        given = None
        if has_box.any():  # all or none (the Python path reads a mix per object)
            if not has_box.all() or not (np.abs(box) <= MAX_MAGNITUDE).all() or \
                    (box[:, 2:] < 0).any():
                return None
            given = box
        boxes = _masks(shape, offsets, sizes, n, given, totals, deferred) if code == 1 else \
            _keypoints(shape, offsets, n, given)
        if boxes is not None:
            boxes.scores = score
    if boxes is None or area_problem(boxes.area, "detection") is not None:
        return None
    return np.frombuffer(image, np.int64), np.frombuffer(category, np.int64), boxes


def _boxes(box: np.ndarray, score: np.ndarray) -> Boxes | None:
    """``[x, y, w, h]`` boxes (``boxes._fast``'s checks and area)."""
    if not (np.abs(box) <= MAX_MAGNITUDE).all() or (box[:, 2:] < 0).any():
        return None
    n = len(box)
    return Boxes(box, np.zeros(n, np.int64), score, np.zeros(n, bool), box[:, 2] * box[:, 3])


def _masks(text: bytearray, offsets: bytes, sizes: bytes, n: int, given: np.ndarray | None,
           totals: Future | None, deferred: bool) -> Boxes | None:
    """Compressed RLEs ``{"size": [h, w], "counts": bytes}`` (``instances._fast_rles``),
    with their strings' ``totals`` when the reader computed them; ``deferred``: the dicts
    not made yet (:func:`~rpx_cli.io.packed_rles.deferred_rles`)."""
    size = np.frombuffer(sizes, np.int64).reshape(n, 2)
    if not ((size > 0) & (size <= MAX_SIDE)).all():
        return None
    # the strings stay joined beside the dicts: the mask steps check and intersect them so
    # (the scanner's RLE strings are bytes already: no copy)
    shape = deferred_rles(bytes(text), np.frombuffer(offsets, np.int64), size)
    shape.totals = totals
    if not deferred:
        shape.fill()
    area = np.full(n, np.nan) if given is None else given[:, 2] * given[:, 3]
    return Boxes(shape, [], None, np.zeros(n, bool), area)


def _keypoints(values: Any, offsets: Any, n: int, given: np.ndarray | None) -> Boxes | None:
    """Keypoint rows (``instances._fast_keypoints``): every object the same number of
    ``[x, y, v]`` triplets. The scanner wrote each row as :func:`keypoint_boxes` makes it for
    a prediction — the values, the extent of every point, the count of ``v > 0`` — so only
    the box given in the file (if any) and the area are set here, in place."""
    ends = np.frombuffer(offsets, np.int64)
    width = int(ends[1])
    k3 = width - 5
    if k3 < 3 or k3 % 3 or (np.diff(ends) != width).any():
        return None
    rows = np.frombuffer(values, np.float64).reshape(n, width)
    points = rows[:, :k3]
    if not (points.max() <= MAX_MAGNITUDE and points.min() >= -MAX_MAGNITUDE):  # (NaN fails)
        return None
    if given is not None:
        rows[:, k3:k3 + 4] = given
    return Boxes(rows, [], None, np.zeros(n, bool), rows[:, k3 + 2] * rows[:, k3 + 3])
