"""The data behind the report's charts: ``dataset.coco.curves`` against pycocotools'
``eval["precision"]`` / ``eval["scores"]``, ``dataset.errors`` against tidecv on the same
COCO files, and both surviving ``--shard`` + ``rpx merge`` exactly."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_jobs_and_shards_agree, dirs, generated_detections, write_json_pair
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from test_coco_ops import dataset

from rpx_cli.ops.coco import CocoInput, evaluate
from rpx_cli.report.schemas import validation_errors

CLASSES = ["c0", "c1", "c2", "c3", "c4"]  # c4: predictions only (no GT)
ALL = "rows,pooled,confusion,coco,errors"


def coco_files(frames, root: Path) -> tuple[Path, Path]:
    """The frames as a COCO instances file and a results file (images 1..N in stem order,
    polygons for tidecv, which reads them even in box mode)."""
    images, anns, dets = [], [], []
    for i, (stem, gt, pred) in enumerate(sorted(frames, key=lambda f: f[0]), 1):
        images.append({"id": i, "file_name": f"{stem}.jpg", "width": 640, "height": 480})
        for g in gt:
            x1, y1, x2, y2 = g["bbox"]
            anns.append({"id": len(anns) + 1, "image_id": i, "category_id": CLASSES.index(g["label"]) + 1,
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1),
                         "iscrowd": g.get("iscrowd", 0), "segmentation": [[x1, y1, x2, y1, x2, y2, x1, y2]]})
        for p in pred:
            x1, y1, x2, y2 = p["bbox"]
            dets.append({"image_id": i, "category_id": CLASSES.index(p["label"]) + 1,
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "score": p["score"]})
    gt_path, dt_path = root / "instances.json", root / "results.json"
    gt_path.write_text(json.dumps({"images": images, "annotations": anns, "categories":
                                   [{"id": k + 1, "name": c} for k, c in enumerate(CLASSES)]}))
    dt_path.write_text(json.dumps(dets))
    return gt_path, dt_path


def pycocotools_eval(gt_path: Path, dt_path: Path) -> dict:
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(gt_path))
        evaluator = COCOeval(coco, coco.loadRes(str(dt_path)), "bbox")
        evaluator.evaluate()
        evaluator.accumulate()
    return evaluator.eval


def tidecv_breakdown(gt_path: Path, dt_path: Path) -> tuple[dict, dict]:
    """tidecv's main and special dAP (÷ 100: rpx's 0-1 scale) and its error counts."""
    from tidecv import TIDE, datasets

    tide = TIDE()  # IoU 0.5, background 0.1, box mode
    with contextlib.redirect_stdout(io.StringIO()):
        tide.evaluate(datasets.COCO(str(gt_path)), datasets.COCOResult(str(dt_path)), mode=TIDE.BOX)
        (name, run), = tide.runs.items()
        main, special = tide.get_main_errors()[name], tide.get_special_errors()[name]
    names = {"Cls": "cls", "Loc": "loc", "Both": "both", "Dupe": "dupe", "Bkg": "bkg", "Miss": "miss",
             "FalsePos": "fp", "FalseNeg": "fn"}
    dap = {names[k]: v / 100 for k, v in {**main, **special}.items()}
    dap["ap50"] = run.ap / 100
    counts = {names[type(e).short_name]: 0 for e in run.errors}
    for error in run.errors:
        counts[names[type(error).short_name]] += 1
    return dap, counts


@pytest.fixture(scope="module")
def detections() -> list:
    return generated_detections(1, 60)


def run_both(rpx, tmp_path: Path, frames, metrics: str = ALL) -> tuple[dict, dict, Path, Path]:
    """The same detections through --pred-dir/--gt-dir and through COCO files."""
    for stem, gt, pred in frames:
        write_json_pair(tmp_path / "dirs", stem, gt, pred)
    gt_path, dt_path = coco_files(frames, tmp_path)
    per_stem = rpx(f"eval detection {dirs(tmp_path / 'dirs')} --metrics {metrics}")
    files = rpx(f"eval detection --coco-gt {gt_path} --coco-dt {dt_path} --metrics {metrics}")
    assert per_stem.exit_code == 0 and files.exit_code == 0, per_stem.stderr + files.stderr
    return per_stem.json, files.json, gt_path, dt_path


def test_curves_equal_pycocotools_precision_and_scores(rpx, tmp_path: Path, detections) -> None:
    per_stem, files, gt_path, dt_path = run_both(rpx, tmp_path, detections, "coco")
    reference = pycocotools_eval(gt_path, dt_path)
    precision, scores = reference["precision"][:, :, :, 0, 2], reference["scores"][:, :, :, 0, 2]
    for report in (per_stem, files):
        curves = report["dataset"]["coco"]["curves"]
        assert curves["recall"] == pytest.approx(np.linspace(0, 1, 101).tolist(), abs=0)
        with_gt = []
        for k, name in enumerate(CLASSES):
            for key, mean in (("iou50", False), ("iou50_95", True)):
                got = curves[key]["per_class"][name]
                want_p = precision[:, :, k].mean(axis=0) if mean else precision[0, :, k]
                want_s = scores[:, :, k].mean(axis=0) if mean else scores[0, :, k]
                if (precision[0, :, k] == -1).all():  # no GT: pycocotools' -1 is null
                    assert got["precision"] == [None] * 101 and got["score"] == [None] * 101
                    continue
                assert got["precision"] == pytest.approx(want_p.tolist(), abs=1e-12), (name, key)
                assert got["score"] == pytest.approx(want_s.tolist(), abs=1e-12), (name, key)
            if not (precision[0, :, k] == -1).all():
                with_gt.append(k)
        assert with_gt == [0, 1, 2, 3]  # c4 has no GT
        for key, cells in (("iou50", precision[0][:, with_gt]),
                           ("iou50_95", precision[:, :, with_gt].mean(axis=0))):
            overall = cells.mean(axis=1).tolist()
            assert curves[key]["overall"]["precision"] == pytest.approx(overall, abs=1e-12)
        # AP50 is the mean of the overall IoU-0.5 curve: the curves are the numbers behind AP
        assert np.mean(curves["iou50"]["overall"]["precision"]) == pytest.approx(
            report["dataset"]["coco"]["AP50"], abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_array_equals_pycocotools_everywhere(seed: int) -> None:
    """``CocoResult.scores`` is pycocotools' whole ``eval["scores"]`` (T, R, K, A, M): every
    area range and maxDets, ties, crowds, groups cut at 100 detections, and the recall-0
    point, whose score is the first detection's even when it is a false positive."""
    gt, dets = dataset(seed, crowded=seed == 2)
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = gt
        coco.createIndex()
        evaluator = COCOeval(coco, coco.loadRes(dets), "bbox")
        evaluator.evaluate()
        evaluator.accumulate()
    anns = gt["annotations"]
    result = evaluate(CocoInput(
        len(gt["images"]), len(gt["categories"]),
        np.array([a["image_id"] - 1 for a in anns], np.int64),
        np.array([a["category_id"] - 1 for a in anns], np.int64),
        np.array([a["bbox"] for a in anns], np.float64).reshape(-1, 4),
        np.array([a["area"] for a in anns], np.float64), np.array([a["iscrowd"] for a in anns], bool),
        np.array([d["image_id"] - 1 for d in dets], np.int64),
        np.array([d["category_id"] - 1 for d in dets], np.int64),
        np.array([d["bbox"] for d in dets], np.float64).reshape(-1, 4),
        np.array([d["score"] for d in dets], np.float64)))
    np.testing.assert_array_equal(result.scores, evaluator.eval["scores"])
    np.testing.assert_array_equal(result.precision, evaluator.eval["precision"])


