"""The native core (``rpx_cli._native``) against its numpy twins and pycocotools, bit for bit:
compressed strings decoded and checked (``rle_check`` / ``decode_counts``), runs encoded
(``rle_encode`` / ``encode_values``), polygons rasterised (``polygons_rle`` /
``reference_polygon`` / ``frPyObjects``), masks merged (``rle_merge`` / ``reference_merge`` /
``mask.merge``), pairs intersected (``rle_intersections`` / ``reference_intersections`` /
``mask.iou``) and boxes (``rle_bbox`` / ``toBbox``); which path runs (``RPX_NATIVE``).

The kernels are called directly (these tests run under ``RPX_NATIVE=0`` too, and under the
sanitizer build in CI); they skip where the extension is not built.
"""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.ops.polygon_raster import first_problem, flatten, reference_merge, reference_polygon
from rpx_cli.ops.rle import decode_counts, encode_values, reference_decode

core = pytest.importorskip("rpx_cli._native")
mask_utils = pytest.importorskip("pycocotools.mask")

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALPHABET = st.binary(min_size=0, max_size=40).map(lambda b: bytes(48 + (c % 64) for c in b))


def joined(strings: list[bytes]) -> tuple[bytes, np.ndarray]:
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in strings])]).astype(np.int64)
    return b"".join(strings), offsets


def check(strings: list[bytes]):
    text, offsets = joined(strings)
    n = len(strings)
    area, total, bad = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.uint8)
    core.rle_check(text, offsets, area, total, bad)
    return area, total, bad


def encode(runs: list[np.ndarray]) -> list[bytes]:
    starts = np.concatenate([[0], np.cumsum([len(r) for r in runs])]).astype(np.int64)
    counts = np.concatenate([np.asarray(r, np.int64) for r in runs]) if runs else np.zeros(0, np.int64)
    text, offsets = core.rle_encode(counts, starts)
    bounds = np.frombuffer(offsets, np.int64).tolist()
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def rasterise(objects: list[list[list[float]]], sizes: list[tuple[int, int]],
              threads: int = 1) -> list[bytes]:
    xy, vertex_starts, polygon_starts = flatten(objects)
    text, offsets = core.polygons_rle(xy, vertex_starts, polygon_starts,
                                      np.array(sizes, np.int64).reshape(-1, 2), 1 << 40, threads)
    bounds = np.frombuffer(offsets, np.int64).tolist()
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def runs_of(mask: np.ndarray) -> np.ndarray:
    """pycocotools' runs of a binary (h, w) mask, column-major."""
    return np.asarray(reference_decode(mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))["counts"]),
                      np.int64)


# --- strings ------------------------------------------------------------------------------

@SETTINGS
@given(st.lists(ALPHABET, min_size=1, max_size=12))
def test_rle_check_equals_the_reference_decoder(strings: list[bytes]) -> None:
    """Any string of COCO's alphabet (malformed ones included): the same verdict, and the
    same area and sum wherever the string is well formed."""
    area, total, bad = check(strings)
    reference = decode_counts(strings)
    assert (bad == 0).tolist() == [not p for p in reference.problem]
    ok = bad == 0
    assert area[ok].tolist() == reference.area[ok].tolist()
    assert total[ok].tolist() == reference.total[ok].tolist()


@pytest.mark.parametrize(("string", "why"), [(b"d0X1F:", "negative"), (b"5 ", "outside"),
                                             (b"1o", "open"), (b"o" * 13 + b"0", "long"),
                                             (b"1\xff2", "outside")])
def test_rle_check_flags_malformed_strings(string: bytes, why: str) -> None:
    _, _, bad = check([string])
    assert bad[0] != 0
    assert decode_counts([string]).problem[0]


def test_a_negative_run_is_seen_even_when_the_32_bit_sum_is_right() -> None:
    """``d0X1F:`` decodes to 20, 40, -10, 50: its runs sum to 100 = 10·10, and pycocotools'
    run walk loops for ever on it."""
    _area, total, bad = check([b"d0X1F:"])
    assert reference_decode(b"d0X1F:") == [20, 40, -10, 50]
    assert total[0] == 100 and bad[0] != 0


