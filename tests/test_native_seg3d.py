"""A lidar scan's label-pair counts in one native pass (``point_label_counts``,
``rpx_cli/csrc/seg3d.c``; Python face :func:`~rpx_cli.ops.point_counts.word_confusions`)
against its numpy twin (:func:`~rpx_cli.ops.point_counts.reference_word_confusions`: the
label map on both sides, then ``interval_confusions``) and ``np.bincount`` of the codes:
equal, integer for integer, for any words, maps, intervals and ignore lists; every argument
checked; and hostile ``.label`` files give the numpy path's errors through the CLI.

The kernel is called directly where it can be, so these tests run under ``RPX_NATIVE=0``
and the sanitizer build too; they skip where the extension is not built.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.ops.lidar import LabelMap
from rpx_cli.ops.point_counts import reference_word_confusions, word_confusions

core = pytest.importorskip("rpx_cli._native")

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def table_of(label_map: LabelMap) -> tuple[np.ndarray, int]:
    table = label_map.class_table()
    assert table is not None
    return table


@st.composite
def scans(draw, *, unmapped: bool = False):
    """Two scans' uint32 words (semantic labels drawn from a map's raw labels, random
    instance ids above), the map, and intervals (or None)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.sampled_from([0, 1, 2, 3, 5, 17, 1000, 20_000]))
    n_raw = draw(st.integers(1, 40))
    raw = rng.choice(1 << 16, n_raw, replace=False)
    top = draw(st.sampled_from([1, 5, 20, 254]))  # the largest class
    classes = rng.integers(0, top + 1, n_raw)
    classes[0] = top
    label_map = LabelMap({int(r): int(c) for r, c in zip(raw, classes, strict=True)})
    words = []
    for _ in range(2):
        semantic = rng.choice(raw, n).astype(np.uint32)
        if unmapped and n:
            semantic[rng.integers(0, n)] = rng.choice(np.setdiff1d(np.arange(1 << 16), raw))
        words.append(semantic | (rng.integers(0, 1 << 16, n).astype(np.uint32) << 16))
    n_intervals = draw(st.sampled_from([0, 1, 2, 4, 255]))
    interval = rng.integers(0, n_intervals, n).astype(np.uint8) if n_intervals else None
    return words[0], words[1], label_map, interval, max(n_intervals, 1)


def direct(gt, pred, lut, width, interval, n_intervals) -> np.ndarray:
    out = np.zeros((n_intervals, width, width), np.int64)
    rows, cols = core.point_label_counts(gt, pred, lut, width, interval, n_intervals, out)
    pairs = out.sum(axis=0)  # rows, cols: 1 + the largest class with a count on each side
    assert rows == (np.flatnonzero(pairs.any(axis=1))[-1] + 1 if pairs.any() else 0)
    assert cols == (np.flatnonzero(pairs.any(axis=0))[-1] + 1 if pairs.any() else 0)
    return out


@SETTINGS
@given(scans(unmapped=True))
def test_the_kernel_equals_bincount_of_the_codes(case):
    gt, pred, label_map, interval, n_intervals = case
    lut, width = table_of(label_map)
    got = direct(gt, pred, lut, width, interval, n_intervals)
    codes = (lut[gt & 0xFFFF].astype(np.int64) * width + lut[pred & 0xFFFF])
    if interval is not None:
        codes += interval.astype(np.int64) * width * width
    expected = np.bincount(codes, minlength=n_intervals * width * width)
    assert np.array_equal(got.ravel(), expected)


@SETTINGS
@given(scans(), st.sampled_from([(), (0,), (0, 3), (300,), (-1,)]))
def test_word_confusions_equal_the_numpy_twin(case, ignore):
    gt, pred, label_map, interval, n_intervals = case
    expected = reference_word_confusions(gt, pred, label_map, interval, n_intervals, ignore)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RPX_NATIVE", "1")
        got = word_confusions(gt, pred, label_map, interval, n_intervals, ignore)
    lut, _ = table_of(label_map)
    if gt.size == 0 or (n_intervals * (int(lut[gt & 0xFFFF].max()) + 1)
                        * (int(lut[pred & 0xFFFF].max()) + 1) > 1 << 20):
        assert got is None  # an empty scan, or matrices the numpy form compacts: numpy
        return
    assert got is not None
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@SETTINGS
@given(scans(unmapped=True))
def test_a_label_the_map_does_not_list_is_left_to_the_numpy_path(case):
    gt, pred, label_map, interval, n_intervals = case
    if not gt.size:
        return
    assert word_confusions(gt, pred, label_map, interval, n_intervals) is None
    with pytest.raises(ValueError, match="not in the label map"):
        reference_word_confusions(gt, pred, label_map, interval, n_intervals)


