"""``--metrics NAME,...``: run only some metric families; skipped ones are absent and named."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import FIXTURES, dirs, without_provenance

NVS = FIXTURES / "nvs" / "render"
DEPTH = FIXTURES / "depth" / "indoor"
SEG = FIXTURES / "segmentation" / "street"


def test_nvs_psnr_only_skips_ssim(rpx) -> None:
    report = rpx(f"eval nvs {dirs(NVS)} --metrics psnr").json
    assert report["params"]["metrics"] == ["psnr"]
    assert report["params"]["skipped_metrics"] == ["ssim", "ssim_global"]
    assert "ssim" not in report["aggregate"] and "ssim_global" not in report["aggregate"]
    assert all(set(row) == {"stem", "pred_path", "gt_path", "psnr"} for row in report["rows"])
    full = rpx(f"eval nvs {dirs(NVS)}").json
    assert report["aggregate"]["psnr"] == full["aggregate"]["psnr"]
    keep_global = rpx(f"eval nvs {dirs(NVS)} "
                      "--metrics psnr,ssim_global").json
    assert keep_global["aggregate"]["ssim_global"] == full["aggregate"]["ssim_global"]


def test_depth_dataset_only_and_bands(rpx) -> None:
    report = rpx(f"eval depth {dirs(DEPTH)} --range 0:2 "
                 "--metrics dataset").json
    assert "absrel" not in report["aggregate"] and "absrel_0m_2m" not in report["aggregate"]
    assert report["dataset"]["absrel_0m_2m"] is not None
    assert "absrel_0m_2m" not in report["rows"][0] and "n_valid_0m_2m" in report["rows"][0]
    rows_only = rpx(f"eval depth {dirs(DEPTH)} "
                    "--metrics rows").json
    assert "dataset" not in rows_only and rows_only["params"]["skipped_metrics"] == ["dataset", "by_depth"]


def test_segmentation_rows_only(rpx) -> None:
    report = rpx(f"eval segmentation {dirs(SEG)} "
                 "--ignore-index 255 --metrics rows").json
    assert "dataset" not in report and report["aggregate"]["miou"] is not None


def test_unknown_family_is_a_usage_error(rpx) -> None:
    run = rpx(f"eval depth {dirs(DEPTH)} --metrics coco")
    assert run.exit_code == 2 and "unknown metric family coco" in run.stderr


def test_metrics_lists_families(rpx) -> None:
    table = json.loads(rpx("metrics --task nvs --json").stdout)
    assert table["families"]["nvs"] == {"psnr": ["psnr"], "ssim": ["ssim"],
                                        "ssim_global": ["ssim_global"]}


def test_shards_with_families_merge_exactly(rpx, tmp_path: Path) -> None:
    parts = []
    for k in (1, 2):
        out = tmp_path / f"p{k}.json"
        rpx(f"eval nvs {dirs(NVS)} --metrics psnr --shard {k}/2 -o {out}")
        parts.append(out)
    merged = rpx(["merge", *parts]).json
    single = rpx(f"eval nvs {dirs(NVS)} --metrics psnr").json
    assert without_provenance(merged) == without_provenance(single)
