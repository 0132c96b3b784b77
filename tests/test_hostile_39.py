"""Issue 39, the open findings: each through the real CLI in a child process under a memory
limit and a timeout (``test_hostile``'s harness). What ended in an internal error, a
traceback, a silent wrong result or a decode of hundreds of MB is an input error (exit 1)
or a usage error (exit 2) naming the file, in one line, with no report left behind; and a
broken prediction is scored as an empty one under ``--on-error skip``."""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from helpers import FIXTURES
from panoptic_data import flags, half_iou_pair, write_set
from test_hostile import assert_refused, run_child

pytestmark = pytest.mark.slow


# --- 6. panoptic ---------------------------------------------------------------------------------


def _panoptic(tmp_path: Path) -> dict[str, Path]:
    return write_set(tmp_path, [("half", *half_iou_pair()), ("ok", *half_iou_pair())],
                     image_ids=[42, 43])


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data["annotations"][0])
    path.write_text(json.dumps(data))


def rgb_png_bytes(width: int, height: int) -> bytes:
    """An 8-bit RGB PNG of zeros (all VOID), any size: 16384x10000 is ~0.5 MB."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    compressor = zlib.compressobj(9)
    row = bytes(3 * width + 1)
    data = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", data) + chunk(b"IEND", b""))


def _run_panoptic(paths: dict[str, Path], tmp_path: Path, *extra: str):
    return run_child(["eval", "panoptic", *flags(paths), "-o", str(tmp_path / "r.json"), *extra],
                     tmp_path)


def _skipped(paths: dict[str, Path], tmp_path: Path, dropped: bool) -> None:
    """Under --on-error skip: the image is one error, the other scored; a broken prediction
    is scored as an empty one (its GT missed), a broken GT drops the image."""
    child = _run_panoptic(paths, tmp_path, "--on-error", "skip")
    assert child.returncode == 0, child.stderr
    assert "internal error" not in child.stderr and "Traceback" not in child.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [e["stem"] for e in report["errors"]] == ["half"]
    assert [r["stem"] for r in report["rows"]] == (["ok"] if dropped else ["half", "ok"])
    (tmp_path / "r.json").unlink()


def test_panoptic_gt_area_beyond_int64(tmp_path: Path) -> None:
    paths = _panoptic(tmp_path)
    _edit(paths["gt_json"], lambda ann: ann["segments_info"][0].update(area=2 ** 70))
    child = _run_panoptic(paths, tmp_path)
    assert_refused(child, paths["gt_dir"] / "half.png", "'area' must be a non-negative integer",
                   tmp_path / "r.json")
    _skipped(paths, tmp_path, dropped=True)


@pytest.mark.parametrize("side", ["gt", "pred"])
def test_panoptic_more_than_65533_segments(tmp_path: Path, side: str) -> None:
    paths = _panoptic(tmp_path)
    many = [{"id": i, "category_id": 1} for i in range(1, 65_536)]
    _edit(paths[f"{side}_json"], lambda ann: ann.update(segments_info=many))
    child = _run_panoptic(paths, tmp_path)
    assert_refused(child, paths[f"{side}_dir"] / "half.png", "65,535 segments",
                   tmp_path / "r.json")
    _skipped(paths, tmp_path, dropped=side == "gt")


def test_panoptic_prediction_png_larger_than_its_gt_is_refused_before_decoding(
        tmp_path: Path) -> None:
    """12000x12000 (0.4 MB) would decode into 576 MB of ids: refused from its header."""
    paths = _panoptic(tmp_path)
    (paths["pred_dir"] / "half.png").write_bytes(rgb_png_bytes(12_000, 12_000))
    child = _run_panoptic(paths, tmp_path)
    assert_refused(child, paths["pred_dir"] / "half.png", "is 12000x12000, its ground truth",
                   tmp_path / "r.json")
    _skipped(paths, tmp_path, dropped=False)


def test_panoptic_gt_png_beyond_the_bound_is_refused_before_decoding(tmp_path: Path) -> None:
    paths = _panoptic(tmp_path)
    (paths["gt_dir"] / "half.png").write_bytes(rgb_png_bytes(12_000, 12_000))
    child = _run_panoptic(paths, tmp_path)
    assert_refused(child, paths["gt_dir"] / "half.png", "144000000 pixels",
                   tmp_path / "r.json")
    _skipped(paths, tmp_path, dropped=True)


@pytest.mark.parametrize("area, words", [(70, "differs from its pixel count"),
                                         (None, "has no pixel in the PNG")])
def test_panoptic_gt_warnings_name_the_gt_png(tmp_path: Path, area: int | None,
                                              words: str) -> None:
    paths = _panoptic(tmp_path)
    if area is not None:
        _edit(paths["gt_json"], lambda ann: ann["segments_info"][1].update(area=area))
    else:
        _edit(paths["gt_json"], lambda ann: ann["segments_info"].append(
            {"id": 99, "category_id": 1, "area": 5}))
    child = _run_panoptic(paths, tmp_path)
    assert child.returncode == 0, child.stderr
    line = next(line for line in child.stderr.splitlines() if words in line)
    assert str(paths["gt_dir"] / "half.png") in line and "pred" not in line, line


# --- 8. rpx merge re-checks what a part holds, and can require a keyed seal ----------------------

MASKS = FIXTURES / "detection" / "masks"
HANDS = FIXTURES / "detection" / "hands"


def _parts(tmp_path: Path, kind: str, key: str | None = None) -> list[Path]:
    """Both --shard parts of a run on a fixture (``key``: RPX_PART_KEY while writing)."""
    if kind == "segm":
        args = ["eval", "detection", "--iou-type", "segm", "--coco-gt", str(MASKS / "instances.json"),
                "--coco-dt", str(MASKS / "results.json")]
    else:
        args = ["eval", "detection", *(HANDS / "args").read_text().split(), "--pred-dir",
                str(HANDS / "pred"), "--gt-dir", str(HANDS / "gt")]
    tmp_path.mkdir(exist_ok=True)
    paths = [tmp_path / f"part{k}.json" for k in (1, 2)]
    for k, path in enumerate(paths, 1):
        child = run_child([*args, "--shard", f"{k}/2", "-o", str(path)], tmp_path,
                          env=None if key is None else {"RPX_PART_KEY": key})
        assert child.returncode == 0, child.stderr
    return paths


def _forge(path: Path, change) -> None:
    """Change a part's first frame and recompute its plain seal (what anyone can do)."""
    from rpx_cli.run.part_key import part_seal

    part = json.loads(path.read_text())
    frames = part["state"]["stats"]["frame"]
    change(next(frame for frame in frames if frame["pred"]["area"] and frame["gt"]["area"]))
    part["state"]["seal"] = part_seal(part, parsed=True)
    path.write_text(json.dumps(part))


