"""``rpx eval detection --iou-type segm|keypoints`` and ``--protocol lvis`` against their
references: pycocotools' ``COCOeval`` (``iouType`` segm and keypoints, custom sigmas through
``params.kpt_oks_sigmas``) and the ``lvis`` package's ``LVISEval`` 0.5.3, on generated sets
(crowd regions, score ties, empty images, GT areas that differ from the mask areas;
``coco_family_data.py``) and on faster-coco-eval's own test data
(``tests/fixtures/coco_family``); the kernels against their readable references; every
view on rectangular masks equal to the same boxes; shards, ``--jobs`` and input errors."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import logging
import sys
from pathlib import Path

import numpy as np
import pytest
from coco_family_data import box_set_lvis, keypoint_set, segm_set
from helpers import assert_jobs_and_shards_agree, dirs, write_json

from rpx_cli.ops.oks import COCO_SIGMAS, oks_pairs, reference_oks
from rpx_cli.ops.rle import decode_counts, encode_values, reference_decode

FIXTURES = Path(__file__).parent / "fixtures" / "coco_family"
COCO_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
KEYPOINT_NAMES = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")


# --- references -----------------------------------------------------------------------------


def pycocotools_eval(gt: dict | str, results: list | str, iou_type: str, sigmas=None):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        if isinstance(gt, str):
            coco = COCO(gt)
        else:
            coco = COCO()
            coco.dataset = copy.deepcopy(gt)
            coco.createIndex()
        dt = coco.loadRes(results if isinstance(results, str) else copy.deepcopy(results))
        evaluator = COCOeval(coco, dt, iou_type)
        if sigmas is not None:
            evaluator.params.kpt_oks_sigmas = np.array(sigmas)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator


def lvis_eval(gt: dict, results: list, iou_type: str, tmp_path: Path, max_dets: int = 300):
    """``LVISEval`` 0.5.3; it calls ``np.float`` (gone in numpy 2): shimmed here, in the test."""
    if not hasattr(np, "float"):
        np.float = float
    from lvis import LVIS, LVISEval, LVISResults

    path, results_path = tmp_path / "lvis_gt.json", tmp_path / "lvis_results.json"
    path.write_text(json.dumps(gt))
    results_path.write_text(json.dumps(results))  # a list would make it warn (DeprecationWarning)
    logging.disable(logging.WARNING)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            lvis_gt = LVIS(str(path))
            evaluator = LVISEval(lvis_gt, LVISResults(lvis_gt, str(results_path), max_dets=max_dets),
                                 iou_type)
            evaluator.run()
    finally:
        logging.disable(logging.NOTSET)
    return evaluator


def write_coco(tmp_path: Path, gt: dict, results: list) -> str:
    write_json(tmp_path / "gt.json", gt)
    write_json(tmp_path / "dt.json", results)
    return f"--coco-gt {tmp_path / 'gt.json'} --coco-dt {tmp_path / 'dt.json'}"


def assert_stats_equal(coco: dict, names, stats) -> None:
    for name, value in zip(names, stats, strict=True):
        expected = None if value == -1 else float(value)
        assert coco[name] == expected, (name, coco[name], expected)


def assert_per_class_and_curves(coco: dict, evaluator, labels: list[str]) -> None:
    precision = evaluator.eval["precision"]
    for k, label in enumerate(labels):
        values = precision[:, :, k, 0, -1]
        expected = float(values[values > -1].mean()) if (values > -1).any() else None
        assert coco["per_class"][label]["AP"] == expected, label
        curve = coco["curves"]["iou50"]["per_class"][label]["precision"]
        assert curve == [None if v == -1 else v for v in precision[0, :, k, 0, -1].tolist()], label


# --- equality with the references -----------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_segm_equals_pycocotools(rpx, tmp_path: Path, seed: int) -> None:
    gt, results = segm_set(seed)
    report = rpx(f"eval detection --iou-type segm {write_coco(tmp_path, gt, results)}").json
    evaluator = pycocotools_eval(gt, results, "segm")
    assert report["params"]["iou_type"] == "segm"
    assert_stats_equal(report["dataset"]["coco"], COCO_NAMES, evaluator.stats)
    assert_per_class_and_curves(report["dataset"]["coco"], evaluator, ["c0", "c1", "c2"])


def test_generated_sets_have_what_the_rules_are_about() -> None:
    import pycocotools.mask as mask_utils

    gt, results = segm_set(0, n_images=30)
    anns = gt["annotations"]
    assert any(a["iscrowd"] for a in anns)
    assert {a["image_id"] for a in anns} != {i["id"] for i in gt["images"]}  # empty images
    kinds = {type(a["segmentation"]).__name__ + ("s" if isinstance(a["segmentation"], dict)
             and isinstance(a["segmentation"]["counts"], str) else "") for a in anns}
    assert kinds == {"list", "dict", "dicts"}
    assert any(isinstance(a["segmentation"], list) and len(a["segmentation"]) > 1 for a in anns)
    differing = 0
    for a in anns:
        seg = a["segmentation"]
        rle = mask_utils.merge(mask_utils.frPyObjects(seg, 48, 64)) if isinstance(seg, list) else \
            mask_utils.frPyObjects(seg, 48, 64) if isinstance(seg["counts"], list) else \
            {"size": seg["size"], "counts": seg["counts"].encode()}
        differing += float(mask_utils.area(rle)) != a["area"]
    assert differing >= 5
    scores = [r["score"] for r in results]
    assert len(scores) > len(set(scores))  # ties


@pytest.mark.parametrize("seed", range(4))
def test_keypoints_equal_pycocotools(rpx, tmp_path: Path, seed: int) -> None:
    gt, results = keypoint_set(seed, n_categories=2)
    assert any(a["num_keypoints"] == 0 for a in gt["annotations"])
    report = rpx(f"eval detection --iou-type keypoints {write_coco(tmp_path, gt, results)}").json
    evaluator = pycocotools_eval(gt, results, "keypoints")
    assert report["params"]["oks_sigmas"] == COCO_SIGMAS.tolist()
    assert_stats_equal(report["dataset"]["coco"], KEYPOINT_NAMES, evaluator.stats)
    assert_per_class_and_curves(report["dataset"]["coco"], evaluator, ["p0", "p1"])
    assert "AR100" not in report["dataset"]["coco"] and "AR1" not in report["metric_info"]


@pytest.mark.parametrize("seed", range(3))
def test_keypoints_with_a_custom_skeleton_equal_pycocotools(rpx, tmp_path: Path, seed: int) -> None:
    sigmas = [0.25, 0.25, 0.5, 0.5, 0.35]
    gt, results = keypoint_set(seed, n_points=5)
    flags = f"--iou-type keypoints --oks-sigmas {','.join(map(str, sigmas))}"
    report = rpx(f"eval detection {flags} {write_coco(tmp_path, gt, results)}").json
    evaluator = pycocotools_eval(gt, results, "keypoints", sigmas=sigmas)
    assert report["params"]["oks_sigmas"] == sigmas
    assert_stats_equal(report["dataset"]["coco"], KEYPOINT_NAMES, evaluator.stats)
    # the sigmas from a file give the same report
    (tmp_path / "sigmas.txt").write_text("0.25, 0.25, 0.5\n0.5, 0.35\n")
    again = rpx(f"eval detection --iou-type keypoints --oks-sigmas {tmp_path / 'sigmas.txt'} "
                f"{write_coco(tmp_path, gt, results)}").json
    assert again["dataset"] == report["dataset"]


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
@pytest.mark.parametrize("seed", range(3))
def test_lvis_equals_the_lvis_package(rpx, tmp_path: Path, iou_type: str, seed: int) -> None:
    if iou_type == "bbox":
        gt, results = box_set_lvis(seed)
        cap = 12  # below the detections per image: the cap decides which are kept
    else:
        gt, results = segm_set(seed, lvis=True)
        cap = 5
    flags = f"--protocol lvis --iou-type {iou_type} --max-dets {cap}"
    report = rpx(f"eval detection {flags} {write_coco(tmp_path, gt, results)}").json
    evaluator = lvis_eval(gt, results, iou_type, tmp_path, max_dets=cap)
    coco = report["dataset"]["coco"]
    for name, value in evaluator.results.items():
        # LVISEval names AR after its own Params.max_dets (300) whatever LVISResults kept
        key = name.replace("300", str(cap))
        assert coco[key] == (None if value == -1 else float(value)), (key, coco[key], value)
    assert report["params"]["protocol"] == "lvis" and report["params"]["max_dets"] == cap
    assert report["params"]["category_frequency"] == [c["frequency"] for c in gt["categories"]]


def test_lvis_default_cap_is_300(rpx, tmp_path: Path) -> None:
    gt, results = box_set_lvis(1, per_image=320)
    report = rpx(f"eval detection --protocol lvis {write_coco(tmp_path, gt, results)}").json
    evaluator = lvis_eval(gt, results, "bbox", tmp_path)
    for name, value in evaluator.results.items():
        assert report["dataset"]["coco"][name] == (None if value == -1 else float(value)), name


def test_faster_coco_eval_test_data_segm(rpx) -> None:
    gt = str(FIXTURES / "instances_val2014_100.json")
    dt = str(FIXTURES / "instances_val2014_fakesegm100_results.json")
    report = rpx(f"eval detection --iou-type segm --coco-gt {gt} --coco-dt {dt}").json
    evaluator = pycocotools_eval(gt, dt, "segm")
    assert_stats_equal(report["dataset"]["coco"], COCO_NAMES, evaluator.stats)


def test_faster_coco_eval_test_data_keypoints(rpx) -> None:
    gt, dt = str(FIXTURES / "keypoints_gt.json"), str(FIXTURES / "keypoints_dt.json")
    report = rpx(f"eval detection --iou-type keypoints --coco-gt {gt} --coco-dt {dt}").json
    evaluator = pycocotools_eval(gt, dt, "keypoints")
    assert_stats_equal(report["dataset"]["coco"], KEYPOINT_NAMES, evaluator.stats)
    # faster-coco-eval's test asserts the same AP
    assert report["dataset"]["coco"]["AP"] == pytest.approx(0.5048844884488449, abs=1e-15)


# --- per-stem files ---------------------------------------------------------------------------


def per_stem(tmp_path: Path, gt: dict, results: list, iou_type: str) -> None:
    """The COCO set as per-stem files: {"size": [h, w], "objects": [...]} per image."""
    names = {c["id"]: c["name"] for c in gt["categories"]}
    field = "segmentation" if iou_type == "segm" else "keypoints"
    for image in gt["images"]:
        stem = image["file_name"].rsplit(".", 1)[0]
        objects = [{field: a[field], "label": names[a["category_id"]], "iscrowd": a["iscrowd"],
                    "area": a["area"],
                    **({"bbox": [a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2],
                                 a["bbox"][1] + a["bbox"][3]],
                        "num_keypoints": a["num_keypoints"]} if iou_type == "keypoints" else {})}
                   for a in gt["annotations"] if a["image_id"] == image["id"]]
        preds = [{field: r[field], "label": names[r["category_id"]], "score": r["score"]}
                 for r in results if r["image_id"] == image["id"]]
        size = [image["height"], image["width"]]
        write_json(tmp_path / "gt" / f"{stem}.json", {"size": size, "objects": objects})
        write_json(tmp_path / "pred" / f"{stem}.json", {"size": size, "objects": preds})


@pytest.mark.parametrize("iou_type", ["segm", "keypoints"])
def test_per_stem_files_equal_coco_files(rpx, tmp_path: Path, iou_type: str) -> None:
    gt, results = segm_set(3) if iou_type == "segm" else keypoint_set(3)
    per_stem(tmp_path, gt, results, iou_type)
    stems = rpx(f"eval detection --iou-type {iou_type} {dirs(tmp_path)}").json
    files = rpx(f"eval detection --iou-type {iou_type} {write_coco(tmp_path, gt, results)}").json
    for key in ("AP", "AP50", "AR" if iou_type == "keypoints" else "AR100", "per_class", "curves"):
        assert stems["dataset"]["coco"][key] == files["dataset"]["coco"][key], key
    assert stems["dataset"]["pooled"] == files["dataset"]["pooled"]
    assert stems["dataset"]["confusion"] == files["dataset"]["confusion"]


@pytest.mark.parametrize("iou_type", ["segm", "keypoints"])
def test_jobs_and_shards_agree(rpx, tmp_path: Path, iou_type: str) -> None:
    gt, results = segm_set(2) if iou_type == "segm" else keypoint_set(2)
    per_stem(tmp_path, gt, results, iou_type)
    assert_jobs_and_shards_agree(rpx, f"eval detection --iou-type {iou_type} {dirs(tmp_path)}",
                                 tmp_path)


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_lvis_shards_merge_to_the_whole(rpx, tmp_path: Path, iou_type: str) -> None:
    gt, results = box_set_lvis(4) if iou_type == "bbox" else segm_set(4, lvis=True)
    files = write_coco(tmp_path, gt, results)
    command = f"eval detection --protocol lvis --iou-type {iou_type} --max-dets 10 {files}"
    whole = rpx(command).json
    parts = [tmp_path / f"part{k}.json" for k in (1, 2, 3)]
    for k, part in enumerate(parts, 1):
        assert rpx(f"{command} --shard {k}/3 -o {part}").exit_code == 0
    merged = rpx(["merge", *parts]).json
    for key in ("aggregate", "dataset", "rows"):
        assert merged[key] == whole[key], key


# --- every view on masks: rectangles are boxes ------------------------------------------------


def test_rectangle_masks_equal_boxes_in_every_view(rpx, tmp_path: Path) -> None:
    """A mask that is an integer rectangle has the box's area and intersections, so every
    view (rows, pooled, confusion, COCO AP with curves, TIDE) gives the box numbers."""
    rng = np.random.default_rng(5)
    h, w = 60, 64  # every rectangle inside the image (a mask is clipped, a box is not)
    for i in range(8):
        gt_objects, pred_objects = [], []
        for _ in range(int(rng.integers(0, 4))):
            x, y = (int(v) for v in rng.integers(0, 35, 2))
            bw, bh = (int(v) for v in rng.integers(2, 15, 2))
            label = str(rng.choice(["a", "b"]))
            crowd = int(rng.random() < 0.15)
            gt_objects.append(((x, y, bw, bh), label, crowd))
            for _ in range(int(rng.integers(0, 3))):
                dx, dy = (int(v) for v in rng.integers(-2, 3, 2))
                pred_objects.append(((max(x + dx, 0), max(y + dy, 0), bw, bh),
                                     label if rng.random() < 0.8 else "b",
                                     float(rng.choice([0.5, 0.7, rng.random()]))))
        for _ in range(int(rng.integers(0, 3))):
            x, y = (int(v) for v in rng.integers(0, 35, 2))
            pred_objects.append(((x, y, 5, 6), "a", float(rng.random())))

        def rle(x, y, bw, bh):
            mask = np.zeros((h, w), np.uint8)
            mask[y:y + bh, x:x + bw] = 1
            flat = mask.flatten(order="F")
            bounds = np.concatenate(([0], np.flatnonzero(np.diff(flat)) + 1, [flat.size]))
            runs = np.diff(bounds).tolist()
            return {"size": [h, w], "counts": [0, *runs] if flat[0] else runs}

        stem = f"f{i}"
        write_json(tmp_path / "boxes" / "gt" / f"{stem}.json",
                   [{"bbox": list(b), "label": lab, "iscrowd": c} for b, lab, c in gt_objects])
        write_json(tmp_path / "boxes" / "pred" / f"{stem}.json",
                   [{"bbox": list(b), "label": lab, "score": s} for b, lab, s in pred_objects])
        write_json(tmp_path / "masks" / "gt" / f"{stem}.json",
                   {"size": [h, w], "objects": [{"segmentation": rle(*b), "label": lab, "iscrowd": c}
                                                for b, lab, c in gt_objects]})
        write_json(tmp_path / "masks" / "pred" / f"{stem}.json",
                   {"size": [h, w], "objects": [{"segmentation": rle(*b), "label": lab, "score": s}
                                                for b, lab, s in pred_objects]})
    flags = "--metrics rows,pooled,confusion,coco,errors --iou-threshold 0.6 --conf-threshold 0.3"
    boxes = rpx(f"eval detection --box-format xywh {flags} {dirs(tmp_path / 'boxes')}").json
    masks = rpx(f"eval detection --iou-type segm {flags} {dirs(tmp_path / 'masks')}").json
    assert masks["aggregate"] == boxes["aggregate"]
    strip = [{k: v for k, v in r.items() if not k.endswith("_path")} for r in masks["rows"]]
    assert strip == [{k: v for k, v in r.items() if not k.endswith("_path")} for r in boxes["rows"]]
    # the same numbers; only the reasons of nulls say "object" where boxes say "box"
    worded = json.loads(json.dumps(masks["dataset"]).replace("no GT object", "no GT box"))
    assert worded == boxes["dataset"]
    assert boxes["dataset"]["errors"]["counts"]


# --- kernels --------------------------------------------------------------------------------


def test_oks_kernel_equals_compute_oks_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    for k in (5, 17):
        sigmas = COCO_SIGMAS if k == 17 else np.array([0.25, 0.25, 0.5, 0.5, 0.35])
        n = 400
        gt = np.zeros((n, 3 * k + 5))
        dt = np.zeros((n, 3 * k + 5))
        gt[:, 0:3 * k:3] = rng.uniform(0, 100, (n, k))
        gt[:, 1:3 * k:3] = rng.uniform(0, 100, (n, k))
        gt[:, 2:3 * k:3] = rng.choice([0, 1, 2], (n, k))
        gt[: n // 4, 2:3 * k:3] = 0  # no visible point: the box-extent rule
        gt[n // 4: n // 2, 2:3 * k:3] = 2  # every point visible
        gt[:, 3 * k:3 * k + 2] = rng.uniform(0, 80, (n, 2))
        gt[:, 3 * k + 2:3 * k + 4] = rng.uniform(0, 40, (n, 2))
        dt[:, :3 * k] = gt[:, :3 * k] + rng.normal(0, 5, (n, 3 * k))
        area = rng.uniform(1, 2000, n)
        got = oks_pairs(dt, gt, area, sigmas)
        expected = [reference_oks(dt[i], gt[i], area[i], sigmas) for i in range(n)]
        assert got.tolist() == expected


def test_oks_by_hand() -> None:
    """One visible point, a detection ``d`` pixels away: exp(-d^2 / (2 sigma)^2 / (area + eps) / 2)."""
    sigmas = np.array([0.5, 0.1])
    gt = np.array([[10.0, 20.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    dt = np.array([[13.0, 24.0, 1.0, 99.0, 99.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    area = np.array([100.0])
    expected = np.exp(-(3.0 ** 2 + 4.0 ** 2) / (2 * 0.5) ** 2 / (100 + np.spacing(1)) / 2)
    assert oks_pairs(dt, gt, area, sigmas)[0] == pytest.approx(expected, rel=1e-15)


def test_rle_decoder_equals_rle_fr_string() -> None:
    import pycocotools.mask as mask_utils

    rng = np.random.default_rng(1)
    strings, shapes = [], []
    for i in range(200):
        h, w = (int(v) for v in rng.integers(1, 70, 2))
        mask = (rng.random((h, w)) < rng.random()).astype(np.uint8)
        if i % 9 == 0:
            mask[:] = i % 2
        strings.append(mask_utils.encode(np.asfortranarray(mask))["counts"])
        shapes.append((h, w, int(mask.sum())))
    decoded = decode_counts(strings)
    for i, string in enumerate(strings):
        assert decoded.counts[decoded.start[i]:decoded.start[i + 1]].tolist() == reference_decode(string)
        assert (decoded.total[i], decoded.area[i]) == (shapes[i][0] * shapes[i][1], shapes[i][2])
    assert decoded.problem == [""] * len(strings)
    bad = decode_counts([b"0P", b"0~", b"", b"1"])
    assert bad.problem[0] == "the string ends inside a count"
    assert "alphabet" in bad.problem[1]
    assert bad.problem[2:] == ["", ""] and bad.total.tolist()[2:] == [0, 1]


# --- rows on keypoints, by hand ---------------------------------------------------------------


def test_keypoint_rows_use_oks_at_the_threshold(rpx, tmp_path: Path) -> None:
    """A detection 3-4-5 pixels off a GT with one visible point, sigma 0.5 and area 100 has
    OKS exp(-25 / 1 / 100 / 2) = 0.8825: a match at 0.85, not at 0.9."""
    write_json(tmp_path / "gt" / "a.json", [{"keypoints": [10, 20, 2, 0, 0, 0], "label": "p",
                                             "bbox": [0, 0, 20, 30], "area": 100}])
    write_json(tmp_path / "pred" / "a.json", [{"keypoints": [13, 24, 1, 50, 50, 1], "label": "p",
                                               "score": 0.9}])
    base = f"eval detection --iou-type keypoints --oks-sigmas 0.5,0.1 --box-format xywh {dirs(tmp_path)}"
    assert rpx(f"{base} --iou-threshold 0.85").json["rows"][0]["tp"] == 1
    assert rpx(f"{base} --iou-threshold 0.9").json["rows"][0]["tp"] == 0


# --- input errors ----------------------------------------------------------------------------


def one_line(run) -> str:
    assert run.exit_code == 1 and run.stdout == "" and "Traceback" not in run.stderr, run.stderr
    return run.stderr


def test_an_xywh_box_read_as_xyxy_names_the_box_format(rpx, tmp_path: Path) -> None:
    """A newcomer's masks with [x, y, w, h] boxes: the message says the boxes are read as
    xyxy and names --box-format xywh (it said "negative width or height" of a box whose
    width and height are positive)."""
    mask = {"size": [500, 500], "counts": [0, 250000]}
    write_json(tmp_path / "gt" / "a.json", {"size": [500, 500], "objects": [
        {"segmentation": mask, "label": "x"}]})
    write_json(tmp_path / "pred" / "a.json", {"size": [500, 500], "objects": [
        {"segmentation": mask, "label": "x", "score": 0.9, "bbox": [158, 274, 114, 46]}]})
    err = one_line(rpx(f"eval detection --iou-type segm --on-error fail {dirs(tmp_path)}"))
    assert "as [x1, y1, x2, y2] (--box-format xyxy, the default)" in err
    assert "need --box-format xywh" in err
    assert rpx(f"eval detection --iou-type segm --box-format xywh {dirs(tmp_path)}").exit_code == 0


def test_a_polygon_without_an_image_size_names_the_file_and_object(rpx, tmp_path: Path) -> None:
    write_json(tmp_path / "gt" / "a.json", [{"segmentation": [[0, 0, 5, 0, 5, 5]], "label": "x"}])
    write_json(tmp_path / "pred" / "a.json", [])
    err = one_line(rpx(f"eval detection --iou-type segm {dirs(tmp_path)}"))
    assert str(tmp_path / "gt" / "a.json") in err and "object 0: a polygon needs the image size" in err


def test_a_polygon_in_a_coco_file_without_image_size(rpx, tmp_path: Path) -> None:
    gt = {"images": [{"id": 1, "file_name": "a.jpg"}], "categories": [{"id": 1, "name": "x"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "area": 5,
                           "segmentation": [[0, 0, 5, 0, 5, 5]]}]}
    err = one_line(rpx(f"eval detection --iou-type segm {write_coco(tmp_path, gt, [])}"))
    assert "gt.json" in err and "annotation 0: a polygon needs the image size" in err


@pytest.mark.parametrize("counts, message", [
    ([3, 4], "counts sum to 7, not h·w = 2·4 = 8"),
    ("0P", "the string ends inside a count"),
    ("52", "counts sum to 7, not h·w = 2·4 = 8"),  # runs 5, 2: seven pixels of eight
])
def test_a_malformed_rle_names_the_file_and_object(rpx, tmp_path: Path, counts, message) -> None:
    write_json(tmp_path / "gt" / "a.json", {"size": [2, 4], "objects": [
        {"segmentation": {"size": [2, 4], "counts": [8]}, "label": "x"},
        {"segmentation": {"size": [2, 4], "counts": counts}, "label": "x"}]})
    write_json(tmp_path / "pred" / "a.json", [])
    err = one_line(rpx(f"eval detection --iou-type segm {dirs(tmp_path)}"))
    assert str(tmp_path / "gt" / "a.json") in err and "object 1: malformed RLE" in err and message in err, err


def test_masks_of_two_sizes_in_one_image(rpx, tmp_path: Path) -> None:
    write_json(tmp_path / "gt" / "a.json", [{"segmentation": {"size": [2, 4], "counts": [8]}, "label": "x"}])
    write_json(tmp_path / "pred" / "a.json", [{"segmentation": {"size": [4, 2], "counts": [8]},
                                               "label": "x", "score": 1}])
    err = one_line(rpx(f"eval detection --iou-type segm {dirs(tmp_path)}"))
    assert "masks of sizes (2, 4), (4, 2) in one image" in err and str(tmp_path / "pred" / "a.json") in err
    # COCO files: a result's RLE that is not the image's size
    gt = {"images": [{"id": 1, "file_name": "a.jpg", "height": 2, "width": 4}],
          "categories": [{"id": 1, "name": "x"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "area": 8,
                           "segmentation": {"size": [2, 4], "counts": [8]}}]}
    results = [{"image_id": 1, "category_id": 1, "score": 1,
                "segmentation": {"size": [4, 2], "counts": "8"}}]
    err = one_line(rpx(f"eval detection --iou-type segm {write_coco(tmp_path, gt, results)}"))
    assert "dt.json" in err and "detection 0: RLE size [4, 2] is not the image's [2, 4]" in err


def test_a_keypoint_count_that_does_not_match_the_sigmas(rpx, tmp_path: Path) -> None:
    write_json(tmp_path / "gt" / "a.json", [{"keypoints": [1, 2, 2, 3, 4, 2], "label": "p"}])
    write_json(tmp_path / "pred" / "a.json", [])
    err = one_line(rpx(f"eval detection --iou-type keypoints {dirs(tmp_path)}"))
    assert str(tmp_path / "gt" / "a.json") in err and "2 keypoints, but the sigmas" in err and "17" in err
    write_json(tmp_path / "gt" / "a.json", [{"keypoints": [1, 2, 2, 3, 4, 2], "label": "p"},
                                            {"keypoints": [1, 2, 2], "label": "p"}])
    err = one_line(rpx(f"eval detection --iou-type keypoints --oks-sigmas 1,1 {dirs(tmp_path)}"))
    assert "object 1: 1 keypoints where object 0 has 2" in err


def test_a_category_without_frequency_under_lvis(rpx, tmp_path: Path) -> None:
    gt, results = box_set_lvis(0)
    del gt["categories"][2]["frequency"]
    err = one_line(rpx(f"eval detection --protocol lvis {write_coco(tmp_path, gt, results)}"))
    assert "gt.json" in err and "category 'c2' has no LVIS 'frequency'" in err


@pytest.mark.parametrize("key", ["neg_category_ids", "not_exhaustive_category_ids"])
def test_an_lvis_image_without_its_category_lists_is_refused(rpx, tmp_path: Path, key: str) -> None:
    """SPEC §11.4: the lvis package refuses a GT image without them; rpx ran silently and
    moved AP. Exit 1 naming the image."""
    gt, results = box_set_lvis(0)
    image = gt["images"][3]
    del image[key]
    err = one_line(rpx(f"eval detection --protocol lvis {write_coco(tmp_path, gt, results)}"))
    assert "gt.json" in err and f"image {image['id']}: no '{key}'" in err
    assert "every category's frequency for APr, APc and APf" in one_line(rpx(
        f"eval detection --protocol lvis {write_coco(tmp_path, *_no_frequency(box_set_lvis(0)))}"))


def _no_frequency(sets):
    gt, results = sets
    del gt["categories"][0]["frequency"]
    return gt, results


def test_lvis_reads_lvis_files(rpx, tmp_path: Path) -> None:
    write_json(tmp_path / "gt" / "a.json", [])
    write_json(tmp_path / "pred" / "a.json", [])
    err = one_line(rpx(f"eval detection --protocol lvis {dirs(tmp_path)}"))
    assert "--protocol lvis reads LVIS files" in err


@pytest.mark.parametrize("flags, message", [
    ("--iou-type keypoints --metrics errors", "TIDE) is for boxes and masks"),
    ("--iou-type segm --geometry polygon", "do not go together"),
    ("--max-dets 50", "needs --protocol lvis"),
    ("--protocol lvis --iou-type keypoints", "boxes or masks"),
    ("--iou-type keypoints --oks-sigmas 0.1,-1", "sigmas must be numbers within [1e-06, 1]"),
])
def test_options_that_do_not_go_together_are_usage_errors(rpx, tmp_path: Path, flags, message) -> None:
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    run = rpx(f"eval detection {flags} {dirs(tmp_path)}")
    assert run.exit_code == 2 and message in run.stderr, run.stderr


def test_segm_without_pycocotools_is_one_line_naming_the_extra(rpx, tmp_path: Path, monkeypatch) -> None:
    """On the numpy path (RPX_NATIVE=0, or no compiler at install) masks need pycocotools."""
    write_json(tmp_path / "gt" / "a.json", [{"segmentation": {"size": [2, 4], "counts": [8]}, "label": "x"}])
    write_json(tmp_path / "pred" / "a.json", [])
    monkeypatch.setitem(sys.modules, "pycocotools", None)
    monkeypatch.setenv("RPX_NATIVE", "0")
    run = rpx(f"eval detection --iou-type segm {dirs(tmp_path)}")
    assert run.exit_code == 1 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'rpx-eval[coco]'" in lines[0], run.stderr


def test_segm_with_the_native_core_needs_no_pycocotools(rpx, tmp_path: Path, monkeypatch) -> None:
    """The native core rasterises, encodes and intersects masks itself."""
    from rpx_cli import native

    if native.core() is None:
        pytest.skip("the numpy path runs (RPX_NATIVE=0 or no native core)")
    gt, results = segm_set(2, n_images=4)
    expected = rpx(f"eval detection --iou-type segm {write_coco(tmp_path, gt, results)}").json
    monkeypatch.setitem(sys.modules, "pycocotools", None)
    monkeypatch.setitem(sys.modules, "pycocotools.mask", None)
    run = rpx(f"eval detection --iou-type segm {write_coco(tmp_path, gt, results)}")
    assert run.exit_code == 0, run.stderr
    assert run.json["dataset"] == expected["dataset"]


def test_segm_reports_are_the_same_on_both_paths(rpx, tmp_path: Path, monkeypatch) -> None:
    """The native core and the numpy path (RPX_NATIVE=0: rpx's numpy decoder, pycocotools)
    give the same report, every view, COCO files (polygons, crowd RLEs, compressed results)."""
    pytest.importorskip("rpx_cli._native")
    gt, results = segm_set(7, n_images=6)
    command = f"eval detection --iou-type segm {write_coco(tmp_path, gt, results)}"
    reports = {}
    for value in ("1", "0"):
        monkeypatch.setenv("RPX_NATIVE", value)
        reports[value] = rpx(command).json
    for key in ("dataset", "aggregate", "rows"):
        assert reports["1"][key] == reports["0"][key]
    assert reports["1"]["run_provenance"]["environment"]["kernels"] == "native"
    assert reports["0"]["run_provenance"]["environment"]["kernels"] == "numpy (RPX_NATIVE=0)"
    # pycocotools computes the masks on the numpy path only: its version is recorded there
    from importlib.metadata import version

    assert reports["0"]["run_provenance"]["environment"]["pycocotools"] == version("pycocotools")
    assert "pycocotools" not in reports["1"]["run_provenance"]["environment"]


def test_mask_totals_equal_the_reference_decoder() -> None:
    """``ops.masks.totals`` (the native core, or the reference decoder itself) gives the
    reference decoder's areas and run sums."""
    import pycocotools.mask as mask_utils

    from rpx_cli.ops.masks import totals

    rng = np.random.default_rng(3)
    rles = []
    for i in range(600):
        h, w = (int(v) for v in rng.integers(1, 90, 2))
        mask = (rng.random((h, w)) < rng.random()).astype(np.uint8)
        if i % 5 == 0:
            mask[:] = 0
            mask[: h // 2, : w // 3] = 1
        rles.append({"size": [h, w], "counts": mask_utils.encode(np.asfortranarray(mask))["counts"]})
    rles += [{"size": [2, 4], "counts": c} for c in (b"52", b"", b"8", b"0000", b"44")]
    # first counts of six characters each: past the 16 the complement is built from
    chars, lengths = encode_values(np.array([2**28, 2**28, 2**28, 3]))
    long_head = b"".join(row[:n].tobytes() for row, n in zip(chars, lengths.tolist(), strict=True))
    rles.append({"size": [16384, 16384], "counts": long_head})
    area, total, readable = totals(rles)
    reference = decode_counts([rle["counts"] for rle in rles])
    assert area.tolist() == reference.area.tolist()
    assert total.tolist() == reference.total.tolist()
    assert readable.all()


def test_oks_bounds_change_no_result(rpx, tmp_path: Path, monkeypatch) -> None:
    """Pairs whose OKS bound is below the loosest threshold read as 0 in the greedy views:
    every view equals a run that computes every OKS."""
    from rpx_cli.ops.oks import OksGeometry

    gt, results = keypoint_set(5, n_images=20)
    per_stem(tmp_path, gt, results, "keypoints")
    command = f"eval detection --iou-type keypoints --iou-threshold 0.3 {dirs(tmp_path)}"
    bounded = rpx(command).json
    monkeypatch.setattr(OksGeometry, "bound", lambda self, dt, gt: np.full(np.shape(dt), np.inf))
    exact = rpx(command).json
    assert bounded["dataset"] == exact["dataset"] and bounded["rows"] == exact["rows"]


def test_segm_results_with_boxes_use_the_box_area_as_load_res(rpx, tmp_path: Path) -> None:
    """A result carrying a bbox gets the box's w·h as its area for the ranges (pycocotools'
    loadRes): boxes chosen to put detections in other ranges than their masks."""
    import pycocotools.mask as mask_utils

    gt, results = segm_set(1)
    for r in results:
        rle = {"size": r["segmentation"]["size"], "counts": r["segmentation"]["counts"].encode()}
        x, y, w, h = mask_utils.toBbox(rle).tolist()
        r["bbox"] = [x, y, w * 6, h * 6]
    report = rpx(f"eval detection --iou-type segm {write_coco(tmp_path, gt, results)}").json
    evaluator = pycocotools_eval(gt, results, "segm")
    assert_stats_equal(report["dataset"]["coco"], COCO_NAMES, evaluator.stats)


# --- TIDE: tidecv's image order decides its score ties (issue 38.6) ------------------------


def tidecv_errors(gt_path: str, dt_path: str, mode: str) -> tuple[dict, float]:
    """tidecv's main and special dAP (÷ 100) and its AP50, in box or mask mode."""
    from tidecv import TIDE, datasets

    tide = TIDE()
    with contextlib.redirect_stdout(io.StringIO()):
        tide.evaluate(datasets.COCO(gt_path), datasets.COCOResult(dt_path),
                      mode=TIDE.MASK if mode == "segm" else TIDE.BOX)
        (name, run), = tide.runs.items()
        found = {**tide.get_main_errors()[name], **tide.get_special_errors()[name]}
    names = {"Cls": "cls", "Loc": "loc", "Both": "both", "Dupe": "dupe", "Bkg": "bkg",
             "Miss": "miss", "FalsePos": "fp", "FalseNeg": "fn"}
    return {names[key]: value / 100 for key, value in found.items()}, run.ap / 100


@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
@pytest.mark.parametrize("seed", [1, 3])
def test_tide_equals_tidecv_with_images_out_of_id_order(rpx, tmp_path: Path, iou_type: str,
                                                         seed: int) -> None:
    """tidecv walks images in the GT file's order, so that order breaks score ties across
    images (rpx read them in id order before: dAPs 0.03 off on this data). Crowd masks,
    three distinct scores, the images list shuffled; shards merge to the same breakdown."""
    gt, results = segm_set(seed, n_images=30)
    rng = np.random.default_rng(seed)
    for result in results:
        result["score"] = float(rng.choice([0.3, 0.5, 0.9]))
        if iou_type == "bbox":  # boxes: the mask's bounding box
            import pycocotools.mask as mask_utils

            result["bbox"] = mask_utils.toBbox(result["segmentation"]).tolist()
    assert sum(a["iscrowd"] for a in gt["annotations"]) > 0
    rng.shuffle(gt["images"])
    assert [i["id"] for i in gt["images"]] != sorted(i["id"] for i in gt["images"])
    files = write_coco(tmp_path, gt, results)
    want, ap = tidecv_errors(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"), iou_type)
    command = f"eval detection --iou-type {iou_type} {files} --metrics errors"
    errors = rpx(command).json["dataset"]["errors"]
    assert errors["ap50"] == pytest.approx(ap, abs=1e-12)
    for key, value in want.items():
        assert errors[key] == pytest.approx(value, abs=1e-12), key
    assert_jobs_and_shards_agree(rpx, command, tmp_path / "parts", shards=2)


@pytest.mark.parametrize("given, message", [
    ("1e-200,0.1", "sigmas must be numbers within [1e-06, 1]"),  # divided by zero inside OKS
    ("1e200,0.1", "sigmas must be numbers within [1e-06, 1]"),  # every OKS was 1
    ("nan,0.1", "expected a number, got 'nan'"),
    ("[[0.1, 0.2]]", "expected a flat JSON list of numbers"),  # a nested file was flattened
])
def test_oks_sigmas_are_bounded(rpx, tmp_path: Path, given: str, message: str) -> None:
    """Issue 39.4: a usage error naming the range, before anything is read."""
    if given.startswith("["):
        (tmp_path / "sigmas.json").write_text(given)
        given = str(tmp_path / "sigmas.json")
    write_json(tmp_path / "gt" / "a.json", [])
    write_json(tmp_path / "pred" / "a.json", [])
    run = rpx(f"eval detection --iou-type keypoints --oks-sigmas {given} {dirs(tmp_path)}")
    assert run.exit_code == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_two_categories_of_one_name_stay_two(rpx, tmp_path: Path) -> None:
    """Issue 39.5: one per_class entry overwrote the other. They are two categories, as in
    pycocotools (by id): each keyed ``name (id)``, its AP pycocotools' for that id."""
    gt, results = box_set_lvis(1)
    for ann in gt["annotations"]:
        ann.setdefault("iscrowd", 0)
    gt["categories"][1]["name"] = gt["categories"][0]["name"]
    name, first, second = gt["categories"][0]["name"], gt["categories"][0]["id"], gt["categories"][1]["id"]
    report = rpx(f"eval detection {write_coco(tmp_path, gt, results)}").json
    per_class = report["dataset"]["coco"]["per_class"]
    assert name not in per_class and {f"{name} ({first})", f"{name} ({second})"} <= set(per_class)
    evaluator = pycocotools_eval(gt, results, "bbox")
    precision = evaluator.eval["precision"][:, :, :, 0, -1]
    for k, category_id in ((0, first), (1, second)):
        values = precision[:, :, k]
        assert per_class[f"{name} ({category_id})"]["AP"] == pytest.approx(
            float(values[values > -1].mean()), abs=1e-12)


@pytest.mark.parametrize("iou_type", ["segm", "keypoints"])
def test_a_result_too_large_for_every_area_range_is_refused(rpx, tmp_path: Path, iou_type: str) -> None:
    """Issue 39.9, the gaming vector: a false positive with a huge ``bbox`` got an area past
    COCO's "all" range (1e5²), left COCO AP and lifted it (0.5 -> 1.0) while pooled precision
    still counted it. Such a result is an input error naming it, in COCO files and per-stem
    files; --on-error skip scores its image's prediction as empty (never better)."""
    gt, results = segm_set(1) if iou_type == "segm" else keypoint_set(1)
    bad = dict(results[4])
    bad["bbox"] = [0, 0, 2e5, 2e5]
    results = [*results, bad]
    err = one_line(rpx(f"eval detection --iou-type {iou_type} {write_coco(tmp_path, gt, results)}"))
    assert f"detection {len(results) - 1}: its area 4e+10 is beyond COCO's largest area range" in err
    assert "dt.json" in err
    skipped = rpx(f"eval detection --iou-type {iou_type} {write_coco(tmp_path, gt, results)} "
                  "--on-error skip")
    assert skipped.exit_code == 0 and len(skipped.json["errors"]) == 1
    per_stem(tmp_path / "dirs", gt, results[:-1], iou_type)
    stem = next(i["file_name"] for i in gt["images"] if i["id"] == bad["image_id"]).rsplit(".", 1)[0]
    pred_file = tmp_path / "dirs" / "pred" / f"{stem}.json"
    document = json.loads(pred_file.read_text())
    field = "segmentation" if iou_type == "segm" else "keypoints"
    document["objects"].append({field: bad[field], "label": document["objects"][0]["label"],
                                "score": 0.1, "bbox": [0, 0, 2e5, 2e5]})  # xyxy: 2e5 x 2e5
    pred_file.write_text(json.dumps(document))
    err = one_line(rpx(f"eval detection --iou-type {iou_type} {dirs(tmp_path / 'dirs')}"))
    assert str(pred_file) in err and "beyond COCO's largest area range" in err


def test_what_loadres_fills_in_rpx_fills_in(rpx, tmp_path: Path) -> None:
    """SPEC §11.4 (issue 38.2): box-only results under --iou-type segm are scored as the
    box's polygon, mask-only results under bbox get the mask's bounding box — as
    pycocotools' loadRes — where both were refused ("missing 'segmentation'" / "'bbox'")."""
    import pycocotools.mask as mask_utils

    gt, results = segm_set(2)
    boxes_only = [{k: v for k, v in r.items() if k != "segmentation"} for r in results]
    for r, b in zip(results, boxes_only, strict=True):
        b["bbox"] = mask_utils.toBbox(r["segmentation"]).tolist()
    report = rpx(f"eval detection --iou-type segm {write_coco(tmp_path, gt, boxes_only)}").json
    evaluator = pycocotools_eval(gt, boxes_only, "segm")
    assert_stats_equal(report["dataset"]["coco"], COCO_NAMES, evaluator.stats)
    masks_only = [{k: v for k, v in r.items() if k != "bbox"} for r in results]
    report = rpx(f"eval detection {write_coco(tmp_path, gt, masks_only)}").json
    evaluator = pycocotools_eval(gt, masks_only, "bbox")
    assert_stats_equal(report["dataset"]["coco"], COCO_NAMES, evaluator.stats)