@SETTINGS
@given(st.lists(st.lists(st.integers(0, 2**33), min_size=0, max_size=20), min_size=1, max_size=8))
def test_encode_equals_the_reference_and_decodes_back(runs: list[list[int]]) -> None:
    strings = encode([np.array(r, np.int64) for r in runs])
    for r, s in zip(runs, strings, strict=True):
        diffs = np.array([v - (r[i - 2] if i > 2 else 0) for i, v in enumerate(r)], np.int64)
        chars, lengths = encode_values(diffs)
        assert s == b"".join(row[:n].tobytes() for row, n in zip(chars, lengths.tolist(), strict=True))
        assert reference_decode(s) == r


def test_encode_equals_pycocotools_on_masks() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        mask = rng.random((h, w)) < rng.random()
        expected = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))["counts"]
        assert encode([runs_of(mask)]) == [expected]


# --- polygons -----------------------------------------------------------------------------

# pycocotools' own examples (PythonAPI demos and tests): a box outline, a polygon on pixel
# centres, one on half-pixels, a sliver, and coordinates outside the image
EXAMPLES = [
    ([[10.0, 10.0, 20.0, 10.0, 20.0, 20.0, 10.0, 20.0]], (30, 30)),
    ([[0.0, 0.0, 5.0, 0.0, 5.0, 5.0]], (8, 8)),
    ([[0.5, 0.5, 4.5, 0.5, 4.5, 3.5, 0.5, 3.5]], (6, 6)),
    ([[1.0, 1.0, 1.2, 1.0, 1.2, 9.0]], (12, 12)),
    ([[-5.0, -5.0, 15.0, -5.0, 15.0, 15.0, -5.0, 15.0]], (10, 10)),
    ([[3.0, 3.0, 3.0, 3.0, 3.0, 3.0]], (5, 5)),
    ([[1.0, 1.0, 6.0, 2.0, 3.0, 7.0], [5.0, 5.0, 9.0, 5.0, 9.0, 9.0]], (10, 11)),
    ([[0.0, 0.0, 100.0, 0.0, 100.0, 1.0, 0.0, 1.0]], (2, 100)),
]


def pycocotools_rle(polygons: list[list[float]], h: int, w: int) -> bytes:
    rles = mask_utils.frPyObjects(polygons, h, w)
    return (mask_utils.merge(rles) if len(rles) > 1 else rles[0])["counts"]


@pytest.mark.parametrize(("polygons", "size"), EXAMPLES)
def test_polygons_equal_pycocotools_on_its_examples(polygons, size) -> None:
    h, w = size
    expected = pycocotools_rle(polygons, h, w)
    assert rasterise([polygons], [size]) == [expected]
    runs = reference_merge([reference_polygon(np.array(p), h, w) for p in polygons])
    assert encode([runs]) == [expected]


coordinate = st.one_of(st.floats(-12, 60, allow_nan=False, width=64),
                       st.integers(-3, 50).map(float),
                       st.integers(-15, 250).map(lambda v: v / 5),
                       st.integers(-6, 100).map(lambda v: v / 2))


@st.composite
def polygon_objects(draw):
    h, w = draw(st.integers(1, 48)), draw(st.integers(1, 48))
    parts = draw(st.lists(st.lists(st.tuples(coordinate, coordinate), min_size=3, max_size=9),
                          min_size=1, max_size=3))
    return [[v for point in part for v in point] for part in parts], (h, w)


@SETTINGS
@given(polygon_objects())
def test_polygons_equal_pycocotools_and_the_numpy_twin(drawn) -> None:
    polygons, (h, w) = drawn
    expected = pycocotools_rle(polygons, h, w)
    assert rasterise([polygons], [(h, w)]) == [expected]
    runs = reference_merge([reference_polygon(np.array(p), h, w) for p in polygons])
    assert encode([runs]) == [expected]


@pytest.mark.parametrize("size", [(600, 800), (5000, 4000), (30000, 70000)])
def test_polygons_in_large_images_equal_pycocotools(size) -> None:
    """Pixel indices of three and four bytes (the crossings' radix sort passes over each
    byte that differs) and hundreds of crossings per polygon, in any order."""
    h, w = size
    rng = np.random.default_rng(h)
    objects = []
    for _ in range(40):
        x0, y0 = rng.uniform(0, w - 300), rng.uniform(0, h - 300)
        k = int(rng.integers(3, 30))
        objects.append([np.column_stack([x0 + rng.uniform(0, 300, k),
                                         y0 + rng.uniform(0, 300, k)]).ravel().tolist()])
    objects.append([[0.0, 0.0, w - 1.0, 2.0, 3.0, h - 1.0]])  # one across the whole image
    expected = [pycocotools_rle(p, h, w) for p in objects]
    assert rasterise(objects, [size] * len(objects)) == expected
    assert rasterise(objects, [size] * len(objects), 3) == expected


