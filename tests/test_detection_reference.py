"""``rpx eval detection`` rows, ``aggregate``, ``dataset.pooled`` and ``dataset.confusion``
against plain per-image Python loops written here, from the rules in the README and in
``rpx_cli/tasks/detection.py``'s docstring. Nothing is imported from ``rpx_cli``: the IoU,
the greedy matching and the optimal assignment (brute force over permutations) are the
test's own.

(COCO AP is compared with pycocotools in test_detection.py and test_coco_ops.py.)
"""

from __future__ import annotations

import math
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest
from helpers import box, dirs, write_json_pair

LABELS = ("bus", "car", "cat", "dog")
BACKGROUND = "background"


# --- the reference ------------------------------------------------------------------------


def iou(a: list[float], b: list[float]) -> float:
    """Intersection over union of two [x1, y1, x2, y2] boxes (positive area)."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def ioa(det: list[float], region: list[float]) -> float:
    """Intersection over the detection's own area (how COCO scores a crowd region)."""
    width = min(det[2], region[2]) - max(det[0], region[0])
    height = min(det[3], region[3]) - max(det[1], region[1])
    if width <= 0 or height <= 0:
        return 0.0
    return width * height / ((det[2] - det[0]) * (det[3] - det[1]))


def kept(pred: list[dict], conf: float) -> list[dict]:
    return [d for d in pred if d["score"] >= conf]


