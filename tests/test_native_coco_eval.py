"""The native core's COCO kernels of ``rpx_cli/csrc/coco_eval.c`` against their numpy
twins, bit for bit: the accumulation (``coco_accumulate`` / ``reference_accumulate`` of
``rpx_cli/ops/coco_accumulate.py``) on drawn cells, the box matcher (``coco_match_boxes`` /
``greedy_match`` with ``iou_similarity``, and ``reference_greedy``) on drawn boxes, both
through ``ops.coco.evaluate``; and each kernel's refusal of every malformed argument (an
exception, never a crash: CI runs this file under the sanitizers).

The kernel is called directly (these tests run under ``RPX_NATIVE=0`` too); they skip where
the extension is not built."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.ops.coco import IOU_THRESHOLDS, RECALL_THRESHOLDS, CocoInput, evaluate, iou_similarity
from rpx_cli.ops.coco_accumulate import reference_accumulate
from rpx_cli.ops.geometry import BOXES
from rpx_cli.ops.matching import greedy_match, reference_greedy

core = pytest.importorskip("rpx_cli._native")

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def native(matched, ignored, rank, score, bounds, regular, max_dets, points=RECALL_THRESHOLDS,
           order=None, threads=1):
    """The kernel's three arrays, for the arguments reference_accumulate takes."""
    A, K = regular.shape
    T, M, R = matched.shape[1] // A, len(max_dets), points.size
    precision, recall, scores = np.empty((T, R, K, A, M)), np.empty((T, K, A, M)), np.empty((T, R, K, A, M))
    core.coco_accumulate(np.ascontiguousarray(matched), np.ascontiguousarray(ignored), rank, score,
                         order, bounds, regular, np.asarray(max_dets, np.int64), points, T, A,
                         precision, recall, scores, threads)
    return precision, recall, scores


@st.composite
def cells(draw):
    """Detections of K categories (scores descending within each, ties drawn often), each
    matched or not and ignored or not per column (a true positive is matched, not ignored)."""
    K, A, T = draw(st.integers(0, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 3))
    max_dets = tuple(sorted(draw(st.sets(st.sampled_from((1, 2, 3, 5, 100)), min_size=1, max_size=3))))
    sizes = draw(st.lists(st.integers(0, 25), min_size=K, max_size=K))
    n = sum(sizes)
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    levels = st.sampled_from((0.0, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0))
    score = np.concatenate([sorted(draw(st.lists(levels, min_size=s, max_size=s)), reverse=True)
                            for s in sizes] or [[]]).astype(np.float64)
    rank = np.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)), np.int64)
    state = np.array(draw(st.lists(st.integers(0, 3), min_size=n * A * T, max_size=n * A * T)),
                     np.int64).reshape(n, A * T)
    matched, ignored = (state & 1) > 0, (state & 2) > 0
    regular = np.array(draw(st.lists(st.integers(0, 8), min_size=A * K, max_size=A * K)),
                       np.int64).reshape(A, K)
    return matched, ignored, rank, score, bounds, regular, max_dets


@SETTINGS
@given(cells())
def test_the_kernel_equals_the_numpy_twin_bit_for_bit(drawn) -> None:
    want = reference_accumulate(*drawn, RECALL_THRESHOLDS)
    got = native(*drawn)
    for name, a, b in zip(("precision", "recall", "scores"), got, want, strict=True):
        assert a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name


@SETTINGS
@given(cells(), st.data())
def test_an_order_reads_the_rows_it_names(drawn, data) -> None:
    """``order`` (rows named in category order, some more than once, some never) gives what
    the rows gathered by it give: the kernel reads them where they are."""
    matched, ignored, rank, score, bounds, regular, max_dets = drawn
    n = rank.size
    rows = np.array(data.draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=n, max_size=n))
                    if n else [], np.int64)
    spare = data.draw(st.integers(0, 3))  # rows the order never names, at the end

    def pad(x):
        return np.concatenate([x, x[:1].repeat(spare, axis=0)]) if n else x

    want = native(matched[rows], ignored[rows], rank[rows], score[rows], bounds, regular, max_dets)
    got = native(pad(matched), pad(ignored), pad(rank), pad(score), bounds, regular, max_dets,
                 order=rows)
    for a, b in zip(got, want, strict=True):
        assert a.tobytes() == b.tobytes()


