"""The calculator registry, the Python API, and a real third-party plugin end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXTURES, dirs, without_provenance

import rpx_cli
from rpx_cli.io.depth_maps import DepthMap
from rpx_cli.testing import check_calculator

DEPTH = FIXTURES / "depth" / "indoor"

PLUGIN = '''
import numpy as np
from rpx_cli import MetricCalculator, register_metric


@register_metric("depth")
class MedianAbsError(MetricCalculator):
    name = "median_abs_error"
    directions = {"median_abs_error": "lower"}

    def compute(self, prediction, ground_truth):
        p, g = prediction.metres(np.float64), ground_truth.metres(np.float64)
        valid = np.isfinite(g) & (g > 0)
        if not valid.any():
            return {"median_abs_error": None}
        return {"median_abs_error": float(np.median(np.abs(p - g)[valid]))}
'''


class Bias(rpx_cli.MetricCalculator):
    name = "bias"
    directions = {"bias": "none"}

    def compute(self, prediction, ground_truth):
        p, g = prediction.metres(np.float64), ground_truth.metres(np.float64)
        valid = g > 0
        return {"bias": float(np.mean(p[valid] - g[valid])) if valid.any() else None}


class Nan(Bias):
    name = "nan"

    def compute(self, prediction, ground_truth):
        return {"bias": float("nan")}


class Mutates(Bias):
    name = "mutates"

    def compute(self, prediction, ground_truth):
        prediction.values[0, 0] += 1
        return {"bias": 0.0}


@pytest.fixture
def registered():
    rpx_cli.register_metric("depth")(Bias)
    yield
    rpx_cli.clear_registry()


def test_registry_api(registered) -> None:
    names = [c.name for c in rpx_cli.get_calculators("depth")]
    assert names == ["depth", "bias"]
    assert rpx_cli.available_metrics("depth")["depth"]["bias"] == ["bias"]
    assert "absrel" in rpx_cli.available_metrics("depth")["depth"]["depth"]
    gt = DepthMap(np.array([[1.0, 2.0], [0.0, 4.0]]))
    pred = DepthMap(np.array([[1.1, 1.5], [9.0, 5.0]]))
    values = rpx_cli.compute_metrics("depth", pred, gt)
    assert values["bias"] == pytest.approx((0.1 - 0.5 + 1.0) / 3)
    assert values["rmse"] == pytest.approx(0.6480740698407860)
    rpx_cli.unregister_metric("depth", "bias")
    assert [c.name for c in rpx_cli.get_calculators("depth")] == ["depth"]


def test_plugin_metrics_join_rows_aggregate_shards(registered, rpx, tmp_path: Path) -> None:
    run = rpx(f"eval depth {dirs(DEPTH)} --jobs 2")
    report = run.json
    assert all("bias" in row for row in report["rows"])
    values = [row["bias"] for row in report["rows"]]
    assert report["aggregate"]["bias"] == pytest.approx(sum(values) / len(values))
    assert report["metric_info"]["bias"]["direction"] == "none"
    parts = []
    for k in (1, 2):
        out = tmp_path / f"p{k}.json"
        rpx(f"eval depth {dirs(DEPTH)} --shard {k}/2 -o {out}")
        parts.append(out)
    merged = rpx(["merge", *parts]).json
    assert without_provenance(merged) == without_provenance(report)


def test_conformance_helper_accepts_a_good_calculator_and_names_faults() -> None:
    gt = DepthMap(np.array([[1.0, 2.0], [3.0, 4.0]]))
    empty = DepthMap(np.zeros((2, 2)))
    check_calculator(Bias(), [(gt, gt), (DepthMap(gt.values * 2), gt)], perfect=(gt, gt),
                     ideal={"bias": 0.0}, undefined=(gt, empty))
    with pytest.raises(AssertionError, match="undefined must be None"):
        check_calculator(Nan(), [(gt, gt)])
    with pytest.raises(AssertionError, match="changed its inputs"):
        check_calculator(Mutates(), [(DepthMap(gt.values.copy()), gt)])


@pytest.mark.slow
def test_installed_plugin_package_end_to_end(tmp_path: Path) -> None:
    """Build a tiny plugin distribution, pip-install it into a temporary target, run rpx."""
    source = tmp_path / "src"
    (source / "rpx_demo_plugin").mkdir(parents=True)
    (source / "rpx_demo_plugin" / "__init__.py").write_text(PLUGIN)
    (source / "pyproject.toml").write_text(textwrap.dedent('''
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "rpx-demo-plugin"
        version = "0.1"

        [project.entry-points."rpx.calculators.v1"]
        demo = "rpx_demo_plugin"
        broken = "rpx_module_that_does_not_exist"
    '''))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(source)],
                   check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), *sys.path])}
    run = subprocess.run([sys.executable, "-m", "rpx_cli", "eval", "depth", "--pred-dir",
                          str(DEPTH / "pred"), "--gt-dir", str(DEPTH / "gt"), "--jobs", "1"],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["aggregate"]["median_abs_error"] > 0
    assert report["metric_info"]["median_abs_error"]["direction"] == "lower"
    assert "plugin broken" in run.stderr and "skipped" in run.stderr  # one warning, rpx goes on
    listed = subprocess.run([sys.executable, "-m", "rpx_cli", "metrics", "--task", "depth", "--json"],
                            capture_output=True, text=True, env=env, check=True)
    table = json.loads(listed.stdout)
    assert table["depth"]["median_abs_error"]["calculator"] == "plugin median_abs_error"


def test_installed_versions_and_entry_points_without_importlib_metadata(tmp_path, monkeypatch) -> None:
    """rpx_cli.distributions reads the metadata folders directly: the same versions as
    importlib.metadata, and a group declared only where an entry_points.txt names it."""
    import sys
    from importlib import metadata

    from rpx_cli import distributions

    for name in ("numpy", "click", "scipy", "orjson", "rpx-eval", "Pillow"):
        assert distributions.version(name) == metadata.version(name), name
    assert distributions.version("no-such-distribution-here") is None
    assert not distributions.declares_entry_points("rpx.no-such-group.v1")
    dist = tmp_path / "my_plugin-1.2.dist-info"
    dist.mkdir()
    (dist / "entry_points.txt").write_text("[rpx.no-such-group.v1]\nx = my_plugin\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    distributions.metadata_folders.cache_clear()
    try:
        assert distributions.declares_entry_points("rpx.no-such-group.v1")
        assert distributions.version("my-plugin") == "1.2"
    finally:
        distributions.metadata_folders.cache_clear()


# --- a plugin's metric in every workflow (issue 37.3) -------------------------------------------


class BoxCounts(rpx_cli.MetricCalculator):
    """Detection: what a calculator is handed, counted (the same from files and COCO files)."""

    name = "box_counts"
    directions = {"n_pred_boxes": "none", "n_gt_boxes": "none"}

    def compute(self, prediction, ground_truth):
        return {"n_pred_boxes": float(len(prediction)), "n_gt_boxes": float(len(ground_truth))}


class LabelCounts(rpx_cli.MetricCalculator):
    """Classification: the GT's labels, and whether the prediction names any class."""

    name = "label_counts"
    directions = {"n_gt_labels": "none", "predicted_any": "none"}

    def compute(self, prediction, ground_truth):
        return {"n_gt_labels": float(len(ground_truth.labels)),
                "predicted_any": float(prediction.form != "none")}