def test_many_objects_in_one_call_equal_one_by_one() -> None:
    rng = np.random.default_rng(5)
    objects, sizes = [], []
    for _ in range(300):
        h, w = (int(v) for v in rng.integers(1, 70, 2))
        parts = [(rng.uniform(-5, 75, 2 * int(rng.integers(3, 12)))).tolist()
                 for _ in range(int(rng.integers(1, 4)))]
        objects.append(parts)
        sizes.append((h, w))
    together = rasterise(objects, sizes)
    assert together == [pycocotools_rle(p, h, w) for p, (h, w) in zip(objects, sizes, strict=True)]
    # the objects split among threads (about as many polygons each): the same strings
    for threads in (2, 3, 7, 16, 40):
        assert rasterise(objects, sizes, threads) == together
    assert rasterise(objects[:1], sizes[:1], 4) == together[:1]
    assert rasterise([], [], 4) == []


def test_polygons_out_of_bounds_are_refused_by_the_kernel_too() -> None:
    """The kernel checks its own bounds (a caller that forgot to gets an error, never a
    crash or a walk of 10^9 steps)."""
    xy, vs, ps = flatten([[[10.0, 10.0, 1e12, 10.0, 50.0, 50.0]]])
    with pytest.raises(ValueError, match="out of bounds"):
        core.polygons_rle(xy, vs, ps, np.array([[100, 100]], np.int64), 1 << 40)
    xy, vs, ps = flatten([[[10.0, 10.0, 5e7, 10.0, 50.0, 50.0]]])
    with pytest.raises(ValueError, match="out of bounds"):
        core.polygons_rle(xy, vs, ps, np.array([[100, 100]], np.int64), 10**6)
    with pytest.raises(ValueError, match="image size"):
        core.polygons_rle(xy, vs, ps, np.array([[65536, 65536]], np.int64), 10**6)


def test_first_problem_finds_the_polygon_out_of_bounds() -> None:
    triangle = [1.0, 1.0, 5.0, 1.0, 5.0, 5.0]
    objects = [[triangle], [triangle, [0.0, 0.0, 1e8, 0.0, 3.0, 3.0]]]
    xy, vs, _ = flatten(objects)
    found = first_problem(xy, vs, np.array([[10, 10]] * 3, np.int64))
    assert found is not None and found[0] == 2 and "x = 1e+08" in found[1]
    # a zigzag within the image whose outline exceeds the budget
    zigzag = [v for i in range(4000) for v in ((0.0, float(i % 9)) if i % 2 else (9.0, float(i % 9)))]
    xy, vs, _ps = flatten([[zigzag]])
    found = first_problem(xy, vs, np.array([[10, 10]], np.int64))
    assert found is not None and "steps of 1/5 pixel" in found[1]


# --- merges, intersections, boxes -------------------------------------------------------------

@st.composite
def masks_of_one_size(draw, most: int = 5):
    h, w = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    n = draw(st.integers(1, most))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    density = rng.random(n)
    return [rng.random((h, w)) < d for d in density]


@SETTINGS
@given(masks_of_one_size(), st.booleans())
def test_merge_equals_pycocotools_and_the_numpy_twin(masks, intersect: bool) -> None:
    runs = [runs_of(m) for m in masks]
    starts = np.concatenate([[0], np.cumsum([r.size for r in runs])]).astype(np.int64)
    merged = np.frombuffer(core.rle_merge(np.concatenate(runs), starts, intersect), np.int64)
    rles = [{"size": list(masks[0].shape), "counts": s} for s in encode(runs)]
    expected = reference_decode(mask_utils.merge(rles, intersect=int(intersect))["counts"])
    assert merged.tolist() == expected
    assert reference_merge(runs, intersect).tolist() == expected


