"""``rpx eval panoptic``: hand-computed images, equality with panopticapi's ``pq_compute``
(vendored test-only in ``panopticapi_reference.py``) on generated sets and on panopticapi's
own sample data, the kernels against their readable references, pairing by the JSON files,
and every input error (exit 1, the image named, no report)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import without_provenance
from hypothesis import given, settings
from hypothesis import strategies as st
from panoptic_data import (
    CATEGORIES,
    Side,
    flags,
    half_iou_pair,
    id_rgb,
    random_scene,
    write_id_png,
    write_set,
)
from panopticapi_reference import pq_compute
from PIL import Image

from rpx_cli.api import evaluate_dirs
from rpx_cli.errors import InputError
from rpx_cli.io.panoptic import decode_ids, reference_ids
from rpx_cli.ops.panoptic import Quality, match_image, overlap_counts, reference_overlap_counts

TOL = 1e-9
MIRROR = Path("/work/.mirror/cocodataset+panopticapi/repo")


def reference(paths: dict[str, Path]) -> dict[str, Any]:
    with contextlib.redirect_stdout(io.StringIO()):
        return pq_compute(str(paths["gt_json"]), str(paths["pred_json"]), str(paths["gt_dir"]),
                          str(paths["pred_dir"]), processes=1)


def single_core(paths: dict[str, Path]) -> dict[Any, float]:
    """panopticapi's per-category PQ without its averages (which divide by zero when a
    split has no class)."""
    from panopticapi_reference import pq_compute_single_core

    gt, pred = (json.loads(paths[key].read_text()) for key in ("gt_json", "pred_json"))
    categories = {c["id"]: c for c in gt["categories"]}
    by_id = {a["image_id"]: a for a in pred["annotations"]}
    matched = [(a, by_id[a["image_id"]]) for a in gt["annotations"]]
    with contextlib.redirect_stdout(io.StringIO()):
        stat = pq_compute_single_core(0, matched, str(paths["gt_dir"]), str(paths["pred_dir"]),
                                      categories)
    return {label: {"pq": s.iou / (s.tp + 0.5 * s.fp + 0.5 * s.fn), "sq": s.iou / s.tp if s.tp else 0}
            for label, s in stat.pq_per_cat.items() if s.tp + s.fp + s.fn}


def assert_equals_reference(report: dict[str, Any], ref: dict[str, Any],
                            categories: list[dict[str, Any]] = CATEGORIES) -> None:
    dataset = report["dataset"]
    for split, name in (("", "All"), ("_things", "Things"), ("_stuff", "Stuff")):
        for key in ("pq", "sq", "rq"):
            assert dataset[f"{key}{split}"] == pytest.approx(ref[name][key], abs=TOL), (key, split)
        assert dataset[f"n_classes{split}"] == ref[name]["n"]
    for category in categories:
        got = dataset["per_class"][category["name"]]
        want = ref["per_class"][category["id"]]
        if got["tp"] + got["fp"] + got["fn"] == 0:
            assert got["pq"] is None and want == {"pq": 0.0, "sq": 0.0, "rq": 0.0}
            continue
        for key in ("pq", "sq", "rq"):
            assert got[key] == pytest.approx(want[key], abs=TOL), (category["name"], key)


def run(rpx, paths: dict[str, Path], *extra: str):
    return rpx(["eval", "panoptic", *flags(paths), *extra])


# --- hand-computed ---------------------------------------------------------------------


def test_iou_exactly_half_is_no_match(rpx, tmp_path: Path) -> None:
    paths = write_set(tmp_path, [("half", *half_iou_pair())])
    report = run(rpx, paths).json
    row = report["rows"][0]
    # person: I = 32, U = 32 + 64 - 32 = 64: IoU 0.5, no match -> FN + FP; car: IoU 63/64
    assert (row["tp"], row["fp"], row["fn"]) == (1, 1, 1)
    assert row["pq"] == (0 + 63 / 64) / 2 and row["rq"] == (0 + 1) / 2
    person, car = report["dataset"]["per_class"]["person"], report["dataset"]["per_class"]["car"]
    assert (person["tp"], person["fp"], person["fn"], person["pq"], person["sq"]) == (0, 1, 1, 0.0, 0.0)
    assert car["pq"] == car["sq"] == 63 / 64 and car["rq"] == 1.0
    assert report["dataset"]["per_class"]["sky"]["pq"] is None  # no segment either side
    # no stuff class seen: null (panopticapi's pq_compute divides by zero there)
    assert report["dataset"]["n_classes"] == 2 and report["dataset"]["pq_stuff"] is None


def scene(gt_cells: dict[int, tuple[slice, slice, int, int]],
          pred_cells: dict[int, tuple[slice, slice, int]], shape=(10, 10)) -> tuple[Side, Side]:
    gt, pred = Side(np.zeros(shape, np.int64)), Side(np.zeros(shape, np.int64))
    for sid, (rows, cols, category, crowd) in gt_cells.items():
        gt.ids[rows, cols] = sid
        gt.segments[sid] = (category, crowd)
    for sid, (rows, cols, category) in pred_cells.items():
        pred.ids[rows, cols] = sid
        pred.segments[sid] = (category, 0)
    return gt, pred


def test_void_is_left_out_of_the_union_and_excuses_predictions(rpx, tmp_path: Path) -> None:
    s = slice
    # GT: person at rows 0-3 (40 px), the rest VOID; prediction: rows 0-5 (60 px, 20 on VOID)
    # IoU = 40 / (60 + 40 - 40 - 20) = 1.0; a second prediction of 30 px, 20 on VOID: ignored
    gt, pred = scene({5: (s(0, 4), s(0, 10), 1, 0)},
                     {7: (s(0, 6), s(0, 10), 1), 9: (s(6, 9), s(0, 10), 3)})
    gt.ids[8, :] = 6  # 10 px of sky under the second prediction: 20 of its 30 px on VOID
    gt.segments[6] = (23, 0)
    paths = write_set(tmp_path, [("a", gt, pred)])
    report = run(rpx, paths).json
    per = report["dataset"]["per_class"]
    assert (per["person"]["tp"], per["person"]["pq"]) == (1, 1.0)
    assert (per["car"]["fp"], per["sky"]["fn"]) == (0, 1)  # 20/30 on VOID > 1/2: not an FP
    ref = reference(paths)
    assert ref["per_class"][1]["pq"] == 1.0 and ref["per_class"][23]["pq"] == 0.0


def test_a_gt_image_without_segments_is_valid(rpx, tmp_path: Path) -> None:
    """SPEC §11.4: a GT image that is all VOID (``segments_info: []``) is scored: a
    prediction on it is a false positive unless more than half of it lies on VOID — which
    on an all-VOID image it always does, so panopticapi counts nothing; a prediction on a
    second image with one GT segment and VOID elsewhere is an FP when half or less is VOID."""
    s = slice
    empty_gt, on_void = scene({}, {5: (s(0, 4), s(0, 4), 1)})
    gt, pred = scene({3: (s(0, 2), s(0, 10), 3, 0)}, {4: (s(0, 4), s(0, 5), 1)})
    # prediction 4: 20 px, 10 on car (GT 3), 10 on VOID: 10 / 20 is not more than half: FP
    paths = write_set(tmp_path, [("void", empty_gt, on_void), ("one", gt, pred)])
    report = run(rpx, paths).json
    rows = {row["stem"]: row for row in report["rows"]}
    assert (rows["void"]["tp"], rows["void"]["fp"], rows["void"]["fn"]) == (0, 0, 0)
    assert rows["void"]["pq"] is None  # no category with TP + FP + FN > 0 in that image
    assert (rows["one"]["tp"], rows["one"]["fp"], rows["one"]["fn"]) == (0, 1, 1)
    per_class = report["dataset"]["per_class"]
    assert (per_class["person"]["fp"], per_class["car"]["fn"]) == (1, 1)
    ref = single_core(paths)  # (its means divide by zero: no stuff class is seen)
    assert ref == {1: {"pq": 0.0, "sq": 0}, 3: {"pq": 0.0, "sq": 0}}


def test_crowd_regions(rpx, tmp_path: Path) -> None:
    s = slice
    # two crowd car regions; panopticapi keeps the LAST of a category: a car prediction on
    # the first crowd region is a false positive, one on the last is ignored
    gt, pred = scene({11: (s(0, 5), s(0, 5), 3, 1), 12: (s(5, 10), s(5, 10), 3, 1),
                      13: (s(0, 5), s(5, 10), 1, 0)},
                     {21: (s(0, 5), s(0, 5), 3), 22: (s(5, 10), s(5, 10), 3),
                      23: (s(0, 5), s(5, 10), 1)})
    paths = write_set(tmp_path, [("crowd", gt, pred)])
    report = run(rpx, paths).json
    car = report["dataset"]["per_class"]["car"]
    assert (car["tp"], car["fp"], car["fn"]) == (0, 1, 0)  # crowd never matched nor missed
    assert report["rows"][0]["tp"] == 1
    with pytest.raises(ZeroDivisionError):  # no stuff class: panopticapi divides by zero
        reference(paths)
    assert report["dataset"]["pq_stuff"] is None
    ref = single_core(paths)
    assert ref[3]["pq"] == car["pq"] == 0.0
    assert ref[1]["pq"] == report["dataset"]["per_class"]["person"]["pq"] == 1.0


def test_split_and_merged_segments(rpx, tmp_path: Path) -> None:
    s = slice
    # GT person 50 px split into 30 + 20: the 30 px half matches (IoU 0.6), the other is an FP;
    # two GT cars (25 px each) merged into one prediction: IoU 0.5 with each, no match
    gt, pred = scene({1: (s(0, 5), s(0, 10), 1, 0), 2: (s(5, 10), s(0, 5), 3, 0),
                      3: (s(5, 10), s(5, 10), 3, 0)},
                     {4: (s(0, 5), s(0, 6), 1), 5: (s(0, 5), s(6, 10), 1),
                      6: (s(5, 10), s(0, 10), 3)})
    paths = write_set(tmp_path, [("split", gt, pred)])
    per = run(rpx, paths).json["dataset"]["per_class"]
    assert (per["person"]["tp"], per["person"]["fp"], per["person"]["fn"]) == (1, 1, 0)
    assert per["person"]["pq"] == pytest.approx(0.6 / 1.5)
    assert (per["car"]["tp"], per["car"]["fp"], per["car"]["fn"]) == (0, 1, 2)


def test_perfect_prediction_scores_one(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    images = []
    for i in range(3):
        gt, _ = random_scene(rng)
        images.append((f"p{i}", gt, Side(gt.ids.copy(), dict(gt.segments))))
    report = run(rpx, write_set(tmp_path, images)).json
    seen = [v for v in report["dataset"]["per_class"].values() if v["pq"] is not None]
    assert all(v["fp"] == v["fn"] == 0 for v in seen)
    assert report["dataset"]["pq"] == report["dataset"]["sq"] == report["dataset"]["rq"] == 1.0
    assert all(row["pq"] == 1.0 for row in report["rows"])


# --- equality with panopticapi ----------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_equals_panopticapi_on_generated_sets(rpx, tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    images = [(f"img{i:03d}", *random_scene(rng, n_things=int(rng.integers(2, 10))))
              for i in range(12)]
    images.append(("half", *half_iou_pair()))
    ids = [f"city_{i:03d}" for i in range(len(images))] if seed % 2 else None
    paths = write_set(tmp_path, images, image_ids=ids)
    report = run(rpx, paths).json
    ref = reference(paths)
    assert_equals_reference(report, ref)
    # rows: the same means per image (panopticapi on each image alone)
    for name in ("img000", "half"):
        one = write_set(tmp_path / name, [next(i for i in images if i[0] == name)])
        alone = single_core(one)  # per category, this image alone
        row = next(r for r in report["rows"] if r["stem"] == name)
        assert row["pq"] == pytest.approx(sum(v["pq"] for v in alone.values()) / len(alone), abs=TOL)


def sample_data(tmp_path: Path) -> dict[str, Path]:
    """panopticapi's sample_data (two COCO val2017 images, 133 categories) as the GT."""
    if not (MIRROR / "HEAD").exists() and not (MIRROR / "objects").exists():
        pytest.skip("panopticapi's repository is not mirrored here")
    root = tmp_path / "sample"
    (root / "gt").mkdir(parents=True)
    files = {"sample_data/panoptic_examples.json": root / "gt.json"}
    for name in ("000000142238.png", "000000439180.png"):
        files[f"sample_data/panoptic_examples/{name}"] = root / "gt" / name
    for rel, target in files.items():
        target.write_bytes(subprocess.check_output(["git", "-C", str(MIRROR), "show", f"HEAD:{rel}"]))
    return {"gt_json": root / "gt.json", "gt_dir": root / "gt"}


