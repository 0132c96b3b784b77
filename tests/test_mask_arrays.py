"""Binary masks (SPEC §11.4 "Masks in memory", issue 38 #4): ``Evaluator.update`` takes a
detection's ``segmentation`` as a 2-D bool/0-1 array, a tensor-like, or pycocotools' ``encode``
output, scored as the same mask's RLE; in a JSON file (per-stem or COCO results) a list of
rows of 0/1 is refused, never read as polygons (each row a polygon, AP 0, exit 0 before)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rpx_cli import Evaluator
from rpx_cli.errors import InputError
from rpx_cli.io.mask_arrays import mask_runs, rows_shape

H, W = 8, 10


def square() -> np.ndarray:
    mask = np.zeros((H, W), np.uint8)
    mask[2:6, 3:8] = 1
    return mask


def rle_text(mask: np.ndarray) -> dict:
    from pycocotools import mask as coco_mask

    rle = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")}


class FakeTensor:
    """Stands in for a torch tensor (torch is not installed): ``.numpy()`` only."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def numpy(self) -> np.ndarray:
        return self._array


class FakeArrayLike:
    """A jax-like array: ``__array__`` only."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __array__(self, dtype=None, copy=None):
        return self._array if dtype is None else self._array.astype(dtype)


def ap_of(segmentation, gt_mask: np.ndarray | None = None) -> float:
    gt_mask = square() if gt_mask is None else gt_mask
    evaluator = Evaluator("detection", iou_type="segm")
    evaluator.update("img", {"size": [H, W], "objects": [
        {"label": "a", "score": np.float32(0.9), "segmentation": segmentation}]},
        {"size": [H, W], "objects": [{"label": "a", "segmentation": rle_text(gt_mask)}]})
    return evaluator.report()["dataset"]["coco"]["AP"]


def test_mask_runs_are_pycocotools_encode() -> None:
    from pycocotools import mask as coco_mask

    rng = np.random.default_rng(3)
    for shape in ((1, 1), (3, 7), (16, 5)):
        for mask in (rng.random(shape) < 0.5, np.ones(shape, bool), np.zeros(shape, bool)):
            runs = mask_runs(mask, "object 0", "x")
            assert runs["size"] == list(shape) and sum(runs["counts"]) == mask.size
            assert coco_mask.frPyObjects(runs, *shape)["counts"] == \
                coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))["counts"]


@pytest.mark.parametrize("form", ["uint8", "bool", "int64", "tensor", "array-like", "pycocotools"])
def test_a_mask_in_memory_scores_as_its_rle(form) -> None:
    from pycocotools import mask as coco_mask

    mask = square()
    value = {"uint8": mask, "bool": mask.astype(bool), "int64": mask.astype(np.int64),
             "tensor": FakeTensor(mask.astype(bool)), "array-like": FakeArrayLike(mask),
             "pycocotools": coco_mask.encode(np.asfortranarray(mask))}[form]
    assert ap_of(rle_text(mask)) > 0.99  # the reference: the same mask as RLE text
    assert ap_of(value) == ap_of(rle_text(mask))
    shifted = np.roll(mask, 3, axis=1)
    assert ap_of(shifted) == ap_of(rle_text(shifted)) < 0.5


@pytest.mark.parametrize("value, message", [
    (np.full((H, W), 0.7), "bool or integers 0 and 1, got float64"),
    (np.full((H, W), 2, np.uint8), "0 and 1 only"),
    (np.zeros((2, H, W), bool), "2-D"),
    (np.zeros((0, W), bool), "2-D"),
    (square().tolist(), "looks like a binary mask (8 rows of 10 values"),
])
def test_a_bad_mask_in_memory_is_an_input_error_naming_the_key(value, message) -> None:
    with pytest.raises(InputError, match=r"pred/img\.json: object 0: .*" + message.replace("(", r"\(")):
        ap_of(value)


def test_rows_are_told_from_polygons() -> None:
    assert rows_shape(square().tolist()) == (H, W)
    assert rows_shape([[True, False, True]]) == (1, 3)
    assert rows_shape([[0, 0, 1, 0, 1, 1], [0, 1, 1, 1]]) is None  # lengths differ
    assert rows_shape([[10, 10, 20, 10, 20, 20]]) is None  # a polygon
    assert rows_shape([[0, 0, 1, 0, 1, 1, 0, 2.5]]) is None
    assert rows_shape([]) is None and rows_shape([[]]) is None


def test_rows_in_a_json_file_are_refused_naming_the_file_and_object(rpx, tmp_path: Path) -> None:
    mask = square()
    (tmp_path / "p").mkdir()
    (tmp_path / "g").mkdir()
    (tmp_path / "p/a.json").write_text(json.dumps({"size": [H, W], "objects": [
        {"label": "a", "score": 0.9, "segmentation": [[10, 10, 20, 10, 20, 20]]},
        {"label": "a", "score": 0.8, "segmentation": mask.tolist()}]}))
    (tmp_path / "g/a.json").write_text(json.dumps({"size": [H, W], "objects": [
        {"label": "a", "segmentation": rle_text(mask)}]}))
    run = rpx(["eval", "detection", "--iou-type", "segm", "--pred-dir", tmp_path / "p",
               "--gt-dir", tmp_path / "g"])
    assert run.exit_code == 1 and not run.stdout
    assert "a.json: object 1: 'segmentation' looks like a binary mask (8 rows of 10 values" in run.stderr
    assert "write RLE" in run.stderr
    gt = {"images": [{"id": 1, "width": W, "height": H, "file_name": "a.png"}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 20,
                           "bbox": [3, 2, 5, 4], "segmentation": rle_text(mask)}]}
    results = [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": mask.astype(bool).tolist()}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    run = rpx(["eval", "detection", "--iou-type", "segm", "--coco-gt", tmp_path / "gt.json",
               "--coco-dt", tmp_path / "dt.json"])
    assert run.exit_code == 1 and not run.stdout
    assert "dt.json: detection 0: 'segmentation' looks like a binary mask" in run.stderr
