"""COCO-file input (``--coco-gt/--coco-dt``) and the flat box tables behind detection.

The same data given as per-stem files and as COCO files must give the same report; class
maps, shards and merges work on COCO files; malformed COCO files are one-line errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import box, dirs, generated_detections, write_json_pair

from rpx_cli.io.box_table import FrameTable
from rpx_cli.io.boxes import Boxes


def coco_files(tmp_path: Path, frames, *, shuffle: int | None = None) -> str:
    """``frames`` as instances.json + results.json; image ids deliberately not in stem
    order (and annotations shuffled across images when ``shuffle`` is a seed)."""
    labels = sorted({o["label"] for _, gt, pred in frames for o in gt + pred})
    cat = {label: 10 * (i + 1) for i, label in enumerate(labels)}
    images, anns, dets = [], [], []
    for n, (stem, gt, pred) in enumerate(frames):
        image_id = 1000 - 7 * n
        images.append({"id": image_id, "file_name": f"{stem}.png"})
        for o in gt:
            x1, y1, x2, y2 = o["bbox"]
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": cat[o["label"]],
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "iscrowd": o.get("iscrowd", 0),
                         "area": (x2 - x1) * (y2 - y1)})
        for o in pred:
            x1, y1, x2, y2 = o["bbox"]
            dets.append({"image_id": image_id, "category_id": cat[o["label"]],
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "score": o["score"]})
    if shuffle is not None:  # order across images is free; within an image it breaks ties
        rng = np.random.default_rng(shuffle)
        image_order = {image["id"]: rng.random() for image in images}
        anns.sort(key=lambda a: image_order[a["image_id"]])
        dets.sort(key=lambda d: image_order[d["image_id"]])
    (tmp_path / "instances.json").write_text(json.dumps({
        "images": images, "annotations": anns,
        "categories": [{"id": i, "name": label} for label, i in cat.items()]}))
    (tmp_path / "results.json").write_text(json.dumps(dets))
    return f"--coco-gt {tmp_path / 'instances.json'} --coco-dt {tmp_path / 'results.json'}"


def comparable(report: dict) -> dict:
    rows = [{k: v for k, v in row.items() if not k.endswith("_path")} for row in report["rows"]]
    return {"rows": rows, "aggregate": report["aggregate"], "dataset": report["dataset"]}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_per_stem_and_coco_files_give_the_same_report(rpx, tmp_path: Path, seed: int) -> None:
    frames = generated_detections(seed)
    for stem, gt, pred in frames:
        write_json_pair(tmp_path, stem, gt, pred)
    per_stem = rpx(f"eval detection {dirs(tmp_path)}").json
    files = rpx(f"eval detection {coco_files(tmp_path, frames, shuffle=seed)}").json
    # COCO orders images by id (here the reverse of stem order): only score ties between
    # images could tell, and generated_detections() has ties, so compare everything but the COCO view
    same, other = comparable(per_stem), comparable(files)
    coco_a, coco_b = same["dataset"].pop("coco"), other["dataset"].pop("coco")
    assert same == other
    assert coco_a.keys() == coco_b.keys()


@pytest.mark.parametrize("kind", ["logits", "above one"])
def test_any_finite_score_orders_detections_as_pycocotools(rpx, tmp_path: Path, kind: str) -> None:
    """SPEC §11.4: scores only order detections — negative logits and CrowdPose's 1.8 are
    read (they were refused), and COCO AP equals pycocotools' on them; per-stem files too,
    and the same detections with their scores mapped monotonically into [0, 1] give the same
    COCO AP."""
    import contextlib
    import io

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    frames = generated_detections(4)
    squash = (lambda s: np.log(s / (1 - s + 1e-9) + 1e-9)) if kind == "logits" else (lambda s: 1 + s)
    raw = [(stem, gt, [{**o, "score": float(squash(o["score"]))} for o in pred])
           for stem, gt, pred in frames]
    assert any(o["score"] < 0 or o["score"] > 1 for _, _, pred in raw for o in pred)
    flags = coco_files(tmp_path, raw)
    run = rpx(f"eval detection {flags}")
    report = run.json
    if kind == "logits":  # the default --conf-threshold 0 leaves negative scores out of rows
        assert "score below --conf-threshold 0 (negative scores: logits?)" in run.stderr
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(tmp_path / "instances.json"))
        evaluator = COCOeval(coco, coco.loadRes(str(tmp_path / "results.json")), "bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    assert report["dataset"]["coco"]["AP"] == pytest.approx(evaluator.stats[0], abs=1e-12)
    assert report["dataset"]["coco"]["AP50"] == pytest.approx(evaluator.stats[1], abs=1e-12)
    for stem, gt, pred in raw:
        write_json_pair(tmp_path / "dirs", stem, gt, pred)
    per_stem = rpx(f"eval detection {dirs(tmp_path / 'dirs')}").json
    for stem, gt, pred in frames:
        write_json_pair(tmp_path / "unit", stem, gt, pred)
    unit = rpx(f"eval detection {dirs(tmp_path / 'unit')}").json
    assert per_stem["dataset"]["coco"]["AP"] == unit["dataset"]["coco"]["AP"]


def test_swapped_coco_files_say_so(rpx, tmp_path: Path) -> None:
    """Each of the two files in the other's place: one line naming it and the swap."""
    coco_files(tmp_path, generated_detections(1))
    gt, dt = tmp_path / "instances.json", tmp_path / "results.json"
    for flags, named in ((f"--coco-gt {dt} --coco-dt {gt}", "results.json"),
                         (f"--coco-gt {gt} --coco-dt {gt}", "instances.json")):
        run = rpx(f"eval detection {flags}")
        assert run.exit_code == 1 and "Traceback" not in run.stderr, run.stderr
        assert "did you swap --coco-gt and --coco-dt?" in run.stderr and named in run.stderr


