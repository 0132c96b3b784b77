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


def decode_frame(data: dict[str, Any], codec: Codec = None) -> Frame:
    """The inverse of :func:`encode_frame`."""
    decode = None if codec is None else codec[1]
    overlaps = data.get("overlaps")
    return Frame(Boxes.from_json(data["gt"], decode), Boxes.from_json(data["pred"], decode),
                 data.get("image_id"), None if overlaps is None else Overlaps.from_json(overlaps),
                 neg=data.get("neg"), not_exhaustive=data.get("not_exhaustive"),
                 file_order=data.get("file_order"))


def frame_stat(codec: Codec = None) -> Stat:
    """The statistic every kind keeps: the frame, written with ``codec``."""
    if codec is None:
        return Stat("frame", encode=encode_frame, decode=decode_frame)
    return Stat("frame", encode=partial(encode_frame, codec=codec),
                decode=partial(decode_frame, codec=codec))


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