def _merge(paths: list[Path], tmp_path: Path, key: str | None = None):
    return run_child(["merge", *map(str, paths), "-o", str(tmp_path / "merged.json")], tmp_path,
                     env=None if key is None else {"RPX_PART_KEY": key})


def _set(side: str, key: str, index: int, value) -> object:
    def change(frame: dict) -> None:
        frame[side][key][0] = value if index < 0 else [*frame[side][key][0][:index], value,
                                                       *frame[side][key][0][index + 1:]]
    return change


@pytest.mark.parametrize("kind, change", [
    ("segm", _set("pred", "area", -1, 1e11)),  # beyond COCO's "all" range: an FP made to vanish
    ("segm", _set("pred", "scores", -1, 1e308)),
    ("segm", _set("gt", "area", -1, -5.0)),
    ("keypoints", _set("gt", "box", 2, 7)),  # a GT visibility no reader accepts
    ("keypoints", _set("pred", "area", -1, 1.0)),  # not its box's w·h
], ids=["mask-area-1e11", "score-1e308", "gt-area-negative", "visibility-7", "keypoint-area"])
def test_merge_rechecks_a_resealed_part(tmp_path: Path, kind: str, change) -> None:
    paths = _parts(tmp_path, kind)
    _forge(paths[0], change)
    assert_refused(_merge(paths, tmp_path), paths[0], "malformed", tmp_path / "merged.json")