def intersections(pred: list[np.ndarray], gt: list[np.ndarray], frames: list[tuple[int, int, int]]):
    """Native intersections as a dense matrix per the whole table."""
    p_text, p_off = joined(encode([runs_of(m) for m in pred]))
    g_text, g_off = joined(encode([runs_of(m) for m in gt]))
    pb = np.array([0, *np.cumsum([f[0] for f in frames])], np.int64)
    gb = np.array([0, *np.cumsum([f[1] for f in frames])], np.int64)
    heights = np.array([f[2] for f in frames], np.int64)
    d, g, inter = core.rle_intersections(p_text, p_off, g_text, g_off, pb, gb, heights)
    out = np.zeros((len(pred), len(gt)), np.int64)
    out[np.frombuffer(d, np.int64), np.frombuffer(g, np.int64)] = np.frombuffer(inter, np.int64)
    return out, pb, gb


def as_rles(masks: list[np.ndarray]) -> list[dict]:
    strings = encode([runs_of(m) for m in masks])
    return [{"size": list(m.shape), "counts": s} for m, s in zip(masks, strings, strict=True)]


def split_frames(frames) -> tuple[list, list, list[tuple[int, int, int]]]:
    """Drawn frames (masks of one size, how many of them are GT) as the prediction masks,
    the GT masks and each frame's (predictions, GT, height)."""
    pred, gt, shape = [], [], []
    for masks, n_gt in frames:
        n_gt = min(n_gt, len(masks))
        pred += masks[n_gt:]
        gt += masks[:n_gt]
        shape.append((len(masks) - n_gt, n_gt, masks[0].shape[0]))
    return pred, gt, shape


@SETTINGS
@given(st.lists(st.tuples(masks_of_one_size(6), st.integers(0, 6)), min_size=1, max_size=4))
def test_intersections_equal_pycocotools_and_the_pixel_twin(frames) -> None:
    from rpx_cli.ops.masks import reference_intersections

    pred, gt, shape = split_frames(frames)
    dense, pb, gb = intersections(pred, gt, shape)
    expected = np.zeros_like(dense)
    for f in range(len(shape)):
        p0, p1, g0, g1 = pb[f], pb[f + 1], gb[f], gb[f + 1]
        if p1 > p0 and g1 > g0:
            block = reference_intersections([runs_of(m) for m in pred[p0:p1]],
                                            [runs_of(m) for m in gt[g0:g1]])
            expected[p0:p1, g0:g1] = block
            # pycocotools: intersection over the detection's area with every GT a crowd
            rles_d = as_rles(pred[p0:p1])
            rles_g = as_rles(gt[g0:g1])
            ioa = np.asarray(mask_utils.iou(rles_d, rles_g, [1] * (g1 - g0))).reshape(p1 - p0, g1 - g0)
            area = np.array([m.sum() for m in pred[p0:p1]], np.float64)
            assert np.rint(ioa * area[:, None]).astype(np.int64).tolist() == block.tolist()
    assert dense.tolist() == expected.tolist()


@SETTINGS
@given(st.lists(st.tuples(masks_of_one_size(6), st.integers(0, 6)), min_size=1, max_size=6),
       st.integers(2, 40))
def test_intersections_split_among_threads_are_the_same_arrays(frames, threads: int) -> None:
    """The frames split among threads (whole frames each): the same pairs in the same order,
    for any number of threads (more threads than frames included)."""
    pred, gt, shape = split_frames(frames)
    p_text, p_off = joined(encode([runs_of(m) for m in pred]))
    g_text, g_off = joined(encode([runs_of(m) for m in gt]))
    pb = np.array([0, *np.cumsum([f[0] for f in shape])], np.int64)
    gb = np.array([0, *np.cumsum([f[1] for f in shape])], np.int64)
    heights = np.array([f[2] for f in shape], np.int64)
    one = core.rle_intersections(p_text, p_off, g_text, g_off, pb, gb, heights, 1)
    assert core.rle_intersections(p_text, p_off, g_text, g_off, pb, gb, heights, threads) == one


@SETTINGS
@given(st.lists(ALPHABET, min_size=0, max_size=60), st.integers(2, 40))
def test_rle_check_split_among_threads_gives_the_same_values(strings: list[bytes], threads: int) -> None:
    """The strings split among threads by characters (empty and malformed ones included):
    every string's area, sum and verdict as one thread gives them."""
    text, offsets = joined(strings)
    n = len(strings)
    outs = []
    for k in (1, threads):
        area, total, bad = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.uint8)
        core.rle_check(text, offsets, area, total, bad, k)
        outs.append((area.tolist(), total.tolist(), bad.tolist()))
    assert outs[0] == outs[1]