def test_equals_panopticapi_on_its_sample_data(rpx, tmp_path: Path) -> None:
    gt = sample_data(tmp_path)
    data = json.loads(gt["gt_json"].read_text())
    categories = data["categories"]
    # the GT as its own prediction: PQ 1
    same = {**gt, "pred_json": gt["gt_json"], "pred_dir": gt["gt_dir"]}
    report = run(rpx, same).json
    assert report["dataset"]["pq"] == 1.0
    assert_equals_reference(report, reference(same), categories)
    # a degraded prediction: shifted by 7 px, every third segment dropped (VOID), two
    # segments of each image merged, a category changed
    rng = np.random.default_rng(0)
    pred_dir = tmp_path / "pred"
    annotations = []
    for ann in data["annotations"]:
        ids = decode_ids(np.frombuffer((gt["gt_dir"] / ann["file_name"]).read_bytes(), np.uint8), "")
        ids = np.roll(ids, 7, axis=1).astype(np.int64)
        ids[:, :7] = 0
        segments = []
        for i, seg in enumerate(ann["segments_info"]):
            if i % 3 == 2:
                ids[ids == seg["id"]] = 0
                continue
            category = seg["category_id"]
            if i == 4:
                category = categories[int(rng.integers(len(categories)))]["id"]
            segments.append({"id": seg["id"], "category_id": category})
        first, second = segments[0], segments[1]
        ids[ids == second["id"]] = first["id"]
        segments = [seg for seg in segments[:1] + segments[2:] if np.any(ids == seg["id"])]
        write_id_png(pred_dir / ann["file_name"], ids)
        annotations.append({"image_id": ann["image_id"], "file_name": ann["file_name"],
                            "segments_info": segments})
    (tmp_path / "pred.json").write_text(json.dumps({"annotations": annotations}))
    degraded = {**gt, "pred_json": tmp_path / "pred.json", "pred_dir": pred_dir}
    report = run(rpx, degraded).json
    ref = reference(degraded)
    assert 0.2 < report["dataset"]["pq"] < 0.9
    assert_equals_reference(report, ref, categories)


