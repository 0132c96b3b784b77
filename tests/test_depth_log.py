"""The depth kernel's float32 log ratio (ops/depth_log.py): hand-computed values, the float64
formula on every kind of ratio, identical maps giving exactly 0, the whole kernel against
the float64 reference on near-1 and far ratios, and the same bits with numpy's SIMD
extensions hidden (``NPY_DISABLE_CPU_FEATURES``), so the path other CPUs take is covered."""

from __future__ import annotations

import ast
import inspect
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rpx_cli.ops import depth_log
from rpx_cli.ops.depth import METRICS, finalize, reference_metrics
from rpx_cli.ops.depth_kernel import DepthKernel, frame_sums
from rpx_cli.ops.depth_log import log_ratio32, reference_log_ratio

ROOT = Path(__file__).resolve().parent.parent
# within ~2.4 float32 ulps measured over 2e7 random ratios from 1e-9 to 1e9: 2.5 x 2^-23
LOG_RELATIVE = 3e-7


def log32(pred, gt) -> np.ndarray:
    """:func:`log_ratio32` of float32 maps as the kernel calls it (prediction clipped)."""
    p = np.maximum(np.asarray(pred, np.float32).ravel(), np.float32(1e-6))
    g = np.asarray(gt, np.float32).ravel()
    out = np.empty_like(p)
    scratch = tuple(np.empty_like(p) for _ in range(4))
    return log_ratio32(p / g, (p - g) / g, out=out, scratch=scratch, outside=np.empty(p.size, bool))


def assert_log_close(pred, gt) -> None:
    got = log32(pred, gt).astype(np.float64)
    expected = reference_log_ratio(np.maximum(np.asarray(pred, np.float32), np.float32(1e-6)),
                                   np.asarray(gt, np.float32)).ravel()
    assert np.all(got[expected == 0] == 0)
    np.testing.assert_allclose(got, expected, rtol=LOG_RELATIVE, atol=0)


# --- hand-computed ------------------------------------------------------------------------


def test_hand_computed_ratios() -> None:
    gt = np.array([1.0, 3.0, 0.5, 80.0, 7.0, 2.0], np.float32)
    pred = np.array([2.0, 0.75, 0.5 * math.e, 1e-6, 7.0, 2.0 ** -19], np.float32)
    expected = [math.log(2), math.log(0.25), 1.0, math.log(1e-6 / 80), 0.0, -20 * math.log(2)]
    got = log32(pred, gt)
    for value, formula in zip(got, expected, strict=True):
        assert value == pytest.approx(formula, rel=LOG_RELATIVE, abs=1e-7)
    assert got[4] == 0.0  # p = g: exactly 0


@pytest.mark.parametrize("ulps", [1, 2, 3, 100])
def test_ratios_a_few_ulps_from_one_keep_full_relative_accuracy(ulps: int) -> None:
    """p one to a few float32 steps from g: ln(p/g) is ~1e-7, and ln of the rounded ratio
    alone would be wrong in its first digit; both directions, across binades."""
    g = np.geomspace(1e-3, 1e4, 997).astype(np.float32)
    up, down = g.copy(), g.copy()
    for _ in range(ulps):
        up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(0))
    assert_log_close(up, g)
    assert_log_close(down, g)


def test_far_ratios() -> None:
    """p << g (where log1p((p − g)/g) sees −1) and p >> g, to the float32 range's useful
    ends (a ratio of 1e-6 m against 1,000 km and the other way round)."""
    g = np.geomspace(1e-3, 1e6, 400).astype(np.float32)
    for factor in (1e-12, 1e-9, 1e-6, 1e-3, 0.5, 0.7071, 1.4142, 2.0, 1e3, 1e9):
        assert_log_close((g * factor).astype(np.float32), g)


def test_every_exponent_split_boundary() -> None:
    """Ratios on either side of √½ · 2^k, where the exponent k changes."""
    k = np.arange(-30, 31)
    edges = (np.sqrt(0.5) * 2.0 ** k).astype(np.float32)
    q = np.concatenate([edges, np.nextafter(edges, np.float32(0)),
                        np.nextafter(edges, np.float32(np.inf))])
    gt = np.full(q.size, 3.0, np.float32)
    assert_log_close((q * gt).astype(np.float32), gt)


