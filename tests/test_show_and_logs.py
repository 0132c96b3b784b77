"""``rpx show`` beyond the headline (per-class, confusion, gates, compare; CSV/TSV that
round-trips through the csv module; ``| head`` exits 0) and what a CI log shows (the
one-line summary off a terminal, plain progress lines, ``--missing skip`` stems, compare
names never cut at 80 columns)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT, box, dirs, write_json_pair

from rpx_cli.console import ProgressBar

SHELF = FIXTURES / "detection" / "shelf"
DETECTION = SHELF / "expected.json"


def parsed(text: str) -> str | float | int | None:
    """A CSV cell back to the JSON value it came from."""
    if text == "":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_rows_round_trip_through_the_csv_module(rpx, fmt: str) -> None:
    report = json.loads(DETECTION.read_text())
    run = rpx(f"show {DETECTION} --format {fmt}")
    assert run.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(run.stdout), delimiter="," if fmt == "csv" else "\t"))
    assert len(rows) == len(report["rows"])
    for got, want in zip(rows, report["rows"], strict=True):
        assert {k: parsed(v) for k, v in got.items()} == want


def test_per_class_metrics_and_confusion_tables(rpx) -> None:
    report = json.loads(DETECTION.read_text())
    text = rpx(f"show {DETECTION} --format csv --table per_class").stdout
    per_class = list(csv.DictReader(io.StringIO(text)))
    assert [r["class"] for r in per_class] == list(report["dataset"]["confusion"]["per_class"])
    for row in per_class:
        name = row["class"]
        assert parsed(row["AP"]) == report["dataset"]["coco"]["per_class"][name]["AP"]
        for key in ("precision", "recall", "f1", "support"):
            assert parsed(row[key]) == report["dataset"]["confusion"]["per_class"][name][key]
    metrics = dict(csv.reader(io.StringIO(rpx(f"show {DETECTION} --format tsv --table metrics").stdout),
                              delimiter="\t"))
    assert parsed(metrics["dataset.coco.AP"]) == report["dataset"]["coco"]["AP"]
    matrix = list(csv.reader(io.StringIO(rpx(f"show {DETECTION} --format csv --table confusion").stdout)))
    confusion = report["dataset"]["confusion"]
    assert matrix[0][1:] == confusion["labels"]
    assert [[int(v) for v in row[1:]] for row in matrix[1:]] == confusion["matrix"]
    assert rpx(f"show {DETECTION} --table rows").exit_code == 2  # --table goes with csv/tsv


def test_terminal_view_has_per_class_confusion_and_gates(rpx, tmp_path: Path) -> None:
    out = tmp_path / "gated.json"
    rpx(f"eval detection {dirs(SHELF)} --require dataset.coco.AP>=0.99 -o {out}")
    text = rpx(f"show {out}").stdout
    for needle in ("per class", "bottle", "confusion matrix (rows: ground truth, columns: predicted)",
                   "background", "gates", "dataset.coco.AP>=0.99", "FAIL"):
        assert needle in text, needle


def test_compare_reports_render(rpx, tmp_path: Path) -> None:
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    rpx(f"eval detection {dirs(SHELF)} -o {base}")
    rpx(f"eval detection {dirs(SHELF)} --conf-threshold 0.5 -o {new}")
    comparison = tmp_path / "cmp.json"
    assert rpx(f"compare {base} {new} --force -q -o {comparison}").exit_code == 0
    text = rpx(f"show {comparison}").stdout
    assert "regressed" in text and "aggregate.f1" in text  # not an empty table
    rows = list(csv.DictReader(io.StringIO(rpx(f"show {comparison} --format csv").stdout)))
    metrics = json.loads(comparison.read_text())["metrics"]
    assert [r["metric"] for r in rows] == [m["metric"] for m in metrics]
    assert [parsed(r["delta"]) for r in rows] == [m["delta"] for m in metrics]


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_show_into_head_exits_0_quietly(tmp_path: Path, fmt: str) -> None:
    """The reader closes the pipe early: rpx stops quietly with exit 0 (no traceback, no
    'Broken pipe' message), as `rpx show ... | head` needs."""
    big = json.loads(DETECTION.read_text())
    big["rows"] = [dict(big["rows"][0], stem=f"frame_{i:05d}") for i in range(6000)]
    big["dataset"]["confusion"]["per_class"] = {f"class_{i}": {"precision": 0.5, "recall": 0.5, "f1": 0.5,
                                                               "support": i} for i in range(3000)}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(big))
    process = subprocess.Popen([sys.executable, "-m", "rpx_cli", "show", str(path), "--format", fmt],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    first = process.stdout.readline()
    process.stdout.close()  # what `head -1` does
    stderr = process.stderr.read()
    process.stderr.close()
    assert process.wait(timeout=60) == 0
    assert first and stderr == b""


def test_summary_line_off_a_terminal(rpx, tmp_path: Path) -> None:
    """CliRunner's stderr is not a terminal: the summary is printed all the same."""
    out = tmp_path / "det.json"
    run = rpx(f"eval detection {dirs(SHELF)} -o {out}")
    line = run.stderr.strip().splitlines()[-1]
    assert line.startswith("detection · boxes · COCO: 6 pairs, 0 unpaired, 0 skipped on error; "
                           "dataset.coco.AP ")
    assert line.endswith(f"-> {out}")
    assert rpx(f"eval detection {dirs(SHELF)} -o {out} --quiet").stderr == ""