def test_class_map_on_coco_files(rpx, tmp_path: Path) -> None:
    frames = [("a", [box("car", [0, 0, 10, 10]), box("tree", [20, 20, 30, 30])],
               [box("automobile", [0, 0, 10, 10], 0.9), box("tree", [20, 20, 30, 30], 0.9)])]
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"automobile": "car", "tree": None}))
    report = rpx(f"eval detection {coco_files(tmp_path, frames)} --class-map {mapping}").json
    assert report["rows"][0]["tp"] == 1 and report["rows"][0]["n_gt"] == 1
    assert list(report["dataset"]["coco"]["per_class"]) == ["car"]
    assert report["dataset"]["coco"]["AP"] == pytest.approx(1.0)


def test_coco_file_shards_merge_to_the_whole_run(rpx, tmp_path: Path) -> None:
    frames = generated_detections(4)
    args = coco_files(tmp_path, frames)
    whole = rpx(f"eval detection {args}").json
    parts = []
    for k in (1, 2, 3):
        out = tmp_path / f"part{k}.json"
        assert rpx(f"eval detection {args} --shard {k}/3 -o {out}").exit_code == 0
        parts.append(str(out))
    merged = rpx(["merge", *parts]).json
    assert comparable(merged) == comparable(whole)


def test_unknown_categories_are_dropped_with_a_warning(rpx, tmp_path: Path) -> None:
    args = coco_files(tmp_path, [("a", [box("a", [0, 0, 10, 10])], [box("a", [0, 0, 10, 10], 0.9)])])
    results = json.loads((tmp_path / "results.json").read_text())
    results += [{"image_id": 1000, "category_id": 99, "bbox": [0, 0, 5, 5], "score": 0.99},
                {"image_id": 1000, "category_id": "10", "bbox": [0, 0, 5, 5], "score": 0.99}]
    (tmp_path / "results.json").write_text(json.dumps(results))
    run = rpx(f"eval detection {args}")
    assert run.exit_code == 0 and "2 detection(s) name a category that is not in" in run.stderr
    assert run.json["rows"][0]["fp"] == 0 and run.json["dataset"]["coco"]["AP"] == pytest.approx(1.0)


GT = {"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": [
    {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 5, 5], "area": 25, "iscrowd": 0}],
    "categories": [{"id": 1, "name": "a"}]}
