"""``rpx report`` / ``--html`` in a real headless browser (Debian's chromium over CDP,
``tests/browser.py``): for every report kind (every task, every workflow) the page loads
with no console error and no network request but its own file (and the ``data:`` images
it embeds), the screenshot is not blank (light and dark) and is kept as a test artefact
(``build/test-artefacts/html/<kind>.png``, or under ``$RPX_TEST_ARTEFACTS``), and the
numbers the charts and tables show — read back from their ``data-*`` attributes — equal the
JSON report's. Not skipped: CI installs chromium (``.ci/run``)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import imageio.v3 as iio
import numpy as np
import pytest
from browser import DATA_JS, Browser
from click.testing import CliRunner
from helpers import FIXTURES, ROOT, depth_pairs, dirs, golden_cases, write_manifest

from rpx_cli.cli.main import cli
from rpx_cli.params.values import Band

SHELF = FIXTURES / "detection" / "shelf"
STREET3D = FIXTURES / "detection3d" / "street"
ARTEFACTS = Path(os.environ.get("RPX_TEST_ARTEFACTS") or ROOT / "build" / "test-artefacts") / "html"
# the kinds the fixture below runs fresh (inputs the golden cases do not have: gates, strata,
# images, --keep-worst, two models, two reports side by side)
FRESH_KINDS = ("detection", "readiness", "compare", "detection3d", "detection-images",
               "segmentation-frames", "depth-frames", "side-by-side")


def golden_kinds() -> dict[str, Path]:
    """Every other kind from the golden fixtures: each registered task and workflow command
    with a golden case (``fixtures/<name>/<case>/``, and the test-only tasks') gets a page
    from its first case's report, so a newly registered task is covered by its case alone."""
    kinds: dict[str, Path] = {}
    for case in golden_cases():
        if case.parent.name not in FRESH_KINDS:
            kinds.setdefault(case.parent.name, (case / "expected.json").resolve())
    return kinds


GOLDEN_KINDS = golden_kinds()


def golden_report(name: str, case: str) -> Path:
    """The report of one golden case, for a test that reads its particular numbers."""
    return next(found / "expected.json" for found in golden_cases()
                if (found.parent.name, found.name) == (name, case))


def run(*args: Any) -> Any:
    argv = [str(a) for a in args]
    if argv[0] in ("eval", "saliency-mb", "coherence", "stability"):
        argv += ["--jobs", "1"]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    return result


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, list[Path]]:
    """Every kind's report(s): fresh runs where the kind needs inputs, else a golden report."""
    root = tmp_path_factory.mktemp("reports")
    out: dict[str, list[Path]] = {}
    det = root / "detection.json"
    done = run("eval", "detection", "--pred-dir", SHELF / "pred", "--gt-dir", SHELF / "gt",
               "--conf-threshold", "0.4", "--metrics", "rows,pooled,confusion,coco,errors",
               "--require", "dataset.coco.AP>=0.3", "--require", "dataset.pooled.f1>=0.9", "-o", det,
               "--html", root / "detection-flag.html")
    assert done.exit_code == 3, done.output  # one gate fails: the page shows it
    out["detection"] = [det]
    out.update({kind: [path] for kind, path in GOLDEN_KINDS.items()})
    # readiness: an eval with strata, a stability and a coherence report, cost figures
    data = root / "depth"
    stems = depth_pairs(data)
    write_manifest(root / "manifest.json", stems)
    assert run("eval", "depth", *dirs(data).split(), "--manifest", root / "manifest.json",
               "-o", root / "eval.json").exit_code == 0
    assert run("readiness", "--eval", root / "eval.json", "--stability",
               FIXTURES / "stability" / "kitchen" / "expected.json", "--coherence",
               FIXTURES / "coherence" / "shelf" / "expected.json", "--latency-ms", "12", "--params-m", "25",
               "--model-name", "demo", "-o", root / "readiness.json").exit_code == 0
    out["readiness"] = [root / "readiness.json"]
    # compare: the same frames with every prediction 5% deeper
    worse = root / "worse"
    shutil.copytree(data / "gt", worse / "gt")
    for pred in (data / "pred").glob("*.npy"):
        (worse / "pred").mkdir(parents=True, exist_ok=True)
        np.save(worse / "pred" / pred.name, np.load(pred) * 1.05)
    assert run("eval", "depth", *dirs(worse).split(), "-o", root / "worse.json").exit_code == 0
    assert run("eval", "depth", *dirs(data).split(), "-o", root / "base.json").exit_code == 0
    assert run("compare", root / "base.json", root / "worse.json", "--bootstrap", "200", "-q",
               "-o", root / "compare.json").exit_code == 0
    out["compare"] = [root / "compare.json"]
    # 3D boxes: curves, bands, the worst frames seen from above
    out["detection3d"] = [root / "d3.json"]
    assert run("eval", "detection3d", *dirs(STREET3D).split(), "--range", "0:20", "--range", "20:",
               "--keep-worst", "4", "-o", out["detection3d"][0]).exit_code == 0
    # the worst frames drawn on their images, with boxes / error overlays
    images = root / "images"
    for k in range(6):
        write_photo(images / f"shelf_0{k}.jpg", 640, 480, k)
    out["detection-images"] = [root / "det-images.json"]
    assert run("eval", "detection", *dirs(SHELF).split(), "--images-dir", images, "--conf-threshold", "0.4",
               "-o", out["detection-images"][0]).exit_code == 0
    out["segmentation-frames"] = [root / "seg-frames.json"]
    done = run("eval", "segmentation", *dirs(FIXTURES / "segmentation" / "street").split(),
               "--ignore-index", "255", "--keep-worst", "3", "-o", out["segmentation-frames"][0])
    assert done.exit_code == 0
    out["depth-frames"] = [root / "depth-frames.json"]
    assert run("eval", "depth", *dirs(FIXTURES / "depth" / "indoor").split(), "--keep-worst", "3",
               "--metrics", "rows,dataset,by_depth", "-o", out["depth-frames"][0]).exit_code == 0
    # two reports side by side
    loose = root / "detection-loose.json"
    assert run("eval", "detection", "--pred-dir", SHELF / "pred", "--gt-dir", SHELF / "gt",
               "-o", loose).exit_code == 0
    out["side-by-side"] = [det, loose]
    return out


