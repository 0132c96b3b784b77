"""The human views read what a task declares (``headline``, ``rank_metric``, ``band_metrics``,
``page_view`` in :mod:`rpx_cli.tasks.base`), through :mod:`rpx_cli.report.declared`: the
worst rows, the band charts, the headline cards, the summary line and ``rpx show``; and
``rpx_cli/report/`` names no task."""

from __future__ import annotations

import ast
import csv
import html
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from example_task import CharacterErrorRate
from helpers import FIXTURES, ROOT

from rpx_cli.params.values import Band
from rpx_cli.report import declared
from rpx_cli.report.html import render_html
from rpx_cli.report.html_blocks import direction
from rpx_cli.report.html_sections import worst_first
from rpx_cli.report.render import summary_line
from rpx_cli.tasks import builtin_tasks, find_task
from rpx_cli.tasks.coherence import Coherence

CER = ROOT / "tests" / "fixtures" / "cer" / "lines"
# report kinds of workflows (and the schema files they share a name with), not tasks
WORKFLOW_KINDS = ("readiness", "stability", "compare", "manifest", "provenance")


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def worst_rows(page: str) -> list[tuple[str, Any]]:
    """(stem, ranked value) of the page's worst-rows table, in order."""
    table = re.search(r'<table data-table="worst">.*?</table>', page, re.S)
    assert table, "no worst-rows table"
    return [(html.unescape(stem), json.loads(value) if value != "null" else None)
            for stem, value in re.findall(r'<tr data-stem="([^"]*)" data-value="([^"]*)">', table[0])]


def band_charts(page: str) -> dict[str, dict[str, Any]]:
    """metric -> {bar label: value} of the page's per-band charts, in order."""
    charts: dict[str, dict[str, Any]] = {}
    for metric, body in re.findall(r'<svg[^>]*data-name="bands" data-metric="([^"]+)"[^>]*>(.*?)</svg>',
                                   page, re.S):
        bars = re.findall(r'data-label="([^"]+)" data-value="([^"]+)"', body)
        charts[metric] = {html.unescape(label): json.loads(value) for label, value in bars}
    return charts


def test_detection3d_page_ranks_worst_rows_by_f1() -> None:
    """The task declares f1 (primary_metric, no rank_metric of its own): the frames with the
    lowest F1 first, not those with the fewest true positives."""
    report = load(FIXTURES / "detection3d" / "street" / "expected.json")
    assert find_task("detection3d").rank_metric is None
    assert declared.rank_metric(report) == ("f1", "higher")
    page = render_html([("street.json", report)])
    assert "rows by f1</h3>" in page
    shown = worst_rows(page)
    scored = [(r["stem"], r["f1"]) for r in report["rows"] if r["f1"] is not None]
    assert shown == sorted(scored, key=lambda s: s[1])
    assert [value for _, value in shown] == sorted(r["f1"] for r in report["rows"])
    by_tp = sorted(report["rows"], key=lambda r: r["tp"])
    assert [stem for stem, _ in shown] != [r["stem"] for r in by_tp]  # tp would rank otherwise


def test_segmentation3d_bands_are_labelled_as_declared(rpx, tmp_path: Path) -> None:
    case = FIXTURES / "segmentation3d" / "kitti"
    out, page_path = tmp_path / "seg3d.json", tmp_path / "seg3d.html"
    run = rpx(["eval", "segmentation3d", "--pred-dir", case / "pred", "--gt-dir", case / "gt",
               "--points-dir", case / "velodyne", "--label-map", case / "learning_map.json",
               "--class-names", case / "names.txt", "--ignore-index", "0",
               "--range", "0:20", "--range", "20:50", "--range", "50:", "-o", out, "--html", page_path])
    assert run.exit_code == 0, run.stderr
    report = load(out)
    charts = band_charts(page_path.read_text())
    task = find_task("segmentation3d")
    assert list(charts) == list(task.band_metrics)  # every declared metric, in its order
    bands = [Band(0, 20), Band(20, 50), Band(50)]
    for metric, bars in charts.items():
        assert list(bars) == ["[0, 20) m", "[20, 50) m", "[50, inf) m"]
        assert list(bars.values()) == [report["dataset"][band.key(metric)] for band in bands]