@pytest.fixture
def native_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RPX_NATIVE", "1")  # the Python face, whatever the run's setting


def test_it_declines_what_it_does_not_take(native_on):
    words = np.arange(10, dtype=np.uint32)
    small = LabelMap({i: i for i in range(10)})
    assert word_confusions(words, words[:9], small, None, 1) is None  # sizes differ
    assert word_confusions(words.astype(np.int64), words, small, None, 1) is None
    assert word_confusions(words, words, LabelMap({i: 300 + i for i in range(10)}), None, 1) is None
    assert word_confusions(words, words, small, np.zeros(10, np.uint16), 1) is None
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RPX_NATIVE", "0")
        assert word_confusions(words, words, small, None, 1) is None
    got = word_confusions(words, words, small, None, 1)
    assert got is not None and np.array_equal(got[2][0], np.eye(10, dtype=np.int64))


def test_wide_tables_and_many_intervals_count_straight_into_out(native_on):
    # 3 x 256 x 256 counters: past the scratch tables, one int64 counter each
    rng = np.random.default_rng(5)
    label_map = LabelMap({i: i % 255 for i in range(600)})
    gt, pred = (rng.integers(0, 600, 50_000).astype(np.uint32) for _ in range(2))
    interval = rng.integers(0, 3, 50_000).astype(np.uint8)
    got = word_confusions(gt, pred, label_map, interval, 3, (0,))
    expected = reference_word_confusions(gt, pred, label_map, interval, 3, (0,))
    assert got is not None
    for a, b in zip(got, expected, strict=True):
        assert np.array_equal(a, b)


def test_arguments_are_checked():
    words = np.zeros(10, np.uint32)
    lut = np.zeros(65536, np.uint8)
    out = np.zeros((1, 4, 4), np.int64)
    assert core.point_label_counts(words, words, lut, 4, None, 1, out) == (1, 1)
    assert out[0, 0, 0] == 10
    assert core.point_label_counts(words[:0], words[:0], lut, 4, None, 1, out * 0) == (0, 0)
    with pytest.raises(ValueError, match="differ in size"):
        core.point_label_counts(words, words[:9], lut, 4, None, 1, out)
    with pytest.raises(ValueError, match="65,536"):
        core.point_label_counts(words, words, lut[:-1], 4, None, 1, out)
    with pytest.raises(ValueError, match="width x width"):
        core.point_label_counts(words, words, lut, 4, None, 1, np.zeros((1, 4, 5), np.int64))
    with pytest.raises(ValueError, match="one a point"):
        core.point_label_counts(words, words, lut, 4, np.zeros(9, np.uint8), 1, out)
    with pytest.raises(ValueError, match="n_intervals is not 1"):
        core.point_label_counts(words, words, lut, 4, None, 2, np.zeros((2, 4, 4), np.int64))
    with pytest.raises(ValueError, match=r"1\.\.256"):
        core.point_label_counts(words, words, lut, 0, None, 1, np.zeros(0, np.int64))
    with pytest.raises(ValueError, match=r"1\.\.256"):
        core.point_label_counts(words, words, lut, 257, None, 1, np.zeros((1, 257, 257), np.int64))
    bad = lut.copy()
    bad[65535] = 4  # a table entry past the width: refused, never an index past out
    with pytest.raises(ValueError, match="not below width"):
        core.point_label_counts(words, words, bad, 4, None, 1, out)
    interval = np.zeros(10, np.uint8)
    interval[3] = 2
    with pytest.raises(ValueError, match="not below n_intervals"):
        core.point_label_counts(words, words, lut, 4, interval, 2, np.zeros((2, 4, 4), np.int64))
    with pytest.raises(TypeError):
        core.point_label_counts(words.astype(np.int64), words, lut, 4, None, 1, out)
    with pytest.raises(TypeError):
        core.point_label_counts(words, words, lut.astype(np.int16), 4, None, 1, out)
    with pytest.raises(TypeError):
        core.point_label_counts(words, words, lut, 4, None, 1, out.astype(np.int32))
    with pytest.raises(TypeError):
        core.point_label_counts(words, words, lut, 4, None, 1, np.zeros((1, 4, 4), np.int64)[:, ::2])


# --- hostile .label files through the CLI: the numpy path's errors on both paths -----------

MAP = '{"0": 0, "1": 1, "10": 2, "252": 1}'


def write(root: Path, gt: bytes | list[int], pred: bytes | list[int], points: int | None = None) -> None:
    """Stem ``s`` (as given) and a good stem ``a`` of three points."""
    for role, data in (("gt", gt), ("pred", pred)):
        (root / role).mkdir(parents=True, exist_ok=True)
        raw = data if isinstance(data, bytes) else np.asarray(data, "<u4").tobytes()
        (root / role / "s.label").write_bytes(raw)
        np.array([1, 10, 252], "<u4").tofile(root / role / "a.label")
    if points is not None:
        (root / "points").mkdir(exist_ok=True)
        np.zeros((points, 4), "<f4").tofile(root / "points" / "s.bin")
        np.zeros((3, 4), "<f4").tofile(root / "points" / "a.bin")
    (root / "map.json").write_text(MAP)


