"""Report-level invariants of saliency-mb: order, naming and splitting never change a number."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from helpers import without_provenance, write_npy
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rpx_cli

pytestmark = pytest.mark.slow  # hypothesis over whole evaluations: over 0.5 s each

MASKS = st.lists(
    st.tuples(hnp.arrays(np.float32, (8, 12), elements=st.floats(0, 1, width=32)),
              hnp.arrays(np.uint8, (8, 12), elements=st.integers(0, 1))),
    min_size=1, max_size=7,
)


def evaluate(pairs, names) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for (pred, gt), name in zip(pairs, names, strict=True):
            write_npy(root / "pred" / f"{name}.npy", pred)
            write_npy(root / "gt" / f"{name}.npy", gt)
        report = rpx_cli.evaluate_dirs("saliency-mb", root / "pred", root / "gt", block_size=4,
                                       jobs=1)
    return without_provenance(report)


def metrics(rows: list[dict]) -> list[tuple]:
    return sorted((r["pred_blocks"], r["gt_blocks"], r["intersection_blocks"], r["union_blocks"],
                   r["iou"]) for r in rows)


@settings(max_examples=25, deadline=None)
@given(pairs=MASKS, data=st.data())
def test_stem_names_and_order_do_not_change_the_numbers(pairs, data) -> None:
    names = [f"s{i}" for i in range(len(pairs))]
    shuffled = data.draw(st.permutations(names))
    first, second = evaluate(pairs, names), evaluate(pairs, shuffled)
    assert first["macro_iou"] == second["macro_iou"]
    assert first["micro_iou"] == second["micro_iou"]
    assert first["totals"] == second["totals"]
    assert metrics(first["rows"]) == metrics(second["rows"])


@settings(max_examples=25, deadline=None)
@given(pairs=MASKS, data=st.data())
def test_parts_combine_exactly_into_the_whole(pairs, data) -> None:
    cut = data.draw(st.integers(1, len(pairs)))
    names = [f"s{i}" for i in range(len(pairs))]
    whole = evaluate(pairs, names)
    parts = [evaluate(pairs[:cut], names[:cut])]
    if cut < len(pairs):
        parts.append(evaluate(pairs[cut:], names[cut:]))
    rows = [row for part in parts for row in part["rows"]]
    assert [r["iou"] for r in rows] == [r["iou"] for r in whole["rows"]]
    totals = {k: sum(p["totals"][k] for p in parts) for k in whole["totals"]}
    assert totals == whole["totals"]
    assert whole["macro_iou"] == math.fsum(r["iou"] for r in rows) / len(rows)
    union = totals["union_blocks"]
    assert whole["micro_iou"] == (1.0 if union == 0 else totals["intersection_blocks"] / union)


@settings(max_examples=20, deadline=None)
@given(pairs=MASKS)
def test_perfect_prediction_scores_one_and_swapping_is_symmetric(pairs) -> None:
    names = [f"s{i}" for i in range(len(pairs))]
    perfect = evaluate([(gt, gt) for _, gt in pairs], names)
    assert perfect["macro_iou"] == perfect["micro_iou"] == 1.0
    forward = evaluate(pairs, names)
    backward = evaluate([(gt, pred) for pred, gt in pairs], names)
    assert forward["macro_iou"] == backward["macro_iou"]
    assert forward["micro_iou"] == backward["micro_iou"]
