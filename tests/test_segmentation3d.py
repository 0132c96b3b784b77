"""``rpx eval segmentation3d``: autoware-ml's and SemanticKITTI's own test vectors, a plain
per-class loop on generated scans (both protocols, ranges, ignore labels), label maps,
formats, every input error, and the invariants (perfect prediction, jobs, shards)."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT, assert_jobs_and_shards_agree

from rpx_cli.api import evaluate_dirs

KITTI = ROOT / "fixtures" / "segmentation3d" / "kitti"


def write_scans(root: Path, scans: dict[str, tuple], *, fmt: str = "npy") -> Path:
    """``{stem: (gt, pred, points or None)}`` as label files and point files under ``root``
    (``gt/``, ``pred/``, ``points/``); ``fmt`` "npy", "label" (uint32) or "nuscenes" (uint8
    .bin); points as float32 .bin with 4 fields."""
    for stem, (gt, pred, points) in scans.items():
        for role, labels in (("gt", gt), ("pred", pred)):
            if labels is None:
                continue
            folder = root / role
            folder.mkdir(parents=True, exist_ok=True)
            labels = np.asarray(labels)
            if fmt == "npy":
                np.save(folder / f"{stem}.npy", labels.astype(np.int64))
            elif fmt == "label":
                labels.astype("<u4").tofile(folder / f"{stem}.label")
            else:
                labels.astype(np.uint8).tofile(folder / f"{stem}.bin")
        if points is not None:
            (root / "points").mkdir(parents=True, exist_ok=True)
            points = np.asarray(points, np.float32)
            if points.shape[1] < 4:
                points = np.hstack([points, np.zeros((len(points), 4 - points.shape[1]), np.float32)])
            points.astype("<f4").tofile(root / "points" / f"{stem}.bin")
    return root


def run(rpx, root: Path, *flags: str, points: bool = True):
    args = ["eval", "segmentation3d", "--pred-dir", root / "pred", "--gt-dir", root / "gt"]
    if points:
        args += ["--points-dir", root / "points"]
    return rpx([*args, *flags])


def report(rpx, root: Path, *flags: str, points: bool = True) -> dict:
    done = run(rpx, root, *flags, points=points)
    assert done.exit_code == 0, done.stderr
    return done.json


# --- autoware-ml's test vectors (metrics/tests/test_segmentation3d.py) -----------------------


def test_autoware_per_class_values_are_exact(rpx, tmp_path: Path) -> None:
    """pred [0, 1, 1] vs GT [0, 0, 1]: class 0 TP 1 FN 1, class 1 TP 1 FP 1."""
    root = write_scans(tmp_path, {"s": ([0, 0, 1], [0, 1, 1], None)})
    dataset = report(rpx, root, "--num-classes", "2", points=False)["dataset"]
    car, road = dataset["per_class"]["0"], dataset["per_class"]["1"]
    assert (car["iou"], car["recall"], car["precision"]) == (0.5, 0.5, 1.0)
    assert car["f1"] == pytest.approx(2 / 3, abs=1e-15)
    assert (road["iou"], road["recall"], road["precision"]) == (0.5, 1.0, 0.5)
    assert road["f1"] == pytest.approx(2 / 3, abs=1e-15)
    assert dataset["acc"] == pytest.approx(2 / 3, abs=1e-15)


def test_autoware_range_buckets_are_exact(rpx, tmp_path: Path) -> None:
    """A right point at 10 m and a wrong one at 60 m, both GT class 0."""
    root = write_scans(tmp_path, {"s": ([0, 0], [0, 1], [[10, 0, 0], [60, 0, 0]])})
    dataset = report(rpx, root, "--num-classes", "2", "--range", "0:50", "--range", "50:90")["dataset"]
    assert dataset["acc"] == 0.5
    assert dataset["acc_0m_50m"] == 1.0
    assert dataset["acc_50m_90m"] == 0.0
    assert dataset["per_class"]["0"]["iou_0m_50m"] == 1.0
    assert dataset["n_labelled_0m_50m"] == dataset["n_labelled_50m_90m"] == 1


def test_autoware_macro_means_with_an_ignored_point(rpx, tmp_path: Path) -> None:
    """preds [0,1,2,1,2,0] vs GT [0,1,2,0,2,-1] (-1 ignored)."""
    root = write_scans(tmp_path, {"s": ([0, 1, 2, 0, 2, -1], [0, 1, 2, 1, 2, 0], None)})
    result = report(rpx, root, "--num-classes", "3", points=False)
    dataset = result["dataset"]
    assert dataset["acc"] == pytest.approx(4 / 5, abs=1e-15)
    assert dataset["miou"] == pytest.approx(2 / 3, abs=1e-15)
    assert dataset["mprecision"] == pytest.approx(5 / 6, abs=1e-15)
    assert dataset["mrecall"] == pytest.approx(5 / 6, abs=1e-15)
    assert dataset["mf1"] == pytest.approx(7 / 9, abs=1e-15)
    row = result["rows"][0]
    assert (row["n_points"], row["n_labelled"]) == (6, 5)
    assert row["miou"] == pytest.approx(2 / 3, abs=1e-15) and row["acc"] == pytest.approx(0.8)


def test_autoware_a_class_without_support_is_null_and_left_out(rpx, tmp_path: Path) -> None:
    root = write_scans(tmp_path, {"s": ([0, 1], [0, 1], None)})
    dataset = report(rpx, root, "--num-classes", "3", points=False)["dataset"]
    assert dataset["miou"] == 1.0
    assert dataset["per_class"]["2"] == {"iou": None, "precision": None, "recall": None,
                                         "f1": None, "support": 0}
    semantickitti = report(rpx, root, "--num-classes", "3", "--protocol", "semantickitti",
                           points=False)["dataset"]
    assert semantickitti["per_class"]["2"]["iou"] == 0.0
    assert semantickitti["miou"] == pytest.approx(2 / 3, abs=1e-15)


# --- SemanticKITTI's np_ioueval (auxiliary/np_ioueval.py, its __main__ example) --------------


def np_ioueval_example() -> tuple[np.ndarray, np.ndarray]:
    """Two 2x2 squares on a 7x7 grid, overlapping in one cell; 2 classes, nothing ignored."""
    label = np.zeros((7, 7), dtype=np.int64)
    argmax = np.zeros((7, 7), dtype=np.int64)
    label[2:4, 2:4] = 1
    argmax[3:5, 3:5] = 1
    return label.ravel(), argmax.ravel()


def test_semantickitti_np_ioueval_example(rpx, tmp_path: Path) -> None:
    label, argmax = np_ioueval_example()
    root = write_scans(tmp_path, {"grid": (label.reshape(7, 7), argmax.reshape(7, 7), None)})
    result = report(rpx, root, "--num-classes", "2", "--protocol", "semantickitti", points=False)
    assert result["params"]["protocol"] == "semantickitti"
    dataset = result["dataset"]
    assert dataset["miou"] == pytest.approx(0.5089285714285714, abs=1e-15)
    assert dataset["acc"] == pytest.approx(0.8775510204081632, abs=1e-15)
    assert dataset["per_class"]["0"]["iou"] == 42 / 48
    assert dataset["per_class"]["1"]["iou"] == pytest.approx(1 / 7, abs=1e-15)
    assert result["rows"][0]["miou"] == dataset["miou"]


def test_the_protocols_differ_on_an_absent_class_and_on_ignored_predictions(rpx, tmp_path: Path) -> None:
    """The worked example of docs/segmentation3d.md: 3 classes, class 2 absent from both
    sides; class 0 ignored, and one GT-1 point predicted 0."""
    label, argmax = np_ioueval_example()
    root = write_scans(tmp_path / "absent", {"grid": (label, argmax, None)})
    autoware = report(rpx, root, "--num-classes", "3", points=False)["dataset"]
    semantickitti = report(rpx, root, "--num-classes", "3", "--protocol", "semantickitti",
                           points=False)["dataset"]
    assert autoware["miou"] == pytest.approx((42 / 48 + 1 / 7) / 2, abs=1e-15)
    assert semantickitti["miou"] == pytest.approx((42 / 48 + 1 / 7 + 0) / 3, abs=1e-15)
    assert autoware["acc"] == semantickitti["acc"] == pytest.approx(43 / 49, abs=1e-15)

    # GT [1, 1, 2, 2, 0], pred [1, 0, 2, 1, 2], class 0 ignored
    root = write_scans(tmp_path / "ignored", {"s": ([1, 1, 2, 2, 0], [1, 0, 2, 1, 2], None)})
    flags = ("--num-classes", "3", "--ignore-index", "0")
    autoware = report(rpx, root, *flags, points=False)["dataset"]
    semantickitti = report(rpx, root, *flags, "--protocol", "semantickitti", points=False)["dataset"]
    assert autoware["acc"] == 2 / 4  # the point predicted 0 counts as wrong
    assert semantickitti["acc"] == 2 / 3  # ... and leaves np_ioueval's denominator
    assert autoware["miou"] == semantickitti["miou"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert autoware["confusion"]["matrix"][1][0] == 1
    ignored = {"iou": None, "precision": None, "recall": None, "f1": None, "support": 0}
    assert autoware["per_class"]["0"] == semantickitti["per_class"]["0"] == ignored


# --- a plain per-class loop on generated scans --------------------------------------------


def reference(scans, *, classes, ignore, ranges, protocol, norm="xy"):
    """The dataset figures, rows and aggregate, by Python loops over points and classes."""
    tails = [""] + [f"_{low:g}m_{'inf' if high is None else f'{high:g}m'}" for low, high in ranges]
    pooled = {tail: Counter() for tail in tails}
    rows = []
    for gt, pred, points in scans:
        counts = {tail: Counter() for tail in tails}
        for g, p, point in zip(gt.tolist(), pred.tolist(), points.astype(np.float64).tolist(),
                               strict=True):
            if g in ignore:
                continue
            x, y, z = point[:3]
            distance = math.hypot(x, y) if norm == "xy" else math.sqrt(x * x + y * y + z * z)
            counts[""][g, p] += 1
            for (low, high), tail in zip(ranges, tails[1:], strict=True):
                if distance >= low and (high is None or distance < high):
                    counts[tail][g, p] += 1
        row = {}
        for tail in tails:
            pooled[tail].update(counts[tail])
            scan_classes = sorted(set(classes) | {g for g, _ in counts[tail]} |
                                  {p for _, p in counts[tail]})
            figures = scores(counts[tail], scan_classes, ignore, classes, protocol)
            row[f"miou{tail}"], row[f"acc{tail}"] = figures["miou"], figures["acc"]
        rows.append(row)
    dataset, per_class = {}, {}
    for tail in tails:
        figures = scores(pooled[tail], classes, ignore, classes, protocol)
        for key in ("miou", "fwiou", "acc", "mprecision", "mrecall", "mf1"):
            dataset[key + tail] = figures[key]
        dataset["n_labelled" + tail] = sum(pooled[tail].values())
        for c, values in figures["per_class"].items():
            per_class.setdefault(str(c), {}).update({k + tail: v for k, v in values.items()})
    aggregate = {}
    for key in rows[0]:
        present = [row[key] for row in rows if row[key] is not None]
        aggregate[key] = sum(present) / len(present) if present else None
    return dataset, per_class, rows, aggregate


def scores(counts: Counter, axis: list[int], ignore, classes: list[int], protocol: str) -> dict:
    total = sum(counts.values())
    per_class, averaged = {}, []
    tp_all = predicted_all = 0
    for c in axis:
        if c in ignore or (protocol == "semantickitti" and c not in classes):
            per_class[c] = {"iou": None, "precision": None, "recall": None, "f1": None,
                            "support": 0}
            continue
        tp = counts[c, c]
        support = sum(n for (g, _), n in counts.items() if g == c)
        predicted = sum(n for (_, p), n in counts.items() if p == c)
        iou = tp / (support + predicted - tp) if support + predicted - tp else 0.0
        precision = tp / predicted if predicted else 0.0
        recall = tp / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        values = {"iou": iou, "precision": precision, "recall": recall, "f1": f1}
        if total == 0 or (protocol == "autoware" and support == 0):
            values = dict.fromkeys(values)
        else:
            averaged.append((support, iou, precision, recall, f1))
            tp_all += tp
            predicted_all += predicted
        per_class[c] = {**values, "support": support}
    if total == 0 or not averaged:
        figures = dict.fromkeys(("miou", "fwiou", "acc", "mprecision", "mrecall", "mf1"))
    else:
        correct = sum(n for (g, p), n in counts.items() if g == p)
        figures = {
            "miou": sum(a[1] for a in averaged) / len(averaged),
            "fwiou": sum(a[0] / total * a[1] for a in averaged),
            "acc": correct / total if protocol == "autoware" else
                   (tp_all / predicted_all if predicted_all else 0.0),
            "mprecision": sum(a[2] for a in averaged) / len(averaged),
            "mrecall": sum(a[3] for a in averaged) / len(averaged),
            "mf1": sum(a[4] for a in averaged) / len(averaged),
        }
    return {**figures, "per_class": per_class}


def generated(seed: int, n_scans: int = 5):
    rng = np.random.default_rng(seed)
    scans = []
    for index in range(n_scans):
        n = int(rng.integers(50, 400))
        gt = rng.choice([-1, 0, 1, 2, 3, 4, 5], size=n, p=[.05, .1, .3, .2, .2, .1, .05])
        if index == 1:
            gt[gt == 3] = 2  # a class absent from one scan
        pred = np.where(rng.random(n) < 0.7, gt, rng.integers(-2, 8, n))
        pred[pred == -1] = 4
        radius = rng.uniform(0, 75, n)
        if index == 2:
            radius = rng.uniform(0, 15, n)  # nothing beyond 15 m: empty buckets
        angle = rng.uniform(-np.pi, np.pi, n)
        points = np.stack([radius * np.cos(angle), radius * np.sin(angle),
                           rng.normal(0, 3, n), rng.random(n)], axis=1).astype(np.float32)
        scans.append((gt, pred, points))
    return scans


@pytest.mark.parametrize("protocol", ["autoware", "semantickitti"])
@pytest.mark.parametrize("norm", ["xy", "xyz"])
def test_equals_a_plain_per_class_loop(rpx, tmp_path: Path, protocol: str, norm: str) -> None:
    scans = generated(3 if norm == "xy" else 4)
    root = write_scans(tmp_path, {f"s{i}": scan for i, scan in enumerate(scans)})
    ranges = [(0.0, 20.0), (10.0, 40.0), (40.0, None)]
    result = report(rpx, root, "--num-classes", "6", "--ignore-index", "-1", "--ignore-index", "5",
                    "--protocol", protocol, "--range-norm", norm, "--range", "0:20",
                    "--range", "10:40", "--range", "40:")
    dataset, per_class, rows, aggregate = reference(
        scans, classes=list(range(6)), ignore={-1, 5}, ranges=ranges, protocol=protocol, norm=norm)
    check_close(result, dataset, per_class, rows, aggregate)
    assert result["dataset"]["confusion"]["columns"][-1] == "other"  # predictions 6, 7, -2


def test_equals_the_loop_without_num_classes(rpx, tmp_path: Path) -> None:
    """Classes are then the non-negative labels that appear on either side."""
    scans = generated(7)
    root = write_scans(tmp_path, {f"s{i}": scan for i, scan in enumerate(scans)})
    result = report(rpx, root, "--range", "0:30", "--range", "30:")
    labels = sorted({int(v) for gt, pred, _ in scans for v in (*gt, *pred) if v >= 0})
    dataset, per_class, rows, aggregate = reference(
        scans, classes=labels, ignore={-1}, ranges=[(0.0, 30.0), (30.0, None)], protocol="autoware")
    check_close(result, dataset, per_class, rows, aggregate)
    assert result["dataset"]["confusion"]["labels"] == [str(c) for c in labels]


def check_close(result: dict, dataset: dict, per_class: dict, rows: list, aggregate: dict) -> None:
    def close(got, expected, where):
        if expected is None or got is None:
            assert got is expected, where
        else:
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), where

    for key, value in dataset.items():
        close(result["dataset"][key], value, key)
    assert set(result["dataset"]["per_class"]) == set(per_class)
    for name, values in per_class.items():
        for key, value in values.items():
            close(result["dataset"]["per_class"][name][key], value, f"{name}.{key}")
    for got, expected in zip(result["rows"], rows, strict=True):
        for key, value in expected.items():
            close(got[key], value, f"{got['stem']}.{key}")
    for key, value in aggregate.items():
        close(result["aggregate"][key], value, f"aggregate.{key}")


# --- formats and label maps -----------------------------------------------------------------


def test_semantickitti_labels_use_the_low_16_bits_and_the_label_map(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    raw = np.array([0, 1, 10, 40, 48, 252])
    mapping = {0: 0, 1: 0, 10: 1, 40: 2, 48: 3, 252: 1}
    gt_raw = rng.choice(raw, 300)
    pred_raw = np.where(rng.random(300) < 0.8, gt_raw, rng.choice(raw, 300))
    instance = rng.integers(0, 50, 300).astype(np.uint32) << 16
    points = rng.normal(0, 20, (300, 3))
    write_scans(tmp_path / "kitti", {"000000": (gt_raw | instance, pred_raw, points)}, fmt="label")
    (tmp_path / "map.json").write_text(json.dumps({str(k): v for k, v in mapping.items()}))
    lookup = np.vectorize(mapping.get)
    write_scans(tmp_path / "plain", {"000000": (lookup(gt_raw), lookup(pred_raw), points)})
    flags = ("--num-classes", "4", "--ignore-index", "0", "--range", "0:25", "--range", "25:")
    mapped = report(rpx, tmp_path / "kitti", *flags, "--label-map", str(tmp_path / "map.json"))
    plain = report(rpx, tmp_path / "plain", *flags)
    assert mapped["dataset"] == plain["dataset"]
    assert mapped["params"]["label_map"] == {"0": 0, "1": 0, "10": 1, "40": 2, "48": 3, "252": 1}
    assert [r["miou"] for r in mapped["rows"]] == [r["miou"] for r in plain["rows"]]


def test_nuscenes_bin_labels_and_five_point_fields(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    gt = rng.integers(0, 17, 200)
    pred = np.where(rng.random(200) < 0.7, gt, rng.integers(0, 17, 200))
    points = rng.normal(0, 25, (200, 5)).astype(np.float32)
    nus = write_scans(tmp_path / "nus", {"scan": (gt, pred, None)}, fmt="nuscenes")
    (nus / "points").mkdir()
    points.tofile(nus / "points" / "scan.bin")
    npy = write_scans(tmp_path / "npy", {"scan": (gt, pred, points[:, :4])})
    flags = ("--ignore-index", "0", "--num-classes", "17", "--range", "0:30", "--range", "30:")
    got = report(rpx, nus, *flags, "--label-format", "nuscenes", "--point-fields", "5")
    assert got["dataset"] == report(rpx, npy, *flags)["dataset"]
    assert got["params"]["label_format"] == "nuscenes" and got["params"]["point_fields"] == 5


def test_distances_are_float64_not_float32(rpx, tmp_path: Path) -> None:
    """A point at 49.9999999 m is in [0, 50) here; autoware-ml's float32 norm rounds it to
    50.0 and puts it in [50, 90)."""
    root = tmp_path
    (root / "gt").mkdir()
    (root / "pred").mkdir()
    (root / "points").mkdir()
    np.save(root / "gt" / "s.npy", np.array([0, 1]))
    np.save(root / "pred" / "s.npy", np.array([0, 1]))
    np.save(root / "points" / "s.npy", np.array([[49.9999999, 0.0], [50.0, 0.0]]))
    assert np.float32(49.9999999) == 50.0
    dataset = report(rpx, root, "--range", "0:50", "--range", "50:90")["dataset"]
    assert dataset["n_labelled_0m_50m"] == 1 and dataset["n_labelled_50m_90m"] == 1
    assert dataset["per_class"]["0"]["support_0m_50m"] == 1


def test_python_api_takes_the_points_folder(tmp_path: Path) -> None:
    root = write_scans(tmp_path, {"s": ([0, 0], [0, 1], [[10, 0, 0], [60, 0, 0]])})
    result = evaluate_dirs("segmentation3d", root / "pred", root / "gt", points_dir=root / "points",
                           ranges=["0:50"], jobs=1)
    assert result["dataset"]["acc_0m_50m"] == 1.0
    assert "points_dir" in result["run_provenance"]["inputs"]


# --- invariants ---------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["autoware", "semantickitti"])
def test_a_perfect_prediction_scores_one(rpx, tmp_path: Path, protocol: str) -> None:
    scans = generated(9, 3)
    root = write_scans(tmp_path, {f"s{i}": (gt, np.where(gt < 0, 0, gt), pts)
                                  for i, (gt, _, pts) in enumerate(scans)})
    result = report(rpx, root, "--num-classes", "6", "--protocol", protocol,
                    "--range", "0:30", "--range", "30:")
    for tail in ("", "_0m_30m", "_30m_inf"):  # every class 0..5 occurs in the set
        for key in ("miou", "fwiou", "acc", "mprecision", "mrecall", "mf1"):
            assert result["dataset"][key + tail] == pytest.approx(1.0, abs=1e-15), key + tail
    assert all(row["acc"] == 1.0 for row in result["rows"])
    # per scan, semantickitti counts a class absent from the scan as 0
    assert all(row["miou"] == 1.0 for row in result["rows"]) == (protocol == "autoware")


def test_jobs_and_shards_agree(rpx, tmp_path: Path) -> None:
    scans = generated(11, 9)
    root = write_scans(tmp_path / "data", {f"s{i:02d}": scan for i, scan in enumerate(scans)})
    command = (f"eval segmentation3d --pred-dir {root / 'pred'} --gt-dir {root / 'gt'} "
               f"--points-dir {root / 'points'} --num-classes 6 --ignore-index -1 --ignore-index 5 "
               "--protocol semantickitti --range 0:25 --range 25:")
    assert_jobs_and_shards_agree(rpx, command, tmp_path)


def test_every_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 130k-point scan: its three files each go through the engine's buffer once."""
    from rpx_cli.io.filebuffer import FileBuffer

    rng = np.random.default_rng(0)
    n = 130_000
    gt = rng.integers(0, 20, n)
    root = write_scans(tmp_path, {"000000": (gt, np.where(rng.random(n) < 0.9, gt, 3),
                                             rng.normal(0, 30, (n, 3)))}, fmt="label")
    reads: Counter = Counter()
    original = FileBuffer.read

    def counting(self, path):
        reads[Path(path).relative_to(root).as_posix()] += 1
        return original(self, path)

    monkeypatch.setattr(FileBuffer, "read", counting)
    result = evaluate_dirs("segmentation3d", root / "pred", root / "gt", points_dir=root / "points",
                           ranges=["0:30", "30:"], jobs=1)
    assert reads == {"gt/000000.label": 1, "pred/000000.label": 1, "points/000000.bin": 1}
    assert result["rows"][0]["n_points"] == n


