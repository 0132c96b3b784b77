"""COCO files written from per-image objects (``rpx convert --to coco``): an instances file
(``images`` with ``id``, ``file_name`` = stem + ``.jpg`` unless the image is known,
``width``/``height`` when known; ``annotations`` with ``id`` from 1, ``bbox`` ``[x, y, w,
h]``, ``area``, ``iscrowd``, ``ignore`` for ignored GT, and the kind's field —
``segmentation`` as compressed RLE, ``keypoints`` with ``num_keypoints``; ``categories``
numbered 1..K in the vocabulary's order) and a results list (``image_id``,
``category_id``, ``bbox`` or the kind's field, ``score``). Written atomically."""

from __future__ import annotations

import json
from typing import Any

from rpx_cli.io.atomic_files import write_atomic

ANNOTATION_KEYS = ("bbox", "area", "segmentation", "keypoints", "num_keypoints")


def write_json(path: str, document: Any) -> None:
    """``document`` as compact JSON at ``path`` (temporary file + rename)."""
    data = json.dumps(document, separators=(",", ":"), allow_nan=False).encode()
    write_atomic(path, data, suffix=".json")


def coco_documents(images: list[dict[str, Any]], vocabulary: list[str],
                   gt: list[list[dict[str, Any]]], pred: list[list[dict[str, Any]]]
                   ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The instances document and the results list: ``images[i]`` (``file_name``,
    ``width``?, ``height``?) holds the objects ``gt[i]`` and ``pred[i]``, each a dict of
    ``label`` and the COCO fields (``score`` on predictions)."""
    category = {name: k + 1 for k, name in enumerate(vocabulary)}
    instances: dict[str, Any] = {
        "images": [{"id": i + 1, **image} for i, image in enumerate(images)],
        "annotations": [],
        "categories": [{"id": k + 1, "name": name} for k, name in enumerate(vocabulary)],
    }
    results = []
    for i, objects in enumerate(gt):
        for item in objects:
            instances["annotations"].append({
                "id": len(instances["annotations"]) + 1, "image_id": i + 1,
                "category_id": category[item["label"]],
                **{key: item[key] for key in (*ANNOTATION_KEYS, "iscrowd", "ignore") if key in item}})
    for i, objects in enumerate(pred):
        for item in objects:
            results.append({"image_id": i + 1, "category_id": category[item["label"]],
                            **{key: item[key] for key in ANNOTATION_KEYS if key in item},
                            "score": item["score"]})
    return instances, results
