"""``--protocol openimages``: hand-computed cases (formulas) for group-of boxes, hierarchy
expansion and image-level labels; hotcoco 1.3.0's ``oid_style=True`` evaluation
(tests/openimages_reference.py) on generated Open Images CSVs with group-of boxes, a class
tree, duplicates and cross-image score ties; and the invariants (--jobs, shards)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import assert_jobs_and_shards_agree, write_json_pair
from tests.openimages_reference import hotcoco_oid

TREE = {"LabelName": "/m/0bl9f", "Subcategory": [
    {"LabelName": "animal", "Subcategory": [{"LabelName": "dog"}, {"LabelName": "cat"}]},
    {"LabelName": "bird"}]}


def _run(rpx, root: Path, *extra: str, code: int = 0):
    run = rpx(["eval", "detection", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
               "--box-format", "xywh", "--protocol", "openimages", *extra])
    assert run.exit_code == code, run.stderr
    return run


def _hierarchy(root: Path, tree=TREE) -> str:
    path = root / "hierarchy.json"
    path.write_text(json.dumps(tree))
    return str(path)


# --- hand-computed ------------------------------------------------------------------------


def test_group_of_box_scores_its_best_detection_once(rpx, tmp_path):
    """A regular dog A and a group-of box G (an rpx crowd region). Detections: 0.9 small and
    inside G (IoU with G 0.04, intersection over its own area 1: inside), 0.8 inside G too,
    0.7 on A, 0.6 nowhere. Walk: TP (G), ignored (G already scored), TP (A), FP: n_gt 2,
    precision 1 at recall 1/2 and 1: AP 1 (were the second one a FP, 1/2 + 1/2 · 2/3)."""
    gt = [{"bbox": [0, 0, 10, 10], "label": "dog"},
          {"bbox": [100, 100, 50, 50], "label": "dog", "iscrowd": 1}]
    pred = [{"bbox": [110, 110, 10, 10], "label": "dog", "score": 0.9},
            {"bbox": [130, 130, 10, 10], "label": "dog", "score": 0.8},
            {"bbox": [0, 0, 10, 10], "label": "dog", "score": 0.7},
            {"bbox": [300, 300, 10, 10], "label": "dog", "score": 0.6}]
    write_json_pair(tmp_path, "s", gt, pred)
    out = _run(rpx, tmp_path).json["dataset"]["openimages"]
    dog = out["per_class"]["dog"]
    assert (dog["n_gt"], dog["n_pred"], dog["n_ignored"]) == (2, 4, 1)
    assert dog["AP"] == pytest.approx(1.0, abs=1e-12) and out["mAP"] == dog["AP"]
    assert out["ignored"]["gt_group_of"] == 1 and out["ignored"]["pred"] == 1


def test_unmatched_group_of_box_is_one_miss(rpx, tmp_path):
    """Two group-of boxes, one detection inside the first: recall 1/2 at precision 1."""
    gt = [{"bbox": [0, 0, 50, 50], "label": "dog", "iscrowd": 1},
          {"bbox": [200, 200, 50, 50], "label": "dog", "iscrowd": 1}]
    pred = [{"bbox": [10, 10, 10, 10], "label": "dog", "score": 0.5}]
    write_json_pair(tmp_path, "s", gt, pred)
    dog = _run(rpx, tmp_path).json["dataset"]["openimages"]["per_class"]["dog"]
    assert dog["n_gt"] == 2 and dog["AP"] == pytest.approx(0.5, abs=1e-12)


def test_hierarchy_makes_a_parent_class_tp(rpx, tmp_path):
    """Image 1: GT dog, a dog detection on it; image 2: GT cat, an *animal* detection on it.
    Expanded, animal has 2 GT and 2 TP (the dog detection's copy at 0.9, the animal one at
    0.8): AP 1; cat has its GT and no detection: AP 0; dog 1: mAP (1 + 0 + 1) / 3. Without
    the hierarchy animal has no GT (AP null) and mAP is (1 + 0) / 2."""
    write_json_pair(tmp_path, "a", [{"bbox": [0, 0, 10, 10], "label": "dog"}],
                    [{"bbox": [0, 0, 10, 10], "label": "dog", "score": 0.9}])
    write_json_pair(tmp_path, "b", [{"bbox": [0, 0, 10, 10], "label": "cat"}],
                    [{"bbox": [0, 0, 10, 10], "label": "animal", "score": 0.8}])
    out = _run(rpx, tmp_path, "--oi-hierarchy", _hierarchy(tmp_path)).json["dataset"]["openimages"]
    classes = out["per_class"]
    assert classes["animal"]["AP"] == pytest.approx(1.0) and classes["animal"]["n_gt"] == 2
    assert classes["animal"]["n_pred"] == 2 and classes["cat"]["AP"] == 0.0
    assert out["mAP"] == pytest.approx(2 / 3, abs=1e-12)
    assert "bird" not in classes  # in the tree, but no box of it anywhere
    flat = _run(rpx, tmp_path).json["dataset"]["openimages"]
    assert flat["per_class"]["animal"]["AP"] is None
    assert flat["mAP"] == pytest.approx(0.5, abs=1e-12)


def test_image_level_labels_decide_what_is_scored(rpx, tmp_path):
    """Image a: GT dog with a dog TP (0.9), a cat detection (0.8) and a bird one (0.7) on
    nothing; cat is verified absent there (Confidence 0), bird not verified. Image b: GT cat
    and bird, each detected (0.5). With the labels the cat detection on a is a FP (cat:
    FP then TP, AP 1/2) and the bird one is left out (bird: AP 1); without them both are
    FP (bird 1/2) and the run says so in a warning."""
    write_json_pair(tmp_path, "a", [{"bbox": [0, 0, 10, 10], "label": "dog"}],
                    [{"bbox": [0, 0, 10, 10], "label": "dog", "score": 0.9},
                     {"bbox": [50, 50, 10, 10], "label": "cat", "score": 0.8},
                     {"bbox": [80, 80, 10, 10], "label": "bird", "score": 0.7}])
    write_json_pair(tmp_path, "b", [{"bbox": [0, 0, 10, 10], "label": "cat"},
                                    {"bbox": [50, 0, 10, 10], "label": "bird"}],
                    [{"bbox": [0, 0, 10, 10], "label": "cat", "score": 0.5},
                     {"bbox": [50, 0, 10, 10], "label": "bird", "score": 0.5}])
    labels = tmp_path / "labels.csv"
    labels.write_text("ImageID,Source,LabelName,Confidence\na,verification,cat,0\n"
                      "a,verification,dog,1\nb,verification,cat,1\n")
    run = _run(rpx, tmp_path, "--oi-image-labels", str(labels))
    out = run.json["dataset"]["openimages"]
    assert out["per_class"]["cat"]["AP"] == pytest.approx(0.5, abs=1e-12)
    assert out["per_class"]["bird"]["AP"] == pytest.approx(1.0, abs=1e-12)
    assert out["ignored"]["pred_unverified"] == 1 and not run.json.get("warnings")
    bare = _run(rpx, tmp_path)
    out = bare.json["dataset"]["openimages"]
    assert out["per_class"]["bird"]["AP"] == pytest.approx(0.5, abs=1e-12)
    assert out["per_class"]["cat"]["AP"] == pytest.approx(0.5, abs=1e-12)
    assert any("--oi-image-labels" in w for w in bare.json["warnings"])
    assert "--oi-image-labels" in bare.stderr


def test_absent_label_expands_down_the_tree(rpx, tmp_path):
    """``animal`` verified absent on image a makes dog and cat absent too: a cat detection
    there is a FP (cat: FP then TP, AP 1/2), where unverified it would be left out."""
    write_json_pair(tmp_path, "a", [{"bbox": [0, 0, 10, 10], "label": "bird"}],
                    [{"bbox": [50, 50, 10, 10], "label": "cat", "score": 0.8}])
    write_json_pair(tmp_path, "b", [{"bbox": [0, 0, 10, 10], "label": "cat"}],
                    [{"bbox": [0, 0, 10, 10], "label": "cat", "score": 0.5}])
    labels = tmp_path / "labels.csv"
    labels.write_text("ImageID,Source,LabelName,Confidence\na,human,animal,0\n")
    hierarchy = _hierarchy(tmp_path)
    cat = _run(rpx, tmp_path, "--oi-image-labels", str(labels), "--oi-hierarchy", hierarchy
               ).json["dataset"]["openimages"]["per_class"]["cat"]
    assert cat["AP"] == pytest.approx(0.5, abs=1e-12)
    labels.write_text("ImageID,Source,LabelName,Confidence\na,human,bird,1\n")
    cat = _run(rpx, tmp_path, "--oi-image-labels", str(labels), "--oi-hierarchy", hierarchy
               ).json["dataset"]["openimages"]["per_class"]["cat"]
    assert cat["AP"] == pytest.approx(1.0, abs=1e-12)


def test_difficult_gt_is_ignored(rpx, tmp_path):
    """A detection on a difficult GT is neither TP nor FP; the difficult GT is no miss."""
    gt = [{"bbox": [0, 0, 10, 10], "label": "dog"},
          {"bbox": [50, 50, 10, 10], "label": "dog", "ignore": 1}]
    pred = [{"bbox": [50, 50, 10, 10], "label": "dog", "score": 0.9},
            {"bbox": [0, 0, 10, 10], "label": "dog", "score": 0.8}]
    write_json_pair(tmp_path, "s", gt, pred)
    out = _run(rpx, tmp_path).json["dataset"]["openimages"]
    dog = out["per_class"]["dog"]
    assert (dog["n_gt"], dog["n_ignored"], dog["AP"]) == (1, 1, pytest.approx(1.0))
    assert out["ignored"]["gt"] == 1


def test_bad_hierarchy_and_unknown_class_exit_1(rpx, tmp_path):
    write_json_pair(tmp_path, "s", [{"bbox": [0, 0, 10, 10], "label": "zebra"}],
                    [{"bbox": [0, 0, 10, 10], "label": "zebra", "score": 0.5}])
    hierarchy = _hierarchy(tmp_path)
    run = _run(rpx, tmp_path, "--oi-hierarchy", hierarchy, code=1)
    assert "hierarchy.json" in run.stderr and "'zebra'" in run.stderr
    assert "Traceback" not in run.stderr and not run.stdout.strip()
    Path(hierarchy).write_text('{"Subcategory": []}')
    run = _run(rpx, tmp_path, "--oi-hierarchy", hierarchy, code=1)
    assert "hierarchy.json" in run.stderr and "LabelName" in run.stderr
    Path(hierarchy).write_text("{not json")
    assert "hierarchy.json" in _run(rpx, tmp_path, "--oi-hierarchy", hierarchy, code=1).stderr
    labels = tmp_path / "labels.csv"
    labels.write_text("ImageID,Source,LabelName,Confidence\ns,human,zebra,0.5\n")
    run = _run(rpx, tmp_path, "--oi-image-labels", str(labels), code=1)
    assert "labels.csv:2" in run.stderr and "Confidence" in run.stderr


def test_options_belong_to_the_protocol(rpx, tmp_path):
    write_json_pair(tmp_path, "s", [{"bbox": [0, 0, 10, 10], "label": "dog"}],
                    [{"bbox": [0, 0, 10, 10], "label": "dog", "score": 0.5}])
    run = rpx(["eval", "detection", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt",
               "--oi-hierarchy", _hierarchy(tmp_path)])
    assert run.exit_code == 2 and "--protocol openimages" in run.stderr


# --- against hotcoco ------------------------------------------------------------------------

PARENTS = {"dog": "animal", "cat": "animal", "animal": "thing", "car": "vehicle",
           "bus": "vehicle", "vehicle": "thing"}
LEAVES = ["dog", "cat", "car", "bus", "bird", "animal"]
CLASSES = ["animal", "bird", "bus", "car", "cat", "dog", "thing", "vehicle"]
NESTED = {"LabelName": "/m/0bl9f", "Subcategory": [
    {"LabelName": "thing", "Subcategory": [
        {"LabelName": "animal", "Subcategory": [{"LabelName": "dog"}, {"LabelName": "cat"}]},
        {"LabelName": "vehicle", "Subcategory": [{"LabelName": "car"}, {"LabelName": "bus"}]}]},
    {"LabelName": "bird"}]}
SIZE = 1000.0


def _oid_dataset(seed: int, n: int = 30):
    """Images of normalised boxes on a 0.001 grid: group-of boxes (~15%) with detections
    inside, detections jittered around GT (some twice: duplicates), some of a parent class,
    false positives; scores on a 0.05 grid (ties within and across images)."""
    rng = np.random.default_rng(seed)
    images = []
    for i in range(n):
        gt, pred = [], []
        for _ in range(int(rng.integers(1, 6))):  # an Open Images CSV lists no empty image
            x1, y1 = rng.integers(0, 700, 2) / 1000
            w, h = rng.integers(30, 300, 2) / 1000
            label = LEAVES[int(rng.integers(0, len(LEAVES)))]
            group = bool(rng.random() < 0.15)
            gt.append((label, [float(v) for v in np.round([x1, x1 + w, y1, y1 + h], 3)], group))
            for _ in range(int(rng.integers(0, 3))):
                jitter = rng.integers(-25, 26, 4) / 1000
                if group:  # small boxes inside the group
                    sx, sy = x1 + rng.integers(0, int(w * 1000) - 20) / 1000, y1 + rng.integers(
                        0, int(h * 1000) - 20) / 1000
                    box = [sx, sx + 0.02, sy, sy + 0.02]
                else:
                    box = [x1 + jitter[0], x1 + w + jitter[1], y1 + jitter[2], y1 + h + jitter[3]]
                box = [float(v) for v in np.clip(np.round(box, 3), 0, 1)]
                if box[1] <= box[0] or box[3] <= box[2]:
                    continue
                name = PARENTS.get(label, label) if rng.random() < 0.2 else label
                pred.append((name, box, float(rng.integers(1, 20)) / 20))
        for _ in range(int(rng.integers(0, 3))):
            x1, y1 = rng.integers(0, 800, 2) / 1000
            pred.append((LEAVES[int(rng.integers(0, len(LEAVES)))],
                         [float(v) for v in np.round([x1, x1 + 0.1, y1, y1 + 0.1], 3)],
                         float(rng.integers(1, 20)) / 20))
        images.append((f"img{i:03d}", gt, pred))
    return images


def _write_csvs(images, root: Path) -> tuple[Path, Path]:
    gt_lines = ["ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,"
                "IsTruncated,IsGroupOf,IsDepiction,IsInside"]
    pred_lines = ["ImageID,LabelName,Score,XMin,XMax,YMin,YMax"]
    for stem, gt, pred in images:
        gt_lines += [f"{stem},xclick,{label},1,{','.join(map(repr, box))},0,0,{int(group)},0,0"
                     for label, box, group in gt]
        pred_lines += [f"{stem},{label},{score!r},{','.join(map(repr, box))}"
                       for label, box, score in pred]
    root.mkdir(parents=True, exist_ok=True)
    (root / "gt.csv").write_text("\n".join(gt_lines) + "\n")
    (root / "pred.csv").write_text("\n".join(pred_lines) + "\n")
    return root / "gt.csv", root / "pred.csv"


def _pixels(box):
    x1, x2, y1, y2 = (float(v) for v in box)
    return [x1 * SIZE, y1 * SIZE, x2 * SIZE - x1 * SIZE, y2 * SIZE - y1 * SIZE]


def _reference_images(images):
    return [([{"bbox": _pixels(box), "label": label, "group": group} for label, box, group in gt],
             [{"bbox": _pixels(box), "label": label, "score": score} for label, box, score in pred])
            for _, gt, pred in images]


def _oid_run(rpx, root: Path, *extra: str) -> dict:
    run = rpx(["eval", "detection", "--gt-dir", root / "gt.csv", "--pred-dir", root / "pred.csv",
               "--image-size", f"{int(SIZE)},{int(SIZE)}", "--protocol", "openimages", *extra])
    assert run.exit_code == 0, run.stderr
    return run.json["dataset"]["openimages"]


def _assert_equal(got: dict, want: dict) -> None:
    assert got["mAP"] == pytest.approx(want["mAP"], abs=1e-9)
    for name, ap in want["per_class"].items():
        ap = None if ap is None or ap < 0 else ap
        mine = got["per_class"].get(name, {}).get("AP")
        assert (mine is None) == (ap is None), name
        if ap is not None:
            assert mine == pytest.approx(ap, abs=1e-9), name


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_hotcoco_oid_style(rpx, tmp_path, seed):
    images = _oid_dataset(seed)
    _write_csvs(images, tmp_path)
    (tmp_path / "h.json").write_text(json.dumps(NESTED))
    got = _oid_run(rpx, tmp_path, "--oi-hierarchy", str(tmp_path / "h.json"))
    want = hotcoco_oid(_reference_images(images), CLASSES, PARENTS)
    assert want["expand_dt"] is True
    _assert_equal(got, want)
    flat = _oid_run(rpx, tmp_path)
    _assert_equal(flat, hotcoco_oid(_reference_images(images), CLASSES))


def test_coco_files_equal_hotcoco(rpx, tmp_path):
    """COCO files: classes matched to the hierarchy by category name; tied scores across
    images fall in image id order (hotcoco's), not file-name order."""
    images = _oid_dataset(4, n=24)
    reference = _reference_images(images)
    for gt, _ in reference:
        for obj in gt:
            obj["group"] = False  # COCO files have crowd regions, which hotcoco's OID mode
            # scores as ordinary GT (rpx: as group-of boxes)
    ids = [int(v) for v in np.random.default_rng(9).permutation(len(images)) + 1]
    cat = {name: k for k, name in enumerate(CLASSES, 11)}
    objects = [(i, o) for i, (gt, _) in zip(ids, reference, strict=True) for o in gt]
    instances = {"images": [{"id": i, "file_name": f"{stem}.jpg", "width": 1000, "height": 1000}
                            for i, (stem, _, _) in zip(ids, images, strict=True)],
                 "annotations": [{"id": n, "image_id": i, "category_id": cat[o["label"]],
                                  "bbox": o["bbox"], "area": o["bbox"][2] * o["bbox"][3],
                                  "iscrowd": 0} for n, (i, o) in enumerate(objects, 1)],
                 "categories": [{"id": k, "name": name} for name, k in cat.items()]}
    results = [{"image_id": i, "category_id": cat[o["label"]], "bbox": o["bbox"], "score": o["score"]}
               for i, (_, pred) in zip(ids, reference, strict=True) for o in pred]
    (tmp_path / "instances.json").write_text(json.dumps(instances))
    (tmp_path / "results.json").write_text(json.dumps(results))
    (tmp_path / "h.json").write_text(json.dumps(NESTED))
    run = rpx(["eval", "detection", "--coco-gt", tmp_path / "instances.json", "--coco-dt",
               tmp_path / "results.json", "--protocol", "openimages", "--oi-hierarchy",
               tmp_path / "h.json"])
    assert run.exit_code == 0, run.stderr
    _assert_equal(run.json["dataset"]["openimages"],
                  hotcoco_oid(reference, CLASSES, PARENTS, image_ids=ids))


def _expanded(images, verified):
    """The predictions as the image-level labels leave them: expanded up the tree as hotcoco
    expands them (a copy the input already holds is skipped), then those of a class not
    verified on their image (nor in its GT, expanded) dropped — to be evaluated without
    hotcoco's own expansion, which would re-expand a kept copy into a dropped class."""
    def up(label):
        chain = [label]
        while chain[-1] in PARENTS:
            chain.append(PARENTS[chain[-1]])
        return chain

    out = []
    for (stem, gt, _), (gt_objects, pred_objects) in zip(images, _reference_images(images),
                                                            strict=True):
        allowed = {c for label, _, _ in gt for c in up(label)} | verified.get(stem, set())
        given = {(obj["label"], *obj["bbox"], obj["score"]) for obj in pred_objects}
        copies = [dict(obj, label=c) for obj in pred_objects for c in up(obj["label"])[1:]
                  if (c, *obj["bbox"], obj["score"]) not in given]
        kept = [obj for obj in pred_objects + copies if obj["label"] in allowed]
        out.append((gt_objects, kept))
    return out


def test_image_labels_equal_hotcoco_on_the_verified_classes(rpx, tmp_path):
    """hotcoco has no image-level labels: on the predictions the labels leave (expanded and
    filtered as the challenge does), its numbers are rpx's with the labels file."""
    images = _oid_dataset(5, n=24)
    _write_csvs(images, tmp_path)
    (tmp_path / "h.json").write_text(json.dumps(NESTED))
    rng = np.random.default_rng(7)
    lines, verified = ["ImageID,Source,LabelName,Confidence"], {}
    children = {c: [k for k, p in PARENTS.items() if p == c] for c in CLASSES}
    for stem, _, _ in images:
        for name in CLASSES:
            if rng.random() < 0.3:
                present = bool(rng.random() < 0.5)
                lines.append(f"{stem},verification,{name},{int(present)}")
                todo, found = [name], set()
                while todo:  # present: the class and its ancestors; absent: and below
                    c = todo.pop()
                    found.add(c)
                    todo += ([PARENTS[c]] if c in PARENTS else []) if present else children[c]
                verified.setdefault(stem, set()).update(found)
    (tmp_path / "labels.csv").write_text("\n".join(lines) + "\n")
    got = _oid_run(rpx, tmp_path, "--oi-hierarchy", str(tmp_path / "h.json"),
                   "--oi-image-labels", str(tmp_path / "labels.csv"))
    assert got["ignored"]["pred_unverified"] > 0
    _assert_equal(got, hotcoco_oid(_expanded(images, verified), CLASSES, PARENTS,
                                   expand_dt=False))


def test_jobs_and_shards_change_nothing(rpx, tmp_path):
    images = _oid_dataset(3, n=24)
    _write_csvs(images, tmp_path)
    (tmp_path / "h.json").write_text(json.dumps(NESTED))
    (tmp_path / "labels.csv").write_text("ImageID,Source,LabelName,Confidence\n"
                                         "img001,verification,dog,0\nimg002,human,bird,1\n")
    assert_jobs_and_shards_agree(
        rpx, f"eval detection --gt-dir {tmp_path / 'gt.csv'} --pred-dir {tmp_path / 'pred.csv'} "
             f"--image-size 1000,1000 --protocol openimages --oi-hierarchy {tmp_path / 'h.json'} "
             f"--oi-image-labels {tmp_path / 'labels.csv'}", tmp_path)


def test_group_of_boxes_are_regions_for_the_other_views(rpx):
    """The challenge fixture: street1's group-of box of cars is a region for rows and
    pooled (as a crowd region): not a GT to find, and the two car detections inside it no
    false positives; under --protocol coco (which skips it) they are two."""
    root = Path(__file__).resolve().parent.parent / "fixtures/detection/openimages_challenge"
    argv = ["eval", "detection", "--pred-dir", root / "predictions.csv", "--gt-dir",
            root / "annotations-bbox.csv", "--image-size", "640,480"]
    oi = rpx([*argv, "--protocol", "openimages"]).json
    coco = rpx([*argv, "--protocol", "coco"]).json
    assert [row["n_gt"] for row in oi["rows"]] == [2, 2, 1, 1]  # park1, park2, street1, street2
    assert oi["dataset"]["pooled"]["fp"] == coco["dataset"]["pooled"]["fp"] - 2
    assert oi["dataset"]["pooled"]["tp"] == coco["dataset"]["pooled"]["tp"]


# hotcoco's own Open Images cases (crates/hotcoco/tests/integration_test.rs of its 1.3.0 sdist:
# test_oid_group_of_multi_match, _matches_on_ioa_not_iou, _undetected_group_of_is_a_miss,
# test_oid_hierarchy_evaluation, test_oid_dt_expansion): its objects, its expected AP
ORDINARY, GROUP_OF = [300.0, 300.0, 100.0, 100.0], [0.0, 0.0, 200.0, 200.0]
HOTCOCO_CASES = {
    "group_of_multi_match": (
        [("person", ORDINARY, False), ("person", GROUP_OF, True)],
        [("person", ORDINARY, 0.9), ("person", GROUP_OF, 0.8), ("person", [10.0, 10.0, 80.0, 80.0], 0.7)],
        {}, 1.0, {"person": 1.0}),
    "group_of_matches_on_ioa_not_iou": (
        [("person", ORDINARY, False), ("person", GROUP_OF, True)],
        [("person", [10.0, 10.0, 80.0, 80.0], 0.9), ("person", ORDINARY, 0.8)], {}, 1.0, {}),
    "undetected_group_of_is_a_miss": (
        [("person", [0.0, 0.0, 100.0, 100.0], False), ("person", [400.0, 400.0, 100.0, 100.0], True)],
        [("person", [0.0, 0.0, 100.0, 100.0], 0.9)], {}, 0.5, {}),
    "hierarchy_evaluation": (
        [("poodle", [10.0, 10.0, 100.0, 100.0], False)], [("dog", [10.0, 10.0, 100.0, 100.0], 0.9)],
        {"poodle": "dog", "dog": "animal"}, None, {"dog": 1.0}),
    "dt_expansion": (
        [("animal", [10.0, 10.0, 100.0, 100.0], False)], [("dog", [10.0, 10.0, 100.0, 100.0], 0.9)],
        {"dog": "animal"}, 1.0, {"animal": 1.0, "dog": None}),
}


def _tree(parents: dict[str, str], classes: list[str]) -> dict:
    def node(name):
        return {"LabelName": name,
                "Subcategory": [node(c) for c in classes if parents.get(c) == name]}

    return {"LabelName": "/m/0bl9f",
            "Subcategory": [node(c) for c in classes if c not in parents]}


@pytest.mark.parametrize("case", sorted(HOTCOCO_CASES))
def test_hotcoco_own_cases(rpx, tmp_path, case):
    gt, pred, parents, m_ap, per_class = HOTCOCO_CASES[case]
    classes = sorted({label for label, *_ in gt + pred} | set(parents) | set(parents.values()))
    write_json_pair(tmp_path, "img1",
                    [{"bbox": box, "label": label, **({"iscrowd": 1} if group else {})}
                     for label, box, group in gt],
                    [{"bbox": box, "label": label, "score": score} for label, box, score in pred])
    extra = ()
    if parents:
        (tmp_path / "h.json").write_text(json.dumps(_tree(parents, classes)))
        extra = ("--oi-hierarchy", str(tmp_path / "h.json"))
    got = _run(rpx, tmp_path, *extra).json["dataset"]["openimages"]
    want = hotcoco_oid([([{"bbox": box, "label": label, "group": group} for label, box, group in gt],
                         [{"bbox": box, "label": label, "score": score}
                          for label, box, score in pred])], classes, parents)
    _assert_equal(got, want)
    if m_ap is not None:
        assert got["mAP"] == pytest.approx(m_ap, abs=1e-12)
    for name, ap in per_class.items():
        assert got["per_class"][name]["AP"] == (None if ap is None else pytest.approx(ap, abs=1e-12))