@SETTINGS
@given(cells(), st.integers(2, 40))
def test_the_accumulation_splits_its_categories_among_threads(drawn, threads) -> None:
    """Any number of threads gives the cells one thread gives (each thread takes whole
    categories: every cell is written once)."""
    for a, b in zip(native(*drawn, threads=threads), native(*drawn), strict=True):
        assert a.tobytes() == b.tobytes()


def test_a_cell_by_hand() -> None:
    """One category, one range, one threshold, maxDets (1, 100): detections TP, FP, ignored,
    TP of scores 0.9, 0.8, 0.7, 0.6 and 3 regular GT. The TPs stand at 0 (precision
    1 / (0 + 1 + eps)) and 3 (2 / (1 + 2 + eps): one FP before it, the ignored one not
    counted); recall 1/3 then 2/3; the envelope from the right keeps the first precision
    at recall 1/3; under maxDets 1 only the rank-0 detection counts."""
    tps = np.array([[True], [False], [False], [True]])  # matched, one column
    igs = np.array([[False], [False], [True], [False]])
    rank = np.array([0, 1, 0, 1], np.int64)  # ranks within their images
    score = np.array([0.9, 0.8, 0.7, 0.6])
    bounds = np.array([0, 4], np.int64)
    regular = np.array([[3]], np.int64)
    eps = np.spacing(1)
    precision, recall, scores = native(tps, igs, rank, score, bounds, regular, (1, 100))
    r = RECALL_THRESHOLDS
    first, second = 1 / (0 + 1 + eps), 2 / (1 + 2 + eps)
    assert recall[0, 0, 0].tolist() == [1 / 3, 2 / 3]
    want = np.where(r <= 1 / 3, first, np.where(r <= 2 / 3, second, 0.0))
    assert precision[0, :, 0, 0, 1].tolist() == want.tolist()
    want_scores = np.where(r <= 1 / 3, 0.9, np.where(r <= 2 / 3, 0.6, 0.0))
    assert scores[0, :, 0, 0, 1].tolist() == want_scores.tolist()
    # maxDets 1: detections 0 (TP) and 2 (ignored), rank 0
    assert recall[0, 0, 0, 0] == 1 / 3
    assert precision[0, :, 0, 0, 0].tolist() == np.where(r <= 1 / 3, first, 0.0).tolist()
    for got, want_ in zip(native(tps, igs, rank, score, bounds, regular, (1, 100)),
                          reference_accumulate(tps, igs, rank, score, bounds, regular, (1, 100),
                                               RECALL_THRESHOLDS), strict=True):
        assert got.tobytes() == want_.tobytes()


def test_a_category_without_regular_gt_is_minus_one() -> None:
    tps = np.array([[True], [False]])
    precision, recall, scores = native(tps, ~tps, np.zeros(2, np.int64), np.array([0.5, 0.4]),
                                       np.array([0, 1, 2], np.int64), np.array([[1, 0]], np.int64),
                                       (100,))
    assert (precision[:, :, 1] == -1).all() and (recall[:, 1] == -1).all() and (scores[:, :, 1] == -1).all()
    assert recall[0, 0, 0, 0] == 1.0


@pytest.mark.parametrize("geometry", [None, BOXES])
@pytest.mark.parametrize("seed", range(6))
def test_evaluate_is_the_same_on_either_path(monkeypatch, seed: int, geometry) -> None:
    """``ops.coco.evaluate`` end to end (crowd GT, areas in every range, ties of scores,
    more than 100 detections in a group): every array the same bit for bit."""
    rng = np.random.default_rng(seed)
    n_images, K, G, D = 12, 5, 150, 1400
    gt_box = np.column_stack([rng.uniform(0, 400, (G, 2)), rng.uniform(2, 150, (G, 2))])
    pick = rng.integers(0, G, D)
    dt_box = gt_box[pick] + rng.normal(0, 8, (D, 4))
    dt_box[:, 2:] = np.abs(dt_box[:, 2:]) + 1
    data = CocoInput(n_images, K, rng.integers(0, n_images, G), rng.integers(0, K, G), gt_box,
                     gt_box[:, 2] * gt_box[:, 3], rng.random(G) < 0.05,
                     np.concatenate([rng.integers(0, n_images, D - 150), np.zeros(150, np.int64)]),
                     rng.integers(0, K, D), dt_box, rng.integers(0, 20, D) / 20)
    data.dt_category[-150:] = 0
    data.geometry = geometry
    monkeypatch.setenv("RPX_NATIVE", "1")
    on = evaluate(data)
    monkeypatch.setenv("RPX_NATIVE", "0")
    off = evaluate(data)
    for name in ("precision", "recall", "scores"):
        assert getattr(on, name).tobytes() == getattr(off, name).tobytes(), name
    assert on.stats() == off.stats()


