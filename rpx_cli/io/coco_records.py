"""``--on-error skip`` on COCO files: every bad annotation and detection listed as an error
and set aside, the rest evaluated (docs/usage.md: an image with a bad annotation is left out,
an image with a bad detection keeps none of its detections)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import InputError, PairError
from rpx_cli.io.coco_objects import ObjectField, record_problems
from rpx_cli.io.values import beyond_image, beyond_image_problem


def set_aside_annotations(anns: list[Any], stems: list[str], image_index: dict[int, int],
                          category_index: dict[int, int], path: str, errors: list[PairError],
                          shape_field: ObjectField) -> tuple[list[Any], set[int]]:
    """``--on-error skip``: every bad annotation listed in ``errors``; the annotations left,
    and the ids of the images a bad one belongs to (left out: their GT is incomplete)."""
    problems = record_problems(anns, path, shape_field, prediction=False, what="annotation")
    for n, ann in enumerate(anns):
        if n in problems or not isinstance(ann, dict):
            continue
        if not member(ann.get("image_id"), image_index):
            problems[n] = InputError(f"annotation {n}: image_id {ann.get('image_id')!r} is not "
                                     "an image of this file", path=path)
        elif not member(ann.get("category_id"), category_index):
            problems[n] = InputError(f"annotation {n}: category_id {ann.get('category_id')!r} "
                                     "is not a category of this file", path=path)
    dropped: set[int] = set()
    for n in sorted(problems):
        image_id = anns[n].get("image_id") if isinstance(anns[n], dict) else None
        if member(image_id, image_index):
            dropped.add(image_id)
            errors.append(PairError.of(problems[n], stems[image_index[image_id]], side="gt",
                                       path=path))
        else:
            errors.append(PairError.of(problems[n], "", side=None, path=path))
    if not problems:
        return anns, dropped
    return [ann for n, ann in enumerate(anns)
            if n not in problems and ann["image_id"] not in dropped], dropped


def set_aside_detections(results: list[Any], gt: Any, path: str, errors: list[PairError],
                         shape_field: ObjectField) -> list[Any]:
    """``--on-error skip``: every bad detection listed in ``errors``; the detections left
    (none of an image that had a bad one: it is scored as predicting nothing)."""
    image_index = {int(image_id): i for i, image_id in enumerate(gt.image_ids.tolist())}
    category_ids = {int(c): None for c in gt.category_ids.tolist()}
    problems = record_problems(results, path, shape_field, prediction=True, what="detection")
    # the detections of an image left out (a bad annotation) leave with it, unlisted
    gone = {n for n, item in enumerate(results) if isinstance(item, dict)
            and type(item.get("image_id")) is int and item["image_id"] in gt.dropped}
    for n in gone:
        problems.pop(n, None)
    for n, item in enumerate(results):
        if n in problems or n in gone or not isinstance(item, dict):
            continue
        for key in ("image_id", "category_id"):
            if key not in item:
                problems[n] = InputError(f"detection {n}: missing '{key}'", path=path)
                break
        else:
            if type(item["image_id"]) is not int or item["image_id"] not in image_index:
                problems[n] = InputError(f"detection {n}: image_id {item['image_id']!r} is not "
                                         "an image of the GT file", path=path)
            elif shape_field.instances is None:  # a box: within reach of its image
                box = np.array([item["bbox"]], np.float64)
                size = gt.image_size[[image_index[item["image_id"]]]]
                if beyond_image(box, size)[0] and member(item["category_id"], category_ids):
                    problems[n] = InputError(beyond_image_problem(box[0], size[0],
                                                                  f"detection {n}"), path=path)
    if not problems and not gone:
        return results
    emptied: set[int] = set()
    for n in sorted(problems):
        item = results[n]
        image_id = item.get("image_id") if isinstance(item, dict) else None
        if type(image_id) is int and image_id in image_index:
            emptied.add(image_id)
            errors.append(PairError.of(problems[n], gt.stems[image_index[image_id]],
                                       side="pred", path=path))
        else:
            errors.append(PairError.of(problems[n], "", side=None, path=path))
    return [item for n, item in enumerate(results)
            if n not in problems and n not in gone and item["image_id"] not in emptied]


def member(value: Any, index: dict) -> bool:
    """``value`` is a key of ``index`` (an id): never a boolean, though ``True == 1``."""
    if isinstance(value, bool):
        return False
    try:
        return value in index
    except TypeError:  # unhashable: a list where an id belongs
        return False