def test_no_rows_keeps_every_summary(rpx, tmp_path: Path) -> None:
    root = write_scans(tmp_path, {f"s{i}": scan for i, scan in enumerate(generated(5, 4))})
    whole = report(rpx, root, "--range", "0:30")
    bare = report(rpx, root, "--range", "0:30", "--no-rows")
    assert "rows" not in bare
    assert bare["dataset"] == whole["dataset"] and bare["aggregate"] == whole["aggregate"]


def test_a_missing_prediction_is_all_wrong_under_missing_empty(rpx, tmp_path: Path) -> None:
    root = write_scans(tmp_path, {"a": ([0, 1, 1], [0, 1, 1], None), "b": ([0, 1], None, None)})
    result = report(rpx, root, "--missing", "empty", points=False)
    assert result["rows"][1]["acc"] == 0.0 and result["rows"][1]["miou"] == 0.0
    assert result["dataset"]["acc"] == 3 / 5
    assert result["dataset"]["confusion"]["columns"] == ["0", "1", "other"]


def test_metric_info_names_the_protocol(rpx, tmp_path: Path) -> None:
    root = write_scans(tmp_path, {"a": ([0, 1], [0, 1], [[1, 1, 0], [70, 0, 0]])})
    result = report(rpx, root, "--num-classes", "2", "--protocol", "semantickitti", "--range", "0:50")
    assert "semantickitti" in result["metric_info"]["miou"]["description"]
    assert result["metric_info"]["miou_0m_50m"]["direction"] == "higher"
    assert result["aggregate"]["n_empty_0m_50m"] == 0
    listed = rpx(["metrics", "--task", "segmentation3d", "--json"])
    assert listed.exit_code == 0 and "miou" in listed.stdout and "mf1" in listed.stdout


