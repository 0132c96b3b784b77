"""COCO files: ``instances.json`` (images, annotations, categories) and a results list.

Read straight into flat :class:`BoxTable` arrays: fields are pulled out in one pass and
validated with numpy once (the per-object checks run only to word an error). (Reading
the GT file in a forked process while this one reads the results saved nothing
measurable: the results file dominates.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import InputError, PairError
from rpx_cli.io.box_table import BoxTable
from rpx_cli.io.boxes import Boxes, boxes_from_objects, loads_json, object_problems


@dataclass
class CocoFiles:
    """Images in COCO image id order (frame i is ``stems[i]``)."""

    stems: list[str]
    image_ids: np.ndarray
    gt: BoxTable
    pred: BoxTable
    categories: list[str]  # category names in category id order
    n_unknown_category: int
    # records set aside by --on-error skip (docs/usage.md): an image with a bad annotation is left
    # out, an image with a bad detection keeps none of its detections (its GT all missed),
    # a record naming no image of the GT file is not evaluated (stem "")
    errors: list[PairError] = field(default_factory=list)


@dataclass
class _Gt:
    stems: list[str]
    image_ids: np.ndarray  # sorted
    category_ids: np.ndarray  # sorted
    names: list[str]
    table: BoxTable
    dropped: frozenset[int] = frozenset()  # images left out (--on-error skip: a bad annotation)


@dataclass
class _Results:
    objects: list[Any]
    image: np.ndarray  # raw COCO image ids
    category: np.ndarray  # raw category ids; ``usable`` False where not an integer
    usable: np.ndarray
    boxes: Boxes


def load_coco(gt_path: str, dt_path: str, *, skip: bool = False) -> CocoFiles:
    """Read a COCO GT file and a results file; stems come from ``file_name``. ``skip``
    (``--on-error skip``): a bad record is set aside (:attr:`CocoFiles.errors`) instead of
    being the file's error."""
    if not skip:
        return _join(_read_gt(gt_path), _read_results(dt_path), gt_path, dt_path)
    errors: list[PairError] = []
    gt = _read_gt(gt_path, errors)
    coco = _join(gt, _read_results(dt_path, gt, errors), gt_path, dt_path)
    coco.errors = errors
    return coco


def _read_gt(path: str, errors: list[PairError] | None = None) -> _Gt:
    gt = read_json(path)
    if not isinstance(gt, dict) or not isinstance(gt.get("images"), list) or \
            not isinstance(gt.get("annotations"), list) or not isinstance(gt.get("categories"), list):
        raise InputError("a COCO GT file needs 'images', 'annotations' and 'categories' lists",
                         path=path)
    try:
        images = sorted(gt["images"], key=itemgetter("id"))
        categories = sorted(gt["categories"], key=itemgetter("id"))
        names = [str(c.get("name", c["id"])) for c in categories]
    except (KeyError, TypeError, AttributeError):
        raise InputError("every image and category needs an 'id'", path=path) from None
    image_ids, category_ids = (list(map(itemgetter("id"), x)) for x in (images, categories))
    for what, ids in (("image", image_ids), ("category", category_ids)):
        if not set(map(type, ids)) <= {int}:
            raise InputError(f"{what} ids must be integers", path=path)
        if len(set(ids)) != len(ids):
            raise InputError(f"{what} ids must be unique", path=path)
    stems = [str(image.get("file_name", image["id"])).rsplit(".", 1)[0] for image in images]
    image_index = {image_id: i for i, image_id in enumerate(image_ids)}
    category_index = {category_id: k for k, category_id in enumerate(category_ids)}
    anns = gt["annotations"]
    if errors is not None:
        anns, dropped = _set_aside_annotations(anns, stems, image_index, category_index, path,
                                               errors)
        if dropped:
            kept = [i for i, image_id in enumerate(image_ids) if image_id not in dropped]
            stems, image_ids = [stems[i] for i in kept], [image_ids[i] for i in kept]
            image_index = {image_id: i for i, image_id in enumerate(image_ids)}
    try:
        image = np.fromiter(map(image_index.__getitem__, map(itemgetter("image_id"), anns)),
                            np.int64, count=len(anns))
        category = np.fromiter(map(category_index.__getitem__, map(itemgetter("category_id"), anns)),
                               np.int64, count=len(anns))
    except (KeyError, TypeError):
        _explain_annotation(anns, image_index, category_index, path)
    boxes = boxes_from_objects(anns, path, prediction=False, box_format="xywh", labels=category)
    return _Gt(stems, np.array(image_ids, np.int64), np.array(category_ids, np.int64), names,
               _table(boxes, np.asarray(boxes.labels, np.int64), image),
               frozenset(dropped) if errors is not None else frozenset())


def _read_results(path: str, gt: _Gt | None = None,
                  errors: list[PairError] | None = None) -> _Results:
    results = read_json(path)
    if isinstance(results, dict) and "annotations" in results:
        results = results["annotations"]
    if not isinstance(results, list):
        raise InputError("a COCO results file is a list of {image_id, category_id, bbox, score}",
                         path=path)
    if gt is not None and errors is not None:
        results = _set_aside_detections(results, gt, path, errors)
    if results and set(map(type, results)) != {dict}:
        n = next(n for n, item in enumerate(results) if not isinstance(item, dict))
        raise InputError(f"detection {n}: expected an object", path=path)
    try:
        image = list(map(itemgetter("image_id"), results))
        category = list(map(itemgetter("category_id"), results))
    except KeyError as exc:
        n = next(n for n, item in enumerate(results) if exc.args[0] not in item)
        raise InputError(f"detection {n}: missing '{exc.args[0]}'", path=path) from None
    if not set(map(type, image)) <= {int}:
        n = next(n for n, value in enumerate(image) if type(value) is not int)
        raise InputError(f"detection {n}: image_id {image[n]!r} is not an integer", path=path)
    usable = np.ones(len(results), bool)
    if not set(map(type, category)) <= {int}:  # another type names no GT category
        usable = np.array([type(value) is int for value in category], bool)
        category = [value if type(value) is int else 0 for value in category]
    boxes = boxes_from_objects(results, path, prediction=True, box_format="xywh",
                               labels=np.zeros(len(results), np.int64))
    return _Results(results, np.array(image, np.int64), np.array(category, np.int64), usable,
                    boxes)


