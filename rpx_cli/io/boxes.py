"""Detection boxes: per-stem JSON files and COCO files.

Per-stem JSON, either a list of objects ``[{"bbox": [...], "label": "cup", "score": 0.9,
"iscrowd": 0}, ...]`` or columns ``{"boxes": [[...]], "labels": [...], "scores": [...],
"iscrowd": [...]}``. Boxes are ``[x1, y1, x2, y2]`` (``box_format="xyxy"``) or
``[x, y, w, h]``; labels are strings or integers (compared as their decimal string);
predictions need a score in [0, 1]; GT may carry ``iscrowd`` and ``area``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rpx_cli.errors import InputError


@dataclass
class Boxes:
    """Boxes of one image, ``[x, y, w, h]`` float64, labels as strings."""

    box: np.ndarray  # (N, 4) xywh
    labels: list[str]
    scores: np.ndarray | None  # (N,) for predictions
    crowd: np.ndarray  # (N,) bool
    area: np.ndarray  # (N,) float64: the given area, else w * h

    @classmethod
    def empty(cls, with_scores: bool) -> Boxes:
        return cls(np.zeros((0, 4)), [], np.zeros(0) if with_scores else None, np.zeros(0, bool),
                   np.zeros(0))

    def __len__(self) -> int:
        return len(self.labels)

    def select(self, keep: np.ndarray) -> Boxes:
        labels = [label for label, k in zip(self.labels, keep, strict=True) if k]
        return Boxes(self.box[keep], labels, None if self.scores is None else self.scores[keep],
                     self.crowd[keep], self.area[keep])

    def as_json(self) -> dict[str, Any]:
        out = {"box": self.box.tolist(), "labels": self.labels, "crowd": self.crowd.tolist(),
               "area": self.area.tolist()}
        if self.scores is not None:
            out["scores"] = self.scores.tolist()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Boxes:
        scores = data.get("scores")
        return cls(np.asarray(data["box"], np.float64).reshape(-1, 4), list(data["labels"]),
                   None if scores is None else np.asarray(scores, np.float64),
                   np.asarray(data["crowd"], bool), np.asarray(data["area"], np.float64))


def label_text(value: Any, where: str, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{where}: label must be a string or an integer, got {value!r}", path=path)
    return str(value)


def parse_boxes(data: bytes, path: str, *, prediction: bool, box_format: str) -> Boxes:
    """Parse and validate one per-stem JSON file."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from None
    if isinstance(document, dict) and ("boxes" in document or "labels" in document):
        objects = _columns(document, path)
    elif isinstance(document, list):
        objects = document
    else:
        raise InputError('expected a list of {"bbox", "label", "score"} objects or '
                         '{"boxes", "labels", "scores"}', path=path)
    return boxes_from_objects(objects, path, prediction=prediction, box_format=box_format)


def boxes_from_objects(objects: list[Any], path: str, *, prediction: bool, box_format: str,
                       labels: np.ndarray | None = None) -> Boxes:
    """Validate box objects with numpy; the per-object walk below only runs to word the
    error message when something is wrong. ``labels``: category indices given instead of
    each object's ``label`` (COCO files; kept as integers in ``Boxes.labels``)."""
    fast = _fast(objects, prediction, box_format, labels)
    if fast is not None:
        return fast
    if labels is not None:
        objects = [{**item, "label": int(code)} for item, code in zip(objects, labels, strict=True)]
        checked = _checked(objects, path, prediction, box_format)
        checked.labels = [int(label) for label in checked.labels]
        return checked
    return _checked(objects, path, prediction, box_format)


def _fast(objects: list[Any], prediction: bool, box_format: str,
          codes: np.ndarray | None = None) -> Boxes | None:
    if not objects:
        return Boxes.empty(prediction)
    try:
        if any(type(item) is not dict for item in objects):
            return None
        box = np.asarray([item["bbox"] for item in objects], dtype=np.float64)
        raw_labels = codes.tolist() if codes is not None else [item["label"] for item in objects]
        scores = np.asarray([item["score"] for item in objects], dtype=np.float64) \
            if prediction else None
        crowd = np.asarray([item.get("iscrowd", 0) for item in objects], dtype=bool)
        given = [item.get("area") for item in objects]
    except (KeyError, TypeError, ValueError):
        return None
    if box.shape != (len(objects), 4) or not np.isfinite(box).all():
        return None
    if any(type(label) not in (str, int) for label in raw_labels):
        return None
    if scores is not None and not (np.isfinite(scores).all() and (scores >= 0).all()
                                   and (scores <= 1).all()):
        return None
    if box_format == "xyxy":
        box[:, 2] -= box[:, 0]
        box[:, 3] -= box[:, 1]
    if (box[:, 2:] < 0).any():
        return None
    if any(value is not None for value in given):
        if any(value is not None and type(value) not in (int, float) for value in given):
            return None
        area = np.array([box[i, 2] * box[i, 3] if v is None else float(v)
                         for i, v in enumerate(given)], dtype=np.float64)
    else:
        area = box[:, 2] * box[:, 3]
    labels = raw_labels if codes is not None else [str(label) for label in raw_labels]
    return Boxes(box, labels, scores, crowd, area)


