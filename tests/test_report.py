"""The report layer: serializer NaN policy, atomic writes, provenance as a pure function."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rpx_cli.errors import ParameterError
from rpx_cli.io.atomic_files import write_atomic
from rpx_cli.report.provenance import (
    Clock,
    build_provenance,
    collect_git,
    directory_digest,
    normalise_args,
    source_date_epoch,
    utc_iso,
)
from rpx_cli.report.schemas import validation_errors
from rpx_cli.report.serialize import NonFiniteValue, dumps, to_json


def test_dumps_sorted_indented_newline() -> None:
    assert dumps({"b": 1, "a": {"d": [1, 2], "c": None}}) == (
        b'{\n  "a": {\n    "c": null,\n    "d": [\n      1,\n      2\n    ]\n  },\n  "b": 1\n}\n'
    )
    assert dumps({"b": 1, "a": 2}, compact=True) == b'{"a":2,"b":1}\n'


def test_numpy_values_become_plain_json() -> None:
    value = {"i": np.int64(3), "f": np.float32(0.5), "b": np.bool_(True), "a": np.arange(3)}
    assert to_json(value) == {"i": 3, "f": 0.5, "b": True, "a": [0, 1, 2]}
    assert type(to_json(np.float64(0.1))) is float


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), np.float32("nan"),
                                 np.array([1.0, np.inf])])
def test_non_finite_numbers_are_refused_not_nulled(bad) -> None:
    with pytest.raises(NonFiniteValue, match=r"\$\.rows\[0\]\.iou"):
        dumps({"rows": [{"iou": bad}]})


def test_write_atomic_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "r.json"
    write_atomic(str(target), b"first\n")
    write_atomic(str(target), b"second\n")
    assert target.read_bytes() == b"second\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.json"]


@pytest.mark.parametrize("where", ["open", "fsync", "replace"])
def test_a_stop_anywhere_in_an_atomic_write_leaves_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """A stop signal's Interrupted may be raised at any bytecode: just after the temporary
    file was created (before ``mkstemp`` could hand its name back, the defect), while it is
    flushed, or at the rename. The old report stays whole and no ``.rpx-*`` file is left."""
    import signal

    from rpx_cli.errors import Interrupted
    from rpx_cli.io import atomic_files

    target = tmp_path / "r.json"
    target.write_bytes(b"old\n")
    real_open = os.open

    def opened(*args, **kwargs):
        handle = real_open(*args, **kwargs)
        if where == "open":
            raise Interrupted(signal.SIGTERM)  # the file exists; its descriptor not yet used
        return handle

    def stopped(*args, **kwargs):
        raise Interrupted(signal.SIGTERM)

    monkeypatch.setattr(atomic_files.os, "open", opened)
    if where != "open":
        monkeypatch.setattr(atomic_files.os, where, stopped)
    with pytest.raises(Interrupted):
        write_atomic(str(target), b"new\n")
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    assert target.read_bytes() == b"old\n"


def test_an_atomic_write_gives_the_file_a_new_files_mode(tmp_path: Path) -> None:
    """The temporary file is created 0o600 (nobody reads a half-written report); the report
    then gets the mode any new file gets, 0o666 & ~umask (also for `rpx convert`'s files)."""
    from rpx_cli.io.coco_writer import write_json

    mask = os.umask(0o027)
    try:
        write_atomic(str(tmp_path / "r.json"), b"{}")
        write_json(str(tmp_path / "c.json"), {"a": [1, 2]})
    finally:
        os.umask(mask)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "c.json").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "c.json").read_text() == '{"a":[1,2]}'


def test_directory_digest_is_sha256sum_of_the_listing(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "a.npy").write_bytes(b"alpha")
    (tmp_path / "d" / "b.pgm").write_bytes(b"beta")
    digests = {rel: hashlib.sha256((tmp_path / rel).read_bytes()).hexdigest()
               for rel in ["d/b.pgm", "a.npy"]}
    listing = subprocess.run(["sha256sum", "a.npy", "d/b.pgm"], cwd=tmp_path, check=True,
                             capture_output=True).stdout
    assert directory_digest(digests) == hashlib.sha256(listing).hexdigest()


def test_build_provenance_is_pure_and_valid() -> None:
    kwargs = dict(
        command="rpx saliency-mb",
        argv=["rpx", "saliency-mb", "--pred-dir", "p"],
        args={"pred_dir": Path("p"), "jobs": 2, "block_size": 16},
        inputs={"pred_dir": {"path": "p", "kind": "directory", "exists": True, "n_files": 0,
                             "sha256": directory_digest({})}},
        outputs={"report": {"path": "-"}},
        clock=Clock(1700000000.0, 1700000002.5),
        environment={"python": "3.11.7", "platform": "Linux", "numpy": "2.0"},
        git={"commit": "a" * 40, "dirty": False},
    )
    first, second = build_provenance(**kwargs), build_provenance(**kwargs)
    assert first == second
    assert first["started_at"] == "2023-11-14T22:13:20.000Z"
    assert first["finished_at"] == "2023-11-14T22:13:22.500Z"
    assert first["duration_s"] == 2.5
    assert list(first["args"]) == ["block_size", "jobs", "pred_dir"] and first["args"]["pred_dir"] == "p"
    assert validation_errors(first, "provenance") == []
    fixed = build_provenance(**{**kwargs, "clock": Clock(5.0, 5.0, fixed=True)})
    assert fixed["duration_s"] == 0.0


def test_source_date_epoch_parsing() -> None:
    assert source_date_epoch({}) is None
    assert source_date_epoch({"SOURCE_DATE_EPOCH": ""}) is None
    assert source_date_epoch({"SOURCE_DATE_EPOCH": "86400"}) == 86400.0
    with pytest.raises(ParameterError):
        source_date_epoch({"SOURCE_DATE_EPOCH": "1.5"})
    with pytest.raises(ParameterError):
        source_date_epoch({"SOURCE_DATE_EPOCH": "-1"})
    assert utc_iso(0) == "1970-01-01T00:00:00.000Z"


def test_normalise_args_sorts_and_flattens() -> None:
    assert normalise_args({"b": (1, Path("x")), "a": None}) == {"a": None, "b": [1, "x"]}


def test_collect_git_inside_and_outside_a_repository(tmp_path: Path) -> None:
    assert collect_git(str(tmp_path)) is None
    run = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    run("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x")
    state = collect_git(str(tmp_path))
    assert state is not None and len(state["commit"]) == 40 and state["dirty"] is False
    (tmp_path / "f").write_text("x")
    run("add", "f")
    assert collect_git(str(tmp_path))["dirty"] is True
