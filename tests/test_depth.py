"""``rpx eval depth``: hand-computed cases, a float64 reference, invariants, CLI behaviour."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers import dirs, without_provenance, write_npy, write_pgm, write_png
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rpx_cli.errors import InputError
from rpx_cli.ops.depth import METRICS, combine, finalize
from rpx_cli.ops.depth_alignment import align
from rpx_cli.ops.depth_kernel import frame_sums
from rpx_cli.params import Band, Threshold, banded

# --- an independent reference: the textbook formulas, float64, valid pixels only --------


def reference(pred: np.ndarray, gt: np.ndarray, *, low=None, high=None) -> dict:
    pred = np.asarray(pred, np.float64).ravel()
    gt = np.asarray(gt, np.float64).ravel()
    valid = np.isfinite(gt) & (gt > 0)
    if low is not None:
        valid &= gt > low
    if high is not None:
        valid &= gt < high
    p, g = np.maximum(pred[valid], 1e-6), gt[valid]
    if g.size == 0:
        return dict.fromkeys(METRICS)
    d = np.log(p) - np.log(g)
    thresh = np.maximum(p / g, g / p)
    return {
        "absrel": np.mean(np.abs(p - g) / g),
        "sqrel": np.mean((p - g) ** 2 / g),
        "rmse": np.sqrt(np.mean((p - g) ** 2)),
        "rmse_log": np.sqrt(np.mean(d**2)),
        "log10": np.mean(np.abs(np.log10(p) - np.log10(g))),
        "silog": np.sqrt(max(np.mean(d**2) - np.mean(d) ** 2, 0.0)),
        "delta1": np.mean(thresh < 1.25),
        "delta2": np.mean(thresh < 1.25**2),
        "delta3": np.mean(thresh < 1.25**3),
    }


def close(got: dict, expected: dict, rel: float = 1e-9) -> None:
    for key, value in expected.items():
        if value is None:
            assert got[key] is None, key
        elif key == "silog":  # ~0 when the log-ratio is near constant: compare absolutely too
            assert got[key] == pytest.approx(value, rel=rel, abs=1e-7), key
        else:
            assert got[key] == pytest.approx(value, rel=rel, abs=0), key


def frame_metrics(pred, gt) -> dict:
    """The kernel in float64 on every pixel (all valid)."""
    p = np.asarray(pred, np.float64).ravel()
    return finalize(frame_sums(p, np.asarray(gt, np.float64).ravel())[0])


# --- hand-computed ------------------------------------------------------------------------


def test_reference_case_from_the_issue(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "gt/a.npy", np.array([[1.0, 2.0], [0.0, 4.0]]))
    write_npy(tmp_path / "pred/a.npy", np.array([[1.1, 1.5], [9.0, 5.0]]))
    row = rpx(f"eval depth {dirs(tmp_path)}").json["rows"][0]
    # valid pixels: (1.1, 1), (1.5, 2), (5, 4); the GT 0 pixel is ignored
    assert row["n_valid"] == 3
    assert row["rmse"] == pytest.approx(math.sqrt((0.1**2 + 0.5**2 + 1.0**2) / 3), rel=1e-12)
    assert row["rmse"] == pytest.approx(0.6480740698407860, rel=1e-12)
    assert row["absrel"] == pytest.approx((0.1 / 1 + 0.5 / 2 + 1 / 4) / 3, rel=1e-12)
    assert row["sqrel"] == pytest.approx((0.1**2 / 1 + 0.5**2 / 2 + 1**2 / 4) / 3, rel=1e-12)
    assert row["delta1"] == 1 / 3  # 2/1.5 = 1.33 and 5/4 = 1.25 (strict) fail
    assert row["delta2"] == 1.0 and row["delta3"] == 1.0
    d = [math.log(1.1), math.log(0.75), math.log(1.25)]
    assert row["rmse_log"] == pytest.approx(math.sqrt(sum(x * x for x in d) / 3), rel=1e-12)
    mean = sum(d) / 3
    assert row["silog"] == pytest.approx(math.sqrt(sum(x * x for x in d) / 3 - mean**2), rel=1e-12)
    assert row["log10"] == pytest.approx(sum(abs(x) for x in d) / 3 / math.log(10), rel=1e-12)


def test_delta_is_strict() -> None:
    metrics = frame_metrics([[1.25]], [[1.0]])
    assert metrics["delta1"] == 0.0 and metrics["delta2"] == 1.0
    metrics = frame_metrics([[1.0]], [[1.25]])  # g/p = 1.25: the other side is strict too
    assert metrics["delta1"] == 0.0 and metrics["delta2"] == 1.0


def test_scaled_prediction() -> None:
    gt = np.array([[1.0, 2.0, 5.0, 10.0]])
    metrics = frame_metrics(0.9 * gt, gt)
    assert metrics["absrel"] == pytest.approx(0.1, rel=1e-12)
    assert metrics["delta1"] == 1.0
    assert metrics["silog"] == pytest.approx(0.0, abs=1e-12)  # constant log ratio
    assert metrics["rmse_log"] == pytest.approx(-math.log(0.9), rel=1e-12)


def test_perfect_prediction_scores_ideal() -> None:
    gt = np.linspace(0.5, 20, 50).reshape(5, 10)
    metrics = frame_metrics(gt, gt)
    assert metrics["absrel"] == metrics["sqrel"] == metrics["rmse"] == 0.0
    assert metrics["rmse_log"] == metrics["log10"] == metrics["silog"] == 0.0
    assert metrics["delta1"] == metrics["delta2"] == metrics["delta3"] == 1.0


def test_prediction_is_clipped_below_at_1e_minus_6() -> None:
    metrics = frame_metrics([[0.0, -5.0]], [[2.0, 2.0]])
    assert metrics["absrel"] == pytest.approx((2 - 1e-6) / 2, rel=1e-12)
    assert metrics["rmse_log"] == pytest.approx(math.log(2 / 1e-6), rel=1e-12)
    assert metrics["delta3"] == 0.0


def test_band_suffixes_are_autoware_style() -> None:
    assert Band(0.3, 1.0).suffix == "0p3m_1m"
    assert Band(2.5, None).suffix == "2p5m_inf"
    assert Band(-1.0, 0.0).suffix == "minus1m_0m"
    assert Band(10.0, 80.0).key("absrel") == "absrel_10m_80m"
    assert banded("absrel", None) == "absrel" and banded("n_valid", Band(0.0, 20.0)) == "n_valid_0m_20m"
    assert Band(20.0, 50.0).label == "[20, 50) m" and Band(50.0).label == "[50, inf) m"
    assert Threshold(0.5).key("AP") == "AP_0p5m" and Threshold(0.7, "iou").key("AP") == "AP_iou0p7"
    assert Band.parse("0.3:1") == (0.3, 1.0) and Band.parse("2.5:") == (2.5, None)
    for bad in ["1", ":3", "3:1", "a:b", "1:inf", "nan:2"]:
        with pytest.raises(ValueError):
            Band.parse(bad)


def test_bands_min_inclusive_max_exclusive(rpx, tmp_path: Path) -> None:
    gt = np.array([[0.5, 1.0, 1.5, 2.0]])
    pred = np.array([[0.6, 1.0, 1.5, 3.0]])
    write_npy(tmp_path / "gt/a.npy", gt)
    write_npy(tmp_path / "pred/a.npy", pred)
    report = rpx(f"eval depth {dirs(tmp_path)} "
                 "--range 1:2 --range 2: --range 5:9").json
    row = report["rows"][0]
    assert row["n_valid_1m_2m"] == 2 and row["absrel_1m_2m"] == 0.0  # 1.0 and 1.5, not 2.0
    assert row["n_valid_2m_inf"] == 1 and row["absrel_2m_inf"] == 0.5
    assert row["n_valid_5m_9m"] == 0 and row["absrel_5m_9m"] is None  # empty band: null
    assert report["aggregate"]["n_empty_5m_9m"] == 1
    assert report["dataset"]["n_valid_1m_2m"] == 2
    assert report["metric_info"]["absrel_1m_2m"]["direction"] == "lower"
    assert report["metric_info"]["delta1_2m_inf"]["direction"] == "higher"


def test_caps_are_strict_and_counted(rpx, tmp_path: Path) -> None:
    gt = np.array([[0.5, 1.0, 5.0, 10.0, 20.0]])
    write_npy(tmp_path / "gt/a.npy", gt)
    write_npy(tmp_path / "pred/a.npy", gt * 1.1)
    report = rpx(f"eval depth {dirs(tmp_path)} "
                 "--min-depth 1 --max-depth 10").json
    row = report["rows"][0]
    assert row["n_valid"] == 1 and row["n_capped"] == 4  # only 5.0 is strictly inside
    assert report["dataset"]["n_capped"] == 4


def test_alignment_recovers_scale_and_shift() -> None:
    rng = np.random.default_rng(1)
    gt = rng.uniform(0.5, 10, 500)
    aligned, scale, shift = align(2.0 * gt, gt, "median")
    assert scale == pytest.approx(0.5, rel=1e-12) and shift is None
    np.testing.assert_allclose(aligned, gt, rtol=1e-12)
    aligned, scale, shift = align(2.0 * gt + 1.0, gt, "ls_affine")
    assert (scale, shift) == (pytest.approx(0.5, rel=1e-12), pytest.approx(-0.5, rel=1e-9))
    np.testing.assert_allclose(aligned, gt, rtol=1e-9)
    disparity = 3.0 / gt + 0.2  # a relative-disparity model: 1/p = (1/g - 0.2/..)
    pred = 1.0 / disparity
    aligned, scale, shift = align(pred, gt, "ls_disparity")
    np.testing.assert_allclose(aligned, gt, rtol=1e-9)
    assert scale == pytest.approx(1 / 3, rel=1e-9) and shift == pytest.approx(-0.2 / 3, rel=1e-9)


def test_alignment_reported_per_row(rpx, tmp_path: Path) -> None:
    gt = np.linspace(1, 5, 20).reshape(4, 5)
    write_npy(tmp_path / "gt/a.npy", gt)
    write_npy(tmp_path / "pred/a.npy", (gt * 3 + 2).astype(np.float32))
    args = f"eval depth {dirs(tmp_path)}"
    row = rpx(args + " --align ls_affine").json["rows"][0]
    assert row["align_scale"] == pytest.approx(1 / 3, rel=1e-6)
    assert row["align_shift"] == pytest.approx(-2 / 3, rel=1e-6)
    assert row["absrel"] == pytest.approx(0.0, abs=1e-6)
    none = rpx(args).json
    assert "align_scale" not in none["rows"][0] and none["params"]["align"] == "none"


def test_degenerate_alignment() -> None:
    gt = np.array([1.0, 2.0, 3.0])
    _, scale, shift = align(np.full(3, 4.0), gt, "ls_affine")
    assert scale == 0.0 and shift == 2.0
    with pytest.raises(InputError, match="positive median"):
        align(np.zeros(3), gt, "median")


# --- against the reference, on random data -----------------------------------------------


def random_pair(rng, shape=(37, 53), holes=0.2):
    gt = rng.uniform(0.2, 30.0, shape)
    gt[rng.random(shape) < holes] = 0.0
    gt[rng.random(shape) < 0.02] = np.nan
    pred = gt * np.exp(rng.normal(0, 0.2, shape)) + rng.normal(0, 0.05, shape)
    pred[~np.isfinite(gt)] = np.inf  # garbage where GT is invalid is ignored
    return pred, gt


def write_random_pairs(root: Path, seed: int, count: int, shape: tuple[int, int],
                       dtypes=(np.float32,)) -> None:
    """``count`` random pairs under ``root/pred`` and ``root/gt`` (one folder per dtype when
    several are given: ``root/float32/pred``, ...)."""
    rng = np.random.default_rng(seed)
    for index in range(count):
        pred, gt = random_pair(rng, shape)
        for dtype in dtypes:
            base = root if len(dtypes) == 1 else root / np.dtype(dtype).name
            # through float32 first, so every folder holds the same values
            write_npy(base / f"pred/s{index}.npy", pred.astype(np.float32).astype(dtype))
            write_npy(base / f"gt/s{index}.npy", gt.astype(np.float32).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_aggregate_and_dataset_match_the_reference(rpx, tmp_path: Path, dtype) -> None:
    rng = np.random.default_rng(5)
    pairs = [random_pair(rng) for _ in range(6)]
    for index, (pred, gt) in enumerate(pairs):
        write_npy(tmp_path / f"pred/{index}.npy", pred.astype(dtype))
        write_npy(tmp_path / f"gt/{index}.npy", gt.astype(dtype))
    report = rpx(f"eval depth {dirs(tmp_path)} "
                 "--max-depth 25 --range 0:5 --range 5:").json
    # float32 inputs take the float32 path: the documented 1e-6; float64 inputs: float64 throughout
    rel = 1e-6 if dtype == np.float32 else 1e-9
    refs = [reference(p.astype(dtype), g.astype(dtype), high=25) for p, g in pairs]
    for row, ref in zip(report["rows"], refs, strict=True):
        close(row, ref, rel)
    for metric in METRICS:
        expected = np.mean([r[metric] for r in refs])
        assert report["aggregate"][metric] == pytest.approx(expected, rel=rel)
    pooled_pred = np.concatenate([p.astype(dtype).ravel() for p, _ in pairs])
    pooled_gt = np.concatenate([g.astype(dtype).ravel() for _, g in pairs])
    close(report["dataset"], reference(pooled_pred, pooled_gt, high=25), rel)
    band = reference(np.where(pooled_gt < 5, pooled_pred, 0), np.where(pooled_gt < 5, pooled_gt, 0))
    close({k[: -len("_0m_5m")]: v for k, v in report["dataset"].items() if k.endswith("_0m_5m")
           and not k.startswith("n_")}, band, rel)


def test_combine_is_exact_pooling() -> None:
    rng = np.random.default_rng(2)
    parts, preds, gts = [], [], []
    for size in (1, 50, 300):
        g = rng.uniform(1, 10, size)
        p = g * np.exp(rng.normal(0.3, 0.1, size))
        parts.append(frame_sums(p, g)[0])
        preds.append(p)
        gts.append(g)
    close(finalize(combine(parts)), reference(np.concatenate(preds), np.concatenate(gts)), rel=1e-12)


# --- invariants ---------------------------------------------------------------------------

positive = hnp.arrays(np.float64, st.integers(1, 60), elements=st.floats(0.05, 100))


@settings(max_examples=80, deadline=None)
@given(gt=positive, data=st.data())
def test_pixel_order_does_not_matter(gt, data) -> None:
    noise = data.draw(hnp.arrays(np.float64, gt.shape, elements=st.floats(0.5, 2.0)))
    pred = gt * noise
    order = data.draw(st.permutations(range(gt.size)))
    a, b = frame_metrics(pred, gt), frame_metrics(pred[order], gt[order])
    for metric in METRICS:
        assert a[metric] == pytest.approx(b[metric], rel=1e-12, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(gt=positive, data=st.data(), factor=st.sampled_from([0.001, 0.5, 4.0, 1000.0]))
def test_scaling_both_maps_keeps_relative_metrics(gt, data, factor) -> None:
    noise = data.draw(hnp.arrays(np.float64, gt.shape, elements=st.floats(0.5, 2.0)))
    pred = gt * noise
    a, b = frame_metrics(pred, gt), frame_metrics(pred * factor, gt * factor)
    for metric in ("absrel", "rmse_log", "log10", "silog"):
        assert b[metric] == pytest.approx(a[metric], rel=1e-9, abs=1e-12)
    assert b["rmse"] == pytest.approx(a["rmse"] * factor, rel=1e-9)
    # only a pixel sitting on a threshold (to rounding) may cross it when both are scaled
    worst = np.maximum(pred / gt, gt / pred)
    for k, metric in enumerate(("delta1", "delta2", "delta3"), start=1):
        on_threshold = np.count_nonzero(np.abs(worst - 1.25**k) <= 1e-12 * 1.25**k)
        assert abs(b[metric] - a[metric]) <= on_threshold / gt.size + 1e-15


# --- edge cases through the CLI -----------------------------------------------------------


def test_frame_without_valid_pixels_is_null_not_perfect(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "gt/a.npy", np.zeros((4, 4)))
    write_npy(tmp_path / "pred/a.npy", np.ones((4, 4)))
    write_npy(tmp_path / "gt/b.npy", np.full((4, 4), 2.0))
    write_npy(tmp_path / "pred/b.npy", np.full((4, 4), 2.2))
    report = rpx(f"eval depth {dirs(tmp_path)}").json
    empty = report["rows"][0]
    assert empty["n_valid"] == 0 and all(empty[m] is None for m in METRICS)
    assert report["aggregate"]["n_empty"] == 1
    assert report["aggregate"]["absrel"] == pytest.approx(0.1)  # the empty frame is not a 0
    assert report["aggregate"]["n_frames"] == 2


def test_non_finite_prediction_at_a_valid_pixel_is_an_input_error(rpx, tmp_path: Path) -> None:
    gt = np.ones((3, 3))
    gt[0, 0] = 0.0
    pred = np.ones((3, 3))
    pred[0, 0] = np.nan  # at an invalid GT pixel: ignored
    write_npy(tmp_path / "gt/a.npy", gt)
    write_npy(tmp_path / "pred/a.npy", pred)
    assert rpx(f"eval depth {dirs(tmp_path)}").exit_code == 0
    pred[1, 1] = np.inf
    pred[2, 2] = np.nan
    write_npy(tmp_path / "pred/a.npy", pred)
    run = rpx(f"eval depth {dirs(tmp_path)}")
    assert run.exit_code == 1 and run.stdout == ""
    assert "2 non-finite value(s)" in run.stderr and str(tmp_path / "pred/a.npy") in run.stderr


def test_shape_mismatch_and_resize(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "gt/a.npy", np.full((4, 6), 2.0))
    write_npy(tmp_path / "pred/a.npy", np.full((2, 3), 2.0))
    run = rpx(f"eval depth {dirs(tmp_path)}")
    assert run.exit_code == 1
    assert "pred/a.npy is 3x2" in run.stderr and "gt/a.npy is 6x4" in run.stderr
    for method in ("nearest", "bilinear"):
        report = rpx(f"eval depth {dirs(tmp_path)} --resize-pred {method}").json
        assert report["rows"][0]["absrel"] == 0.0 and report["params"]["resize_pred"] == method


def test_formats_and_depth_scale(rpx, tmp_path: Path) -> None:
    mm = np.array([[1000, 2000], [0, 65535]], np.uint16)
    write_png(tmp_path / "gt/png.png", mm)
    write_pgm(tmp_path / "gt/pgm.pgm", mm)
    write_npy(tmp_path / "gt/ints.npy", mm.astype(np.int32))
    metres = mm / 1000.0
    (tmp_path / "pred").mkdir(exist_ok=True)
    np.savez(tmp_path / "pred/png.npz", depth=metres.astype(np.float16))
    write_npy(tmp_path / "pred/pgm.npy", metres.astype(np.float32))
    import imageio.v3 as iio

    iio.imwrite(tmp_path / "pred/ints.tif", metres.astype(np.float32))
    report = rpx(f"eval depth {dirs(tmp_path)}").json
    rows = {row["stem"]: row for row in report["rows"]}
    assert rows["pgm"]["absrel"] == pytest.approx(0.0, abs=1e-7)
    assert rows["ints"]["absrel"] == pytest.approx(0.0, abs=1e-7)
    assert rows["png"]["absrel"] == pytest.approx(0.0, abs=1e-3)  # float16 rounding
    assert all(row["n_valid"] == 3 for row in rows.values())
    kitti = rpx(f"eval depth {dirs(tmp_path)} --depth-scale 256").json
    assert kitti["rows"][1]["absrel"] > 0.7  # (1 - 1000/256) / (1000/256) ≈ 0.74: a wrong scale shows


def test_eight_bit_depth_image_is_refused(rpx, tmp_path: Path) -> None:
    write_png(tmp_path / "gt/a.png", np.full((4, 4), 20, np.uint8))
    write_npy(tmp_path / "pred/a.npy", np.ones((4, 4)))
    run = rpx(f"eval depth {dirs(tmp_path)}")
    assert run.exit_code == 1 and "8-bit depth image" in run.stderr and "a.png" in run.stderr


def test_missing_prediction_error_skip_empty(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "gt/a.npy", np.full((2, 2), 2.0))
    write_npy(tmp_path / "pred/a.npy", np.full((2, 2), 2.0))
    write_npy(tmp_path / "gt/b.npy", np.full((2, 2), 3.0))
    run = rpx(f"eval depth {dirs(tmp_path)}")  # eval default: error
    assert run.exit_code == 1 and "gt/b.npy" in run.stderr
    skip = rpx(f"eval depth {dirs(tmp_path)} --missing skip").json
    assert skip["n_pairs"] == 1 and skip["unpaired"]["gt_only"] == ["b"]
    empty = rpx(f"eval depth {dirs(tmp_path)} --missing empty").json
    missing = empty["rows"][1]
    assert missing["pred_path"] is None and missing["delta3"] == 0.0
    assert missing["absrel"] == pytest.approx((3 - 1e-6) / 3)


@pytest.mark.parametrize("flags", ["--depth-scale 0", "--depth-scale -1", "--range 3:1",
                                   "--range x", "--min-depth -1", "--min-depth 5 --max-depth 2",
                                   "--align magic", "--resize-pred cubic", "--range 1:2 --range 1:2"])
def test_bad_depth_flags_are_usage_errors(rpx, tmp_path: Path, flags: str) -> None:
    write_npy(tmp_path / "gt/a.npy", np.ones((2, 2)))
    write_npy(tmp_path / "pred/a.npy", np.ones((2, 2)))
    run = rpx(f"eval depth {dirs(tmp_path)} {flags}")
    assert run.exit_code == 2, run.stderr
    assert "Traceback" not in run.stderr


def test_metric_info_names_conventions(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "gt/a.npy", np.ones((2, 2)))
    write_npy(tmp_path / "pred/a.npy", np.ones((2, 2)))
    info = rpx(f"eval depth {dirs(tmp_path)}").json["metric_info"]
    assert "Eigen" in info["sqrel"]["description"]
    assert "unscaled" in info["silog"]["description"]
    assert info["delta1"]["direction"] == "higher" and info["absrel"]["direction"] == "lower"


def test_jobs_do_not_change_the_depth_report(rpx, tmp_path: Path) -> None:
    write_random_pairs(tmp_path, 9, 9, (20, 30))
    reports = []
    for jobs in (1, 2):
        report = rpx(f"eval depth {dirs(tmp_path)} --range 0:10 --jobs {jobs}").json
        reports.append(without_provenance(report))
    assert reports[0] == reports[1]


# --- the float32 fast path against float64 --------------------------------------------


def terms32(pred, gt) -> dict:
    """The kernel in float32 (as for float32 files), every pixel valid."""
    pred, gt = np.asarray(pred, np.float32).ravel(), np.asarray(gt, np.float32).ravel()
    return finalize(frame_sums(pred, gt)[0])


def test_float32_deltas_are_exact_on_and_next_to_thresholds() -> None:
    rng = np.random.default_rng(4)
    gt = rng.uniform(0.1, 50, 20000).astype(np.float32)
    factors = np.array([1.25, 1.25**2, 1.25**3, 1 / 1.25, 1 / 1.25**2, 1 / 1.25**3])
    pred = (gt * factors[rng.integers(0, 6, gt.size)]).astype(np.float32)
    step = rng.integers(-2, 3, gt.size)  # on the threshold, or 1-2 ulps either side
    pred = np.where(step > 0, np.nextafter(pred, np.float32(np.inf)), pred)
    pred = np.where(step > 1, np.nextafter(pred, np.float32(np.inf)), pred)
    pred = np.where(step < 0, np.nextafter(pred, np.float32(0)), pred)
    pred = np.where(step < -1, np.nextafter(pred, np.float32(0)), pred)
    got, expected = terms32(pred, gt), reference(pred, gt)
    for metric in ("delta1", "delta2", "delta3"):
        assert got[metric] == expected[metric], metric  # exactly, pixel for pixel


@pytest.mark.parametrize("noise", [1e-6, 1e-4, 1e-2, 0.3])
def test_float32_log_terms_are_accurate_for_near_perfect_predictions(noise: float) -> None:
    rng = np.random.default_rng(6)
    gt = rng.uniform(0.2, 80, 50000).astype(np.float32)
    pred = (gt * (1 + rng.normal(0, noise, gt.size))).astype(np.float32)
    got, expected = terms32(pred, gt), reference(pred, gt)
    for metric in METRICS:
        assert got[metric] == pytest.approx(expected[metric], rel=1e-6), metric


def test_float32_far_below_gt_uses_log_ratio() -> None:
    gt = np.array([10.0, 10.0, 3.0, 7.0], np.float32)
    pred = np.array([0.0, 1e-4, 1.0, 7.5], np.float32)  # p << g: log1p would lose it
    close(terms32(pred, gt), reference(pred, gt), rel=1e-6)


def test_float32_and_float64_paths_agree(rpx, tmp_path: Path) -> None:
    write_random_pairs(tmp_path, 8, 3, (64, 48), dtypes=(np.float32, np.float64))
    fast = rpx(f"eval depth {dirs(tmp_path / 'float32')} --range 0:8").json
    slow = rpx(f"eval depth {dirs(tmp_path / 'float64')} --range 0:8").json
    for section in ("aggregate", "dataset"):
        for key, value in slow[section].items():
            if isinstance(value, int) or value is None:
                assert fast[section][key] == value, key  # counts (and deltas' pixels) exact
            else:
                assert fast[section][key] == pytest.approx(value, rel=1e-6, abs=1e-12), key


def test_no_rows_changes_nothing_but_the_rows(rpx, tmp_path: Path) -> None:
    write_random_pairs(tmp_path, 12, 5, (16, 24))
    full = rpx(f"eval depth {dirs(tmp_path)} --range 0:10 --min-depth 0.5").json
    lean = rpx(f"eval depth {dirs(tmp_path)} --range 0:10 --min-depth 0.5 --no-rows").json
    assert "rows" not in lean
    for key in ("aggregate", "dataset", "n_pairs", "params", "metric_info", "unpaired"):
        assert lean[key] == full[key], key
    # and the aggregate is the mean of the very numbers in the rows
    for metric in METRICS:
        values = [row[metric] for row in full["rows"] if row[metric] is not None]
        assert full["aggregate"][metric] == math.fsum(values) / len(values)


def test_millimetre_png_gt_path_matches_float64_reference(rpx, tmp_path: Path) -> None:
    """16-bit PNG GT + float32 predictions take the float32 path: metrics within 1e-6 of a
    float64 evaluation of mm/1000, and delta counts exact even on the thresholds."""
    rng = np.random.default_rng(13)
    gt_mm = rng.integers(300, 20000, (48, 64)).astype(np.uint16)
    gt_mm[rng.random(gt_mm.shape) < 0.1] = 0
    metres = gt_mm / 1000.0
    factor = np.exp(rng.normal(0, 0.15, gt_mm.shape))
    on = rng.random(gt_mm.shape) < 0.3  # a third of the pixels exactly on a threshold
    factor[on] = rng.choice([1.25, 1.5625, 1.953125, 0.8, 0.64], on.sum())
    pred = (metres * factor).astype(np.float32)
    write_png(tmp_path / "gt/a.png", gt_mm)
    write_npy(tmp_path / "pred/a.npy", pred)
    row = rpx(f"eval depth {dirs(tmp_path)} --range 0:5").json["rows"][0]
    expected = reference(pred, metres)
    for metric in ("delta1", "delta2", "delta3"):
        assert row[metric] == expected[metric], metric
    close(row, {k: v for k, v in expected.items() if not k.startswith("delta")}, rel=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_chunking_does_not_change_results(dtype) -> None:
    from rpx_cli.ops.depth_kernel import DepthKernel

    rng = np.random.default_rng(21)
    pred, gt = random_pair(rng, (40, 50))
    valid = np.isfinite(gt) & (gt > 0)
    pred, gt = pred.astype(dtype).ravel(), gt.astype(dtype).ravel()
    bands = [(0.0, 5.0), (5.0, None)]
    whole = DepthKernel(dtype, chunk=1 << 17).sums(pred, gt, valid=valid.ravel(), bands=bands)
    for chunk in (1, 7, 256, 1999):
        parts = DepthKernel(dtype, chunk=chunk).sums(pred, gt, valid=valid.ravel(), bands=bands)
        for a, b in zip(whole, parts, strict=True):
            assert (a.n, a.delta1, a.delta2, a.delta3) == (b.n, b.delta1, b.delta2, b.delta3)
            close(finalize(b), finalize(a), rel=1e-7 if dtype == np.float32 else 1e-12)
    p, g = np.where(valid.ravel(), pred, 0), np.where(valid.ravel(), gt, 0)
    close(finalize(whole[1]), reference(np.where(g < 5, p, 0), np.where(g < 5, g, 0)),
          rel=1e-6 if dtype == np.float32 else 1e-9)


def test_column_versions_equal_the_scalar_ones_exactly() -> None:
    from rpx_cli.ops.depth import DepthSums, combine_columns, finalize_columns

    rng = np.random.default_rng(17)
    rows = [frame_sums(g * np.exp(rng.normal(0.1 * k, 0.2, g.size)), g)[0]
            for k, g in enumerate(rng.uniform(0.5, 9, (12, 40)))]
    rows.insert(3, DepthSums())  # an empty frame
    matrix = np.array([row.as_tuple() for row in rows], dtype=np.float64)
    assert combine_columns(matrix) == combine(rows)
    columns = finalize_columns(matrix)
    for index, row in enumerate(rows):
        for metric, value in finalize(row).items():
            got = columns[metric][index]
            assert (value is None and np.isnan(got)) or got == value
