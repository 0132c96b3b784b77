"""``rpx compare``'s pooled intervals from COCO files (the drawn images written as COCO
files of their own), and the fast route under ``--protocol coco`` (each image's matches
pooled) against the task's summary of the resampled frames."""

from __future__ import annotations

import json
import shlex

import numpy as np
import pytest
from helpers import FIXTURES
from test_compare_pooled import draws, frames, keep, write_frames

from rpx_cli.api import RunOptions, run_file_evaluation
from rpx_cli.report.compare import flatten
from rpx_cli.run.pooled import fast_route, figures_of, pooled_paths, read_kept, summary_params


def _drawn_coco(gt: dict, results: list, stems: list[int], index: np.ndarray) -> tuple[dict, list]:
    """A COCO GT and results holding the drawn images: the k-th copy of image ``i`` gets id
    ``i * 100 + k`` (copies adjacent in id order, as in the resample) and every annotation
    and result of it."""
    counts = np.bincount(index, minlength=len(stems))
    images, annotations, dets = [], [], []
    for position, image_id in enumerate(stems):
        image = next(i for i in gt["images"] if i["id"] == image_id)
        for k in range(int(counts[position])):
            new_id = image_id * 100 + k
            stem, suffix = image["file_name"].rsplit(".", 1)
            images.append({**image, "id": new_id, "file_name": f"{stem}_{k}.{suffix}"})
            annotations += [{**a, "id": len(annotations) + j + 1, "image_id": new_id}
                            for j, a in enumerate(a for a in gt["annotations"]
                                                  if a["image_id"] == image_id)]
            dets += [{**d, "image_id": new_id} for d in results if d["image_id"] == image_id]
    return {**gt, "images": images, "annotations": annotations}, dets


@pytest.mark.parametrize("case, words", [
    ("coco", []), ("lvis", ["--protocol", "lvis", "--max-dets", "10"])])
def test_coco_files_resample_as_files_of_the_drawn_images_would(rpx, tmp_path, case, words) -> None:
    root = FIXTURES / "detection" / case
    gt_name = "lvis_val.json" if case == "lvis" else "instances.json"
    gt = json.loads((root / gt_name).read_text())
    base_results = json.loads((root / "results.json").read_text())
    rng = np.random.default_rng(3)
    new_results = [{**d, "score": round(float(rng.random()), 2)} for d in base_results]
    (tmp_path / "new.json").write_text(json.dumps(new_results))
    reports = {}
    for name, results in (("base", root / "results.json"), ("new", tmp_path / "new.json")):
        reports[name] = tmp_path / f"{name}-report.json"
        assert rpx(["eval", "detection", *words, "--coco-gt", root / gt_name, "--coco-dt", results,
                    "--keep-state", "-o", reports[name]]).exit_code == 0
    document = rpx(["compare", reports["base"], reports["new"], "--bootstrap", "8",
                    "--seed", "4"]).json
    entry = next(m for m in document["metrics"] if m["metric"] == "dataset.coco.AP")
    kept = json.loads(reports["base"].read_text())["statistics"]["stems"]
    by_file = {i["file_name"].rsplit(".", 1)[0]: i["id"] for i in gt["images"]}
    stems = [by_file[stem] for stem in kept]  # the report's stem order
    options = {"protocol": "lvis", "max_dets": 10} if case == "lvis" else {}
    deltas = []
    for index in draws(4, len(stems), 8):
        values = []
        for results in (base_results, new_results):
            drawn_gt, drawn_dt = _drawn_coco(gt, results, stems, index)
            (tmp_path / "gt.json").write_text(json.dumps(drawn_gt))
            (tmp_path / "dt.json").write_text(json.dumps(drawn_dt))
            report = run_file_evaluation("detection", {"coco_gt": str(tmp_path / "gt.json"),
                                                       "coco_dt": str(tmp_path / "dt.json")},
                                         options, RunOptions(jobs=1)).report
            values.append(flatten(report)["dataset.coco.AP"])
        deltas.append(values[1] - values[0])
    assert entry["bootstrap"]["ci95"] == [float(v) for v in np.percentile(deltas, [2.5, 97.5])]


FAST_CASES = ["shelf", "masks", "hands", "aerial", "cuboids", "outlines", "kitti", "coco",
              "voc_results"]


@pytest.mark.parametrize("case", FAST_CASES)
def test_the_fast_coco_route_is_the_summary_of_the_resample(rpx, tmp_path, case) -> None:
    """Under --protocol coco, a resample's pooled figures come from each image's matches
    pooled (tasks/detection/resample.py): equal, bit for bit, to the task's summary of the
    resampled frames, for every similarity kind."""
    root = FIXTURES / "detection" / case
    words = shlex.split((root / "args").read_text())
    words = [str(root / w) if (root / w).exists() else w for w in words]
    if "--pred-dir" not in words and "--coco-gt" not in words:
        words += ["--pred-dir", root / "pred", "--gt-dir", root / "gt"]
    out = tmp_path / "kept.json"
    run = rpx(["eval", "detection", *words, "--keep-state", "-o", out])
    assert run.exit_code == 0, run.stderr
    report = json.loads(out.read_text())
    kept = read_kept(str(out), report)
    paths = pooled_paths(report)
    params = summary_params(kept.task, kept.params, paths)
    route = fast_route(kept, params, paths)
    assert route is not None
    n = len(kept.stems)
    for index in [np.arange(n), *draws(11, n, 6)]:
        table = kept.table.take(index)
        table.stems = [kept.table.stems[i] for i in index.tolist()]
        expected = figures_of(kept.task, table, params, paths)
        got = route(index)
        assert np.array_equal(np.array([got.get(p) for p in paths], dtype=float), expected,
                              equal_nan=True), case


def test_other_protocols_take_the_summary_route(rpx, tmp_path) -> None:
    out = keep(rpx, write_frames(tmp_path / "base", frames()), tmp_path / "kept.json",
               "--protocol", "voc07")
    report = json.loads(out.read_text())
    kept = read_kept(str(out), report)
    paths = pooled_paths(report)
    assert fast_route(kept, summary_params(kept.task, kept.params, paths), paths) is None


def test_a_route_that_disagrees_on_the_shared_stems_is_not_used(rpx, tmp_path, monkeypatch) -> None:
    from rpx_cli.run.compare import run_compare
    from rpx_cli.tasks.detection import Detection

    base = keep(rpx, write_frames(tmp_path / "base", frames()), tmp_path / "base.json")
    new = keep(rpx, write_frames(tmp_path / "new", frames(worse=True)), tmp_path / "new.json")
    honest = run_compare(str(base), str(new), bootstrap=12, jobs=1).document["metrics"]
    original = Detection.resampler

    def off_by_a_bit(self, stats, params, paths):
        route = original(self, stats, params, paths)
        return lambda index: {k: (v + 1e-12 if isinstance(v, float) else v)
                              for k, v in route(index).items()}

    monkeypatch.setattr(Detection, "resampler", off_by_a_bit)
    assert run_compare(str(base), str(new), bootstrap=12, jobs=1).document["metrics"] == honest
    monkeypatch.setattr(Detection, "resampler", lambda self, stats, params, paths: None)
    assert run_compare(str(base), str(new), bootstrap=12, jobs=1).document["metrics"] == honest
