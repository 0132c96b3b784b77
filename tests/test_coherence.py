"""``rpx coherence`` (Stack-Level Geometric Coherence): hand-computed cases, an independent
loop-and-scipy reference, invariants (stem order, shards, jobs), input and flag errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXTURES, parse_report, without_provenance, write_npy, write_png
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import ndimage

from rpx_cli.api import evaluate_dirs
from rpx_cli.deploy.coherence import compute_sgc
from rpx_cli.ops.boundaries import boundary_agreement, dilate_diamond, magnitude_above, mask_boundary


def frames(root: Path, pairs: dict[str, tuple[np.ndarray, np.ndarray]]) -> str:
    """Masks as PNG (uint8) or .npy (other dtypes) under mask/, depth as .npy under depth/."""
    for stem, (labels, depth) in pairs.items():
        if labels.dtype == np.uint8:
            write_png(root / "mask" / f"{stem}.png", labels)
        else:
            write_npy(root / "mask" / f"{stem}.npy", labels)
        write_npy(root / "depth" / f"{stem}.npy", depth)
    return f"--mask-dir {root / 'mask'} --depth-dir {root / 'depth'}"


def reference_case() -> tuple[np.ndarray, np.ndarray]:
    """The issue's 8 x 8 case: labels 1 for x >= 4; depth 1 m left, 2 m right."""
    labels = np.zeros((8, 8), np.uint8)
    labels[:, 4:] = 1
    return labels, np.where(labels == 1, 2.0, 1.0)


def step(shape: tuple[int, int], column: int, low: float, high: float) -> np.ndarray:
    """Depth ``low`` left of ``column``, ``high`` from it on."""
    depth = np.full(shape, low)
    depth[:, column:] = high
    return depth


def labels_from(shape: tuple[int, int], column: int) -> np.ndarray:
    labels = np.zeros(shape, np.uint8)
    labels[:, column:] = 1
    return labels


# --- hand-computed ------------------------------------------------------------------------


def test_reference_case_through_the_cli(rpx, tmp_path: Path) -> None:
    # B_m = column 3 (8 px); B_d = columns 3-4 (|g| = (2 - 1) / 2 = 0.5 > 0.1; 16 px);
    # dilated by 2: mask band columns 1-5 (40 px), depth band columns 1-6 (48 px), overlap 40
    run = rpx(f"coherence {frames(tmp_path, {'a': reference_case()})}")
    assert run.exit_code == 0, run.stderr
    report = run.json
    assert report["schema"] == "rpx.coherence" and report["task"] == "coherence"
    assert report["precision"] == 1.0
    assert report["recall"] == 40 / 48 == 5 / 6
    assert report["sgc"] == pytest.approx(2 * 1 * (5 / 6) / (1 + 5 / 6), rel=1e-15)
    assert report["sgc"] == pytest.approx(10 / 11, rel=1e-15)
    row = report["rows"][0]
    assert (row["n_mask_boundary"], row["n_depth_boundary"]) == (8, 16)
    assert (row["n_mask_band"], row["n_depth_band"], row["n_overlap"]) == (40, 48, 40)
    assert row["mask_path"].endswith("a.png") and row["depth_path"].endswith("a.npy")
    assert report["params"] == {"tau": 0.1, "dilation": 2, "depth_scale": 1000.0,
                                "missing": "error", "on_error": "fail"}
    assert report["metric_info"]["sgc"]["direction"] == "higher"
    assert report["metric_info"]["precision"]["direction"] == "higher"
    assert report["metric_info"]["recall"]["direction"] == "higher"


def test_reference_case_in_memory() -> None:
    labels, depth = reference_case()
    frame = boundary_agreement(labels, depth, tau=0.1, dilation=2)
    assert (frame.precision, frame.recall) == (1.0, 5 / 6)
    result = compute_sgc([labels], [depth])
    assert result.num_samples == 1 and result.precision == 1.0 and result.recall == 5 / 6
    assert result.sgc_score == pytest.approx(10 / 11, rel=1e-15)


def test_mask_boundary_is_the_near_side_of_right_and_lower_edges() -> None:
    labels = np.array([[0, 0, 1],
                       [0, 0, 1],
                       [2, 2, 1]])
    expected = np.array([[False, True, False],
                         [True, True, False],
                         [False, True, False]])
    np.testing.assert_array_equal(mask_boundary(labels), expected)


