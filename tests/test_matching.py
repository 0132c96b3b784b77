"""``rpx_cli.ops.matching``: comparison rules, the grouped greedy matcher and the optimal one.

Three kinds of tests: hand cases with the expected matches written out (each rule exactly
at its threshold, tie order, one-to-one, crowd, padding); the vectorised greedy matcher
against a plain Python walk written here (per group: detections in rank order, scan the
free GTs, take the best passing one with the tie rule) on random groups — IoU with ``>=``,
signed distances with ``<``/``<=`` and every rule under hypothesis; the optimal matcher
against brute force over all one-to-one assignments. The COCO matcher is also compared
with pycocotools, array for array, in test_coco_ops.py.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.ops.boxes import iou_xywh
from rpx_cli.ops.coco import iou_similarity
from rpx_cli.ops.matching import RULES, better, greedy_match, optimal_match, passes, reference_greedy

PYTHON_RULE = {">=": operator.ge, ">": operator.gt, "<": operator.lt, "<=": operator.le}
HIGHER = {">=": True, ">": True, "<": False, "<=": False}


def lookup(matrix: np.ndarray):
    """A similarity reading a full (detections, GT) matrix."""
    def similarity(dets: np.ndarray, slots: np.ndarray, crowd: np.ndarray) -> np.ndarray:
        return matrix[dets[:, None], slots].astype(np.float64)

    return similarity


def greedy(values, dt_group, gt_group, thresholds, rule, ties="last", **extras):
    values = np.asarray(values, np.float64).reshape(len(dt_group), len(gt_group))
    return greedy_match(np.asarray(dt_group, np.int64), np.asarray(gt_group, np.int64),
                        lookup(values), thresholds, rule, ties=ties, return_gt=True, **extras)


# --- the rule helpers ------------------------------------------------------------------------


@pytest.mark.parametrize(("rule", "expected"), [("<", False), ("<=", True), (">=", True), (">", False)])
def test_each_rule_at_a_value_equal_to_the_threshold(rule: str, expected: bool) -> None:
    assert bool(passes(np.float64(0.5), 0.5, rule)) is expected
    result = greedy([[0.5]], [0], [0], 0.5, rule)
    assert result.matched.tolist() == [[expected]]
    assert result.gt.tolist() == [[0 if expected else -1]]
    rows, cols = optimal_match(np.array([[0.5]]), 0.5, rule)
    assert (rows.tolist(), cols.tolist()) == (([0], [0]) if expected else ([], []))


@settings(max_examples=300, deadline=None)
@given(value=st.floats(allow_nan=False), threshold=st.floats(allow_nan=False),
       rule=st.sampled_from(RULES))
def test_the_rule_on_better_values_is_the_rule(value: float, threshold: float, rule: str) -> None:
    """Both matchers compare better() values with ">" (strict rules) or ">=": exact."""
    strict = ">" if rule in (">", "<") else ">="
    expected = PYTHON_RULE[rule](value, threshold)
    assert bool(passes(np.float64(value), threshold, rule)) is expected
    assert bool(passes(better(np.float64(value), rule), better(np.float64(threshold), rule), strict)) \
        is expected


def test_unknown_rule_and_tie_order_are_refused() -> None:
    with pytest.raises(ValueError, match="comparison rule"):
        passes(np.zeros(1), 0.0, "==")
    with pytest.raises(ValueError, match="ties"):
        greedy([[1.0]], [0], [0], 0.5, ">=", ties="middle")
    with pytest.raises(ValueError, match="finite"):
        greedy([[1.0]], [0], [0], np.inf, "<=")
    with pytest.raises(ValueError, match="sorted"):
        greedy([[1.0], [1.0]], [1, 0], [0], 0.5, ">=")


# --- greedy: hand cases ----------------------------------------------------------------------


@pytest.mark.parametrize(("ties", "first_takes", "second_takes"), [("first", 0, -1), ("last", 1, 0)])
def test_tie_order_with_two_equidistant_gts(ties: str, first_takes: int, second_takes: int) -> None:
    """Detection 0 is 1.0 m from both GTs; detection 1 reaches only GT 0 (1.5 m; GT 1 is
    5 m away). "first" gives detection 0 GT 0 and leaves detection 1 without a match; "last"
    gives detection 0 GT 1 and detection 1 GT 0."""
    distances = [[1.0, 1.0], [1.5, 5.0]]
    result = greedy(distances, [0, 0], [0, 0], 2.0, "<", ties=ties)
    assert result.gt.tolist() == [[first_takes], [second_takes]]
    assert result.matched.tolist() == [[True], [second_takes >= 0]]
    # the same with IoU (higher is better)
    ious = [[0.7, 0.7], [0.6, 0.1]]
    assert greedy(ious, [0, 0], [0, 0], 0.5, ">=", ties=ties).gt.tolist() == [[first_takes], [second_takes]]


def test_a_later_detection_cannot_take_a_gt_an_earlier_one_took() -> None:
    # one GT, both detections pass: the better-ranked one (first in order) takes it
    result = greedy([[0.9], [0.95]], [0, 0], [0], 0.5, ">=")
    assert result.matched.tolist() == [[True], [False]]
    # detection 1 is closer to GT 0 than detection 0 is, but comes later: it gets GT 1
    result = greedy([[0.5, 1.0], [0.2, 1.5]], [0, 0], [0, 0], 2.0, "<=")
    assert result.gt.tolist() == [[0], [1]]


def test_crowd_gt_is_matched_repeatedly_only_when_crowd_is_given() -> None:
    values = [[0.8], [0.9], [0.7]]
    with_crowd = greedy(values, [0, 0, 0], [0], 0.5, ">=", gt_crowd=np.array([True]))
    assert with_crowd.matched.tolist() == [[True], [True], [True]]
    assert with_crowd.ignored.tolist() == [[True], [True], [True]]
    assert with_crowd.gt.tolist() == [[0], [0], [0]]
    without = greedy(values, [0, 0, 0], [0], 0.5, ">=")
    assert without.matched.tolist() == [[True], [False], [False]]
    assert without.ignored.tolist() == [[False], [False], [False]]


def test_an_ignored_gt_is_taken_only_when_no_regular_gt_passes() -> None:
    # detection 0 passes the regular GT 0 (0.6) and the better crowd GT 1 (0.9): GT 0;
    # detection 1 then passes only the crowd GT
    result = greedy([[0.6, 0.9], [0.6, 0.9]], [0, 0], [0, 0], 0.5, ">=",
                    gt_crowd=np.array([False, True]))
    assert result.gt.tolist() == [[0], [1]]
    assert result.ignored.tolist() == [[False], [True]]


def test_area_ranges_make_a_gt_ignored_per_range() -> None:
    result = greedy([[0.8]], [0], [0], [0.5, 0.85], ">=", gt_area=np.array([50.0]),
                    area_ranges=np.array([[0.0, 100.0], [100.0, 1e10]]))
    # columns: range 0 (t .5, t .85), range 1 (t .5, t .85)
    assert result.matched.tolist() == [[True, False, True, False]]
    assert result.ignored.tolist() == [[False, False, True, False]]


@pytest.mark.parametrize(("rule", "threshold"), [("<=", 1e300), ("<", 1e300), (">=", -1e300), (">", -1e300)])
def test_padding_never_passes(rule: str, threshold: float) -> None:
    """Groups with 2 and 3 GTs share a bucket of width 3: the 2-GT group's padded slot must
    not be taken even by a threshold every real value passes."""
    dt_group, gt_group = [0, 0, 0, 1], [0, 0, 1, 1, 1]
    values = np.zeros((4, 5))
    result = greedy(values, dt_group, gt_group, threshold, rule)
    assert result.matched[:, 0].tolist() == [True, True, False, True]
    assert result.gt[:, 0].tolist() == [1, 0, -1, 4]  # ties: the last free GT


def test_empty_inputs() -> None:
    for n_dt, n_gt in ((0, 0), (0, 3), (3, 0)):
        result = greedy(np.zeros((n_dt, n_gt)), [0] * n_dt, [0] * n_gt, [0.5, 0.7], ">=")
        assert result.matched.shape == result.ignored.shape == result.gt.shape == (n_dt, 2)
        assert not result.matched.any() and (result.gt == -1).all()


def test_similarity_of_the_wrong_shape_is_refused() -> None:
    def similarity(dets, slots, crowd):
        return np.zeros((dets.size, 1))

    with pytest.raises(ValueError, match="shape"):
        greedy_match(np.zeros(1, np.int64), np.zeros(2, np.int64), similarity, 0.5, ">=")


# --- greedy: against its plain Python walk (ops.matching.reference_greedy) ---------------------


def random_groups(rng: np.random.Generator, gt_counts=None):
    """Sorted group ids of detections and GTs: many groups, some empty on either side,
    some with many GTs."""
    if gt_counts is None:
        gt_counts = rng.choice([0, 0, 1, 1, 2, 3, 4, 6, 9, 17, 35], int(rng.integers(1, 30)))
    gt_counts = np.asarray(gt_counts)
    dt_counts = rng.integers(0, 9, gt_counts.size)
    dt_counts[rng.random(gt_counts.size) < 0.1] = 0
    dt_group = np.repeat(np.arange(gt_counts.size), dt_counts)
    gt_group = np.repeat(np.arange(gt_counts.size), gt_counts)
    return dt_group, gt_group


def iou_problem(rng: np.random.Generator, gt_counts=None):
    """Boxes on an integer grid (exact ties: some GT boxes repeated, some detections equal
    to a GT), the COCO similarity."""
    dt_group, gt_group = random_groups(rng, gt_counts)
    gt_box = np.column_stack([rng.integers(0, 12, (gt_group.size, 2)),
                              rng.integers(2, 7, (gt_group.size, 2))]).astype(np.float64)
    repeat = np.flatnonzero(rng.random(gt_group.size) < 0.3)
    repeat = repeat[(repeat > 0) & (gt_group[repeat] == gt_group[repeat - 1])]
    gt_box[repeat] = gt_box[repeat - 1]
    dt_box = np.column_stack([rng.integers(0, 12, (dt_group.size, 2)),
                              rng.integers(2, 7, (dt_group.size, 2))]).astype(np.float64)
    for i in np.flatnonzero(rng.random(dt_group.size) < 0.5):  # near a GT of the group
        own = np.flatnonzero(gt_group == dt_group[i])
        if own.size:
            dt_box[i] = gt_box[rng.choice(own)] + rng.integers(-1, 2, 4) * [1, 1, 0, 0]
    crowd = rng.random(gt_group.size) < 0.15

    def values(crowd: np.ndarray | None) -> np.ndarray:  # crowd IoU only where crowd is given
        return iou_xywh(dt_box, gt_box, crowd)

    return dt_group, gt_group, values, iou_similarity(dt_box, gt_box), crowd


def distance_problem(rng: np.random.Generator, gt_counts=None):
    """Signed "distances" on a half-metre grid from -3 to 3: values equal to the thresholds
    and ties are common."""
    dt_group, gt_group = random_groups(rng, gt_counts)
    values = rng.integers(-6, 7, (dt_group.size, gt_group.size)) * 0.5
    crowd = rng.random(gt_group.size) < 0.15
    return dt_group, gt_group, lambda crowd: values, lookup(values), crowd


def check_against_reference(problem, thresholds, rule, ties, rng, extras: bool) -> None:
    dt_group, gt_group, values_given, similarity, crowd = problem
    options = {}
    if extras:
        area = rng.uniform(0, 60, gt_group.size)
        ranges = np.array([[-np.inf, np.inf], [0.0, 20.0], [20.0, 1e5]])
        options = {"gt_crowd": crowd, "gt_area": area, "area_ranges": ranges}
    result = greedy_match(dt_group, gt_group, similarity, thresholds, rule, ties=ties, return_gt=True,
                          **options)
    expected_gt, expected_ignored = reference_greedy(
        values_given(options.get("gt_crowd")), dt_group, gt_group, thresholds, rule, ties,
        crowd=options.get("gt_crowd"), area=options.get("gt_area"), ranges=options.get("area_ranges"))
    assert np.array_equal(result.gt, expected_gt)
    assert np.array_equal(result.matched, expected_gt >= 0)
    assert np.array_equal(result.ignored, expected_ignored)
    plain = greedy_match(dt_group, gt_group, similarity, thresholds, rule, ties=ties, **options)
    assert plain.gt is None
    assert np.array_equal(plain.matched, result.matched) and np.array_equal(plain.ignored, result.ignored)


@pytest.mark.parametrize("extras", [False, True])
@pytest.mark.parametrize("ties", ["last", "first"])
@pytest.mark.parametrize("seed", range(6))
def test_greedy_equals_the_reference_for_iou(seed: int, ties: str, extras: bool) -> None:
    rng = np.random.default_rng(seed)
    problem = iou_problem(rng)
    check_against_reference(problem, np.array([0.1, 0.25, 0.5, 0.75, 1.0]), ">=", ties, rng, extras)


@pytest.mark.parametrize("extras", [False, True])
@pytest.mark.parametrize("ties", ["first", "last"])
@pytest.mark.parametrize("rule", ["<", "<="])
@pytest.mark.parametrize("seed", range(6))
def test_greedy_equals_the_reference_for_signed_distances(seed: int, rule: str, ties: str,
                                                          extras: bool) -> None:
    rng = np.random.default_rng(100 + seed)
    problem = distance_problem(rng)
    check_against_reference(problem, np.array([-1.0, 0.5, 2.0]), rule, ties, rng, extras)


@pytest.mark.parametrize("make", [iou_problem, distance_problem])
def test_greedy_equals_the_reference_in_every_bucket(make) -> None:
    """GT counts 0, 1, 2-3, 4-7, 8-15, 16-31 and 32-63 in one call: every bucket."""
    rng = np.random.default_rng(7)
    problem = make(rng, gt_counts=[0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 45, 1, 0])
    rule, thresholds = (">=", [0.3, 0.6]) if make is iou_problem else ("<=", [-1.5, 0.0, 1.0])
    for ties in ("first", "last"):
        check_against_reference(problem, np.array(thresholds), rule, ties, rng, extras=True)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rule=st.sampled_from(RULES), ties=st.sampled_from(["first", "last"]),
       extras=st.booleans(), thresholds=st.lists(st.integers(-6, 6), min_size=1, max_size=4))
def test_greedy_equals_the_reference_for_every_rule(seed: int, rule: str, ties: str, extras: bool,
                                                    thresholds: list[int]) -> None:
    rng = np.random.default_rng(seed)
    problem = distance_problem(rng)
    check_against_reference(problem, np.array(thresholds) * 0.5, rule, ties, rng, extras)


# --- optimal ---------------------------------------------------------------------------------


def brute_force_best(values: np.ndarray, higher: bool) -> float:
    """The best total over every one-to-one assignment of min(D, G) pairs."""
    D, G = values.shape
    if D <= G:
        totals = [sum(values[i, j] for i, j in enumerate(cols))
                  for cols in itertools.permutations(range(G), D)]
    else:
        totals = [sum(values[i, j] for j, i in enumerate(rows))
                  for rows in itertools.permutations(range(D), G)]
    return max(totals) if higher else min(totals)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("seed", range(25))
def test_optimal_match_is_optimal_then_thresholded(seed: int, rule: str) -> None:
    rng = np.random.default_rng(seed)
    D, G = (int(x) for x in rng.integers(1, 6, 2))
    values = rng.integers(-8, 9, (D, G)) * 0.25  # exact sums: totals compare exactly
    loose = -np.inf if HIGHER[rule] else np.inf
    rows, cols = optimal_match(values, loose, rule)
    assert rows.size == min(D, G)
    assert len(set(rows.tolist())) == len(set(cols.tolist())) == rows.size
    assert values[rows, cols].sum() == brute_force_best(values, HIGHER[rule])
    threshold = float(rng.integers(-4, 5)) * 0.25
    kept_rows, kept_cols = optimal_match(values, threshold, rule)
    keep = PYTHON_RULE[rule](values[rows, cols], threshold)
    assert kept_rows.tolist() == rows[keep].tolist() and kept_cols.tolist() == cols[keep].tolist()


def test_optimal_match_prefers_the_total_over_the_single_best_pair() -> None:
    # greedy would give detection 0 GT 0 (distance 1) and detection 1 GT 1 (distance 9);
    # the optimal total is 2 + 2
    distances = np.array([[1.0, 2.0], [2.0, 9.0]])
    rows, cols = optimal_match(distances, 3.0, "<")
    assert (rows.tolist(), cols.tolist()) == ([0, 1], [1, 0])
    rows, cols = optimal_match(distances, 2.0, "<")  # assignment first, then the threshold
    assert (rows.tolist(), cols.tolist()) == ([], [])


def test_optimal_match_of_empty_matrices() -> None:
    for shape in ((0, 0), (0, 3), (4, 0)):
        rows, cols = optimal_match(np.zeros(shape), 0.5, ">=")
        assert rows.dtype == cols.dtype == np.int64 and rows.size == cols.size == 0