DET = {"image_id": 1, "category_id": 1, "bbox": [0, 0, 5, 5], "score": 0.5}


@pytest.mark.parametrize(("gt", "dets", "where", "message"), [
    ({"images": []}, [DET], "instances", "needs 'images', 'annotations' and 'categories'"),
    ({**GT, "images": [{"id": 1}, {"id": 1}]}, [DET], "instances", "image ids must be unique"),
    ({**GT, "images": [{"id": "1"}]}, [DET], "instances", "image ids must be integers"),
    ({**GT, "images": [{"file_name": "a.jpg"}]}, [DET], "instances", "needs an 'id'"),
    ({**GT, "annotations": [{**GT["annotations"][0], "image_id": 5}]}, [DET], "instances",
     "annotation 0: image_id 5 is not an image"),
    ({**GT, "annotations": [{**GT["annotations"][0], "category_id": [1]}]}, [DET], "instances",
     "annotation 0: category_id [1] is not a category"),
    ({**GT, "annotations": [{**GT["annotations"][0], "bbox": [0, 0, -1, 5]}]}, [DET], "instances",
     "negative width or height"),
    ({**GT, "annotations": [{**GT["annotations"][0], "area": "big"}]}, [DET], "instances",
     "'area' must be a finite number"),
    (GT, {"results": 1}, "results", "a COCO results file is a list"),
    (GT, [DET, 3], "results", "detection 1: expected an object"),
    (GT, [DET, {"bbox": [0, 0, 1, 1], "score": 0.5, "category_id": 1}], "results",
     "detection 1: missing 'image_id'"),
    (GT, [{**DET, "image_id": "1"}], "results", "detection 0: image_id '1' is not an integer"),
    (GT, [DET, {**DET, "image_id": 2}], "results", "detection 1: image_id 2 is not in the GT"),
    (GT, [DET, {**DET, "score": 1e13}], "results",
     "object 1: 'score' must be a finite number within ±1e+12"),
    (GT, [{**DET, "bbox": [0, 0, "5", 5]}], "results", "'bbox' must be four finite numbers"),
])
def test_malformed_coco_files(rpx, tmp_path: Path, gt, dets, where, message) -> None:
    (tmp_path / "instances.json").write_text(json.dumps(gt))
    (tmp_path / "results.json").write_text(json.dumps(dets))
    run = rpx(f"eval detection --coco-gt {tmp_path / 'instances.json'} "
              f"--coco-dt {tmp_path / 'results.json'} -o {tmp_path / 'out.json'}")
    assert run.exit_code == 1, run.stderr
    assert message in run.stderr and f"{where}.json" in run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.json").exists()


def test_frame_table_round_trip() -> None:
    from rpx_cli.io.box_table import Frame

    def boxes(n, scored, rng):
        xy = rng.uniform(0, 50, (n, 2))
        return Boxes(np.hstack([xy, rng.uniform(1, 9, (n, 2))]),
                     [str(v) for v in rng.choice(["a", "b", "c"], n)],
                     rng.random(n) if scored else None, rng.random(n) < 0.2, rng.uniform(1, 80, n))

    rng = np.random.default_rng(0)
    frames = [Frame(boxes(int(rng.integers(0, 4)), False, rng), boxes(int(rng.integers(0, 4)), True, rng))
              for _ in range(7)]
    table = FrameTable.from_frames(frames, ["a", "b", "c"])
    assert len(table) == 7 and table.image_ids is None
    for original, rebuilt in zip(frames, table, strict=True):
        assert rebuilt.gt.labels == original.gt.labels and rebuilt.pred.labels == original.pred.labels
        for side in ("gt", "pred"):
            a, b = getattr(original, side), getattr(rebuilt, side)
            assert np.array_equal(a.shape.reshape(-1, 4), b.shape) and np.array_equal(a.crowd, b.crowd)
            assert np.array_equal(a.area, b.area)
        assert np.array_equal(original.pred.scores, rebuilt.pred.scores)
    backwards = table.subset([6, 5, 4, 3, 2, 1, 0])
    assert [f.gt.labels for f in backwards] == [f.gt.labels for f in reversed(frames)]
    # a frame named twice is there twice (a bootstrap draw), named frames in that order
    drawn = [3, 0, 3, 6, 6, 6, 1]
    resampled = table.subset(drawn)
    assert len(resampled) == len(drawn)
    for i, rebuilt in zip(drawn, resampled, strict=True):
        for side in ("gt", "pred"):
            a, b = getattr(frames[i], side), getattr(rebuilt, side)
            assert b.labels == a.labels
            assert np.array_equal(a.shape.reshape(-1, 4), b.shape) and np.array_equal(a.area, b.area)
    assert np.array_equal(resampled.pred.frame, np.sort(resampled.pred.frame))
    same = table.subset(range(7))  # every frame in its order: the columns shared, not copied
    assert same.gt is table.gt and same.pred is table.pred and same.n == 7
    assert [f.gt.labels for f in same] == [f.gt.labels for f in frames]
    mapped = table.map_labels({"a": None, "b": "c"})
    assert mapped.vocabulary == ["c"]
    assert [f.gt.labels for f in mapped] == [["c"] * sum(lab != "a" for lab in f.gt.labels) for f in frames]


