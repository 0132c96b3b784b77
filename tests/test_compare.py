"""``rpx compare``: deltas with directions, the paired bootstrap, no-regression gates."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import dirs, write_npy

from rpx_cli.report.compare import (
    check_no_regression,
    compare_reports,
    flatten,
    paired_bootstrap,
    parse_no_regression,
)


def depth_set(root: Path, noise: float, seed: int = 0, n: int = 12) -> None:
    rng = np.random.default_rng(seed)
    for index in range(n):
        gt = np.random.default_rng(index).uniform(1, 9, (8, 8)).astype(np.float32)
        write_npy(root / "gt" / f"s{index:02d}.npy", gt)
        write_npy(root / "pred" / f"s{index:02d}.npy",
                  (gt * np.exp(rng.normal(0, noise, gt.shape))).astype(np.float32))


@pytest.fixture
def two_reports(rpx, tmp_path: Path) -> tuple[Path, Path]:
    paths = []
    for name, noise in (("base", 0.1), ("new", 0.2)):
        depth_set(tmp_path / name, noise)
        out = tmp_path / f"{name}.json"
        assert rpx(f"eval depth --pred-dir {tmp_path / name / 'pred'} "
                   f"--gt-dir {tmp_path / name / 'gt'} -o {out}").exit_code == 0
        paths.append(out)
    return paths[0], paths[1]


def test_compare_reports_directions_and_statuses(rpx, two_reports) -> None:
    base, new = two_reports
    run = rpx(["compare", base, new, "--bootstrap", "500"])
    assert run.exit_code == 0, run.stderr
    document = run.json
    assert document["schema"] == "rpx.compare"
    by_metric = {m["metric"]: m for m in document["metrics"]}
    absrel = by_metric["aggregate.absrel"]
    assert absrel["direction"] == "lower" and absrel["status"] == "regressed"
    assert absrel["delta"] == pytest.approx(absrel["new"] - absrel["base"])
    assert absrel["rel_delta"] == pytest.approx(absrel["delta"] / absrel["base"])
    assert by_metric["aggregate.delta1"]["direction"] == "higher"
    assert by_metric["dataset.n_valid"]["status"] == "unchanged"
    boot = absrel["bootstrap"]
    assert boot["n_shared"] == 12 and boot["significant"] is True  # noise doubled: clearly worse
    assert boot["ci95"][0] > 0 and boot["ci95"][0] <= boot["mean_delta"] <= boot["ci95"][1]
    assert document["summary"]["regressed"] >= 1
    assert "rpx compare" in run.stderr  # the table went to stderr


def test_no_regression_gates(rpx, two_reports) -> None:
    base, new = two_reports
    run = rpx(["compare", base, new, "--require-no-regression", "absrel:1%",
               "--require-no-regression", "dataset.delta3:0.5", "--bootstrap", "0"])
    assert run.exit_code == 3
    gates = run.json["gates"]
    assert [g["passed"] for g in gates] == [False, True]
    assert "beyond tolerance" in gates[0]["message"]
    assert rpx(["compare", base, base, "--require-no-regression", "absrel"]).exit_code == 0
    assert rpx(["compare", base, new, "--require-no-regression", "absrel:x"]).exit_code == 2


def test_different_tasks_or_params_are_refused_unless_forced(rpx, two_reports, tmp_path) -> None:
    base, _ = two_reports
    other = tmp_path / "other.json"
    rpx(f"eval depth {dirs(tmp_path / 'new')} "
        f"--max-depth 5 -o {other}")
    run = rpx(["compare", base, other])
    assert run.exit_code == 1 and "max_depth" in run.stderr
    forced = rpx(["compare", base, other, "--force", "--bootstrap", "0"])
    assert forced.exit_code == 0 and forced.json["params_differ"] == ["max_depth"]


def test_markdown(rpx, two_reports) -> None:
    base, new = two_reports
    run = rpx(["compare", base, new, "--format", "markdown", "--bootstrap", "0", "-q"])
    assert run.exit_code == 0
    assert run.stdout.startswith("### rpx compare: depth")
    lines = run.stdout.splitlines()
    first_row = lines[lines.index("|---|---:|---:|---:|---|---|") + 1]
    assert "worse (no CI)" in first_row  # regressions first; none significant without a bootstrap
    assert "🔴" not in run.stdout


def test_bootstrap_equals_a_plain_loop_over_the_same_resamples() -> None:
    rng = np.random.default_rng(3)
    base = [{"stem": f"s{i}", "m": float(v)} for i, v in enumerate(rng.random(40))]
    new = [{"stem": f"s{i}", "m": float(v) + 0.1} for i, v in enumerate(rng.random(40))]
    new[5]["m"] = None  # a null row is left out of that metric
    got = paired_bootstrap(base, new, ["m"], resamples=300, seed=7)["m"]
    deltas = np.array([(n["m"] - b["m"]) if n["m"] is not None else np.nan
                       for b, n in zip(base, new, strict=True)])
    index = np.random.default_rng(7).integers(0, 40, size=(300, 40))
    means = [np.nanmean(deltas[row]) for row in index]
    assert got["ci95"] == pytest.approx(list(np.percentile(means, [2.5, 97.5])), rel=1e-12)
    assert got["n_shared"] == 39 and got["mean_delta"] == pytest.approx(np.nanmean(deltas))


def test_flatten_and_parse() -> None:
    report = {"aggregate": {"a": 1.0, "b": None}, "dataset": {"per_class": {"x": {"iou": 0.5}},
              "confusion": {"matrix": [[1]]}}, "run_provenance": {"duration_s": 3.0},
              "micro_iou": 0.4, "task": "t"}
    assert flatten(report) == {"aggregate.a": 1.0, "aggregate.b": None,
                               "dataset.per_class.x.iou": 0.5, "micro_iou": 0.4}
    gate = parse_no_regression("absrel:5%")
    assert gate.path == ("aggregate", "absrel") and gate.relative and gate.tolerance == 0.05
    assert parse_no_regression("dataset.miou").tolerance == 0.0
    with pytest.raises(ValueError):
        parse_no_regression("absrel:-1")


def test_gate_on_a_metric_without_direction_fails_with_reason() -> None:
    base = {"aggregate": {"n": 1}, "metric_info": {}}
    result = check_no_regression(base, base, [parse_no_regression("n")])[0]
    assert not result["passed"] and "no direction" in result["message"]
    assert compare_reports(base, base, bootstrap=0, seed=0)[0]["status"] == "unchanged"
    json.dumps(result)


# --- significance, counting once, the chart (issue 30, item 5) -----------------------------


@pytest.fixture
def noisy_reports(rpx, tmp_path: Path) -> tuple[Path, Path]:
    """Two runs of the same model quality (noise 0.1, another draw): every change is noise."""
    paths = []
    for name, seed in (("base", 0), ("new", 1)):
        depth_set(tmp_path / name, 0.1, seed=seed)
        out = tmp_path / f"{name}.json"
        assert rpx(f"eval depth {dirs(tmp_path / name)} -o {out}").exit_code == 0
        paths.append(out)
    return paths[0], paths[1]


def test_a_change_within_its_interval_is_not_significant_in_any_format(rpx, noisy_reports,
                                                                         tmp_path) -> None:
    """A change whose 95 % interval contains 0 is "no significant change" in every output
   : JSON status, table, Markdown, HTML — never "regressed"/"worse"."""
    base, new = noisy_reports
    document = rpx(["compare", base, new, "--bootstrap", "500", "-q"]).json
    by_metric = {m["metric"]: m for m in document["metrics"]}
    noise = [m for m in document["metrics"] if m.get("bootstrap") and m["delta"]]
    assert noise and all(m["significant"] is False for m in noise)
    assert all(m["bootstrap"]["ci95"][0] <= 0 <= m["bootstrap"]["ci95"][1] for m in noise)
    assert all(m["status"] == "no significant change" for m in noise)
    # the point estimate's side is kept apart from the verdict
    assert all(m["point_status"] in ("improved", "regressed", "changed") for m in noise)
    assert by_metric["dataset.absrel"]["significant"] is None  # pooled: no interval
    summary = document["summary"]
    assert summary["significant_regressed"] == 0 and summary["significant_improved"] == 0
    # a figure whose mean of rows has an interval takes that verdict (its pooled value has none)
    assert summary["no_significant_change"] >= 1
    assert summary["regressed"] == summary["improved"] == 0
    # terminal
    table = rpx(["compare", base, new, "--bootstrap", "500"]).stderr
    assert "(significant)" not in table.replace("0 significant", "")
    assert "no significant change" in table and "CI includes 0" not in table
    rows = [line for line in table.splitlines() if "aggregate." in line or "dataset." in line]
    assert not any("regressed" in line or "improved" in line for line in rows
                   if "(no CI)" not in line)  # pooled figures have no interval
    # Markdown
    markdown = rpx(["compare", base, new, "--bootstrap", "500", "--format", "markdown", "-q"]).stdout
    assert "🔴" not in markdown and "🟢" not in markdown
    assert "no significant change" in markdown and "CI includes 0" not in markdown
    assert not any(("worse" in line or "better" in line) and "(no CI)" not in line
                   for line in markdown.splitlines()[1:])
    # HTML: no red or blue verdict, hollow marks, the words in the table
    page = tmp_path / "c.html"
    assert rpx(["compare", base, new, "--bootstrap", "500", "-q", "--html", page]).exit_code == 0
    text = page.read_text()
    every = text.split("every metric")[1]
    assert 'class="bad"' not in every and "no significant change" in every
    assert "regressed" not in every and "CI includes 0" not in every
    assert "▼<title>" not in text and "▲<title>" not in text


def test_old_comparisons_render_the_new_words() -> None:
    """A comparison written before §11.4 (status regressed, significant false) reads as no
    significant change in every view."""
    from rpx_cli.report.compare import verdict

    assert verdict({"status": "regressed", "significant": False}) == "no significant change"
    assert verdict({"status": "no significant change", "significant": False,
                    "point_status": "regressed"}) == "no significant change"
    assert verdict({"status": "regressed", "significant": True},
                   {"regressed": "worse"}) == "worse (significant)"
    assert verdict({"status": "regressed", "significant": None}) == "regressed (no CI)"


@pytest.mark.parametrize("flags", [["--keep-worst", "3"], ["--html", "PAGE"],
                                   ["--images-dir", "IMAGES", "--keep-worst", "2"]])
def test_options_that_change_no_number_compare_without_force(rpx, two_reports, tmp_path,
                                                             flags) -> None:
    """keep_worst, images_dir, --html only change what the page draws: such reports compare
    without --force (the set comes from the options' declarations: changes_numbers=False)."""
    base, _ = two_reports
    images = tmp_path / "images"
    images.mkdir()
    flags = [str(tmp_path / "p.html") if f == "PAGE" else str(images) if f == "IMAGES" else f
             for f in flags]
    other = tmp_path / "other.json"
    assert rpx(["eval", "depth", *dirs(tmp_path / "base").split(), *flags, "-o", other]).exit_code == 0
    assert json.loads(other.read_text())["params"] != json.loads(base.read_text())["params"]
    run = rpx(["compare", base, other, "--bootstrap", "0", "-q"])
    assert run.exit_code == 0, run.stderr
    assert run.json["params_differ"] == []
    assert run.json["presentation_params_differ"] and \
        set(run.json["presentation_params_differ"]) <= {"keep_worst", "images_dir"}
    assert all(m["status"] in ("unchanged", "n/a") for m in run.json["metrics"])


def test_presentation_options_are_declared() -> None:
    from rpx_cli.params.pictures import IMAGES_DIR, KEEP_WORST
    from rpx_cli.tasks.registry import builtin_tasks

    assert not KEEP_WORST.changes_numbers and not IMAGES_DIR.changes_numbers
    for task in builtin_tasks().values():  # every other task option changes a number
        for option in (*task.options, *task.aux_inputs):
            assert option.changes_numbers == (option.param not in ("keep_worst", "images_dir")), \
                (task.name, option.param)


def test_a_clear_regression_is_significant_in_every_format(rpx, two_reports, tmp_path) -> None:
    base, new = two_reports
    document = rpx(["compare", base, new, "--bootstrap", "500", "-q"]).json
    absrel = next(m for m in document["metrics"] if m["metric"] == "aggregate.absrel")
    assert absrel["significant"] is True and absrel["status"] == "regressed"
    assert document["summary"]["significant_regressed"] >= 1
    markdown = rpx(["compare", base, new, "--bootstrap", "500", "--format", "markdown", "-q"]).stdout
    assert "| `aggregate.absrel` |" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| `aggregate.absrel`"))
    assert "🔴 worse (significant)" in row
    table = rpx(["compare", base, new, "--bootstrap", "500"]).stderr
    assert "regressed (significant)" in table
    page = tmp_path / "c.html"
    rpx(["compare", base, new, "--bootstrap", "500", "-q", "--html", page])
    assert 'data-metric="aggregate.absrel" data-delta' in page.read_text()
    assert "▼<title>aggregate.absrel" in page.read_text()


def test_a_metrics_mean_and_pooled_value_count_once() -> None:
    from rpx_cli.report.compare import summary

    def m(metric, status, significant=None):
        return {"metric": metric, "status": status, "significant": significant}

    counts = summary([m("aggregate.absrel", "regressed", True), m("dataset.absrel", "regressed"),
                      m("aggregate.rmse", "no significant change", False),
                      m("dataset.rmse", "regressed"),
                      m("aggregate.delta1", "unchanged"), m("dataset.delta1", "unchanged"),
                      m("dataset.per_class.car.iou", "improved"), m("aggregate.n_valid", "n/a"),
                      m("aggregate.silog", "unchanged"), m("dataset.silog", "improved")])
    # rmse: its mean of rows has an interval that includes 0, which decides the figure;
    # silog: the mean did not move, the pooled value (no interval) did
    assert counts == {"improved": 2, "regressed": 1, "unchanged": 1, "no_significant_change": 1,
                      "significant_improved": 0, "significant_regressed": 1}


def test_the_delta_chart_scales_each_metric_and_never_cuts_a_label() -> None:
    import re

    from rpx_cli.report.svg import CHAR_PX
    from rpx_cli.report.svg_intervals import interval_chart

    label = "dataset.per_class.a_very_long_class_name_for_a_traffic_light.iou_50m_inf"
    chart = interval_chart([
        {"label": "aggregate.absrel", "delta": 0.01, "low": 0.005, "high": 0.02, "status": "regressed",
         "significant": True},
        {"label": label, "delta": 120.0, "low": None, "high": None, "status": "regressed"}],
        title="t", x_label="delta")
    marks = re.findall(r'<text x="([0-9.]+)"[^>]*data-delta="([^"]+)"[^>]*data-scale="([^"]+)"', chart)
    assert [float(scale) for _, _, scale in marks] == [0.02, 120.0]
    x_small = float(marks[0][0])
    x_big = float(marks[1][0])
    assert x_big > x_small > float(re.search(r'<path class="ax" d="M([0-9.]+)', chart).group(1))
    found = re.search(rf'<text class="tick" x="([0-9.]+)"[^>]*>{re.escape(label)}</text>', chart)
    label_x = float(found.group(1))
    assert label_x - len(label) * CHAR_PX >= 0  # right-aligned at x: the whole label fits
    width = float(re.search(r'width="([0-9.]+)"', chart).group(1))
    assert width >= len(label) * CHAR_PX + 240


def test_a_comparison_written_before_presentation_params_validates_and_shows(rpx, two_reports,
                                                                             tmp_path) -> None:
    """``presentation_params_differ`` is new: a comparison an earlier rpx wrote (without it)
    stays a valid rpx.compare v1 file that rpx show, rpx report and rpx validate read."""
    base, new = two_reports
    run = rpx(["compare", base, new, "--bootstrap", "0", "-q"])
    older = dict(run.json)
    del older["presentation_params_differ"]
    path = tmp_path / "older-compare.json"
    path.write_text(json.dumps(older))
    for command in (["validate", path], ["show", path], ["report", path, "-o", tmp_path / "p.html"]):
        done = rpx(command)
        assert done.exit_code == 0, (command, done.stderr)