def test_depth_charts_a_band_with_an_exponent_suffix(rpx, tmp_path: Path) -> None:
    """``--range 2:1e20``: the key suffix is ``2m_1e+20m``; the chart is found by the band's
    key, not by parsing, and shows every declared metric (more than six)."""
    case = FIXTURES / "depth" / "indoor"
    out, page_path = tmp_path / "depth.json", tmp_path / "depth.html"
    run = rpx(["eval", "depth", "--pred-dir", case / "pred", "--gt-dir", case / "gt",
               "--range", "2:1e20", "-o", out])
    assert run.exit_code == 0, run.stderr
    report = load(out)
    band = Band(2.0, 1e20)
    assert band.key("absrel") == "absrel_2m_1e+20m" and band.key("absrel") in report["dataset"]
    assert rpx(["report", out, "-o", page_path]).exit_code == 0
    charts = band_charts(page_path.read_text())
    assert list(charts) == list(find_task("depth").band_metrics) and len(charts) == 9
    assert charts["absrel"] == {"[2, 1e+20) m": report["dataset"]["absrel_2m_1e+20m"]}
    assert direction(report, "dataset.absrel_2m_1e+20m") == "lower"


def test_a_report_without_bands_charts_none() -> None:
    report = load(FIXTURES / "detection3d" / "submission" / "expected.json")
    assert declared.bands(report) == []
    assert 'data-name="bands"' not in render_html([("x.json", report)])


def test_direction_of_a_banded_key_comes_from_the_declared_band() -> None:
    """Without the banded keys in ``metric_info`` the direction is the banded metric's,
    found as ``band.key(metric)`` for the report's bands; any other key has none."""
    report = load(FIXTURES / "segmentation3d" / "kitti" / "expected.json")
    assert direction(report, "dataset.miou_20m_50m") == "higher"
    info = report["metric_info"]
    banded = {band.key(metric) for band in declared.bands(report) for metric in info}
    report["metric_info"] = {key: value for key, value in info.items() if key not in banded}
    assert "miou_20m_50m" not in report["metric_info"]
    assert direction(report, "dataset.miou_20m_50m") == "higher"
    assert direction(report, "dataset.miou_20m_60m") == "none"  # not one of the report's bands
    report["params"]["ranges"] = []
    assert direction(report, "dataset.miou_20m_50m") == "none"


def test_classification_ranks_wrong_rows_most_confident_first() -> None:
    """rank_metric "correct" (higher is better) and the generic rule for rows with a
    confidence: what the page's special case used to do."""
    report = load(FIXTURES / "classification" / "pets" / "expected.json")
    assert declared.rank_metric(report) == ("correct", "higher")
    rows = report["rows"]
    assert any(r["correct"] == 0 for r in rows) and any(r.get("confidence") for r in rows)
    old = sorted((r for r in rows if isinstance(r.get("correct"), int)),
                 key=lambda r: (r["correct"], -(r.get("confidence") or 0.0)))
    assert worst_first(rows, "correct", "higher") == old
    shown = worst_rows(render_html([("pets.json", report)]))
    assert [stem for stem, _ in shown] == [r["stem"] for r in old[:10]]


def test_worst_first_follows_the_direction() -> None:
    rows = [{"stem": "a", "e": 2.0}, {"stem": "b", "e": 5.0}, {"stem": "c", "e": 2.0, "confidence": 0.9}]
    assert [r["stem"] for r in worst_first(rows, "e", "lower")] == ["b", "c", "a"]
    assert [r["stem"] for r in worst_first(rows, "e", "higher")] == ["c", "a", "b"]


