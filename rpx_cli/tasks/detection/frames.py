"""A detection frame (one image's GT and predictions, :class:`~rpx_cli.io.box_table.Frame`)
as a ``--shard`` part writes it, exactly: each kind's shapes through its codec (float64
lists for boxes and rectangles, WKB bytes as hex for polygons, RLE strings for masks,
keypoint rows), with LVIS' category lists, polygons' intersections and the image's place in
its COCO file when the frame has them."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from rpx_cli.io.box_table import Frame, Overlaps
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.values import MAX_DETECTION_AREA, MAX_MAGNITUDE
from rpx_cli.tasks.stats import Stat

# how a kind's shapes go to JSON and back: (encode, decode); None: [x, y, w, h] lists
Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]] | None


def encode_frame(frame: Frame, codec: Codec = None) -> dict[str, Any]:
    encode = None if codec is None else codec[0]
    out = {"gt": frame.gt.as_json(encode), "pred": frame.pred.as_json(encode),
           "image_id": frame.image_id}
    if frame.neg is not None:
        out["neg"], out["not_exhaustive"] = frame.neg, frame.not_exhaustive
    if frame.overlaps is not None:
        out["overlaps"] = frame.overlaps.as_json()
    if frame.file_order is not None:
        out["file_order"] = frame.file_order
    return out


def decode_frame(data: dict[str, Any], codec: Codec = None,
                 check: Callable[[Frame], None] | None = None) -> Frame:
    """The inverse of :func:`encode_frame`, checked as the readers check a file's objects
    (:func:`check_objects`, and the kind's ``check``): a ``--shard`` part is a file from
    outside like any other, and ``rpx merge`` reads it (a ``ValueError`` otherwise)."""
    decode = None if codec is None else codec[1]
    overlaps = data.get("overlaps")
    frame = Frame(Boxes.from_json(data["gt"], decode), Boxes.from_json(data["pred"], decode),
                  data.get("image_id"), None if overlaps is None else Overlaps.from_json(overlaps),
                  neg=data.get("neg"), not_exhaustive=data.get("not_exhaustive"),
                  file_order=data.get("file_order"))
    check_objects(frame)
    if check is not None:
        check(frame)
    return frame


def check_objects(frame: Frame) -> None:
    """What every reader guarantees of a frame's objects: a prediction's score a finite
    number within ±1e12, its area at most COCO's largest (1e10), no prediction crowd; no
    area negative or infinite (NaN: none given); numeric shapes finite within ±1e12."""
    for side, boxes in (("GT", frame.gt), ("prediction", frame.pred)):
        area = boxes.area
        wrong = (area < 0) | np.isinf(area)
        if side == "prediction":
            wrong |= area > MAX_DETECTION_AREA
            scores = boxes.scores
            if scores is None or scores.shape != area.shape:
                if area.size:
                    raise ValueError("a prediction without a score")
            else:
                wrong |= ~(np.abs(scores) <= MAX_MAGNITUDE) | boxes.crowd
        shape = boxes.shape
        if isinstance(shape, np.ndarray) and shape.dtype.kind == "f" and shape.ndim == 2:
            wrong |= ~(np.abs(shape) <= MAX_MAGNITUDE).all(axis=1) if shape.size else False
        if wrong.any():
            raise ValueError(f"{side} object {int(np.argmax(wrong))} is malformed: a score, area "
                             "or coordinate no reader accepts")


def frame_stat(codec: Codec = None, check: Callable[[Frame], None] | None = None) -> Stat:
    """The statistic every kind keeps: the frame, written with ``codec``; ``check``: the
    kind's checks of a frame read back (:func:`decode_frame`)."""
    if codec is None and check is None:
        return Stat("frame", encode=encode_frame, decode=decode_frame)
    return Stat("frame", encode=partial(encode_frame, codec=codec),
                decode=partial(decode_frame, codec=codec, check=check))


def rows_to_json(shapes: np.ndarray) -> list[list[float]]:
    return shapes.tolist()


def rows_from_json(values: list[list[float]], width: int) -> np.ndarray:
    """Rows of ``width`` numbers (rectangles: 5); -1: any width (keypoint rows)."""
    if width < 0:
        return np.asarray(values, np.float64).reshape(len(values), -1) if values else np.zeros((0, 0))
    return np.asarray(values, np.float64).reshape(-1, width)


def rows_codec(width: int) -> Codec:
    """The codec of float64 rows (picklable: workers and Dask receive the statistics)."""
    return rows_to_json, partial(rows_from_json, width=width)
