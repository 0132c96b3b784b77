"""KITTI ``DontCare`` (SPEC §13): an ignore region of every class — a detection of any class
whose intersection over its own area with one reaches the IoU threshold is ignored, in
every view (rows, pooled, confusion, COCO, TIDE). Hand-computed on one image, then the
equality rule: a generated dataset with regions read from KITTI equals the rpx JSON with
``"every_class": 1`` and the COCO files holding each region as a crowd region of every
category."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rpx_cli.io.boxes import Boxes
from tests import format_data as fd
from tests.test_formats import _comparable, assert_close, run

TAIL = "1.5 1.6 3.9 1.0 1.7 20.0 0.1"  # h w l x y z rotation_y: not read by 2D detection


def _line(label: str, box: tuple[float, float, float, float], score: float | None = None) -> str:
    fields = [label, "0.00", "0", "-1.5", *(f"{v:g}" for v in box), TAIL]
    return " ".join(fields + ([f"{score:g}"] if score is not None else []))


@pytest.fixture
def scene(tmp_path):
    """One image: a Car and a Pedestrian GT, a DontCare region [20, 0, 40, 20] (area 400).

    Detections (score): Car on the Car (0.9, TP), Pedestrian inside the region (0.8:
    intersection over its area 100 / 100 = 1, ignored), Cyclist half on it (0.7: 50 / 100 =
    0.5, ignored at IoU 0.5 only), Car on nothing (0.6, FP), Pedestrian barely on it (0.5:
    20 / 100 = 0.2, FP), Pedestrian on the Pedestrian (0.4, TP)."""
    gt = [_line("Car", (0, 0, 10, 10)), _line("Pedestrian", (100, 100, 110, 110)),
          _line("DontCare", (20, 0, 40, 20))]
    pred = [_line("Car", (0, 0, 10, 10), 0.9), _line("Pedestrian", (22, 2, 32, 12), 0.8),
            _line("Cyclist", (35, 0, 45, 10), 0.7), _line("Car", (50, 50, 60, 60), 0.6),
            _line("Pedestrian", (38, 0, 48, 10), 0.5), _line("Pedestrian", (100, 100, 110, 110), 0.4)]
    for side, lines in (("gt", gt), ("pred", pred)):
        (tmp_path / side).mkdir()
        (tmp_path / side / "000001.txt").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_dontcare_by_hand(rpx, scene):
    report = run(rpx, "--pred-dir", scene / "pred", "--gt-dir", scene / "gt", "--metrics",
                 "rows,pooled,confusion,coco,errors")
    assert report["params"]["gt_format"] == "kitti"
    row = report["rows"][0]
    # TP: the two exact boxes; FP: the lonely Car and the Pedestrian 0.2 on the region;
    # the Pedestrian and the Cyclist on the region are neither
    assert (row["tp"], row["fp"], row["fn"], row["n_gt"], row["n_pred"]) == (2, 2, 0, 2, 6)
    assert row["precision"] == pytest.approx(2 / 4) and row["recall"] == 1.0
    assert row["f1"] == pytest.approx(2 * 0.5 * 1 / (0.5 + 1))
    pooled = report["dataset"]["pooled"]
    assert (pooled["tp"], pooled["fp"], pooled["fn"]) == (2, 2, 0)
    confusion = report["dataset"]["confusion"]
    assert confusion["labels"] == ["Car", "Cyclist", "Pedestrian", "background"]
    # the DontCare region is no class; the detections on it are not background
    assert confusion["matrix"] == [[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0], [1, 0, 1, 0]]
    coco = report["dataset"]["coco"]
    # Car: TP then FP -> AP 1; Pedestrian: FP (0.5) then TP (0.4) -> precision 1/2 at recall 1
    # at every IoU threshold (the 0.8 one lies wholly in the region); Cyclist: no GT
    assert coco["per_class"]["Car"]["AP"] == pytest.approx(1.0)
    assert coco["per_class"]["Pedestrian"]["AP"] == pytest.approx(0.5)
    assert coco["per_class"]["Cyclist"]["AP"] is None
    assert coco["AP"] == pytest.approx((1.0 + 0.5) / 2)
    # TIDE (tidecv's rules): a region excuses when the intersection over the detection's
    # area is > 0.5 (strict): the Cyclist's 0.5 does not, so Cyclist (detections, no GT)
    # scores 0 and counts in the mean
    assert report["dataset"]["errors"]["ap50"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)


def test_without_the_region_they_are_false_positives(rpx, scene):
    """The same files without the DontCare line: both detections on it are FPs."""
    gt = scene / "gt" / "000001.txt"
    gt.write_text("".join(line + "\n" for line in gt.read_text().splitlines()
                          if not line.startswith("DontCare")))
    report = run(rpx, "--pred-dir", scene / "pred", "--gt-dir", scene / "gt")
    row = report["rows"][0]
    assert (row["tp"], row["fp"], row["fn"]) == (2, 4, 0)
    # Pedestrian: FP 0.8, FP 0.5, TP 0.4 -> 1/3
    assert report["dataset"]["coco"]["per_class"]["Pedestrian"]["AP"] == pytest.approx(1 / 3)
    assert report["dataset"]["confusion"]["matrix"][3] == [1, 1, 2, 0]


def test_a_region_excuses_at_the_iou_threshold(rpx, scene):
    """At --iou-threshold 0.6 the Cyclist (intersection over its area 0.5) is a false
    positive again, as a crowd region's detection is at that threshold."""
    report = run(rpx, "--pred-dir", scene / "pred", "--gt-dir", scene / "gt",
                 "--iou-threshold", "0.6")
    assert (report["rows"][0]["tp"], report["rows"][0]["fp"]) == (2, 3)
    assert report["dataset"]["confusion"]["matrix"][3] == [1, 1, 1, 0]