def test_a_match_to_the_gt_of_id_0_counts_and_is_warned(rpx, tmp_path: Path) -> None:
    """SPEC §11.4: a detection matched to the annotation whose id is 0 is a match (rpx, as
    hotcoco); pycocotools stores the matched GT's id and reads 0 as "unmatched" (a false
    positive). rpx prints one warning saying how many; numbered from 1, pycocotools agrees."""
    import contextlib
    import io

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    def pycocotools_ap() -> float:
        with contextlib.redirect_stdout(io.StringIO()):
            coco = COCO(str(tmp_path / "instances.json"))
            evaluator = COCOeval(coco, coco.loadRes(str(tmp_path / "results.json")), "bbox")
            evaluator.evaluate()
            evaluator.accumulate()
            evaluator.summarize()
        return float(evaluator.stats[0])

    flags = coco_files(tmp_path, generated_detections(2))
    from_one = rpx(f"eval detection {flags}")
    assert "id 0" not in from_one.stderr
    assert from_one.json["dataset"]["coco"]["AP"] == pytest.approx(pycocotools_ap(), abs=1e-12)
    document = json.loads((tmp_path / "instances.json").read_text())
    for ann in document["annotations"]:
        ann["id"] -= 1  # numbered from 0
    (tmp_path / "instances.json").write_text(json.dumps(document))
    from_zero = rpx(f"eval detection {flags}")
    assert from_zero.json["dataset"] == from_one.json["dataset"]  # rpx: the same matches
    assert "match the GT annotation with id 0 at IoU 0.5" in from_zero.stderr
    assert pycocotools_ap() < from_zero.json["dataset"]["coco"]["AP"]  # one match lost there


def test_the_table_of_objects_already_in_image_order_is_their_own_columns() -> None:
    """``_table`` sorts by image (stable); objects already in image order (a results file
    written image by image) keep their own arrays: no gather of 220 MB of keypoint rows."""
    from rpx_cli.io.coco_files import _table

    shape = np.arange(24, dtype=np.float64).reshape(6, 4)
    boxes = Boxes(shape, [], np.linspace(0, 1, 6), np.zeros(6, bool), np.ones(6))
    label = np.array([2, 0, 1, 1, 0, 2])
    sorted_table = _table(boxes, label, np.array([0, 0, 1, 3, 3, 3]))
    assert sorted_table.shape is shape and sorted_table.label is label
    shuffled = _table(boxes, label, np.array([3, 0, 3, 1, 0, 3]))
    order = [1, 4, 3, 0, 2, 5]  # by image, input order within an image
    assert shuffled.frame.tolist() == [0, 0, 1, 3, 3, 3]
    assert np.array_equal(shuffled.shape, shape[order]) and shuffled.label.tolist() == label[order].tolist()
    assert np.array_equal(shuffled.score, boxes.scores[order])