def write_photo(path: Path, width: int, height: int, seed: int) -> None:
    """A picture with structure (gradients and blocks), as a camera frame compresses."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    rgb = np.stack([(xx * 200 // width + 30) % 255, (yy * 150 // height + 60) % 255,
                    120 + 20 * np.sin(xx / 30.0)], axis=-1).astype(np.uint8)
    image = Image.fromarray(rgb)
    draw = ImageDraw.Draw(image)
    for _ in range(8):
        x, y = int(rng.integers(0, width - 40)), int(rng.integers(0, height - 40))
        draw.rectangle([x, y, x + int(rng.integers(20, 120)), y + int(rng.integers(20, 120))],
                       fill=tuple(int(v) for v in rng.integers(0, 255, 3)))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, quality=92)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium = Browser(tmp_path_factory.mktemp("profile"))
    yield chromium
    chromium.close()


def page_of(browser: Browser, paths: list[Path], tmp_path: Path, name: str = "page", **kwargs: Any):
    html = tmp_path / f"{name}.html"
    done = run("report", *paths, "-o", html)
    assert done.exit_code == 0, done.output
    return browser.open(html, **kwargs), html


def get(report: dict, path: str) -> Any:
    node: Any = report
    for key in path.split("."):
        node = node[key]
    return node


def number(text: str) -> Any:
    return None if text == "null" else json.loads(text)


def assert_not_blank(png: Path) -> None:
    image = iio.imread(png)[..., :3].astype(np.int64)
    colours = np.unique(image.reshape(-1, 3) // 16, axis=0)
    assert image.shape[0] > 300 and len(colours) > 12, f"{png} looks blank ({len(colours)} colours)"
    assert image.std() > 10


def elements(page, *, chart: str | None = None, table: str | None = None) -> list[dict]:
    found = json.loads(page.evaluate(DATA_JS))
    if chart is not None:
        found = [e for e in found if e["chart"] and e["chart"].get("name") == chart]
    return found


def check_common(page, report: dict, index: int = 0) -> None:
    """Headline cards, gates and worst rows equal the report."""
    found = [e for e in json.loads(page.evaluate(DATA_JS)) if e["report"] == index]
    cards = [e["data"] for e in found if e["tag"] == "div" and "metric" in e["data"]]
    if report.get("schema") != "rpx.compare":
        assert cards, "no headline metrics"
    for card in cards:
        assert number(card["value"]) == get(report, card["metric"]), card
    gates = [e["data"] for e in found if "gate" in e["data"]]
    assert [(g["gate"], g["passed"] == "true") for g in gates] == \
        [(g["expr"], g["passed"]) for g in report.get("gates") or []]
    worst = [e["data"] for e in found if e["tag"] == "tr" and "stem" in e["data"] and "value" in e["data"]]
    rows = {row.get("stem"): row for row in report.get("rows") or []}
    for row in worst:
        shown = rows[row["stem"]]
        assert any(number(row["value"]) == value for value in shown.values()), row


def series(page, chart: str) -> dict[str, list]:
    return {e["data"]["series"]: json.loads(e["data"]["y"]) for e in elements(page, chart=chart)
            if "series" in e["data"]}


def bars(page, chart: str) -> dict[str, Any]:
    return {e["data"]["label"]: number(e["data"]["value"]) for e in elements(page, chart=chart)
            if "label" in e["data"]}


def cells(page, chart: str) -> dict[tuple[int, int], int]:
    return {(int(e["data"]["row"]), int(e["data"]["col"])): number(e["data"]["count"])
            for e in elements(page, chart=chart) if "row" in e["data"]}


def nonzero(matrix: list[list[int]]) -> dict[tuple[int, int], int]:
    return {(i, j): v for i, row in enumerate(matrix) for j, v in enumerate(row) if v}


KINDS = [*FRESH_KINDS, *GOLDEN_KINDS]


def test_every_task_has_a_page_kind() -> None:
    """From the registry and the golden fixtures: every registered task (the test-only
    ``cer`` too) and the workflows' golden cases (``stability``) have a page."""
    from rpx_cli.tasks import TASKS

    assert set(TASKS) <= set(KINDS)
    assert "stability" in GOLDEN_KINDS and "cer" in GOLDEN_KINDS


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_renders_offline_without_errors(browser, reports, tmp_path: Path, kind: str) -> None:
    page, html = page_of(browser, reports[kind], tmp_path)
    asked = page.requests()
    # nothing but the page itself, and the pictures it embeds as data: URIs
    assert [url for url in asked if not url.startswith("data:image/")] == [html.resolve().as_uri()]
    assert page.problems() == []
    assert_not_blank(page.screenshot(tmp_path / "light.png", full=False))
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(ARTEFACTS / f"{kind}.png")  # the whole page, for people to look at
    if kind in ("detection", "readiness"):  # dark mode: the page follows prefers-color-scheme
        dark, _ = page_of(browser, reports[kind], tmp_path, "dark", dark=True)
        assert dark.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
        assert_not_blank(dark.screenshot(tmp_path / "dark.png", full=False))
    documents = [json.loads(p.read_text()) for p in reports[kind]]
    for index, document in enumerate(documents):
        check_common(page, document, index)
    assert "<script" not in html.read_text().lower() and "http://" not in html.read_text().replace(
        "http://www.w3.org/2000/svg", "")


