"""saliency-mb numbers: hand-computed cases, a plain-loop reference, invariants."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rpx_cli.errors import InputError
from rpx_cli.ops.blocks import block_sums, integer_sum_threshold
from rpx_cli.tasks.saliency_mb import block_iou, mask_to_blocks

# --- hand-computed (the original tool's own cases) -------------------------------------


def test_block_means_threshold_original_case() -> None:
    mask = np.zeros((4, 4), dtype=np.float32)
    mask[:2, :2] = 1.0
    mask[2:, 2:] = 0.49
    blocks = mask_to_blocks(mask, block_size=2, threshold=0.5)
    assert blocks.tolist() == [[True, False], [False, False]]


def test_block_iou_original_case() -> None:
    pred = np.array([[True, False], [True, False]])
    gt = np.array([[True, True], [False, False]])
    assert block_iou(pred, gt) == (1, 3, 1 / 3)


def test_block_iou_empty_union_is_one() -> None:
    empty = np.zeros((3, 5), dtype=bool)
    assert block_iou(empty, empty) == (0, 0, 1.0)


def test_partial_edge_blocks_are_cropped() -> None:
    # 5x7 with block 2: a 2x3 grid; row 4 and column 6 are dropped even though they are on.
    mask = np.zeros((5, 7), dtype=np.float32)
    mask[4, :] = 1.0
    mask[:, 6] = 1.0
    assert mask_to_blocks(mask, block_size=2, threshold=0.5).shape == (2, 3)
    assert not mask_to_blocks(mask, block_size=2, threshold=0.5).any()


def test_block_on_at_exact_threshold() -> None:
    # Mean exactly 0.5 (two of four pixels on) is on: ">=", not ">".
    mask = np.array([[1, 0], [0, 1]], dtype=np.float32)
    assert mask_to_blocks(mask, block_size=2, threshold=0.5).tolist() == [[True]]
    assert mask_to_blocks(mask, block_size=2, threshold=0.5000001).tolist() == [[False]]


def test_integer_tie_is_exact_where_float32_mean_is_not() -> None:
    # 8-bit PGM block of 256 samples whose true mean is exactly 0.5 (sum 32640 = 256 * 127.5).
    # Per-sample float32 division and a float32 mean can land just below 0.5.
    samples = np.full((16, 16), 127, dtype=np.uint8)
    samples.flat[:128] = 128
    assert Fraction(int(samples.sum()), 256 * 255) == Fraction(1, 2)
    assert mask_to_blocks(samples, block_size=16, threshold=0.5, divisor=255).tolist() == [[True]]
    samples.flat[0] = 127  # one less: mean just below 0.5
    assert mask_to_blocks(samples, block_size=16, threshold=0.5, divisor=255).tolist() == [[False]]


def test_npy_max_rule_divides_by_max_above_one() -> None:
    # values > 1: divided by the max (200): block means 1.0 and 0.25
    mask = np.array([[200, 200, 50, 50], [200, 200, 50, 50]], dtype=np.float64)
    assert mask_to_blocks(mask, block_size=2, threshold=0.5).tolist() == [[True, False]]
    assert mask_to_blocks(mask, block_size=2, threshold=0.25).tolist() == [[True, True]]
    # the same as integers: the same decisions, exactly
    ints = mask.astype(np.int32)
    assert mask_to_blocks(ints, block_size=2, threshold=0.25).tolist() == [[True, True]]
    assert mask_to_blocks(ints, block_size=2, threshold=0.2500001).tolist() == [[True, False]]


def test_npy_negatives_clip_to_zero() -> None:
    # block mean of clip([1, 1, 1, -3]) = 0.75, not 0.0
    mask = np.array([[1.0, 1.0], [1.0, -3.0]])
    assert mask_to_blocks(mask, block_size=2, threshold=0.75).tolist() == [[True]]
    ints = np.array([[1, 1], [1, -3]], dtype=np.int8)
    assert mask_to_blocks(ints, block_size=2, threshold=0.75).tolist() == [[True]]


def test_image_divisor_and_clip() -> None:
    # a 0/255 mask read with --mask-scale 1: values clip to 1
    mask = np.array([[255, 255], [0, 0]], dtype=np.uint8)
    assert mask_to_blocks(mask, block_size=2, threshold=0.5, divisor=1).tolist() == [[True]]
    # a 0/1 mask divided by 255 never reaches 0.5
    binary = np.array([[1, 1], [1, 1]], dtype=np.uint8)
    assert mask_to_blocks(binary, block_size=2, threshold=0.5, divisor=255).tolist() == [[False]]


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (np.zeros((4,), np.float32), "2-D"),
        (np.zeros((2, 2, 2), np.float32), "2-D"),
        (np.zeros((3, 8), np.float32), "smaller than one 4x4 block"),
        (np.where(np.eye(4) > 0, np.nan, 0.0).astype(np.float32), "non-finite"),
        (np.array([[np.inf] * 4] * 4), "non-finite"),
        (np.array([[-np.inf] * 4] * 4), "non-finite"),
        (np.zeros((4, 4), np.complex64), "dtype"),
    ],
)
def test_bad_masks_are_input_errors(mask: np.ndarray, message: str) -> None:
    with pytest.raises(InputError, match=message):
        mask_to_blocks(mask, block_size=4, threshold=0.5)


def test_integer_sum_threshold_formula() -> None:
    assert integer_sum_threshold(0.5, 4, 1) == 2
    assert integer_sum_threshold(0.5, 256, 255) == 32640
    assert integer_sum_threshold(0.0, 256, 255) == 0
    assert integer_sum_threshold(1.0, 256, 255) == 256 * 255
    assert integer_sum_threshold(0.1, 10, 1) == 2  # 0.1 as a double is slightly above 1/10


# --- reference: a plain loop over blocks, float64, exact rational for integer masks -------


def reference_blocks(mask: np.ndarray, block: int, threshold: float,
                     divisor: float | None) -> np.ndarray:
    """One block at a time: scale, clip, mean (exact fractions for integer data)."""
    h, w = mask.shape[0] // block, mask.shape[1] // block
    out = np.zeros((h, w), dtype=bool)
    data = mask.astype(np.float64) if mask.dtype.kind == "f" else mask.astype(object)
    peak = data.max()
    scale = (peak if peak > 1 else 1) if divisor is None else divisor
    for i in range(h):
        for j in range(w):
            tile = data[i * block:(i + 1) * block, j * block:(j + 1) * block].ravel()
            if mask.dtype.kind == "f":
                values = np.clip(tile / scale, 0.0, 1.0)
                out[i, j] = values.sum() / values.size >= threshold
            else:
                total = sum(Fraction(int(min(max(v, 0), scale))) for v in tile)
                out[i, j] = total / (len(tile) * Fraction(scale)) >= Fraction(threshold)
    return out


masks_float = hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64]),
    shape=st.tuples(st.integers(1, 24), st.integers(1, 24)),
    elements=st.floats(-0.5, 3.0, width=32),
)
_shapes = st.tuples(st.integers(1, 24), st.integers(1, 24))
masks_int = st.one_of(
    hnp.arrays(np.uint8, _shapes, elements=st.integers(0, 255)),
    hnp.arrays(np.uint16, _shapes, elements=st.integers(0, 300)),
    hnp.arrays(np.int16, _shapes, elements=st.integers(-3, 300)),
    hnp.arrays(np.bool_, _shapes),
)


@settings(max_examples=150, deadline=None)
@given(mask=masks_float, block=st.integers(1, 8),
       threshold=st.sampled_from([0.0, 0.25, 0.5, 0.7, 1.0]))
def test_float_masks_match_reference(mask: np.ndarray, block: int, threshold: float) -> None:
    if min(mask.shape) < block:
        return
    got = mask_to_blocks(mask, block_size=block, threshold=threshold)
    np.testing.assert_array_equal(got, reference_blocks(mask, block, threshold, None))


@settings(max_examples=150, deadline=None)
@given(mask=masks_int, block=st.integers(1, 8),
       threshold=st.sampled_from([0.0, 0.1, 0.5, 0.75, 1.0]),
       divisor=st.sampled_from([None, 1, 255, 300]))
def test_integer_masks_match_exact_reference(mask: np.ndarray, block: int, threshold: float,
                                             divisor: int | None) -> None:
    if min(mask.shape) < block:
        return
    got = mask_to_blocks(mask, block_size=block, threshold=threshold, divisor=divisor)
    np.testing.assert_array_equal(got, reference_blocks(mask, block, threshold, divisor))


# --- invariants ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(mask=hnp.arrays(np.float32, (32, 48), elements=st.floats(0, 1, width=32)),
       block=st.sampled_from([1, 2, 4, 8, 16]))
def test_perfect_prediction_scores_one(mask: np.ndarray, block: int) -> None:
    blocks = mask_to_blocks(mask, block_size=block, threshold=0.5)
    assert block_iou(blocks, blocks)[2] == 1.0


@settings(max_examples=60, deadline=None)
@given(a=hnp.arrays(bool, (6, 7)), b=hnp.arrays(bool, (6, 7)))
def test_block_iou_is_symmetric_and_bounded(a: np.ndarray, b: np.ndarray) -> None:
    i, u, iou = block_iou(a, b)
    assert (i, u, iou) == block_iou(b, a)
    assert 0 <= i <= u and 0.0 <= iou <= 1.0
    assert u == np.count_nonzero(a) + np.count_nonzero(b) - i


@settings(max_examples=60, deadline=None)
@given(mask=hnp.arrays(np.uint8, (16, 32)))
def test_integer_and_float_paths_agree_on_dyadic_scale(mask: np.ndarray) -> None:
    # uint8/256 is exact in float32: both paths must give the same decisions
    as_float = mask.astype(np.float32) / np.float32(256)
    for threshold in (0.25, 0.5, 0.75):
        np.testing.assert_array_equal(
            mask_to_blocks(mask, block_size=4, threshold=threshold, divisor=256),
            mask_to_blocks(as_float, block_size=4, threshold=threshold),
        )


def test_block_sums_rows_first_equals_reshape_sum() -> None:
    rng = np.random.default_rng(3)
    data = rng.integers(0, 1000, size=(37, 53)).astype(np.int64)
    expected = data[:36, :52].reshape(9, 4, 13, 4).sum(axis=(1, 3))
    np.testing.assert_array_equal(block_sums(data, 4, dtype=np.int64), expected)