# --- input errors (exit 1, the files named, no report) and usage errors (exit 2) ----------


def failing(rpx, root: Path, *flags: str, points: bool = True):
    out = root / "report.json"
    done = run(rpx, root, *flags, "-o", str(out), points=points)
    assert done.exit_code == 1, done.stderr
    assert not out.exists() and done.stdout == ""
    assert "Traceback" not in done.stderr
    return done.stderr


def test_label_counts_that_differ_name_both_files(rpx, tmp_path: Path) -> None:
    root = write_scans(tmp_path, {"s": ([0, 1, 1], [0, 1], None)})
    message = failing(rpx, root, points=False)
    assert re.search(r"pred[/\\]s\.npy has 2 labels, .*gt[/\\]s\.npy has 3", message)


def test_point_counts_that_differ_name_both_files(rpx, tmp_path: Path) -> None:
    root = write_scans(tmp_path, {"s": ([0, 1, 1], [0, 1, 1], [[1, 0, 0], [2, 0, 0]])})
    message = failing(rpx, root)
    assert re.search(r"points[/\\]s\.bin has 2 points, .*gt[/\\]s\.npy has 3 labels", message)


def test_a_missing_points_file_is_named(rpx, tmp_path: Path) -> None:
    root = write_scans(tmp_path, {"a": ([0], [0], [[1, 0, 0]]), "b": ([0], [0], None)})
    assert "no file with the stem 'b'" in failing(rpx, root)


