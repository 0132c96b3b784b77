"""The formats whose files hold the whole set (docs/formats.md "Files of the whole set"):
CVAT for images 1.1, Open Images CSVs, VOC's per-class results files and DOTA's Task1
files, against a folder side or another set — the equality rule (the COCO files' report,
every number), pairing and --missing, shards and --jobs, digests of the files read, auto,
skipped counts, malformed input."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from tests import format_data as fd
from tests.test_formats import _comparable, _headers, assert_close, coco_report, run


def _yaml(tmp_path):
    return fd.write_data_yaml(tmp_path / "data.yaml")


def test_yolo_predictions_against_a_cvat_export(rpx, tmp_path):
    """Ultralytics' `yolo predict save_txt=True save_conf=True` output against a CVAT for
    images export (its folder holding annotations.xml): the COCO files' report."""
    images = fd.dataset(31)
    export = tmp_path / "export"
    fd.write_cvat(images, export / "annotations.xml", "gt")
    pred = fd.write_yolo(images, tmp_path / "labels", "pred")
    report = run(rpx, "--pred-dir", pred, "--gt-dir", export, "--data-yaml", _yaml(tmp_path),
                 "--images-dir", _headers(images, tmp_path), "--missing", "empty")
    assert report["params"]["gt_format"] == "cvat" and report["params"]["pred_format"] == "yolo"
    assert_close(_comparable(report), _comparable(coco_report(rpx, images, tmp_path)))
    row = report["rows"][0]
    assert row["gt_path"] == str(export / "annotations.xml")


def test_cvat_against_cvat_given_as_files(rpx, tmp_path):
    images = fd.dataset(32)
    gt = fd.write_cvat(images, tmp_path / "gt.xml", "gt")
    pred = fd.write_cvat(images, tmp_path / "pred.xml", "pred")
    report = run(rpx, "--pred-dir", pred, "--gt-dir", gt)
    assert report["params"]["gt_format"] == report["params"]["pred_format"] == "cvat"
    assert_close(_comparable(report), _comparable(coco_report(rpx, images, tmp_path)))
    inputs = json.loads(rpx(["eval", "detection", "--pred-dir", str(pred), "--gt-dir", str(gt)]).stdout)[
        "run_provenance"]["inputs"]
    assert inputs["gt_dir"]["kind"] == "file" and inputs["gt_dir"]["n_files"] == 1
    assert inputs["gt_dir"]["sha256"] == hashlib.sha256(gt.read_bytes()).hexdigest()


@pytest.mark.parametrize("geometry", ["rotated", "polygon"])
def test_cvat_rotated_boxes(rpx, tmp_path, geometry):
    """A box's `rotation` (clockwise on screen) honoured under rotated boxes and polygons:
    the rpx JSON report of the same rectangles."""
    if geometry == "polygon":
        pytest.importorskip("shapely")
    images = fd.dataset(33, rotated=True)
    expected = run(rpx, "--geometry", geometry,
                   "--pred-dir", fd.write_rpx(images, tmp_path / "rp", "pred", geometry),
                   "--gt-dir", fd.write_rpx(images, tmp_path / "rg", "gt", geometry))
    report = run(rpx, "--geometry", geometry,
                 "--pred-dir", fd.write_cvat(images, tmp_path / "p.xml", "pred", "rotated"),
                 "--gt-dir", fd.write_cvat(images, tmp_path / "g.xml", "gt", "rotated"))
    assert_close(_comparable(report), _comparable(expected))


def test_cvat_polygons_as_masks_and_boxes(rpx, tmp_path):
    pytest.importorskip("pycocotools")
    images = fd.dataset(34)
    pred, gt = fd.write_cvat(images, tmp_path / "p.xml", "pred", "polygon"), \
        fd.write_cvat(images, tmp_path / "g.xml", "gt", "polygon")
    masks = run(rpx, "--pred-dir", pred, "--gt-dir", gt, "--iou-type", "segm")
    assert_close(_comparable(masks), _comparable(coco_report(rpx, images, tmp_path, "polygon",
                                                             "--iou-type", "segm")))
    boxes = run(rpx, "--pred-dir", pred, "--gt-dir", gt)  # a polygon's bounding box
    assert_close(_comparable(boxes), _comparable(coco_report(rpx, images, tmp_path)))


def test_cvat_skips_and_counts_what_it_cannot_express(rpx, tmp_path):
    images = fd.dataset(35)
    gt = fd.write_cvat(images, tmp_path / "g.xml", "gt")
    text = gt.read_text().replace(
        "</image>", '<points label="cat" points="1,1;2,2" /><polyline label="cat" points="1,1;5,5" />'
                    '<tag label="daytime" /></image>', 2)
    gt.write_text(text)
    result = rpx(["eval", "detection", "--pred-dir", str(fd.write_cvat(images, tmp_path / "p.xml", "pred")),
                  "--gt-dir", str(gt)])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["run_provenance"]["inputs"]["gt_dir"]["skipped"] == {"cvat_points": 2,
                                                                        "cvat_polyline": 2}
    assert "gt_dir: 2 cvat_points skipped" in result.stderr
    assert_close(_comparable(report), _comparable(coco_report(rpx, images, tmp_path)))


