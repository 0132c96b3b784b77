"""Each fast kernel against the readable reference that lives beside it in the package
(workspaces, chunking, dtype tricks and caches must not change a number), and the private
fast paths (scipy's assignment solver loaded directly, the memoised .npy header parser)
against the public functions they stand in for."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.io.images import decode_image
from rpx_cli.io.npy import parse_npy
from rpx_cli.ops.assignment import linear_sum_assignment
from rpx_cli.ops.blocks import block_sums, reference_block_sums
from rpx_cli.ops.confusion import (
    FrameConfusion,
    add_confusions,
    code_counts,
    frame_confusion,
    interval_confusions,
    reference_confusion,
    reference_interval_confusions,
    sum_confusions,
)
from rpx_cli.ops.depth import METRICS, finalize, reference_metrics
from rpx_cli.ops.depth_kernel import DepthKernel
from rpx_cli.ops.image_quality import reference_ssim, ssim
from rpx_cli.ops.lidar import LabelMap, RangeIntervals, reference_label_map
from rpx_cli.ops.reprojection import ReprojectionKernel, reference_reprojected_agreement
from rpx_cli.ops.warp import motion


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunk", [7, 1000, 1 << 17])
def test_depth_kernel_equals_the_formulas(dtype, chunk: int) -> None:
    rng = np.random.default_rng(chunk)
    gt = rng.uniform(0.2, 20, 5000)
    gt[rng.random(gt.size) < 0.1] = 0  # invalid pixels
    pred = gt * rng.lognormal(0, 0.3, gt.size)
    pred[:50] = 0  # clipped at 1e-6
    pred, gt = pred.astype(dtype), gt.astype(dtype)
    expected = reference_metrics(pred, gt)
    sums = DepthKernel(dtype, chunk=chunk).sums(pred, gt, valid=gt > 0)[0]
    got = finalize(sums)
    tolerance = 1e-6 if dtype is np.float32 else 1e-10
    for key in METRICS:
        assert got[key] == pytest.approx(expected[key], rel=tolerance, abs=1e-12), key


def test_depth_kernel_of_an_empty_frame_is_null() -> None:
    gt = np.zeros(10)
    assert finalize(DepthKernel(np.float64).sums(np.ones(10), gt, valid=gt > 0)[0]) == \
        reference_metrics(np.ones(10), gt)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), block=st.sampled_from([1, 2, 3, 8, 16]),
       dtype=st.sampled_from([np.uint8, np.uint16, np.float32]))
def test_block_sums_rows_first_equal_the_plain_reshape(seed: int, block: int, dtype) -> None:
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(block, 5 * block + 3, 2))
    data = (rng.random(shape) * 255).astype(dtype)
    accumulate = np.float64 if dtype is np.float32 else np.uint64
    np.testing.assert_array_equal(block_sums(data, block, dtype=accumulate),
                                  reference_block_sums(data, block, dtype=accumulate))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), dtype=st.sampled_from([np.uint8, np.uint16, np.int32, np.int64]),
       ignore=st.sampled_from([(), (0,), (255,), (3, 7)]))
def test_frame_confusion_fast_paths_equal_the_plain_bincount(seed: int, dtype, ignore) -> None:
    rng = np.random.default_rng(seed)
    high = 12 if dtype in (np.int32, np.int64) else int(np.iinfo(dtype).max) + 1
    gt = rng.integers(0, min(high, 12), (17, 23)).astype(dtype)
    pred = rng.integers(0, min(high, 14), (17, 23)).astype(dtype)
    if dtype is np.uint8:
        gt[0, :5] = 255
    fast, plain = frame_confusion(gt, pred, ignore), reference_confusion(gt, pred, ignore)
    np.testing.assert_array_equal(fast.gt_labels, plain.gt_labels)
    np.testing.assert_array_equal(fast.pred_labels, plain.pred_labels)
    np.testing.assert_array_equal(fast.counts, plain.counts)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), run=st.sampled_from([1, 3, 8, 9, 50, 1000]),
       size=st.integers(0, 3000))
def test_counting_by_runs_equals_bincount(seed: int, run: int, size: int) -> None:
    """Region-like codes (runs of ``run`` on average: counted by runs) and noisy ones
    (counted directly) against np.bincount; label maps with regions through frame_confusion
    against the reference."""
    rng = np.random.default_rng(seed)
    codes = np.repeat(rng.integers(0, 300, size // run + 1), rng.integers(1, 2 * run, size // run + 1))
    codes = codes[:size].astype(np.uint16)
    got = code_counts(codes, 512)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.bincount(codes, minlength=512))
    gt = np.repeat(rng.integers(0, 20, (40, 1)), 64, axis=1).astype(np.uint8)
    gt[:, rng.integers(0, 64):] = rng.integers(0, 256)
    pred = np.roll(gt, int(rng.integers(-3, 4)), axis=1)
    for ignore in ((), (int(gt[0, 0]),)):
        fast, plain = frame_confusion(gt, pred, ignore), reference_confusion(gt, pred, ignore)
        np.testing.assert_array_equal(fast.counts, plain.counts)
        np.testing.assert_array_equal(fast.gt_labels, plain.gt_labels)
        np.testing.assert_array_equal(fast.pred_labels, plain.pred_labels)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000),
       dtypes=st.sampled_from([(np.uint8, np.uint8), (np.uint16, np.uint16), (np.int64, np.int8),
                               (np.int16, np.uint8), (np.uint16, np.int32)]),
       high=st.sampled_from([3, 20, 300, 2000, 6000]), intervals=st.sampled_from([None, 1, 4]),
       ignore=st.sampled_from([(), (0,), (-1, 2)]))
def test_interval_confusions_equal_a_mask_per_interval(seed: int, dtypes, high: int, intervals,
                                                       ignore) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    labels = []
    for dtype in dtypes:
        top = min(high, int(np.iinfo(dtype).max) + 1)
        low = -2 if np.dtype(dtype).kind == "i" else 0
        labels.append(rng.integers(low, top, n).astype(dtype))
    gt, pred = labels
    interval = None if intervals is None else rng.integers(0, intervals, n).astype(np.uint8)
    gt_values, pred_values, counts = interval_confusions(gt, pred, interval, intervals or 1, ignore)
    plain = reference_interval_confusions(gt, pred, np.zeros(n, np.uint8) if interval is None
                                          else interval, intervals or 1, ignore)
    assert counts.shape[0] == len(plain)
    for matrix, expected in zip(counts, plain, strict=True):
        got = FrameConfusion.trimmed(gt_values, pred_values, matrix)
        np.testing.assert_array_equal(got.gt_labels, expected.gt_labels)
        np.testing.assert_array_equal(got.pred_labels, expected.pred_labels)
        np.testing.assert_array_equal(got.counts, expected.counts)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_adding_confusions_is_exact_in_any_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    frames = []
    for _ in range(int(rng.integers(1, 6))):
        gt, pred = rng.integers(-1, 6, 40), rng.integers(0, 8, 40)
        frames.append(frame_confusion(gt[gt != 3], pred[gt != 3]) if rng.random() < 0.8 else
                      frame_confusion(np.zeros(0, np.int64), np.zeros(0, np.int64)))
    whole = reference_confusion(np.concatenate([np.repeat(f.gt_labels, f.counts.sum(1))
                                                for f in frames]),
                                np.concatenate([np.repeat(np.tile(f.pred_labels, f.gt_labels.size),
                                                          f.counts.ravel()) for f in frames]))
    for order in (frames, frames[::-1], [frames[i] for i in rng.permutation(len(frames))]):
        total = sum_confusions(order)
        np.testing.assert_array_equal(total.gt_labels, whole.gt_labels)
        np.testing.assert_array_equal(total.pred_labels, whole.pred_labels)
        np.testing.assert_array_equal(total.counts, whole.counts)
    pairwise = add_confusions(sum_confusions(frames[:1]), sum_confusions(frames[1:]))
    np.testing.assert_array_equal(pairwise.counts, whole.counts)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), dtype=st.sampled_from([np.uint8, np.uint16, np.int64]),
       wide=st.booleans())
def test_label_map_equals_a_dict_lookup(seed: int, dtype, wide: bool) -> None:
    rng = np.random.default_rng(seed)
    keys = rng.choice(300 if dtype is not np.uint8 else 256, size=12, replace=False).tolist()
    if dtype is np.int64:
        keys += [-5, 70_000]
    values = rng.integers(-1 if wide else 0, 300 if wide else 20, len(keys)).tolist()
    mapping = dict(zip(keys, values, strict=True))
    pool = np.array([*keys, *keys, 7, 255], dtype=np.int64)
    labels = rng.choice(pool, 50).astype(dtype)
    mapped, unmapped = LabelMap(mapping).apply(labels)
    expected, missing = reference_label_map(mapping, labels)
    assert unmapped.tolist() == missing
    listed = np.array([m is not None for m in expected])
    assert mapped[listed].tolist() == [m for m in expected if m is not None]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32, np.int64])
@pytest.mark.parametrize("wide", [False, True])
def test_label_map_of_an_empty_scan_is_empty(dtype, wide: bool) -> None:
    """An empty scan (an empty .label file) maps to no labels and nothing unmapped: there is
    no extreme to look for (the fuzzing found the reduction over nothing)."""
    mapping = {0: 0, 1: -1 if wide else 1, 40: 2}
    mapped, unmapped = LabelMap(mapping).apply(np.zeros(0, dtype))
    assert mapped.size == 0 and unmapped.size == 0
    assert reference_label_map(mapping, np.zeros(0, dtype)) == ([], [])


def test_range_intervals_equal_searchsorted() -> None:
    rng = np.random.default_rng(0)
    distance = np.concatenate([rng.uniform(-5, 120, 1000), [0.0, 20.0, 50.0, 90.0, np.nan, np.inf]])
    intervals = RangeIntervals([(0.0, 50.0), (20.0, 90.0), (50.0, None)])
    np.testing.assert_array_equal(intervals.index(distance), intervals.reference_index(distance))
    assert intervals.spans == [(1, 3), (2, 4), (3, 5)] and intervals.count == 5


@pytest.mark.parametrize("shape", [(11, 11), (32, 45, 3), (64, 40)])
def test_ssim_workspace_kernel_equals_the_formula(shape) -> None:
    rng = np.random.default_rng(sum(shape))
    x = (rng.random(shape) * 255).astype(np.uint8)
    y = np.clip(x + rng.integers(-30, 31, shape), 0, 255).astype(np.uint8)
    for _ in range(2):  # the second call reuses the cached workspace
        assert ssim(x, y, 255) == pytest.approx(reference_ssim(x, y, 255), rel=1e-12, abs=1e-15)


def _camera_pose(yaw_deg: float, roll_deg: float, position) -> np.ndarray:
    yaw, roll = np.radians(yaw_deg), np.radians(roll_deg)
    turn = np.array([[np.cos(yaw), 0, np.sin(yaw)], [0, 1, 0], [-np.sin(yaw), 0, np.cos(yaw)]])
    spin = np.array([[np.cos(roll), -np.sin(roll), 0], [np.sin(roll), np.cos(roll), 0], [0, 0, 1]])
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = turn @ spin, position
    return pose


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), rows=st.sampled_from([1, 3, 1 << 16]),
       float_indices=st.booleans())
def test_fused_reprojection_equals_the_warp_steps_bit_for_bit(seed: int, rows: int,
                                                              float_indices: bool) -> None:
    """The chunked kernel against the step-by-step reference: blocky scenes with depth
    edges, holes (0, and NaN in frame t+1), points leaving the image or going behind the
    camera, noise; chunks of one row, a few rows or the whole frame; flat indices in
    float32 and (as for frames of 2^24 pixels and more) in integers."""
    rng = np.random.default_rng(seed)
    h, w = (int(n) for n in rng.integers(2, 40, 2))
    frames = []
    for _ in range(2):
        depth = np.full((h, w), rng.uniform(2, 6), np.float32)
        for _ in range(int(rng.integers(0, 4))):  # boxes in front: depth edges
            y, x = rng.integers(0, h), rng.integers(0, w)
            depth[y:y + int(rng.integers(1, h)), x:x + int(rng.integers(1, w))] = rng.uniform(0.3, 2)
        depth *= np.exp(rng.normal(0, 0.02, (h, w))).astype(np.float32)
        depth[rng.random((h, w)) < 0.1] = 0
        frames.append(depth)
    frames[1][rng.random((h, w)) < 0.05] = np.nan
    intrinsics = tuple(float(v) for v in (rng.uniform(0.5, 2) * w, rng.uniform(0.5, 2) * w,
                                          (w - 1) / 2 + rng.normal(0, 2), (h - 1) / 2 + rng.normal(0, 2)))
    step = rng.normal(0, 0.3 if seed % 5 == 0 else 0.03, 3)  # sometimes far: points leave
    transform = motion(np.eye(4), _camera_pose(rng.normal(0, 4), rng.normal(0, 4), step))
    options = {"occlusion": (0.01, 0.01), "edge": (0.05, 0.05)}
    expected = reference_reprojected_agreement(frames[0], frames[1], intrinsics, intrinsics,
                                               transform, **options)
    kernel = ReprojectionKernel((h, w), chunk_pixels=rows * w)
    if not float_indices:
        kernel.exact_float_indices = 0
    for _ in range(2):  # the second call reuses the workspace
        got = kernel.agreement(frames[0], frames[1], intrinsics, intrinsics, transform, **options)
        assert got == expected


@pytest.mark.parametrize("maximize", [False, True])
def test_directly_loaded_assignment_solver_is_scipys(maximize: bool) -> None:
    from scipy.optimize import linear_sum_assignment as public

    rng = np.random.default_rng(5)
    for shape in ((1, 1), (4, 4), (3, 7), (9, 2)):
        cost = rng.random(shape)
        for got, expected in zip(linear_sum_assignment(cost, maximize), public(cost, maximize),
                                 strict=True):
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ["<f4", ">f8", "<i2", "u1", "?", "<c16", "<M8[s]"])
@pytest.mark.parametrize("fortran", [False, True])
def test_memoised_npy_parser_equals_numpy_load(dtype: str, fortran: bool) -> None:
    rng = np.random.default_rng(1)
    array = (rng.random((5, 7)) * 100).astype(dtype)
    if fortran:
        array = np.asfortranarray(array)
    stream = io.BytesIO()
    np.save(stream, array)
    data = np.frombuffer(stream.getvalue(), dtype=np.uint8)
    for _ in range(2):  # the second parse takes the header from the cache
        got = parse_npy(data, "a.npy")
        expected = np.load(io.BytesIO(stream.getvalue()))
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


def _interlaced_png(pixels: np.ndarray) -> bytes:
    """An Adam7-interlaced 8-bit grayscale PNG (Pillow writes none), filter 0 per row."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    h, w = pixels.shape
    passes = [(0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2),
              (1, 0, 2, 1)]  # (row start, column start, row step, column step)
    raw = b"".join(b"\x00" + row.tobytes() for y0, x0, dy, dx in passes
                   for row in pixels[y0::dy, x0::dx] if row.size)
    header = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 1)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


