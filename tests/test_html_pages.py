"""What the HTML page must not get wrong (issue 30, item 4), checked in a real headless
browser where it is about rendering: band labels written whole (``[20, 50) m``), detection3d
worst rows ranked by its declared metric, every declared band metric charted in order,
confusion numbers readable on dark cells, units on axes, whole-number ticks for counts,
charts as wide as their column, parameters as values, and "1 error"."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser import Browser
from click.testing import CliRunner
from helpers import FIXTURES

from rpx_cli.cli.main import cli
from rpx_cli.ops.depth import METRICS as DEPTH_METRICS
from rpx_cli.report import svg, svg_bars
from rpx_cli.tasks.registry import get_task

STREET = FIXTURES / "detection3d" / "street"
INDOOR = FIXTURES / "depth" / "indoor"


def run(*args) -> None:
    argv = [str(a) for a in args]
    if argv[0] == "eval":
        argv += ["--jobs", "1"]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pages")
    run("eval", "detection3d", "--pred-dir", STREET / "pred", "--gt-dir", STREET / "gt", "--range", "0:20",
        "--range", "20:50", "--range", "50:", "-o", root / "d3.json", "--html", root / "d3.html")
    run("eval", "depth", "--pred-dir", INDOOR / "pred", "--gt-dir", INDOOR / "gt", "--range", "0:2",
        "--range", "2:", "-o", root / "depth.json", "--html", root / "depth.html")
    shelf = FIXTURES / "detection" / "shelf"
    run("eval", "detection", "--pred-dir", shelf / "pred", "--gt-dir", shelf / "gt", "--metrics",
        "rows,pooled,confusion,coco,errors", "-o", root / "det.json", "--html", root / "det.html")
    pets = FIXTURES / "classification" / "pets"
    run("eval", "classification", "--pred-dir", pets / "pred", "--gt-dir", pets / "gt", "--class-names",
        pets / "classes.txt", "-o", root / "pets.json", "--html", root / "pets.html")
    return {name: root / f"{name}.html" for name in ("d3", "depth", "det", "pets")}


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium = Browser(tmp_path_factory.mktemp("profile"))
    yield chromium
    chromium.close()


def band_charts(text: str) -> list[tuple[str, str]]:
    """(metric, axis label) of each per-band chart, in page order."""
    found = []
    for chart in re.findall(r'<svg class="chart".*?</svg>', text):
        metric = re.search(r'data-name="bands" data-metric="([^"]+)"', chart)
        if metric:
            labels = re.findall(r'<text class="label"[^>]*>([^<]*)</text>', chart)
            found.append((metric.group(1), labels[-1]))
    return found


def test_band_labels_are_whole_intervals(pages) -> None:
    text = pages["d3"].read_text()
    labels = set(re.findall(r'data-label="(\[[^"]*\) m)"', text))
    assert labels == {"[0, 20) m", "[20, 50) m", "[50, inf) m"}
    charts = "".join(re.findall(r'<svg class="chart"[^>]*data-name="bands".*?</svg>', text))
    ticks = re.findall(r'<text class="tick"[^>]*text-anchor="end">([^<]*)<title>', charts)
    assert ticks and set(ticks) == labels  # the axis text itself, whole
    assert "m_" not in charts.replace("data-name", "")  # never a key such as 20m_50m


def test_detection3d_worst_rows_are_ranked_by_its_declared_metric(pages) -> None:
    task = get_task("detection3d")
    declared = task.rank_metric or task.primary_metric
    assert declared == "f1"
    text = pages["d3"].read_text()
    assert re.search(r"<h3>worst \d+ of 8 rows by f1</h3>", text)
    report = json.loads(pages["d3"].with_suffix(".json").read_text())
    shown = re.findall(r'<tr data-stem="([^"]+)" data-value="([^"]+)"', text.split("rows by f1")[1])
    values = [float(v) for _, v in shown]
    assert values == sorted(values)  # f1: higher is better, the lowest first
    assert min(values) == min(row["f1"] for row in report["rows"])


def test_every_declared_band_metric_is_charted_in_order(pages) -> None:
    assert [m for m, _ in band_charts(pages["d3"].read_text())] == list(get_task("detection3d").band_metrics)
    assert [m for m, _ in band_charts(pages["depth"].read_text())] == list(DEPTH_METRICS)


def test_axes_carry_units(pages) -> None:
    d3 = dict(band_charts(pages["d3"].read_text()))
    assert d3["mATE"] == "mATE (m), ↓ lower is better"
    assert d3["mAOE"] == "mAOE (rad), ↓ lower is better"
    assert d3["mAVE"] == "mAVE (m/s), ↓ lower is better"
    assert d3["mAP"] == "mAP, ↑ higher is better"
    depth = dict(band_charts(pages["depth"].read_text()))
    assert depth["rmse"] == "rmse (m), ↓ lower is better" and depth["absrel"] == "absrel, ↓ lower is better"


def test_count_axes_have_whole_number_ticks() -> None:
    chart = svg_bars.histogram([0.1, 0.2, 0.25, 0.9], title="t", x_label="x")
    ticks = [float(t) for t in re.findall(r'text-anchor="end">([^<]+)</text>', chart)]
    assert ticks and all(t == int(t) for t in ticks)
    assert svg.ticks(0, 3, integer=True) == [0, 1, 2, 3]
    assert svg.ticks(0, 17, integer=True) == [0, 5, 10, 15]
    assert svg.ticks(0, 1.2) == [0, 0.25, 0.5, 0.75, 1]  # other axes keep fractions
    assert svg.ticks(0, 1.2, integer=True) == [0, 1]
    bars = svg_bars.bar_chart(["a", "b"], [1, 3], title="t", value_label="boxes")
    assert not re.search(r'text-anchor="middle">\d+\.\d+</text>', bars)


def test_parameters_are_values_not_python_reprs(pages) -> None:
    text = pages["d3"].read_text()
    table = text[text.index('data-table="params"'):]
    table = table[:table.index("</table>")]
    cells = dict(re.findall(r'<code>([^<]+)</code></td><td><span class="code">([^<]*)</span>', table))
    assert cells["cap_predictions"] == "true"
    assert cells["class_names"] == "null"
    assert cells["ranges"] == "[0, 20) m, [20, 50) m, [50, inf) m"
    assert cells["dist_th"] == "[0.5, 1.0, 2.0, 4.0]"
    assert cells["tp_error_exempt"] == "{barrier: [AVE, AAE], traffic_cone: [AOE, AVE, AAE]}"
    assert not any(word in table for word in ("True", "False", "None", "'"))


def test_one_error_is_singular(pages) -> None:
    text = pages["det"].read_text()
    assert not re.search(r"\b1 errors\b", text)


@pytest.mark.slow
def test_confusion_numbers_are_readable_on_dark_cells(browser, pages) -> None:
    page = browser.open(pages["det"])
    fills = json.loads(page.evaluate("""JSON.stringify([...document.querySelectorAll(
        'svg[data-name="confusion-counts"] text[style]')].map(t => [t.getAttribute('style'),
        getComputedStyle(t).fill]))"""))
    assert fills
    for style, fill in fills:
        assert fill == ("rgb(255, 255, 255)" if style == "fill:#fff" else "rgb(0, 0, 0)"), (style, fill)
    assert any(style == "fill:#fff" for style, _ in fills)  # dark cells exist and are readable


@pytest.mark.slow
def test_charts_use_the_column_width(browser, pages) -> None:
    page = browser.open(pages["depth"], width=1400)
    # a chart's column: its section, or its cell of a grid of small multiples
    sizes = json.loads(page.evaluate("""JSON.stringify([...document.querySelectorAll('svg.chart')]
        .map(s => { const p = s.parentElement, grid = p.classList.contains('multiples');
                    return [s.getBoundingClientRect().width,
                            grid ? parseFloat(getComputedStyle(p).gridTemplateColumns.split(' ')[0])
                                 : p.getBoundingClientRect().width,
                            s.viewBox.baseVal.width]; }))"""))
    assert sizes
    for shown, column, drawn in sizes:
        assert shown == pytest.approx(min(column, drawn * svg.MAX_STRETCH), abs=1.5)
    # the per-row distribution: alone in its section, it fills the page's column
    assert any(shown > drawn * 1.5 for shown, _, drawn in sizes)


def test_classification_worst_rows_show_the_true_and_the_predicted_label(pages) -> None:
    text = pages["pets"].read_text()
    worst = text[text.index('data-table="worst"'):]
    worst = worst[:worst.index("</table>")]
    assert "<th>true → predicted</th>" in worst
    report = json.loads(pages["pets"].with_suffix(".json").read_text())
    rows = {row["stem"]: row for row in report["rows"]}
    shown = re.findall(r'<tr data-stem="([^"]+)".*?data-true="([^"]*)" data-predicted="([^"]*)">'
                       r"([^<]*)</span>", worst)
    assert shown
    for stem, true, predicted, text_shown in shown:
        assert (true, predicted) == (rows[stem]["label"], rows[stem]["predicted"])
        assert text_shown == f"{true} → {predicted}"
    assert shown[0][1] != shown[0][2]  # the worst row is a wrong one