@pytest.mark.slow
def test_detection_page_shows_the_report_numbers(browser, reports, tmp_path: Path) -> None:
    report = json.loads(reports["detection"][0].read_text())
    page, _ = page_of(browser, reports["detection"], tmp_path)
    dataset = report["dataset"]
    curves = dataset["coco"]["curves"]
    overall = series(page, "pr-overall")
    assert overall == {"IoU 0.5": curves["iou50"]["overall"]["precision"],
                       "IoU 0.5:0.95 (mean)": curves["iou50_95"]["overall"]["precision"]}
    pr_chart = next(e for e in elements(page) if e["data"].get("name") == "pr-overall")
    assert json.loads(pr_chart["data"]["x"]) == curves["recall"]
    per_class = [e for e in elements(page, chart="pr-class") if "series" in e["data"]]
    assert {(e["chart"]["class"], e["data"]["series"]) for e in per_class} == \
        {(k, s) for k in curves["iou50"]["per_class"] for s in ("IoU 0.5", "0.5:0.95")}
    for e in per_class:
        key = "iou50" if e["data"]["series"] == "IoU 0.5" else "iou50_95"
        assert json.loads(e["data"]["y"]) == curves[key]["per_class"][e["chart"]["class"]]["precision"]
    assert bars(page, "ap-per-class") == {k: v["AP"] for k, v in dataset["coco"]["per_class"].items()}
    prf = series(page, "prf-confidence")
    curve = dataset["pooled"]["by_confidence"]
    assert prf == {"precision": curve["precision"], "recall": curve["recall"], "F1": curve["f1"]}
    markers = [e["data"] for e in elements(page, chart="prf-confidence") if e["tag"] == "circle"]
    assert sorted(number(m["y"]) for m in markers) == sorted(
        dataset["pooled"][k] for k in ("precision", "recall", "f1"))
    assert {number(m["x"]) for m in markers} == {report["params"]["conf_threshold"]}
    matrix = dataset["confusion"]["matrix"]
    assert cells(page, "confusion-counts") == nonzero(matrix) == cells(page, "confusion-rows")
    shares = {(int(e["data"]["row"]), int(e["data"]["col"])): number(e["data"]["share"])
              for e in elements(page, chart="confusion-rows") if "row" in e["data"]}
    for (i, j), share in shares.items():
        assert share == matrix[i][j] / sum(matrix[i])
    text = page.evaluate("document.body.innerText")
    assert "rows are ground truth" in text
    tide = {label.split(" — ")[0]: value for label, value in bars(page, "tide").items()}
    errors = dataset["errors"]
    assert tide == {k: errors[k] for k in ("cls", "loc", "both", "dupe", "bkg", "miss", "fp", "fn")}
    # the page written by --html is the same page
    flag = reports["detection"][0].parent / "detection-flag.html"
    assert flag.read_text().replace(str(reports["detection"][0]), "X") == \
        (tmp_path / "page.html").read_text().replace(str(reports["detection"][0]), "X")


