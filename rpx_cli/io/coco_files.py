"""COCO files: ``instances.json`` (images, annotations, categories) and a results list.

Read straight into flat :class:`BoxTable` arrays: fields are pulled out in one pass and
validated with numpy once (the per-object checks run only to word an error). (Reading
the GT file in a forked process while this one reads the results saved nothing
measurable: the results file dominates.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli.errors import InputError, PairError
from rpx_cli.io.box_table import BoxTable
from rpx_cli.io.boxes import Boxes, boxes_from_objects, object_problems
from rpx_cli.io.instances import instances
from rpx_cli.io.json import loads_json
from rpx_cli.io.pieces import elsewhere, run_pieces


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


@dataclass
class _Results:
    objects: list[Any]
    image: np.ndarray  # raw COCO image ids
    category: np.ndarray  # raw category ids; ``usable`` False where not an integer
    usable: np.ndarray
    boxes: Boxes


def load_coco(gt_path: str, dt_path: str, *, iou_type: str = "bbox", lvis: bool = False,
              skip: bool = False) -> CocoFiles:
    """Read a COCO GT file and a results file; stems come from ``file_name``. ``iou_type``
    says which field of an object is its geometry (``bbox``, ``segmentation``,
    ``keypoints``; :mod:`rpx_cli.io.instances`); ``lvis`` also reads each image's
    ``neg_category_ids`` and ``not_exhaustive_category_ids`` and each category's
    ``frequency``. ``skip`` (``--on-error skip``): a bad record is set aside
    (:attr:`CocoFiles.errors`) instead of being the file's error."""
    if not skip:
        # the results file's pieces start first (in worker processes when the run lends
        # them, rpx_cli.io.pieces) and are parsed while this process reads the GT file; its
        # errors still come after the GT file's
        pending = _PendingResults(dt_path, iou_type, pieces=True)
        try:
            gt = _read_gt(gt_path, iou_type, lvis)
            return _join(gt, pending.collect(), gt_path, dt_path)
        finally:
            pending.close()
    errors: list[PairError] = []
    gt = _read_gt(gt_path, iou_type, lvis, errors)
    coco = _join(gt, _read_results(dt_path, iou_type, gt, errors), gt_path, dt_path)
    coco.errors = errors
    return coco


def _read_gt(path: str, iou_type: str = "bbox", lvis: bool = False,
             errors: list[PairError] | None = None) -> _Gt:
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
    dropped: set[int] = set()
    if errors is not None:
        anns, dropped = _set_aside_annotations(anns, stems, image_index, category_index, path,
                                               errors, iou_type)
        if dropped:
            kept = [i for i, image_id in enumerate(image_ids) if image_id not in dropped]
            images, stems = [images[i] for i in kept], [stems[i] for i in kept]
            image_ids = [image_ids[i] for i in kept]
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
    if iou_type == "bbox":
        boxes = boxes_from_objects(anns, path, prediction=False, box_format="xywh", labels=category)
    else:
        boxes = _instances(anns, path, iou_type, prediction=False)
        size = image_size[image][np.argsort(image, kind="stable")]
    out = _Gt(stems, np.array(image_ids, np.int64), np.array(category_ids, np.int64), names,
              _table(boxes, category, image), image_size, size)
    out.dropped = frozenset(dropped)
    if lvis:
        out.frequency = [c.get("frequency") if isinstance(c, dict) else None for c in categories]
        out.neg = _image_categories(images, "neg_category_ids", category_index, path)
        out.not_exhaustive = _image_categories(images, "not_exhaustive_category_ids",
                                               category_index, path)
    return out


def _dimension(value: Any) -> int:
    return value if type(value) is int and value > 0 else -1


def _image_categories(images: list[dict[str, Any]], key: str, category_index: dict[int, int],
                      path: str) -> tuple[np.ndarray, np.ndarray]:
    """LVIS' per-image category lists as (image index, category index) pairs."""
    frames, cats = [], []
    for i, image in enumerate(images):
        ids = image.get(key, [])
        if not isinstance(ids, list) or not all(_member(c, category_index) for c in ids):
            raise InputError(f"image {image['id']}: '{key}' must be a list of category ids of "
                             "this file", path=path)
        frames.extend([i] * len(ids))
        cats.extend(category_index[c] for c in ids)
    return np.asarray(frames, np.int64), np.asarray(cats, np.int64)