def test_merge_with_a_part_key_refuses_unsigned_and_resealed_parts(tmp_path: Path) -> None:
    """An edited GT area within every bound (the AP changes, the seal is recomputed) is
    found only by the keyed seal: with RPX_PART_KEY, parts are signed when written and a
    part that is unsigned, resealed or signed with another key is refused."""
    out = tmp_path / "merged.json"
    signed = _parts(tmp_path / "signed", "segm", key="s3cret")
    assert all("signature" in json.loads(p.read_text())["state"] for p in signed)
    child = _merge(signed, tmp_path, key="s3cret")
    assert child.returncode == 0, child.stderr
    out.unlink()
    assert_refused(_merge(signed, tmp_path, key="another"), signed[0],
                   "its signature does not verify with RPX_PART_KEY", out)
    _forge(signed[1], _set("gt", "area", -1, 5000.0))
    assert _merge(signed, tmp_path).returncode == 0  # without the key: as before
    out.unlink()
    assert_refused(_merge(signed, tmp_path, key="s3cret"), signed[1],
                   "its signature does not verify with RPX_PART_KEY", out)
    plain = _parts(tmp_path / "plain", "segm")
    assert_refused(_merge(plain, tmp_path, key="s3cret"), plain[0], "is not signed", out)


def test_an_empty_part_key_is_a_usage_error(tmp_path: Path) -> None:
    paths = _parts(tmp_path, "segm")
    child = _merge(paths, tmp_path, key="")
    assert child.returncode == 2 and "RPX_PART_KEY is set but empty" in child.stderr, child.stderr
    assert "Traceback" not in child.stderr and not (tmp_path / "merged.json").exists()


# --- low: values a reader took that no format allows --------------------------------------------


def _copy(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


@pytest.mark.parametrize("value", [3, -1, 0.5])
def test_a_gt_keypoint_visibility_outside_0_1_2_is_refused(tmp_path: Path, value) -> None:
    hands = _copy(HANDS, tmp_path)
    gt = hands / "gt" / "im001.json"
    objects = json.loads(gt.read_text())
    objects[1]["keypoints"][2] = value
    gt.write_text(json.dumps(objects))
    child = run_child(["eval", "detection", *(HANDS / "args").read_text().split(), "--pred-dir",
                       str(hands / "pred"), "--gt-dir", str(hands / "gt"), "-o",
                       str(tmp_path / "r.json")], tmp_path)
    assert_refused(child, gt, f"object 1: keypoint 0 has visibility {value:g}", tmp_path / "r.json")


def test_a_prediction_keypoint_third_value_is_not_read(tmp_path: Path) -> None:
    """A prediction's v may be a confidence (pycocotools' OKS reads only the GT's)."""
    hands = _copy(HANDS, tmp_path)
    pred = hands / "pred" / "im001.json"
    objects = json.loads(pred.read_text())
    objects[0]["keypoints"][2] = 0.37
    pred.write_text(json.dumps(objects))
    child = run_child(["eval", "detection", *(HANDS / "args").read_text().split(), "--pred-dir",
                       str(hands / "pred"), "--gt-dir", str(hands / "gt"), "-o",
                       str(tmp_path / "r.json")], tmp_path)
    assert child.returncode == 0, child.stderr


@pytest.mark.parametrize("key", ["neg_category_ids", "not_exhaustive_category_ids"])
def test_lvis_category_lists_refuse_booleans(tmp_path: Path, key: str) -> None:
    """``true`` is not category 1 (bool is an int in Python)."""
    lvis = _copy(FIXTURES / "detection" / "lvis", tmp_path)
    gt = lvis / "lvis_val.json"
    data = json.loads(gt.read_text())
    data["images"][0][key] = [True]
    gt.write_text(json.dumps(data))
    child = run_child(["eval", "detection", "--protocol", "lvis", "--coco-gt", str(gt),
                       "--coco-dt", str(lvis / "results.json"), "-o", str(tmp_path / "r.json")],
                      tmp_path)
    assert_refused(child, gt, f"'{key}' must be a list of category ids", tmp_path / "r.json")


SCORE_CASES = {
    "detection": ("detection/shelf", "shelf_00.json", '"score": 0.43', '"score": 1e308'),
    "detection3d": ("detection3d/street", "frame_000.json", '"detection_score": 0.46',
                    '"detection_score": 1e308'),
    "tracking": ("tracking/json", "aisle.json", '"score": 0.9', '"score": 1e308'),
    "tracking-mot": ("tracking/mot", "walk-a.txt", "0.57,", "1e308,"),
    "grounding": ("grounding/refer", "expr0.json", "0.8]", "1e308]"),
    "classification": ("classification/pets", "img_000.json", "0.42", "1e308"),
}


@pytest.mark.parametrize("case", sorted(SCORE_CASES))
def test_a_score_of_1e308_is_refused_in_every_scored_task(tmp_path: Path, case: str) -> None:
    folder, name, before, after = SCORE_CASES[case]
    root = _copy(FIXTURES / folder, tmp_path)
    pred = root / "pred" / name
    text = pred.read_text()
    assert before in text
    pred.write_text(text.replace(before, after, 1))
    args = (root / "args").read_text().split() if (root / "args").exists() else []
    kept = [word for i, word in enumerate(args) if word not in ("--pred-dir", "--gt-dir")
            and (i == 0 or args[i - 1] not in ("--pred-dir", "--gt-dir"))]
    child = run_child(["eval", case.split("-")[0], "--pred-dir", str(root / "pred"), "--gt-dir",
                       str(root / "gt"), *kept, "-o", str(tmp_path / "r.json")], root)
    assert child.returncode == 1, child.stderr
    assert "Traceback" not in child.stderr and "internal error" not in child.stderr
    assert str(pred) in child.stderr and "score" in child.stderr, child.stderr
    assert not (tmp_path / "r.json").exists()


# --- low: rpx report / rpx show on schema-valid reports rpx never writes -------------------------


def _confusion_cell_text(report: dict) -> None:
    report["dataset"]["confusion"]["matrix"][0][0] = "x"


def _per_class_number(report: dict) -> None:
    per_class = report["dataset"]["coco"]["per_class"]
    per_class[next(iter(per_class))] = 3


def _calibration_without_accuracy(report: dict) -> None:
    del report["dataset"]["calibration"]["accuracy"]


@pytest.mark.parametrize("fixture, change", [
    ("classification/imagenet-csv", _confusion_cell_text),
    ("detection/aerial", _confusion_cell_text),
    ("detection/aerial", _per_class_number),
    ("classification/imagenet-csv", _calibration_without_accuracy),
], ids=["classification-confusion-text", "detection-confusion-text", "coco-per-class-number",
        "calibration-without-accuracy"])
def test_report_and_show_draw_what_a_schema_valid_report_gives(tmp_path: Path, fixture: str,
                                                              change) -> None:
    report = json.loads((FIXTURES / fixture / "expected.json").read_text())
    change(report)
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(report))
    for args in (["show", str(path)], ["show", str(path), "--format", "markdown"],
                 ["report", str(path), "-o", str(tmp_path / "odd.html")]):
        child = run_child(args, tmp_path)
        assert child.returncode == 0, (args, child.stderr)
        assert "Traceback" not in child.stderr and "internal error" not in child.stderr
    page = (tmp_path / "odd.html").read_text()
    assert "<h3>headline</h3>" in page or "data-section" in page  # the rest is drawn