@pytest.mark.parametrize("kind", ["L", "P", "P-transparent", "I;16", "I;16-odd", "1", "LA", "RGB",
                                  "RGBA", "L-interlaced"])
def test_png_decoded_into_an_array_equals_numpy_asarray(kind: str) -> None:
    """The direct decode (8-bit, palette and 16-bit grayscale PNGs) and the np.asarray path
    (every other kind) give Pillow's own pixels, dtype included."""
    from PIL import Image

    rng = np.random.default_rng(len(kind))
    h, w = (37, 53) if kind.endswith("odd") else (48, 64)
    values = rng.integers(0, 256, (h, w, 4)).astype(np.uint8)
    stream = io.BytesIO()
    if kind == "L-interlaced":
        stream.write(_interlaced_png(values[..., 0]))
    elif kind.startswith("I;16"):
        Image.fromarray(rng.integers(0, 65536, (h, w)).astype(np.uint16)).save(stream, "PNG")
    elif kind.startswith("P"):
        image = Image.fromarray(values[..., 0] % 17).convert("P")
        image.save(stream, "PNG", **({"transparency": 3} if kind == "P-transparent" else {}))
    else:
        channels = {"L": 1, "1": 1, "LA": 2, "RGB": 3, "RGBA": 4}[kind]
        array = values[..., 0] if channels == 1 else values[..., :channels]
        Image.fromarray(array).convert(kind).save(stream, "PNG")
    data = stream.getvalue()
    with Image.open(io.BytesIO(data)) as image:
        expected = np.asarray(image)
        if expected.dtype == np.bool_:
            expected = expected.view(np.uint8)
    got = decode_image(np.frombuffer(data, np.uint8), "x.png")
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