def test_no_mask_boundary_and_flat_depth_score_one(rpx, tmp_path: Path) -> None:
    pairs = {"flat": (np.zeros((6, 7), np.uint8), np.full((6, 7), 1.5))}
    report = rpx(f"coherence {frames(tmp_path, pairs)}").json
    row = report["rows"][0]
    assert (row["n_mask_band"], row["n_depth_band"], row["n_overlap"]) == (0, 0, 0)
    assert (row["precision"], row["recall"]) == (1.0, 1.0)  # 0/0 on both sides
    assert (report["precision"], report["recall"], report["sgc"]) == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(("dilation", "precision", "recall"), [
    (0, 0.0, 0.0),  # columns 7 vs 5-6: no pixel in common
    (1, 2 / 3, 2 / 4),  # mask band 6-8, depth band 4-7: overlap 6-7
    (2, 4 / 5, 4 / 6),  # mask band 5-9, depth band 3-8: overlap 5-8
])
def test_dilation_on_a_one_pixel_offset(rpx, tmp_path: Path, dilation: int, precision: float,
                                        recall: float) -> None:
    shape = (5, 14)
    depth = step(shape, 6, 1.0, 2.0)  # B_d: columns 5 and 6
    labels = labels_from(shape, 8)  # B_m: column 7, one pixel right of the depth edge
    report = rpx(f"coherence {frames(tmp_path, {'a': (labels, depth)})} --dilation {dilation}").json
    row = report["rows"][0]
    assert (row["precision"], row["recall"]) == (precision, recall)
    assert report["sgc"] == (0.0 if dilation == 0 else
                             2 * precision * recall / (precision + recall))


def test_dilation_is_a_diamond() -> None:
    point = np.zeros((7, 7), bool)
    point[3, 3] = True
    yy, xx = np.mgrid[0:7, 0:7]
    for radius in range(4):
        diamond = np.abs(yy - 3) + np.abs(xx - 3) <= radius
        np.testing.assert_array_equal(dilate_diamond(point, radius), diamond)
    assert int(dilate_diamond(point, 2).sum()) == 13


@pytest.mark.parametrize(("tau", "boundary"), [(0.25, False), (0.2499999, True), (0.5, False)])
def test_tau_is_strict(rpx, tmp_path: Path, tau: float, boundary: bool) -> None:
    # a 0.5 m step gives central differences of exactly 0.25 on both sides of it
    depth = step((4, 10), 5, 1.0, 1.5)
    labels = labels_from((4, 10), 5)
    report = rpx(f"coherence {frames(tmp_path, {'a': (labels, depth)})} --tau {tau}").json
    assert report["rows"][0]["n_depth_boundary"] == (8 if boundary else 0)
    assert report["params"]["tau"] == tau


def test_depth_borders_use_one_sided_differences() -> None:
    # a step between the first two columns: numpy.gradient gives 1.0 at x=0 (one-sided)
    # and 0.5 at x=1 (central); with tau 0.6 only the border pixel is a boundary
    labels = np.zeros((3, 5), np.uint8)
    depth = step((3, 5), 1, 1.0, 2.0)
    frame = boundary_agreement(labels, depth, tau=0.6, dilation=0)
    assert frame.n_depth_boundary == 3


def test_pixels_without_depth_are_excluded(rpx, tmp_path: Path) -> None:
    # a flat surface with a hole (depth 0) and a label edge inside the hole: no depth edge
    # at the hole's rim (its differences would read the hole), the label edge is not counted
    depth = np.full((8, 10), 2.0)
    depth[2:5, 3:7] = 0.0
    labels = np.zeros((8, 10), np.uint8)
    labels[3:4, 5:6] = 1  # its boundary pixels all lie in the hole
    report = rpx(f"coherence {frames(tmp_path, {'a': (labels, depth)})}").json
    row = report["rows"][0]
    assert row["n_no_depth"] == 12
    assert (row["n_mask_boundary"], row["n_depth_boundary"]) == (0, 0)
    assert (row["precision"], row["recall"]) == (1.0, 1.0)
    assert report["totals"]["n_no_depth"] == 12


def test_integer_depth_is_divided_by_depth_scale(rpx, tmp_path: Path) -> None:
    labels, depth = reference_case()
    write_png(tmp_path / "mask" / "a.png", labels)
    write_png(tmp_path / "depth" / "a.png", (depth * 1000).astype(np.uint16))  # millimetres
    dirs = f"--mask-dir {tmp_path / 'mask'} --depth-dir {tmp_path / 'depth'}"
    report = rpx(f"coherence {dirs}").json
    assert (report["precision"], report["recall"]) == (1.0, 5 / 6)
    # at --depth-scale 100000 the 1000-unit step is 0.01 m: gradient 0.005, below tau
    assert rpx(f"coherence {dirs} --depth-scale 100000").json["rows"][0]["n_depth_boundary"] == 0


