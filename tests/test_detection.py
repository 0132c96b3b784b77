"""``rpx eval detection``: hand-computed cases, pycocotools equality, invariants, errors."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import box, dirs, generated_detections, write_json_pair
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from rpx_cli.ops.reduce import prf

# --- hand-computed ------------------------------------------------------------------------


def test_rows_reference_case(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", [box("a", [0, 0, 10, 10]), box("a", [20, 20, 30, 30])],
                    [box("a", [0, 0, 10, 10], 0.9), box("a", [1, 1, 11, 11], 0.95),
                     box("a", [20, 20, 30, 30], 0.5)])
    report = rpx(f"eval detection {dirs(tmp_path)}").json
    row = report["rows"][0]
    assert (row["tp"], row["fp"], row["fn"]) == (2, 1, 0)
    assert row["precision"] == 2 / 3 and row["recall"] == 1.0 and row["f1"] == pytest.approx(0.8)
    # Aquarium: the optimal one-to-one matching pairs the exact boxes; the 0.95 box is background
    assert report["dataset"]["confusion"]["matrix"] == [[2, 0], [1, 0]]


def test_empty_cases_and_operating_point_conventions() -> None:
    assert prf(0, 0, 0) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}  # both empty
    assert prf(0, 3, 0) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}  # predictions, no GT
    assert prf(0, 0, 2) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}  # GT, no predictions


def test_conf_threshold_is_inclusive_and_coco_ignores_it(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", [box("a", [0, 0, 10, 10])],
                    [box("a", [0, 0, 10, 10], 0.5), box("a", [50, 50, 60, 60], 0.49)])
    report = rpx(f"eval detection {dirs(tmp_path)} --conf-threshold 0.5").json
    row = report["rows"][0]
    assert (row["tp"], row["fp"], row["n_pred"]) == (1, 0, 1)  # 0.5 kept, 0.49 dropped
    unthresholded = rpx(f"eval detection {dirs(tmp_path)}").json
    assert report["dataset"]["coco"] == unthresholded["dataset"]["coco"]


def test_iou_threshold_is_inclusive(rpx, tmp_path: Path) -> None:
    # IoU of [0,0,10,10] and [0,0,10,5] is exactly 0.5
    write_json_pair(tmp_path, "a", [box("a", [0, 0, 10, 10])], [box("a", [0, 0, 10, 5], 0.9)])
    assert rpx(f"eval detection {dirs(tmp_path)}").json["rows"][0]["tp"] == 1
    assert rpx(f"eval detection {dirs(tmp_path)} --iou-threshold 0.51").json["rows"][0]["tp"] == 0


def test_labels_are_class_aware_and_ints_match_strings(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", [box(1, [0, 0, 10, 10]), box("cat", [20, 20, 30, 30])],
                    [box("1", [0, 0, 10, 10], 0.9), box("dog", [20, 20, 30, 30], 0.8)])
    report = rpx(f"eval detection {dirs(tmp_path)}").json
    row = report["rows"][0]
    assert (row["tp"], row["fp"], row["fn"]) == (1, 1, 1)
    confusion = report["dataset"]["confusion"]
    assert confusion["labels"] == ["1", "cat", "dog", "background"]
    assert confusion["matrix"][1][2] == 1  # the cat was detected as a dog (class-agnostic)


def test_crowd_regions_are_ignored_in_every_view(rpx, tmp_path: Path) -> None:
    gt = [box("p", [0, 0, 10, 10]), box("p", [100, 100, 200, 200], iscrowd=1)]
    pred = [box("p", [0, 0, 10, 10], 0.9), box("p", [120, 120, 140, 140], 0.8),
            box("p", [300, 300, 310, 310], 0.7)]
    write_json_pair(tmp_path, "a", gt, pred)
    report = rpx(f"eval detection {dirs(tmp_path)}").json
    row = report["rows"][0]
    assert (row["tp"], row["fp"], row["fn"], row["n_gt"]) == (1, 1, 0, 1)  # the crowd box: ignored
    assert report["dataset"]["confusion"]["matrix"] == [[1, 0], [1, 0]]
    reference, _ = pycoco([("a", gt, pred)])
    assert report["dataset"]["coco"]["AP"] == pytest.approx(reference["AP"], abs=1e-12)


def test_skip_empty_gt(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", [box("a", [0, 0, 10, 10])], [box("a", [0, 0, 10, 10], 0.9)])
    write_json_pair(tmp_path, "b", [], [box("a", [0, 0, 10, 10], 0.9)])  # a labelled empty frame
    counted = rpx(f"eval detection {dirs(tmp_path)}").json
    assert counted["rows"][1]["fp"] == 1 and counted["dataset"]["pooled"]["precision"] == 0.5
    assert counted["dataset"]["confusion"]["matrix"] == [[1, 0], [1, 0]]
    skipped = rpx(f"eval detection {dirs(tmp_path)} --skip-empty-gt").json
    assert skipped["rows"][1]["precision"] is None and skipped["aggregate"]["n_skipped"] == 1
    assert skipped["dataset"]["pooled"]["precision"] == 1.0
    assert skipped["dataset"]["confusion"]["matrix"] == [[1, 0], [0, 0]]
    assert skipped["dataset"]["coco"] == counted["dataset"]["coco"]  # COCO always counts them


def test_class_map_renames_and_drops(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", [box("car", [0, 0, 10, 10]), box("tree", [20, 20, 30, 30])],
                    [box("automobile", [0, 0, 10, 10], 0.9), box("tree", [20, 20, 30, 30], 0.9)])
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"automobile": "car", "tree": None}))
    report = rpx(f"eval detection {dirs(tmp_path)} --class-map {mapping}").json
    assert report["rows"][0]["tp"] == 1 and report["rows"][0]["n_gt"] == 1
    assert report["params"]["class_map"] == {"automobile": "car", "tree": None}
    assert list(report["dataset"]["coco"]["per_class"]) == ["car"]


def test_xywh_boxes_and_column_layout(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", {"boxes": [[0, 0, 10, 10]], "labels": ["a"]},
                    {"boxes": [[0, 0, 10, 10]], "labels": ["a"], "scores": [0.9]})
    assert rpx(f"eval detection {dirs(tmp_path)} --box-format xywh").json["rows"][0]["tp"] == 1


def test_perfect_prediction(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for stem in ("a", "b", "c"):
        objects = [box(str(rng.integers(3)), [x, y, x + w, y + h])
                   for x, y, w, h in rng.uniform(1, 100, (6, 4)).tolist()]
        write_json_pair(tmp_path, stem, objects, [{**o, "score": 0.9} for o in objects])
    report = rpx(f"eval detection {dirs(tmp_path)}").json
    assert report["dataset"]["coco"]["AP"] == 1.0 and report["dataset"]["coco"]["AR100"] == 1.0
    matrix = np.array(report["dataset"]["confusion"]["matrix"])
    assert (matrix == np.diag(np.diag(matrix))).all() and matrix[-1, -1] == 0  # identity
    assert report["dataset"]["pooled"]["f1"] == 1.0


@pytest.mark.parametrize(("objects", "message"), [
    ([{"label": "a", "score": 0.5}], "missing 'bbox'"),
    ([box("a", [0, 0, float("nan"), 1], 0.5)], "four finite numbers"),
    ([box("a", [10, 0, 5, 5], 0.5)], "x2 < x1"),
    ([box("a", [0, 0, 5, 5], 1e13)], "finite number within"),
    ([box("a", [0, 0, 5, 5], float("nan"))], "finite number within"),
    ([box("a", [0, 0, 5, 5])], "needs a 'score'"),
    ([box(["a"], [0, 0, 5, 5], 0.5)], "label must be a string or an integer"),
    ({"nope": 1}, "expected a list"),
])
def test_bad_prediction_files(rpx, tmp_path: Path, objects, message: str) -> None:
    write_json_pair(tmp_path, "a", [box("a", [0, 0, 5, 5])], objects)
    run = rpx(f"eval detection {dirs(tmp_path)}")
    assert run.exit_code == 1 and message in run.stderr and "pred/a.json" in run.stderr


# --- against pycocotools ------------------------------------------------------------------


def pycoco(frames, categories=None):
    """pycocotools on per-stem frames (images 1..N in stem order, xyxy boxes)."""
    labels = categories or sorted({o["label"] for _, gt, pred in frames for o in gt + pred},
                                  key=str)
    cat = {label: i + 1 for i, label in enumerate(labels)}
    images, anns, dets = [], [], []
    for image_id, (stem, gt, pred) in enumerate(sorted(frames, key=lambda f: f[0]), start=1):
        images.append({"id": image_id, "file_name": f"{stem}.jpg"})
        for o in gt:
            x1, y1, x2, y2 = o["bbox"]
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": cat[o["label"]],
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "iscrowd": o.get("iscrowd", 0),
                         "area": o.get("area", (x2 - x1) * (y2 - y1))})
        for o in pred:
            x1, y1, x2, y2 = o["bbox"]
            dets.append({"image_id": image_id, "category_id": cat[o["label"]],
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "score": o["score"]})
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = {"images": images, "annotations": anns,
                        "categories": [{"id": i, "name": str(n)} for n, i in cat.items()]}
        coco.createIndex()
        evaluator = COCOeval(coco, coco.loadRes(dets) if dets else COCO(), "bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    names = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]
    out = {name: (None if value == -1 else value) for name, value in zip(names, evaluator.stats,
                                                                          strict=True)}
    precision = evaluator.eval["precision"]
    for k, label in enumerate(labels):
        values = precision[:, :, k, 0, 2]
        out[f"class:{label}"] = float(values[values > -1].mean()) if (values > -1).any() else None
    return out, (images, anns, dets, cat)


@pytest.mark.parametrize("seed", range(6))
def test_coco_equals_pycocotools_per_stem_and_coco_files(rpx, tmp_path: Path, seed: int) -> None:
    frames = generated_detections(seed)
    for stem, gt, pred in frames:
        write_json_pair(tmp_path, stem, gt, pred)
    expected, (images, anns, dets, cat) = pycoco(frames)
    report = rpx(f"eval detection {dirs(tmp_path)} --no-rows").json
    coco = report["dataset"]["coco"]
    for name in ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"):
        assert coco[name] == pytest.approx(expected[name], abs=1e-9), name
    for label, entry in coco["per_class"].items():
        assert entry["AP"] == pytest.approx(expected[f"class:{label}"], abs=1e-9), label
    assert coco["per_class"]["c4"] == {"AP": None, "reason": "no GT box of this class (pycocotools: -1)"}
    # the same data as COCO files
    (tmp_path / "gt.json").write_text(json.dumps({"images": images, "annotations": anns, "categories": [
        {"id": i, "name": str(n)} for n, i in cat.items()]}))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    files = rpx(f"eval detection --coco-gt {tmp_path / 'gt.json'} --coco-dt {tmp_path / 'dt.json'}").json
    for name in ("AP", "AP50", "AR100"):
        assert files["dataset"]["coco"][name] == pytest.approx(expected[name], abs=1e-9)
    assert [row["stem"] for row in files["rows"]] == sorted(f[0] for f in frames)


def test_coco_file_errors(rpx, tmp_path: Path) -> None:
    gt = {"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": [], "categories": [{"id": 1}]}
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps([{"image_id": 7, "category_id": 1,
                                                   "bbox": [0, 0, 1, 1], "score": 0.5}]))
    run = rpx(f"eval detection --coco-gt {tmp_path / 'gt.json'} --coco-dt {tmp_path / 'dt.json'}")
    assert run.exit_code == 1 and "image_id 7 is not in the GT" in run.stderr
    assert rpx(f"eval detection --coco-gt {tmp_path / 'gt.json'}").exit_code == 2
    assert rpx(f"eval detection --coco-gt {tmp_path / 'gt.json'} --coco-dt {tmp_path / 'dt.json'} "
               f"--pred-dir {tmp_path}").exit_code == 2


def test_detection_order_does_not_matter_without_ties(rpx, tmp_path: Path) -> None:
    frames = generated_detections(11)
    rng = np.random.default_rng(1)
    for stem, gt, pred in frames:
        unique = [{**o, "score": float(s)} for o, s in zip(pred, rng.permutation(len(pred)) / 100 + 0.1,
                                                           strict=True)]
        write_json_pair(tmp_path / "a", stem, gt, unique)
        write_json_pair(tmp_path / "b", stem, gt, list(reversed(unique)))
    a = rpx(f"eval detection {dirs(tmp_path / 'a')}").json
    b = rpx(f"eval detection {dirs(tmp_path / 'b')}").json
    assert a["dataset"] == b["dataset"] and a["aggregate"] == b["aggregate"]
