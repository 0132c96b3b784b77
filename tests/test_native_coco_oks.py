"""The native core's keypoint matcher (``coco_match_oks``, ``rpx_cli/csrc/coco_oks.c``;
Python face ``OksGeometry.native_greedy_match`` of ``rpx_cli/ops/oks.py``) against its numpy
twin, bit for bit: ``greedy_match`` with ``OksGeometry.similarity`` (with and without the
upper-bound floor), and ``reference_greedy`` over ``reference_oks`` (pycocotools'
``computeOks`` line for line) — on drawn keypoint groups where ties (copied GT), crowd GT,
GT without visible points, areas outside the ranges and more than eight and 128 points
(numpy's pairwise summation) are common; through ``ops.coco.evaluate`` on either path; and
the kernel's refusal of every malformed argument (an exception, never a crash: CI runs this
file under the sanitizers).

The kernel is called directly where it can be (these tests run under ``RPX_NATIVE=0`` too);
they skip where the extension is not built."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.ops.coco import IOU_THRESHOLDS, KEYPOINT_PARAMS, CocoInput, evaluate
from rpx_cli.ops.matching import greedy_match, reference_greedy
from rpx_cli.ops.oks import COCO_SIGMAS, OksGeometry, reference_oks

core = pytest.importorskip("rpx_cli._native")

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
THRESHOLDS = np.minimum(IOU_THRESHOLDS, 1 - 1e-10)


def rows_of(points: np.ndarray, box: np.ndarray | None = None) -> np.ndarray:
    """Keypoint rows ``[x1, y1, v1, ..., bx, by, bw, bh, count]`` of points (N, K, 3), the box
    the points' extent unless given."""
    x, y = points[:, :, 0], points[:, :, 1]
    if box is None:
        box = np.stack([x.min(1), y.min(1), x.max(1) - x.min(1), y.max(1) - y.min(1)], axis=1)
    count = np.count_nonzero(points[:, :, 2] > 0, axis=1)[:, None].astype(np.float64)
    return np.concatenate([points.reshape(len(points), -1), box, count], axis=1)