def _checked(objects: list[Any], path: str, prediction: bool, box_format: str) -> Boxes:
    boxes, labels, scores, crowd, area = [], [], [], [], []
    for index, item in enumerate(objects):
        where = f"object {index}"
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected an object", path=path)
        if "bbox" not in item:
            raise InputError(f"{where}: missing 'bbox'", path=path)
        box = item["bbox"]
        if not (isinstance(box, (list, tuple)) and len(box) == 4 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in box)):
            raise InputError(f"{where}: 'bbox' must be four finite numbers, got {box!r}", path=path)
        x1, y1, a, b = (float(v) for v in box)
        w, h = (a - x1, b - y1) if box_format == "xyxy" else (a, b)
        if w < 0 or h < 0:
            what = "x2 < x1 or y2 < y1" if box_format == "xyxy" else "negative width or height"
            raise InputError(f"{where}: {what} in 'bbox' {box!r}", path=path)
        if "label" not in item:
            raise InputError(f"{where}: missing 'label'", path=path)
        labels.append(label_text(item["label"], where, path))
        if prediction:
            score = item.get("score")
            if score is None:
                raise InputError(f"{where}: a prediction needs a 'score'", path=path)
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
                raise InputError(f"{where}: 'score' must be a number in [0, 1], got {score!r}",
                                 path=path)
            scores.append(float(score))
        boxes.append((x1, y1, w, h))
        crowd.append(bool(item.get("iscrowd", 0)))
        given = item.get("area")
        area.append(float(given) if isinstance(given, (int, float)) and not isinstance(given, bool)
                    else w * h)
    return Boxes(np.asarray(boxes, np.float64).reshape(-1, 4), labels,
                 np.asarray(scores, np.float64) if prediction else None,
                 np.asarray(crowd, bool), np.asarray(area, np.float64))


def _columns(document: dict[str, Any], path: str) -> list[dict[str, Any]]:
    boxes = document.get("boxes")
    labels = document.get("labels")
    if not isinstance(boxes, list) or not isinstance(labels, list):
        raise InputError("'boxes' and 'labels' must be lists", path=path)
    n = len(boxes)
    for key in ("labels", "scores", "iscrowd", "areas"):
        if key in document and (not isinstance(document[key], list) or len(document[key]) != n):
            raise InputError(f"'{key}' must be a list as long as 'boxes' ({n})", path=path)
    objects = []
    for i in range(n):
        item = {"bbox": boxes[i], "label": labels[i]}
        if "scores" in document:
            item["score"] = document["scores"][i]
        if "iscrowd" in document:
            item["iscrowd"] = document["iscrowd"][i]
        if "areas" in document:
            item["area"] = document["areas"][i]
        objects.append(item)
    return objects


def load_class_map(path: str) -> dict[str, str | None]:
    """JSON object: raw label -> evaluated label, or null to drop the label."""
    try:
        with open(path, encoding="utf-8") as handle:
            mapping = json.load(handle)
    except OSError as exc:
        raise InputError(f"cannot read the class map: {exc.strerror or exc}", path=path) from None
    except ValueError as exc:
        raise InputError(f"class map: not valid JSON ({exc})", path=path) from None
    if not isinstance(mapping, dict):
        raise InputError("class map must be a JSON object {raw label: label or null}", path=path)
    out = {}
    for key, value in mapping.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
            raise InputError(f"class map: {key!r} maps to {value!r}; expected a label or null",
                             path=path)
        out[str(key)] = None if value is None else str(value)
    return out


def apply_class_map(boxes: Boxes, mapping: dict[str, str | None] | None) -> Boxes:
    """Rename labels; drop those mapped to null (labels not in the map are kept)."""
    if not mapping:
        return boxes
    renamed = [mapping.get(label, label) for label in boxes.labels]
    keep = np.array([label is not None for label in renamed], bool)
    kept = boxes.select(keep) if not keep.all() else boxes
    kept.labels = [label for label in renamed if label is not None]
    return kept


@dataclass
class CocoFiles:
    """A COCO GT file and a results file, as per-image Boxes in image id order."""

    stems: list[str]
    image_ids: list[int]
    gt: list[Boxes]
    pred: list[Boxes]
    categories: list[str]  # category names in category id order
    n_unknown_category: int


