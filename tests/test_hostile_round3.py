"""Issue 31, resource bounds and hangs (items 7-12), each through the real CLI in a child
process under a memory limit and a timeout (``test_hostile``'s harness): what used to hang,
run for minutes or end in an internal error is an input error naming the file, or runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import FIXTURES
from test_hostile import run_child

pytestmark = pytest.mark.slow

KITTI = FIXTURES / "segmentation3d" / "kitti"
DEPTH = FIXTURES / "depth" / "indoor"


def _one_line_error(child, *words: str, code: int = 1) -> None:
    assert child.returncode == code, (child.returncode, child.stderr)
    assert "Traceback" not in child.stderr and "internal error" not in child.stderr, child.stderr
    for word in words:
        assert word in child.stderr, child.stderr


# --- 10. special files and hostile JSON in the small readers -------------------------------------


def _label_map_cases(root: Path) -> dict[str, tuple[Path, str]]:
    fifo = root / "fifo.json"
    os.mkfifo(fifo)
    zero = root / "zero.json"
    zero.symlink_to("/dev/zero")
    deep = root / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000)
    long = root / "long.json"
    long.write_text('{"1": 1' + "0" * 5000 + "}")
    twice = root / "twice.json"
    twice.write_text('{"0": 0, "1": 1, "1": 2}')
    return {"fifo": (fifo, "is a FIFO, not a regular file"),
            "dev-zero": (zero, "is a character device"),
            "nested-5000": (deep, "nested too deeply"),
            "number-5000-digits": (long, "a number of more than 4,300 digits"),
            "repeated-key": (twice, "the key '1' is given twice")}


@pytest.mark.parametrize("case", ["fifo", "dev-zero", "nested-5000", "number-5000-digits",
                                  "repeated-key"])
def test_label_map_that_is_not_a_plain_json_object_file(tmp_path: Path, case: str) -> None:
    path, words = _label_map_cases(tmp_path)[case]
    child = run_child(["eval", "segmentation3d", "--pred-dir", str(KITTI / "pred"), "--gt-dir",
                       str(KITTI / "gt"), "--label-map", str(path)], tmp_path, timeout=30)
    _one_line_error(child, str(path), words)


def test_class_map_with_a_repeated_key(tmp_path: Path) -> None:
    shelf = FIXTURES / "detection" / "shelf"
    (tmp_path / "map.json").write_text('{"cup": "mug", "cup": null}')
    child = run_child(["eval", "detection", "--pred-dir", str(shelf / "pred"), "--gt-dir",
                       str(shelf / "gt"), "--class-map", str(tmp_path / "map.json")], tmp_path)
    assert child.returncode in (1, 2), child.stderr
    _one_line_error(child, "the key 'cup' is given twice", code=child.returncode)


@pytest.mark.parametrize("text,words", [
    ("[" * 5000 + "]" * 5000, "nested too deeply"),
    ('{"a": 1' + "0" * 5000 + "}", "more than 4,300 digits"),
    ('{"endpoint_url": "http://a", "endpoint_url": "http://b"}', "given twice"),
], ids=["nested-5000", "number-5000-digits", "repeated-key"])
def test_storage_options_that_are_hostile_json_are_a_usage_error(tmp_path: Path, text: str,
                                                                 words: str) -> None:
    child = run_child(["eval", "depth", "--pred-dir", str(DEPTH / "pred"), "--gt-dir",
                       str(DEPTH / "gt"), "--storage-options", text], tmp_path, timeout=30)
    _one_line_error(child, "--storage-options", words, code=2)


@pytest.mark.parametrize("entry", ["fifo", "dev-zero"])
def test_a_special_file_in_the_digest_cache_folder_is_skipped_not_read(tmp_path: Path,
                                                                       entry: str) -> None:
    cache = tmp_path / "cache"
    segments = cache / "digests-v1"
    segments.mkdir(parents=True)
    if entry == "fifo":
        os.mkfifo(segments / "x.seg")
    else:
        (segments / "x.seg").symlink_to("/dev/zero")
    child = run_child(["eval", "depth", "--pred-dir", str(DEPTH / "pred"), "--gt-dir",
                       str(DEPTH / "gt"), "--digest-cache", str(cache), "-o",
                       str(tmp_path / "r.json")], tmp_path, timeout=30)
    assert child.returncode == 0, child.stderr
    assert "digest cache:" in child.stderr and "ignored" in child.stderr
    assert json.loads((tmp_path / "r.json").read_text())["n_pairs"] == 4