@pytest.mark.slow
def test_other_kinds_show_their_numbers(browser, reports, tmp_path: Path) -> None:
    street = [golden_report("segmentation", "street")]
    seg = json.loads(street[0].read_text())
    page, _ = page_of(browser, street, tmp_path, "seg")
    assert bars(page, "iou-per-class") == {k: v["iou"] for k, v in seg["dataset"]["per_class"].items()}
    assert cells(page, "confusion-counts") == nonzero(seg["dataset"]["confusion"]["matrix"])

    indoor = [golden_report("depth", "indoor")]
    depth = json.loads(indoor[0].read_text())
    page, _ = page_of(browser, indoor, tmp_path, "depth")
    absrel = {e["data"]["label"]: number(e["data"]["value"]) for e in elements(page, chart="bands")
              if e["chart"].get("metric") == "absrel" and "label" in e["data"]}
    bands = [Band.of(value) for value in depth["params"]["ranges"]]
    assert absrel == {band.label: depth["dataset"][band.key("absrel")] for band in bands}
    assert list(absrel) == ["[0, 2) m", "[2, 5) m", "[5, inf) m"]
    histogram = [e for e in elements(page, chart="distribution") if e["chart"].get("metric") == "absrel"
                 and "count" in e["data"]]
    assert sum(int(e["data"]["count"]) for e in histogram) == sum(
        1 for r in depth["rows"] if r["absrel"] is not None)

    mot = [golden_report("tracking", "mot")]
    tracking = json.loads(mot[0].read_text())
    page, _ = page_of(browser, mot, tmp_path, "mot")
    shown = {(e["data"]["stem"]) for e in elements(page) if e["tag"] == "tr" and "stem" in e["data"]}
    assert shown >= {r["stem"] for r in tracking["rows"]}
    values = {(e["data"]["group"], e["data"]["category"]): number(e["data"]["value"])
              for e in elements(page, chart="sequences") if "group" in e["data"]}
    assert values == {(k, r["stem"]): r[k] for r in tracking["rows"] for k in ("hota", "mota", "idf1")}

    pets = [golden_report("classification", "pets")]
    cls = json.loads(pets[0].read_text())
    page, _ = page_of(browser, pets, tmp_path, "cls")
    assert series(page, "reliability")["model"] == cls["dataset"]["calibration"]["accuracy"]
    assert cells(page, "confusion-counts") == nonzero(cls["dataset"]["confusion"]["matrix"])

    ready = json.loads(reports["readiness"][0].read_text())
    page, _ = page_of(browser, reports["readiness"], tmp_path, "ready")
    strata = ready["strata"]
    phases = {(e["data"]["group"], e["data"]["category"]): number(e["data"]["value"])
              for e in elements(page, chart="phases") if "group" in e["data"]}
    for (group, phase), value in phases.items():
        want = strata["weighted_phase_score"][phase] if group == "S_p" else \
            strata["by_phase_difficulty"][phase][group]["mean"]
        assert value == want, (group, phase)
    assert len(phases) == 12
    text = page.evaluate("document.body.innerText")
    assert "delta_int" in text and "TS (temporal stability)" in text and "latency_ms" in text

    compare = json.loads(reports["compare"][0].read_text())
    page, _ = page_of(browser, reports["compare"], tmp_path, "cmp")
    marks = {e["data"]["metric"]: e["data"] for e in elements(page, chart="deltas") if "delta" in e["data"]}
    moved = ("improved", "regressed", "no significant change")
    changed = [m for m in compare["metrics"] if m["status"] in moved]
    assert changed and set(marks) == {m["metric"] for m in changed}
    for m in changed:
        mark = marks[m["metric"]]
        assert number(mark["delta"]) == m["delta"] and mark["status"] == m["status"]
        if m.get("bootstrap"):
            assert [number(mark["low"]), number(mark["high"])] == m["bootstrap"]["ci95"]
    assert any(m.get("bootstrap") for m in changed)

    lines = [golden_report("cer", "lines")]
    plugin = json.loads(lines[0].read_text())
    page, _ = page_of(browser, lines, tmp_path, "cer")
    histogram = [e for e in elements(page, chart="distribution") if "count" in e["data"]]
    assert sum(int(e["data"]["count"]) for e in histogram) == sum(
        1 for r in plugin["rows"] if isinstance(r.get("cer"), (int, float)) and math.isfinite(r["cer"]))