def load_coco(gt_path: str, dt_path: str) -> CocoFiles:
    """Read ``instances.json`` and a results list; stems come from ``file_name``.

    Fields are gathered into flat arrays in one pass and validated with numpy once (the
    per-object checks run only to word an error), then split per image."""
    gt = _read_json(gt_path)
    if not isinstance(gt, dict) or not isinstance(gt.get("images"), list) or \
            not isinstance(gt.get("annotations"), list) or not isinstance(gt.get("categories"), list):
        raise InputError("a COCO GT file needs 'images', 'annotations' and 'categories' lists",
                         path=gt_path)
    results = _read_json(dt_path)
    if isinstance(results, dict) and "annotations" in results:
        results = results["annotations"]
    if not isinstance(results, list):
        raise InputError("a COCO results file is a list of {image_id, category_id, bbox, score}",
                         path=dt_path)
    try:
        images = sorted(gt["images"], key=lambda image: image["id"])
        categories = sorted(gt["categories"], key=lambda c: c["id"])
        names = [str(c.get("name", c["id"])) for c in categories]
        category_index = {c["id"]: k for k, c in enumerate(categories)}
    except (KeyError, TypeError, AttributeError):
        raise InputError("every image and category needs an 'id'", path=gt_path) from None
    image_index = {image["id"]: i for i, image in enumerate(images)}
    stems = [str(image.get("file_name", image["id"])).rsplit(".", 1)[0] for image in images]
    anns = gt["annotations"]
    try:
        g_image = np.array([image_index[a["image_id"]] for a in anns], np.int64)
        g_cat = np.array([category_index[a["category_id"]] for a in anns], np.int64)
    except (KeyError, TypeError):
        _explain_annotation(anns, image_index, category_index, gt_path)
    try:
        d_image = np.array([image_index[d["image_id"]] for d in results], np.int64)
    except (KeyError, TypeError):
        _explain_detection(results, image_index, dt_path, gt_path)
    d_cat_raw = [category_index.get(d.get("category_id"), -1) for d in results]
    d_cat = np.array(d_cat_raw, np.int64)
    known = d_cat >= 0  # pycocotools evaluates only the GT's categories
    gt_boxes = boxes_from_objects(anns, gt_path, prediction=False, box_format="xywh",
                                  labels=g_cat)
    results_known = [d for d, k in zip(results, known, strict=True) if k] if not known.all() \
        else results
    dt_boxes = boxes_from_objects(results_known, dt_path, prediction=True, box_format="xywh",
                                  labels=d_cat[known])
    label_names = np.array(names, dtype=object)
    return CocoFiles(stems, [image["id"] for image in images],
                     _split(gt_boxes, g_image, len(images), label_names),
                     _split(dt_boxes, d_image[known], len(images), label_names),
                     names, int(np.count_nonzero(~known)))


def _split(boxes: Boxes, image: np.ndarray, n_images: int, names: np.ndarray) -> list[Boxes]:
    """Per-image Boxes, in input order within each image; labels from category indices."""
    order = np.argsort(image, kind="stable")
    bounds = np.searchsorted(image[order], np.arange(n_images + 1))
    codes = np.asarray(boxes.labels, np.int64)
    out = []
    for i in range(n_images):
        take = order[bounds[i]:bounds[i + 1]]
        out.append(Boxes(boxes.box[take], names[codes[take]].tolist(),
                         None if boxes.scores is None else boxes.scores[take],
                         boxes.crowd[take], boxes.area[take]))
    return out


def _explain_annotation(anns, image_index, category_index, path) -> None:
    for n, ann in enumerate(anns):
        if not isinstance(ann, dict):
            raise InputError(f"annotation {n}: expected an object", path=path)
        if ann.get("image_id") not in image_index:
            raise InputError(f"annotation {n}: image_id {ann.get('image_id')!r} is not an image "
                             "of this file", path=path)
        if ann.get("category_id") not in category_index:
            raise InputError(f"annotation {n}: category_id {ann.get('category_id')!r} is not a "
                             "category of this file", path=path)
    raise InputError("malformed annotations", path=path)


def _explain_detection(results, image_index, path, gt_path) -> None:
    for n, det in enumerate(results):
        if not isinstance(det, dict):
            raise InputError(f"detection {n}: expected an object", path=path)
        if det.get("image_id") not in image_index:
            raise InputError(f"detection {n}: image_id {det.get('image_id')!r} is not in the GT "
                             f"file {gt_path}", path=path)
    raise InputError("malformed detections", path=path)


def _read_json(path: str) -> Any:
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read())
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    except ValueError as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from None
