"""``rpx_cli.ops.coco`` against pycocotools, array for array.

The summary figures are compared in test_detection.py; here the whole ``precision`` (T, R,
K, A, M) and ``recall`` (T, K, A, M) arrays of ``COCOeval.accumulate`` must be *equal*
(not close) on data built to reach every branch of the vectorised matcher: groups where
one detection can match one GT (the closed form), groups where detections compete for
overlapping GTs (the round-by-round walk), crowd regions, GT areas that differ from the
box, every area range, more than 100 detections in a group, and tied scores.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from rpx_cli.ops.coco import CocoInput, evaluate


def dataset(seed: int, n_images: int = 12, n_categories: int = 3, crowded: bool = False):
    """COCO dicts with clusters of overlapping GT (contested matches) and isolated GT."""
    rng = np.random.default_rng(seed)
    anns, dets = [], []
    for image_id in range(1, n_images + 1):
        for _ in range(int(rng.integers(0, 7))):
            k = int(rng.integers(1, n_categories + 1))
            x, y = rng.uniform(0, 400, 2)
            size = float(rng.choice([12.0, 50.0, 150.0]))  # small, medium, large
            w, h = size * rng.uniform(0.6, 1.4, 2)
            copies = int(rng.integers(1, 4))  # 2-3 overlapping GTs: a contested group
            for c in range(copies):
                box = [x + c * w * 0.15, y + c * h * 0.1, w, h]
                area = w * h * float(rng.choice([1.0, 1.0, 0.5, 3.0]))  # the given area rules
                anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": k,
                             "bbox": box, "area": area, "iscrowd": int(rng.random() < 0.1)})
                for _ in range(int(rng.integers(0, 4))):
                    j = rng.normal(0, 0.12, 4) * [w, h, w, h]
                    dets.append({"image_id": image_id, "category_id": k,
                                 "bbox": [x + j[0], y + j[1], max(1.0, w + j[2]), max(1.0, h + j[3])],
                                 "score": round(float(rng.random()), 1)})  # ties
        for _ in range(int(rng.integers(0, 6))):
            x, y = rng.uniform(0, 400, 2)
            dets.append({"image_id": image_id, "category_id": int(rng.integers(1, n_categories + 1)),
                         "bbox": [x, y, float(rng.uniform(5, 120)), float(rng.uniform(5, 120))],
                         "score": round(float(rng.random()), 2)})
    if crowded:  # one group with 130 detections: maxDets 100 cuts it
        anns.append({"id": len(anns) + 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 60, 60],
                     "area": 3600.0, "iscrowd": 0})
        for i in range(130):
            dets.append({"image_id": 1, "category_id": 1,
                         "bbox": [10 + rng.normal(0, 4), 10 + rng.normal(0, 4), 60, 60],
                         "score": round(float(rng.random()), 2) if i % 3 else 0.5})
    images = [{"id": i} for i in range(1, n_images + 1)]
    categories = [{"id": k} for k in range(1, n_categories + 1)]
    return {"images": images, "annotations": anns, "categories": categories}, dets


def pycocotools_arrays(gt: dict, dets: list[dict]):
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = gt
        coco.createIndex()
        evaluator = COCOeval(coco, coco.loadRes(dets), "bbox")
        evaluator.evaluate()
        evaluator.accumulate()
    return evaluator.eval["precision"], evaluator.eval["recall"]


def rpx_arrays(gt: dict, dets: list[dict]):
    anns = gt["annotations"]
    result = evaluate(CocoInput(
        len(gt["images"]), len(gt["categories"]),
        np.array([a["image_id"] - 1 for a in anns], np.int64),
        np.array([a["category_id"] - 1 for a in anns], np.int64),
        np.array([a["bbox"] for a in anns], np.float64).reshape(-1, 4),
        np.array([a["area"] for a in anns], np.float64),
        np.array([a["iscrowd"] for a in anns], bool),
        np.array([d["image_id"] - 1 for d in dets], np.int64),
        np.array([d["category_id"] - 1 for d in dets], np.int64),
        np.array([d["bbox"] for d in dets], np.float64).reshape(-1, 4),
        np.array([d["score"] for d in dets], np.float64)))
    return result.precision, result.recall


@pytest.mark.parametrize("seed", range(20))
def test_precision_and_recall_arrays_equal_pycocotools(seed: int) -> None:
    gt, dets = dataset(seed, crowded=seed % 4 == 0)
    expected_p, expected_r = pycocotools_arrays(gt, dets)
    precision, recall = rpx_arrays(gt, dets)
    assert np.array_equal(precision, expected_p)
    assert np.array_equal(recall, expected_r)


def test_empty_inputs() -> None:
    gt = {"images": [{"id": 1}], "categories": [{"id": 1}, {"id": 2}], "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100.0, "iscrowd": 0}]}
    precision, recall = rpx_arrays(gt, [])
    small = [0, 1]  # area ranges "all" and "small" hold the 10 x 10 box
    assert (precision[:, :, 0, small] == 0).all() and (recall[:, 0, small] == 0).all()
    assert (precision[:, :, 0, 2:] == -1).all()  # no GT in the range: undefined
    assert (precision[:, :, 1] == -1).all() and (recall[:, 1] == -1).all()  # no GT: undefined
