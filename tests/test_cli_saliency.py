"""``rpx saliency-mb`` through the CLI: the original's cases, exit codes, errors, output."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXTURES, dirs, parse_report, without_provenance, write_npy, write_pgm, write_png

ORIGINAL = FIXTURES / "saliency-mb" / "original-xyz"
FORMATS = FIXTURES / "saliency-mb" / "formats"


def two_masks(root: Path, pred: np.ndarray, gt: np.ndarray, stem: str = "a") -> Path:
    write_npy(root / "pred" / f"{stem}.npy", pred)
    write_npy(root / "gt" / f"{stem}.npy", gt)
    return root


# --- the original tool's cases ------------------------------------------------------------


def test_evaluate_pair_original_case(rpx, tmp_path: Path) -> None:
    pred = np.zeros((4, 4), np.float32)
    gt = np.zeros((4, 4), np.float32)
    pred[:2, :2] = pred[:2, 2:] = 1.0
    gt[:2, :2] = 1.0
    run = rpx(f"saliency-mb {dirs(two_masks(tmp_path, pred, gt))} --block-size 2")
    assert run.exit_code == 0, run.stderr
    row = run.json["rows"][0]
    assert (row["pred_blocks"], row["gt_blocks"]) == (2, 1)
    assert (row["intersection_blocks"], row["union_blocks"], row["iou"]) == (1, 2, 0.5)


def test_three_pairs_macro_and_micro(rpx) -> None:
    report = rpx(f"saliency-mb {dirs(ORIGINAL)} --block-size 2").json
    assert report["n_pairs"] == 3
    assert report["macro_iou"] == pytest.approx((1 + 1 / 3 + 1) / 3, abs=0, rel=1e-15)
    assert report["macro_iou"] == 7 / 9  # correctly rounded mean
    assert report["micro_iou"] == (1 + 1 + 0) / (1 + 3 + 0)
    assert [r["iou"] for r in report["rows"]] == [1.0, 1 / 3, 1.0]


def test_evaluate_dirs_pairs_by_stem_and_ignores_unpaired(rpx, tmp_path: Path) -> None:
    two_masks(tmp_path, np.ones((4, 4), np.float32), np.ones((4, 4), np.float32))
    write_npy(tmp_path / "pred" / "ignored.npy", np.zeros((4, 4), np.float32))
    run = rpx(f"saliency-mb {dirs(tmp_path)} --block-size 2")
    assert run.exit_code == 0
    report = run.json
    assert report["n_pairs"] == 1 and report["macro_iou"] == 1.0 and report["micro_iou"] == 1.0
    assert report["rows"][0]["stem"] == "a"
    assert report["unpaired"] == {"pred_only": ["ignored"], "gt_only": []}


def test_original_top_level_and_row_keys(rpx) -> None:
    report = rpx(f"saliency-mb {dirs(ORIGINAL)} --block-size 2").json
    for key in ["schema_version", "block_size", "threshold", "n_pairs", "macro_iou", "micro_iou",
                "rows", "run_provenance"]:
        assert key in report
    assert report["schema_version"] == 1 and report["block_size"] == 2 and report["threshold"] == 0.5
    assert set(report["rows"][0]) == {"stem", "pred_path", "gt_path", "width", "height",
                                      "block_size", "pred_blocks", "gt_blocks",
                                      "intersection_blocks", "union_blocks", "iou"}


def test_out_json_alias_and_defaults(rpx, tmp_path: Path) -> None:
    out = tmp_path / "nested" / "per_mb_iou.json"
    run = rpx(f"saliency-mb {dirs(FORMATS)} --out-json {out}")
    assert run.exit_code == 0 and run.stdout == ""
    report = parse_report(out.read_bytes())
    assert report["block_size"] == 16 and report["threshold"] == 0.5
    assert report["params"]["missing"] == "skip"  # the original tool's behaviour


# --- formats ------------------------------------------------------------------------------


def test_all_formats_nested(rpx) -> None:
    report = rpx(f"saliency-mb {dirs(FORMATS)} --block-size 16").json
    stems = [row["stem"] for row in report["rows"]]
    assert stems == sorted(stems) == ["clip01/000120", "clip01/000121", "clip02/000001",
                                      "clip02/000002", "clip02/000003", "frame"]
    assert report["unpaired"] == {"pred_only": ["only_pred"], "gt_only": ["only_gt"]}


def test_png_binary_mask_warns_and_mask_scale_fixes(rpx, tmp_path: Path) -> None:
    mask = np.zeros((8, 8), np.uint8)
    mask[:4, :4] = 1
    write_png(tmp_path / "pred" / "a.png", mask)
    write_png(tmp_path / "gt" / "a.png", mask)
    run = rpx(f"saliency-mb {dirs(tmp_path)} --block-size 4")
    assert run.exit_code == 0
    assert "--mask-scale 1" in run.stderr and "a.png" in run.stderr
    assert run.json["rows"][0]["gt_blocks"] == 0  # 1/255 never reaches 0.5
    fixed = rpx(f"saliency-mb {dirs(tmp_path)} --block-size 4 --mask-scale 1")
    assert "--mask-scale" not in fixed.stderr
    assert fixed.json["rows"][0]["gt_blocks"] == 1
    assert fixed.json["params"]["mask_scale"] == 1.0


def test_pgm_16_bit_and_png_16_bit_agree(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    values = rng.integers(0, 65536, size=(32, 48), dtype=np.uint16)
    write_pgm(tmp_path / "pred" / "a.pgm", values)
    write_png(tmp_path / "gt" / "a.png", values)
    row = rpx(f"saliency-mb {dirs(tmp_path)} --block-size 8").json["rows"][0]
    assert row["iou"] == 1.0 and row["pred_blocks"] == row["gt_blocks"]


# --- usage errors: exit 2 -----------------------------------------------------------------


@pytest.mark.parametrize("flags", ["--block-size 0", "--block-size -3", "--threshold 1.5",
                                   "--threshold -0.1", "--threshold nan", "--mask-scale 0",
                                   "--jobs 0", "--missing maybe", "--on-error ignore"])
def test_invalid_flag_values_are_usage_errors(rpx, flags: str) -> None:
    run = rpx(f"saliency-mb {dirs(ORIGINAL)} {flags}")
    assert run.exit_code == 2
    assert run.stdout == ""
    assert "Traceback" not in run.stderr


def test_missing_required_flag_is_usage_error(rpx) -> None:
    run = rpx("saliency-mb --pred-dir x")
    assert run.exit_code == 2 and "--gt-dir" in run.stderr


# --- data errors: exit 1, one line naming the file, no report --------------------------


@pytest.mark.parametrize(
    ("pred", "gt", "expected"),
    [
        (np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32), "smaller than one 16x16 block"),
        (np.zeros((32, 32), np.float32), np.zeros((32, 48), np.float32), "mask shapes differ"),
        (np.zeros((32, 32, 3), np.float32), np.zeros((32, 32, 3), np.float32), "2-D"),
        (np.full((32, 32), np.nan, np.float32), np.zeros((32, 32), np.float32), "non-finite"),
    ],
)
def test_bad_pairs_exit_1_naming_the_file(rpx, tmp_path: Path, pred, gt, expected: str) -> None:
    two_masks(tmp_path, pred, gt)
    out = tmp_path / "report.json"
    run = rpx(f"saliency-mb {dirs(tmp_path)} -o {out}")
    assert run.exit_code == 1
    assert run.stdout == ""
    assert expected in run.stderr
    assert str(tmp_path / "pred" / "a.npy") in run.stderr or str(tmp_path / "gt" / "a.npy") in run.stderr
    assert "Traceback" not in run.stderr
    assert not out.exists()


def test_shape_mismatch_names_both_files_and_shapes(rpx, tmp_path: Path) -> None:
    two_masks(tmp_path, np.zeros((32, 32), np.float32), np.zeros((32, 48), np.float32))
    run = rpx(f"saliency-mb {dirs(tmp_path)}")
    line = next(ln for ln in run.stderr.splitlines() if "shapes differ" in ln)
    assert "pred/a.npy is 32x32" in line and "gt/a.npy is 48x32" in line


def test_no_pairs_at_all_exits_1(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "pred" / "a.npy", np.zeros((16, 16)))
    write_npy(tmp_path / "gt" / "b.npy", np.zeros((16, 16)))
    run = rpx(f"saliency-mb {dirs(tmp_path)}")
    assert run.exit_code == 1 and "no pairs to evaluate" in run.stderr and run.stdout == ""


def test_missing_directory_exits_1(rpx, tmp_path: Path) -> None:
    run = rpx(f"saliency-mb --pred-dir {tmp_path / 'nope'} --gt-dir {tmp_path}")
    assert run.exit_code == 1 and "does not exist" in run.stderr and "nope" in run.stderr


def test_duplicate_stem_exits_1_naming_both(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "pred" / "s.npy", np.zeros((16, 16)))
    write_pgm(tmp_path / "pred" / "s.pgm", np.zeros((16, 16), np.uint8))
    write_npy(tmp_path / "gt" / "s.npy", np.zeros((16, 16)))
    run = rpx(f"saliency-mb {dirs(tmp_path)}")
    assert run.exit_code == 1
    assert "s.npy" in run.stderr and "s.pgm" in run.stderr


def test_on_error_fail_lists_every_bad_pair_then_a_summary(rpx, tmp_path: Path) -> None:
    good = np.zeros((16, 16), np.float32)
    for stem in ["a", "b", "c"]:
        two_masks(tmp_path, good, good, stem)
    (tmp_path / "pred" / "a.npy").write_bytes(b"garbage")
    write_npy(tmp_path / "gt" / "c.npy", np.zeros((32, 16), np.float32))
    out = tmp_path / "r.json"
    out.write_text("previous report\n")
    run = rpx(f"saliency-mb {dirs(tmp_path)} -o {out}")
    assert run.exit_code == 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 3
    assert "pred/a.npy" in lines[0] and "not a valid .npy" in lines[0]
    assert "c.npy" in lines[1] and "shapes differ" in lines[1]
    assert "2 of 3 pairs could not be evaluated" in lines[2]
    assert out.read_text() == "previous report\n"  # untouched: nothing partial, nothing lost


def test_on_error_skip_records_errors_and_goes_on(rpx, tmp_path: Path) -> None:
    good = np.ones((16, 16), np.float32)
    for stem in ["a", "b"]:
        two_masks(tmp_path, good, good, stem)
    (tmp_path / "gt" / "a.npy").write_bytes(b"\x93NUMPY broken")
    run = rpx(f"saliency-mb {dirs(tmp_path)} --on-error skip")
    assert run.exit_code == 0
    report = run.json
    assert report["n_pairs"] == 1 and [r["stem"] for r in report["rows"]] == ["b"]
    assert report["errors"][0]["stem"] == "a"
    assert report["errors"][0]["path"].endswith("gt/a.npy")
    assert "skipped" in run.stderr
    # the skipped pair's files are not among the evaluated inputs
    assert report["run_provenance"]["inputs"]["gt_dir"]["n_files"] == 1


def test_on_error_skip_with_nothing_left_exits_1(rpx, tmp_path: Path) -> None:
    two_masks(tmp_path, np.zeros((4, 4)), np.zeros((4, 4)))
    run = rpx(f"saliency-mb {dirs(tmp_path)} --on-error skip")
    assert run.exit_code == 1 and run.stdout == ""
    assert "none of the 1 pairs could be evaluated" in run.stderr


# --- missing policies ---------------------------------------------------------------------


def test_missing_error_lists_unpaired_files(rpx, tmp_path: Path) -> None:
    two_masks(tmp_path, np.ones((16, 16)), np.ones((16, 16)))
    write_npy(tmp_path / "gt" / "lost.npy", np.ones((16, 16)))
    run = rpx(f"saliency-mb {dirs(tmp_path)} --missing error")
    assert run.exit_code == 1
    assert str(tmp_path / "gt" / "lost.npy") in run.stderr
    assert "not in both directories" in run.stderr


def test_missing_empty_scores_a_missing_prediction_as_empty(rpx, tmp_path: Path) -> None:
    two_masks(tmp_path, np.ones((16, 16)), np.ones((16, 16)))
    write_npy(tmp_path / "gt" / "lost.npy", np.ones((16, 16)))
    skip = rpx(f"saliency-mb {dirs(tmp_path)}").json
    assert skip["n_pairs"] == 1 and skip["micro_iou"] == 1.0
    assert skip["unpaired"]["gt_only"] == ["lost"]
    empty = rpx(f"saliency-mb {dirs(tmp_path)} --missing empty").json
    assert empty["n_pairs"] == 2 and empty["macro_iou"] == 0.5 and empty["micro_iou"] == 0.5
    lost = empty["rows"][1]
    assert lost["stem"] == "lost" and lost["pred_path"] is None and lost["pred_blocks"] == 0
    assert empty["unpaired"]["gt_only"] == ["lost"]  # still listed


# --- report format and output -----------------------------------------------------------


def test_report_is_sorted_indented_with_trailing_newline(rpx) -> None:
    run = rpx(f"saliency-mb {dirs(ORIGINAL)} --block-size 2")
    text = run.stdout
    assert text.endswith("}\n") and text.startswith('{\n  "block_size": 2,')
    parsed = json.loads(text)
    assert list(parsed) == sorted(parsed)
    compact = rpx(f"saliency-mb {dirs(ORIGINAL)} --block-size 2 --compact").stdout
    assert compact.count("\n") == 1 and compact.endswith("}\n")


def test_no_rows(rpx) -> None:
    report = rpx(f"saliency-mb {dirs(ORIGINAL)} --block-size 2 --no-rows").json
    assert "rows" not in report and report["n_pairs"] == 3 and report["macro_iou"] == 7 / 9


def test_stdout_is_only_the_report(rpx) -> None:
    run = rpx(f"saliency-mb {dirs(FORMATS)} --block-size 16 --progress")
    json.loads(run.stdout)  # progress and the summary went to stderr
    assert "saliency-mb: 6 pairs" in run.stderr
    quiet = rpx(f"saliency-mb {dirs(FORMATS)} --block-size 16 --quiet")
    assert quiet.stderr == ""


def test_jobs_never_change_the_report(rpx) -> None:
    reports = []
    for jobs in (1, 2, 3):
        report = rpx(f"saliency-mb {dirs(FORMATS)} --block-size 16 --jobs {jobs}").json
        assert report["run_provenance"]["args"]["jobs"] == jobs
        reports.append(without_provenance(report))
    assert reports[0] == reports[1] == reports[2]
    assert "jobs" not in reports[0]["params"]


def test_source_date_epoch_makes_runs_byte_identical(rpx, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    first = rpx(f"saliency-mb {dirs(FORMATS)} --block-size 16 --jobs 1").stdout_bytes
    second = rpx(f"saliency-mb {dirs(FORMATS)} --block-size 16 --jobs 1").stdout_bytes
    assert first == second
    provenance = json.loads(first)["run_provenance"]
    assert provenance["started_at"] == provenance["finished_at"] == "2023-11-14T22:13:20.000Z"
    assert provenance["duration_s"] == 0


def test_bad_source_date_epoch_is_a_usage_error(rpx, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    run = rpx(f"saliency-mb {dirs(ORIGINAL)} --block-size 2")
    assert run.exit_code == 2 and "SOURCE_DATE_EPOCH" in run.stderr


def test_provenance_records_the_run(rpx, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    rpx(f"saliency-mb {dirs(FORMATS)} --block-size 16 -o {out}")
    provenance = json.loads(out.read_text())["run_provenance"]
    assert provenance["schema"] == "rpx-run-provenance-v1"
    assert provenance["command"] == "rpx saliency-mb"
    assert provenance["argv"][:2] == ["rpx", "saliency-mb"]
    assert provenance["args"]["block_size"] == 16 and list(provenance["args"]) == sorted(provenance["args"])
    assert provenance["outputs"] == {"report": {"path": str(out)}}
    gt = provenance["inputs"]["gt_dir"]
    assert gt["kind"] == "directory" and gt["exists"] and gt["n_files"] == 6  # only_gt not evaluated
    listing = "".join(
        f"{hashlib.sha256((FORMATS / 'gt' / rel).read_bytes()).hexdigest()}  {rel}\n"
        for rel in sorted(["clip01/000120.pgm", "clip01/000121.png", "clip02/000001.pgm",
                           "clip02/000002.png", "clip02/000003.pgm", "frame.npy"])
    )
    assert gt["sha256"] == hashlib.sha256(listing.encode()).hexdigest()
    assert provenance["environment"]["numpy"] == np.__version__


def test_report_write_is_atomic(rpx, tmp_path: Path, monkeypatch) -> None:
    import rpx_cli.io.atomic_files as atomic_files

    out = tmp_path / "r.json"
    out.write_text("old\n")

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_files.os, "fsync", broken_fsync)
    run = rpx(f"saliency-mb {dirs(ORIGINAL)} --block-size 2 -o {out}")
    assert run.exit_code == 1
    assert out.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["r.json"]  # no temporary file left behind


def test_writes_to_dev_null(rpx) -> None:
    assert rpx(f"saliency-mb {dirs(ORIGINAL)} --block-size 2 -o /dev/null").exit_code == 0
