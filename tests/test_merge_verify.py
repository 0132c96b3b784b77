"""Issue 31.2: `rpx merge` verifies every part before it trusts it. A part carries its
pairs (stem and files), their digest, the digest of every shard's pairs (the run's pairing
bound to the shard count) and a seal over what merge takes from it; a relabelled, trimmed or
edited part is refused, naming it (exit 1, no report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXTURES

from rpx_cli.run.part_key import part_seal

SHELF = FIXTURES / "detection" / "shelf"


@pytest.fixture
def parts(rpx, tmp_path: Path) -> tuple[list[Path], dict]:
    """Two parts of a detection run, and the single run's report."""
    argv = ["eval", "detection", "--pred-dir", str(SHELF / "pred"), "--gt-dir", str(SHELF / "gt"),
            "--conf-threshold", "0.4"]
    paths = [tmp_path / f"part{k}.json" for k in (1, 2)]
    for k, path in enumerate(paths, 1):
        assert rpx([*argv, "--shard", f"{k}/2", "-o", str(path)]).exit_code == 0
    whole = rpx(argv)
    assert whole.exit_code == 0
    return paths, whole.json


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def save(path: Path, part: dict, *, reseal: bool) -> Path:
    if reseal:  # a careful forger recomputes the seal: the structure must still give it away
        part["state"]["seal"] = part_seal(part, parsed=True)
    path.write_text(json.dumps(part))
    return path


def assert_refused(rpx, paths: list[Path], culprit: Path, words: str, tmp_path: Path) -> None:
    out = tmp_path / "merged.json"
    run = rpx(["merge", *map(str, paths), "-o", str(out)])
    assert run.exit_code == 1, run.stderr
    assert str(culprit) in run.stderr and words in run.stderr, run.stderr
    assert not out.exists() and "Traceback" not in run.stderr


def test_parts_as_written_merge_to_the_single_run(rpx, parts, tmp_path: Path) -> None:
    paths, whole = parts
    merged = rpx(["merge", *map(str, paths)])
    assert merged.exit_code == 0, merged.stderr
    for key in ("aggregate", "dataset", "rows", "n_pairs", "errors", "unpaired"):
        assert merged.json[key] == whole[key]
    part = load(paths[0])
    assert part_seal(part, parsed=True) == part["state"]["seal"]
    assert {pair[0] for pair in part["state"]["pairs"]} == set(part["state"]["stems"])


@pytest.mark.parametrize("reseal", [False, True], ids=["as-is", "resealed"])
def test_a_part_copied_and_relabelled_as_another_shard_is_refused(rpx, parts, tmp_path: Path,
                                                                  reseal: bool) -> None:
    paths, _ = parts
    fake = load(paths[0])
    fake["state"]["shard"]["index"] = 2
    forged = save(tmp_path / "fake2.json", fake, reseal=reseal)
    words = "holds stem" if reseal else "does not match its seal"
    assert_refused(rpx, [paths[0], forged], forged, words, tmp_path)


@pytest.mark.parametrize("reseal", [False, True], ids=["as-is", "resealed"])
def test_a_part_with_a_stem_removed_is_refused(rpx, parts, tmp_path: Path, reseal: bool) -> None:
    paths, _ = parts
    part = load(paths[1])
    stems = part["state"]["stems"]
    gone = stems[0]
    keep = [i for i, stem in enumerate(stems) if stem != gone]
    part["state"]["stems"] = [stems[i] for i in keep]
    part["state"]["stats"] = {name: [values[i] for i in keep] if isinstance(values, list) else values
                              for name, values in part["state"]["stats"].items()}
    part["rows"] = [row for row in part["rows"] if row["stem"] != gone]
    part["n_pairs"] -= 1
    trimmed = save(tmp_path / "trimmed.json", part, reseal=reseal)
    words = "unaccounted for" if reseal else "does not match its seal"
    assert_refused(rpx, [paths[0], trimmed], trimmed, words, tmp_path)
    # the pair removed from its pairs too, digests and all: its digest no longer matches
    part["state"]["pairs"] = [pair for pair in part["state"]["pairs"] if pair[0] != gone]
    part["state"]["digests"] = {name: {rel: h for rel, h in files.items()
                                       if not rel.startswith(gone + ".")}
                                for name, files in part["state"]["digests"].items()}
    trimmed = save(tmp_path / "trimmed.json", part, reseal=True)
    assert_refused(rpx, [paths[0], trimmed], trimmed, "do not match their digest", tmp_path)


def test_a_part_whose_statistics_were_edited_is_refused(rpx, parts, tmp_path: Path) -> None:
    """The issue's case: one detection dropped from a frame's statistics turned f1 0.5 into
    0.75 after the merge."""
    paths, _ = parts
    part = load(paths[0])
    frames = part["state"]["stats"]["frame"]
    frame = next(f for f in frames if f["pred"]["labels"])
    for key in ("box", "labels", "crowd", "area", "scores"):
        frame["pred"][key] = frame["pred"][key][:0]
    edited = save(tmp_path / "edited.json", part, reseal=False)
    assert_refused(rpx, [edited, paths[1]], edited, "does not match its seal", tmp_path)


def test_parts_of_another_run_or_another_shard_count_are_refused(rpx, parts, tmp_path: Path) -> None:
    paths, _ = parts
    part = load(paths[1])
    part["state"]["layout"] = "0" * 64
    other = save(tmp_path / "other.json", part, reseal=True)
    run = rpx(["merge", str(paths[0]), str(other)])
    assert run.exit_code == 1 and "do not make up the run's pairing" in run.stderr


def test_a_part_without_a_seal_is_refused(rpx, parts, tmp_path: Path) -> None:
    paths, _ = parts
    part = load(paths[0])
    del part["state"]["seal"]
    old = save(tmp_path / "old.json", part, reseal=False)
    assert_refused(rpx, [old, paths[1]], old, "carries no seal", tmp_path)

