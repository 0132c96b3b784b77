"""Malformed files of every labelling format are exit 1 naming ``file:line`` (or the
object), never a traceback or a partial report; ``auto`` refuses a folder it cannot settle
with the flag that does; shapes a run cannot express are skipped with one warning."""

from __future__ import annotations

import pytest


def _pair(tmp_path, pred_text: str, gt_text: str, suffix: str):
    pred, gt = tmp_path / "pred", tmp_path / "gt"
    pred.mkdir()
    gt.mkdir()
    (pred / f"a{suffix}").write_text(pred_text)
    (gt / f"a{suffix}").write_text(gt_text)
    return pred, gt


YOLO_GT = "0 0.5 0.5 0.25 0.25\n"
YOLO_PRED = "0 0.5 0.5 0.25 0.25 0.9\n"


@pytest.mark.parametrize(("pred", "gt", "message"), [
    (YOLO_PRED, "0 0.5 0.5 0.25\n", "gt/a.txt:1: 4 fields where a YOLO GT line has 5"),
    (YOLO_PRED, "0 0.5 x 0.25 0.25\n", "gt/a.txt:1: not a number: 'x'"),
    (YOLO_PRED, "\n7 0.5 0.5 0.25 0.25\n", "gt/a.txt:2: class id 7 is not one of the 2 names"),
    (YOLO_PRED, "0 1.5 0.5 0.25 0.25\n", "gt/a.txt:1: normalised coordinate 1.5 outside [0, 1]"),
    (YOLO_PRED, "0 0.5 0.5 -0.25 0.25\n", "gt/a.txt:1: normalised coordinate -0.25"),
    (YOLO_PRED, YOLO_PRED, "gt/a.txt:1: a GT line with a confidence"),
    (YOLO_GT, YOLO_GT, "pred/a.txt:1: a prediction line without a confidence"),
])
def test_yolo_malformed(rpx, tmp_path, pred, gt, message):
    pred_dir, gt_dir = _pair(tmp_path, pred, gt, ".txt")
    (tmp_path / "names.txt").write_text("cat\ndog\n")
    result = rpx(["eval", "detection", "--pred-dir", str(pred_dir), "--gt-dir", str(gt_dir),
                  "--pred-format", "yolo", "--gt-format", "yolo", "--image-size", "64,64",
                  "--class-names", str(tmp_path / "names.txt")])
    assert result.exit_code == 1
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_obb_not_a_rectangle(rpx, tmp_path):
    pred = "0 0.1 0.1 0.5 0.1 0.5 0.5 0.1 0.5 0.9\n"
    gt = "0 0.1 0.1 0.5 0.1 0.6 0.5 0.1 0.5\n"  # a trapezium
    pred_dir, gt_dir = _pair(tmp_path, pred, gt, ".txt")
    result = rpx(["eval", "detection", "--geometry", "rotated", "--pred-dir", str(pred_dir),
                  "--gt-dir", str(gt_dir), "--image-size", "100,100"])
    assert result.exit_code == 1
    assert "gt/a.txt:1: the four corners do not form a rectangle" in result.stderr


def test_yolo_needs_image_size(rpx, tmp_path):
    pred_dir, gt_dir = _pair(tmp_path, YOLO_PRED, YOLO_GT, ".txt")
    result = rpx(["eval", "detection", "--pred-dir", str(pred_dir), "--gt-dir", str(gt_dir)])
    assert result.exit_code == 1
    assert "--images-dir" in result.stderr and "--image-size" in result.stderr


@pytest.mark.parametrize(("gt", "message"), [
    ("<annotation><object><name>cat</name><bndbox><xmin>5</xmin><ymin>5</ymin><xmax>2</xmax>"
     "<ymax>9</ymax></bndbox></object></annotation>", "object 0: xmax < xmin"),
    ("<annotation><object><name>cat</name></object></annotation>", "object 0: missing <bndbox>"),
    ("<annotation><object>", "not well-formed XML"),
    ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]><annotation>&lol;</annotation>',
     "document type declaration"),
])
def test_voc_malformed(rpx, tmp_path, gt, message):
    pred = ("<annotation><object><name>cat</name><score>0.5</score><bndbox><xmin>1</xmin>"
            "<ymin>1</ymin><xmax>9</xmax><ymax>9</ymax></bndbox></object></annotation>")
    pred_dir, gt_dir = _pair(tmp_path, pred, gt, ".xml")
    result = rpx(["eval", "detection", "--pred-dir", str(pred_dir), "--gt-dir", str(gt_dir),
                  "--pred-format", "voc", "--gt-format", "voc"])
    assert result.exit_code == 1
    assert message in result.stderr and "gt/a.xml" in result.stderr