def both_paths(rpx, root: Path, *flags: str, points: bool = False) -> tuple[int, str, dict | None]:
    """The CLI on the native and the numpy path: the same exit code, stderr and report."""
    results = []
    for setting in ("1", "0"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("RPX_NATIVE", setting)
            args = ["eval", "segmentation3d", "--pred-dir", root / "pred", "--gt-dir",
                    root / "gt", "--label-map", root / "map.json", "--num-classes", "3",
                    "--ignore-index", "0", *flags]
            if points:
                args += ["--points-dir", root / "points", "--range", "0:20"]
            done = rpx(args)
        report = None
        if done.exit_code == 0:
            report = done.json
            report.pop("run_provenance", None)
        results.append((done.exit_code, done.stderr, report))
    assert results[0] == results[1]
    return results[0]


@pytest.mark.parametrize("gt, pred, pattern", [
    ([1, 7, 10], [1, 10, 10], r"gt[/\\]s\.label: label\(s\) 7 are not in --label-map"),
    ([1, 10, 10], [1, 5 | 3 << 16, 9], r"pred[/\\]s\.label: label\(s\) 5, 9 are not in --label-map"),
    ([1, 7, 10], [1, 9, 10], r"gt[/\\]s\.label: label\(s\) 7 are not in --label-map"),
    (b"\0" * 7, [1, 1], r"gt[/\\]s\.label: 7 bytes is not a whole number of uint32 labels"),
    ([1, 1], b"\0" * 9, r"pred[/\\]s\.label: 9 bytes is not a whole number of uint32 labels"),
    ([1, 10, 1], [1, 10], r"pred[/\\]s\.label has 2 labels, .*gt[/\\]s\.label has 3"),
    ([1, 10, 1], [1, 7], r"pred[/\\]s\.label: label\(s\) 7 are not in --label-map"),
])
def test_hostile_label_files_give_the_numpy_paths_errors(rpx, tmp_path: Path, gt, pred, pattern):
    write(tmp_path, gt, pred)
    code, stderr, report = both_paths(rpx, tmp_path, "--on-error", "skip")
    assert code == 0 and re.search(pattern, json.dumps(report["errors"])), report["errors"]
    code, stderr, report = both_paths(rpx, tmp_path)
    assert code == 1 and report is None and re.search(pattern, stderr), stderr
    assert "Traceback" not in stderr


def test_an_unmapped_gt_label_is_named_before_a_point_count_that_differs(rpx, tmp_path: Path):
    write(tmp_path, [1, 7, 10], [1, 1, 10], points=2)
    code, stderr, _ = both_paths(rpx, tmp_path, points=True)
    assert code == 1 and re.search(r"gt[/\\]s\.label: label\(s\) 7 are not", stderr), stderr


@pytest.mark.parametrize("points", [False, True])
def test_scans_read_both_ways_give_one_report(rpx, tmp_path: Path, points: bool):
    rng = np.random.default_rng(3)
    raw = np.array([0, 1, 10, 252])
    n = 5000
    gt = rng.choice(raw, n) | rng.integers(0, 9, n) << 16
    pred = np.where(rng.random(n) < 0.2, rng.choice(raw, n), gt & 0xFFFF)
    write(tmp_path, gt.tolist(), pred.tolist(), points=n if points else None)
    if points:
        xy = rng.uniform(-40, 40, (n, 4)).astype("<f4")
        xy.tofile(tmp_path / "points" / "s.bin")
    code, stderr, report = both_paths(rpx, tmp_path, points=points)
    assert code == 0, stderr
    assert report["dataset"]["n_points"] == n + 3


def test_an_empty_scan_reads_both_ways(rpx, tmp_path: Path):
    write(tmp_path, b"", b"")
    code, stderr, report = both_paths(rpx, tmp_path)
    assert code == 0, stderr
    assert [row["n_points"] for row in report["rows"]] == [3, 0]


def test_a_missing_prediction_of_label_files_is_all_wrong_both_ways(rpx, tmp_path: Path):
    write(tmp_path, [1, 10, 10, 252], [1, 10, 10, 252])
    (tmp_path / "pred" / "s.label").unlink()
    code, stderr, report = both_paths(rpx, tmp_path, "--missing", "empty")
    assert code == 0, stderr
    row = next(row for row in report["rows"] if row["stem"] == "s")
    assert row["n_points"] == 4 and row["acc"] == 0.0