@pytest.fixture
def counting():
    rpx_cli.register_metric("detection")(BoxCounts)
    rpx_cli.register_metric("classification")(LabelCounts)
    yield
    rpx_cli.clear_registry()


def _plugin_values(report: dict, keys: tuple[str, ...]) -> dict[str, tuple]:
    """stem -> the plugin's values; every row has them, and metric_info and aggregate too."""
    for key in keys:
        assert key in report["metric_info"], key
        assert report["aggregate"][key] is not None, key
    assert report["rows"] and all(all(key in row for key in keys) for row in report["rows"]), \
        "a row without the plugin's metric"
    return {row["stem"]: tuple(row[key] for key in keys) for row in report["rows"]}


def _merged(rpx, args: str, tmp_path: Path, name: str) -> dict:
    parts = []
    for k in (1, 2):
        out = tmp_path / f"{name}-{k}.json"
        assert rpx(f"{args} --shard {k}/2 -o {out}").exit_code == 0
        parts.append(out)
    return rpx(["merge", *parts]).json


def test_a_plugin_metric_appears_in_every_workflows_rows(counting, rpx, tmp_path: Path) -> None:
    """Before: COCO files and classification CSVs took a bulk path that skipped plugin
    calculators while metric_info listed them: the metric was in no row."""
    from helpers import generated_detections, write_json_pair
    from test_coco_files import coco_files

    frames = generated_detections(5, n_images=12)
    for stem, gt, pred in frames:
        write_json_pair(tmp_path, stem, gt, pred)
    keys = ("n_pred_boxes", "n_gt_boxes")
    expected = {stem: (float(len(pred)), float(len(gt))) for stem, gt, pred in frames}
    folders = f"eval detection {dirs(tmp_path)}"
    files = f"eval detection {coco_files(tmp_path, frames)}"
    runs = {"folders": rpx(folders).json, "jobs 2": rpx(f"{folders} --jobs 2").json,
            "folder shards": _merged(rpx, folders, tmp_path, "folders"),
            "COCO files": rpx(files).json, "COCO files, jobs 2": rpx(f"{files} --jobs 2").json,
            "COCO file shards": _merged(rpx, files, tmp_path, "files")}
    evaluator = rpx_cli.Evaluator("detection")
    for stem, gt, pred in frames:
        evaluator.update(stem, pred, gt)
    runs["Evaluator"] = evaluator.report()
    for name, report in runs.items():
        assert _plugin_values(report, keys) == expected, name
    assert runs["COCO files"]["aggregate"]["n_pred_boxes"] == pytest.approx(
        sum(n for n, _ in expected.values()) / len(expected))

    csv = FIXTURES / "classification" / "imagenet-csv"
    labels = ("n_gt_labels", "predicted_any")
    tables = f"eval classification --gt-file {csv / 'gt.csv'} --pred-file {csv / 'pred.csv'}"
    for report in (rpx(tables).json, _merged(rpx, tables, tmp_path, "csv")):
        values = _plugin_values(report, labels)
        assert set(values.values()) <= {(1.0, 1.0), (1.0, 0.0)} and (1.0, 1.0) in values.values()
    pets = FIXTURES / "classification" / "pets"
    values = _plugin_values(rpx(f"eval classification {dirs(pets)}").json, labels)
    assert set(values.values()) == {(1.0, 1.0)}