def _instances(objects: list[Any], path: str, iou_type: str, *, prediction: bool,
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
            scores = np.array(values, np.float64)
        if not set(map(type, values)) <= {int, float} or not ((scores >= 0) & (scores <= 1)).all():
            index = next(i for i, v in enumerate(values) if isinstance(v, bool) or
                         not isinstance(v, (int, float)) or not 0 <= v <= 1)
            raise InputError(f"{what} {index}: 'score' must be a number in [0, 1], got "
                             f"{values[index]!r}", path=path)
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
    boxes = instances(objects, path, prediction=prediction, iou_type=iou_type, box_format="xywh",
                      given_area=given, what=what, no_literals=no_literals)
    boxes.crowd = crowd
    boxes.scores = scores if prediction else None
    return boxes


def _read_results(path: str, iou_type: str = "bbox", gt: _Gt | None = None,
                  errors: list[PairError] | None = None) -> _Results:
    pending = _PendingResults(path, iou_type, pieces=errors is None)
    try:
        return pending.collect(gt, errors)
    finally:
        pending.close()


# a results file is parsed in pieces of about this size: the Python objects of one piece at a
# time, not the whole file's (keypoints: 25 million floats, ~1 GB, for 5,000 images)
CHUNK_BYTES = 16 << 20
_BETWEEN_OBJECTS = re.compile(rb"\}\s*,\s*\{")


class _PendingResults:
    """A results file being read. A list larger than :data:`CHUNK_BYTES` is parsed as
    consecutive sub-lists cut between two objects (``}, {``), each turned into arrays on
    its own; :meth:`collect` joins them. When the run lends worker processes
    (:mod:`rpx_cli.io.pieces`), the pieces start at once and are parsed there while the
    caller reads the GT file — each worker reads its piece of a local file again from the
    page cache, so that this process holds no copy of the file meanwhile; otherwise the
    file is read in :meth:`collect`, after the GT file, and its pieces parsed here one after
    the other. When the file is small, not a list, or any piece does not parse or holds a
    bad record, the whole file is read at once instead (its error names the record's index
    in the file). A cut inside a string or a nested value leaves a piece that is not valid
    JSON, so pieces that all parse are the file's top-level objects, in order. A file that
    cannot be read is the error of :meth:`collect`, after whatever the caller read."""

    def __init__(self, path: str, iou_type: str, *, pieces: bool) -> None:
        self.path, self.iou_type, self.pieces = path, iou_type, pieces
        self.failure: BaseException | None = None
        self.data: bytes | None = None
        self.no_literals = False
        self.running: Iterator[_Results | None] | None = None
        if pieces and elsewhere():
            try:
                self._read()
            except Exception as exc:  # raised by collect(), after the GT file's errors
                self.failure = exc
                return
            self._start()

    def _read(self) -> None:
        from rpx_cli.io.regular import read_bytes

        self.data = read_bytes(self.path)
        # no JSON true/false anywhere: a list of numbers holds no bool (numpy would take one
        # as 1); masks and keypoints read their number lists with numpy (boxes check types)
        self.no_literals = self.iou_type != "bbox" and self.data.find(b"true") < 0 and \
            self.data.find(b"false") < 0

    def _start(self) -> None:
        bounds = _piece_bounds(self.data) if self.pieces and self.data is not None else None
        if not bounds:
            return
        path, iou_type, no_literals = self.path, self.iou_type, self.no_literals
        data = self.data if "://" in path or not elsewhere() else None
        self.running = run_pieces(
            lambda ab: _piece(path, data, ab, iou_type, no_literals), bounds)
        if data is None:
            self.data = None  # the workers read their pieces; the fallback reads it again

    def collect(self, gt: _Gt | None = None,
                errors: list[PairError] | None = None) -> _Results:
        if self.failure is not None:
            raise self.failure
        if self.data is None and self.running is None:  # not read yet: read it now
            self._read()
            self._start()
        if self.running is not None:
            parts = list(self.running)
            self.running = None
            if all(part is not None for part in parts):
                self.data = None  # the caller goes on with the arrays only
                return _Results([], np.concatenate([p.image for p in parts]),
                                np.concatenate([p.category for p in parts]),
                                np.concatenate([p.usable for p in parts]),
                                _concatenate([p.boxes for p in parts]))
        if self.data is None:
            self._read()
        results = loads_json(self.data, self.path)
        self.data = None
        if isinstance(results, dict) and "annotations" in results:
            results = results["annotations"]
        if not isinstance(results, list):
            raise InputError("a COCO results file is a list of {image_id, category_id, bbox, "
                             "score}", path=self.path)
        if gt is not None and errors is not None:
            results = _set_aside_detections(results, gt, self.path, errors, self.iou_type)
        return _results_of(results, self.path, self.iou_type, self.no_literals)

    def close(self) -> None:
        """Stop pieces still running (the caller failed before collecting them)."""
        running, self.running = self.running, None
        close = getattr(running, "close", None)
        if close is not None:
            close()


def _piece_bounds(data: bytes) -> list[tuple[int, int]] | None:
    """``(start, end)`` of each piece's objects in ``data`` (the separating comma left out),
    or None when the file is one piece or not a list."""
    if len(data) <= CHUNK_BYTES:
        return None
    head, tail = data[:4096], data[-4096:]  # (stripping the whole file would copy it)
    start = len(head) - len(head.lstrip())
    end = len(data) - len(tail) + len(tail.rstrip())
    if data[start:start + 1] != b"[" or data[end - 1:end] != b"]":
        return None
    cuts, at = [start + 1], start + 1
    while (found := _BETWEEN_OBJECTS.search(data, at + CHUNK_BYTES)) is not None:
        cuts.append(found.start() + 1)  # a piece ends after "}", the next starts at ","
        at = found.start() + 1
    if len(cuts) == 1:
        return None
    cuts.append(end - 1)
    bounds = [(cuts[0], cuts[1])]
    for a, b in pairwise(cuts[1:]):
        bounds.append((data.index(b",", a) + 1, b))
    return bounds


def _piece(path: str, data: bytes | None, bounds: tuple[int, int], iou_type: str,
           no_literals: bool) -> _Results | None:
    """One piece's objects as arrays (its bytes from ``data``, else read again from the
    local file ``path``); None when it does not parse as a list or holds a bad record, or
    the file no longer holds it (the caller then reads the whole file)."""
    a, b = bounds
    try:
        if data is None:
            with open(path, "rb") as handle:
                handle.seek(a)
                piece = handle.read(b - a)
        else:
            piece = data[a:b]
        results = loads_json(b"[" + piece + b"]", path)
        if not isinstance(results, list):
            return None
        return _results_of(results, path, iou_type, no_literals)
    except (InputError, OSError):
        return None


def _concatenate(parts: list[Boxes]) -> Boxes:
    labels = parts[0].labels
    return Boxes(np.concatenate([p.shape for p in parts]),
                 np.concatenate([p.labels for p in parts]) if isinstance(labels, np.ndarray)
                 else [label for p in parts for label in p.labels],
                 None if parts[0].scores is None else np.concatenate([p.scores for p in parts]),
                 np.concatenate([p.crowd for p in parts]), np.concatenate([p.area for p in parts]))


def _results_of(results: list[Any], path: str, iou_type: str, no_literals: bool) -> _Results:
    """A parsed results list as arrays (an :class:`InputError` naming the first bad record)."""
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
    if iou_type == "bbox":
        boxes = boxes_from_objects(results, path, prediction=True, box_format="xywh",
                                   labels=np.zeros(len(results), np.int64))
    else:
        boxes = _instances(results, path, iou_type, prediction=True, no_literals=no_literals)
    # the parsed objects are not kept: a results file's Python objects are most of the
    # memory a run needs (5,000 images of keypoints: ~1 GB), and everything is in arrays now
    return _Results([], np.array(image, np.int64), np.array(category, np.int64), usable, boxes)


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
    pred_size = None if gt.size is None else gt.image_size[pred.frame]
    return CocoFiles(gt.stems, gt.image_ids, gt.table, pred, gt.names,
                     int(np.count_nonzero(unknown)), gt.size, pred_size, gt.neg,
                     gt.not_exhaustive, gt.frequency)


def _record_problems(objects: list[Any], path: str, iou_type: str, *, prediction: bool,
                     what: str) -> dict[int, InputError]:
    """Every bad object of a COCO file's list (index -> its error), each checked alone as
    the bulk reader would: what ``--on-error skip`` sets aside."""
    if iou_type == "bbox":
        return object_problems(objects, path, prediction=prediction, box_format="xywh",
                               where=what, labelled=False)
    problems = {}
    for index, item in enumerate(objects):
        try:
            _instances([item], path, iou_type, prediction=prediction)
        except InputError as exc:
            problems[index] = InputError(str(exc).replace(f"{what} 0", f"{what} {index}", 1),
                                         path=path)
    return problems


def _set_aside_annotations(anns: list[Any], stems: list[str], image_index: dict[int, int],
                           category_index: dict[int, int], path: str, errors: list[PairError],
                           iou_type: str) -> tuple[list[Any], set[int]]:
    """``--on-error skip``: every bad annotation listed in ``errors``; the annotations left,
    and the ids of the images a bad one belongs to (left out: their GT is incomplete)."""
    problems = _record_problems(anns, path, iou_type, prediction=False, what="annotation")
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


def _set_aside_detections(results: list[Any], gt: _Gt, path: str, errors: list[PairError],
                          iou_type: str) -> list[Any]:
    """``--on-error skip``: every bad detection listed in ``errors``; the detections left
    (none of an image that had a bad one: it is scored as predicting nothing)."""
    image_index = {int(image_id): i for i, image_id in enumerate(gt.image_ids.tolist())}
    problems = _record_problems(results, path, iou_type, prediction=True, what="detection")
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
    return BoxTable(image[order], label[order], boxes.shape[order], boxes.crowd[order],
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