def test_intersections_refuse_a_malformed_string_in_any_part() -> None:
    """A malformed string in the last frame, the frames split among threads: the error is
    raised, not lost in a part."""
    good, goff = joined([b"<4"] * 4)
    text, off = joined([b"<4", b"<4", b"<4", b"d0X1F:"])
    bounds = np.arange(5, dtype=np.int64)
    with pytest.raises(ValueError, match="malformed"):
        core.rle_intersections(text, off, good, goff, bounds, bounds, np.full(4, 4, np.int64), 3)


def test_intersections_refuse_a_malformed_string() -> None:
    text, off = joined([b"d0X1F:"])
    good, goff = joined([b"<4"])  # 12 zeros, 4 ones... any well-formed string
    with pytest.raises(ValueError, match="malformed"):
        core.rle_intersections(text, off, good, goff, np.array([0, 1], np.int64),
                               np.array([0, 1], np.int64), np.array([4], np.int64))


@SETTINGS
@given(masks_of_one_size(6))
def test_bbox_equals_pycocotools(masks) -> None:
    strings = encode([runs_of(m) for m in masks])
    text, off = joined(strings)
    out = np.zeros((len(masks), 4))
    core.rle_bbox(text, off, np.full(len(masks), masks[0].shape[0], np.int64), out)
    rles = [{"size": list(m.shape), "counts": s} for m, s in zip(masks, strings, strict=True)]
    for box, mask in zip(out.tolist(), masks, strict=True):
        rows, cols = np.nonzero(mask)
        tight = [cols.min(), rows.min(), cols.max() - cols.min() + 1, rows.max() - rows.min() + 1] \
            if rows.size else [0, 0, 0, 0]
        assert box == [float(v) for v in tight]
    del rles


@pytest.mark.parametrize("call", [
    lambda: core.rle_check(b"12", np.array([0, 5], np.int64), np.zeros(1, np.int64),
                           np.zeros(1, np.int64), np.zeros(1, np.uint8)),
    lambda: core.rle_check(b"12", np.array([1, 2], np.int64), np.zeros(1, np.int64),
                           np.zeros(1, np.int64), np.zeros(1, np.uint8)),
    lambda: core.rle_check(b"12", np.array([0, 2], np.int64), np.zeros(2, np.int64),
                           np.zeros(1, np.int64), np.zeros(1, np.uint8)),
    lambda: core.rle_check(b"12", np.array([0, 2], np.int32), np.zeros(1, np.int64),
                           np.zeros(1, np.int64), np.zeros(1, np.uint8)),
    lambda: core.rle_encode(np.array([-1], np.int64), np.array([0, 1], np.int64)),
    lambda: core.rle_encode(np.array([1], np.int64), np.array([0, 2], np.int64)),
    lambda: core.rle_merge(np.array([4, 4, 1], np.int64), np.array([0, 2, 3], np.int64), False),
    lambda: core.rle_intersections(b"", np.array([0], np.int64), b"", np.array([0], np.int64),
                                   np.array([0, 1], np.int64), np.array([0, 0], np.int64),
                                   np.array([1], np.int64)),
])
def test_the_kernels_check_their_arguments(call) -> None:
    """Offsets past the end or out of order, outputs of the wrong length or type, negative
    runs, masks of different sizes: a Python exception, never a read out of bounds."""
    with pytest.raises((ValueError, TypeError)):
        call()


# --- which path runs ----------------------------------------------------------------------

def test_rpx_native_0_forces_the_numpy_path(monkeypatch) -> None:
    from rpx_cli import native

    monkeypatch.setenv("RPX_NATIVE", "0")
    assert native.core() is None and native.kernels() == "numpy"
    assert native.describe() == "numpy (RPX_NATIVE=0)"
    monkeypatch.setenv("RPX_NATIVE", "1")
    assert native.core() is core and native.kernels() == "native" and native.describe() == "native"


def test_provenance_and_version_say_which_path_ran() -> None:
    code = ("from rpx_cli.report.provenance import collect_environment; "
            "from rpx_cli.cli.main import version_text; "
            "print(collect_environment()['kernels']); print(version_text())")
    for value, expected in (("0", "numpy (RPX_NATIVE=0)"), ("1", "native")):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**__import__("os").environ, "RPX_NATIVE": value})
        kernels, version = done.stdout.splitlines()
        assert kernels == expected and version.endswith(f", kernels {expected})")


def test_version_imports_no_numpy() -> None:
    code = ("import sys; from rpx_cli.cli.main import version_text; version_text(); "
            "print('numpy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