def test_jobs_and_order_do_not_change_the_numbers(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    images = [(f"s{i}", *random_scene(rng)) for i in range(6)]
    paths = write_set(tmp_path / "a", images)
    one = without_provenance(run(rpx, paths).json)
    assert without_provenance(run(rpx, paths, "--jobs", "2").json) == one
    for key in ("gt_json", "pred_json"):  # images listed in another order
        data = json.loads(paths[key].read_text())
        data["annotations"].reverse()
        paths[key].write_text(json.dumps(data))
    again = without_provenance(run(rpx, paths).json)
    assert again["rows"] == one["rows"] and again["dataset"] == one["dataset"]


def test_python_api(tmp_path: Path) -> None:
    paths = write_set(tmp_path, [("half", *half_iou_pair())])
    report = evaluate_dirs("panoptic", paths["pred_dir"], paths["gt_dir"], gt_json=paths["gt_json"],
                           pred_json=paths["pred_json"], jobs=1)
    assert report["rows"][0]["pq"] == (0 + 63 / 64) / 2
    assert set(report["run_provenance"]["inputs"]) == {"gt_dir", "gt_json", "pred_dir", "pred_json"}
    assert report["run_provenance"]["inputs"]["gt_json"]["kind"] == "file"


# --- kernels against their references ---------------------------------------------------------


def test_overlap_counts_equal_the_unique_reference() -> None:
    rng = np.random.default_rng(1)
    for _ in range(20):
        segments_gt = rng.choice(np.arange(1, 256 ** 3), size=int(rng.integers(0, 30)), replace=False)
        segments_pred = rng.choice(np.arange(1, 256 ** 3), size=int(rng.integers(0, 30)), replace=False)
        shape = (int(rng.integers(1, 40)), int(rng.integers(1, 40)))
        pool_gt = np.concatenate([[0, 77], segments_gt])  # 77: an id no list names (mostly)
        pool_pred = np.concatenate([[0, 99], segments_pred])
        for run in (1, 16):  # noise (pixel by pixel) and runs along the rows (by runs)
            gt = rng.choice(pool_gt, size=shape).repeat(run, axis=1).astype(np.uint32)
            pred = rng.choice(pool_pred, size=shape).repeat(run, axis=1).astype(np.uint32)
            speckle = rng.random(shape) < 0.01  # a few short runs among the long ones
            pred[:, :shape[1]][speckle] = rng.choice(pool_pred, size=int(speckle.sum()))
            assert np.array_equal(overlap_counts(gt, pred, segments_gt, segments_pred),
                                  reference_overlap_counts(gt, pred, segments_gt, segments_pred))


def test_id_png_decode_equals_panopticapis_reading(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    for shape in ((1, 1), (7, 13), (64, 48)):
        ids = rng.integers(0, 256 ** 3, size=shape)
        write_id_png(tmp_path / "a.png", ids)
        data = (tmp_path / "a.png").read_bytes()
        decoded = decode_ids(np.frombuffer(data, np.uint8), "a.png")
        assert decoded.dtype == np.uint32 and np.array_equal(decoded, ids)
        assert np.array_equal(decoded, reference_ids(data))


def test_match_image_formulas() -> None:
    # one GT person (id index 2) and one prediction covering it plus 4 px of VOID
    counts = np.zeros((3, 3), np.int64)
    counts[2, 2] = 10  # intersection
    counts[1, 2] = 4  # prediction on VOID
    counts[2, 1] = 5  # GT pixels predicted VOID
    result = match_image(counts, np.array([0]), np.array([False]), np.array([15]), np.array([0]), 2)
    # union = 14 + 15 - 10 - 4 = 15: IoU 10 / 15
    assert result.category.tolist() == [0] and result.tp.tolist() == [1]
    assert result.iou.tolist() == [10 / 15]
    quality = Quality.of(np.array([1, 0]), np.array([1, 0]), np.array([0, 0]), np.array([0.8, 0.0]))
    assert quality.pq[0] == 0.8 / 1.5 and quality.rq[0] == 1 / 1.5 and quality.sq[0] == 0.8
    assert np.isnan(quality.pq[1]) and quality.means() == (0.8 / 1.5, 0.8, 1 / 1.5, 1)


# --- pairing --------------------------------------------------------------------------------


def test_pairs_by_image_id_then_by_file_name(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    images = [(f"frankfurt_{i}_gtFine_panoptic", *random_scene(rng)) for i in range(3)]
    paths = write_set(tmp_path, images, image_ids=["f0", "f1", "f2"])
    before = run(rpx, paths).json
    # detectron2's Cityscapes naming: prediction PNGs named after the input image
    pred = json.loads(paths["pred_json"].read_text())
    for ann in pred["annotations"]:
        new = ann["file_name"].replace("gtFine_panoptic", "leftImg8bit")
        (paths["pred_dir"] / ann["file_name"]).rename(paths["pred_dir"] / new)
        ann["file_name"] = new
    # one written with an id no GT image has and the GT's file name: paired by file_name
    pred["annotations"][1]["image_id"] = "other"
    pred["annotations"][1]["file_name"] = "frankfurt_1_gtFine_panoptic.png"
    (paths["pred_dir"] / "frankfurt_1_leftImg8bit.png").rename(
        paths["pred_dir"] / "frankfurt_1_gtFine_panoptic.png")
    paths["pred_json"].write_text(json.dumps(pred))
    after = run(rpx, paths).json
    assert [r["stem"] for r in after["rows"]] == [r["stem"] for r in before["rows"]]
    assert after["rows"][0]["pred_path"].endswith("frankfurt_0_leftImg8bit.png")
    assert after["dataset"] == before["dataset"]


def test_unpaired_images_follow_missing(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    paths = write_set(tmp_path, [(f"m{i}", *random_scene(rng)) for i in range(3)])
    pred = json.loads(paths["pred_json"].read_text())
    dropped = pred["annotations"].pop(1)
    pred["annotations"].append({**dropped, "image_id": 99, "file_name": "extra.png"})
    paths["pred_json"].write_text(json.dumps(pred))
    failed = run(rpx, paths)
    assert failed.exit_code == 1 and not failed.stdout
    assert "image 2: no prediction" in failed.stderr and "image 99: not in" in failed.stderr
    skipped = run(rpx, paths, "--missing", "skip").json
    assert skipped["unpaired"] == {"gt_only": ["m1"], "pred_only": ["extra"]}
    assert [r["stem"] for r in skipped["rows"]] == ["m0", "m2"]
    empty = run(rpx, paths, "--missing", "empty").json
    row = next(r for r in empty["rows"] if r["stem"] == "m1")
    assert row["tp"] == row["fp"] == 0 and row["fn"] > 0 and row["pq"] == 0.0
    assert row["pred_path"] is None


def test_both_listing_files_are_required(rpx, tmp_path: Path) -> None:
    paths = write_set(tmp_path, [("half", *half_iou_pair())])
    result = rpx(["eval", "panoptic", "--gt-json", paths["gt_json"], "--gt-dir", paths["gt_dir"],
                  "--pred-dir", paths["pred_dir"]])
    assert result.exit_code == 2 and "needs --pred-json" in result.stderr
    result = rpx(["eval", "panoptic", "--gt-json", paths["gt_json"], "--pred-json",
                  paths["pred_json"], "--pred-dir", paths["pred_dir"]])
    assert result.exit_code == 2 and "--gt-dir" in result.stderr


# --- input errors ---------------------------------------------------------------------------


def broken(tmp_path: Path, change) -> dict[str, Path]:
    paths = write_set(tmp_path, [("half", *half_iou_pair()), ("ok", *half_iou_pair())],
                      image_ids=[42, 43])
    change(paths)
    return paths


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data["annotations"][0])
    path.write_text(json.dumps(data))


def _png_id_not_listed(paths):
    edit_json(paths["pred_json"], lambda ann: ann["segments_info"].pop(0))


def _listed_id_not_in_png(paths):
    edit_json(paths["pred_json"], lambda ann: ann["segments_info"].append({"id": 5, "category_id": 1}))


def _unknown_category(paths):
    edit_json(paths["pred_json"], lambda ann: ann["segments_info"][0].update(category_id=999))


def _gt_unknown_category(paths):
    edit_json(paths["gt_json"], lambda ann: ann["segments_info"][0].update(category_id=999))


def _gt_png_id_not_listed(paths):
    edit_json(paths["gt_json"], lambda ann: ann["segments_info"].pop(0))


def _size_mismatch(paths):
    write_id_png(paths["pred_dir"] / "half.png", np.zeros((4, 4), np.int64))


def _gray_png(paths):
    Image.fromarray(np.zeros((8, 16), np.uint8), "L").save(paths["pred_dir"] / "half.png")


def _rgba_png(paths):
    rgba = np.concatenate([id_rgb(np.zeros((8, 16), np.int64)), np.full((8, 16, 1), 255, np.uint8)], -1)
    Image.fromarray(rgba, "RGBA").save(paths["gt_dir"] / "half.png")


def _duplicate_id(paths):
    edit_json(paths["pred_json"], lambda ann: ann["segments_info"].append(dict(ann["segments_info"][0])))


def _zero_area(paths):
    edit_json(paths["gt_json"], lambda ann: ann["segments_info"][0].update(area=0))


def _missing_png(paths):
    (paths["pred_dir"] / "half.png").unlink()


ERRORS = [
    (_png_id_not_listed, "pred/half.png",
     "image 42 (prediction): segment id(s) 21 in the PNG are not listed"),
    (_listed_id_not_in_png, "pred/half.png",
     "image 42 (prediction): segment id(s) 5 listed in segments_info are not in the PNG"),
    (_unknown_category, "pred/half.png", "image 42 (prediction): segment 21 has unknown category_id 999"),
    (_gt_unknown_category, "gt/half.png", "image 42 (GT): segment 11 has unknown category_id 999"),
    (_gt_png_id_not_listed, "gt/half.png", "image 42 (GT): segment id(s) 11 in the PNG are not listed"),
    (_size_mismatch, "pred/half.png", "image 42: the prediction PNG is 4x4 and the GT PNG 16x8"),
    (_gray_png, "pred/half.png", "8-bit grayscale PNG: panoptic segment ids are 8-bit RGB"),
    (_rgba_png, "gt/half.png", "8-bit RGBA PNG"),
    (_duplicate_id, "pred/half.png", "segment id 21 is listed twice"),
    (_missing_png, "pred/half.png", "file not found"),
    (_zero_area, "gt/half.png", "image 42 (GT): segment 11 has area 0 in the JSON but 64 pixel(s)"),
]


@pytest.mark.parametrize("change, path, message", ERRORS, ids=[e[0].__name__ for e in ERRORS])
def test_input_errors_name_the_image(rpx, tmp_path: Path, change, path: str, message: str) -> None:
    paths = broken(tmp_path, change)
    result = run(rpx, paths)
    assert result.exit_code == 1 and not result.stdout, result.stderr
    assert str(tmp_path / path) in result.stderr and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    skipped = run(rpx, paths, "--on-error", "skip").json  # the image listed, the rest scored
    assert [e["stem"] for e in skipped["errors"]] == ["half"]
    # a broken prediction is scored as an empty one (its GT missed); a broken GT drops it
    scored = ["half", "ok"] if path.startswith("pred/") else ["ok"]
    assert [r["stem"] for r in skipped["rows"]] == scored


@pytest.mark.parametrize("data, message", [
    ({"annotations": "x"}, "not a COCO panoptic file"),
    ({"annotations": [], "categories": [{"id": 1, "name": "a"}]}, "'isthing' must be 0 or 1"),
    ({"annotations": [{"image_id": 1, "file_name": "a.png", "segments_info": []}] * 2,
      "categories": CATEGORIES}, "image_id 1 has two annotations"),
    ({"annotations": [{"image_id": 1, "file_name": "../a.png", "segments_info": []}],
      "categories": CATEGORIES}, "'file_name' must name a PNG inside the folder"),
])
def test_bad_gt_files_stop_the_run(rpx, tmp_path: Path, data: Any, message: str) -> None:
    paths = write_set(tmp_path, [("half", *half_iou_pair())])
    paths["gt_json"].write_text(json.dumps(data))
    result = run(rpx, paths)
    assert result.exit_code == 1 and message in result.stderr and str(paths["gt_json"]) in result.stderr


def test_area_mismatch_is_a_warning_and_the_json_area_is_used(rpx, tmp_path: Path) -> None:
    paths = write_set(tmp_path, [("half", *half_iou_pair())])
    edit_json(paths["gt_json"], lambda ann: ann["segments_info"][1].update(area=70))  # car: 64 px
    result = run(rpx, paths)
    assert result.exit_code == 0 and "differs from its pixel count" in result.stderr
    car = result.json["dataset"]["per_class"]["car"]
    assert car["sq"] == 63 / (63 + 70 - 63)  # panopticapi's union with the JSON's area
    assert car["sq"] == pytest.approx(single_core(paths)[3]["sq"], abs=TOL)


def test_fixture_copy_runs_from_anywhere(rpx, tmp_path: Path) -> None:
    source = Path(__file__).resolve().parent.parent / "fixtures" / "panoptic" / "coco"
    shutil.copytree(source, tmp_path / "coco")
    root = tmp_path / "coco"
    paths = {"gt_json": root / "gt.json", "gt_dir": root / "gt", "pred_json": root / "pred.json",
             "pred_dir": root / "pred"}
    assert_equals_reference(run(rpx, paths).json, reference(paths))


def test_categories_from_their_own_file(rpx, tmp_path: Path) -> None:
    paths = write_set(tmp_path, [("half", *half_iou_pair())])
    want = run(rpx, paths).json
    data = json.loads(paths["gt_json"].read_text())
    (tmp_path / "categories.json").write_text(json.dumps(data.pop("categories")))
    paths["gt_json"].write_text(json.dumps(data))
    refused = run(rpx, paths)
    assert refused.exit_code == 1 and "'categories' must be a non-empty list" in refused.stderr
    got = run(rpx, paths, "--categories", tmp_path / "categories.json").json
    assert got["params"]["categories"] == want["params"]["categories"]
    assert got["dataset"] == want["dataset"]
    bad = run(rpx, paths, "--categories", paths["pred_json"])
    assert bad.exit_code == 2 and "--categories:" in bad.stderr


_ODD = [0, 1, 2, -1, 5, 2**70, 1.0, 3.5, True, False, None, "x", "1", 256**3, 256**3 - 1,
        2**53, 2**53 + 1, -5, [], {}]
_SEGMENT = st.fixed_dictionaries(
    {"id": st.sampled_from([3, 4, 7, 8, 256**3 - 1]) | st.sampled_from(_ODD),
     "category_id": st.sampled_from([1, 2, "x"]) | st.sampled_from(_ODD)},
    optional={"iscrowd": st.sampled_from([0, 1]) | st.sampled_from(_ODD),
              "area": st.sampled_from([0, 10, 2**53]) | st.sampled_from(_ODD)})


@settings(max_examples=400, deadline=None)
@given(st.lists(_SEGMENT | st.sampled_from(_ODD), max_size=5))
def test_segments_by_columns_equal_the_loop(items):
    """``segments_of``'s column path (the usual list) gives the loop's arrays, and whatever
    it declines the loop checks and words: the same result or the same error either way."""
    from rpx_cli.io import panoptic as io_panoptic

    categories = {1: 0, 2: 1, "x": 2}

    def run(plain):
        saved = io_panoptic._plain_segments
        io_panoptic._plain_segments = plain
        try:
            return io_panoptic.segments_of(items, categories, image="image 1", path="p.png")
        except InputError as exc:
            return str(exc)
        finally:
            io_panoptic._plain_segments = saved

    loop, columns = run(lambda *_: None), run(io_panoptic._plain_segments)
    if isinstance(loop, str):
        assert columns == loop
    else:
        for field in ("ids", "category", "crowd", "area"):
            a, b = getattr(loop, field), getattr(columns, field)
            assert a.dtype == b.dtype and np.array_equal(a, b), field