def test_a_broken_prediction_record_is_empty_for_plugins_too(counting, rpx, tmp_path: Path) -> None:
    """--on-error skip: the image of a bad detection is scored as predicting nothing, by
    the task and by the plugin alike (as a broken prediction file is)."""
    from helpers import box
    from test_coco_files import coco_files

    frames = [("a", [box("car", [0, 0, 10, 10])], [box("car", [0, 0, 10, 10], 0.9)]),
              ("b", [box("car", [0, 0, 10, 10])], [box("car", [0, 0, 10, 10], 0.8),
                                                   box("car", [5, 5, 10, 10], 0.7)])]
    args = coco_files(tmp_path, frames)
    results = tmp_path / "results.json"
    detections = json.loads(results.read_text())
    detections[-1]["bbox"] = [1, 2, 3]  # image b's second detection is malformed
    results.write_text(json.dumps(detections))
    report = rpx(f"eval detection {args} --on-error skip").json
    rows = {row["stem"]: row for row in report["rows"]}
    assert rows["b"]["n_pred"] == 0 and rows["b"]["n_pred_boxes"] == 0.0
    assert rows["a"]["n_pred_boxes"] == 1.0 and report["errors"][0]["stem"] == "b"


def test_a_bulk_input_without_samples_refuses_plugins(counting, monkeypatch, tmp_path) -> None:
    """A task whose input files give no sample one by one cannot run calculators: refused,
    never a metric listed and missing from the rows."""
    from rpx_cli.api import run_file_evaluation
    from rpx_cli.errors import ParameterError
    from rpx_cli.tasks import TASKS

    task = TASKS["classification"]
    reader = type(task).read_files

    def without_samples(self, files, params):
        loaded = reader(self, files, params)
        loaded.sample = None
        return loaded

    monkeypatch.setattr(type(task), "read_files", without_samples)
    csv = FIXTURES / "classification" / "imagenet-csv"
    with pytest.raises(ParameterError, match="label_counts of classification need each sample"):
        run_file_evaluation("classification", {"gt_file": csv / "gt.csv",
                                               "pred_file": csv / "pred.csv"}, {})