def test_a_plugin_tasks_page_follows_its_rank_metric(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test-only task ``cer`` declares what to rank by; report/ knows nothing of it."""
    report = load(CER / "expected.json")
    shown = worst_rows(render_html([("cer.json", report)]))
    assert shown == [("b", 0.1), ("a", 1 / 19), ("page2/d", 0.0)]  # cer, lower is better
    monkeypatch.setattr(CharacterErrorRate, "rank_metric", "edits")
    assert declared.rank_metric(report) == ("edits", "lower")
    page = render_html([("cer.json", report)])
    assert "rows by edits</h3>" in page
    assert worst_rows(page) == [("c", 5), ("a", 1), ("b", 1), ("page2/d", 0)]


def test_an_unknown_task_gets_the_generic_fallbacks() -> None:
    """A report of a task not registered here (a plugin not installed): the first row
    metric with a direction, the report's own order."""
    report = load(CER / "expected.json")
    report["task"] = "not-installed"
    assert declared.task_of(report) is None and declared.headline(report) == ()
    assert declared.rank_metric(report) == ("cer", "lower")
    assert declared.bands(report) == [] and declared.band_metrics(report) == ()


def test_summary_line_and_cards_use_the_declared_headline(rpx, tmp_path: Path) -> None:
    run = rpx(["eval", "cer", "--pred-dir", CER / "pred", "--gt-dir", CER / "gt",
               "-o", tmp_path / "cer.json"])
    line = run.stderr.strip().splitlines()[-1]
    report = load(tmp_path / "cer.json")
    assert line.startswith(f"cer: 4 pairs, 0 unpaired, 0 skipped on error; dataset.cer "
                           f"{report['dataset']['cer']:.6g}, aggregate.cer ")
    detection3d = load(FIXTURES / "detection3d" / "street" / "expected.json")
    assert summary_line(detection3d, "-").split("; ", 1)[1].startswith("dataset.mAP ")
    page = render_html([("street.json", detection3d)])
    cards = re.findall(r'<div class="card" data-metric="([^"]+)"', page)
    # the declared paths the report holds (a nuScenes report has no KITTI means)
    held = [p for p in find_task("detection3d").headline if p.split(".")[1] in detection3d["dataset"]]
    assert cards == held


def test_rpx_show_puts_the_declared_headline_first(rpx, monkeypatch: pytest.MonkeyPatch) -> None:
    """A coherence report's top-level figures: the declared ``sgc`` first, then the rest."""
    path = FIXTURES / "coherence" / "shelf" / "expected.json"

    def shown() -> list[str]:
        text = rpx(["show", path, "--format", "csv", "--table", "metrics"]).stdout
        return [row[0] for row in csv.reader(io.StringIO(text))][1:]

    assert shown()[:3] == ["sgc", "precision", "recall"]
    monkeypatch.setattr(Coherence, "headline", ("recall", "sgc"))
    assert shown()[:3] == ["recall", "sgc", "precision"]
    assert "sgc" in rpx(["show", path]).stdout


def test_every_declaration_names_the_tasks_own_metrics_and_a_view() -> None:
    from rpx_cli.params import resolve
    from rpx_cli.report.html_task_views import TASK_VIEWS

    for name, task in builtin_tasks().items():
        info = task.metric_info(resolve(task, {}))
        assert (task.rank_metric or task.primary_metric) in info, name
        assert set(task.band_metrics) <= set(info), name
        assert not task.band_metrics or task.bands({"ranges": [[0.0, 1.0]]}), name
        assert task.page_view is None or task.page_view in TASK_VIEWS, name
        assert len(set(task.headline)) == len(task.headline), name


def test_report_package_names_no_task() -> None:
    """What a task's page shows is the task's declaration: no module of rpx_cli/report/
    holds a built-in task's name as a string, except a workflow's own code (the stability
    schema's task enum, the readiness report's coherence section)."""
    names = set(builtin_tasks())
    found = []
    for path in sorted((ROOT / "rpx_cli" / "report").glob("*.py")):
        found += [f"{path.name}:{line} {text!r}" for line, text in _strings_outside_workflows(path)
                  if text in names]
    assert found == []


def _strings_outside_workflows(path: Path) -> list[tuple[int, str]]:
    """String constants of a module, leaving out a module or function named after a
    workflow kind (``readiness_view.py``, ``schema_workflows.stability``)."""
    if path.stem.startswith(WORKFLOW_KINDS):
        return []
    out: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.strip("_").startswith(
                WORKFLOW_KINDS):
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return out


def test_the_deployment_reports_directions_come_from_deploys_declarations() -> None:
    """A readiness report has no metric_info: the page reads which way each summary figure
    is better from deploy/'s declarations (the stability score's, the coherence task's, the
    cost's, the primary metric's for the phase scores), and rpx stability writes its
    metric_info from the same declaration."""
    from rpx_cli.deploy.figures import COST_METRICS, STABILITY_METRICS
    from rpx_cli.deploy.readiness import COST_KEYS
    from rpx_cli.deploy.stability import METRIC_INFO

    readiness = {"schema": "rpx.readiness", "direction": "lower", "summary": {}}
    assert direction(readiness, "summary.ts_score") == STABILITY_METRICS["ts_score"].direction == "higher"
    assert direction(readiness, "summary.sgc") == Coherence.metrics["sgc"].direction == "higher"
    assert tuple(COST_METRICS) == COST_KEYS
    for key, info in COST_METRICS.items():
        assert direction(readiness, f"summary.{key}") == info.direction == "lower"
    for key in ("s_clutter", "s_overall", "primary_aggregate"):
        assert direction(readiness, f"summary.{key}") == "lower"
        assert direction({**readiness, "direction": None}, f"summary.{key}") == "none"
    for key in ("delta_int", "delta_rec", "degrades", "recovers"):
        assert direction(readiness, f"summary.{key}") == "none"
    assert {name: info.as_dict() for name, info in STABILITY_METRICS.items()} == METRIC_INFO
    stability = load(FIXTURES / "stability" / "kitchen" / "expected.json")
    assert stability["metric_info"] == METRIC_INFO
