"""Issue 39, the open findings: each through the real CLI in a child process under a memory
limit and a timeout (``test_hostile``'s harness). What ended in an internal error, a
traceback, a silent wrong result or a decode of hundreds of MB is an input error (exit 1)
or a usage error (exit 2) naming the file, in one line, with no report left behind; and a
broken prediction is scored as an empty one under ``--on-error skip``."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest
from panoptic_data import flags, half_iou_pair, write_set
from test_hostile import assert_refused, run_child

pytestmark = pytest.mark.slow


# --- 6. panoptic ---------------------------------------------------------------------------------


def _panoptic(tmp_path: Path) -> dict[str, Path]:
    return write_set(tmp_path, [("half", *half_iou_pair()), ("ok", *half_iou_pair())],
                     image_ids=[42, 43])


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data["annotations"][0])
    path.write_text(json.dumps(data))


def rgb_png_bytes(width: int, height: int) -> bytes:
    """An 8-bit RGB PNG of zeros (all VOID), any size: 16384x10000 is ~0.5 MB."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    compressor = zlib.compressobj(9)
    row = bytes(3 * width + 1)
    data = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", data) + chunk(b"IEND", b""))


def _run_panoptic(paths: dict[str, Path], tmp_path: Path, *extra: str):
    return run_child(["eval", "panoptic", *flags(paths), "-o", str(tmp_path / "r.json"), *extra],
                     tmp_path)


def _skipped(paths: dict[str, Path], tmp_path: Path, dropped: bool) -> None:
    """Under --on-error skip: the image is one error, the other scored; a broken prediction
    is scored as an empty one (its GT missed), a broken GT drops the image."""
    child = _run_panoptic(paths, tmp_path, "--on-error", "skip")
    assert child.returncode == 0, child.stderr
    assert "internal error" not in child.stderr and "Traceback" not in child.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [e["stem"] for e in report["errors"]] == ["half"]
    assert [r["stem"] for r in report["rows"]] == (["ok"] if dropped else ["half", "ok"])
    (tmp_path / "r.json").unlink()


def test_panoptic_gt_area_beyond_int64(tmp_path: Path) -> None:
    paths = _panoptic(tmp_path)
    _edit(paths["gt_json"], lambda ann: ann["segments_info"][0].update(area=2 ** 70))
    child = _run_panoptic(paths, tmp_path)
    assert_refused(child, paths["gt_dir"] / "half.png", "'area' must be a non-negative integer",
                   tmp_path / "r.json")
    _skipped(paths, tmp_path, dropped=True)


@pytest.mark.parametrize("side", ["gt", "pred"])
def test_panoptic_more_than_65533_segments(tmp_path: Path, side: str) -> None:
    paths = _panoptic(tmp_path)
    many = [{"id": i, "category_id": 1} for i in range(1, 65_536)]
    _edit(paths[f"{side}_json"], lambda ann: ann.update(segments_info=many))
    child = _run_panoptic(paths, tmp_path)
    assert_refused(child, paths[f"{side}_dir"] / "half.png", "65,535 segments",
                   tmp_path / "r.json")
    _skipped(paths, tmp_path, dropped=side == "gt")


def test_panoptic_prediction_png_larger_than_its_gt_is_refused_before_decoding(
        tmp_path: Path) -> None:
    """12000x12000 (0.4 MB) would decode into 576 MB of ids: refused from its header."""
    paths = _panoptic(tmp_path)
    (paths["pred_dir"] / "half.png").write_bytes(rgb_png_bytes(12_000, 12_000))
    child = _run_panoptic(paths, tmp_path)
    assert_refused(child, paths["pred_dir"] / "half.png", "is 12000x12000, its ground truth",
                   tmp_path / "r.json")
    _skipped(paths, tmp_path, dropped=False)


def test_panoptic_gt_png_beyond_the_bound_is_refused_before_decoding(tmp_path: Path) -> None:
    paths = _panoptic(tmp_path)
    (paths["gt_dir"] / "half.png").write_bytes(rgb_png_bytes(12_000, 12_000))
    child = _run_panoptic(paths, tmp_path)
    assert_refused(child, paths["gt_dir"] / "half.png", "144000000 pixels",
                   tmp_path / "r.json")
    _skipped(paths, tmp_path, dropped=True)


@pytest.mark.parametrize("area, words", [(70, "differs from its pixel count"),
                                         (None, "has no pixel in the PNG")])
def test_panoptic_gt_warnings_name_the_gt_png(tmp_path: Path, area: int | None,
                                              words: str) -> None:
    paths = _panoptic(tmp_path)
    if area is not None:
        _edit(paths["gt_json"], lambda ann: ann["segments_info"][1].update(area=area))
    else:
        _edit(paths["gt_json"], lambda ann: ann["segments_info"].append(
            {"id": 99, "category_id": 1, "area": 5}))
    child = _run_panoptic(paths, tmp_path)
    assert child.returncode == 0, child.stderr
    line = next(line for line in child.stderr.splitlines() if words in line)
    assert str(paths["gt_dir"] / "half.png") in line and "pred" not in line, line