def test_every_route_gives_the_same_bits() -> None:
    """A ratio's d does not depend on its neighbours: ratios in [√½, √2] alone (direct), with
    a few far ones (gathered and split) and with many (the whole chunk split)."""
    rng = np.random.default_rng(2)
    gt = rng.uniform(0.5, 20, 4000).astype(np.float32)
    near = (gt[:2000] * np.exp(rng.uniform(-0.34, 0.34, 2000))).astype(np.float32)
    far = (gt[2000:] * np.exp(rng.choice([-1, 1], 2000) * rng.uniform(0.35, 9, 2000))).astype(np.float32)
    alone = log32(near, gt[:2000])
    few = log32(np.concatenate([near, far[:20]]), gt[:2020])
    many = log32(np.concatenate([near, far]), gt)
    assert np.array_equal(alone, few[:2000]) and np.array_equal(alone, many[:2000])
    assert np.array_equal(few[2000:], many[2000:2020])
    assert_log_close(np.concatenate([near, far]), gt)


def test_polynomial_is_the_series_it_stands_for() -> None:
    """R(z) = (2 atanh(s) − 2s) / s, z = s², for |s| up to 3 − 2√2 (f from √½ − 1 to
    √2 − 1): the three float32 coefficients within 2e-9 of it."""
    s = np.linspace(0, 3 - 2 * math.sqrt(2), 20001)[1:]
    z = s * s
    exact = (2 * np.arctanh(s) - 2 * s) / s
    fitted = z * (float(depth_log.B1) + z * (float(depth_log.B2) + z * float(depth_log.B3)))
    assert np.max(np.abs(fitted - exact)) < 2e-9
    ln2 = (float(depth_log.LN2_HI) + float(depth_log.LN2_LO)) * 2**23
    assert ln2 == pytest.approx(math.log(2), rel=1e-12)


def test_log_ratio_uses_only_arithmetic_vectorised_on_every_cpu() -> None:
    """The float32 path calls no numpy function outside this list: no transcendental ufunc
    (``log``, ``log1p``, ``exp`` ...), whose SIMD loops depend on the CPU."""
    allowed = {"add", "subtract", "multiply", "divide", "equal", "greater", "bitwise_and",
               "copyto", "count_nonzero", "flatnonzero", "empty_like", "int32"}
    for function in (depth_log.log_ratio32, depth_log._log1p_reduced, depth_log._split_log_ratio):
        body = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0].body
        used = {node.attr for statement in body for node in ast.walk(statement)
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "np"}
        assert used <= allowed, used - allowed


# --- properties ---------------------------------------------------------------------------