@pytest.mark.parametrize("case, pattern", [
    ("label-size", r"gt[/\\]s\.label: 7 bytes is not a whole number of uint32 labels"),
    ("points-size", r"points[/\\]s\.bin: 20 bytes is not a whole number of points of 4 float32"),
    ("bin-labels", r"gt[/\\]s\.bin: a \.bin label file .* --label-format nuscenes"),
    ("float-labels", r"pred[/\\]s\.npy: labels have dtype float64"),
    ("label-shape", r"pred[/\\]s\.npy has 3 labels, .*gt[/\\]s\.npy has 6"),
    ("points-shape", r"points[/\\]s\.npy: points must have shape \(N, >= 2\)"),
    ("gt-range", r"gt[/\\]s\.npy: GT label 7 is outside --num-classes 3"),
    ("gt-negative", r"gt[/\\]s\.npy: GT holds negative label\(s\) \[-4\]"),
    ("unmapped", r"pred[/\\]s\.npy: label\(s\) 9 are not in --label-map"),
])
def test_bad_files_are_input_errors(rpx, tmp_path: Path, case: str, pattern: str) -> None:
    root = tmp_path
    for folder in ("gt", "pred", "points"):
        (root / folder).mkdir()
    gt, pred, points = np.array([0, 1, 2]), np.array([0, 1, 2]), np.zeros((3, 3))
    flags: list[str] = []
    if case == "label-size":
        (root / "gt" / "s.label").write_bytes(b"\0" * 7)
        np.array([0, 1], "<u4").tofile(root / "pred" / "s.label")
        gt = pred = None
    elif case == "points-size":
        (root / "points" / "s.bin").write_bytes(b"\0" * 20)
        points = None
    elif case == "bin-labels":
        gt.astype(np.uint8).tofile(root / "gt" / "s.bin")
        pred.astype(np.uint8).tofile(root / "pred" / "s.bin")
        gt = pred = None
    elif case == "float-labels":
        pred = pred.astype(np.float64)
    elif case == "label-shape":
        gt, points = np.zeros((2, 3), np.int64), np.zeros((6, 3))
    elif case == "points-shape":
        points = np.zeros((3, 1))
    elif case == "gt-range":
        gt, flags = np.array([0, 7, 2]), ["--num-classes", "3"]
    elif case == "gt-negative":
        gt = np.array([0, -4, 2])
    elif case == "unmapped":
        pred = np.array([0, 9, 2])
        (root / "map.json").write_text('{"0": 0, "1": 1, "2": 2}')
        flags = ["--label-map", str(root / "map.json")]
    if gt is not None:
        np.save(root / "gt" / "s.npy", gt)
    if pred is not None:
        np.save(root / "pred" / "s.npy", pred)
    if points is not None:
        np.save(root / "points" / "s.npy", points)
    message = failing(rpx, root, *flags)
    assert re.search(pattern, message), message


