"""Label-pair counts of 8-bit label maps by the native core (``label_pair_counts``,
``rpx_cli/csrc/counts.c``) against ``np.bincount`` of the pixels' codes (``gt << 8 | pred``)
and :func:`~rpx_cli.ops.confusion.frame_confusion`'s numpy path (``RPX_NATIVE=0``): equal,
integer for integer, on region-like maps, noise, every label value 0-255, empty maps.

The kernel is called directly, so these tests run under ``RPX_NATIVE=0`` and the sanitizer
build too; they skip where the extension is not built.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.ops.confusion import frame_confusion, reference_confusion

core = pytest.importorskip("rpx_cli._native")

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def label_maps(draw):
    height, width = draw(st.integers(0, 40)), draw(st.integers(0, 90))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    labels = rng.choice(np.arange(256), draw(st.integers(1, 12)))
    maps = []
    for _ in range(2):
        blocks = rng.choice(labels, (height // 4 + 1, width // 7 + 1))
        base = np.kron(blocks, np.ones((4, 7), np.int64))[:height, :width]
        noise = rng.random((height, width)) < draw(st.sampled_from([0.0, 0.02, 1.0]))
        maps.append(np.where(noise, rng.integers(0, 256, (height, width)), base).astype(np.uint8))
    return maps[0], maps[1]


@SETTINGS
@given(label_maps())
def test_equals_bincount_of_the_codes(case):
    gt, pred = case
    out = np.zeros((256, 256), np.int64)
    core.label_pair_counts(gt.ravel(), pred.ravel(), out)
    codes = gt.ravel().astype(np.int64) << 8 | pred.ravel()
    assert np.array_equal(out.ravel(), np.bincount(codes, minlength=65536))


@SETTINGS
@given(label_maps(), st.sampled_from([(), (0,), (255, 3), (300,)]))
def test_frame_confusion_takes_either_path_to_the_same_matrix(case, ignore):
    gt, pred = case
    expected = reference_confusion(gt, pred, ignore)
    for setting in ("1", "0"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("RPX_NATIVE", setting)
            got = frame_confusion(gt, pred, ignore)
        for field in ("gt_labels", "pred_labels", "counts"):
            assert np.array_equal(getattr(got, field), getattr(expected, field)), (setting, field)


def test_arguments_are_checked():
    maps = np.zeros(10, np.uint8)
    out = np.zeros((256, 256), np.int64)
    core.label_pair_counts(maps, maps, out)
    assert out[0, 0] == 10
    with pytest.raises(ValueError, match="differ in size"):
        core.label_pair_counts(maps, maps[:9], out)
    with pytest.raises(ValueError, match="256 x 256"):
        core.label_pair_counts(maps, maps, np.zeros((256, 255), np.int64))
    with pytest.raises(TypeError):
        core.label_pair_counts(maps.astype(np.uint16), maps, out)
    with pytest.raises(TypeError):
        core.label_pair_counts(maps, maps, out.astype(np.int32))
