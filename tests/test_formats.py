"""The equality rule (docs/formats.md): one generated dataset written in every format rpx
reads — and in mixed pairs — gives the report of the COCO files (or rpx's JSON, for shapes
COCO cannot hold) holding the same objects: every number, 1e-12; ``params.*_format``,
paths and provenance aside."""

from __future__ import annotations

import json
import math

import pytest

from tests import format_data as fd


def _comparable(report: dict) -> dict:
    rows = [{k: v for k, v in row.items() if k not in ("pred_path", "gt_path")}
            for row in report.get("rows", [])]
    return {"aggregate": report["aggregate"], "dataset": report["dataset"], "rows": rows,
            "n_pairs": report["n_pairs"], "errors": report["errors"]}


def assert_close(a, b, path="") -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: keys {sorted(set(a) ^ set(b))}"
        for key in a:
            assert_close(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: lengths"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), \
            f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def run(rpx, *args) -> dict:
    metrics = [] if "--metrics" in args else ["--metrics", "rows,pooled,confusion,coco"]
    result = rpx(["eval", "detection", *map(str, args), *metrics])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def coco_report(rpx, images, tmp_path, form="box", *extra) -> dict:
    gt, dt = fd.write_coco(images, tmp_path / "coco", form)
    return run(rpx, "--coco-gt", gt, "--coco-dt", dt, *extra)


@pytest.fixture
def images():
    return fd.dataset(1)


def test_yolo_detect_equals_coco(rpx, tmp_path, images):
    pred = fd.write_yolo(images, tmp_path / "pred", "pred")
    gt = fd.write_yolo(images, tmp_path / "gt", "gt")
    yaml = fd.write_data_yaml(tmp_path / "data.yaml")
    images_dir = tmp_path / "images"
    images_dir.mkdir()
    for image in images:  # headers only: a PNG of the right size, never decoded
        _png_header(images_dir / f"{image.stem}.png", *image.size)
    report = run(rpx, "--pred-dir", pred, "--gt-dir", gt, "--data-yaml", yaml, "--images-dir", images_dir)
    assert report["params"]["pred_format"] == report["params"]["gt_format"] == "yolo"
    assert_close(_comparable(report), _comparable(coco_report(rpx, images, tmp_path)))


def _png_header(path, width, height) -> None:
    import struct
    import zlib

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk
                     + struct.pack(">I", zlib.crc32(chunk)))


@pytest.mark.parametrize("gt_format", ["voc", "kitti", "labelme", "yolo"])
def test_mixed_pairs_equal_coco(rpx, tmp_path, gt_format):
    """YOLO predictions against GT of each format (VOC with difficult GT, ignored)."""
    images = fd.dataset(2, difficult=gt_format == "voc")
    pred = fd.write_yolo(images, tmp_path / "pred", "pred")
    writer = {"voc": fd.write_voc, "kitti": fd.write_kitti, "labelme": fd.write_labelme,
              "yolo": fd.write_yolo}[gt_format]
    gt = writer(images, tmp_path / "gt", "gt")
    yaml = fd.write_data_yaml(tmp_path / "data.yaml")
    # sizes differ per image: give them through headers
    images_dir = tmp_path / "images"
    images_dir.mkdir()
    for image in images:
        _png_header(images_dir / f"{image.stem}.png", *image.size)
    report = run(rpx, "--pred-dir", pred, "--gt-dir", gt, "--data-yaml", yaml, "--images-dir", images_dir)
    assert report["params"]["gt_format"] == gt_format
    assert report["params"]["pred_format"] == "yolo"
    assert_close(_comparable(report), _comparable(coco_report(rpx, images, tmp_path)))


@pytest.mark.parametrize("fmt", ["voc", "kitti", "labelme"])
def test_pixel_formats_equal_coco(rpx, tmp_path, fmt):
    images = fd.dataset(3, difficult=fmt == "voc")
    writer = {"voc": fd.write_voc, "kitti": fd.write_kitti, "labelme": fd.write_labelme}[fmt]
    pred, gt = writer(images, tmp_path / "pred", "pred"), writer(images, tmp_path / "gt", "gt")
    report = run(rpx, "--pred-dir", pred, "--gt-dir", gt)
    assert report["params"]["gt_format"] == report["params"]["pred_format"] == fmt
    assert_close(_comparable(report), _comparable(coco_report(rpx, images, tmp_path)))


