"""Manifest reader: formats, RPX manifests, poses inline and from files, problems vs errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import rz, write_npy

from rpx_cli.errors import InputError
from rpx_cli.io.manifest import read_manifest


def pose(rotation: np.ndarray, t) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = rotation, t
    return out


def test_every_pose_source_gives_the_same_matrix(tmp_path: Path) -> None:
    expected = pose(rz(30), [1.0, 2.0, 3.0])
    write_npy(tmp_path / "data" / "p.npy", expected)
    q = [0.0, 0.0, np.sin(np.radians(15)), np.cos(np.radians(15))]  # x y z w
    write_npy(tmp_path / "data" / "rpx.npy", np.array([1.0, 2.0, 3.0, *q]))
    (tmp_path / "data" / "p.json").write_text(json.dumps({"R": rz(30).tolist(), "t": [1, 2, 3]}))
    (tmp_path / "data" / "list.json").write_text(json.dumps(expected.tolist()))
    samples = [{"id": "inline", "pose": expected.tolist()}, {"id": "npy", "pose": "p.npy"},
               {"id": "rpx", "pose": "rpx.npy"}, {"id": "json", "pose": "p.json"},
               {"id": "list", "pose": "list.json"}]
    (tmp_path / "m.json").write_text(json.dumps({"root": "data", "samples": samples}))
    manifest = read_manifest(str(tmp_path / "m.json"))
    for stem, sample in manifest.samples.items():
        assert np.allclose(sample.pose, expected, atol=1e-12), stem
    assert read_manifest(str(tmp_path / "m.json"), load_poses=False).samples["npy"].pose is None


def test_labels_groups_and_problems(tmp_path: Path) -> None:
    lines = [{"stem": "a", "phase": 2, "difficulty": "Hard", "scene": "s1", "frame": 3,
              "intrinsics": [500, 500, 320, 240]},
             {"stem": "b", "phase": "CLUTTER", "sequence": "walk"},
             {"stem": "c", "phase": 5, "difficulty": "extreme"},
             {"stem": "a"}]
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    manifest = read_manifest(str(tmp_path / "m.jsonl"))
    a, b, c = (manifest.samples[k] for k in "abc")
    assert (a.phase, a.difficulty, a.frame) == ("clean", "hard", 3)
    assert a.intrinsics == (500.0, 500.0, 320.0, 240.0)
    assert a.group == "s1/clean" and b.group == "walk" and c.phase is None
    text = " | ".join(manifest.problems)
    assert "unknown phase 5" in text and "unknown difficulty 'extreme'" in text and "listed twice" in text
    assert manifest.check_stems(["a", "b", "z"]) == [
        "1 evaluated stem(s) have no manifest entry, e.g. 'z'", "1 manifest stem(s) have no pair, e.g. 'c'"]


@pytest.mark.parametrize(("sample", "message"), [
    ({"stem": "a", "pose": pose(rz(10), [0, 0, 0]).tolist()[:3]}, "'pose' must be a 4x4 matrix"),
    ({"stem": "a", "pose": (pose(rz(10), [0, 0, 0]) * 1.1).tolist()}, "not a rigid transform"),
    ({"stem": "a", "pose": "missing.npy"}, "does not exist"),
    ({"stem": "a", "intrinsics": [500, 500, 320]}, "four finite numbers"),
    ({"stem": "a", "intrinsics": [0, 500, 320, 240]}, "focal lengths must be positive"),
    ({"stem": "a", "frame": 1.5}, "'frame' must be an integer"),
    ({"phase": "clean"}, "has no 'stem'"),
])
def test_structural_errors_name_the_manifest_and_sample(tmp_path: Path, sample, message) -> None:
    (tmp_path / "m.json").write_text(json.dumps({"samples": [sample]}))
    with pytest.raises(InputError) as caught:
        read_manifest(str(tmp_path / "m.json"))
    assert message in str(caught.value) and "m.json" in str(caught.value)


def test_not_json_and_schema_validation(rpx, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{samples: [")
    with pytest.raises(InputError, match="neither JSON nor JSON Lines"):
        read_manifest(str(tmp_path / "bad.json"))
    (tmp_path / "m.json").write_text(json.dumps({"schema_version": 1, "samples": [
        {"stem": "a", "phase": "clean", "difficulty": "easy", "pose": np.eye(4).tolist(),
         "intrinsics": [1, 1, 0, 0], "sequence": "s", "frame": 0}]}))
    run = rpx(["validate", tmp_path / "m.json"])
    assert run.exit_code == 0, run.stderr
    assert rpx(["schema", "manifest"]).exit_code == 0