# --- against an independent implementation ------------------------------------------------


def reference_frame(labels: np.ndarray, depth: np.ndarray, tau: float,
                    dilation: int) -> tuple[float, float, int, int]:
    """Loops for boundaries and stencils, scipy.ndimage for the dilation."""
    height, width = labels.shape
    valid = depth > 0
    gy, gx = np.gradient(depth)
    b_mask = np.zeros(labels.shape, bool)
    b_depth = np.zeros(labels.shape, bool)
    for y in range(height):
        for x in range(width):
            if not valid[y, x]:
                continue
            right = x + 1 < width and labels[y, x] != labels[y, x + 1]
            down = y + 1 < height and labels[y, x] != labels[y + 1, x]
            b_mask[y, x] = right or down
            xs = [x - 1, x + 1] if 0 < x < width - 1 else ([0, 1] if x == 0 else [x - 1, x])
            ys = [y - 1, y + 1] if 0 < y < height - 1 else ([0, 1] if y == 0 else [y - 1, y])
            stencil = [(y, xi) for xi in xs] + [(yi, x) for yi in ys]
            if all(valid[p] for p in stencil):
                b_depth[y, x] = math.sqrt(gx[y, x] ** 2 + gy[y, x] ** 2) > tau
    cross = ndimage.generate_binary_structure(2, 1)

    def grow(b: np.ndarray) -> np.ndarray:
        return ndimage.binary_dilation(b, cross, iterations=dilation) if dilation else b

    band_mask, band_depth = grow(b_mask) & valid, grow(b_depth) & valid
    overlap = int((band_mask & band_depth).sum())
    precision = overlap / band_mask.sum() if band_mask.sum() else 1.0
    recall = overlap / band_depth.sum() if band_depth.sum() else 1.0
    return precision, recall, int(b_mask.sum()), int(b_depth.sum())


