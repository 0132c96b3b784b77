"""The fast paths of ``rpx eval segmentation3d`` against the plain computations they stand
in for: interval indices from float32 squared norms (exactly the float64 distance's),
every scan's row scores at once (bit for bit the per-matrix ``average_scores``), the
broadcast ``not_in``, and page-aligned file buffers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.io.filebuffer import PAGE_BYTES, FileBuffer, page_aligned
from rpx_cli.ops.confusion import average_scores, confusion_scores, not_in
from rpx_cli.ops.lidar import RangeIntervals, _root_floor, point_distances
from rpx_cli.tasks.segmentation3d.scores import averaging, scan_scores

RANGES = [(0.0, 20.0), (20.0, 50.0), (50.0, None)]


def _points_near(limits: list[float], n: int, rng: np.random.Generator) -> np.ndarray:
    """float32 points on, and one or two float32 steps either side of, circles and spheres
    of the given radii, plus ordinary points, NaN, infinities, huge and tiny values."""
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = rng.choice(np.array(limits, dtype=np.float64), n)
    points = np.zeros((n, 4), np.float32)
    points[:, 0] = (radius * np.cos(angle)).astype(np.float32)
    points[:, 1] = (radius * np.sin(angle)).astype(np.float32)
    steps = rng.integers(-2, 3, (n, 2))
    for axis in range(2):
        for _ in range(2):
            move = steps[:, axis] != 0
            toward = np.where(steps[move, axis] > 0, np.inf, -np.inf).astype(np.float32)
            points[move, axis] = np.nextafter(points[move, axis], toward)
            steps[move, axis] -= np.sign(steps[move, axis])
    points[:, 2] = rng.normal(0, 2, n).astype(np.float32)
    special = rng.choice(n, 40, replace=False)
    values = np.array([np.nan, np.inf, -np.inf, 3e38, -3e38, 1e-40, -0.0, 0.0], np.float32)
    points[special[:20], 0] = rng.choice(values, 20)
    points[special[20:], 1] = rng.choice(values, 20)
    return points


@pytest.mark.parametrize("norm", ["xy", "xyz"])
@pytest.mark.parametrize("ranges", [
    RANGES,
    [(0.0, 50.0), (20.0, 90.0), (50.0, None)],
    [(0.5, 1.5), (1e-3, 7.25)],
    [(-1.0, 3.0)],  # a negative limit: no band, like 0
    [(0.0, 1e30)],  # a square beyond float32: every point on the exact path
    [(1e-15, 2.0)],  # a square below 1e-20: the exact path too
])
def test_interval_of_float32_points_equals_the_float64_distance(norm: str, ranges) -> None:
    rng = np.random.default_rng(len(ranges))
    intervals = RangeIntervals(ranges)
    limits = [abs(v) for v in intervals.limits.tolist()] + [33.3]
    points = _points_near(limits, 20_000, rng)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = intervals.index(point_distances(points, norm))
    got = intervals.index_points(points, norm)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    # the near-limit points do reach every interval (the test would catch an off-by-one)
    assert set(np.unique(got).tolist()) >= set(range(1, intervals.count))


@settings(max_examples=60, deadline=None)
@given(limit=st.floats(1e-9, 1e17, allow_nan=False), seed=st.integers(0, 1000))
def test_interval_at_any_limit_equals_the_float64_distance(limit: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    intervals = RangeIntervals([(0.0, limit), (limit, None)])
    points = _points_near([limit, limit * 0.5, limit * 2], 2_000, rng)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = intervals.index(point_distances(points, "xy"))
    np.testing.assert_array_equal(intervals.index_points(points, "xy"), expected)


def test_more_than_255_limits_use_uint16_and_other_dtypes_the_exact_path() -> None:
    intervals = RangeIntervals([(float(k), float(k + 1)) for k in range(300)])
    points = _points_near([float(k) for k in range(0, 300, 7)], 5_000, np.random.default_rng(3))
    expected = intervals.index(point_distances(points, "xy"))
    assert expected.dtype == np.uint16
    np.testing.assert_array_equal(intervals.index_points(points, "xy"), expected)
    as_float64 = points.astype(np.float64)
    np.testing.assert_array_equal(intervals.index_points(as_float64, "xy"), expected)


def test_root_floor_is_the_smallest_square_whose_root_reaches_the_limit() -> None:
    for limit in [1e-9, 0.1, 1.0, 2.0, 20.0, 49.9999999, 50.0, 1e17]:
        floor = _root_floor(limit)
        assert np.sqrt(floor) >= limit
        assert np.sqrt(np.nextafter(floor, 0.0)) < limit
    assert _root_floor(0.0) == 0.0 and _root_floor(-3.0) == 0.0


def _random_matrices(rng: np.random.Generator, buckets: int, rows: int, cols: int) -> np.ndarray:
    matrices = rng.integers(0, 50, (buckets, rows, cols))
    matrices[rng.random(matrices.shape) < 0.4] = 0
    matrices[-1] = 0  # an empty range bucket
    if rows > 2:
        matrices[:, 1] = 0  # a class without support anywhere
    return matrices


@pytest.mark.parametrize("protocol", ["autoware", "semantickitti"])
@pytest.mark.parametrize("seed", range(8))
def test_scan_scores_equal_average_scores_of_each_matrix_bit_for_bit(protocol: str,
                                                                     seed: int) -> None:
    rng = np.random.default_rng(seed)
    gt_values = np.sort(rng.choice(np.arange(-1, 25), int(rng.integers(1, 12)), replace=False))
    pred_values = np.sort(rng.choice(np.arange(-1, 30), int(rng.integers(1, 14)), replace=False))
    gt_values, pred_values = gt_values.astype(np.int64), pred_values.astype(np.int64)
    params = {"num_classes": 20 if protocol == "semantickitti" or seed % 2 else None,
              "ignore_index": [0, 255] if seed % 3 else [], "protocol": protocol}
    matrices = _random_matrices(rng, 4, gt_values.size, pred_values.size)
    got = scan_scores(gt_values, pred_values, matrices, params)
    # the plain way: one dense matrix over the class axis per bucket, then average_scores
    classes = np.union1d(gt_values, pred_values)
    if params["num_classes"] is not None:
        classes = np.union1d(classes, np.arange(params["num_classes"]))
    scored = ~np.isin(classes, params["ignore_index"])
    if params["num_classes"] is not None:
        scored &= (classes >= 0) & (classes < params["num_classes"])
    for matrix, (miou, acc) in zip(matrices, got, strict=True):
        dense = np.zeros((classes.size, classes.size), np.int64)
        dense[np.ix_(np.searchsorted(classes, gt_values), np.searchsorted(classes, pred_values))] = matrix
        means = average_scores(confusion_scores(dense), **averaging(scored, protocol))
        assert (miou, acc) == (means["miou"], means["acc"])  # exactly, None included
    assert got[-1] == (None, None)


def test_not_in_equals_isin() -> None:
    rng = np.random.default_rng(0)
    values = np.sort(rng.choice(300, 40, replace=False)).astype(np.int64) - 5
    for excluded in ([], [0], [0, 255, -1], list(range(-5, 300, 3))):
        np.testing.assert_array_equal(not_in(values, excluded), ~np.isin(values, excluded))


def test_file_buffers_start_on_a_page(tmp_path) -> None:
    """A buffer 16 bytes past a page boundary made the kernel's copy ~5x slower."""
    for size in (1, 4095, 1 << 20, 3 << 20):
        assert page_aligned(size).ctypes.data % PAGE_BYTES == 0
        assert page_aligned(size).size == size
    buffer = FileBuffer(digest=False)
    for size in (10, 100_000, 3_000_000, 5_000_000):  # growing: a new allocation each time
        path = tmp_path / f"f{size}.bin"
        data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
        data.tofile(path)
        view = buffer.read(str(path))
        assert view.ctypes.data % PAGE_BYTES == 0
        np.testing.assert_array_equal(view, data)


