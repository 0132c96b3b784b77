"""``rpx eval grounding`` rows and ``aggregate`` against a plain per-expression loop written
here, from the rules in the README and ``rpx_cli/tasks/grounding.py``'s docstring: the
answer is the highest-scoring predicted box (ties: the first), ``grounding_iou`` its best
IoU with any GT box, ``grounding_acc`` = IoU >= threshold; no prediction scores 0/0; a GT
without boxes is null and counted in ``aggregate.n_empty``. The IoU is the test's own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import dirs, write_json_pair


def iou(a: list[float], b: list[float]) -> float:
    """Intersection over union of two [x1, y1, x2, y2] boxes (positive area)."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def reference_row(gt: dict, pred: dict | None, threshold: float) -> dict:
    if not gt["boxes"]:
        return {"grounding_iou": None, "grounding_acc": None}
    if pred is None or not pred["boxes"]:
        return {"grounding_iou": 0.0, "grounding_acc": 0.0}
    scores = pred.get("scores", [1.0])  # a single box needs no score
    answer = 0
    for index, score in enumerate(scores):
        if score > scores[answer]:  # strictly: a tie keeps the first
            answer = index
    best = max(iou(pred["boxes"][answer], g) for g in gt["boxes"])
    return {"grounding_iou": best, "grounding_acc": 1.0 if best >= threshold else 0.0}


def expressions(seed: int, n: int = 40) -> list[tuple[str, dict, dict | None]]:
    """``(stem, gt, pred)``: 0-3 GT boxes (none: an expression without a GT box), 0-4
    predicted boxes around them or anywhere, scores with ties (one decimal), single boxes
    without scores, and missing prediction files (pred None)."""
    rng = np.random.default_rng(seed)
    out = []
    for index in range(n):
        gt_boxes = []
        for _ in range(int(rng.integers(0, 4)) if index % 8 else 0):
            x, y = rng.uniform(0, 80, 2)
            w, h = rng.uniform(5, 40, 2)
            gt_boxes.append([x, y, x + w, y + h])
        boxes = []
        for _ in range(int(rng.integers(0, 5))):
            if gt_boxes and rng.random() < 0.7:
                x1, y1, x2, y2 = np.asarray(gt_boxes[rng.integers(len(gt_boxes))]) + rng.normal(0, 5, 4)
                boxes.append([x1, y1, max(x2, x1 + 1), max(y2, y1 + 1)])
            else:
                x, y = rng.uniform(0, 100, 2)
                boxes.append([x, y, x + rng.uniform(5, 40), y + rng.uniform(5, 40)])
        pred: dict | None = {"boxes": [[float(v) for v in b] for b in boxes],
                             "scores": [round(float(rng.random()), 1) for _ in boxes]}
        if len(boxes) == 1 and rng.random() < 0.5:
            del pred["scores"]
        if index % 13 == 5:
            pred = None  # no prediction file: scored with --missing empty
        out.append((f"e{index:03d}", {"text": f"expression {index}",
                                      "boxes": [[float(v) for v in b] for b in gt_boxes]}, pred))
    return out


@pytest.mark.parametrize(("seed", "threshold"), [(0, 0.5), (1, 0.3), (2, 0.7), (3, 0.5)])
def test_rows_and_aggregate_equal_the_loop(rpx, tmp_path: Path, seed: int, threshold: float) -> None:
    data = expressions(seed)
    for stem, gt, pred in data:
        write_json_pair(tmp_path, stem, gt, pred)
    run = rpx(f"eval grounding {dirs(tmp_path)} --iou-threshold {threshold} --missing empty")
    assert run.exit_code == 0, run.stderr
    report = run.json
    expected = [reference_row(gt, pred, threshold) for _, gt, pred in sorted(data, key=lambda e: e[0])]
    assert [row["stem"] for row in report["rows"]] == sorted(stem for stem, _, _ in data)
    for row, want in zip(report["rows"], expected, strict=True):
        for key, value in want.items():
            assert row[key] == (None if value is None else pytest.approx(value, rel=1e-12, abs=1e-12)), \
                (row["stem"], key)
    present = [want for want in expected if want["grounding_iou"] is not None]
    aggregate = report["aggregate"]
    assert (aggregate["n_frames"], aggregate["n_empty"]) == (len(expected), len(expected) - len(present))
    for key in ("grounding_iou", "grounding_acc"):
        mean = sum(want[key] for want in present) / len(present)
        assert aggregate[key] == pytest.approx(mean, rel=1e-12, abs=1e-12), key


def test_the_generated_data_has_what_the_rules_are_about() -> None:
    """Guard for the test above: empty GT, no prediction, missing files, unscored single
    boxes, and score ties where the first and the last tied box answer differently."""
    data = expressions(0)
    assert any(not gt["boxes"] for _, gt, _ in data)
    assert any(pred is None for _, _, pred in data)
    assert any(pred is not None and not pred["boxes"] and gt["boxes"] for _, gt, pred in data)
    assert any(pred is not None and "scores" not in pred for _, _, pred in data)
    tie_decides = 0
    for _, gt, pred in data:
        if not gt["boxes"] or pred is None or len(pred["boxes"]) < 2:
            continue
        top = max(pred["scores"])
        tied = [b for b, s in zip(pred["boxes"], pred["scores"], strict=True) if s == top]
        ious = {max(iou(b, g) for g in gt["boxes"]) for b in tied}
        tie_decides += len(ious) > 1
    assert tie_decides


def test_a_score_tie_answers_with_the_first_box(rpx, tmp_path: Path) -> None:
    gt = {"text": "the mug", "boxes": [[0, 0, 10, 10]]}
    pred = {"boxes": [[20, 20, 30, 30], [0, 0, 10, 10], [0, 0, 10, 5]], "scores": [0.4, 0.8, 0.8]}
    write_json_pair(tmp_path, "a", gt, pred)
    write_json_pair(tmp_path, "b", gt, {"boxes": pred["boxes"][::-1], "scores": pred["scores"][::-1]})
    a, b = rpx(f"eval grounding {dirs(tmp_path)}").json["rows"]
    assert (a["grounding_iou"], a["grounding_acc"]) == (1.0, 1.0)
    # reversed, [0, 0, 10, 5] is the first of the tied boxes: IoU exactly 0.5, accepted (>=)
    assert (b["grounding_iou"], b["grounding_acc"]) == (0.5, 1.0)
    strict = rpx(f"eval grounding {dirs(tmp_path)} --iou-threshold 0.51").json["rows"][1]
    assert (strict["grounding_iou"], strict["grounding_acc"]) == (0.5, 0.0)