def greedy_counts(gt: list[dict], pred: list[dict], iou_t: float, conf: float) -> tuple[int, int, int]:
    """(TP, FP, FN) of one image: detections by descending score (Python's sort is stable:
    ties keep file order) each take the unmatched GT of their label with the best IoU
    (ties: the last GT), accepted when IoU >= threshold. No crowd GT here."""
    dets = sorted(kept(pred, conf), key=lambda d: -d["score"])
    taken = [False] * len(gt)
    tp = 0
    for d in dets:
        best, chosen = -1.0, None
        for j, g in enumerate(gt):
            if taken[j] or str(g["label"]) != str(d["label"]):
                continue
            overlap = iou(d["bbox"], g["bbox"])
            if overlap >= best:
                best, chosen = overlap, j
        if chosen is not None and best >= iou_t:
            taken[chosen] = True
            tp += 1
    return tp, len(dets) - tp, len(gt) - tp


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Both empty: 1/1/1; any other 0/0: 0."""
    if tp + fp + fn == 0:
        return 1.0, 1.0, 1.0
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def optimal_pairs(dets: list[dict], gt: list[dict]) -> list[tuple[int, int]]:
    """The one-to-one (detection, GT) pairing with the largest total IoU, class-agnostic,
    by trying every pairing of min(#dets, #GT) pairs. Refuses data where two pairings tie
    (up to rounding) but would fill different cells: the rule would not decide them."""
    table = [[iou(d["bbox"], g["bbox"]) for g in gt] for d in dets]
    if len(dets) <= len(gt):
        pairings = [list(enumerate(cols)) for cols in permutations(range(len(gt)), len(dets))]
    else:
        pairings = [[(r, j) for j, r in enumerate(rows)]
                    for rows in permutations(range(len(dets)), len(gt))]
    totals = [math.fsum(table[i][j] for i, j in pairing) for pairing in pairings]
    best = max(totals)
    winners = [p for p, total in zip(pairings, totals, strict=True) if total >= best - 1e-9]
    positive = {tuple(sorted((i, j) for i, j in p if table[i][j] > 0)) for p in winners}
    assert len(positive) == 1, "test data with tied optimal assignments: change the seed"
    return winners[0]


def confusion_cells(gt: list[dict], pred: list[dict], iou_t: float, conf: float) -> dict:
    """Aquarium's cells of one image: {(GT class or background, predicted class or
    background): count}. Crowd GT is left out of the matching; an unmatched detection on a
    crowd region of its own class (IoA >= threshold) is ignored, as COCO ignores it."""
    dets = kept(pred, conf)
    regular = [g for g in gt if not g.get("iscrowd")]
    crowd = [g for g in gt if g.get("iscrowd")]
    cells: dict[tuple[str, str], int] = {}

    def count(row: str, column: str) -> None:
        cells[row, column] = cells.get((row, column), 0) + 1

    matched_d, matched_g = set(), set()
    if dets and regular:
        for i, j in optimal_pairs(dets, regular):
            if iou(dets[i]["bbox"], regular[j]["bbox"]) >= iou_t:
                matched_d.add(i)
                matched_g.add(j)
                count(str(regular[j]["label"]), str(dets[i]["label"]))
    for j, g in enumerate(regular):
        if j not in matched_g:
            count(str(g["label"]), BACKGROUND)
    for i, d in enumerate(dets):
        if i not in matched_d and not any(ioa(d["bbox"], c["bbox"]) >= iou_t
                                          and c["label"] == d["label"] for c in crowd):
            count(BACKGROUND, str(d["label"]))
    return cells


def per_class(cells: dict, label: str) -> dict:
    """precision = M[c,c] / column sum, recall = M[c,c] / row sum; 0/0 = 0."""
    diagonal = cells.get((label, label), 0)
    column = sum(n for (_, col), n in cells.items() if col == label)
    row = sum(n for (r, _), n in cells.items() if r == label)
    precision = diagonal / column if column else 0.0
    recall = diagonal / row if row else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "support": row}


# --- data -----------------------------------------------------------------------------------


def frames(seed: int, n_images: int = 30) -> list[tuple[str, list, list]]:
    """Random images: overlapping GT boxes of several classes, detections jittered around
    them (sometimes with another class), free false positives, scores with ties (one
    decimal), images with an empty GT file and images without detections; at most six
    boxes a side so the brute-force assignment stays small."""
    rng = np.random.default_rng(seed)
    out = []
    for index in range(n_images):
        kind = index % 6  # 0: empty GT file; 1: no detection
        gt = []
        for _ in range(0 if kind == 0 else int(rng.integers(1, 6))):
            x, y = rng.uniform(0, 80, 2)
            w, h = rng.uniform(8, 45, 2)
            gt.append(box(str(rng.choice(LABELS)), [x, y, x + w, y + h]))
        pred = []
        if kind != 1:
            for g in gt:
                for _ in range(int(rng.integers(0, 3))):
                    x1, y1, x2, y2 = np.asarray(g["bbox"]) + rng.normal(0, 4, 4)
                    label = g["label"] if rng.random() < 0.7 else str(rng.choice(LABELS))
                    pred.append(box(label, [x1, y1, max(x2, x1 + 2), max(y2, y1 + 2)],
                                    round(float(rng.random()), 1)))
            for _ in range(int(rng.integers(0, 3))):
                x, y = rng.uniform(0, 100, 2)
                w, h = rng.uniform(5, 40, 2)
                pred.append(box(str(rng.choice(LABELS)), [x, y, x + w, y + h],
                                round(float(rng.random()), 1)))
        rng.shuffle(pred)
        out.append((f"img{index:03d}", gt, pred[:6]))
    return out + HAND_FRAMES


# Exact cases the random data is unlikely to hit, checked by the same loops (and by hand
# in the tests below):
# - "tie_gt": a detection exactly between two GT boxes (IoU 1/3 with each) takes the last
#   one, leaving the first for the next detection;
# - "tie_score": two detections with one score: the one listed first picks first.
TIE_GT = ([box("car", [0, 0, 10, 10]), box("car", [10, 0, 20, 10])],
          [box("car", [5, 0, 15, 10], 0.9), box("car", [0, 0, 10, 10], 0.8)])
TIE_SCORE = ([box("dog", [0, 0, 10, 10]), box("dog", [4, 0, 14, 10])],
             [box("dog", [3, 0, 13, 10], 0.5), box("dog", [5, 0, 15, 10], 0.5)])
HAND_FRAMES = [("tie_gt", *TIE_GT), ("tie_score", *TIE_SCORE)]


def reference_report(data, iou_t: float, conf: float, skip_empty_gt: bool) -> dict:
    rows, totals, cells = [], [0, 0, 0], {}
    for _, gt, pred in sorted(data, key=lambda frame: frame[0]):
        if skip_empty_gt and not gt:
            rows.append(None)
            continue
        tp, fp, fn = greedy_counts(gt, pred, iou_t, conf)
        rows.append({"tp": tp, "fp": fp, "fn": fn, "n_gt": len(gt), "n_pred": len(kept(pred, conf)),
                     **dict(zip(("precision", "recall", "f1"), prf(tp, fp, fn), strict=True))})
        totals = [a + b for a, b in zip(totals, (tp, fp, fn), strict=True)]
        for cell, n in confusion_cells(gt, pred, iou_t, conf).items():
            cells[cell] = cells.get(cell, 0) + n
    used = [row for row in rows if row is not None]
    aggregate = {key: sum(row[key] for row in used) / len(used) for key in ("precision", "recall", "f1")}
    pooled = {**dict(zip(("precision", "recall", "f1"), prf(*totals), strict=True)),
              **dict(zip(("tp", "fp", "fn"), totals, strict=True))}
    # the pooled figures at other confidence thresholds: the same loop, thresholds 0, 0.3, ...
    by_confidence = {}
    for threshold in (0.0, 0.3, 0.5, 0.7, 1.0):
        counts = [greedy_counts(gt, pred, iou_t, threshold) for _, gt, pred in data
                  if gt or not skip_empty_gt]
        tp, fp, fn = (sum(c[i] for c in counts) for i in range(3))
        by_confidence[threshold] = {"tp": tp, "fp": fp,
                                    **dict(zip(("precision", "recall", "f1"), prf(tp, fp, fn), strict=True))}
    return {"rows": rows, "aggregate": aggregate, "pooled": pooled, "cells": cells,
            "by_confidence": by_confidence}


# --- the comparison ---------------------------------------------------------------------------


def run_detection(rpx, root: Path, data, flags: str) -> dict:
    for stem, gt, pred in data:
        write_json_pair(root, stem, gt, pred)
    run = rpx(f"eval detection {dirs(root)} --metrics rows,pooled,confusion {flags}")
    assert run.exit_code == 0, run.stderr
    return run.json


def assert_matches_reference(report: dict, expected: dict) -> None:
    close = {"rel": 1e-12, "abs": 1e-12}
    assert len(report["rows"]) == len(expected["rows"])
    for row, want in zip(report["rows"], expected["rows"], strict=True):
        if want is None:  # left out by --skip-empty-gt
            assert all(row[key] is None for key in ("precision", "recall", "f1", "tp", "fp", "fn"))
            continue
        for key, value in want.items():
            assert row[key] == pytest.approx(value, **close), (row["stem"], key)
    for key, value in expected["aggregate"].items():
        assert report["aggregate"][key] == pytest.approx(value, **close), key
    pooled = dict(report["dataset"]["pooled"])
    curve = pooled.pop("by_confidence")
    assert pooled == pytest.approx(expected["pooled"], **close)
    checked = [t for t in curve["conf_threshold"] if t in expected["by_confidence"]]
    assert len(checked) >= 4, checked
    for i, threshold in enumerate(curve["conf_threshold"]):
        if threshold in expected["by_confidence"]:
            want = expected["by_confidence"][threshold]
            assert (curve["tp"][i], curve["fp"][i]) == (want["tp"], want["fp"]), threshold
            assert [curve[k][i] for k in ("precision", "recall", "f1")] == pytest.approx(
                [want[k] for k in ("precision", "recall", "f1")], **close)
    confusion = report["dataset"]["confusion"]
    labels = confusion["labels"]
    assert labels[-1] == BACKGROUND
    matrix = np.array(confusion["matrix"])
    assert matrix.shape == (len(labels), len(labels))
    got = {(labels[r], labels[c]): int(matrix[r, c]) for r, c in zip(*np.nonzero(matrix), strict=True)}
    assert got == expected["cells"]
    assert set(confusion["per_class"]) == set(labels[:-1])
    for label, figures in confusion["per_class"].items():
        assert figures == pytest.approx(per_class(expected["cells"], label), **close), label


@pytest.mark.parametrize(("seed", "iou_t", "conf", "skip"), [
    (0, 0.5, 0.0, False), (1, 0.5, 0.5, False), (2, 0.3, 0.0, False), (3, 0.75, 0.3, False),
    (4, 0.3, 0.5, True), (5, 0.5, 0.0, True),
])
def test_rows_pooled_and_confusion_equal_the_loops(rpx, tmp_path: Path, seed: int, iou_t: float,
                                                   conf: float, skip: bool) -> None:
    data = frames(seed)
    flags = f"--iou-threshold {iou_t} --conf-threshold {conf}" + (" --skip-empty-gt" if skip else "")
    report = run_detection(rpx, tmp_path, data, flags)
    assert_matches_reference(report, reference_report(data, iou_t, conf, skip))


def test_the_generated_data_has_what_the_rules_are_about() -> None:
    """Guard for the test above: the data reaches every case the rules name."""
    data = frames(0)
    scores = [d["score"] for _, _, pred in data for d in pred]
    assert len(set(scores)) < len(scores)  # score ties
    assert 0.5 in scores and 0.3 in scores  # detections exactly at the confidence thresholds
    assert any(not gt for _, gt, _ in data) and any(gt and not pred for _, gt, pred in data)
    assert len({g["label"] for _, gt, _ in data for g in gt}) == len(LABELS)
    greedy_vs_optimal = misclassified = contested = 0
    for _, gt, pred in data:
        cells = confusion_cells(gt, pred, 0.5, 0.0)
        misclassified += sum(n for (r, c), n in cells.items() if BACKGROUND not in (r, c) and r != c)
        tp, _, _ = greedy_counts(gt, pred, 0.5, 0.0)
        greedy_vs_optimal += tp != sum(n for (r, c), n in cells.items() if r == c != BACKGROUND)
        contested += any(sum(iou(d["bbox"], g["bbox"]) >= 0.5 for g in gt) > 1 for d in pred)
    assert misclassified and greedy_vs_optimal and contested


# --- by hand ----------------------------------------------------------------------------------


def test_an_iou_tie_goes_to_the_last_gt(rpx, tmp_path: Path) -> None:
    # the 0.9 detection has IoU 1/3 with both GT boxes: it takes the second, so the 0.8
    # detection (IoU 1 with the first) is a TP too; taking the first would make it an FP
    report = run_detection(rpx, tmp_path, [("a", *TIE_GT)], "--iou-threshold 0.3")
    assert (report["rows"][0]["tp"], report["rows"][0]["fp"]) == (2, 0)
    # confusion: the optimal assignment also pairs (0.8, first) and (0.9, second)
    assert report["dataset"]["confusion"]["matrix"] == [[2, 0], [0, 0]]


def test_a_score_tie_keeps_file_order(rpx, tmp_path: Path) -> None:
    # both detections score 0.5. The one listed first has IoU 70/130 and 90/110 with the
    # GT boxes: it takes the second; the other (50/150 and 90/110) is left with the first
    # at 1/3 < 0.5: one TP, one FP. Listed the other way round, both match.
    report = run_detection(rpx, tmp_path, [("a", *TIE_SCORE)], "")
    assert (report["rows"][0]["tp"], report["rows"][0]["fp"], report["rows"][0]["fn"]) == (1, 1, 1)
    gt, pred = TIE_SCORE
    reverse = run_detection(rpx, tmp_path / "reverse", [("a", gt, pred[::-1])], "")
    assert (reverse["rows"][0]["tp"], reverse["rows"][0]["fp"]) == (2, 0)


def test_crowd_region_by_hand(rpx, tmp_path: Path) -> None:
    gt = [box("person", [0, 0, 10, 10]), box("person", [100, 100, 200, 200], iscrowd=1)]
    pred = [box("person", [0, 0, 10, 10], 0.9),  # the regular GT: TP
            box("person", [120, 120, 140, 140], 0.8),  # inside the crowd (IoA 1): ignored
            box("person", [90, 90, 110, 110], 0.7),  # IoA 100 / 400 = 0.25: an FP
            box("person", [300, 300, 310, 310], 0.6)]  # nowhere: an FP
    report = run_detection(rpx, tmp_path, [("a", gt, pred)], "")
    row = report["rows"][0]
    assert (row["tp"], row["fp"], row["fn"], row["n_gt"], row["n_pred"]) == (1, 2, 0, 1, 4)
    assert (row["precision"], row["recall"]) == (1 / 3, 1.0)
    assert row["f1"] == pytest.approx(2 * (1 / 3) / (1 / 3 + 1), rel=1e-15)
    confusion = report["dataset"]["confusion"]
    assert confusion["labels"] == ["person", BACKGROUND]
    assert confusion["matrix"] == [[1, 0], [2, 0]]  # the crowd region is never missed
    assert confusion["per_class"]["person"] == {"precision": 1 / 3, "recall": 1.0,
                                                "f1": pytest.approx(0.5), "support": 1}
    assert confusion_cells(gt, pred, 0.5, 0.0) == {("person", "person"): 1,
                                                   (BACKGROUND, "person"): 2}  # the loop agrees


def test_a_crowd_region_excuses_its_own_class_only(rpx, tmp_path: Path) -> None:
    """COCO matches crowd regions per category: a car on a person crowd is a false positive
    in the rows, the pooled counts and the confusion matrix alike."""
    gt = [box("person", [100, 100, 200, 200], iscrowd=1)]
    pred = [box("car", [120, 120, 140, 140], 0.9), box("person", [150, 150, 170, 170], 0.8)]
    report = run_detection(rpx, tmp_path, [("a", gt, pred)], "")
    assert (report["rows"][0]["tp"], report["rows"][0]["fp"]) == (0, 1)
    confusion = report["dataset"]["confusion"]
    assert confusion["labels"] == ["car", "person", BACKGROUND]
    assert confusion["matrix"] == [[0, 0, 0], [0, 0, 0], [1, 0, 0]]
    assert confusion_cells(gt, pred, 0.5, 0.0) == {(BACKGROUND, "car"): 1}