def test_difficult_is_ignored_gt(rpx, tmp_path):
    """rpx JSON with ``ignore`` equals VOC with ``difficult`` equals COCO with ``ignore``."""
    images = fd.dataset(4, difficult=True)
    assert any(obj.difficult for image in images for obj in image.gt)
    voc = run(rpx, "--pred-dir", fd.write_voc(images, tmp_path / "vp", "pred"),
              "--gt-dir", fd.write_voc(images, tmp_path / "vg", "gt"))
    mine = run(rpx, "--pred-dir", fd.write_rpx(images, tmp_path / "rp", "pred"),
               "--gt-dir", fd.write_rpx(images, tmp_path / "rg", "gt"))
    assert_close(_comparable(voc), _comparable(mine))
    plain = [fd.Image(i.stem, i.size, [o for o in i.gt if not o.difficult], i.pred) for i in images]
    without = run(rpx, "--pred-dir", fd.write_rpx(plain, tmp_path / "pp", "pred"),
                  "--gt-dir", fd.write_rpx(plain, tmp_path / "pg", "gt"))
    # an ignored GT is not counted in recall
    assert voc["dataset"]["pooled"]["tp"] + voc["dataset"]["pooled"]["fn"] == \
        without["dataset"]["pooled"]["tp"] + without["dataset"]["pooled"]["fn"]


@pytest.mark.parametrize("fmt", ["yolo", "dota"])
def test_rotated_equals_rpx(rpx, tmp_path, fmt):
    images = fd.dataset(5, rotated=True)
    expected = run(rpx, "--geometry", "rotated",
                   "--pred-dir", fd.write_rpx(images, tmp_path / "rp", "pred", "rotated"),
                   "--gt-dir", fd.write_rpx(images, tmp_path / "rg", "gt", "rotated"))
    if fmt == "yolo":
        pred = fd.write_yolo(images, tmp_path / "pred", "pred", "quad")
        gt = fd.write_yolo(images, tmp_path / "gt", "gt", "quad")
        extra = ["--data-yaml", fd.write_data_yaml(tmp_path / "data.yaml"),
                 "--images-dir", _headers(images, tmp_path)]
    else:
        pred = fd.write_dota(images, tmp_path / "pred", "pred")
        gt = fd.write_dota(images, tmp_path / "gt", "gt")
        extra = []
    report = run(rpx, "--geometry", "rotated", "--pred-dir", pred, "--gt-dir", gt, *extra)
    assert_close(_comparable(report), _comparable(expected))


def _headers(images, tmp_path):
    folder = tmp_path / "images"
    folder.mkdir(exist_ok=True)
    for image in images:
        _png_header(folder / f"{image.stem}.png", *image.size)
    return folder


def test_dota_polygons_equal_rpx(rpx, tmp_path):
    pytest.importorskip("shapely")
    images = fd.dataset(6, rotated=True, difficult=True)
    expected = run(rpx, "--geometry", "polygon",
                   "--pred-dir", fd.write_rpx(images, tmp_path / "rp", "pred", "polygon"),
                   "--gt-dir", fd.write_rpx(images, tmp_path / "rg", "gt", "polygon"))
    report = run(rpx, "--geometry", "polygon", "--pred-dir", fd.write_dota(images, tmp_path / "p", "pred"),
                 "--gt-dir", fd.write_dota(images, tmp_path / "g", "gt"))
    assert report["params"]["gt_format"] == "dota"
    assert_close(_comparable(report), _comparable(expected))


def test_yolo_segment_equals_coco(rpx, tmp_path):
    pytest.importorskip("pycocotools")
    images = fd.dataset(7)
    args = ["--iou-type", "segm", "--data-yaml", fd.write_data_yaml(tmp_path / "data.yaml"),
            "--images-dir", _headers(images, tmp_path)]
    report = run(rpx, "--pred-dir", fd.write_yolo(images, tmp_path / "p", "pred", "polygon"),
                 "--gt-dir", fd.write_yolo(images, tmp_path / "g", "gt", "polygon"), *args)
    assert_close(_comparable(report), _comparable(coco_report(rpx, images, tmp_path, "polygon",
                                                              "--iou-type", "segm")))


