"""Saying what was evaluated (SPEC §11.4; issue 38, item 9): every human view of a detection
report — the page's title, the stderr summary line, ``rpx show`` and Markdown — names the
similarity kind and protocol the run's parts declare; OKS curves are labelled OKS; the maxDets
shown is the run's; LVIS headlines hold APr/APc/APf; and a page suggests only a ``--metrics``
that the run's options accept."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import FIXTURES

from rpx_cli.cli.main import cli
from rpx_cli.report import render
from rpx_cli.report.html import render_html
from rpx_cli.report.html_sections import card_paths
from rpx_cli.tasks.detection.parts import KINDS, PROTOCOLS

DETECTION = FIXTURES / "detection"
# golden case -> (the kind's title, the protocol's label), from the parts' declarations
CASES = {"hands": (KINDS["keypoints"].title, PROTOCOLS["coco"].label),
         "lvis": (KINDS["box"].title, PROTOCOLS["lvis"].label),
         "masks": (KINDS["mask"].title, PROTOCOLS["coco"].label),
         "shelf": (KINDS["box"].title, PROTOCOLS["coco"].label),
         "aerial": (KINDS["rotated"].title, PROTOCOLS["coco"].label),
         "voc07": (KINDS["box"].title, PROTOCOLS["voc07"].label)}


def report(case: str) -> dict:
    """A golden case's report (``voc07``: the shelf's boxes under --protocol voc07)."""
    if case == "voc07":
        shelf = DETECTION / "shelf"
        result = CliRunner().invoke(cli, ["eval", "detection", "--pred-dir", str(shelf / "pred"), "--gt-dir",
                                          str(shelf / "gt"), "--protocol", "voc07", "--jobs", "1"],
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)
    return json.loads((DETECTION / case / "expected.json").read_text())


def test_parts_declare_their_titles() -> None:
    assert all(kind.title for kind in KINDS.values())
    assert all(protocol.label for protocol in PROTOCOLS.values())
    assert (KINDS["mask"].title, KINDS["keypoints"].title, PROTOCOLS["lvis"].label,
            PROTOCOLS["voc07"].label) == ("masks", "keypoints", "LVIS", "VOC07")


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_view_names_kind_and_protocol(case: str, tmp_path: Path) -> None:
    document = report(case)
    title = " · ".join(("detection", *CASES[case]))
    page = render_html([("r.json", document)])
    assert f"<h2>{title}</h2>" in page
    assert re.search(r"<title>[^<]*" + re.escape(title), page)
    assert render.summary_line(document, "-").startswith(f"{title}: ")
    assert render.markdown(document).startswith(f"### rpx {title} report\n")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document))
    shown = CliRunner().invoke(cli, ["show", str(path)], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    assert title in shown.output


def test_other_tasks_keep_their_name() -> None:
    document = json.loads((FIXTURES / "depth" / "indoor" / "expected.json").read_text())
    assert "<h2>depth</h2>" in render_html([("r.json", document)])
    assert render.summary_line(document, "-").startswith("depth: ")


def test_keypoint_curves_are_labelled_oks_at_20_detections() -> None:
    page = render_html([("r.json", report("hands"))])
    curves = re.findall(r'data-series="([^"]*)"', page)
    assert "OKS 0.5" in curves and "OKS 0.5:0.95 (mean)" in curves
    assert not any(name.startswith("IoU") for name in curves)
    assert "20 detections per image" in page and "100 detections per image" not in page


def test_boxes_keep_iou_and_100_detections() -> None:
    page = render_html([("r.json", report("shelf"))])
    assert "IoU 0.5" in re.findall(r'data-series="([^"]*)"', page)
    assert "100 detections per image" in page


def test_lvis_shows_its_max_dets_and_frequency_aps() -> None:
    document = report("lvis")
    max_dets = document["params"]["max_dets"]
    page = render_html([("r.json", document)])
    assert f"{max_dets} detections per image" in page and "100 detections per image" not in page
    cards = card_paths(document)
    for name in ("APr", "APc", "APf"):
        assert f"dataset.coco.{name}" in cards
        assert f'<div class="card" data-metric="dataset.coco.{name}"' in page


@pytest.mark.parametrize("case", ["hands", "lvis"])
def test_no_metrics_suggestion_the_run_would_refuse(case: str) -> None:
    """TIDE is refused for keypoints and under LVIS (exit 2): the page must not suggest it."""
    document = report(case)
    assert "errors" in document["params"]["skipped_metrics"]
    page = render_html([("r.json", document)])
    assert "errors</code>" not in page


def test_box_page_suggests_a_metrics_value_that_runs(tmp_path: Path) -> None:
    document = report("shelf")
    page = render_html([("r.json", document)])
    suggested = re.search(r"<code>--metrics ([^<]*)</code>", page).group(1)
    shelf = DETECTION / "shelf"
    result = CliRunner().invoke(cli, ["eval", "detection", "--pred-dir", str(shelf / "pred"), "--gt-dir",
                                      str(shelf / "gt"), "--metrics", suggested, "--jobs", "1",
                                      "-o", str(tmp_path / "r.json")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "errors" in json.loads((tmp_path / "r.json").read_text())["dataset"]


def test_every_part_names_itself():
    """A run's title is made of its parts' names: a part without one would print
    "detection ·  · " (the Open Images protocol once had no label)."""
    assert all(kind.title for kind in KINDS.values())
    assert all(protocol.label for protocol in PROTOCOLS.values())