def random_frame(rng: np.random.Generator, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Blocky labels and a piecewise-smooth depth with occasional holes."""
    labels = rng.integers(0, 3, size=(shape[0] // 3 + 1, shape[1] // 3 + 1))
    labels = np.kron(labels, np.ones((3, 3), int))[: shape[0], : shape[1]]
    depth = 1.0 + 0.4 * labels + rng.normal(0, 0.05, size=shape)
    depth[rng.random(shape) < 0.05] = 0.0
    return labels.astype(np.int32), depth


@pytest.mark.parametrize("seed", range(6))
def test_frames_match_the_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(2, 12)), int(rng.integers(2, 14)))
    labels, depth = random_frame(rng, shape)
    for tau, dilation in ((0.1, 2), (0.05, 0), (0.2, 1), (0.1, 3)):
        frame = boundary_agreement(labels, depth, tau=tau, dilation=dilation)
        assert (frame.precision, frame.recall, frame.n_mask_boundary, frame.n_depth_boundary) == \
            reference_frame(labels, depth, tau, dilation)


def test_report_matches_the_reference(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    pairs = {f"f{i}": random_frame(rng, (9, 13)) for i in range(4)}
    report = rpx(f"coherence {frames(tmp_path, pairs)} --tau 0.15 --dilation 1").json
    expected = [reference_frame(labels, depth, 0.15, 1) for labels, depth in pairs.values()]
    assert [(r["precision"], r["recall"]) for r in report["rows"]] == [e[:2] for e in expected]
    precision = float(np.mean([e[0] for e in expected]))
    recall = float(np.mean([e[1] for e in expected]))
    assert report["precision"] == pytest.approx(precision, rel=1e-12)
    assert report["recall"] == pytest.approx(recall, rel=1e-12)
    assert report["sgc"] == pytest.approx(2 * precision * recall / (precision + recall), rel=1e-12)
    memory = compute_sgc([p[0] for p in pairs.values()], [p[1] for p in pairs.values()],
                         depth_gradient_threshold=0.15, boundary_dilation=1)
    assert (memory.sgc_score, memory.precision, memory.recall) == \
        (report["sgc"], report["precision"], report["recall"])
    api = evaluate_dirs("coherence", tmp_path / "mask", tmp_path / "depth", tau=0.15,
                        dilation=1, jobs=1)
    assert api["sgc"] == report["sgc"]


# --- invariants ---------------------------------------------------------------------------


def test_stem_order_does_not_matter(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    data = [random_frame(rng, (8, 9)) for _ in range(5)]
    one = rpx(f"coherence {frames(tmp_path / 'one', dict(zip('abcde', data, strict=True)))}").json
    two = rpx(f"coherence {frames(tmp_path / 'two', dict(zip('edcba', data, strict=True)))}").json
    assert (one["sgc"], one["precision"], one["recall"]) == (two["sgc"], two["precision"],
                                                             two["recall"])
    assert one["totals"] == two["totals"]


def test_shards_merge_into_the_whole_run_and_jobs_change_nothing(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    dirs = frames(tmp_path, {f"s{i:02d}": random_frame(rng, (7, 8)) for i in range(5)})
    whole = rpx(f"coherence {dirs}").json
    parts = []
    for k in range(1, 5):  # 5 stems in 4 shards: shard sizes vary, some may be empty
        out = tmp_path / f"part{k}.json"
        run = rpx(f"coherence {dirs} --shard {k}/4 -o {out}")
        assert run.exit_code == 0, run.stderr
        part = parse_report(out.read_bytes())
        assert part["state"]["shard"] == {"index": k, "count": 4}
        parts.append(str(out))
    merged = rpx(["merge", *parts])
    assert merged.exit_code == 0, merged.stderr
    assert without_provenance(merged.json) == without_provenance(whole)
    two_jobs = rpx(f"coherence {dirs} --jobs 2").json
    assert without_provenance(two_jobs) == without_provenance(whole)


def test_an_empty_shard_is_a_valid_report_with_nulls(rpx, tmp_path: Path) -> None:
    dirs = frames(tmp_path, {"only": reference_case()})
    reports = [rpx(f"coherence {dirs} --shard {k}/3").json for k in (1, 2, 3)]
    empty = [r for r in reports if r["n_pairs"] == 0]
    assert len(empty) == 2
    assert all((r["sgc"], r["precision"], r["recall"]) == (None, None, None) for r in empty)


# --- inputs, flags, workflow --------------------------------------------------------------


def assert_failed_naming(run, *paths: Path) -> None:
    assert run.exit_code == 1
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 2  # the file, then the summary
    for path in paths:
        assert str(path) in lines[0]


def test_non_finite_depth_is_an_input_error(rpx, tmp_path: Path) -> None:
    labels, depth = reference_case()
    depth[2, 2] = np.nan
    dirs = frames(tmp_path, {"a": (labels, depth)})
    out = tmp_path / "report.json"
    run = rpx(f"coherence {dirs} -o {out}")
    assert_failed_naming(run, tmp_path / "depth" / "a.npy")
    assert "non-finite" in run.stderr
    assert not out.exists()


def test_shape_mismatch_names_both_files(rpx, tmp_path: Path) -> None:
    labels, depth = reference_case()
    dirs = frames(tmp_path, {"a": (labels, depth[:, :6])})
    run = rpx(f"coherence {dirs}")
    assert_failed_naming(run, tmp_path / "mask" / "a.png", tmp_path / "depth" / "a.npy")
    assert "8x8" in run.stderr and "6x8" in run.stderr


def test_a_float_mask_and_an_8_bit_depth_image_are_refused(rpx, tmp_path: Path) -> None:
    labels, depth = reference_case()
    write_npy(tmp_path / "mask" / "a.npy", labels.astype(np.float32))
    write_npy(tmp_path / "depth" / "a.npy", depth)
    write_png(tmp_path / "mask" / "b.png", labels)
    write_png(tmp_path / "depth" / "b.png", depth.astype(np.uint8))
    run = rpx(f"coherence --mask-dir {tmp_path / 'mask'} --depth-dir {tmp_path / 'depth'}")
    assert run.exit_code == 1 and run.stdout == "" and "Traceback" not in run.stderr
    assert "a.npy" in run.stderr and "dtype float32" in run.stderr
    assert "b.png" in run.stderr and "8-bit depth" in run.stderr


def test_on_error_skip_records_the_bad_pair(rpx, tmp_path: Path) -> None:
    labels, depth = reference_case()
    bad = depth.copy()
    bad[0, 0] = np.inf
    report = rpx(f"coherence {frames(tmp_path, {'a': (labels, depth), 'b': (labels, bad)})} "
                 "--on-error skip").json
    assert report["n_pairs"] == 1 and [e["stem"] for e in report["errors"]] == ["b"]
    assert report["recall"] == 5 / 6


@pytest.mark.parametrize("flag", ["--tau 0", "--tau -0.1", "--tau nan", "--dilation -1",
                                  "--dilation 1.5", "--depth-scale 0", "--pred-dir x"])
def test_bad_flags_are_usage_errors(rpx, tmp_path: Path, flag: str) -> None:
    run = rpx(f"coherence {frames(tmp_path, {'a': reference_case()})} {flag}")
    assert run.exit_code == 2, run.stderr
    assert run.stdout == ""


def test_directories_are_required(rpx, tmp_path: Path) -> None:
    assert rpx(f"coherence --mask-dir {tmp_path}").exit_code == 2


def test_missing_policies(rpx, tmp_path: Path) -> None:
    labels, depth = reference_case()
    dirs = frames(tmp_path, {"a": (labels, depth)})
    write_npy(tmp_path / "depth" / "b.npy", depth)  # no mask for b
    run = rpx(f"coherence {dirs}")
    assert run.exit_code == 1 and "b.npy" in run.stderr
    skip = rpx(f"coherence {dirs} --missing skip").json
    assert skip["n_pairs"] == 1 and skip["unpaired"] == {"pred_only": [], "gt_only": ["b"]}
    empty = rpx(f"coherence {dirs} --missing empty").json
    row = empty["rows"][1]  # a missing mask has no boundary: nothing claimed, nothing found
    assert (row["stem"], row["mask_path"], row["precision"], row["recall"]) == ("b", None, 1.0, 0.0)


def test_gates_rows_schema_validate_and_show(rpx, tmp_path: Path) -> None:
    dirs = frames(tmp_path, {"a": reference_case()})
    assert rpx(f"coherence {dirs} --require 'sgc>=0.9'").exit_code == 0
    gated = rpx(f"coherence {dirs} --require 'sgc>=0.95' --require 'recall>0.8'")
    assert gated.exit_code == 3
    assert [g["passed"] for g in gated.json["gates"]] == [False, True]
    assert "rows" not in rpx(f"coherence {dirs} --no-rows").json
    out = tmp_path / "report.json"
    assert rpx(f"coherence {dirs} -o {out}").exit_code == 0
    assert rpx(f"validate {out}").exit_code == 0
    schema = json.loads(rpx("schema coherence").stdout)
    assert schema["properties"]["schema"] == {"const": "rpx.coherence"}
    shown = rpx(f"show {out} --format markdown").stdout
    assert shown.splitlines()[4].startswith("| `sgc` | 0.909091")


def test_not_an_eval_task_and_config_defaults(rpx, tmp_path: Path) -> None:
    assert "coherence" not in rpx("eval --help").stdout
    assert rpx("eval coherence --help").exit_code == 2
    dirs = frames(tmp_path, {"a": reference_case()})
    config = tmp_path / "rpx.toml"
    config.write_text("[coherence]\ntau = 0.6\ndilation = 0\n")
    report = rpx(f"coherence {dirs} --config {config}").json
    assert (report["params"]["tau"], report["params"]["dilation"]) == (0.6, 0)
    assert report["rows"][0]["n_depth_boundary"] == 0  # 0.5 is not above 0.6


def test_provenance_names_the_mask_and_depth_folders(rpx) -> None:
    shelf = FIXTURES / "coherence" / "shelf"
    report = rpx(["coherence", "--mask-dir", shelf / "mask", "--depth-dir", shelf / "depth"]).json
    inputs = report["run_provenance"]["inputs"]
    assert set(inputs) == {"mask_dir", "depth_dir"}
    assert inputs["mask_dir"]["path"].endswith("mask") and inputs["depth_dir"]["n_files"] == 3


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1e-200, 1e-9, 0.05, 1.0, 3.0, 1e149, 1e200, 0.0]))
def test_magnitude_above_is_hypot_exactly(seed, tau):
    """``magnitude_above`` (squares, hypot only near tau) decides every pixel as
    ``np.hypot(gx, gy) > tau``: values one ulp either side of tau on an axis and on the
    diagonal, NaN, infinities, huge and tiny gradients."""
    rng = np.random.default_rng(seed)
    edge = [tau, np.nextafter(tau, 0), np.nextafter(tau, np.inf), tau / np.sqrt(2),
            np.nextafter(tau / np.sqrt(2), np.inf), 0.0, np.nan, np.inf, -np.inf, 1e300, 1e-300]
    gx = np.concatenate([rng.choice(edge, 400), rng.normal(0, tau or 1.0, 400)])
    with np.errstate(invalid="ignore"):  # inf x 0: a NaN on purpose
        gy = np.concatenate([rng.choice(edge, 400) * rng.choice([1, -1, 0], 400),
                             rng.normal(0, tau or 1.0, 400)])
    assert np.array_equal(magnitude_above(gx, gy, tau), np.hypot(gx, gy) > tau)