def test_yolo_pose_equals_coco(rpx, tmp_path):
    images = fd.dataset(8, keypoints=True)
    sigmas = ",".join(["0.5"] * fd.K)
    args = ["--iou-type", "keypoints", "--oks-sigmas", sigmas,
            "--data-yaml", fd.write_data_yaml(tmp_path / "data.yaml", kpt=True),
            "--images-dir", _headers(images, tmp_path)]
    report = run(rpx, "--pred-dir", fd.write_yolo(images, tmp_path / "p", "pred", "keypoints"),
                 "--gt-dir", fd.write_yolo(images, tmp_path / "g", "gt", "keypoints"), *args)
    assert_close(_comparable(report), _comparable(coco_report(
        rpx, images, tmp_path, "keypoints", "--iou-type", "keypoints", "--oks-sigmas", sigmas)))


def test_shards_and_jobs(rpx, tmp_path):
    images = fd.dataset(9, difficult=True)
    pred, gt = fd.write_yolo(images, tmp_path / "p", "pred"), fd.write_voc(images, tmp_path / "g", "gt")
    args = ["--pred-dir", pred, "--gt-dir", gt, "--data-yaml", fd.write_data_yaml(tmp_path / "d.yaml"),
            "--images-dir", _headers(images, tmp_path)]
    whole = run(rpx, *args)
    assert_close(_comparable(run(rpx, *args, "--jobs", "2")), _comparable(whole))
    parts = []
    for k in (1, 2):
        out = tmp_path / f"part{k}.json"
        result = rpx(["eval", "detection", *map(str, args), "--metrics", "rows,pooled,confusion,coco",
                      "--shard", f"{k}/2", "-o", str(out)])
        assert result.exit_code == 0, result.stderr
        parts.append(str(out))
    merged = rpx(["merge", *parts, "--out", str(tmp_path / "merged.json")])
    assert merged.exit_code == 0, merged.stderr
    assert_close(_comparable(json.loads((tmp_path / "merged.json").read_text())), _comparable(whole))


@pytest.mark.parametrize("form", ["box", "polygon", "keypoints"])
def test_convert_round_trips_through_pycocotools(rpx, tmp_path, form):
    """``rpx convert --to coco`` of YOLO predictions and VOC / YOLO GT: pycocotools loads the
    files, and rpx reads them back to the folders' report."""
    pycocotools = pytest.importorskip("pycocotools.coco")
    images = fd.dataset(12, difficult=form == "box", keypoints=form == "keypoints")
    yolo_form = {"box": "box", "polygon": "polygon", "keypoints": "keypoints"}[form]
    pred = fd.write_yolo(images, tmp_path / "p", "pred", yolo_form)
    gt = fd.write_voc(images, tmp_path / "g", "gt") if form == "box" else \
        fd.write_yolo(images, tmp_path / "g", "gt", yolo_form)
    kind = {"box": [], "polygon": ["--iou-type", "segm"],
            "keypoints": ["--iou-type", "keypoints", "--oks-sigmas", ",".join(["0.5"] * fd.K)]}[form]
    common = [*kind, "--data-yaml", fd.write_data_yaml(tmp_path / "d.yaml", kpt=form == "keypoints"),
              "--images-dir", _headers(images, tmp_path)]
    result = rpx(["convert", "--to", "coco", "--gt-dir", str(gt), "--pred-dir", str(pred),
                  *map(str, common), "-o", str(tmp_path / "coco")])
    assert result.exit_code == 0, result.stderr
    instances, results = tmp_path / "coco" / "instances.json", tmp_path / "coco" / "results.json"
    coco = pycocotools.COCO(str(instances))
    assert len(coco.getImgIds()) == len(images)
    assert {c["name"] for c in coco.loadCats(coco.getCatIds())} <= set(fd.NAMES)
    if json.loads(results.read_text()):
        coco.loadRes(str(results))
    folders = run(rpx, "--pred-dir", pred, "--gt-dir", gt, *common)
    files = run(rpx, "--coco-gt", instances, "--coco-dt", results, *kind)
    assert_close(_comparable(files), _comparable(folders))