def _join(gt: _Gt, results: _Results, gt_path: str, dt_path: str) -> CocoFiles:
    image = _position(gt.image_ids, results.image)
    if (image < 0).any():
        n = int(np.flatnonzero(image < 0)[0])
        raise InputError(f"detection {n}: image_id {int(results.image[n])} is not in the GT file "
                         f"{gt_path}", path=dt_path)
    category = np.where(results.usable, _position(gt.category_ids, results.category), -1)
    pred = _table(results.boxes, category, image)
    unknown = pred.label < 0  # pycocotools evaluates only the GT's categories
    if unknown.any():
        pred = pred.take(np.flatnonzero(~unknown))
    return CocoFiles(gt.stems, gt.image_ids, gt.table, pred, gt.names,
                     int(np.count_nonzero(unknown)))


def _set_aside_annotations(anns: list[Any], stems: list[str], image_index: dict[int, int],
                           category_index: dict[int, int], path: str,
                           errors: list[PairError]) -> tuple[list[Any], set[int]]:
    """``--on-error skip``: every bad annotation listed in ``errors``; the annotations left,
    and the ids of the images a bad one belongs to (left out: their GT is incomplete)."""
    problems = object_problems(anns, path, prediction=False, box_format="xywh",
                               where="annotation", labelled=False)
    for n, ann in enumerate(anns):
        if n in problems or not isinstance(ann, dict):
            continue
        if not _member(ann.get("image_id"), image_index):
            problems[n] = InputError(f"annotation {n}: image_id {ann.get('image_id')!r} is not "
                                     "an image of this file", path=path)
        elif not _member(ann.get("category_id"), category_index):
            problems[n] = InputError(f"annotation {n}: category_id {ann.get('category_id')!r} "
                                     "is not a category of this file", path=path)
    dropped: set[int] = set()
    for n in sorted(problems):
        image_id = anns[n].get("image_id") if isinstance(anns[n], dict) else None
        if _member(image_id, image_index):
            dropped.add(image_id)
            errors.append(PairError.of(problems[n], stems[image_index[image_id]], side="gt",
                                       path=path))
        else:
            errors.append(PairError.of(problems[n], "", side=None, path=path))
    if not problems:
        return anns, dropped
    return [ann for n, ann in enumerate(anns)
            if n not in problems and ann["image_id"] not in dropped], dropped


def _set_aside_detections(results: list[Any], gt: _Gt, path: str,
                          errors: list[PairError]) -> list[Any]:
    """``--on-error skip``: every bad detection listed in ``errors``; the detections left
    (none of an image that had a bad one: it is scored as predicting nothing)."""
    image_index = {int(image_id): i for i, image_id in enumerate(gt.image_ids.tolist())}
    problems = object_problems(results, path, prediction=True, box_format="xywh",
                               where="detection", labelled=False)
    # the detections of an image left out (a bad annotation) leave with it, unlisted
    gone = {n for n, item in enumerate(results) if isinstance(item, dict)
            and type(item.get("image_id")) is int and item["image_id"] in gt.dropped}
    for n in gone:
        problems.pop(n, None)
    for n, item in enumerate(results):
        if n in problems or not isinstance(item, dict):
            continue
        if n in gone:
            continue
        for key in ("image_id", "category_id"):
            if key not in item:
                problems[n] = InputError(f"detection {n}: missing '{key}'", path=path)
                break
        else:
            if type(item["image_id"]) is not int or item["image_id"] not in image_index:
                problems[n] = InputError(f"detection {n}: image_id {item['image_id']!r} is not "
                                         "an image of the GT file", path=path)
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


def _position(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Index of each of ``ids`` in ``sorted_ids``; -1 where absent."""
    at = np.searchsorted(sorted_ids, ids)
    found = at < sorted_ids.size
    found[found] = sorted_ids[at[found]] == ids[found]
    return np.where(found, at, -1)


def _table(boxes: Boxes, label: np.ndarray, image: np.ndarray) -> BoxTable:
    """Sorted by image, input order within an image."""
    order = np.argsort(image, kind="stable")
    return BoxTable(image[order], label[order], boxes.box[order], boxes.crowd[order],
                    boxes.area[order], None if boxes.scores is None else boxes.scores[order])


def _explain_annotation(anns, image_index, category_index, path) -> None:
    for n, ann in enumerate(anns):
        if not isinstance(ann, dict):
            raise InputError(f"annotation {n}: expected an object", path=path)
        if not _member(ann.get("image_id"), image_index):
            raise InputError(f"annotation {n}: image_id {ann.get('image_id')!r} is not an image "
                             "of this file", path=path)
        if not _member(ann.get("category_id"), category_index):
            raise InputError(f"annotation {n}: category_id {ann.get('category_id')!r} is not a "
                             "category of this file", path=path)
    raise InputError("malformed annotations", path=path)


def _member(value: Any, index: dict) -> bool:
    try:
        return value in index
    except TypeError:  # unhashable: a list where an id belongs
        return False


def read_json(path: str) -> Any:
    from rpx_cli.io.regular import read_bytes

    return loads_json(read_bytes(path), path)
