"""``--on-error skip`` never raises a score (SPEC §2; issue 30.2): a prediction that cannot be
read — or that cannot be evaluated against a GT that can — is scored as an empty prediction,
exactly as ``--missing empty`` scores a missing one; only a GT that cannot be read removes a
pair. Driven over every registered task from its golden cases, so a new task is covered."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from helpers import command_of, golden_cases, write_json

from rpx_cli.tasks import TASKS

BROKEN = b"\x00\x01 not a prediction \xff"
SAME = ("aggregate", "dataset", "rows", "n_pairs")


def _folder_case(task_name: str) -> Path | None:
    """The task's first golden case that reads two folders (not input files instead of
    them; files that list the folders' pairs, as panoptic's, are fine)."""
    task = TASKS[task_name]
    files = set() if getattr(task, "files_list_pairs", False) else \
        {option.flag for option in task.file_inputs}
    for case in golden_cases():
        if case.parent.name == task_name and not files & set(shlex.split((case / "args").read_text())):
            return case
    return None


FOLDER_TASKS = [name for name in sorted(TASKS) if _folder_case(name) is not None]


def _pred_flag(task_name: str) -> str:
    return "--" + TASKS[task_name].input_names[0].replace("_", "-")


def _with_pred_dir(case: Path, argv: list[str], flag: str, pred_dir: Path) -> list[str]:
    """``argv`` (a case's command, run from ``case``) with its prediction folder replaced
    and every other relative path made absolute."""
    out = list(argv)
    at = out.index(flag)
    out[at + 1] = str(pred_dir)
    for i, arg in enumerate(out):
        if i != at + 1 and not arg.startswith("-") and (case / arg).exists():
            out[i] = str((case / arg).resolve())
    return out


@pytest.mark.parametrize("task_name", FOLDER_TASKS)
def test_a_broken_prediction_scores_as_a_missing_one_under_on_error_skip(
        task_name: str, rpx, tmp_path: Path) -> None:
    case = _folder_case(task_name)
    assert case is not None
    argv = command_of(case)
    flag = _pred_flag(task_name)
    source = (case / argv[argv.index(flag) + 1]).resolve()
    victim = sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith("."))[0]
    rel = victim.relative_to(source)
    broken, missing = tmp_path / "broken", tmp_path / "missing"
    shutil.copytree(source, broken)
    shutil.copytree(source, missing)
    (broken / rel).write_bytes(BROKEN)
    (missing / rel).unlink()

    skipped = rpx([*_with_pred_dir(case, argv, flag, broken), "--on-error", "skip"])
    assert skipped.exit_code == 0, skipped.stderr
    if getattr(TASKS[task_name], "files_list_pairs", False):
        # a listed pair cannot be missing: its empty prediction is written out instead (an
        # all-VOID map, no segment listed for it)
        empty_argv = _empty_listed_prediction(case, argv, flag, source, missing, rel, tmp_path)
    else:
        empty_argv = [*_with_pred_dir(case, argv, flag, missing), "--missing", "empty"]
    empty = rpx(empty_argv)
    assert empty.exit_code == 0, empty.stderr
    got, expected = skipped.json, empty.json
    for row in expected.get("rows") or []:  # the empty prediction was a file here: scored alike
        if row["stem"] == str(rel.with_suffix("")):
            row["pred_path"] = None
    got_same = json.loads(json.dumps({key: got.get(key) for key in SAME}).replace(
        json.dumps(str(broken))[1:-1], json.dumps(str(missing))[1:-1]))
    for key in SAME:
        assert got_same[key] == expected.get(key), key
    # a folder pair (a scene of samples): the broken file's folder is the pair, the file as
    # if it were missing (its sample empty), the folder's other files evaluated
    stem = str(rel.parent if TASKS[task_name].folder_pairs else rel.with_suffix(""))
    assert [(e["stem"], e["side"], e["effect"]) for e in got["errors"]] == \
        [(stem, "pred", "empty_prediction")]
    assert got["errors"][0]["path"] == str(broken / rel)
    assert f"scored as empty: {broken / rel}" in skipped.stderr
    # the broken file is not among the files evaluated: the folder digests as without it
    inputs = got["run_provenance"]["inputs"]
    if not getattr(TASKS[task_name], "files_list_pairs", False):  # (there a file stood in)
        assert inputs[TASKS[task_name].input_names[0]]["sha256"] == \
            expected["run_provenance"]["inputs"][TASKS[task_name].input_names[0]]["sha256"]

    # --on-error fail is unchanged: the pair is listed, exit 1, no report
    failed = rpx([*_with_pred_dir(case, argv, flag, broken), "--on-error", "fail"])
    assert failed.exit_code == 1 and failed.stdout == ""
    assert str(broken / rel) in failed.stderr


def _empty_listed_prediction(case: Path, argv: list[str], flag: str, source: Path, missing: Path,
                             rel: Path, tmp_path: Path) -> list[str]:
    """Panoptic: the victim's PNG all zeros (VOID) and its segments_info empty in a copy of
    --pred-json: the prediction that predicts nothing, as a file."""
    import numpy as np
    from PIL import Image

    shape = np.asarray(Image.open(source / rel)).shape
    Image.fromarray(np.zeros(shape, np.uint8)).save(missing / rel)
    listing_flag = "--pred-json"
    listing = (case / argv[argv.index(listing_flag) + 1]).resolve()
    document = json.loads(listing.read_text())
    for entry in document["annotations"]:
        if entry["file_name"] == str(rel):
            entry["segments_info"] = []
    write_json(tmp_path / "pred.json", document)
    out = _with_pred_dir(case, argv, flag, missing)
    out[out.index(listing_flag) + 1] = str(tmp_path / "pred.json")
    return out


def _detection(tmp_path: Path, n: int = 4) -> tuple[Path, Path]:
    pred, gt = tmp_path / "pred", tmp_path / "gt"
    for k in range(n):
        write_json(gt / f"im{k}.json", [{"bbox": [0, 0, 10, 10], "label": "cup"}])
        write_json(pred / f"im{k}.json", [{"bbox": [0, 0, 10, 10], "label": "cup",
                                           "score": 0.9}] if k % 2 == 0 else [])
    return pred, gt


def test_issue_30_2_one_malformed_box_does_not_raise_coco_ap(rpx, tmp_path: Path) -> None:
    """The reported case: a prediction file with one box x2 < x1 used to leave the
    evaluation with its GT, and AP rose. Two images found (AP 0.5 of 4 GT); breaking a
    missed image's file must not lift it."""
    pred, gt = _detection(tmp_path)
    base = rpx(["eval", "detection", "--pred-dir", str(pred), "--gt-dir", str(gt)])
    assert base.json["dataset"]["coco"]["AP50"] == pytest.approx(0.5, abs=0.01)
    write_json(pred / "im1.json", [{"bbox": [10, 0, 0, 10], "label": "cup", "score": 0.1}])
    run = rpx(["eval", "detection", "--pred-dir", str(pred), "--gt-dir", str(gt),
               "--on-error", "skip"])
    assert run.exit_code == 0, run.stderr
    assert run.json["dataset"]["coco"] == base.json["dataset"]["coco"]
    assert run.json["n_pairs"] == 4
    row = next(r for r in run.json["rows"] if r["stem"] == "im1")
    assert row["pred_path"] is None and row["fn"] == 1
    line = run.stderr.strip().splitlines()[-1]
    assert "1 on error (1 unreadable prediction(s) scored as empty, 0 pair(s) dropped)" in line


def test_a_broken_gt_drops_the_pair_and_says_so(rpx, tmp_path: Path) -> None:
    pred, gt = _detection(tmp_path)
    (gt / "im0.json").write_text("[{")
    write_json(pred / "im1.json", [{"bbox": [10, 0, 0, 10], "label": "cup", "score": 0.1}])
    run = rpx(["eval", "detection", "--pred-dir", str(pred), "--gt-dir", str(gt),
               "--on-error", "skip"])
    assert run.exit_code == 0, run.stderr
    report = run.json
    assert report["n_pairs"] == 3
    assert [(e["stem"], e["side"], e["effect"]) for e in report["errors"]] == \
        [("im0", "gt", "dropped"), ("im1", "pred", "empty_prediction")]
    assert "2 on error (1 unreadable prediction(s) scored as empty, 1 pair(s) dropped)" in \
        run.stderr
    assert f"skipped: {gt / 'im0.json'}" in run.stderr

    failed = rpx(["eval", "detection", "--pred-dir", str(pred), "--gt-dir", str(gt)])
    assert failed.exit_code == 1 and failed.stdout == ""
    assert "2 of 4 pairs could not be evaluated" in failed.stderr
    assert str(gt / "im0.json") in failed.stderr and str(pred / "im1.json") in failed.stderr


def test_a_prediction_that_cannot_be_evaluated_against_its_gt_scores_empty(rpx, tmp_path) -> None:
    """Read fine, refused when scored (a depth map of the wrong shape): the same rule."""
    import numpy as np

    pred, gt = tmp_path / "pred", tmp_path / "gt"
    pred.mkdir(), gt.mkdir()
    for k in range(2):
        np.save(gt / f"f{k}.npy", np.full((4, 4), 2.0, np.float32))
        np.save(pred / f"f{k}.npy", np.full((4, 4), 2.2, np.float32))
    np.save(pred / "f1.npy", np.full((3, 3), 2.0, np.float32))
    run = rpx(["eval", "depth", "--pred-dir", str(pred), "--gt-dir", str(gt), "--on-error", "skip"])
    assert run.exit_code == 0, run.stderr
    rows = {row["stem"]: row for row in run.json["rows"]}
    assert rows["f1"]["delta1"] == 0.0 and rows["f1"]["pred_path"] is None
    assert rows["f0"]["delta1"] == 1.0
    assert run.json["errors"][0]["side"] == "pred"
    assert json.dumps(run.json["errors"][0]["path"]).endswith('f1.npy"')


# --- one-file inputs (issue 31.4): the same rule per record ------------------------------------

COCO = Path(__file__).resolve().parent.parent / "fixtures" / "detection" / "coco"
SUBMISSION = Path(__file__).resolve().parent.parent / "fixtures" / "detection3d" / "submission"
IMAGENET = Path(__file__).resolve().parent.parent / "fixtures" / "classification" / "imagenet-csv"


def _coco_run(rpx, gt: Path, dt: Path, *more: str):
    return rpx(["eval", "detection", "--coco-gt", str(gt), "--coco-dt", str(dt), *more])


def test_coco_files_a_bad_detection_empties_its_image_a_bad_annotation_drops_it(
        rpx, tmp_path: Path) -> None:
    instances = json.loads((COCO / "instances.json").read_text())
    results = json.loads((COCO / "results.json").read_text())
    images = {image["id"]: image["file_name"].rsplit(".", 1)[0] for image in instances["images"]}
    victim = results[0]["image_id"]  # a bad detection here: none of this image's count
    broken = [dict(r) for r in results]
    broken[0]["bbox"] = [10, 10, -5, 4]
    write_json(tmp_path / "broken.json", broken)
    write_json(tmp_path / "without.json", [r for r in results if r["image_id"] != victim])
    plain = _coco_run(rpx, COCO / "instances.json", COCO / "results.json")
    without = _coco_run(rpx, COCO / "instances.json", tmp_path / "without.json")
    skipped = _coco_run(rpx, COCO / "instances.json", tmp_path / "broken.json",
                        "--on-error", "skip")
    assert skipped.exit_code == 0, skipped.stderr
    assert skipped.json["dataset"] == without.json["dataset"] != plain.json["dataset"]
    assert [(e["stem"], e["side"], e["effect"]) for e in skipped.json["errors"]] == \
        [(images[victim], "pred", "empty_prediction")]
    assert "detection 0: negative width or height" in skipped.json["errors"][0]["message"]
    row = next(r for r in skipped.json["rows"] if r["stem"] == images[victim])
    assert row["pred_path"] is None
    failed = _coco_run(rpx, COCO / "instances.json", tmp_path / "broken.json")
    assert failed.exit_code == 1 and failed.stdout == ""
    assert "negative width or height" in failed.stderr

    # a bad annotation: its image leaves the evaluation (GT and detections)
    bad_gt = json.loads(json.dumps(instances))
    dropped_id = bad_gt["annotations"][0]["image_id"]
    bad_gt["annotations"][0]["iscrowd"] = 2
    write_json(tmp_path / "bad_gt.json", bad_gt)
    skipped = _coco_run(rpx, tmp_path / "bad_gt.json", COCO / "results.json", "--on-error", "skip")
    assert skipped.exit_code == 0, skipped.stderr
    report = skipped.json
    assert report["n_pairs"] == plain.json["n_pairs"] - 1
    assert images[dropped_id] not in [row["stem"] for row in report["rows"]]
    assert [(e["stem"], e["side"], e["effect"]) for e in report["errors"]] == \
        [(images[dropped_id], "gt", "dropped")]
    reduced = json.loads(json.dumps(instances))
    reduced["images"] = [i for i in reduced["images"] if i["id"] != dropped_id]
    reduced["annotations"] = [a for a in reduced["annotations"] if a["image_id"] != dropped_id]
    write_json(tmp_path / "reduced_gt.json", reduced)
    write_json(tmp_path / "reduced_dt.json", [r for r in results if r["image_id"] != dropped_id])
    expected = _coco_run(rpx, tmp_path / "reduced_gt.json", tmp_path / "reduced_dt.json")
    assert report["dataset"] == expected.json["dataset"]
    # a detection naming no image of the GT file: listed, not evaluated
    write_json(tmp_path / "stray.json", [*results, {"image_id": 999999, "category_id": 1,
                                                    "bbox": [0, 0, 1, 1], "score": 0.5}])
    stray = _coco_run(rpx, COCO / "instances.json", tmp_path / "stray.json", "--on-error", "skip")
    assert stray.exit_code == 0, stray.stderr
    assert stray.json["dataset"] == plain.json["dataset"]
    assert [(e["stem"], "side" in e) for e in stray.json["errors"]] == [("", False)]


def test_submission_files_a_bad_box_empties_its_sample_a_bad_gt_box_drops_it(
        rpx, tmp_path: Path) -> None:
    args = ["--class-names", "car,pedestrian,barrier,traffic_cone,truck,bus"]
    gt, pred = (json.loads((SUBMISSION / f"{side}.json").read_text()) for side in ("gt", "pred"))
    sample = next(s for s, boxes in pred["results"].items() if boxes)
    broken = json.loads(json.dumps(pred))
    broken["results"][sample][0]["size"] = [1.0, -2.0, 1.0]
    emptied = json.loads(json.dumps(pred))
    emptied["results"][sample] = []
    for name, document in (("broken", broken), ("emptied", emptied)):
        write_json(tmp_path / f"{name}.json", document)

    def run(gt_file: Path, pred_file: Path, *more: str):
        return rpx(["eval", "detection3d", "--gt-file", str(gt_file), "--pred-file",
                    str(pred_file), *args, *more])

    skipped = run(SUBMISSION / "gt.json", tmp_path / "broken.json", "--on-error", "skip")
    assert skipped.exit_code == 0, skipped.stderr
    expected = run(SUBMISSION / "gt.json", tmp_path / "emptied.json")
    assert skipped.json["dataset"] == expected.json["dataset"]
    assert [(e["stem"], e["side"]) for e in skipped.json["errors"]] == [(sample, "pred")]
    failed = run(SUBMISSION / "gt.json", tmp_path / "broken.json")
    assert failed.exit_code == 1 and failed.stdout == "" and f"sample {sample!r}" in failed.stderr

    bad_gt = json.loads(json.dumps(gt))
    bad_gt["results"][sample] = "not a list"
    write_json(tmp_path / "bad_gt.json", bad_gt)
    skipped = run(tmp_path / "bad_gt.json", SUBMISSION / "pred.json", "--on-error", "skip")
    assert skipped.exit_code == 0, skipped.stderr
    assert sample not in [row["stem"] for row in skipped.json["rows"]]
    assert [(e["stem"], e["side"], e["effect"]) for e in skipped.json["errors"]] == \
        [(sample, "gt", "dropped")]


def test_classification_csv_a_bad_prediction_row_scores_as_a_missing_prediction(
        rpx, tmp_path: Path) -> None:
    gt_lines = (IMAGENET / "gt.csv").read_text().splitlines()
    pred_lines = (IMAGENET / "pred.csv").read_text().splitlines()
    header = pred_lines[0].split(",")
    victim = pred_lines[3].split(",")[0]
    broken = [*pred_lines[:3], f"{victim},0.2,abc,0.1,0.1,0.1", *pred_lines[4:]]
    (tmp_path / "broken.csv").write_text("\n".join(broken) + "\n")
    # the same samples as per-stem files, the victim's prediction missing
    for line in gt_lines[1:]:
        stem, label = line.split(",")
        write_json(tmp_path / "gt" / f"{stem}.json", {"label": label})
    for line in pred_lines[1:]:
        cells = line.split(",")
        if cells[0] != victim:
            write_json(tmp_path / "pred" / f"{cells[0]}.json",
                       {"scores": dict(zip(header[1:], map(float, cells[1:]), strict=True))})
    skipped = rpx(["eval", "classification", "--gt-file", str(IMAGENET / "gt.csv"), "--pred-file",
                   str(tmp_path / "broken.csv"), "--top-k", "3", "--on-error", "skip"])
    assert skipped.exit_code == 0, skipped.stderr
    empty = rpx(["eval", "classification", "--gt-dir", str(tmp_path / "gt"), "--pred-dir",
                 str(tmp_path / "pred"), "--top-k", "3", "--missing", "empty"])
    assert empty.exit_code == 0, empty.stderr
    assert skipped.json["dataset"] == empty.json["dataset"]
    assert skipped.json["aggregate"] == empty.json["aggregate"]
    assert [(e["stem"], e["side"]) for e in skipped.json["errors"]] == [(victim, "pred")]
    assert "line 4: the score in column 3 is not a number" in skipped.json["errors"][0]["message"]
    failed = rpx(["eval", "classification", "--gt-file", str(IMAGENET / "gt.csv"), "--pred-file",
                  str(tmp_path / "broken.csv"), "--top-k", "3"])
    assert failed.exit_code == 1 and failed.stdout == ""
    assert "line 4: the score in column 3 is not a number" in failed.stderr

    # a bad GT row drops its stem; a stem listed twice in the predictions is ambiguous: empty
    bad_gt = [gt_lines[0], f"{gt_lines[1].split(',')[0]},", *gt_lines[2:]]
    (tmp_path / "bad_gt.csv").write_text("\n".join(bad_gt) + "\n")
    twice = [*pred_lines, pred_lines[5]]
    (tmp_path / "twice.csv").write_text("\n".join(twice) + "\n")
    run = rpx(["eval", "classification", "--gt-file", str(tmp_path / "bad_gt.csv"), "--pred-file",
               str(tmp_path / "twice.csv"), "--top-k", "3", "--on-error", "skip"])
    assert run.exit_code == 0, run.stderr
    assert run.json["n_pairs"] == len(gt_lines) - 2
    assert sorted((e["stem"], e["side"]) for e in run.json["errors"]) == sorted(
        [(gt_lines[1].split(",")[0], "gt"), (pred_lines[5].split(",")[0], "pred")])


def test_coco_segm_a_bad_mask_empties_its_image(rpx, tmp_path: Path) -> None:
    """The same rule for --iou-type segm: each record checked alone by the mask reader."""
    masks = Path(__file__).resolve().parent.parent / "fixtures" / "detection" / "masks"
    results = json.loads((masks / "results.json").read_text())
    victim = results[0]["image_id"]
    broken = [dict(r) for r in results]
    broken[0]["segmentation"] = {"size": [32, 40], "counts": 5}
    write_json(tmp_path / "broken.json", broken)
    write_json(tmp_path / "without.json", [r for r in results if r["image_id"] != victim])
    args = ["--iou-type", "segm", "--coco-gt", str(masks / "instances.json")]
    skipped = rpx(["eval", "detection", *args, "--coco-dt", str(tmp_path / "broken.json"),
                   "--on-error", "skip"])
    assert skipped.exit_code == 0, skipped.stderr
    without = rpx(["eval", "detection", *args, "--coco-dt", str(tmp_path / "without.json")])
    assert skipped.json["dataset"] == without.json["dataset"]
    assert [(e["side"], e["effect"]) for e in skipped.json["errors"]] == \
        [("pred", "empty_prediction")]
    assert skipped.json["errors"][0]["message"].split(": ", 1)[1].startswith("detection 0")
    failed = rpx(["eval", "detection", *args, "--coco-dt", str(tmp_path / "broken.json")])
    assert failed.exit_code == 1 and failed.stdout == ""
