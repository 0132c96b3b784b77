"""Hostile values given to ``Evaluator.update`` (issue 39 #10): every task's update runs its
file readers' checks on what it is given — wrong types, shapes and dtypes, NaN and infinity,
numpy subclasses, tensor-likes, values placed anywhere in a per-stem structure — and a value
a file could not hold is one :class:`~rpx_cli.errors.InputError` at ``update`` naming the key
(``pred/<key>`` or ``gt/<key>``), never an AttributeError/TypeError/IndexError/KeyError
there or later in ``report()`` and ``merged()``; worded as the caller gave it (no flag, no
file)."""

from __future__ import annotations

import copy
import re
from typing import Any

import numpy as np
import pytest

from rpx_cli import Evaluator
from rpx_cli.errors import InputError, RpxError

# what a caller of update never used: a flag, a file
CLI_WORDS = re.compile(r"(?<![\w])--|\bfiles?\b")
M = np.zeros((8, 10), np.uint8)
M[2:5, 2:6] = 1
BOX3D = {"translation": [1.0, 2.0, 0.0], "size": [2.0, 4.0, 1.5], "rotation": [1, 0, 0, 0],
         "detection_name": "car"}

# (task, options): a good (pred, gt) in memory
ARRAYS = {
    ("depth", ()): (np.ones((4, 5), np.float32), np.ones((4, 5), np.float32)),
    ("segmentation", ()): (np.zeros((4, 5), np.int64), np.zeros((4, 5), np.int64)),
    ("saliency-mb", ()): (np.zeros((32, 32), np.float32), np.zeros((32, 32), np.float32)),
    ("nvs", ()): (np.zeros((16, 16, 3), np.uint8), np.zeros((16, 16, 3), np.uint8)),
    ("coherence", ()): (np.zeros((8, 8), np.uint8), np.ones((8, 8), np.float32)),
    ("pose", ()): (np.array([1.0, 2, 3, 0, 0, 0, 1]), np.array([1.0, 2, 3, 0, 0, 0, 1])),
    ("sparse-depth", ()): (np.array([[1.0, 1, 2]]), np.array([[1.0, 1, 2]])),
    ("segmentation3d", ()): (np.array([1, 2, 3]), np.array([1, 2, 2])),
    ("tracking", ()): (np.array([[1, 1, 1, 1, 2, 2, 1, -1, -1, -1.0]]),
                       np.array([[1, 1, 1, 1, 2, 2, 1, -1, -1, -1.0]])),
}
DOCUMENTS = {
    ("detection", ()): ([{"bbox": [0, 0, 4, 4], "label": "a", "score": 0.5}],
                        [{"bbox": [0, 0, 4, 5], "label": "a"}]),
    ("detection", (("iou_type", "segm"),)): (
        {"size": [8, 10], "objects": [{"segmentation": M, "label": "a", "score": 0.5}]},
        {"size": [8, 10], "objects": [{"segmentation": [[1, 1, 5, 1, 5, 5]], "label": "a"}]}),
    ("detection", (("iou_type", "keypoints"), ("oks_sigmas", "0.5,0.5"))): (
        [{"keypoints": [1, 2, 2, 3, 4, 2], "label": "a", "score": 0.5}],
        [{"keypoints": [1, 2, 2, 3, 4, 2], "label": "a", "area": 10.0, "bbox": [0, 0, 5, 5]}]),
    ("detection3d", ()): ([{**BOX3D, "detection_score": 0.5}], [BOX3D]),
    ("grounding", ()): ({"boxes": [[0, 0, 2, 2]], "scores": [1.0]},
                        {"text": "a", "boxes": [[0, 0, 2, 2]]}),
    ("keypoints", ()): ({"points0": [[1, 2]], "points1": [[3, 4]]},
                        {"points0": [[1, 2]], "points1": [[3, 5]], "visibility": [1]}),
    ("classification", ()): ({"scores": {"a": 0.2, "b": 0.8}}, {"label": "b"}),
    ("pose", (("form", "json"),)): ({"R": np.eye(3), "t": [0, 0, 1]},
                                    {"quaternion_wxyz": [1, 0, 0, 0], "t": [0, 0, 0]}),
    ("tracking", (("form", "json"),)): (
        {"frames": [{"frame": 1, "objects": [{"id": 1, "bbox": [0, 0, 2, 2]}]}]},
        {"frames": [{"frame": 1, "objects": [{"id": 1, "bbox": [0, 0, 2, 2]}]}]}),
    ("sparse-depth", (("form", "json"),)): ({"coordinates": [[1, 1]], "depths": [2.0]},
                                            {"coordinates": [[1, 1]], "depths": [2.0]}),
    ("panoptic", ()): ({"ids": np.ones((4, 4), np.int64), "segments_info": [{"id": 1, "category_id": 1}]},
                       {"ids": np.ones((4, 4), np.int64), "segments_info": [{"id": 1, "category_id": 1}]}),
}