def test_a_class_map_cannot_sum_scores_to_infinity(tmp_path: Path) -> None:
    """Merged classes' scores add: two of 1.5e308 summed to inf (each finite)."""
    pets = _copy(FIXTURES / "classification" / "pets", tmp_path)
    pred = pets / "pred" / "img_000.json"
    pred.write_text(json.dumps({"scores": {"cat": 1.5e308, "dog": 1.5e308, "bird": 0.1,
                                           "ferret": 0.1}}))
    (tmp_path / "map.json").write_text(json.dumps({"cat": "pet", "dog": "pet", "bird": "bird",
                                                   "ferret": "ferret"}))
    child = run_child(["eval", "classification", "--pred-dir", str(pets / "pred"), "--gt-dir",
                       str(pets / "gt"), "--class-map", str(tmp_path / "map.json"), "-o",
                       str(tmp_path / "r.json")], tmp_path)
    assert child.returncode == 1, child.stderr
    assert "Traceback" not in child.stderr and "internal error" not in child.stderr
    assert str(pred) in child.stderr and "1e+12" in child.stderr, child.stderr


# --- low: a URL of a scheme rpx does not read ---------------------------------------------------

STREET = FIXTURES / "segmentation" / "street"


@pytest.mark.parametrize("args, url", [
    (["eval", "segmentation", "--pred-dir", "ftp://host/pred", "--gt-dir", str(STREET / "gt")],
     "ftp://host/pred"),
    (["eval", "segmentation", "--pred-dir", str(STREET / "pred"), "--gt-dir", "ftp://host/gt"],
     "ftp://host/gt"),
    (["eval", "detection", "--coco-gt", "ftp://host/gt.json", "--coco-dt", "ftp://host/dt.json"],
     "ftp://host/gt.json"),
    (["eval", "segmentation", "--pred-dir", str(STREET / "pred"), "--gt-dir", str(STREET / "gt"),
      "-o", "ftp://host/r.json"], "ftp://host/r.json"),
    (["show", "ftp://host/r.json"], "ftp://host/r.json"),
    (["merge", "ftp://host/part-*.json"], "ftp://host/part-*.json"),
], ids=["pred-dir", "gt-dir", "coco-gt", "out", "show", "merge"])
def test_an_unsupported_url_scheme_is_a_usage_error(tmp_path: Path, args: list[str],
                                                    url: str) -> None:
    child = run_child(args, tmp_path)
    assert child.returncode == 2, child.stderr
    assert "Traceback" not in child.stderr and "internal error" not in child.stderr, child.stderr
    assert "Exception ignored" not in child.stderr, child.stderr
    assert f"{url}: unsupported scheme ftp://" in child.stderr and "s3://" in child.stderr
    assert child.stdout == ""


