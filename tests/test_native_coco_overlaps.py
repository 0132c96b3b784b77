"""The native core's matcher under intersections computed beforehand (``coco_match_overlaps``,
``rpx_cli/csrc/coco_overlaps.c``; Python face ``OverlapTable.native_greedy_match`` of
``rpx_cli/ops/geometry.py``: masks, polygons) against its numpy twin, bit for bit:
``greedy_match`` with ``OverlapTable.similarity`` — on drawn tables where ties (equal
intersections and areas), crowd GT, a pair listed twice, pairs of other groups, areas outside
the ranges and a threshold of 0 are common; split among any number of threads; and the
kernel's refusal of every malformed argument (an exception, never a crash: CI runs this file
under the sanitizers).

The kernel is called directly (these tests run under ``RPX_NATIVE=0`` too); they skip where
the extension is not built."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.ops.coco import IOU_THRESHOLDS
from rpx_cli.ops.geometry import OverlapTable
from rpx_cli.ops.matching import greedy_match

core = pytest.importorskip("rpx_cli._native")

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def overlap_groups(draw):
    """Sorted groups of detection and GT ids (drawn orders, some objects in no group), a table
    of their intersections (integers up to the smaller area: ties; some pairs across groups,
    one pair listed twice), crowd flags, range areas in and out of the ranges."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_pred, n_gt = draw(st.integers(1, 30)), draw(st.integers(1, 30))
    pred_area = rng.integers(1, 6, n_pred).astype(np.float64) * 10
    gt_area = rng.integers(1, 6, n_gt).astype(np.float64) * 10
    dt_ids, gt_ids = rng.permutation(n_pred), rng.permutation(n_gt)
    n_groups = draw(st.integers(1, 5))
    dt_group = np.sort(rng.integers(0, n_groups, n_pred - draw(st.integers(0, n_pred - 1))))
    gt_group = np.sort(rng.integers(0, n_groups, n_gt - draw(st.integers(0, n_gt - 1))))
    dt, gt = dt_ids[:dt_group.size], gt_ids[:gt_group.size]
    pairs = draw(st.integers(0, 3 * n_pred))
    pred = rng.integers(0, n_pred, pairs)
    gtp = rng.integers(0, n_gt, pairs)
    keep = np.unique(pred * n_gt + gtp, return_index=True)[1]
    pred, gtp = pred[keep], gtp[keep]
    inter = np.floor(rng.random(pred.size) * np.minimum(pred_area[pred], gt_area[gtp]) / 5) * 5
    if pred.size and draw(st.booleans()):  # a pair listed twice: its first counts
        pred, gtp = np.append(pred, pred[0]), np.append(gtp, gtp[0])
        inter = np.append(inter, inter[0] + 5)
    table = OverlapTable(pred_area, gt_area, pred, gtp, inter)
    crowd = rng.random(gt.size) < draw(st.sampled_from([0.0, 0.3]))
    area = rng.choice([10.0, 40.0, 200.0], gt.size)
    ranges = np.array(draw(st.sampled_from([[[0.0, 1e10]], [[0.0, 1e10], [0.0, 30.0], [30.0, 1e10]]])))
    thresholds = np.minimum(np.array(draw(st.sampled_from([[0.5], [0.0, 0.5, 1.0], list(IOU_THRESHOLDS)]))),
                            1 - 1e-10)
    return (table, dt.astype(np.int64), dt_group.astype(np.int64), gt.astype(np.int64),
            gt_group.astype(np.int64), crowd, area, ranges, thresholds)


def native_match(table, dt, dt_group, gt, gt_group, crowd, area, ranges, thresholds, threads=1):
    """The kernel called directly (whatever RPX_NATIVE says)."""
    columns = len(ranges) * thresholds.size
    matched = np.empty((dt_group.size, columns), bool)
    ignored = np.empty((dt_group.size, columns), bool)
    core.coco_match_overlaps(table._keys, table._inter, table._n_gt, table.pred_area, table.gt_area,
                             dt, gt, dt_group, gt_group, crowd, area, ranges, thresholds, matched,
                             ignored, threads)
    return matched, ignored


@SETTINGS
@given(overlap_groups(), st.integers(1, 40))
def test_the_overlap_matcher_equals_greedy_match(drawn, threads: int) -> None:
    table, dt, dt_group, gt, gt_group, crowd, area, ranges, thresholds = drawn
    matched, ignored = native_match(*drawn, threads=threads)
    want = greedy_match(dt_group, gt_group, table.similarity(dt, gt), thresholds, ">=",
                        ties="last", gt_crowd=crowd, gt_area=area, area_ranges=ranges)
    assert matched.tobytes() == want.matched.tobytes()
    assert ignored.tobytes() == want.ignored.tobytes()


def arguments():
    table = OverlapTable(np.array([10.0, 20.0]), np.array([10.0]), np.array([0, 1]), np.array([0, 0]),
                         np.array([5.0, 10.0]))
    return [table._keys, table._inter, table._n_gt, table.pred_area, table.gt_area,
            np.array([0, 1], np.int64), np.array([0], np.int64), np.array([0, 0], np.int64),
            np.array([0], np.int64), np.zeros(1, bool), np.array([10.0]), np.array([[0.0, 1e10]]),
            np.array([0.5]), np.empty((2, 1), bool), np.empty((2, 1), bool)]


def test_a_valid_call_matches_the_larger_iou() -> None:
    args = arguments()
    core.coco_match_overlaps(*args)
    assert args[13].ravel().tolist() == [False, True]  # IoU 5/15 < 0.5; 10/20 = 0.5 takes it


@pytest.mark.parametrize(("position", "value", "message"), [
    (0, np.array([1, 0], np.int64), "keys must be sorted"),
    (0, np.array([0, 5], np.int64), "keys must be sorted"),
    (2, 0, "key_gt"),
    (5, np.array([0, 2], np.int64), "detection id"),
    (6, np.array([1], np.int64), "GT id"),
    (7, np.array([1, 0], np.int64), "unsorted groups"),
    (12, np.array([np.nan]), "finite"),
    (13, np.empty((1, 1), bool), "wrong size"),
    (11, np.zeros((0, 2)), "one area range"),
])
def test_malformed_arguments_are_refused(position: int, value, message: str) -> None:
    args = arguments()
    args[position] = value
    with pytest.raises(ValueError, match=message):
        core.coco_match_overlaps(*args)