def good():
    """Valid arguments (one category of three detections, A = 1, T = 2, M = 1, R = 101)."""
    tps = np.array([[True, False], [False, False], [True, True]])  # (N, A * T)
    return [tps, np.zeros_like(tps), np.zeros(3, np.int64), np.array([0.9, 0.5, 0.1]), None,
            np.array([0, 3], np.int64), np.array([[2]], np.int64), np.array([100], np.int64),
            RECALL_THRESHOLDS.copy(), 2, 1, np.empty(2 * 101), np.empty(2), np.empty(2 * 101)]


def changed(i: int, value):
    args = good()
    args[i] = value
    return args


@pytest.mark.parametrize("args", [
    changed(0, np.zeros((2, 2), bool)),  # matched too short
    changed(1, np.zeros((3, 3), bool)),  # ignored too long
    changed(3, np.array([0.9, 0.5])),  # one score missing
    changed(4, np.array([0, 3, 1], np.int64)),  # an order entry past the rows
    changed(4, np.array([0, -1, 1], np.int64)),  # a negative order entry
    changed(4, np.array([0, 1], np.int64)),  # an order shorter than the bounds say
    changed(5, np.array([0, 4], np.int64)),  # bounds past the detections
    changed(5, np.array([1, 3], np.int64)),  # bounds not from 0
    changed(5, np.array([0, 2, 1], np.int64)),  # bounds out of order (and regular's size)
    changed(5, np.zeros(0, np.int64)),  # no bounds at all
    changed(6, np.array([[-1]], np.int64)),  # a negative GT count
    changed(6, np.array([[1, 1]], np.int64)),  # regular of the wrong size
    changed(7, np.zeros(0, np.int64)),  # no maxDets
    changed(8, np.array([0.0, np.nan])),  # a recall point not a number
    changed(8, np.array([0.5, 0.0])),  # recall points descending
    changed(9, -1),  # negative T
    changed(9, 1 << 62),  # T overflowing the sizes
    changed(10, 1 << 62),  # A too
    changed(11, np.empty(3)),  # precision of the wrong size
    changed(12, np.empty(3)),  # recall too
    changed(13, np.empty(2 * 101 + 1)),  # scores too
])
def test_the_kernel_refuses_malformed_arguments(args) -> None:
    with pytest.raises(ValueError, match="coco_accumulate"):
        core.coco_accumulate(*args)


@pytest.mark.parametrize("i, value", [
    (0, np.zeros((3, 2), np.int64)),  # matched not bool
    (2, np.zeros(3, np.float64)),  # rank not int64
    (3, np.zeros(3, np.int64)),  # scores not float64
    (4, np.zeros(3, np.float64)),  # order not int64
    (11, np.empty(2 * 101, np.float32)),  # precision not float64
    (12, np.empty(2).view(np.int64)),  # recall neither
    (13, b"\0" * (8 * 202)),  # scores not writable
])
def test_the_kernel_refuses_buffers_of_another_kind(i: int, value) -> None:
    with pytest.raises(TypeError):
        core.coco_accumulate(*changed(i, value))


def test_the_kernel_accepts_the_good_arguments() -> None:
    args = good()
    core.coco_accumulate(*args)
    assert args[12].tolist() == [1.0, 0.5]  # recall: 2 of 2, then 1 of 2


