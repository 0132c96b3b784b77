"""The native core's vectorised kernels come in two copies (``core.h: TWO_COPIES``): AVX2
and the x86-64 baseline. Both must give the same bits — depth sums included (no FMA, float64
sums in fixed lanes) — or a report would depend on the CPU it was made on. These tests run
each kernel under both copies on this machine (``_native.set_isa``) and compare; where the CPU
has no AVX2 they check the baseline copy runs. ``RPX_NATIVE_ISA`` chooses at load time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

from rpx_cli.ops.depth import DELTA_THRESHOLDS

core = pytest.importorskip("rpx_cli._native")


def restore() -> None:
    """Back to what the process chose when it loaded (``RPX_NATIVE_ISA``, else auto)."""
    core.set_isa(os.environ.get("RPX_NATIVE_ISA") or "auto")


def has_avx2() -> bool:
    try:
        core.set_isa("avx2")
    except ValueError:
        return False
    finally:
        restore()
    return True


def both(call):
    """``call()`` under the baseline copies and (where the CPU has it) the AVX2 ones."""
    results = []
    for isa in ("baseline", "avx2") if has_avx2() else ("baseline",):
        core.set_isa(isa)
        try:
            assert core.isa() == isa
            results.append(call())
        finally:
            restore()
    return results


def same(results) -> bool:
    first = results[0]
    return all(np.array_equal(np.asarray(first), np.asarray(other)) for other in results[1:])


@pytest.mark.parametrize("seed", range(6))
def test_depth_sums_are_the_same_bits(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 100_000))
    gt = rng.uniform(0.1, 80, size).astype(np.float32)
    gt[rng.random(size) < 0.1] = 0
    pred = (gt * np.exp(rng.normal(0, [1e-6, 0.01, 0.3, 3][seed % 4], size))).astype(np.float32)
    raw = np.round(gt * 1000).clip(0, 65535).astype(np.uint16)
    assert same(both(lambda: core.depth_sums(pred, gt, 0.0, None, *DELTA_THRESHOLDS)))
    assert same(both(lambda: core.depth_sums(pred, raw, 1000.0, None, *DELTA_THRESHOLDS)))


@pytest.mark.parametrize("bpp", [1, 2, 3, 4, 6])
def test_png_rows_are_the_same_bytes(bpp):
    rng = np.random.default_rng(bpp)
    height, width = 37, 53
    rows = [bytes([int(f)]) + rng.integers(0, 256, width * bpp).astype(np.uint8).tobytes()
            for f in rng.integers(0, 5, height)]
    raw = b"".join(rows)

    def unfilter():
        out = np.empty((height, width * bpp), np.uint8)
        core.png_unfilter(raw, width, height, bpp, bpp % 2 == 0, out)
        return out

    assert same(both(unfilter))
    if bpp == 3:
        def ids():
            out = np.empty((height, width), "<u4")
            core.png_rgb_ids(raw, width, height, out.view(np.uint8))
            return out
        assert same(both(ids))
    assert zlib.crc32(unfilter().tobytes())  # the output was written


def test_run_counts_are_the_same():
    rng = np.random.default_rng(9)
    gt = np.repeat(rng.integers(0, 30, 3000), rng.integers(1, 20, 3000)).astype(np.uint8)
    pred = np.roll(gt, 3)

    def pairs():
        out = np.zeros((256, 256), np.int64)
        core.label_pair_counts(gt, pred, out)
        return out

    def overlaps():
        ids_gt, ids_pred = gt.astype("<u4") * 7919, pred.astype("<u4") * 7919
        segments = np.unique(ids_gt)[1:].astype(np.int64)
        order = np.arange(segments.size, dtype=np.int64)
        out = np.zeros((segments.size + 2, segments.size + 2), np.int64)
        core.panoptic_overlaps(ids_gt, ids_pred, segments, order, segments, order, out)
        return out

    assert same(both(pairs)) and same(both(overlaps))


def test_point_label_counts_are_the_same():
    rng = np.random.default_rng(11)
    n = 70_001
    gt, pred = (rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    lut = rng.integers(0, 21, 65536).astype(np.uint8)
    interval = rng.integers(0, 4, n).astype(np.uint8)

    def counts():
        out = np.zeros((4, 21, 21), np.int64)
        present = core.point_label_counts(gt, pred, lut, 21, interval, 4, out)
        return np.append(out.ravel(), present)

    assert same(both(counts))
    bad = lut.copy()
    bad[-1] = 21  # the table check runs in both copies (the last entry included)
    for isa in ("baseline", "avx2") if has_avx2() else ("baseline",):
        core.set_isa(isa)
        try:
            with pytest.raises(ValueError, match="not below width"):
                core.point_label_counts(gt, pred, bad, 21, None, 1, np.zeros((1, 21, 21), np.int64))
        finally:
            restore()


def test_set_isa_names_and_the_environment_variable():
    with pytest.raises(ValueError, match="not auto, baseline or avx2"):
        core.set_isa("sse9")
    code = "import rpx_cli._native as n; print(n.isa())"
    env = {**os.environ, "RPX_NATIVE_ISA": "baseline"}  # (inherits a sanitizer's LD_PRELOAD)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "baseline", done.stderr
    done = subprocess.run([sys.executable, "-c", "import rpx_cli.native as n; print(n.describe())"],
                          env={**os.environ, "RPX_NATIVE_ISA": "sse9", "RPX_NATIVE": "1"},
                          capture_output=True, text=True)
    assert "not loaded" in done.stdout and "sse9" in done.stdout, done.stderr
