"""``rpx eval nvs``: PSNR and SSIM against scikit-image, hand-computed cases, edge cases."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers import dirs, png_rgb16, write_npy, write_png
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from rpx_cli.ops.image_quality import psnr, ssim, ssim_global


def skimage_ssim(pred, gt, data_range):
    axis = -1 if gt.ndim == 3 else None
    return structural_similarity(gt, pred, data_range=data_range, channel_axis=axis,
                                 gaussian_weights=True, sigma=1.5, use_sample_covariance=False)


@pytest.mark.parametrize(("dtype", "data_range", "shape"), [
    (np.uint8, 255, (40, 52, 3)), (np.uint16, 65535, (33, 47, 3)), (np.uint8, 255, (24, 30)),
    (np.float32, 1.0, (29, 31, 3)),
])
def test_ssim_and_psnr_equal_scikit_image(dtype, data_range, shape) -> None:
    rng = np.random.default_rng(1)
    gt = rng.random(shape) * data_range
    pred = np.clip(gt + rng.normal(0, 0.05 * data_range, shape), 0, data_range)
    gt, pred = gt.astype(dtype), pred.astype(dtype)
    # integer images: the same float64 arithmetic as scikit-image. float32 images:
    # scikit-image stays in float32, rpx computes in float64: the documented 1e-6.
    rel = 1e-12 if dtype != np.float32 else 1e-6
    assert ssim(pred, gt, data_range) == pytest.approx(skimage_ssim(pred, gt, data_range),
                                                       rel=rel, abs=1e-15)
    assert psnr(pred, gt, data_range)[0] == pytest.approx(
        peak_signal_noise_ratio(gt, pred, data_range=data_range), rel=rel)


def test_hand_computed_psnr_and_global_ssim() -> None:
    gt = np.zeros((16, 16), np.uint8)
    pred = gt.copy()
    pred[0, 0] = 16  # mse = 256 / 256 = 1
    assert psnr(pred, gt, 255)[0] == pytest.approx(10 * math.log10(255**2))
    assert psnr(gt, gt, 255) == (100.0, True)
    x = np.array([[0.0, 2.0]])
    y = np.array([[1.0, 1.0]])
    c1, c2 = (0.01 * 2) ** 2, (0.03 * 2) ** 2
    # means 1 and 1, variances 1 and 0, covariance 0
    assert ssim_global(x, y, 2) == pytest.approx((2 + c1) * c2 / ((2 + c1) * (1 + c2)))
    assert ssim_global(x, x, 2) == pytest.approx(1.0)


@settings(max_examples=30, deadline=None)
@given(image=hnp.arrays(np.uint8, st.tuples(st.integers(11, 24), st.integers(11, 24), st.just(3))),
       data=st.data())
def test_against_scikit_image_random(image, data) -> None:
    noise = data.draw(hnp.arrays(np.int16, image.shape, elements=st.integers(-30, 30)))
    pred = np.clip(image.astype(np.int16) + noise, 0, 255).astype(np.uint8)
    assert ssim(pred, image, 255) == pytest.approx(skimage_ssim(pred, image, 255), rel=1e-9, abs=1e-12)
    assert ssim(image, image, 255) == pytest.approx(1.0)


def test_cli_rows_aggregate_identical_cap_and_alpha(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    gt = (rng.random((32, 40, 3)) * 255).astype(np.uint8)
    noisy = np.clip(gt.astype(int) + rng.integers(-10, 11, gt.shape), 0, 255).astype(np.uint8)
    write_png(tmp_path / "gt" / "a.png", gt)
    write_png(tmp_path / "pred" / "a.png", noisy)
    write_png(tmp_path / "gt" / "b.png", gt)
    rgba = np.concatenate([gt, np.full(gt.shape[:2] + (1,), 255, np.uint8)], axis=2)
    write_png(tmp_path / "pred" / "b.png", rgba)
    run = rpx(f"eval nvs {dirs(tmp_path)}")
    assert run.exit_code == 0 and "alpha channel" in run.stderr
    report = run.json
    a, b = report["rows"]
    assert a["psnr"] == pytest.approx(peak_signal_noise_ratio(gt, noisy, data_range=255))
    assert a["ssim"] == pytest.approx(skimage_ssim(noisy, gt, 255), rel=1e-12)
    assert b["psnr"] == 100.0 and b["ssim"] == 1.0
    assert report["aggregate"]["n_identical"] == 1
    assert report["aggregate"]["psnr"] == pytest.approx((a["psnr"] + 100) / 2)


def test_sixteen_bit_and_data_range(rpx, tmp_path: Path) -> None:
    gt = np.full((16, 16, 3), 30000, np.uint16)
    pred = gt.copy()
    pred[0, 0, 0] = 30000 + 16 * 3  # mse = (48^2) / 768 = 3
    write_npy(tmp_path / "gt" / "a.npy", gt)
    write_npy(tmp_path / "pred" / "a.npy", pred)
    row = rpx(f"eval nvs {dirs(tmp_path)}").json["rows"][0]
    assert row["psnr"] == pytest.approx(10 * math.log10(65535**2 / 3))
    other = rpx(f"eval nvs {dirs(tmp_path)} --data-range 1000").json["rows"][0]
    assert other["psnr"] == pytest.approx(10 * math.log10(1000**2 / 3))


@pytest.mark.parametrize(("pred", "gt", "message"), [
    (np.zeros((16, 16, 3), np.uint8), np.zeros((16, 20, 3), np.uint8), "shapes differ"),
    (np.zeros((16, 16, 3), np.uint8), np.zeros((16, 16, 3), np.uint16), "bit depths differ"),
    (np.zeros((16, 16, 3), np.float32), np.zeros((16, 16, 3), np.float32), "--data-range"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8, 3), np.uint8), "smaller than the 11x11"),
    (np.zeros((16, 16, 5), np.uint8), np.zeros((16, 16, 5), np.uint8), "shape"),
])
def test_nvs_input_errors(rpx, tmp_path: Path, pred, gt, message: str) -> None:
    write_npy(tmp_path / "gt" / "a.npy", gt)
    write_npy(tmp_path / "pred" / "a.npy", pred)
    run = rpx(f"eval nvs {dirs(tmp_path)}")
    assert run.exit_code == 1 and message in run.stderr and "Traceback" not in run.stderr


def test_sixteen_bit_rgb_png_is_refused(rpx, tmp_path: Path) -> None:
    png_rgb16(tmp_path / "gt" / "a.png", np.full((16, 16, 3), 40000, np.uint16))
    png_rgb16(tmp_path / "pred" / "a.png", np.full((16, 16, 3), 40000, np.uint16))
    run = rpx(f"eval nvs {dirs(tmp_path)}")
    assert run.exit_code == 1 and "16-bit RGB PNG" in run.stderr