@st.composite
def box_groups(draw):
    """Sorted groups of detections and GT ``[x, y, w, h]`` boxes on a coarse grid (equal
    IoUs, hence ties, are common; detections often copy a GT), crowd flags, areas in and out
    of the ranges, thresholds with pycocotools' 1 - 1e-10 cap."""
    n_groups = draw(st.integers(1, 4))
    coarse = st.integers(0, 6).map(lambda v: v * 2.5)
    side = st.integers(0, 5).map(lambda v: v * 2.5)
    dt_group, dt_box, gt_group, gt_box = [], [], [], []
    for group in sorted(draw(st.sets(st.integers(0, 50), min_size=n_groups, max_size=n_groups))):
        gts = [[draw(coarse), draw(coarse), draw(side), draw(side)] for _ in range(draw(st.integers(0, 5)))]
        for _ in range(draw(st.integers(0, 8))):
            copy = gts and draw(st.booleans())
            dt_box.append(list(draw(st.sampled_from(gts))) if copy else
                          [draw(coarse), draw(coarse), draw(side), draw(side)])
            dt_group.append(group)
        gt_group += [group] * len(gts)
        gt_box += gts
    G = len(gt_box)
    crowd = np.array(draw(st.lists(st.booleans(), min_size=G, max_size=G)), bool)
    area = np.array(draw(st.lists(st.sampled_from([0.0, 10.0, 40.0, 200.0]), min_size=G, max_size=G)))
    ranges = np.array(draw(st.sampled_from([[[0.0, 1e10]], [[0.0, 1e10], [0.0, 30.0], [30.0, 1e10]]])))
    thresholds = np.minimum(np.array(draw(st.sampled_from([[0.5], [0.0, 0.5, 1.0], list(IOU_THRESHOLDS)]))),
                            1 - 1e-10)
    return (np.array(dt_box, np.float64).reshape(-1, 4), np.array(dt_group, np.int64),
            np.array(gt_box, np.float64).reshape(-1, 4), np.array(gt_group, np.int64), crowd, area,
            ranges, thresholds)


def match_natively(dt_box, dt_group, gt_box, gt_group, crowd, area, ranges, thresholds, threads=1):
    columns = len(ranges) * thresholds.size
    matched = np.full((dt_group.size, columns), True)  # the kernel writes every flag
    ignored = np.full((dt_group.size, columns), True)
    core.coco_match_boxes(dt_box, dt_group, gt_box, gt_group, crowd, area, ranges, thresholds,
                          matched, ignored, threads)
    return matched, ignored


@SETTINGS
@given(box_groups(), st.integers(2, 40))
def test_the_box_matcher_splits_its_groups_among_threads(drawn, threads) -> None:
    """Any number of threads (more than groups, than detections, than the kernel's cap) gives
    the flags one thread gives: each thread takes whole groups and writes only theirs."""
    one = match_natively(*drawn)
    for a, b in zip(match_natively(*drawn, threads=threads), one, strict=True):
        assert a.tobytes() == b.tobytes()


@SETTINGS
@given(box_groups())
def test_the_box_matcher_equals_greedy_match_and_the_reference(drawn) -> None:
    dt_box, dt_group, gt_box, gt_group, crowd, area, ranges, thresholds = drawn
    matched, ignored = match_natively(*drawn)
    want = greedy_match(dt_group, gt_group, iou_similarity(dt_box, gt_box), thresholds, ">=",
                        ties="last", gt_crowd=crowd, gt_area=area, area_ranges=ranges)
    assert matched.tobytes() == want.matched.tobytes()
    assert ignored.tobytes() == want.ignored.tobytes()
    # the plain walk over the full IoU matrix (crowd IoU over the detection's area)
    crowd_rows = np.broadcast_to(crowd, (len(dt_box), len(gt_box)))
    values = iou_similarity(dt_box, gt_box)(np.arange(len(dt_box)),
                                            np.broadcast_to(np.arange(len(gt_box)), crowd_rows.shape),
                                            crowd_rows) if len(gt_box) else np.zeros((len(dt_box), 0))
    taken, reference_ignored = reference_greedy(values, dt_group, gt_group, thresholds.tolist(), ">=",
                                                "last", crowd, area, ranges)
    assert (matched == (taken >= 0)).all() and (ignored == reference_ignored).all()