@st.composite
def keypoint_groups(draw):
    """Sorted groups of GT and detections as keypoint rows (ids into the rows in a drawn
    order), points on a coarse grid; detections copy a GT (OKS 1: ties) or move its points;
    GT rows copied within a group (equal OKS: ties to the last); some GT with no visible
    point (the grown-box distance); crowd flags; range areas in and out of the ranges (and
    -inf: ignored in every range, as keypoint GT without visible points)."""
    k = draw(st.sampled_from([1, 3, 9, 17, 130]))
    sigmas = COCO_SIGMAS[np.arange(k) % 17] * draw(st.sampled_from([1.0, 0.5, 4.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    gt_points, gt_group, dt_points, dt_group = [], [], [], []
    for group in sorted(draw(st.sets(st.integers(0, 40), min_size=1, max_size=4))):
        n_gt = draw(st.integers(0, 5))
        base = []
        for _ in range(n_gt):
            if base and draw(st.booleans()):
                base.append(base[-1].copy())  # a copy: a tie
                continue
            p = np.empty((k, 3))
            p[:, :2] = rng.integers(0, 12, (k, 2)) * 4.0
            # (times 0: no visible point)
            p[:, 2] = rng.choice([0.0, 1.0, 2.0], k) * draw(st.sampled_from([0.0, 1.0, 1.0]))
            base.append(p)
        gt_points += base
        gt_group += [group] * n_gt
        for _ in range(draw(st.integers(0, 7))):
            if base and draw(st.booleans()):
                p = base[draw(st.integers(0, n_gt - 1))].copy()
                p[:, :2] += rng.integers(-2, 3, (k, 2)) * draw(st.sampled_from([0.0, 1.0, 3.0]))
            else:
                p = np.empty((k, 3))
                p[:, :2] = rng.integers(0, 12, (k, 2)) * 4.0
            p[:, 2] = 1.0
            dt_points.append(p)
            dt_group.append(group)
    G, D = len(gt_points), len(dt_points)
    gt = rows_of(np.array(gt_points).reshape(G, k, 3), rng.integers(0, 40, (G, 4)) * 1.0) \
        if G else np.zeros((0, 3 * k + 5))
    dt = rows_of(np.array(dt_points).reshape(D, k, 3)) if D else np.zeros((0, 3 * k + 5))
    oks_area = rng.choice([0.0, 16.0, 200.0, 5000.0], G)
    # the rows in another order than the groups: the ids say where each object's row is
    gt_perm, dt_perm = rng.permutation(G), rng.permutation(D)
    gt_rows, dt_rows = np.empty_like(gt), np.empty_like(dt)
    gt_rows[gt_perm], dt_rows[dt_perm] = gt, dt
    gt_area_rows = np.empty(G)
    gt_area_rows[gt_perm] = oks_area
    crowd = rng.random(G) < draw(st.sampled_from([0.0, 0.3]))
    range_area = np.where(rng.random(G) < 0.1, -np.inf, rng.choice([10.0, 40.0, 200.0], G))
    ranges = np.array(draw(st.sampled_from([[[0.0, 1e10]], [[0.0, 1e10], [0.0, 30.0], [30.0, 1e10]]])))
    thresholds = np.minimum(np.array(draw(st.sampled_from([[0.5], [0.0, 0.5, 1.0], list(IOU_THRESHOLDS)]))),
                            1 - 1e-10)
    geometry = OksGeometry(dt_rows, gt_rows, np.ones(D), gt_area_rows, sigmas,
                           draw(st.sampled_from([None, float(thresholds.min())])))
    return (geometry, dt_perm.astype(np.int64), np.array(dt_group, np.int64),
            gt_perm.astype(np.int64), np.array(gt_group, np.int64), crowd, range_area, ranges,
            thresholds)


def native_match(geometry, dt, dt_group, gt, gt_group, crowd, area, ranges, thresholds, threads=1):
    """The kernel called directly (whatever RPX_NATIVE says)."""
    columns = len(ranges) * thresholds.size
    matched = np.empty((dt_group.size, columns), bool)
    ignored = np.empty((dt_group.size, columns), bool)
    core.coco_match_oks(3 * geometry.sigmas.size + 5, geometry.pred, dt, geometry.gt, gt,
                        geometry.gt_area, (geometry.sigmas * 2) ** 2, dt_group, gt_group, crowd,
                        area, ranges, thresholds, matched, ignored, threads)
    return matched, ignored


@SETTINGS
@given(keypoint_groups(), st.integers(2, 40))
def test_the_oks_matcher_split_among_threads_gives_the_same_flags(drawn, threads: int) -> None:
    """Whole (image, category) groups per thread: the same flags for any number of threads."""
    one = native_match(*drawn)
    split = native_match(*drawn, threads=threads)
    assert one[0].tobytes() == split[0].tobytes() and one[1].tobytes() == split[1].tobytes()


@SETTINGS
@given(keypoint_groups())
def test_the_oks_matcher_equals_greedy_match_and_the_reference(drawn) -> None:
    geometry, dt, dt_group, gt, gt_group, crowd, area, ranges, thresholds = drawn
    if not len(geometry.pred) or not len(geometry.gt):
        return  # (the Python face declines: greedy_match has nothing to walk)
    matched, ignored = native_match(*drawn)
    want = greedy_match(dt_group, gt_group, geometry.similarity(dt, gt), thresholds, ">=",
                        ties="last", gt_crowd=crowd, gt_area=area, area_ranges=ranges)
    assert matched.tobytes() == want.matched.tobytes()
    assert ignored.tobytes() == want.ignored.tobytes()
    # pycocotools' computeOks pair by pair, and the plain walk over the full matrix
    values = np.array([[reference_oks(geometry.pred[i], geometry.gt[j], geometry.gt_area[j],
                                      geometry.sigmas) for j in gt] for i in dt]).reshape(len(dt), len(gt))
    taken, reference_ignored = reference_greedy(values, dt_group, gt_group, thresholds.tolist(), ">=",
                                                "last", crowd, area, ranges)
    assert (matched == (taken >= 0)).all() and (ignored == reference_ignored).all()


def test_the_python_face_is_the_kernel_or_none(monkeypatch) -> None:
    """``native_greedy_match``: the kernel's arrays with the native core, None without it
    (or with a side that has no rows)."""
    points = np.array([[[0.0, 0.0, 1.0], [10.0, 10.0, 1.0]]])
    gt = rows_of(points)
    geometry = OksGeometry(gt.copy(), gt, np.ones(1), np.full(1, 100.0), COCO_SIGMAS[:2], 0.5)
    args = (np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64),
            np.zeros(1, bool), np.full(1, 100.0), np.array([[0.0, 1e10]]), THRESHOLDS)
    monkeypatch.setenv("RPX_NATIVE", "1")
    matched, ignored = geometry.native_greedy_match(*args)
    assert matched.all() and not ignored.any()  # OKS 1
    assert geometry._boxes is None  # the bound's extents are not made for the native walk
    monkeypatch.setenv("RPX_NATIVE", "0")
    assert geometry.native_greedy_match(*args) is None
    assert geometry.similarity(np.zeros(1, np.int64), np.zeros(1, np.int64))(
        np.zeros(1, np.int64), np.zeros((1, 1), np.int64), np.zeros((1, 1), bool)).tolist() == [[1.0]]
    assert geometry._boxes is not None
    monkeypatch.setenv("RPX_NATIVE", "1")
    empty = OksGeometry(np.zeros((0, 11)), gt, np.ones(0), np.full(1, 100.0), COCO_SIGMAS[:2])
    assert empty.native_greedy_match(np.zeros(0, np.int64), np.zeros(0, np.int64), *args[2:]) is None


def test_the_oks_matcher_by_hand() -> None:
    """Two points with σ = 0.1 (variance (2σ)² = 0.04), GT area 100: a detection 1 px off on
    one point has e = 1 / 0.04 / (100 + ε) / 2 = 0.125 there, OKS (1 + exp(-0.125)) / 2 ≈
    0.941: it passes 0.9, not 0.95. Image 0: GT 1 copies GT 0 (equal OKS: detection 0 takes
    the last, GT 1; detection 1, the same, then GT 0). Image 1: a GT without visible points
    compares the box grown by its size ([-10, 20]²): detection 2's points inside, OKS 1."""
    sigmas = np.array([0.1, 0.1])
    gt_points = np.array([[[0.0, 0.0, 1.0], [10.0, 10.0, 1.0]]] * 2 + [[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])
    gt = rows_of(gt_points, np.array([[0.0, 0.0, 10.0, 10.0]] * 3))
    off = [[1.0, 0.0, 1.0], [10.0, 10.0, 1.0]]
    dt = rows_of(np.array([off, off, [[5.0, 5.0, 1.0], [16.0, -6.0, 1.0]]]))
    oks = (1 + np.exp(-(1.0 / 0.04 / (100 + np.spacing(1)) / 2))) / 2
    # (to the last bit but one: numpy's exp of a scalar and of an array may round apart by
    # an ulp on some CPUs — this machine's AVX-512 path did)
    assert abs(oks - reference_oks(dt[0], gt[0], 100.0, sigmas)) <= np.spacing(oks) and 0.9 < oks < 0.95
    geometry = OksGeometry(dt, gt, np.ones(3), np.full(3, 100.0), sigmas)
    matched, ignored = native_match(geometry, np.arange(3), np.array([0, 0, 1]), np.arange(3),
                                    np.array([0, 0, 1]), np.zeros(3, bool), np.full(3, 100.0),
                                    np.array([[0.0, 1e10]]), np.array([0.9, 0.95]))
    assert matched.tolist() == [[True, False], [True, False], [True, True]] and not ignored.any()
    want = greedy_match(np.array([0, 0, 1]), np.array([0, 0, 1]),
                        geometry.similarity(np.arange(3), np.arange(3)), np.array([0.9, 0.95]), ">=",
                        ties="last", gt_crowd=np.zeros(3, bool), gt_area=np.full(3, 100.0),
                        area_ranges=np.array([[0.0, 1e10]]), return_gt=True)
    assert want.gt.tolist() == [[1, -1], [0, -1], [2, 2]]
    assert matched.tolist() == want.matched.tolist()


@pytest.mark.parametrize("seed", range(4))
def test_evaluate_is_the_same_on_either_path(monkeypatch, seed: int) -> None:
    """``ops.coco.evaluate`` of keypoints end to end (COCO's 17 points, GT without visible
    points ignored, crowd GT, more than 20 detections in an image): every array the same bit
    for bit with the kernel and with greedy_match."""
    rng = np.random.default_rng(seed)
    n_images, G, D = 15, 60, 500
    points = np.empty((G, 17, 3))
    points[:, :, :2] = rng.uniform(0, 200, (G, 1, 2)) + rng.normal(0, 20, (G, 17, 2))
    points[:, :, 2] = rng.choice([0.0, 1.0, 2.0], (G, 17), p=[0.3, 0.3, 0.4])
    points[:5, :, 2] = 0.0
    gt = rows_of(points, np.column_stack([rng.uniform(0, 200, (G, 2)), rng.uniform(5, 80, (G, 2))]))
    pick = rng.integers(0, G, D)
    moved = points[pick].copy()
    moved[:, :, :2] += rng.normal(0, 4, (D, 17, 2))
    moved[:, :, 2] = 1.0
    dt = rows_of(moved)
    gt_area = rng.uniform(100, 6000, G)
    no_points = np.count_nonzero(points[:, :, 2] > 0, axis=1) == 0
    data = CocoInput(n_images, 1, rng.integers(0, n_images, G), np.zeros(G, np.int64), np.arange(G),
                     gt_area, rng.random(G) < 0.05, rng.integers(0, n_images, D), np.zeros(D, np.int64),
                     np.arange(D), rng.integers(0, 20, D) / 20,
                     OksGeometry(dt, gt, dt[:, -3] * dt[:, -2], gt_area, COCO_SIGMAS, 0.5),
                     dt_area=dt[:, -3] * dt[:, -2], gt_ignore=no_points)
    monkeypatch.setenv("RPX_NATIVE", "1")
    on = evaluate(data, KEYPOINT_PARAMS)
    monkeypatch.setenv("RPX_NATIVE", "0")
    off = evaluate(data, KEYPOINT_PARAMS)
    for name in ("precision", "recall", "scores"):
        assert getattr(on, name).tobytes() == getattr(off, name).tobytes(), name
    assert on.stats() == off.stats()


def good():
    rows = np.zeros((2, 11))
    return [11, rows, np.zeros(2, np.int64), rows.copy(), np.zeros(1, np.int64), np.zeros(2),
            np.full(2, 0.01), np.zeros(2, np.int64), np.zeros(1, np.int64), np.zeros(1, bool),
            np.zeros(1), np.array([[0.0, 1e10]]), np.array([0.5]), np.empty((2, 1), bool),
            np.empty((2, 1), bool)]


def changed(i: int, value):
    args = good()
    args[i] = value
    return args


@pytest.mark.parametrize("args", [
    changed(0, 9),  # rows too narrow for two points and a box
    changed(6, np.zeros(0)),  # no keypoint
    changed(1, np.zeros(21)),  # rows not of `width` values
    changed(3, np.zeros(23)),  # GT rows too
    changed(2, np.array([0, 2], np.int64)),  # a detection id beyond the rows
    changed(2, np.array([0, -1], np.int64)),  # a negative id
    changed(4, np.array([5], np.int64)),  # a GT id beyond the rows
    changed(2, np.zeros(3, np.int64)),  # ids and groups of different sizes
    changed(5, np.zeros(3)),  # an OKS area per GT row
    changed(7, np.array([1, 0], np.int64)),  # detections' groups not sorted
    changed(8, np.array([2, 1], np.int64)),  # GT groups not sorted (and too many)
    changed(9, np.zeros(2, bool)),  # crowd of the wrong size
    changed(10, np.zeros(2)),  # range areas too
    changed(11, np.zeros(3)),  # ranges not pairs
    changed(11, np.zeros((0, 2))),  # no range
    changed(12, np.zeros(0)),  # no threshold
    changed(12, np.array([np.nan])),  # a threshold not a number
    changed(12, np.array([np.inf])),
    changed(13, np.empty((2, 2), bool)),  # matched of the wrong size
    changed(14, np.empty((1, 1), bool)),  # ignored too
    changed(0, -1),
    changed(0, 2**62),  # a width whose rows overflow
])
def test_the_oks_matcher_refuses_malformed_arguments(args) -> None:
    with pytest.raises(ValueError, match="coco_match_oks"):
        core.coco_match_oks(*args)


@pytest.mark.parametrize("i, value", [
    (1, np.zeros((2, 11), np.float32)), (2, np.zeros(2)), (6, np.zeros(2, np.int64)),
    (9, np.zeros(1, np.int64)), (13, b"\0\0"), (14, np.empty((2, 1), np.int64)),
])
def test_the_oks_matcher_refuses_buffers_of_another_kind(i: int, value) -> None:
    with pytest.raises(TypeError):
        core.coco_match_oks(*changed(i, value))


def test_the_oks_matcher_accepts_the_good_arguments() -> None:
    args = good()
    assert core.coco_match_oks(*args) is None
    assert args[13][:, 0].tolist() == [True, False]  # OKS 1 each; the second finds GT 0 taken
