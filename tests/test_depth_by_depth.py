"""``rpx eval depth --metrics ...,by_depth``: the error per bin of GT depth
(``dataset.by_depth``) and the 2-D histogram of prediction against GT
(``dataset.pred_vs_gt``).

The bins are quarter octaves, edges ``2^(k/4)`` m; ``DepthKernel`` reads a depth's bin from
its float's bits. Checked against numpy written here (``np.searchsorted`` over the edges,
``np.bincount``), by hand on a tiny frame, at and beside every edge, and for shards/jobs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import assert_jobs_and_shards_agree, dirs, write_npy

from rpx_cli.ops.depth import reference_histogram
from rpx_cli.ops.depth_bins import EDGES, N_BINS, DepthHistogram, depth_bins
from rpx_cli.ops.depth_kernel import DepthKernel


def numpy_by_depth(frames: list[tuple[np.ndarray, np.ndarray]]) -> dict:
    """The pooled error per GT bin and the (GT, predicted) counts, plain numpy over every
    valid pixel (GT finite and > 0) of every frame, float64 edges 2^(k/4)."""
    p = np.concatenate([np.maximum(pred.ravel(), 1e-6) for pred, gt in frames])
    g = np.concatenate([gt.ravel() for _, gt in frames])
    valid = np.isfinite(g) & (g > 0)
    p, g = p[valid], g[valid]
    edges = 2.0 ** (np.arange(-40, 41) / 4)
    gb = np.clip(np.digitize(g, edges) - 1, 0, 79)
    pb = np.clip(np.digitize(p, edges) - 1, 0, 79)
    n = np.bincount(gb, minlength=80)
    absrel = np.bincount(gb, np.abs(p - g) / g, minlength=80)
    sq = np.bincount(gb, (p - g) ** 2, minlength=80)
    counts = np.zeros((80, 80), np.int64)
    np.add.at(counts, (gb, pb), 1)
    return {"n": n, "absrel": absrel, "sq": sq, "counts": counts}


def frames(seed: int, count: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        gt = rng.uniform(0.2, 60.0, (24, 32))
        gt[rng.random(gt.shape) < 0.1] = 0.0  # no measurement
        gt.flat[:6] = [1.0, 2.0 ** 0.25, np.nextafter(2.0 ** 0.5, 0), 4.0, 1e-4, 2000.0]
        pred = gt * rng.uniform(0.7, 1.3, gt.shape)
        pred.flat[6:9] = [0.0, 1e-9, 5000.0]  # clipped to 1e-6, and beyond the last edge
        out.append((pred, gt))
    return out


def test_by_depth_equals_numpy(rpx, tmp_path: Path) -> None:
    data = frames(0)
    for i, (pred, gt) in enumerate(data):
        write_npy(tmp_path / "pred" / f"f{i}.npy", pred)
        write_npy(tmp_path / "gt" / f"f{i}.npy", gt)
    dataset = rpx(f"eval depth {dirs(tmp_path)} --metrics rows,dataset,by_depth").json["dataset"]
    want = numpy_by_depth(data)
    held = np.flatnonzero(want["n"])
    first, last = held[0], held[-1] + 1
    by_depth = dataset["by_depth"]
    assert by_depth["n"] == want["n"][first:last].tolist()
    assert by_depth["bins"][0] == [0.0, EDGES[1]] and first == 0  # 1e-4 m: the first bin
    assert by_depth["bins"][-1] == [EDGES[last - 1], None] and last == 80  # 2 km: the last
    assert [b[0] for b in by_depth["bins"][1:]] == EDGES[first + 1:last].tolist()
    with np.errstate(invalid="ignore", divide="ignore"):
        absrel = want["absrel"] / want["n"]
        rmse = np.sqrt(want["sq"] / want["n"])
    for ours, theirs in ((by_depth["absrel"], absrel), (by_depth["rmse"], rmse)):
        theirs = theirs[first:last]
        assert [v is None for v in ours] == np.isnan(theirs).tolist()
        got = np.array([np.nan if v is None else v for v in ours])
        assert np.allclose(got, theirs, rtol=1e-12, atol=0, equal_nan=True)
    # every bin holding a pixel on either side: here the whole range
    assert dataset["pred_vs_gt"]["counts"] == want["counts"].tolist()
    assert dataset["pred_vs_gt"]["edges"] == [0.0, *EDGES[1:80].tolist(), None]
    assert sum(by_depth["n"]) == dataset["n_valid"]


def test_by_hand() -> None:
    """GT 1, 2, 4 m and a missing pixel; predictions 1.5, 2, 2 (the missing one ignored)."""
    gt = np.array([1.0, 2.0, 4.0, 0.0])
    pred = np.array([1.5, 2.0, 2.0, 9.0])
    histogram = DepthHistogram.empty()
    DepthKernel(np.float64).sums(pred, gt, valid=gt > 0, histogram=histogram)
    one, two, four = 40, 44, 48  # [1, 2^(1/4)), [2, ...), [4, ...)
    assert np.flatnonzero(histogram.counts.sum(axis=1)).tolist() == [one, two, four]
    assert histogram.counts[one, 42] == 1  # 1.5 m lies in [2^(2/4), 2^(3/4)) = [1.414, 1.682)
    assert histogram.counts[two, two] == 1 and histogram.counts[four, two] == 1
    assert histogram.counts.sum() == 3
    assert histogram.abs_rel[one] == 0.5 and histogram.abs_rel[two] == 0.0
    assert histogram.abs_rel[four] == 0.5 and histogram.sq_err[four] == 4.0
    assert histogram.sq_err[one] == 0.25


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bins_from_bits_equal_a_search_at_every_edge(dtype) -> None:
    """At, just below and just above every edge (in the working precision), and far out."""
    edges = EDGES.astype(dtype)
    values = np.concatenate([edges, np.nextafter(edges, dtype(0)), np.nextafter(edges, dtype(np.inf)),
                             np.array([1e-6, 1e-30, 3.0, 1e6, 1e12], dtype=dtype)])
    out, scratch = np.empty(values.size, np.intp), np.empty(values.size, np.intp)
    want = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, N_BINS - 1)
    assert depth_bins(values, out, scratch).tolist() == want.tolist()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_kernel_equals_its_reference(dtype) -> None:
    rng = np.random.default_rng(5)
    gt = rng.uniform(0.0, 30.0, 70_001).astype(dtype)
    gt[::5] = 0
    pred = (gt * rng.uniform(0.5, 1.6, gt.size)).astype(dtype)
    histogram = DepthHistogram.empty()
    DepthKernel(dtype, chunk=4096).sums(pred, gt, valid=gt > 0, histogram=histogram)
    want = reference_histogram(pred, gt, dtype)
    assert (histogram.counts == want.counts).all()
    tolerance = 1e-6 if dtype == np.float32 else 1e-12  # float32 per-pixel terms
    assert np.allclose(histogram.abs_rel, want.abs_rel, rtol=tolerance, atol=0)
    assert np.allclose(histogram.sq_err, want.sq_err, rtol=tolerance, atol=0)


def test_it_is_asked_for_and_survives_shards(rpx, tmp_path: Path) -> None:
    for i, (pred, gt) in enumerate(frames(1, 6)):
        write_npy(tmp_path / "pred" / f"f{i}.npy", pred.astype(np.float32))
        write_npy(tmp_path / "gt" / f"f{i}.npy", gt.astype(np.float32))
    plain = rpx(f"eval depth {dirs(tmp_path)}").json
    assert "by_depth" not in plain["dataset"] and plain["params"]["skipped_metrics"] == ["by_depth"]
    alone = rpx(f"eval depth {dirs(tmp_path)} --metrics rows,by_depth")
    assert alone.exit_code == 2 and "by_depth is pooled into dataset" in alone.stderr
    assert_jobs_and_shards_agree(rpx, f"eval depth {dirs(tmp_path)} --metrics rows,dataset,by_depth "
                                 "--range 0:10 --range 10:", tmp_path)