@SETTINGS
@given(box_groups(), st.data())
def test_the_box_matcher_ignores_unmatched_detections_outside_a_range(drawn, data) -> None:
    """``outside`` (detections x ranges): a detection that takes no GT in a column is ignored
    there where its range says so, as ops/coco.py's numpy path does after greedy_match; a
    matched one keeps what its GT decided."""
    dt_group, ranges, thresholds = drawn[1], drawn[6], drawn[7]
    A, T = len(ranges), thresholds.size
    outside = np.array(data.draw(st.lists(st.booleans(), min_size=dt_group.size * A,
                                          max_size=dt_group.size * A)), bool).reshape(-1, A)
    matched, ignored = match_natively(*drawn)
    want = ignored | (~matched & np.repeat(outside, T, axis=1))
    columns = A * T
    got_matched = np.empty((dt_group.size, columns), bool)
    got_ignored = np.empty((dt_group.size, columns), bool)
    core.coco_match_boxes(*drawn, got_matched, got_ignored, data.draw(st.integers(1, 3)), outside)
    assert got_matched.tobytes() == matched.tobytes()
    assert got_ignored.tobytes() == want.tobytes()


def test_the_box_matcher_refuses_an_outside_of_another_size() -> None:
    with pytest.raises(ValueError, match="coco_match_boxes"):
        core.coco_match_boxes(*good_boxes(), 1, np.zeros((3, 1), bool))
    with pytest.raises(TypeError):
        core.coco_match_boxes(*good_boxes(), 1, np.zeros((2, 1), np.float64))


def test_the_box_matcher_by_hand() -> None:
    """One image: GT 0 [0, 0, 10, 10] and GT 1 a copy of it (a tie: the last wins), GT 2 a
    crowd region; detection 0 takes GT 1 at IoU 1, detection 1 (the same box) GT 0, detection
    2 (the same box again) nothing regular is left, so the crowd region (crowd IoU: 100 / 100
    = 1) takes it, ignored."""
    box = [0.0, 0.0, 10.0, 10.0]
    matched, ignored = match_natively(np.array([box] * 3), np.zeros(3, np.int64),
                                      np.array([box, box, box]), np.zeros(3, np.int64),
                                      np.array([False, False, True]), np.full(3, 100.0),
                                      np.array([[0.0, 1e10]]), np.array([0.5]))
    assert matched[:, 0].tolist() == [True, True, True]
    assert ignored[:, 0].tolist() == [False, False, True]


def good_boxes():
    return [np.zeros((2, 4)), np.zeros(2, np.int64), np.zeros((1, 4)), np.zeros(1, np.int64),
            np.zeros(1, bool), np.zeros(1), np.array([[0.0, 1e10]]), np.array([0.5]),
            np.empty((2, 1), bool), np.empty((2, 1), bool)]


def boxes_changed(i: int, value):
    args = good_boxes()
    args[i] = value
    return args


@pytest.mark.parametrize("args", [
    boxes_changed(0, np.zeros((3, 4))),  # a box too many
    boxes_changed(1, np.array([1, 0], np.int64)),  # detections' groups not sorted
    boxes_changed(3, np.array([2, 1], np.int64)),  # GT groups not sorted (and too many)
    boxes_changed(2, np.zeros((1, 3)).ravel()),  # a box of three numbers
    boxes_changed(4, np.zeros(2, bool)),  # crowd of the wrong size
    boxes_changed(5, np.zeros(2)),  # areas too
    boxes_changed(6, np.zeros(3)),  # ranges not pairs
    boxes_changed(6, np.zeros((0, 2))),  # no range
    boxes_changed(7, np.zeros(0)),  # no threshold
    boxes_changed(7, np.array([np.nan])),  # a threshold not a number
    boxes_changed(8, np.empty((2, 2), bool)),  # matched of the wrong size
    boxes_changed(9, np.empty((1, 1), bool)),  # ignored too
])
def test_the_box_matcher_refuses_malformed_arguments(args) -> None:
    with pytest.raises(ValueError, match="coco_match_boxes"):
        core.coco_match_boxes(*args)


@pytest.mark.parametrize("i, value", [
    (0, np.zeros((2, 4), np.float32)), (1, np.zeros(2)), (4, np.zeros(1, np.int64)),
    (8, b"\0\0"), (9, np.empty((2, 1), np.int64)),
])
def test_the_box_matcher_refuses_buffers_of_another_kind(i: int, value) -> None:
    with pytest.raises(TypeError):
        core.coco_match_boxes(*boxes_changed(i, value))