def test_class_scores_of_a_stack_equal_each_matrix() -> None:
    rng = np.random.default_rng(7)
    stack = rng.integers(0, 30, (3, 5, 6))  # 5 classes and an "other" column
    stack[1, 2] = 0
    stacked = confusion_scores(stack)
    for k, matrix in enumerate(stack):
        alone = confusion_scores(matrix)
        for field in ("support", "tp", "iou", "precision", "recall", "f1", "predicted"):
            np.testing.assert_array_equal(getattr(stacked, field)[k], getattr(alone, field))


@pytest.mark.parametrize("shape", [(0, 0), (3, 4), (19, 20)])
def test_frame_confusions_pickle_to_equal_writable_arrays(shape) -> None:
    """A worker's confusion reaches the parent as raw bytes (``FrameConfusion.__reduce__``):
    the same values, dtypes and shapes, from a strided view too, and writable."""
    import pickle

    from rpx_cli.ops.confusion import FrameConfusion

    rng = np.random.default_rng(len(shape))
    full = rng.integers(0, 1 << 40, (2, shape[0], shape[1] + 3))
    frame = FrameConfusion(np.arange(shape[0], dtype=np.int64), np.arange(shape[1]) - 1,
                           full[1, :, 1:shape[1] + 1])
    back = pickle.loads(pickle.dumps(frame, pickle.HIGHEST_PROTOCOL))
    for name in ("gt_labels", "pred_labels", "counts"):
        got, expected = getattr(back, name), getattr(frame, name)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
        assert got.flags.writeable