def test_errors_equal_tidecv_with_every_error_type(rpx, tmp_path: Path, detections) -> None:
    per_stem, files, gt_path, dt_path = run_both(rpx, tmp_path, detections)
    want, counts = tidecv_breakdown(gt_path, dt_path)
    assert set(counts) == {"cls", "loc", "both", "dupe", "bkg", "miss"}  # every type present
    assert all(counts.values()) and all(want[k] > 0 for k in ("loc", "dupe", "bkg", "miss", "fp", "fn"))
    for report in (per_stem, files):
        errors = report["dataset"]["errors"]
        assert errors["counts"] == counts
        for key, value in want.items():
            assert errors[key] == pytest.approx(value, abs=1e-12), key
        assert (errors["iou_threshold"], errors["background_threshold"]) == (0.5, 0.1)


def test_errors_run_only_when_asked(rpx, tmp_path: Path, detections) -> None:
    for stem, gt, pred in detections[:5]:
        write_json_pair(tmp_path, stem, gt, pred)
    report = rpx(f"eval detection {dirs(tmp_path)}").json
    assert "errors" not in report["dataset"]
    assert report["params"]["skipped_metrics"] == ["errors"]
    assert "curves" in report["dataset"]["coco"] and "by_confidence" in report["dataset"]["pooled"]
    asked = rpx(f"eval detection {dirs(tmp_path)} --metrics errors").json
    assert set(asked["dataset"]) == {"errors"}


def test_curves_and_errors_are_exact_across_shards_and_jobs(rpx, tmp_path: Path, detections) -> None:
    for stem, gt, pred in detections[:30]:
        write_json_pair(tmp_path / "data", stem, gt, pred)
    assert_jobs_and_shards_agree(rpx, f"eval detection {dirs(tmp_path / 'data')} --metrics {ALL}",
                                 tmp_path, shards=3)


def test_the_schema_describes_curves_by_confidence_and_errors(rpx, tmp_path: Path, detections) -> None:
    for stem, gt, pred in detections[:8]:
        write_json_pair(tmp_path, stem, gt, pred)
    report = rpx(f"eval detection {dirs(tmp_path)} --metrics {ALL}").json
    assert validation_errors(report, "eval") == []
    dataset = report["dataset"]
    broken = [("by_confidence", lambda d: d["pooled"]["by_confidence"]["tp"].__setitem__(0, -1)),
              ("curves", lambda d: d["coco"]["curves"]["iou50"]["overall"]["precision"].__setitem__(0, "x")),
              ("recall", lambda d: d["coco"]["curves"].pop("recall")),
              ("errors", lambda d: d["errors"]["counts"].__setitem__("loc", 1.5))]
    for name, spoil in broken:
        copy = json.loads(json.dumps(report))
        spoil(copy["dataset"])
        assert validation_errors(copy, "eval"), name
    assert dataset["errors"]["counts"]