# --- 39 #9, second half: a detection box far beyond its image -----------------------------------

COCO = FIXTURES / "detection" / "coco"


@pytest.mark.parametrize("bbox", [[5000, 5000, 10, 10], [-700, 10, 20, 20], [10, 10, 1500, 20]])
def test_a_detection_box_beyond_its_image_by_its_size_is_refused(tmp_path: Path,
                                                                  bbox: list[float]) -> None:
    results = json.loads((COCO / "results.json").read_text())
    results[3]["bbox"] = bbox  # image 102 (shelf_01) is 640x480
    assert results[3]["image_id"] == 102
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    args = ["eval", "detection", "--coco-gt", str(COCO / "instances.json"), "--coco-dt", str(path),
            "-o", str(tmp_path / "r.json")]
    child = run_child(args, tmp_path)
    assert_refused(child, path, "detection 3: its bbox", tmp_path / "r.json")
    assert "beyond its 640x480 image by more than the image's own size" in child.stderr
    child = run_child([*args, "--on-error", "skip"], tmp_path)
    assert child.returncode == 0, child.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [(e["stem"], e["effect"]) for e in report["errors"]] == [("shelf_01", "empty_prediction")]


def test_a_detection_box_within_its_image_size_of_it_is_scored(tmp_path: Path) -> None:
    results = json.loads((COCO / "results.json").read_text())
    results[3]["bbox"] = [-639, 470, 1919, 489]  # just within: x >= -w, x + w <= 2w, ...
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    child = run_child(["eval", "detection", "--coco-gt", str(COCO / "instances.json"),
                       "--coco-dt", str(path), "-o", str(tmp_path / "r.json")], tmp_path)
    assert child.returncode == 0, child.stderr


# --- low: an empty polygon ring ------------------------------------------------------------------


@pytest.mark.parametrize("side", ["gt", "pred"])
@pytest.mark.parametrize("polygons", [[{"exterior": []}], [[]]], ids=["exterior", "ring"])
def test_an_empty_polygon_ring_is_refused_naming_the_object(tmp_path: Path, side: str,
                                                            polygons: list) -> None:
    """A file whose every ring is empty (no coordinate at all) was an internal error."""
    square = [[[0, 0], [4, 0], [4, 4], [0, 4]]]
    for role in ("gt", "pred"):
        (tmp_path / role).mkdir()
        for stem in ("a", "b"):
            obj = {"label": "x", "polygons": polygons if (role, stem) == (side, "a") else square}
            if role == "pred":
                obj["score"] = 0.5
            (tmp_path / role / f"{stem}.json").write_text(json.dumps([obj]))
    args = ["eval", "detection", "--geometry", "polygon", "--pred-dir", str(tmp_path / "pred"),
            "--gt-dir", str(tmp_path / "gt"), "-o", str(tmp_path / "r.json")]
    bad = tmp_path / side / "a.json"
    assert_refused(run_child(args, tmp_path), bad, "object 0: ring 0 of polygon 0 has 0 point(s)",
                   tmp_path / "r.json")
    child = run_child([*args, "--on-error", "skip"], tmp_path)
    assert child.returncode == 0, child.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [e["stem"] for e in report["errors"]] == ["a"]
    assert [r["stem"] for r in report["rows"]] == (["a", "b"] if side == "pred" else ["b"])
