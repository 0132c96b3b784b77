"""``rpx compare`` of two ``--keep-state`` reports: a paired bootstrap interval for every
pooled figure (``dataset.*``), each resample's figure recomputed by the task's own summary
— checked against a brute force that evaluates folders holding the drawn images."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXTURES, dirs, generated_detections, write_json_pair, write_npy

from rpx_cli.api import evaluate_dirs
from rpx_cli.report.compare import NO_CHANGE, flatten

HEADLINES = {"coco": ("dataset.coco.AP", "dataset.coco.AP50"), "voc07": ("dataset.voc07.mAP",),
             "voc": ("dataset.voc.mAP",), "ultralytics": ("dataset.ultralytics.mAP50_95",),
             "dota": ("dataset.dota.mAP",), "openimages": ("dataset.openimages.mAP",),
             "lvis": ("dataset.coco.AP",)}


def frames(worse: bool = False, n_images: int = 10) -> list[tuple[str, list, list]]:
    """Generated frames (score ties included); ``worse``: the same GT, two predictions in
    three moved off their object by their own width (a clearly worse model)."""
    out = generated_detections(7, n_images)
    if worse:
        rng = np.random.default_rng(1)
        out = [(stem, gt, [_moved(p) if rng.random() < 2 / 3 else p for p in pred])
               for stem, gt, pred in out]
    return out


def _moved(prediction: dict) -> dict:
    x1, y1, x2, y2 = prediction["bbox"]
    return {**prediction, "bbox": [x2, y1, 2 * x2 - x1, y2]}


def write_frames(root: Path, chosen: list[tuple[str, list, list]]) -> Path:
    for stem, gt, pred in chosen:
        write_json_pair(root, stem, gt, pred)
    return root


def draws(seed: int, n: int, resamples: int) -> list[np.ndarray]:
    """The resamples docs/ci.md defines: ``n`` draws with replacement, in stem order, from
    ``numpy.random.default_rng(seed)`` one after the other."""
    rng = np.random.default_rng(seed)
    return [np.sort(rng.integers(0, n, size=n)) for _ in range(resamples)]


def brute_force(tmp_path: Path, chosen: list, index: np.ndarray, options: dict) -> dict:
    """The report of folders holding the drawn frames (a frame drawn k times: k files, named
    so that they sort as the draw does)."""
    root = tmp_path / "drawn"
    if root.exists():
        import shutil

        shutil.rmtree(root)
    counts = np.bincount(index, minlength=len(chosen))
    copies = [(f"{i:03d}_{k}", gt, pred) for i, (_, gt, pred) in enumerate(chosen)
              for k in range(int(counts[i]))]
    write_frames(root, copies)
    return flatten(evaluate_dirs("detection", root / "pred", root / "gt", jobs=1, **options))


def keep(rpx, root: Path, out: Path, *extra: str) -> Path:
    run = rpx(["eval", "detection", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
               "--keep-state", "-o", out, *extra])
    assert run.exit_code == 0, run.stderr
    return out


@pytest.mark.parametrize("protocol", ["coco", "voc07", "voc", "ultralytics"])
def test_the_interval_is_the_brute_force_over_drawn_folders(rpx, tmp_path, protocol) -> None:
    """Before: dataset.* figures had no interval ("no CI", significant null)."""
    resamples, seed = 12, 5
    base_frames, new_frames = frames(), frames(worse=True)
    words = ["--protocol", protocol]
    base = keep(rpx, write_frames(tmp_path / "base", base_frames), tmp_path / "base.json", *words)
    new = keep(rpx, write_frames(tmp_path / "new", new_frames), tmp_path / "new.json", *words)
    run = rpx(["compare", base, new, "--bootstrap", resamples, "--seed", seed])
    assert run.exit_code == 0, run.stderr
    entries = {m["metric"]: m for m in run.json["metrics"]}
    assert run.json["pooled_bootstrap"]["resamples"] == resamples
    options = {"protocol": protocol}
    replicates = [(brute_force(tmp_path, base_frames, index, options),
                   brute_force(tmp_path, new_frames, index, options))
                  for index in draws(seed, len(base_frames), resamples)]
    for path in HEADLINES[protocol]:
        boot = entries[path]["bootstrap"]
        pairs = np.array([[b.get(path), n.get(path)] for b, n in replicates], dtype=float)
        defined = np.isfinite(pairs).all(axis=1)
        expected = [float(v) for v in np.percentile(pairs[defined, 1] - pairs[defined, 0],
                                                    [2.5, 97.5])]
        assert boot["ci95"] == expected, path
        assert boot["base_ci95"] == [float(v) for v in np.percentile(pairs[defined, 0], [2.5, 97.5])]
        assert boot["mean_delta"] == entries[path]["new"] - entries[path]["base"]
        assert boot["pooled"] is True and boot["n_shared"] == len(base_frames)
        assert entries[path]["significant"] == (expected[0] > 0 or expected[1] < 0)


def test_a_clearly_worse_model_regresses_significantly(rpx, tmp_path) -> None:
    base = keep(rpx, write_frames(tmp_path / "base", frames(n_images=40)), tmp_path / "base.json")
    new = keep(rpx, write_frames(tmp_path / "new", frames(worse=True, n_images=40)),
               tmp_path / "new.json")
    run = rpx(["compare", base, new, "--bootstrap", "200", "--format", "markdown"])
    assert run.exit_code == 0, run.stderr
    assert "| `dataset.coco.AP` |" in run.stdout and "🔴" in run.stdout
    document = rpx(["compare", base, new, "--bootstrap", "200"]).json
    ap = next(m for m in document["metrics"] if m["metric"] == "dataset.coco.AP")
    assert ap["status"] == "regressed" and ap["significant"] is True
    assert ap["bootstrap"]["ci95"][1] < 0


def test_a_tiny_change_is_no_significant_change(rpx, tmp_path) -> None:
    chosen = frames(n_images=30)
    stem, gt, pred = chosen[3]
    nudged = [*chosen[:3], (stem, gt, [{**p, "score": max(0.0, p["score"] - 0.05)} for p in pred]),
              *chosen[4:]]
    base = keep(rpx, write_frames(tmp_path / "base", chosen), tmp_path / "base.json")
    new = keep(rpx, write_frames(tmp_path / "new", nudged), tmp_path / "new.json")
    document = rpx(["compare", base, new, "--bootstrap", "100"]).json
    moved = [m for m in document["metrics"] if m["metric"].startswith("dataset.coco.")
             and m.get("point_status")]
    assert moved, "the nudge moves some COCO figure"
    for m in moved:
        assert m["status"] == NO_CHANGE and m["significant"] is False
        assert m["bootstrap"]["ci95"][0] <= 0 <= m["bootstrap"]["ci95"][1]


def test_identical_reports_are_unchanged_with_a_zero_interval_and_deterministic(rpx, tmp_path) -> None:
    base = keep(rpx, write_frames(tmp_path / "base", frames()), tmp_path / "base.json")
    first = rpx(["compare", base, base, "--bootstrap", "30"]).json
    again = rpx(["compare", base, base, "--bootstrap", "30"]).json
    pooled = [m for m in first["metrics"] if m["metric"].startswith("dataset.")]
    assert pooled and all(m["bootstrap"]["ci95"] == [0.0, 0.0] and m["status"] == "unchanged"
                          for m in pooled if "bootstrap" in m)
    assert [m.get("bootstrap") for m in first["metrics"]] == \
        [m.get("bootstrap") for m in again["metrics"]]
    other_seed = rpx(["compare", base, base, "--bootstrap", "30", "--seed", "1"]).json
    assert other_seed["pooled_bootstrap"]["seed"] == 1


def test_shards_merged_compare_as_a_single_run(rpx, tmp_path) -> None:
    root = write_frames(tmp_path / "base", frames())
    new_root = write_frames(tmp_path / "new", frames(worse=True))
    single = keep(rpx, root, tmp_path / "single.json")
    new = keep(rpx, new_root, tmp_path / "new.json")
    parts = []
    for k in (1, 2, 3):
        part = tmp_path / f"part{k}.json"
        assert rpx(f"eval detection {dirs(root)} --shard {k}/3 -o {part}").exit_code == 0
        parts.append(part)
    merged = tmp_path / "merged.json"
    assert rpx(["merge", *parts, "--keep-state", "-o", merged]).exit_code == 0
    assert json.loads(merged.read_text())["statistics"] == json.loads(single.read_text())["statistics"]
    one = rpx(["compare", single, new, "--bootstrap", "20"]).json
    two = rpx(["compare", merged, new, "--bootstrap", "20"]).json
    assert one["metrics"] == two["metrics"]


def test_different_number_changing_params_are_still_refused(rpx, tmp_path) -> None:
    root = write_frames(tmp_path / "base", frames())
    base = keep(rpx, root, tmp_path / "base.json")
    other = keep(rpx, root, tmp_path / "other.json", "--iou-threshold", "0.6")
    run = rpx(["compare", base, other])
    assert run.exit_code == 1 and "iou_threshold" in run.stderr
    forced = rpx(["compare", base, other, "--force", "--bootstrap", "10"])
    assert forced.exit_code == 0
    assert "different evaluations" in forced.json["pooled_bootstrap"]["reason"]
    assert all("bootstrap" not in m for m in forced.json["metrics"] if m["metric"].startswith("dataset."))


def test_without_statistics_the_figures_say_how_to_get_an_interval(rpx, tmp_path) -> None:
    root = write_frames(tmp_path / "base", frames())
    kept = keep(rpx, root, tmp_path / "kept.json")
    plain = tmp_path / "plain.json"
    assert rpx(f"eval detection {dirs(root)} -o {plain}").exit_code == 0
    run = rpx(["compare", kept, plain, "--bootstrap", "10"])
    assert run.exit_code == 0
    assert "NEW carries no statistics" in run.stderr and "--keep-state" in run.stderr
    section = run.json["pooled_bootstrap"]
    assert section["resamples"] == 0 and "--keep-state" in section["reason"]
    assert all(m["significant"] is None for m in run.json["metrics"]
               if m["metric"].startswith("dataset."))
    # --keep-state changes no number: the reports are the same apart from it
    a, b = json.loads(kept.read_text()), json.loads(plain.read_text())
    assert {k: v for k, v in a.items() if k not in ("statistics", "run_provenance")} == \
        {k: v for k, v in b.items() if k != "run_provenance"}


def test_pooled_bootstrap_caps_the_pooled_resamples(rpx, tmp_path) -> None:
    base = keep(rpx, write_frames(tmp_path / "base", frames()), tmp_path / "base.json")
    document = rpx(["compare", base, base, "--bootstrap", "50", "--pooled-bootstrap", "7"]).json
    assert document["pooled_bootstrap"]["resamples"] == 7
    boots = {m["metric"]: m.get("bootstrap") for m in document["metrics"]}
    assert boots["dataset.coco.AP"]["resamples"] == 7 and boots["aggregate.f1"]["resamples"] == 50
    off = rpx(["compare", base, base, "--pooled-bootstrap", "0"]).json
    assert off["pooled_bootstrap"]["resamples"] == 0 and "bootstrap" not in {
        k for m in off["metrics"] if m["metric"] == "dataset.coco.AP" for k in m}
    assert rpx(["compare", base, base, "--pooled-bootstrap", "-1"]).exit_code == 2


OI = FIXTURES / "detection" / "openimages_challenge"
OUTLINES = FIXTURES / "detection" / "outlines"
LVIS = FIXTURES / "detection" / "lvis"
COCO = FIXTURES / "detection" / "coco"
RUNS = {
    "coco": ["--coco-gt", COCO / "instances.json", "--coco-dt", COCO / "results.json"],
    "lvis": ["--protocol", "lvis", "--max-dets", "10", "--coco-gt", LVIS / "lvis_val.json",
             "--coco-dt", LVIS / "results.json"],
    "dota": ["--protocol", "dota", "--geometry", "polygon", "--pred-dir", OUTLINES / "pred",
             "--gt-dir", OUTLINES / "gt"],
    "openimages": ["--protocol", "openimages", "--pred-dir", OI / "predictions.csv",
                   "--gt-dir", OI / "annotations-bbox.csv", "--oi-class-descriptions",
                   OI / "class-descriptions-boxable.csv", "--oi-hierarchy",
                   OI / "bbox_labels_hierarchy.json", "--oi-image-labels",
                   OI / "image-labels.csv", "--image-size", "640,480"],
}


@pytest.mark.parametrize("protocol", sorted(RUNS))
def test_every_protocol_headline_gets_a_pooled_interval(rpx, tmp_path, protocol) -> None:
    out = tmp_path / "kept.json"
    run = rpx(["eval", "detection", *RUNS[protocol], "--keep-state", "-o", out])
    assert run.exit_code == 0, run.stderr
    document = rpx(["compare", out, out, "--bootstrap", "15"]).json
    entries = {m["metric"]: m for m in document["metrics"]}
    for path in HEADLINES[protocol]:
        boot = entries[path]["bootstrap"]
        assert boot["ci95"] == [0.0, 0.0] and boot["resamples"] == 15
        assert boot["base_mean"] == entries[path]["base"]  # the report's own figure
        assert entries[path]["significant"] is False and entries[path]["status"] == "unchanged"


def test_any_task_pooled_figures_are_resampled_as_its_folders_would_be(rpx, tmp_path) -> None:
    """Depth's pooled figures (dataset.absrel, ...) — a task with no protocol — equal the
    brute force too."""
    rng = np.random.default_rng(4)
    gts = [rng.uniform(1, 9, (6, 7)).astype(np.float32) for _ in range(7)]
    sides = {"base": [g * rng.uniform(0.9, 1.1, g.shape).astype(np.float32) for g in gts],
             "new": [g * rng.uniform(0.7, 1.3, g.shape).astype(np.float32) for g in gts]}
    reports = {}
    for name, preds in sides.items():
        for i, (gt, pred) in enumerate(zip(gts, preds, strict=True)):
            write_npy(tmp_path / name / "gt" / f"s{i}.npy", gt)
            write_npy(tmp_path / name / "pred" / f"s{i}.npy", pred)
        reports[name] = tmp_path / f"{name}.json"
        assert rpx(f"eval depth {dirs(tmp_path / name)} --keep-state -o {reports[name]}").exit_code == 0
    document = rpx(["compare", reports["base"], reports["new"], "--bootstrap", "10",
                    "--seed", "2"]).json
    entries = {m["metric"]: m for m in document["metrics"]}
    replicates = []
    for index in draws(2, len(gts), 10):
        values = []
        for name, preds in sides.items():
            root = tmp_path / "drawn" / f"{name}{len(replicates)}"
            for i in index.tolist():
                k = sum(1 for p in (root / "gt").glob(f"{i:03d}_*")) if (root / "gt").exists() else 0
                write_npy(root / "gt" / f"{i:03d}_{k}.npy", gts[i])
                write_npy(root / "pred" / f"{i:03d}_{k}.npy", preds[i])
            values.append(flatten(evaluate_dirs("depth", root / "pred", root / "gt", jobs=1)))
        replicates.append(values)
    for path in ("dataset.absrel", "dataset.rmse", "dataset.delta1"):
        deltas = [n[path] - b[path] for b, n in replicates]
        assert entries[path]["bootstrap"]["ci95"] == [float(v) for v in np.percentile(deltas, [2.5, 97.5])]


def test_statistics_summed_over_every_pair_cannot_be_resampled(rpx, tmp_path) -> None:
    rng = np.random.default_rng(5)
    for i in range(4):
        gt = rng.uniform(1, 9, (5, 5)).astype(np.float32)
        write_npy(tmp_path / "gt" / f"s{i}.npy", gt)
        write_npy(tmp_path / "pred" / f"s{i}.npy", gt * np.float32(1.1))
    out = tmp_path / "kept.json"
    assert rpx(f"eval depth {dirs(tmp_path)} --metrics rows,dataset,by_depth --keep-state "
               f"-o {out}").exit_code == 0
    run = rpx(["compare", out, out, "--bootstrap", "10"])
    assert run.exit_code == 0 and "summed over every pair" in run.json["pooled_bootstrap"]["reason"]
    assert "cannot be resampled" in run.stderr


def test_worker_processes_change_no_number(rpx, tmp_path) -> None:
    base = keep(rpx, write_frames(tmp_path / "base", frames()), tmp_path / "base.json")
    new = keep(rpx, write_frames(tmp_path / "new", frames(worse=True)), tmp_path / "new.json")
    one = rpx(["compare", base, new, "--bootstrap", "9", "--jobs", "1"]).json
    two = rpx(["compare", base, new, "--bootstrap", "9", "--jobs", "2"]).json
    assert one["metrics"] == two["metrics"] and one["pooled_bootstrap"] == two["pooled_bootstrap"]


def test_markdown_and_the_page_show_pooled_intervals(rpx, tmp_path) -> None:
    from rpx_cli.report.html import render_html
    from rpx_cli.report.render import fmt

    base = keep(rpx, write_frames(tmp_path / "base", frames(n_images=40)), tmp_path / "base.json")
    new = keep(rpx, write_frames(tmp_path / "new", frames(worse=True, n_images=40)),
               tmp_path / "new.json")
    out = tmp_path / "compare.json"
    markdown = rpx(["compare", base, new, "--bootstrap", "60", "--format", "markdown", "-o", out,
                    "--html", tmp_path / "page.html"]).stdout
    document = rpx(["compare", base, new, "--bootstrap", "60"]).json
    ap = next(m for m in document["metrics"] if m["metric"] == "dataset.coco.AP")
    low, high = ap["bootstrap"]["ci95"]
    assert "60 paired resamples" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| `dataset.coco.AP` |"))
    assert "🔴 worse (significant)" in row and row.endswith(f"| [{fmt(low)}, {fmt(high)}] |")
    page = render_html([("compare.json", document)])
    assert 'data-metric="dataset.coco.AP" data-delta="' in page
    chart = page[page.index('data-metric="dataset.coco.AP" data-delta="'):][:400]
    assert 'data-low="' in chart and 'data-low=""' not in chart
    models = [m for m in page.split("<circle")[1:] if 'data-metric="dataset.coco.AP"' in m]
    assert models and all('data-low=""' not in m for m in models)
    plain = tmp_path / "plain.json"
    assert rpx(f"eval detection {dirs(tmp_path / 'new')} -o {plain}").exit_code == 0
    without = rpx(["compare", base, plain, "--bootstrap", "20", "--format", "markdown"]).stdout
    assert "Pooled figures (`dataset.*`) have no interval: NEW carries no statistics" in without


def test_show_report_check_and_merge_take_a_kept_report_sensibly(rpx, tmp_path) -> None:
    kept = keep(rpx, write_frames(tmp_path / "base", frames()), tmp_path / "kept.json")
    shown = rpx(["show", kept])
    assert shown.exit_code == 0 and "--shard part" not in shown.stdout + shown.stderr
    page = tmp_path / "page.html"
    assert rpx(["report", kept, "-o", page]).exit_code == 0
    assert "--shard part" not in page.read_text() and "statistics" not in page.read_text()
    checked = rpx(["check", kept, "--require", "dataset.coco.AP>=0"])
    assert checked.exit_code == 0
    typo = rpx(["check", kept, "--require", "statistic.stems>=0"])
    assert typo.exit_code == 2 and "statistics" not in typo.stderr.split("did you mean")[-1]
    merged = rpx(["merge", kept, "-o", tmp_path / "merged.json"])
    assert merged.exit_code == 1 and "is not a --shard partial report" in merged.stderr
    assert "Traceback" not in merged.stderr


def test_reports_without_the_flag_stay_as_they_were(rpx, tmp_path) -> None:
    """--keep-state is recorded in run_provenance.args only when given (args_when_unset):
    a report written without it is byte for byte what earlier rpx wrote."""
    root = write_frames(tmp_path / "base", frames())
    plain, kept = tmp_path / "plain.json", keep(rpx, root, tmp_path / "kept.json")
    assert rpx(f"eval detection {dirs(root)} -o {plain}").exit_code == 0
    assert "keep_state" not in json.loads(plain.read_text())["run_provenance"]["args"]
    assert json.loads(kept.read_text())["run_provenance"]["args"]["keep_state"] is True
    run = rpx(["compare", plain, plain, "--bootstrap", "10"])
    assert "neither report carries statistics" in run.json["pooled_bootstrap"]["reason"]


def test_only_the_stems_both_evaluated_are_drawn(rpx, tmp_path) -> None:
    chosen = frames()
    base = keep(rpx, write_frames(tmp_path / "base", chosen), tmp_path / "base.json")
    new = keep(rpx, write_frames(tmp_path / "new", chosen[:7]), tmp_path / "new.json")
    document = rpx(["compare", base, new, "--bootstrap", "10"]).json
    ap = next(m for m in document["metrics"] if m["metric"] == "dataset.coco.AP")
    shared = flatten(evaluate_dirs("detection", tmp_path / "new" / "pred", tmp_path / "new" / "gt",
                                   jobs=1))["dataset.coco.AP"]
    assert ap["bootstrap"]["n_shared"] == 7
    # the figures on the shared stems, not the reports' own (BASE evaluated 10 images)
    assert ap["bootstrap"]["base_mean"] == ap["bootstrap"]["new_mean"] == shared
    assert ap["bootstrap"]["mean_delta"] == 0.0 and ap["bootstrap"]["ci95"] == [0.0, 0.0]
    assert ap["base"] != ap["new"] and ap["status"] in ("improved", "regressed", NO_CHANGE)
