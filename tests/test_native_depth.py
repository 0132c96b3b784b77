"""The native depth kernel (``depth_sums``, ``rpx_cli/csrc/depth.c``) against its numpy twin
(:class:`~rpx_cli.ops.depth_kernel.DepthKernel`'s chunks, ``RPX_NATIVE=0``) and the float64
formulas (:func:`~rpx_cli.ops.depth.reference_metrics`): counts exactly equal, sums to the
SPEC's 1e-6 relative, delta counts exact at the thresholds' edges, identical maps exactly 0.

The kernel is called directly, so these tests run under ``RPX_NATIVE=0`` and the sanitizer
build too; they skip where the extension is not built.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.ops.depth import DELTA_THRESHOLDS, METRICS, DepthSums, finalize, reference_metrics
from rpx_cli.ops.depth_kernel import DepthKernel, NonFinitePrediction, gt_valid

core = pytest.importorskip("rpx_cli._native")

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
COUNTS = ("n", "delta1", "delta2", "delta3")


def native(pred, gt, scale=None, valid=None) -> tuple[DepthSums, int]:
    """``depth_sums`` of a frame (validity from the GT when ``valid`` is None) and its count
    of non-finite predictions."""
    *values, bad = core.depth_sums(np.ascontiguousarray(pred, np.float32).ravel(), np.ravel(gt),
                                   float(scale or 0.0), valid, *DELTA_THRESHOLDS)
    return DepthSums(*values), bad


def twin(pred, gt, scale=None, valid=None) -> DepthSums:
    """The numpy chunks on the same frame (``RPX_NATIVE=0``'s path)."""
    gt = np.ravel(gt)
    valid = gt_valid(gt, scale) if valid is None else valid
    kernel = DepthKernel(np.float32, chunk=1 << 17)
    return kernel.numpy_sums(np.ravel(pred).astype(np.float32), gt, valid=valid, gt_scale=scale)[0]


LOG_RELATIVE = 3e-7  # d's float32 error, relative to itself (tests/test_depth_log.py)


def assert_like_reference(got: dict, pred, gt, delta_gt=None) -> None:
    """Every key within 1e-6 relative of the float64 formulas, deltas exact (against
    ``delta_gt`` when given); silog within what d's float32 rounding allows (a standard
    deviation moves by at most the largest error of d, which is not relative to silog: ~0
    when d is nearly constant)."""
    expected = reference_metrics(pred, gt)
    if delta_gt is not None:
        expected.update({key: value for key, value in reference_metrics(pred, delta_gt).items()
                         if key.startswith("delta")})
    g = np.ravel(gt).astype(np.float64)
    valid = np.isfinite(g) & (g > 0)
    p = np.maximum(np.ravel(pred)[valid].astype(np.float64), 1e-6)
    bound = LOG_RELATIVE * float(np.max(np.abs(np.log(p) - np.log(g[valid])), initial=0.0))
    for key in METRICS:
        if expected[key] is None:
            assert got[key] is None, key
        elif key.startswith("delta"):
            assert got[key] == expected[key], key
        else:
            assert got[key] == pytest.approx(expected[key], rel=1e-6,
                                             abs=bound + 1e-12 if key == "silog" else 1e-300), key


def assert_close(a: DepthSums, b: DepthSums, rel: float = 1e-6) -> None:
    for name in COUNTS:
        assert getattr(a, name) == getattr(b, name), name
    scale = {"log_sum": a.abs_log, "log_m2": a.log_m2 + a.abs_log * 1e-3}
    for name in ("abs_rel", "sq_rel", "sq_err", "log_sum", "log_m2", "abs_log"):
        x, y = getattr(a, name), getattr(b, name)
        assert abs(x - y) <= rel * max(abs(x), abs(y), scale.get(name, 0.0)) + 1e-300, (name, x, y)


def frames(draw, size):
    """A frame: GT in [0.1, 80] m with holes (0, NaN, inf), predictions from near-perfect to
    far off, some clipped below 1e-6."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    gt = rng.uniform(0.1, 80.0, size).astype(np.float32)
    holes = rng.random(size)
    gt[holes < draw(st.floats(0, 0.5))] = 0.0
    gt[holes > 0.99] = np.nan
    gt[(holes > 0.985) & (holes <= 0.99)] = np.inf
    spread = draw(st.sampled_from([0.0, 1e-6, 0.01, 0.3, 3.0]))
    pred = (np.nan_to_num(gt, nan=1.0, posinf=1.0) * np.exp(rng.normal(0, spread, size))).astype(np.float32)
    pred[rng.random(size) < 0.01] = rng.choice([0.0, -1.0, 1e-9], 1)[0]
    return pred, gt


@st.composite
def frame(draw):
    size = draw(st.sampled_from([1, 7, 2047, 2048, 2049, 5000, 20000]))
    return frames(draw, size)


@SETTINGS
@given(frame())
def test_equals_the_numpy_twin_and_the_float64_formulas(case):
    pred, gt = case
    fused, bad = native(pred, gt)
    assert bad == 0
    assert_close(fused, twin(pred, gt))
    assert_like_reference(finalize(fused), pred, gt)


@SETTINGS
@given(frame(), st.sampled_from([1000.0, 256.0, 5000.0, 3.3]))
def test_uint16_gt_in_1_over_scale_metres(case, scale):
    pred, gt = case
    raw = np.round(np.nan_to_num(gt, nan=0.0, posinf=0.0) * scale).clip(0, 65535).astype(np.uint16)
    fused, _ = native(pred, raw, scale)
    assert_close(fused, twin(pred, raw, scale))
    # the kernel sums over raw / scale rounded once to float32 (DepthKernel's docstring), so
    # the formulas are given the same metres; it decides a δ count near its threshold from
    # raw / scale exactly, so the δs are checked against those (a hypothesis example had a
    # pixel whose float32-rounded metres fell on the other side of 1.25²)
    assert_like_reference(finalize(fused), pred, (raw / scale).astype(np.float32), raw / scale)


@SETTINGS
@given(frame(), st.integers(0, 2**32 - 1))
def test_an_explicit_mask_decides_which_pixels_count(case, seed):
    pred, gt = case
    gt = np.nan_to_num(gt, nan=2.0, posinf=2.0, neginf=2.0)
    gt[gt == 0] = 2.0
    valid = np.random.default_rng(seed).random(gt.size) < 0.7
    fused, _ = native(pred, gt, valid=valid)
    assert fused.n == int(valid.sum())
    assert_close(fused, twin(pred, gt, valid=valid))


def test_identical_maps_give_exact_zeros_and_a_constant_ratio_zero_silog():
    gt = np.random.default_rng(1).uniform(0.5, 20, 9001).astype(np.float32)
    same, _ = native(gt, gt)
    assert (same.abs_rel, same.sq_rel, same.sq_err, same.log_sum, same.log_m2, same.abs_log) == (0,) * 6
    assert same.delta1 == same.delta2 == same.delta3 == same.n == 9001
    double, _ = native(2 * gt, gt)  # exactly twice: ln 2 at every pixel
    assert double.log_m2 == 0.0
    assert finalize(double)["silog"] == 0.0
    assert double.log_sum / double.n == pytest.approx(math.log(2.0), rel=1e-7)


def test_delta_counts_are_exact_at_the_thresholds():
    """Ratios one float32 ulp either side of 1.25^k (both ways round): the count is the
    reference's ``max(p/g, g/p) < T`` in float64, not the float32 log's guess."""
    g = np.float32(1.7)
    preds = []
    for t in DELTA_THRESHOLDS:
        for target in (g * t, g / t):
            centre = np.float32(target)
            preds += [np.nextafter(centre, np.float32(0)), centre, np.nextafter(centre, np.float32(np.inf))]
    pred = np.array(preds, np.float32)
    gt = np.full(pred.size, g, np.float32)
    fused, _ = native(pred, gt)
    p, q = pred.astype(np.float64), gt.astype(np.float64)
    worst = np.maximum(p / q, q / p)
    assert [fused.delta1, fused.delta2, fused.delta3] == [int((worst < t).sum()) for t in DELTA_THRESHOLDS]


def test_non_finite_predictions_count_only_at_valid_pixels():
    gt = np.array([1.0, 2.0, 0.0, np.nan, 3.0], np.float32)
    pred = np.array([np.nan, np.inf, np.nan, np.inf, 1.0], np.float32)
    fused, bad = native(pred, gt)
    assert bad == 2 and fused.n == 3
    with pytest.raises(NonFinitePrediction, match="2 non-finite"):
        DepthKernel(np.float32).sums(pred, gt, valid_from_gt=True)


def test_an_empty_frame_and_a_frame_without_valid_pixels():
    empty, bad = native(np.zeros(0, np.float32), np.zeros(0, np.float32))
    assert (empty.n, bad) == (0, 0)
    none, _ = native(np.ones(4, np.float32), np.zeros(4, np.float32))
    assert none.n == 0 and finalize(none) == dict.fromkeys(METRICS)


def test_the_same_bits_on_every_call_and_block_split():
    """Fixed-lane float64 sums: a frame gives the same bits every time (the AVX2 and
    baseline copies do the same arithmetic in the same order)."""
    rng = np.random.default_rng(5)
    gt = rng.uniform(0.5, 20, 100_003).astype(np.float32)
    pred = (gt * rng.normal(1, 0.2, gt.size)).astype(np.float32)
    first = native(pred, gt)[0].as_tuple()
    assert all(native(pred, gt)[0].as_tuple() == first for _ in range(3))


def test_arguments_are_checked():
    f32 = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="pred: wrong element type"):
        core.depth_sums(np.ones(4), f32, 0.0, None, *DELTA_THRESHOLDS)
    with pytest.raises(TypeError, match="gt: wrong element type"):
        core.depth_sums(f32, np.ones(4, np.uint16), 0.0, None, *DELTA_THRESHOLDS)
    with pytest.raises(TypeError, match="gt: wrong element type"):
        core.depth_sums(f32, f32, 1000.0, None, *DELTA_THRESHOLDS)
    with pytest.raises(ValueError, match="differ in length"):
        core.depth_sums(f32, np.ones(5, np.float32), 0.0, None, *DELTA_THRESHOLDS)
    with pytest.raises(ValueError, match="differ in length"):
        core.depth_sums(f32, f32, 0.0, np.ones(3, bool), *DELTA_THRESHOLDS)
    with pytest.raises(ValueError, match="thresholds"):
        core.depth_sums(f32, f32, 0.0, None, 1.25, 1.2, 2.0)
    with pytest.raises(ValueError, match="scale"):
        core.depth_sums(f32, np.ones(4, np.uint16), math.inf, None, *DELTA_THRESHOLDS)
    with pytest.raises(TypeError):
        core.depth_sums(f32[::2], f32[::2], 0.0, None, *DELTA_THRESHOLDS)  # not contiguous


def test_which_path_the_kernel_takes(monkeypatch):
    """float32 predictions against float32 or uint16 GT take the fused pass (bands too: one
    more pass each); anything else the numpy chunks; ``RPX_NATIVE=0`` always the chunks."""
    kernel = DepthKernel(np.float32)
    pred, gt = np.ones(10, np.float32), np.full(10, 2.0, np.float32)
    monkeypatch.delenv("RPX_NATIVE", raising=False)
    assert len(kernel._native_sums(pred, gt, None, None, (), True)) == 1
    assert len(kernel._native_sums(pred, gt, None, None, ((0.0, 1.0), (1.0, None)), True)) == 3
    assert kernel._native_sums(pred, gt.astype(np.float16), None, None, (), True) is None
    assert kernel._native_sums(pred, np.ones(10, np.int32), None, 1000.0, (), True) is None
    monkeypatch.setenv("RPX_NATIVE", "0")
    assert kernel._native_sums(pred, gt, None, None, (), True) is None


@pytest.mark.parametrize("scale", [None, 1000.0])
def test_bands_and_the_histogram_change_no_other_number(monkeypatch, scale):
    """The frame's sums are the same bits with or without ``--range`` bands and ``by_depth``
    (both paths); each band's sums equal the frame's sums of the band's pixels alone."""
    from rpx_cli.ops.depth_bins import DepthHistogram

    rng = np.random.default_rng(4)
    gt = rng.uniform(0.2, 9.0, 30_000).astype(np.float32)
    gt[rng.random(gt.size) < 0.1] = 0
    pred = (gt * rng.normal(1, 0.1, gt.size)).astype(np.float32)
    if scale is not None:
        gt = np.round(gt * scale).astype(np.uint16)
    bands = ((0.0, 2.0), (2.0, 5.0), (5.0, None))
    for setting in ("1", "0"):
        monkeypatch.setenv("RPX_NATIVE", setting)
        kernel = DepthKernel(np.float32)
        plain = kernel.sums(pred, gt, gt_scale=scale, valid_from_gt=True)
        banded = kernel.sums(pred, gt, gt_scale=scale, valid_from_gt=True, bands=bands,
                             histogram=DepthHistogram.empty())
        assert banded[0] == plain[0], setting
        assert sum(part.n for part in banded[1:]) == plain[0].n
    metres = gt if scale is None else (gt / scale).astype(np.float32)
    monkeypatch.delenv("RPX_NATIVE")
    low_band = (metres >= 2.0) & (metres < 5.0)
    alone, _ = native(pred, gt, scale, valid=low_band & gt_valid(gt, scale))
    assert DepthKernel(np.float32).sums(pred, gt, gt_scale=scale, valid_from_gt=True,
                                        bands=bands)[2] == alone


def test_a_mask_that_calls_bad_gt_valid_gives_numbers_not_a_crash():
    """GT <= 0, NaN or inf at pixels a caller's mask calls valid (the task never does: its
    masks hold only GT > 0) give meaningless but defined numbers (the sanitizer build runs
    this: no overflow, no read past a buffer)."""
    gt = np.array([-1.0, 0.0, np.nan, np.inf, -np.inf, 1e-38, 3e38, 2.0] * 300, np.float32)
    pred = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 3e38, 1e-6, 2.0] * 300, np.float32)
    fused, bad = native(pred, gt, valid=np.ones(gt.size, bool))
    assert fused.n == gt.size and bad == 0
