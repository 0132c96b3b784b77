"""Which field of a COCO annotation or result holds an object's shape, and how a list of
them is read (:class:`ObjectField`: ``bbox``, ``segmentation``, ``keypoints``); every bad
record of a list (:func:`record_problems`, what ``--on-error skip`` sets aside)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io import instances
from rpx_cli.io.boxes import Boxes, boxes_from_objects, object_problems
from rpx_cli.io.values import MAX_DETECTION_AREA, MAX_MAGNITUDE, area_problem


@dataclass(frozen=True)
class ObjectField:
    """The field of a COCO object that holds its shape. ``instances``: the reader of masks
    or keypoints (:mod:`rpx_cli.io.instances`); None for ``[x, y, w, h]`` boxes.
    ``sized``: the shapes need their image's size (polygon masks are rasterised)."""

    name: str
    instances: Callable[..., Boxes] | None = None
    sized: bool = False
    # what pycocotools' loadRes fills in on a result that lacks this field, from another
    # (``fill(results, path)``, in place; a kind supplies it: a box from a mask needs the
    # mask's runs decoded)
    fill: Callable[[list[Any], str], None] | None = None


BOX_FIELD = ObjectField("bbox")
MASK_FIELD = ObjectField("segmentation", instances.masks, sized=True)
KEYPOINT_FIELD = ObjectField("keypoints", instances.keypoints)


def read_objects(objects: list[Any], path: str, field: ObjectField, *, prediction: bool,
                 labels: np.ndarray | None = None, no_literals: bool = False) -> Boxes:
    """The shapes (``field``), scores and crowd flags of a COCO file's annotations or results
    (``labels``: boxes' label column; masks and keypoints leave it to the caller)."""
    if prediction and field.fill is not None:
        field.fill(objects, path)
    if field.instances is None:
        boxes = boxes_from_objects(objects, path, prediction=prediction, box_format="xywh",
                                   labels=np.zeros(len(objects), np.int64) if labels is None else labels)
    else:
        boxes = _instances(objects, path, field.instances, prediction=prediction,
                           no_literals=no_literals)
    problem = area_problem(boxes.area, "detection") if prediction else None
    if problem is not None:
        raise InputError(problem, path=path)
    return boxes


def record_problems(objects: list[Any], path: str, field: ObjectField, *, prediction: bool,
                    what: str) -> dict[int, InputError]:
    """Every bad object of a COCO file's list (index -> its error), each checked alone as
    the bulk reader would (a result's area too): what ``--on-error skip`` sets aside."""
    if field.instances is None:
        problems = object_problems(objects, path, prediction=prediction, box_format="xywh",
                                   where=what, labelled=False)
        if prediction:
            good = [n for n in range(len(objects)) if n not in problems]
            area = boxes_from_objects([objects[n] for n in good], path, prediction=True,
                                      box_format="xywh", labels=np.zeros(len(good), np.int64)).area
            for k in np.flatnonzero(area > MAX_DETECTION_AREA).tolist():
                n = good[k]
                problems[n] = InputError(area_problem(area[k:k + 1], what).replace(
                    f"{what} 0", f"{what} {n}", 1), path=path)
        return problems
    problems = {}
    for index, item in enumerate(objects):
        try:
            read_objects([item], path, field, prediction=prediction)
        except InputError as exc:
            problems[index] = InputError(str(exc).replace(f"{what} 0", f"{what} {index}", 1),
                                         path=path)
    return problems


def _instances(objects: list[Any], path: str, read: Callable[..., Boxes], *, prediction: bool,
               no_literals: bool = False) -> Boxes:
    """Masks or keypoints of COCO annotations or results (``what`` names them in errors)."""
    what = "detection" if prediction else "annotation"
    n = len(objects)
    given = np.full(n, np.nan)
    crowd = np.zeros(n, bool)
    scores = np.zeros(n)
    if set(map(type, objects)) - {dict}:
        index = next(i for i, item in enumerate(objects) if not isinstance(item, dict))
        raise InputError(f"{what} {index}: expected an object", path=path)
    if prediction:
        values = list(map(dict.get, objects, repeat("score")))
        if set(map(type, values)) <= {int, float}:
            try:
                scores = np.array(values, np.float64)
            except OverflowError:  # an integer beyond float64: worded below
                scores = np.full(len(values), np.inf)
        if not set(map(type, values)) <= {int, float} or not (np.abs(scores) <= MAX_MAGNITUDE).all():
            index = next(i for i, v in enumerate(values) if isinstance(v, bool) or
                         not isinstance(v, (int, float)) or not abs(v) <= MAX_MAGNITUDE)
            raise InputError(f"{what} {index}: 'score' must be a finite number within "
                             f"±{MAX_MAGNITUDE:g}, got {values[index]!r}", path=path)
    for index, item in enumerate(objects if not prediction else ()):
        flag = item.get("iscrowd", 0)
        if type(flag) not in (int, bool) or flag not in (0, 1):
            raise InputError(f"{what} {index}: 'iscrowd' must be 0, 1, true or false, got "
                             f"{flag!r}", path=path)
        crowd[index] = bool(flag)
        area = item.get("area")
        if area is not None:
            if isinstance(area, bool) or not isinstance(area, (int, float)) or \
                    not np.isfinite(area) or area < 0:
                raise InputError(f"{what} {index}: 'area' must be a finite number >= 0, got "
                                 f"{area!r}", path=path)
            given[index] = area
    boxes = read(objects, path, prediction=prediction, box_format="xywh", given_area=given,
                 what=what, no_literals=no_literals)
    boxes.crowd = crowd
    boxes.scores = scores if prediction else None
    return boxes