def test_openimages_csvs(rpx, tmp_path):
    """GT and predictions CSVs (the predictions' columns in another order), class ids named
    by --oi-class-descriptions; a group-of GT box is skipped and counted (no protocol scores
    group-of boxes yet)."""
    images = [image for image in fd.dataset(36, n=16) if image.gt]
    groups = [(images[0].stem, 1, (8.0, 8.0, 40.0, 40.0)), (images[2].stem, 0, (4.0, 4.0, 20.0, 24.0))]
    gt = fd.write_openimages(images, tmp_path / "gt.csv", "gt", groups)
    pred = fd.write_openimages(images, tmp_path / "pred.csv", "pred")
    args = ["--pred-dir", pred, "--gt-dir", gt, "--images-dir", _headers(images, tmp_path),
            "--oi-class-descriptions", fd.write_class_descriptions(tmp_path / "classes.csv")]
    result = rpx(["eval", "detection", *map(str, args), "--metrics", "rows,pooled,confusion,coco"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["params"]["gt_format"] == report["params"]["pred_format"] == "openimages"
    assert report["params"]["oi_class_descriptions"].endswith("classes.csv")
    assert report["run_provenance"]["inputs"]["gt_dir"]["skipped"] == {"openimages_group_of": 2}
    assert "gt_dir: 2 openimages_group_of skipped" in result.stderr
    assert_close(_comparable(report), _comparable(coco_report(rpx, images, tmp_path)))


def test_openimages_without_descriptions_keeps_the_ids(rpx, tmp_path):
    images = [image for image in fd.dataset(37) if image.gt]
    report = run(rpx, "--pred-dir", fd.write_openimages(images, tmp_path / "p.csv", "pred"),
                 "--gt-dir", fd.write_openimages(images, tmp_path / "g.csv", "gt"),
                 "--image-size", "512,512")
    assert set(report["dataset"]["coco"]["per_class"]) <= set(fd.OI_IDS.values())


@pytest.mark.parametrize("prefix", ["comp4_det_test_", ""])
def test_voc_results_files_against_voc_xml(rpx, tmp_path, prefix):
    """The devkit's per-class results files (1-based boxes) against VOC XML with difficult GT;
    an image no file names is an image without detections."""
    images = fd.by_class(fd.dataset(38, difficult=True))
    images[3].pred.clear()  # an image without detections: no results line names it
    results = fd.write_voc_results(images, tmp_path / "results", prefix)
    report = run(rpx, "--pred-dir", results, "--gt-dir", fd.write_voc(images, tmp_path / "gt", "gt"))
    assert report["params"]["pred_format"] == report["params"]["gt_format"] == "voc"
    assert_close(_comparable(report), _comparable(coco_report(rpx, images, tmp_path)))
    assert report["unpaired"] == {"pred_only": [], "gt_only": []}
    empty = next(row for row, image in zip(report["rows"], images, strict=True) if not image.pred)
    assert empty["n_pred"] == 0 and empty["pred_path"] == str(results)
    inputs = json.loads(rpx(["eval", "detection", "--pred-dir", str(results), "--gt-dir",
                             str(tmp_path / "gt")]).stdout)["run_provenance"]["inputs"]
    files = sorted(results.iterdir())
    text = "".join(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}\n" for f in files)
    assert inputs["pred_dir"]["n_files"] == len(fd.NAMES)
    assert inputs["pred_dir"]["sha256"] == hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("geometry", ["rotated", "polygon"])
def test_task1_results_against_dota(rpx, tmp_path, geometry):
    if geometry == "polygon":
        pytest.importorskip("shapely")
    images = fd.by_class(fd.dataset(39, rotated=True, difficult=True))
    expected = run(rpx, "--geometry", geometry,
                   "--pred-dir", fd.write_rpx(images, tmp_path / "rp", "pred", geometry),
                   "--gt-dir", fd.write_rpx(images, tmp_path / "rg", "gt", geometry))
    report = run(rpx, "--geometry", geometry, "--pred-dir", fd.write_task1(images, tmp_path / "task1"),
                 "--gt-dir", fd.write_dota(images, tmp_path / "gt", "gt"))
    assert report["params"]["pred_format"] == report["params"]["gt_format"] == "dota"
    assert_close(_comparable(report), _comparable(expected))


def test_pairing_a_set_with_a_folder(rpx, tmp_path):
    """A GT set lists the images: a listed image without a prediction file is unpaired
    (--missing), a prediction file of an image it does not list is pred_only; a prediction
    set covers every image, and one of an image the GT lacks is pred_only."""
    images = fd.dataset(40)
    gt = fd.write_cvat(images, tmp_path / "g.xml", "gt")
    pred = fd.write_yolo(images, tmp_path / "p", "pred")
    (pred / f"{images[0].stem}.txt").unlink()
    (pred / "stray.txt").write_text("0 0.5 0.5 0.25 0.25 0.5\n")
    common = ["--pred-dir", str(pred), "--gt-dir", str(gt), "--image-size", "512,512"]
    failed = rpx(["eval", "detection", *common])
    assert failed.exit_code == 1
    assert images[0].stem in failed.stderr and "stray" in failed.stderr
    report = json.loads(rpx(["eval", "detection", *common, "--missing", "empty"]).stdout)
    assert report["unpaired"] == {"pred_only": ["stray"], "gt_only": [images[0].stem]}
    assert report["n_pairs"] == len(images)
    skipped = json.loads(rpx(["eval", "detection", *common, "--missing", "skip"]).stdout)
    assert skipped["n_pairs"] == len(images) - 1
    extra = fd.Image("extra", (64, 64), [], [fd.Obj(0, (1, 1, 9, 9), 0.5)])
    results = fd.write_voc_results(images[1:] + [extra], tmp_path / "results")
    voc = rpx(["eval", "detection", "--pred-dir", str(results), "--gt-dir",
               str(fd.write_voc(images, tmp_path / "vg", "gt")), "--missing", "skip"])
    assert voc.exit_code == 0, voc.stderr
    assert json.loads(voc.stdout)["unpaired"] == {"pred_only": ["extra"], "gt_only": []}


def test_sets_with_shards_and_jobs(rpx, tmp_path):
    images = fd.by_class(fd.dataset(41, difficult=True))
    args = ["--pred-dir", fd.write_voc_results(images, tmp_path / "results"),
            "--gt-dir", fd.write_cvat(images, tmp_path / "g.xml", "gt")]
    whole = run(rpx, *args)
    assert_close(_comparable(run(rpx, *args, "--jobs", "2")), _comparable(whole))
    parts = []
    for k in (1, 2, 3):
        out = tmp_path / f"part{k}.json"
        result = rpx(["eval", "detection", *map(str, args), "--metrics", "rows,pooled,confusion,coco",
                      "--shard", f"{k}/3", "-o", str(out)])
        assert result.exit_code == 0, result.stderr
        parts.append(str(out))
    merged = rpx(["merge", *parts, "--out", str(tmp_path / "merged.json")])
    assert merged.exit_code == 0, merged.stderr
    assert_close(_comparable(json.loads((tmp_path / "merged.json").read_text())), _comparable(whole))


def test_convert_a_cvat_export(rpx, tmp_path):
    images = fd.dataset(42)
    gt = fd.write_cvat(images, tmp_path / "g.xml", "gt")
    pred = fd.write_voc_results(fd.by_class(images), tmp_path / "results")
    result = rpx(["convert", "--to", "coco", "--gt-dir", str(gt), "--pred-dir", str(pred),
                  "-o", str(tmp_path / "coco")])
    assert result.exit_code == 0, result.stderr
    instances = json.loads((tmp_path / "coco" / "instances.json").read_text())
    assert [(i["width"], i["height"]) for i in instances["images"]] == [i.size for i in images]
    files = run(rpx, "--coco-gt", tmp_path / "coco" / "instances.json",
                "--coco-dt", tmp_path / "coco" / "results.json")
    assert_close(_comparable(files), _comparable(run(rpx, "--pred-dir", pred, "--gt-dir", gt)))


@pytest.mark.parametrize(("name", "text", "message"), [
    ("g.xml", '<annotations><image name="a.jpg"><box label="cat" xtl="5" ytl="1" xbr="2" ybr="9"/>'
              "</image></annotations>", "g.xml: image 'a.jpg' box 0: xbr < xtl"),
    ("g.xml", '<annotations><image name="a.jpg"><polygon label="cat" points="1,1;2,x;3,3"/>'
              "</image></annotations>", "image 'a.jpg' polygon 0: 'points' must be"),
    ("g.xml", '<annotations><image name="a.jpg"/><image name="a.png"/></annotations>',
     "two images have the stem 'a'"),
    ("g.xml", "<annotations><track id=\"0\" label=\"cat\"/></annotations>", "CVAT for video"),
    ("g.csv", "ImageID,LabelName,XMin,XMax,YMin,YMax\na,/m/0cat,0.1,1.5,0.1,0.2\n",
     "g.csv:2: normalised coordinate outside [0, 1]"),
    ("g.csv", "ImageID,LabelName,XMin,XMax,YMin,YMax\na,/m/0cat,0.5,0.1,0.1,0.2\n",
     "g.csv:2: XMax < XMin"),
    ("g.csv", "ImageID,LabelName,XMin,XMax,YMin,YMax\na,/m/0cat,0.1,0.2\n", "g.csv:2: 4 fields"),
    ("g.csv", "ImageID,LabelName,Score,XMin,XMax,YMin,YMax\na,/m/0cat,0.5,0.1,0.2,0.1,0.2\n",
     "a prediction file?"),
])
def test_malformed_sets(rpx, tmp_path, name, text, message):
    gt = tmp_path / name
    gt.write_text(text)
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "a.txt").write_text("0 0.5 0.5 0.25 0.25 0.5\n")
    result = rpx(["eval", "detection", "--pred-dir", str(pred), "--gt-dir", str(gt),
                  "--image-size", "64,64", "--pred-format", "yolo"])
    assert result.exit_code == 1, result.stdout
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_malformed_results_files(rpx, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "comp4_det_test_cat.txt").write_text("a 0.5 1 1 9 9\nb 0.4 1 1 9\n")
    gt = fd.write_voc([fd.Image("a", (64, 64), [fd.Obj(0, (0, 0, 9, 9))])], tmp_path / "gt", "gt")
    result = rpx(["eval", "detection", "--pred-dir", str(results), "--gt-dir", str(gt),
                  "--pred-format", "voc"])
    assert result.exit_code == 1
    assert "comp4_det_test_cat.txt:2: 5 fields where a VOC results line has 6" in result.stderr


def test_results_files_hold_no_gt(rpx, tmp_path):
    images = fd.dataset(43, n=4)
    results = fd.write_voc_results(images, tmp_path / "results")
    result = rpx(["eval", "detection", "--pred-dir", str(results), "--gt-dir", str(results)])
    assert result.exit_code == 1
    assert "results files hold predictions" in result.stderr


def test_a_folder_of_both_layouts_is_refused(rpx, tmp_path):
    images = fd.dataset(44, n=4)
    gt = fd.write_dota(images, tmp_path / "gt", "gt")
    pred = fd.write_task1(images, tmp_path / "pred")
    fd.write_dota(images[:1], pred, "pred")
    result = rpx(["eval", "detection", "--geometry", "rotated", "--pred-dir", str(pred),
                  "--gt-dir", str(gt), "--pred-format", "dota"])
    assert result.exit_code == 1
    assert "files of one image" in result.stderr and "files of the whole set" in result.stderr


def test_group_of_boxes_kept_for_a_protocol_that_scores_them(rpx, tmp_path, monkeypatch):
    """A protocol with group-of (the openimages protocol to come) gets IsGroupOf boxes with
    their flag (Boxes.group, BoxTable.group), written into --shard parts only then."""
    from rpx_cli.io.box_table import BoxTable
    from rpx_cli.io.boxes import Boxes
    from rpx_cli.tasks.detection.parts import PROTOCOLS

    images = [image for image in fd.dataset(45) if image.gt]
    groups = [(images[0].stem, 1, (8.0, 8.0, 40.0, 40.0))]
    args = ["eval", "detection", "--pred-dir", str(fd.write_openimages(images, tmp_path / "p.csv", "pred")),
            "--gt-dir", str(fd.write_openimages(images, tmp_path / "g.csv", "gt", groups)),
            "--image-size", "512,512", "--shard", "1/1"]
    assert rpx([*args, "-o", str(tmp_path / "skipped.json")]).exit_code == 0
    frames = json.loads((tmp_path / "skipped.json").read_text())["state"]["stats"]["frame"]
    assert not any("group" in frame["gt"] for frame in frames)
    monkeypatch.setattr(type(PROTOCOLS["coco"]), "group_of", True)
    result = rpx([*args, "-o", str(tmp_path / "kept.json")])
    assert result.exit_code == 0, result.stderr
    kept = json.loads((tmp_path / "kept.json").read_text())
    assert "skipped" not in kept["run_provenance"]["inputs"]["gt_dir"]
    flagged = [frame["gt"] for frame in kept["state"]["stats"]["frame"] if "group" in frame["gt"]]
    assert len(flagged) == 1 and sum(flagged[0]["group"]) == 1
    boxes = Boxes.from_json(flagged[0])
    assert boxes.group.tolist() == flagged[0]["group"]
    table = BoxTable.from_boxes([boxes, boxes.select(~boxes.group)], {label: k for k, label in
                                                                       enumerate(sorted(set(boxes.labels)))},
                                False)
    assert table.group.sum() == 1 and table.take(np.arange(len(table))).group.sum() == 1
