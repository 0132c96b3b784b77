"""The page's charts laid out whole (issue 38, item 10), in a real headless Chromium
(``tests/browser.py``): on the page of every golden case (``fixtures/<kind>/<case>/
expected.json``) no text of a chart leaves its ``<svg>`` (an axis label cut at the edge: the
segmentation3d per-class chart, the detection confusion and TIDE charts), numbers written on
grid cells contrast with their cell (the 3D AP grids), the marker labels of a scatter do not
overlap one another (panoptic's SQ against RQ), and panoptic's "PQ things"/"PQ stuff"
captions sit with their own chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import Browser
from click.testing import CliRunner
from helpers import FIXTURES, golden_cases
from test_html_protocol import PROTOCOL_RUNS

from rpx_cli.cli.main import cli
from rpx_cli.report.html import render_html

CASES = {f"{case.parent.name}__{case.name}": case / "expected.json" for case in golden_cases()
         if (case / "expected.json").is_file()}
SLACK = 1.0  # px: anti-aliasing

# every text of every chart whose box (transforms included) leaves its svg's box
OUTSIDE_JS = """JSON.stringify(Array.from(document.querySelectorAll('svg.chart')).flatMap(svg => {
  const box = svg.getBoundingClientRect();
  if (!box.width) return [];
  return Array.from(svg.querySelectorAll('text')).map(text => {
    const r = text.getBoundingClientRect();
    return {chart: svg.dataset.name || svg.dataset.chart || '', text: text.textContent,
            left: r.left - box.left, right: box.right - r.right, top: r.top - box.top,
            bottom: box.bottom - r.bottom, width: r.width};
  }).filter(t => t.width > 0 && Math.min(t.left, t.right, t.top, t.bottom) < -SLACK);
}))""".replace("SLACK", str(SLACK))

# the text written on a coloured cell: its computed fill and the cell's
CELLS_JS = """JSON.stringify(Array.from(document.querySelectorAll('svg.chart rect[fill^="#"]'))
  .map(rect => { const next = rect.nextElementSibling;
    return next && next.tagName === 'text' && next.getAttribute('text-anchor') === 'middle'
      ? {cell: rect.getAttribute('fill'), text: getComputedStyle(next).fill, value: next.textContent,
         chart: rect.closest('svg').dataset.name || ''} : null; })
  .filter(x => x))"""

# the marker labels of each line chart, as boxes
MARKER_LABELS_JS = """JSON.stringify(Array.from(document.querySelectorAll('svg.chart[data-chart="line"]'))
  .map(svg => ({chart: svg.dataset.name || '', boxes: Array.from(svg.querySelectorAll('text.note'))
    .map(t => { const r = t.getBoundingClientRect();
      return [r.left, r.top, r.right, r.bottom, t.textContent]; })})))"""

CAPTIONS_JS = """JSON.stringify(Array.from(document.querySelectorAll(
    '[data-section="pq-per-class"] svg.chart'))
  .map(svg => { const own = svg.closest('figure'); const caption = own && own.querySelector('figcaption');
    const box = svg.getBoundingClientRect();
    const nearest = Array.from(document.querySelectorAll(
        '[data-section="pq-per-class"] .note, [data-section="pq-per-class"] figcaption'))
      .map(n => [Math.abs(n.getBoundingClientRect().bottom - box.top), n.textContent])
      .sort((a, b) => a[0] - b[0])[0];
    return {chart: svg.dataset.name, caption: caption ? caption.textContent : null,
            nearest: nearest ? nearest[1] : null}; }))"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium = Browser(tmp_path_factory.mktemp("profile"))
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("layout")
    out = {}
    for name, path in CASES.items():
        page = root / f"{name}.html"
        page.write_text(render_html([(path.name, json.loads(path.read_text()))]))
        out[name] = page
    # and TIDE's chart, which no golden case runs
    shelf = FIXTURES / "detection" / "shelf"
    done = CliRunner().invoke(cli, ["eval", "detection", "--pred-dir", str(shelf / "pred"), "--gt-dir",
                                    str(shelf / "gt"), "--metrics", "rows,pooled,confusion,coco,errors",
                                    "--jobs", "1", "-o", str(root / "tide.json"), "--html",
                                    str(root / "detection__tide.html")], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    out["detection__tide"] = root / "detection__tide.html"
    # the worst frames: boxes, masks, keypoints
    masks, hands = FIXTURES / "detection" / "masks", FIXTURES / "detection" / "hands"
    frames = {"shelf": ["--pred-dir", str(shelf / "pred"), "--gt-dir", str(shelf / "gt")],
              "masks": ["--iou-type", "segm", "--coco-gt", str(masks / "instances.json"), "--coco-dt",
                        str(masks / "results.json")],
              "hands": ["--pred-dir", str(hands / "pred"), "--gt-dir", str(hands / "gt"),
                        *(hands / "args").read_text().split()]}
    for name, words in frames.items():
        page = root / f"frames__{name}.html"
        done = CliRunner().invoke(cli, ["eval", "detection", *words, "--keep-worst", "3", "--jobs", "1",
                                        "-o", str(root / f"{name}.json"), "--html", str(page)],
                                  catch_exceptions=False)
        assert done.exit_code == 0, done.output
        out[f"frames__{name}"] = page
    # each protocol's own view (its curves, AP bars, tables)
    for name, words in PROTOCOL_RUNS.items():
        page = root / f"protocol__{name}.html"
        done = CliRunner().invoke(cli, ["eval", "detection", *words, "--jobs", "1", "-o",
                                        str(root / f"protocol-{name}.json"), "--html", str(page)],
                                  catch_exceptions=False)
        assert done.exit_code == 0, done.output
        out[f"protocol__{name}"] = page
    return out


def contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """WCAG 2's contrast ratio of two sRGB colours (0-255 channels)."""
    def lum(rgb: tuple[float, ...]) -> float:
        c = [v / 255 for v in rgb]
        c = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def rgb(css: str) -> tuple[float, ...]:
    if css.startswith("#"):
        return tuple(int(css[k:k + 2], 16) for k in (1, 3, 5))
    return tuple(float(v) for v in css[css.index("(") + 1:css.index(")")].split(",")[:3])


@pytest.mark.parametrize("name", [*sorted(CASES), "detection__tide", "frames__shelf", "frames__masks",
                                  "frames__hands", *(f"protocol__{name}" for name in PROTOCOL_RUNS)])
def test_no_chart_text_leaves_its_chart(name: str, pages, browser) -> None:
    page = browser.open(pages[name])
    outside = json.loads(page.evaluate(OUTSIDE_JS))
    assert not outside, f"{name}: text cut at a chart's edge: {outside[:5]}"


@pytest.mark.parametrize("dark", [False, True])
@pytest.mark.parametrize("name", [n for n in sorted(CASES)
                                  if n.startswith(("detection3d__", "segmentation"))])
def test_numbers_on_cells_are_readable(name: str, dark: bool, pages, browser) -> None:
    page = browser.open(pages[name], dark=dark)
    cells = json.loads(page.evaluate(CELLS_JS))
    poor = [c for c in cells if contrast(rgb(c["cell"]), rgb(c["text"])) < 4.5]
    assert not poor, f"{name}: numbers hard to read on their cells: {poor[:5]}"


def test_the_3d_grid_has_dark_cells_with_numbers(pages, browser) -> None:
    """The case the test above is for: an AP grid with dark (low) cells holding numbers."""
    page = browser.open(pages["detection3d__street"])
    cells = json.loads(page.evaluate(CELLS_JS))
    assert any(c["chart"] == "class-bands" and contrast(rgb(c["cell"]), (0, 0, 0)) < 4.5 for c in cells)


def test_scatter_labels_do_not_overlap(pages, browser) -> None:
    page = browser.open(pages["panoptic__coco"])
    charts = [c for c in json.loads(page.evaluate(MARKER_LABELS_JS)) if c["chart"] == "sq-rq"]
    assert charts and charts[0]["boxes"]
    boxes = charts[0]["boxes"]
    overlapping = [(a[4], b[4]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                   if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]]
    assert not overlapping, overlapping


def test_pq_captions_sit_with_their_chart(pages, browser) -> None:
    page = browser.open(pages["panoptic__coco"])
    charts = json.loads(page.evaluate(CAPTIONS_JS))
    assert {c["chart"] for c in charts} == {"pq-things", "pq-stuff"}
    for chart in charts:
        kind = chart["chart"].removeprefix("pq-")
        assert chart["caption"] and chart["caption"].startswith(f"PQ {kind} ="), chart
        assert chart["nearest"].startswith(f"PQ {kind} ="), chart


def test_crowded_marker_labels_are_moved_or_left_out(browser, tmp_path: Path) -> None:
    """Classes at almost the same (RQ, SQ): each label beside its ring where it overlaps no
    other, the rest left to the rings' tooltips; every ring drawn."""
    from rpx_cli.report import svg_lines

    markers = [{"x": 0.5 + 0.005 * k, "y": 0.5, "label": f"class-{k}"} for k in range(8)]
    chart = svg_lines.line_chart([], title="crowded", x_label="RQ", y_label="SQ", markers=markers,
                                 legend=False, attrs={"name": "crowded"})
    assert chart.count("<circle") == 8
    page_file = tmp_path / "crowded.html"
    page_file.write_text(f"<!DOCTYPE html><html><body style='width:600px'>{chart}</body></html>")
    page = browser.open(page_file)
    boxes = json.loads(page.evaluate(MARKER_LABELS_JS))[0]["boxes"]
    assert 2 <= len(boxes) < 8
    overlapping = [(a[4], b[4]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                   if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]]
    assert not overlapping, overlapping