@pytest.mark.parametrize("text, message", [
    ("{not json", "label map: not valid JSON"),
    ('{"car": 1}', "key 'car' is not an integer label"),
    ('{"1": "car"}', "is 'car', not an integer"),
    ("[1, 2]", "expected a JSON object"),
])
def test_a_bad_label_map_is_an_input_error(rpx, tmp_path: Path, text: str, message: str) -> None:
    root = write_scans(tmp_path, {"s": ([0], [0], None)})
    (root / "map.json").write_text(text)
    done = run(rpx, root, "--label-map", str(root / "map.json"), points=False)
    assert done.exit_code == 1 and "map.json" in done.stderr and message in done.stderr


@pytest.mark.parametrize("flags, message", [
    (["--range", "0:50"], "give the point clouds with --points-dir"),
    (["--protocol", "semantickitti"], "give --num-classes or --class-names"),
    (["--range-norm", "xyz", "--point-fields", "2"], "has no z"),
    (["--range", "0:x"], "expected numbers"),
    (["--protocol", "nuscenes"], "--protocol: 'nuscenes' is not one of autoware, semantickitti"),
])
def test_usage_errors_exit_2(rpx, tmp_path: Path, flags: list[str], message: str) -> None:
    root = write_scans(tmp_path, {"s": ([0], [0], None)})
    done = run(rpx, root, *flags, points=False)
    assert done.exit_code == 2 and message in done.stderr, done.stderr