@pytest.mark.slow
def test_side_by_side_table_shows_every_report(browser, reports, tmp_path: Path) -> None:
    first, second = (json.loads(p.read_text()) for p in reports["side-by-side"])
    page, _ = page_of(browser, reports["side-by-side"], tmp_path)
    articles = page.evaluate("document.querySelectorAll('article').length")
    assert articles == 2
    rows = [e for e in elements(page) if e["tag"] == "tr" and "metric" in e["data"]]
    assert {e["data"]["metric"] for e in rows} >= {"dataset.coco.AP", "dataset.pooled.f1"}
    values = [e["data"] for e in elements(page)
              if e["tag"] == "span" and e["data"].get("metric") == "dataset.pooled.f1"]
    assert [number(v["value"]) for v in values[:2]] == [first["dataset"]["pooled"]["f1"],
                                                        second["dataset"]["pooled"]["f1"]]


def test_report_command_errors_and_stdout(tmp_path: Path) -> None:
    done = run("report", tmp_path / "missing.json", "-o", tmp_path / "x.html")
    assert done.exit_code == 1 and not (tmp_path / "x.html").exists()
    (tmp_path / "list.json").write_text("[1, 2]")
    assert run("report", tmp_path / "list.json").exit_code == 1
    done = run("report", SHELF / "expected.json")
    assert done.exit_code == 0 and done.stdout.startswith("<!DOCTYPE html>")


def test_a_merged_run_renders_like_a_single_one(tmp_path: Path) -> None:
    """Built from the JSON alone: the page of a merge of --shard parts equals the single
    run's page except for provenance."""
    base = ["eval", "detection", "--pred-dir", SHELF / "pred", "--gt-dir", SHELF / "gt"]
    assert run(*base, "-o", tmp_path / "one.json").exit_code == 0
    parts = []
    for k in (1, 2):
        parts.append(tmp_path / f"part{k}.json")
        assert run(*base, "--shard", f"{k}/2", "-o", parts[-1]).exit_code == 0
    merged = run("merge", *parts, "-o", tmp_path / "merged.json", "--html", tmp_path / "merged.html")
    assert merged.exit_code == 0
    assert run("report", tmp_path / "one.json", "-o", tmp_path / "one.html").exit_code == 0

    def body(path: Path) -> str:
        text = path.read_text()
        text = text[text.index("</header>"):text.index("parameters and provenance")]
        return text.replace("one.json", "X").replace("merged.json", "X")

    assert body(tmp_path / "one.html") == body(tmp_path / "merged.html")


