"""COCO files: ``instances.json`` (images, annotations, categories) and a results list
(:mod:`rpx_cli.io.coco_results`), joined by image id into :class:`CocoFiles`.

Read straight into flat :class:`BoxTable` arrays: fields are pulled out in one pass and
validated with numpy once (the per-object checks run only to word an error). Which field
holds an object's shape is the caller's :class:`~rpx_cli.io.coco_objects.ObjectField`;
``--on-error skip`` sets bad records aside (:mod:`rpx_cli.io.coco_records`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_COCO_HINT, InputError, PairError
from rpx_cli.io.box_table import BoxTable
from rpx_cli.io.boxes import Boxes, ignore_flags
from rpx_cli.io.coco_gt_columns import GtColumns, MaskColumns, native_gt
from rpx_cli.io.coco_objects import BOX_FIELD, ObjectField, read_objects
from rpx_cli.io.coco_records import member, set_aside_annotations
from rpx_cli.io.coco_results import PendingResults, Results, read_results
from rpx_cli.io.id_positions import positions
from rpx_cli.io.json import loads_json
from rpx_cli.io.values import beyond_image, beyond_image_problem


@dataclass
class CocoFiles:
    """Images in COCO image id order (frame i is ``stems[i]``)."""

    stems: list[str]
    image_ids: np.ndarray
    gt: BoxTable
    pred: BoxTable
    categories: list[str]  # category names in category id order
    n_unknown_category: int
    # segm: each object's image (h, w) from images[].height/width (-1 where not given)
    gt_size: np.ndarray | None = None
    pred_size: np.ndarray | None = None
    # LVIS: each image's negative and not-exhaustive categories (indices into categories),
    # as (image, category) pairs; each category's frequency ("r", "c", "f"; None if absent)
    neg: tuple[np.ndarray, np.ndarray] | None = None
    not_exhaustive: tuple[np.ndarray, np.ndarray] | None = None
    frequency: list[str | None] | None = None
    # records set aside by --on-error skip (docs/usage.md): an image with a bad annotation is
    # left out, an image with a bad detection keeps none of its detections (its GT all
    # missed), a record naming no image of the GT file is not evaluated (stem "")
    errors: list[PairError] = field(default_factory=list)
    # each image's place in the GT file's images list (tidecv walks images in that order,
    # which decides its score ties across images)
    file_order: np.ndarray | None = None
    # GT table rows of annotations with "id" 0 (pycocotools reads a match to one as none)
    zero_id: np.ndarray | None = None
    # load_coco's prepare_gt of the GT's shapes, started as soon as the GT file was read:
    # the function that finishes it (None: not started)
    gt_prepared: Callable[[], Any] | None = None


@dataclass
class _Gt:
    stems: list[str]
    image_ids: np.ndarray  # sorted
    category_ids: np.ndarray  # sorted
    names: list[str]
    table: BoxTable
    image_size: np.ndarray  # (images, 2) h, w; -1 where not given
    size: np.ndarray | None  # (annotations, 2) in table order, segm only
    neg: tuple[np.ndarray, np.ndarray] | None = None
    not_exhaustive: tuple[np.ndarray, np.ndarray] | None = None
    frequency: list[str | None] | None = None
    dropped: frozenset[int] = frozenset()  # images left out (--on-error skip: a bad annotation)
    file_order: np.ndarray | None = None  # each image's place in the file's images list
    zero_id: np.ndarray | None = None  # table rows of annotations whose "id" is 0
    # a masks GT read by the native scanner: its segmentations as columns (table.shape holds
    # None each until the caller's prepare_gt makes the masks of them)
    masks: MaskColumns | None = None


def load_coco(gt_path: str, dt_path: str, *, shape_field: ObjectField = BOX_FIELD, lvis: bool = False,
              skip: bool = False,
              prepare_gt: Callable[[Any, np.ndarray | None, str], Any] | None = None,
              deferred_masks: bool = False) -> CocoFiles:
    """Read a COCO GT file and a results file; stems come from ``file_name``. ``shape_field``
    says which field of an object is its shape (``bbox``, ``segmentation``,
    ``keypoints``; :mod:`rpx_cli.io.coco_objects`); ``lvis`` also reads each image's
    ``neg_category_ids`` and ``not_exhaustive_category_ids`` and each category's
    ``frequency``. ``skip`` (``--on-error skip``): a bad record is set aside
    (:attr:`CocoFiles.errors`) instead of being the file's error. ``prepare_gt(shapes,
    sizes, path)``: the caller's work on the GT's shapes (masks rasterised; ``shapes`` may
    be the native scanner's :class:`MaskColumns` of a masks GT), started as
    soon as the GT file is read — before the results are made into arrays, which it may
    overlap in a thread of its own — and returning the function that finishes it (kept as
    :attr:`CocoFiles.gt_prepared`; it raises the work's error, where the caller calls it;
    not with ``skip``). ``deferred_masks``: the results' mask dicts, when the native reader
    made the column, are made only if something reads them (``PackedRles.fill``: a default
    masks run reads none)."""
    if not skip:
        # the results file's pieces start first (in worker processes when the run lends
        # them, rpx_cli.io.pieces) and are parsed while this process reads the GT file; its
        # errors still come after the GT file's
        pending = PendingResults(dt_path, shape_field, pieces=True)
        try:
            gt = _read_gt(gt_path, shape_field, lvis, masks_later=prepare_gt is not None)
            early = None if prepare_gt is None else \
                prepare_gt(gt.table.shape if gt.masks is None else gt.masks, gt.size, gt_path)
            coco = _join(gt, pending.collect(deferred=deferred_masks), gt_path, dt_path)
            coco.gt_prepared = early
            return coco
        finally:
            pending.close()
    errors: list[PairError] = []
    gt = _read_gt(gt_path, shape_field, lvis, errors)
    coco = _join(gt, read_results(dt_path, shape_field, gt, errors), gt_path, dt_path)
    coco.errors = errors
    return coco


def _read_gt(path: str, shape_field: ObjectField = BOX_FIELD, lvis: bool = False,
             errors: list[PairError] | None = None, *, masks_later: bool = False) -> _Gt:
    """``masks_later``: the caller makes the masks of a masks GT itself (``load_coco``'s
    ``prepare_gt``), so the native scanner may read its segmentations into columns
    (:attr:`_Gt.masks`)."""
    from rpx_cli.io import prefetch

    data = prefetch.read(path)  # (read while rpx started, when the command line named it)
    if not lvis and errors is None and (shape_field.instances is None or shape_field.name == "keypoints"
                                        or (masks_later and shape_field.name == "segmentation")):
        read = native_gt(data, "bbox" if shape_field.instances is None else shape_field.name)
        if read is not None:
            return _native_gt(read, shape_field.sized)
    gt = loads_json(data, path)
    if not isinstance(gt, dict) or not isinstance(gt.get("images"), list) or \
            not isinstance(gt.get("annotations"), list) or not isinstance(gt.get("categories"), list):
        hint = f" ({SWAP_COCO_HINT})" if isinstance(gt, list) else ""
        raise InputError("a COCO GT file needs 'images', 'annotations' and 'categories' "
                         f"lists{hint}", path=path)
    try:
        # images in id order; file_order: where each stood in the file (TIDE's tie order)
        file_order = sorted(range(len(gt["images"])), key=lambda i: gt["images"][i]["id"])
        images = [gt["images"][i] for i in file_order]
        categories = sorted(gt["categories"], key=itemgetter("id"))
        names = [str(c.get("name", c["id"])) for c in categories]
    except (KeyError, TypeError, AttributeError):
        raise InputError("every image and category needs an 'id'", path=path) from None
    image_ids, category_ids = (list(map(itemgetter("id"), x)) for x in (images, categories))
    names = _distinct_names(names, category_ids)
    for what, ids in (("image", image_ids), ("category", category_ids)):
        if not set(map(type, ids)) <= {int}:
            raise InputError(f"{what} ids must be integers", path=path)
        if len(set(ids)) != len(ids):
            raise InputError(f"{what} ids must be unique", path=path)
    stems = [str(image.get("file_name", image["id"])).rsplit(".", 1)[0] for image in images]
    image_index = {image_id: i for i, image_id in enumerate(image_ids)}
    category_index = {category_id: k for k, category_id in enumerate(category_ids)}
    anns = gt["annotations"]
    dropped: set[int] = set()
    if errors is not None:
        anns, dropped = set_aside_annotations(anns, stems, image_index, category_index, path,
                                              errors, shape_field)
        if dropped:
            kept = [i for i, image_id in enumerate(image_ids) if image_id not in dropped]
            images, stems = [images[i] for i in kept], [stems[i] for i in kept]
            image_ids, file_order = [image_ids[i] for i in kept], [file_order[i] for i in kept]
            image_index = {image_id: i for i, image_id in enumerate(image_ids)}
    try:
        image = np.fromiter(map(image_index.__getitem__, map(itemgetter("image_id"), anns)),
                            np.int64, count=len(anns))
        category = np.fromiter(map(category_index.__getitem__, map(itemgetter("category_id"), anns)),
                               np.int64, count=len(anns))
    except (KeyError, TypeError):
        _explain_annotation(anns, image_index, category_index, path)
    image_size = np.array([[_dimension(im.get("height")), _dimension(im.get("width"))]
                           for im in images], np.int64).reshape(-1, 2)
    size = None
    boxes = read_objects(anns, path, shape_field, prediction=False, labels=category)
    boxes.ignore = ignore_flags(anns, path, what="annotation")
    if shape_field.sized:
        size = image_size[image][np.argsort(image, kind="stable")]
    out = _Gt(stems, np.array(image_ids, np.int64), np.array(category_ids, np.int64), names,
              _table(boxes, category, image), image_size, size)
    out.dropped = frozenset(dropped)
    out.file_order = np.array(file_order, np.int64)
    out.zero_id = _zero_id_rows(anns, image)
    if lvis:
        out.frequency = [c.get("frequency") if isinstance(c, dict) else None for c in categories]
        out.neg = _image_categories(images, "neg_category_ids", category_index, path)
        out.not_exhaustive = _image_categories(images, "not_exhaustive_category_ids",
                                               category_index, path)
    return out


def _native_gt(read: GtColumns, sized: bool = False) -> _Gt:
    """The ``_Gt`` of the native scanner's columns (:mod:`rpx_cli.io.coco_gt_columns`), as
    the Python path below builds it."""
    size = read.image_size[read.image][np.argsort(read.image, kind="stable")] if sized else None
    out = _Gt(read.stems, read.image_ids, read.category_ids,
              _distinct_names(read.names, read.category_ids.tolist()),
              _table(read.boxes, read.category, read.image), read.image_size, size)
    out.masks = read.masks
    out.file_order = read.file_order
    rank = np.empty(read.image.size, np.int64)
    rank[np.argsort(read.image, kind="stable")] = np.arange(read.image.size)
    out.zero_id = rank[read.zero_id]
    return out


def _distinct_names(names: list[str], ids: list[Any]) -> list[str]:
    """Category names as labels: two categories of one name stay two categories (as
    pycocotools keeps them by id), each named ``name (id)`` — one would otherwise overwrite
    the other in ``per_class``."""
    seen: dict[str, int] = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
    if all(count == 1 for count in seen.values()):
        return names
    return [f"{name} ({category_id})" if seen[name] > 1 else name
            for name, category_id in zip(names, ids, strict=True)]


def _dimension(value: Any) -> int:
    return value if type(value) is int and value > 0 else -1


def _image_categories(images: list[dict[str, Any]], key: str, category_index: dict[int, int],
                      path: str) -> tuple[np.ndarray, np.ndarray]:
    """LVIS' per-image category lists as (image index, category index) pairs; every image
    must carry the list."""
    frames, cats = [], []
    for i, image in enumerate(images):
        if key not in image:  # (the lvis package refuses such a file too)
            raise InputError(f"image {image['id']}: no '{key}' (an LVIS GT file lists it on "
                             "every image, empty or not)", path=path)
        ids = image[key]
        if not isinstance(ids, list) or not all(member(c, category_index) for c in ids):
            raise InputError(f"image {image['id']}: '{key}' must be a list of category ids of "
                             "this file", path=path)
        frames.extend([i] * len(ids))
        cats.extend(category_index[c] for c in ids)
    return np.asarray(frames, np.int64), np.asarray(cats, np.int64)


def _join(gt: _Gt, results: Results, gt_path: str, dt_path: str) -> CocoFiles:
    image = _position(gt.image_ids, results.image)
    if (image < 0).any():
        n = int(np.flatnonzero(image < 0)[0])
        raise InputError(f"detection {n}: image_id {int(results.image[n])} is not in the GT file "
                         f"{gt_path}", path=dt_path)
    category = np.where(results.usable, _position(gt.category_ids, results.category), -1)
    shape = results.boxes.shape
    if isinstance(shape, np.ndarray) and shape.ndim == 2 and shape.shape[1] == 4 and len(shape):
        far = beyond_image(shape, gt.image_size[image]) & (category >= 0)
        if far.any():  # (under --on-error skip, set aside before: coco_records)
            n = int(np.argmax(far))
            raise InputError(beyond_image_problem(shape[n], gt.image_size[image[n]],
                                                  f"detection {n}"), path=dt_path)
    pred = _table(results.boxes, category, image)
    unknown = pred.label < 0  # pycocotools evaluates only the GT's categories
    if unknown.any():
        pred = pred.take(np.flatnonzero(~unknown))
    pred_size = None if gt.size is None else gt.image_size[pred.frame]
    return CocoFiles(gt.stems, gt.image_ids, gt.table, pred, gt.names,
                     int(np.count_nonzero(unknown)), gt.size, pred_size, gt.neg,
                     gt.not_exhaustive, gt.frequency, file_order=gt.file_order,
                     zero_id=gt.zero_id)


def _position(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Index of each of ``ids`` in ``sorted_ids``; -1 where absent."""
    return positions(np.asarray(sorted_ids, np.int64), np.asarray(ids))


def _zero_id_rows(anns: list[Any], image: np.ndarray) -> np.ndarray:
    """The GT table rows (:func:`_table`'s order) of the annotations whose ``id`` is 0:
    pycocotools and lvis read a match to one as no match (docs/detection.md)."""
    ids = list(map(dict.get, anns, repeat("id")))
    if not ids.count(0):  # (the common case, in C)
        return np.zeros(0, np.int64)
    zero = [n for n, value in enumerate(ids) if type(value) is int and value == 0]
    rank = np.empty(image.size, np.int64)
    rank[np.argsort(image, kind="stable")] = np.arange(image.size)
    return rank[np.asarray(zero, np.int64)]


def _table(boxes: Boxes, label: np.ndarray, image: np.ndarray) -> BoxTable:
    """Sorted by image, input order within an image (the columns themselves, no copy, when
    they are already: a results file written image by image)."""
    if image.size < 2 or bool((image[1:] >= image[:-1]).all()):
        return BoxTable(image, label, boxes.shape, boxes.crowd, boxes.area, boxes.scores,
                        boxes.ignore)
    order = np.argsort(image, kind="stable")
    return BoxTable(image[order], label[order], boxes.shape[order], boxes.crowd[order],
                    boxes.area[order], None if boxes.scores is None else boxes.scores[order],
                    None if boxes.ignore is None else boxes.ignore[order])


def _explain_annotation(anns, image_index, category_index, path) -> None:
    for n, ann in enumerate(anns):
        if not isinstance(ann, dict):
            raise InputError(f"annotation {n}: expected an object", path=path)
        if not member(ann.get("image_id"), image_index):
            raise InputError(f"annotation {n}: image_id {ann.get('image_id')!r} is not an image "
                             "of this file", path=path)
        if not member(ann.get("category_id"), category_index):
            raise InputError(f"annotation {n}: category_id {ann.get('category_id')!r} is not a "
                             "category of this file", path=path)
    raise InputError("malformed annotations", path=path)


def read_json(path: str) -> Any:
    from rpx_cli.io.regular import read_bytes

    return loads_json(read_bytes(path), path)