def test_kitti_and_dota_malformed(rpx, tmp_path):
    pred_dir, gt_dir = _pair(tmp_path, "Car 0 0 0 1 1 5 5 1 1 1 1 1 1 0 0.5\n",
                             "Car 0 0 0 1 1 5 5 1 1 1 1 1 1 0 0.5\n", ".txt")
    result = rpx(["eval", "detection", "--pred-dir", str(pred_dir), "--gt-dir", str(gt_dir),
                  "--pred-format", "kitti", "--gt-format", "kitti"])
    assert result.exit_code == 1
    assert "gt/a.txt:1: 16 fields where a KITTI GT line has 15 (a GT line with a score?" in result.stderr


def test_auto_refuses_an_ambiguous_folder(rpx, tmp_path):
    pred_dir, gt_dir = _pair(tmp_path, "[]", "[]", ".json")
    (gt_dir / "b.xml").write_text("<annotation></annotation>")
    result = rpx(["eval", "detection", "--pred-dir", str(pred_dir), "--gt-dir", str(gt_dir),
                  "--missing", "skip"])
    assert result.exit_code == 1
    assert "read as rpx or voc: give --gt-format rpx" in result.stderr


def test_labelme_skips_what_it_cannot_express(rpx, tmp_path):
    """SPEC §13: inexpressible shapes are skipped, counted per kind in
    run_provenance.inputs.<input>.skipped (only when something was), one line each."""
    import json

    shapes = [{"label": "cat", "points": [[1, 1], [9, 9]], "shape_type": "rectangle"},
              {"label": "cat", "points": [[5, 5], [7, 7]], "shape_type": "circle"},
              {"label": "cat", "points": [[5, 5], [7, 7]], "shape_type": "line"}]
    gt = json.dumps({"shapes": shapes, "imageWidth": 20, "imageHeight": 20})
    pred = json.dumps({"shapes": [{**shapes[0], "score": 0.5}], "imageWidth": 20, "imageHeight": 20})
    pred_dir, gt_dir = _pair(tmp_path, pred, gt, ".json")
    (gt_dir / "b.json").write_text(gt)
    (pred_dir / "b.json").write_text(pred)
    result = rpx(["eval", "detection", "--pred-dir", str(pred_dir), "--gt-dir", str(gt_dir)])
    assert result.exit_code == 0, result.stderr
    assert "gt_dir: 2 labelme_circle skipped" in result.stderr
    assert "gt_dir: 2 labelme_line skipped" in result.stderr
    report = json.loads(result.stdout)
    inputs = report["run_provenance"]["inputs"]
    assert inputs["gt_dir"]["skipped"] == {"labelme_circle": 2, "labelme_line": 2}
    assert "skipped" not in inputs["pred_dir"]
    assert report["dataset"]["pooled"]["f1"] == 1.0


def test_skipped_counts_survive_shards(rpx, tmp_path):
    """Each shard counts what its pairs skipped; rpx merge sums them."""
    import json

    circle = {"label": "cat", "points": [[5, 5], [7, 7]], "shape_type": "circle"}
    box = {"label": "cat", "points": [[1, 1], [9, 9]], "shape_type": "rectangle"}
    pred_dir, gt_dir = tmp_path / "pred", tmp_path / "gt"
    pred_dir.mkdir()
    gt_dir.mkdir()
    for i in range(8):
        shapes = [box] + [circle] * (i % 3)
        (gt_dir / f"s{i}.json").write_text(json.dumps({"shapes": shapes, "imageWidth": 20,
                                                       "imageHeight": 20}))
        (pred_dir / f"s{i}.json").write_text(json.dumps({"shapes": [{**box, "score": 0.5}],
                                                         "imageWidth": 20, "imageHeight": 20}))
    parts = []
    for k in (1, 2, 3):
        out = tmp_path / f"part{k}.json"
        result = rpx(["eval", "detection", "--pred-dir", str(pred_dir), "--gt-dir", str(gt_dir),
                      "--shard", f"{k}/3", "-o", str(out)])
        assert result.exit_code == 0, result.stderr
        parts.append(str(out))
    merged = rpx(["merge", *parts, "--out", str(tmp_path / "merged.json")])
    assert merged.exit_code == 0, merged.stderr
    inputs = json.loads((tmp_path / "merged.json").read_text())["run_provenance"]["inputs"]
    assert inputs["gt_dir"]["skipped"] == {"labelme_circle": sum(i % 3 for i in range(8))}