def test_report_imports_its_reports_task_only() -> None:
    """The page reads what the report's task declares (headline, rank metric, bands), so
    `rpx report` imports that task's module (`registry.find_task`) and no other task's."""
    code = ("import sys; from rpx_cli.cli.main import cli\n"
            f"cli(['report', {str(SHELF / 'expected.json')!r}, '-o', '/dev/null'], standalone_mode=False)\n"
            "print(','.join(sorted({m.split('.')[2] for m in sys.modules\n"
            "                       if m.startswith('rpx_cli.tasks.')})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip().split(",") == ["base", "calculators", "detection", "registry", "stats"]


def test_a_large_confusion_matrix_is_drawn_compactly_with_every_count() -> None:
    """COCO's 81 x 81 matrix: one element per row carries its counts (and total), the cells
    are a path per colour step; the page stays small."""
    import re

    from rpx_cli.report.svg_grids import heatmap

    rng = np.random.default_rng(0)
    labels = [f"class_{k}" for k in range(81)]
    matrix = rng.integers(0, 5, (81, 81)).tolist()
    for normalise in (False, True):
        chart = heatmap(labels, labels, matrix, title="t", normalise_rows=normalise)
        rows = re.findall(r'<g data-row="(\d+)" data-label="([^"]+)" data-total="(\d+)" '
                          r'data-counts="([^"]+)"', chart)
        assert [int(r[0]) for r in rows] == list(range(81))
        assert [json.loads(r[3]) for r in rows] == matrix
        assert [int(r[2]) for r in rows] == [sum(row) for row in matrix]
        assert len(chart) < 200_000


@pytest.mark.parametrize("command", [["eval", "detection"], ["eval", "depth"], ["saliency-mb"], ["coherence"],
                                     ["stability"], ["readiness"], ["merge"], ["compare"]])
def test_every_report_writing_command_takes_html(command: list[str]) -> None:
    done = run(*command, "--help")
    assert done.exit_code == 0 and "--html FILE" in done.stdout


# --- the pictures of issue 32: curves, bands, frames, both models ------------------------------


def by_chart(page, name: str) -> dict[str, list[dict]]:
    """Elements of every chart named ``name``, grouped by the chart's class/metric/stem."""
    out: dict[str, list[dict]] = {}
    for e in elements(page, chart=name):
        key = e["chart"].get("class") or e["chart"].get("metric") or e["chart"].get("stem") or ""
        out.setdefault(key, []).append(e["data"])
    return out


@pytest.mark.slow
def test_detection3d_page_shows_the_report_numbers(browser, reports, tmp_path: Path) -> None:
    from rpx_cli.params.values import Threshold

    report = json.loads(reports["detection3d"][0].read_text())
    page, _ = page_of(browser, reports["detection3d"], tmp_path, "d3")
    dataset = report["dataset"]
    thresholds = [Threshold(v, "m") for v in report["params"]["dist_th"]]
    curves = dataset["curves"]
    charts = by_chart(page, "pr-threshold")
    assert charts, "no precision-recall per threshold"
    for name, marks in charts.items():
        shown = {m["series"]: json.loads(m["y"]) for m in marks if "series" in m}
        assert shown == {t.label: curves[name][t.token]["precision"] for t in thresholds}
    operating = Threshold(report["params"]["tp_threshold"], "m").token
    errors = by_chart(page, "tp-errors")
    labels = {"ATE (m)": "trans_err", "ASE": "scale_err", "AOE (rad)": "orient_err", "AVE (m/s)": "vel_err",
              "AAE": "attr_err"}
    assert set(errors) == set(charts)
    for name, marks in errors.items():
        shown = {m["series"]: json.loads(m["y"]) for m in marks if "series" in m}
        assert shown == {label: curves[name][operating][key] for label, key in labels.items()}
    bands = [Band.of(value) for value in report["params"]["ranges"]]
    grid = {(m["row"], m["col"]): number(m["value"]) for m in elements(page, chart="class-bands")
            for m in [m["data"]] if "row" in m}
    per_class = dataset["per_class"]
    assert grid == {(name, col): per_class[name].get(key) for name in per_class
                    for col, key in [("all", "AP"), *((b.label, b.key("AP")) for b in bands)]}
    frames = by_chart(page, "frame")
    assert list(frames) == [f["stem"] for f in report["worst_frames"]["frames"]]
    for frame in report["worst_frames"]["frames"]:
        marks = frames[frame["stem"]]
        for side in ("gt", "pred"):
            drawn = [m for m in marks if m.get("side") == side]
            assert [m["label"] for m in drawn] == frame[side]["label"]
            assert [m["matched"] == "true" for m in drawn] == frame[side]["matched"]
        assert [number(m["score"]) for m in marks if m.get("side") == "pred"] == frame["pred"]["score"]


IMAGES_JS = """JSON.stringify(Array.from(document.querySelectorAll('svg[data-name=frame] image'))
  .map(e => [e.closest('svg').dataset.stem, e.dataset.layer, e.getAttribute('href')]))"""


@pytest.mark.slow
def test_frames_show_their_images_overlays_and_boxes(browser, reports, tmp_path: Path) -> None:
    det = json.loads(reports["detection-images"][0].read_text())
    page, html = page_of(browser, reports["detection-images"], tmp_path, "frames")
    shown = json.loads(page.evaluate(IMAGES_JS))
    frames = det["worst_frames"]["frames"]
    assert shown == [[f["stem"], "image", f["image"]["data"]] for f in frames]
    marks = by_chart(page, "frame")
    for frame in frames:
        for side in ("gt", "pred"):
            drawn = [m for m in marks[frame["stem"]] if m.get("side") == side]
            assert [m["matched"] == "true" for m in drawn] == frame[side]["matched"]
    # the page is the JSON's pictures: every image is the report's bytes, nothing else is fetched
    assert len(html.read_bytes()) < 2_000_000

    seg = json.loads(reports["segmentation-frames"][0].read_text())
    page, _ = page_of(browser, reports["segmentation-frames"], tmp_path, "seg-frames")
    shown = json.loads(page.evaluate(IMAGES_JS))
    assert shown == [[f["stem"], layer, f["overlays"][layer]["data"]] for f in seg["worst_frames"]["frames"]
                     for layer in f["overlays"]]
    assert {layer for _, layer, _ in shown} == {"errors", "classes"}

    depth = json.loads(reports["depth-frames"][0].read_text())
    page, _ = page_of(browser, reports["depth-frames"], tmp_path, "depth-frames")
    shown = json.loads(page.evaluate(IMAGES_JS))
    assert [layer for _, layer, _ in shown] == ["absrel"] * len(depth["worst_frames"]["frames"])
    by_depth = depth["dataset"]["by_depth"]
    for metric in ("absrel", "rmse"):
        values = [number(e["data"]["value"]) for e in elements(page, chart="by-depth")
                  if e["chart"].get("metric") == metric and "label" in e["data"]]
        assert values == by_depth[metric]
    rows = [e["data"] for e in elements(page, chart="pred-vs-gt") if "row" in e["data"]]
    counts = depth["dataset"]["pred_vs_gt"]["counts"]
    totals: dict[int, int] = {}
    for cell in rows:
        totals[int(cell["row"])] = totals.get(int(cell["row"]), 0) + number(cell["count"])
    assert sorted(totals.values()) == sorted(sum(row) for row in counts if any(row))
    assert sum(totals.values()) == sum(by_depth["n"])


@pytest.mark.slow
def test_classification_curves_and_both_models(browser, reports, tmp_path: Path) -> None:
    pets = [golden_report("classification", "pets")]
    cls = json.loads(pets[0].read_text())
    page, _ = page_of(browser, pets, tmp_path, "cls-curves")
    curves = cls["dataset"]["curves"]
    charts = by_chart(page, "class-pr")
    assert set(charts) == {k for k, v in curves["per_class"].items() if v}
    for name, marks in charts.items():
        shown = {m["series"]: json.loads(m["y"]) for m in marks if "series" in m}
        assert shown == {"precision": curves["per_class"][name]["precision"],
                         "score": curves["per_class"][name]["score"]}

    compare = json.loads(reports["compare"][0].read_text())
    page, _ = page_of(browser, reports["compare"], tmp_path, "cmp-models")
    marks = [e["data"] for e in elements(page, chart="models") if "model" in e["data"]]
    moved = ("improved", "regressed", "no significant change")
    changed = {m["metric"]: m for m in compare["metrics"] if m["status"] in moved}
    assert {m["metric"] for m in marks} == set(changed)
    for mark in marks:
        entry = changed[mark["metric"]]
        side = mark["model"]
        boot = entry.get("bootstrap")
        if boot:
            assert number(mark["value"]) == boot[f"{side}_mean"]
            assert [number(mark["low"]), number(mark["high"])] == boot[f"{side}_ci95"]
        else:
            assert number(mark["value"]) == entry[side] and mark["low"] == "null"
