"""Panoptic overlaps by the native core (``panoptic_overlaps``, ``rpx_cli/csrc/panoptic.c``)
against the numpy form of :func:`~rpx_cli.ops.panoptic.overlap_counts` (``RPX_NATIVE=0``) and
panopticapi's ``np.unique`` counting (:func:`~rpx_cli.ops.panoptic.reference_overlap_counts`):
equal, integer for integer, on maps with long runs, noise, VOID, unlisted ids and ids that
collide in the kernel's cache.

The kernel is called directly, so these tests run under ``RPX_NATIVE=0`` and the sanitizer
build too; they skip where the extension is not built.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.ops import panoptic
from rpx_cli.ops.panoptic import overlap_counts, reference_overlap_counts

core = pytest.importorskip("rpx_cli._native")

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def native(gt_ids, pred_ids, gt_segments, pred_segments) -> np.ndarray:
    counts = np.zeros((gt_segments.size + 2, pred_segments.size + 2), np.int64)
    sides = []
    for segments in (gt_segments, pred_segments):
        order = np.argsort(segments).astype(np.int64)
        sides += [np.ascontiguousarray(segments[order], np.int64), order]
    core.panoptic_overlaps(gt_ids.astype("<u4").ravel(), pred_ids.astype("<u4").ravel(), *sides, counts)
    return counts


def numpy_counts(monkeypatch, *args) -> np.ndarray:
    with monkeypatch.context() as patch:
        patch.setenv("RPX_NATIVE", "0")
        return overlap_counts(*args)


@st.composite
def id_maps(draw):
    """Two id maps of one shape from a palette (0 = VOID; ids spaced by 1024 collide in a
    10-bit direct-mapped cache unless hashed), blocks with noise; segment lists a subset of
    the palette in any order (what is not listed is an unlisted id)."""
    height, width = draw(st.integers(0, 30)), draw(st.integers(0, 70))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spacing = draw(st.sampled_from([1, 1024, 99991]))
    palette = np.unique(np.concatenate([[0], rng.integers(1, 2000, 30) * spacing % 256**3]))
    palette = palette[(palette == 0) | (palette > 0)]
    maps = []
    for _ in range(2):
        blocks = rng.choice(palette, (height // 3 + 1, width // 5 + 1))
        ids = np.kron(blocks, np.ones((3, 5), np.int64))[:height, :width]
        noise = rng.random((height, width)) < draw(st.sampled_from([0.0, 0.1, 1.0]))
        maps.append(np.where(noise, rng.choice(palette, (height, width)), ids).astype("<u4"))
    listed = [rng.permutation(palette[palette > 0])[:draw(st.integers(0, palette.size))]
              for _ in range(2)]
    return maps[0], maps[1], listed[0].astype(np.int64), listed[1].astype(np.int64)


@SETTINGS
@given(id_maps())
def test_equals_the_numpy_form_and_panopticapis_counting(case):
    gt_ids, pred_ids, gt_segments, pred_segments = case
    got = native(gt_ids, pred_ids, gt_segments, pred_segments)
    assert np.array_equal(got, reference_overlap_counts(gt_ids, pred_ids, gt_segments, pred_segments))
    assert got.sum() == gt_ids.size


def test_the_call_site_takes_each_path(monkeypatch):
    rng = np.random.default_rng(2)
    gt_ids = np.repeat(rng.integers(0, 6, (40, 8)), 9, axis=1).astype("<u4") * 70001
    pred_ids = np.roll(gt_ids, 3, axis=1)
    segments = np.unique(gt_ids)[1:].astype(np.int64)[::-1]
    calls = []
    real = core.panoptic_overlaps
    monkeypatch.setattr(core, "panoptic_overlaps", lambda *a: calls.append(1) or real(*a))
    monkeypatch.delenv("RPX_NATIVE", raising=False)
    fused = overlap_counts(gt_ids, pred_ids, segments, segments[:2])
    assert calls == [1]
    assert np.array_equal(fused, numpy_counts(monkeypatch, gt_ids, pred_ids, segments, segments[:2]))
    assert calls == [1]  # RPX_NATIVE=0: the numpy form
    overlap_counts(gt_ids.astype(np.int64), pred_ids, segments, segments)  # not uint32: numpy
    assert calls == [1]


def test_arguments_are_checked():
    ids = np.zeros(6, "<u4")
    seg, order = np.array([3, 5], np.int64), np.array([1, 0], np.int64)
    out = np.zeros((4, 4), np.int64)
    core.panoptic_overlaps(ids, ids, seg, order, seg, order, out)
    assert out[1, 1] == 6  # VOID on VOID
    with pytest.raises(ValueError, match="differ in size"):
        core.panoptic_overlaps(ids, ids[:5], seg, order, seg, order, out)
    with pytest.raises(ValueError, match="must increase"):
        core.panoptic_overlaps(ids, ids, seg[::-1].copy(), order, seg, order, out)
    with pytest.raises(ValueError, match="must increase"):
        core.panoptic_overlaps(ids, ids, seg, np.array([0, 2], np.int64), seg, order, out)
    with pytest.raises(ValueError, match="differ in length"):
        core.panoptic_overlaps(ids, ids, seg, order[:1], seg, order, out)
    with pytest.raises(ValueError, match="out must hold"):
        core.panoptic_overlaps(ids, ids, seg, order, seg, order, np.zeros((4, 3), np.int64))
    with pytest.raises(TypeError, match="uint32 expected"):
        core.panoptic_overlaps(ids.astype(np.int32), ids, seg, order, seg, order, out)
    with pytest.raises(TypeError):
        core.panoptic_overlaps(ids, ids, seg, order, seg, order, bytes(128))  # not writable


def test_the_numpy_module_keeps_its_limits():
    """More than 65,533 segments a side is refused on both paths, before any kernel."""
    ids = np.zeros((2, 2), "<u4")
    many = np.arange(1, 65_536, dtype=np.int64)
    with pytest.raises(ValueError, match="65,533"):
        panoptic.overlap_counts(ids, ids, many, many[:1])