def test_missing_skip_names_the_stems(rpx, tmp_path: Path) -> None:
    for i in range(8):
        write_json_pair(tmp_path, f"s{i}", [box("a", [0, 0, 10, 10])],
                        [box("a", [0, 0, 10, 10], 0.9)] if i < 1 else None)
    run = rpx(f"eval detection {dirs(tmp_path)} --missing skip")
    assert run.exit_code == 0
    assert "skipped by --missing skip: 7 unpaired stem(s): s1 (gt only), s2 (gt only)" in run.stderr
    assert "and 2 more" in run.stderr
    assert "1 pairs, 7 unpaired" in run.stderr


def test_plain_progress_lines_every_tenth_after_the_first_seconds(capsys) -> None:
    now = [0.0]
    bar = ProgressBar("depth", enabled=False, plain=True, clock=lambda: now[0], after=4.95)
    advance = bar.start(100)
    for _ in range(100):
        now[0] += 0.1  # 10 s in all
        advance(1)
    bar.stop()
    lines = capsys.readouterr().err.splitlines()
    # nothing during the first 5 s; then one line per 10 % (50 % ... 100 %)
    shown = [line.split(" (")[1].split(")")[0] for line in lines]
    assert shown == ["50%", "60%", "70%", "80%", "90%", "100%"]
    assert lines[-1].startswith("depth: 100/100 (100%)")
    quick = ProgressBar("depth", enabled=False, plain=True, clock=lambda: 0.0).start(10)
    for _ in range(10):
        quick(1)
    assert capsys.readouterr().err == ""  # a short run: only its summary


def test_plain_progress_every_30_seconds_on_a_slow_run(capsys) -> None:
    now = [0.0]
    advance = ProgressBar("seg", enabled=False, plain=True, clock=lambda: now[0]).start(1000)
    for _ in range(40):  # 4 % in 200 s: no tenth crossed, a line every 30 s
        now[0] += 5.0
        advance(1)
    lines = capsys.readouterr().err.splitlines()
    assert 5 <= len(lines) <= 7 and all("/1000" in line for line in lines)


def test_compare_never_cuts_metric_names(rpx, tmp_path: Path) -> None:
    long = "a_class_with_a_very_long_descriptive_name_from_a_taxonomy_" + "x" * 30
    for name, score in (("base", 0.9), ("new", 0.6)):
        write_json_pair(tmp_path / name, "s0", [box(long, [0, 0, 10, 10])],
                        [box(long, [0, 0, 10, 10], score), box(long, [50, 50, 60, 60], 0.8)])
        rpx(f"eval detection {dirs(tmp_path / name)} -o {tmp_path / name}.json")
    run = rpx(f"compare {tmp_path / 'base.json'} {tmp_path / 'new.json'} -o {tmp_path / 'c.json'}")
    metric = f"dataset.coco.per_class.{long}.AP"
    assert len(metric) > 80
    assert any(metric in line for line in run.stderr.splitlines()), run.stderr


def test_summary_line_in_a_real_pipe(tmp_path: Path) -> None:
    """A subprocess with stderr to a pipe (a CI runner): the summary is there."""
    out = tmp_path / "d.json"
    done = subprocess.run([sys.executable, "-m", "rpx_cli", "eval", "detection", *dirs(SHELF).split(),
                           "-o", str(out), "--jobs", "1"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "TERM": "dumb"})
    assert done.returncode == 0
    assert f"-> {out}" in done.stderr and "6 pairs, 0 unpaired" in done.stderr


def test_markdown_of_detection3d_starts_with_its_declared_headline(rpx, tmp_path) -> None:
    """Not an alphabetical dump starting with AP_...: mAP, NDS, mAPH, then the TP errors, as
    the task declares (issue 30)."""
    from rpx_cli.tasks.registry import get_task

    street = FIXTURES / "detection3d" / "street"
    out = tmp_path / "d3.json"
    assert rpx(f"eval detection3d --pred-dir {street / 'pred'} --gt-dir {street / 'gt'} "
               f"--range 0:20 --range 20: -o {out}").exit_code == 0
    shown = rpx(["show", out, "--format", "markdown"]).stdout.splitlines()
    names = [line.split("`")[1] for line in shown[4:] if line.startswith("| `")]
    report = json.loads(out.read_text())
    declared = [path.split(".", 1)[1] for path in get_task("detection3d").headline
                if path.split(".", 1)[1] in report["dataset"]]  # a nuScenes report: no KITTI means
    assert names[:len(declared)] == declared
    rest = names[len(declared):]
    flat = [n for n in rest if "." not in n]
    assert flat == sorted(flat)  # the rest as before