class Sub(np.ndarray):
    """An ndarray subclass (as np.matrix and memmap are)."""


class FakeTensor:
    """A tensor-like (``.numpy()`` only), as torch's CPU tensors are."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def numpy(self) -> np.ndarray:
        return self.array


class GpuTensor:
    """A tensor-like that refuses to become an array (torch on a GPU)."""

    def __array__(self, dtype=None, copy=None):
        raise TypeError("can't convert cuda:0 device type tensor to numpy")


def array_variants(good: np.ndarray) -> list[tuple[str, Any]]:
    return [
        ("nan", np.full(good.shape, np.nan)), ("inf", np.full(good.shape, np.inf)),
        ("big-endian", good.astype(good.dtype.newbyteorder(">"))),
        ("strided", np.repeat(good, 2, axis=0)[::2]), ("fortran", np.asfortranarray(good)),
        ("float16", good.astype(np.float16)), ("complex", good.astype(complex)),
        ("object", good.astype(object)), ("text", good.astype(str)), ("bool", good.astype(bool)),
        ("uint64-max", np.full(good.shape, np.iinfo(np.uint64).max, np.uint64)),
        ("int64-min", np.full(good.shape, np.iinfo(np.int64).min, np.int64)),
        ("structured", np.zeros(good.shape, dtype=[("a", "f4"), ("b", "i4")])),
        ("masked", np.ma.masked_array(good, mask=np.zeros(good.shape, bool))),
        ("0-d", np.array(good.ravel()[0])), ("empty", good[:0]),
        ("datetime", np.zeros(good.shape, "datetime64[s]")), ("1e308", np.full(good.shape, 1e308)),
        ("transposed", good.T), ("subclass", good.reshape(good.shape[0], -1).view(Sub)),
        ("4-d", np.zeros((2, 2, 2, 2))), ("tensor", FakeTensor(good)), ("gpu", GpuTensor()),
        ("int", 3), ("float-nan", float("nan")), ("none-like", object()), ("bytes", b"\x00\xff"),
        ("dict", {}), ("list", [[None]]), ("set", {1, 2}),
    ]


HOSTILE = [None, "x", -1, float("nan"), np.float32("inf"), [], {}, [None], {"a": []}, True,
           np.array([np.nan]), np.array(["a"]), np.array([1 + 2j]), np.array([[1.0, 2.0]]).view(Sub),
           np.zeros((2, 0)), 10**30, -1e308, b"xx", (1, 2), {1, 2},
           np.array([object()], dtype=object), FakeTensor(np.array([1.0, 2.0])), GpuTensor(),
           np.int64(2**62), np.uint64(2**64 - 1)]


def places(value: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            out += places(item, (*path, index))
    return out


def put(document: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    document = copy.deepcopy(document)
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


def evaluator(task: str, options: tuple) -> Evaluator:
    kwargs = {key: value for key, value in options if key != "form"}
    if task == "panoptic":
        kwargs["categories"] = [{"id": 1, "name": "a", "isthing": 1}]
    return Evaluator(task, **kwargs)


def outcome(task: str, options: tuple, pred: Any, gt: Any) -> RpxError | None:
    """Update, report and merge: None when all work, the RpxError raised otherwise; any other
    exception fails the test, naming where it came from."""
    ev = evaluator(task, options)
    step = "update"
    try:
        ev.update("k", pred, gt)
        step = "report"
        ev.report()
        step = "merged"
        Evaluator.merged([ev.state()]).report()
    except RpxError as exc:
        if step != "update":  # bad values are refused where they are given
            raise AssertionError(f"{task}: refused at {step}, not at update: {exc}") from exc
        return exc
    except Exception as exc:
        raise AssertionError(f"{task}: {type(exc).__name__} at {step}: {exc}") from exc
    return None


def test_the_good_samples_evaluate() -> None:
    for (task, options), (pred, gt) in {**ARRAYS, **DOCUMENTS}.items():
        assert outcome(task, options, pred, gt) is None, task


@pytest.mark.parametrize("case", sorted(ARRAYS), ids=lambda case: case[0])
def test_hostile_arrays(case) -> None:
    task, options = case
    pred, gt = ARRAYS[case]
    for side in ("pred", "gt"):
        for name, value in array_variants(gt if side == "gt" else pred):
            error = outcome(task, options, *((value, gt) if side == "pred" else (pred, value)))
            if error is not None:
                assert isinstance(error, InputError), (name, error)
                assert f"{side}/k" in str(error), (task, name, str(error))
                assert not CLI_WORDS.search(str(error)), (task, name, str(error))


@pytest.mark.parametrize("case", sorted(DOCUMENTS), ids=lambda case: "-".join([case[0], *(
    str(value) for _, value in case[1])]))
def test_hostile_values_anywhere_in_a_structure(case) -> None:
    task, options = case
    pred, gt = DOCUMENTS[case]
    for side, document in (("pred", pred), ("gt", gt)):
        for path in places(document):
            for value in HOSTILE:
                edited = put(document, path, value)
                error = outcome(task, options, *((edited, gt) if side == "pred" else (pred, edited)))
                if error is not None:
                    assert isinstance(error, InputError), (path, value, error)
                    assert f"{side}/k" in str(error), (task, path, value, str(error))
                    assert not CLI_WORDS.search(str(error)), (task, path, value, str(error))


@pytest.mark.parametrize("task, pred, gt, message", [
    ("depth", np.ma.masked_array(np.ones((2, 2))), np.ones((2, 2)), r"pred/k: a masked array"),
    ("depth", GpuTensor(), np.ones((2, 2)), r"pred/k: a GpuTensor that cannot be read as a numpy "
                                            r"array \(can't convert cuda:0.*\.detach\(\)\.cpu\(\)"),
    ("depth", np.ones((2, 2)), np.ones((2, 3)), r"shape"),
    ("detection", [{"bbox": [0, 0, float("nan"), 1], "label": "a", "score": 1.0}], [],
     r"pred/k\.json: object 0"),
    ("detection", [{"bbox": [0, 0, 1, 1], "label": "a", "score": np.float32("nan")}], [],
     r"pred/k\.json: object 0"),
    ("sparse-depth", {"coordinates": np.array([np.nan]), "depths": [1.0]},
     {"coordinates": [[1, 1]], "depths": [2.0]}, r"pred/k\.json: coordinates must be"),
    ("tracking", np.array([[1, 1, 0, 0, -2, 2]]), np.array([[1, 1, 0, 0, 2, 2]]),
     r"pred/k\.txt: row 1: box width and height must be >= 0"),
])
def test_each_refusal_is_one_line_naming_the_key(task, pred, gt, message) -> None:
    with pytest.raises(InputError, match=message) as caught:
        Evaluator(task).update("k", pred, gt)
    assert "\n" not in str(caught.value)