def test_a_dontcare_prediction_is_skipped_and_counted(rpx, scene):
    pred = scene / "pred" / "000001.txt"
    pred.write_text(pred.read_text() + _line("DontCare", (0, 0, 5, 5), 0.3) + "\n")
    result = rpx(["eval", "detection", "--pred-dir", str(scene / "pred"), "--gt-dir", str(scene / "gt")])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["run_provenance"]["inputs"]["pred_dir"]["skipped"] == {"kitti_dontcare_prediction": 1}
    assert report["rows"][0]["n_pred"] == 6
    assert "1 kitti_dontcare_prediction skipped" in result.stderr


@pytest.mark.parametrize("geometry", ["box", "rotated"])
def test_dontcare_equals_crowd_regions_of_every_class(rpx, tmp_path, geometry):
    """KITTI with DontCare == rpx JSON with every_class == COCO files with one crowd region
    per category (box) — every view, TIDE included; rotated boxes at angle 0 equal boxes."""
    images = fd.dataset(21, n=16, regions=True)
    assert sum(len(image.regions) for image in images) >= 5
    metrics = ["--metrics", "rows,pooled,confusion,coco,errors"] if geometry == "box" else []
    geo = ["--geometry", geometry]
    kitti = run(rpx, "--pred-dir", fd.write_kitti(images, tmp_path / "kp", "pred"),
                "--gt-dir", fd.write_kitti(images, tmp_path / "kg", "gt"), *geo, *metrics)
    mine = run(rpx, "--pred-dir", fd.write_rpx(images, tmp_path / "rp", "pred"),
               "--gt-dir", fd.write_rpx(images, tmp_path / "rg", "gt"), *metrics)
    assert_close(_comparable(kitti), _comparable(mine))
    gt, dt = fd.write_coco(images, tmp_path / "coco")
    coco = run(rpx, "--coco-gt", gt, "--coco-dt", dt, *metrics)
    assert_close(_comparable(kitti), _comparable(coco))
    plain = [fd.Image(i.stem, i.size, i.gt, i.pred) for i in images]
    without = run(rpx, "--pred-dir", fd.write_kitti(plain, tmp_path / "np", "pred"),
                  "--gt-dir", fd.write_kitti(plain, tmp_path / "ng", "gt"))
    assert kitti["dataset"]["pooled"]["fp"] < without["dataset"]["pooled"]["fp"]


def test_dontcare_under_polygons(rpx, tmp_path):
    """Polygons intersect per pair in the workers: the scoped regions are among them."""
    pytest.importorskip("shapely")
    images = fd.dataset(22, n=10, regions=True)
    args = ["--pred-dir", fd.write_kitti(images, tmp_path / "kp", "pred"),
            "--gt-dir", fd.write_kitti(images, tmp_path / "kg", "gt")]
    boxes = run(rpx, *args)
    polygons = run(rpx, *args, "--geometry", "polygon")
    for key in ("tp", "fp", "fn"):
        assert polygons["dataset"]["pooled"][key] == boxes["dataset"]["pooled"][key]
    assert polygons["dataset"]["coco"]["AP"] == pytest.approx(boxes["dataset"]["coco"]["AP"], abs=1e-12)


def test_scoped_by_hand():
    """Boxes.scoped: the other objects first, then each region once per detected class in
    the vocabulary's order, as crowd regions; no region without a detection."""
    gt = Boxes(np.array([[0, 0, 1, 1], [5, 5, 2, 2], [9, 9, 1, 1]], np.float64), ["b", "DontCare", "a"],
               None, np.array([False, True, False]), np.array([1.0, 4.0, 1.0]),
               every_class=np.array([False, True, False]))
    out = gt.scoped(["z", "10", "z", "2"])
    assert out.labels == ["b", "a", "2", "10", "z"]
    assert out.crowd.tolist() == [False, False, True, True, True]
    assert out.every_class is None
    assert np.array_equal(out.shape[2:], np.repeat(gt.shape[1:2], 3, axis=0))
    assert out.area.tolist() == [1.0, 1.0, 4.0, 4.0, 4.0]
    assert len(gt.scoped([])) == 2


def test_convert_writes_a_crowd_region_per_category(rpx, tmp_path):
    images = fd.dataset(23, n=8, regions=True)
    pred, gt = fd.write_kitti(images, tmp_path / "kp", "pred"), fd.write_kitti(images, tmp_path / "kg", "gt")
    result = rpx(["convert", "--to", "coco", "--gt-dir", str(gt), "--pred-dir", str(pred),
                  "-o", str(tmp_path / "coco")])
    assert result.exit_code == 0, result.stderr
    instances = json.loads((tmp_path / "coco" / "instances.json").read_text())
    assert "DontCare" not in {category["name"] for category in instances["categories"]}
    crowd = [a for a in instances["annotations"] if a["iscrowd"]]
    assert len(crowd) == sum(len(i.regions) for i in images) * len(instances["categories"])
    files = run(rpx, "--coco-gt", tmp_path / "coco" / "instances.json",
                "--coco-dt", tmp_path / "coco" / "results.json")
    assert_close(_comparable(files), _comparable(run(rpx, "--pred-dir", pred, "--gt-dir", gt)))