def test_the_same_range_twice_is_a_usage_error(rpx, tmp_path: Path) -> None:
    root = write_scans(tmp_path, {"s": ([0], [0], [[1, 0, 0]])})
    done = run(rpx, root, "--range", "0:50", "--range", "0:50.0")
    assert done.exit_code == 2 and "twice" in done.stderr


# --- the documentation's commands run on the committed fixtures ---------------------------


def shell_blocks(text: str) -> list[str]:
    """The lines of the ```sh blocks of a Markdown text."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```sh" if not inside else False
        elif inside and line.strip():
            lines.append(line.strip())
    return lines


def documented_sessions() -> dict[str, list[str]]:
    """The shell lines of docs/segmentation3d.md, and the README's segmentation3d lines, each
    run in order as one session (tests/test_docs_commands.py runs every page too)."""
    readme = [line for line in shell_blocks((ROOT / "README.md").read_text())
              if line.startswith("rpx eval segmentation3d")]
    return {"docs/segmentation3d.md": shell_blocks((ROOT / "docs" / "segmentation3d.md").read_text()),
            "README.md": readme}


def test_the_docs_show_the_commands() -> None:
    sessions = documented_sessions()
    commands = [line for lines in sessions.values() for line in lines
                if line.startswith("rpx eval segmentation3d")]
    assert len(commands) >= 6 and sessions["README.md"]
    assert any("--protocol semantickitti" in c for c in commands)
    assert any("--label-format nuscenes" in c for c in commands)


@pytest.mark.parametrize("doc", sorted(documented_sessions()))
def test_documented_commands_run_on_the_fixtures(doc: str, tmp_path: Path) -> None:
    """Every shell line, in order, from a copy of the repository's fixtures, as a user
    would type it (``| jq`` included when jq is installed)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    shutil.copytree(ROOT / "fixtures" / "segmentation3d", tmp_path / "fixtures" / "segmentation3d")
    jq = shutil.which("jq") is not None
    for line in documented_sessions()[doc]:
        assert shlex.split(line)[0] in ("rpx", "jq"), line
        if not jq:
            if line.startswith("jq"):
                continue
            line = line.split(" | jq")[0]
        done = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{doc}: {line}\n{done.stderr}"