depths = st.floats(2.0**-10, 2.0**13, width=32)  # ~1 mm to 8 km
factors = st.one_of(
    st.just(1.0),
    st.floats(1 - 1e-5, 1 + 1e-5),  # near 1
    st.floats(0.5, 2.0),
    st.floats(1e-9, 1e-2),  # far below the GT
    st.floats(1e2, 1e9),  # far above
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(gt=hnp.arrays(np.float32, st.integers(1, 300), elements=depths), data=st.data())
def test_log_ratio_matches_float64(gt, data) -> None:
    factor = data.draw(hnp.arrays(np.float64, gt.shape, elements=factors))
    pred = (gt * factor).astype(np.float32)
    assert_log_close(pred, gt)


@settings(max_examples=60, deadline=None)
@given(gt=hnp.arrays(np.float32, st.integers(1, 400), elements=depths))
def test_identical_maps_score_exactly_ideal(gt) -> None:
    assert np.all(log32(gt, gt) == 0)
    metrics = finalize(frame_sums(gt, gt)[0])
    assert all(metrics[key] == 0.0 for key in ("absrel", "sqrel", "rmse", "rmse_log", "log10",
                                               "silog"))
    assert metrics["delta1"] == metrics["delta2"] == metrics["delta3"] == 1.0


def silog_bound(pred, gt) -> float:
    """How far silog may move when each d is off by LOG_RELATIVE of itself: silog is a
    standard deviation, so by at most the largest error (it is not relative to silog,
    which is ~0 when d is nearly constant)."""
    p = np.maximum(pred.astype(np.float64), 1e-6)
    return LOG_RELATIVE * float(np.max(np.abs(np.log(p) - np.log(gt.astype(np.float64)))))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(gt=hnp.arrays(np.float32, st.integers(1, 2000), elements=depths), data=st.data(),
       chunk=st.sampled_from([7, 1000, 1 << 17]))
def test_kernel_matches_the_float64_reference(gt, data, chunk) -> None:
    """Every depth key within 1e-6 relative of the float64 reference (silog within what d's
    float32 rounding allows), deltas exact; near-1, far and identical pixels mixed, some
    invalid."""
    factor = data.draw(hnp.arrays(np.float64, gt.shape, elements=factors))
    pred = (gt * factor).astype(np.float32)
    valid = data.draw(hnp.arrays(bool, gt.shape, elements=st.booleans() | st.just(True)))
    gt = np.where(valid, gt, np.float32(0))
    expected = reference_metrics(pred, gt)
    got = finalize(DepthKernel(np.float32, chunk=chunk).sums(pred, gt, valid=gt > 0)[0])
    for key in METRICS:
        if expected[key] is None:
            assert got[key] is None
        elif key.startswith("delta"):
            assert got[key] == expected[key], key
        elif key == "silog":
            assert got[key] == pytest.approx(expected[key], rel=1e-6,
                                             abs=silog_bound(pred[valid], gt[valid]) + 1e-12)
        else:
            assert got[key] == pytest.approx(expected[key], rel=1e-6, abs=1e-300), key


@pytest.mark.parametrize(("bias", "noise"), [(0.0, 1e-6), (0.0, 1e-3), (-0.1, 1e-3),
                                             (-3.0, 3e-3), (math.log(1000), 0.03),
                                             (math.log(1e-3), 0.1)])
def test_silog_of_biased_predictions(bias: float, noise: float) -> None:
    """Predictions c·g with little spread (wrong units, an unscaled model): silog is the
    spread of d around a large mean, which an error drifting with d would show."""
    rng = np.random.default_rng(8)
    gt = rng.uniform(0.4, 20, 200_000).astype(np.float32)
    pred = (gt * np.exp(bias + rng.normal(0, noise, gt.size))).astype(np.float32)
    got, expected = finalize(frame_sums(pred, gt)[0]), reference_metrics(pred, gt)
    for key in METRICS:
        assert got[key] == pytest.approx(expected[key], rel=1e-6), key


# --- the path of a CPU without this one's SIMD extensions ----------------------------------


def dispatched_features() -> list[str]:
    """numpy's dispatchable SIMD feature groups this CPU has (above the build's baseline)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


KERNEL_BITS = textwrap.dedent(
    """
    import hashlib, json, numpy as np
    from rpx_cli.ops.depth_kernel import DepthKernel
    rng = np.random.default_rng(3)
    g = np.exp(rng.uniform(-3, 5, 300_000)).astype(np.float32)
    g[rng.random(g.size) < 0.1] = 0
    p = (g * np.exp(rng.normal(0, 0.5, g.size))).astype(np.float32)
    p[:1000] = g[:1000]
    sums = DepthKernel(np.float32).sums(p, g, valid=g > 0, bands=[(0, 5), (5, None)])
    from numpy._core._multiarray_umath import __cpu_features__
    print(json.dumps({"sums": [s.as_tuple() for s in sums],
                      "features": sorted(k for k, v in __cpu_features__.items() if v)}))
    """
)


def run_python(code: str, hide: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if hide:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(hide)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


@pytest.mark.slow
def test_kernel_gives_the_same_bits_with_simd_extensions_hidden() -> None:
    hide = dispatched_features()
    if not hide:
        pytest.skip("numpy dispatches to no SIMD extension above its baseline on this CPU")
    native, hidden = run_python(KERNEL_BITS, []), run_python(KERNEL_BITS, hide)
    assert set(hidden["features"]) < set(native["features"])  # the extensions were hidden
    assert hidden["sums"] == native["sums"]


@pytest.mark.slow
def test_accuracy_tests_pass_with_simd_extensions_hidden() -> None:
    """The float32 accuracy tests of this module and of the depth task, run again in a
    process where numpy sees only its baseline (e.g. no AVX2 on x86-64)."""
    hide = dispatched_features()
    if not hide:
        pytest.skip("numpy dispatches to no SIMD extension above its baseline on this CPU")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NPY_DISABLE_CPU_FEATURES": " ".join(hide)}
    depth = [f"tests/test_depth.py::{name}" for name in (
        "test_rows_aggregate_and_dataset_match_the_reference", "test_perfect_prediction_scores_ideal",
        "test_float32_deltas_are_exact_on_and_next_to_thresholds",
        "test_float32_log_terms_are_accurate_for_near_perfect_predictions",
        "test_float32_far_below_gt_uses_log_ratio", "test_float32_and_float64_paths_agree",
        "test_millimetre_png_gt_path_matches_float64_reference")]
    selected = ["tests/test_depth_log.py", *depth,
                "tests/test_reference_kernels.py::test_depth_kernel_equals_the_formulas",
                "-k", "not hidden"]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *selected], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "deselected" in done.stdout  # ran, without itself
