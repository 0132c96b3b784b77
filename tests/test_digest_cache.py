"""The stat-keyed digest cache: digests are reused only for files that cannot have changed,
never change a report (apart from run_provenance.digests), and a broken or shared cache
never breaks a run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES

from rpx_cli.io import digest_cache
from rpx_cli.io.digest_cache import DigestCache, is_network_filesystem, stat_key

INDOOR = FIXTURES / "depth" / "indoor"


def without_digests(report: dict) -> dict:
    report = json.loads(json.dumps(report))
    report["run_provenance"].pop("digests")
    for key in ("started_at", "finished_at", "duration_s", "argv", "args"):
        report["run_provenance"].pop(key)
    return report


@pytest.fixture
def depth_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the indoor fixture; the racy margin is 0 so files written by the test
    count as old."""
    monkeypatch.setattr(digest_cache, "RACY_SECONDS", 0.0)
    shutil.copytree(INDOOR, tmp_path / "set")
    return tmp_path / "set"


def evaluate(rpx, root: Path, cache: Path | None, *extra: str):
    """``rpx eval depth`` on ``root`` with the digest cache in ``cache`` (None: off)."""
    where = ["--no-digest-cache"] if cache is None else ["--digest-cache", cache]
    return rpx(["eval", "depth", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
                "--max-depth", "10", *where, *extra])


def test_a_rerun_reuses_every_digest_and_gives_the_same_report(rpx, depth_set: Path,
                                                                 tmp_path: Path) -> None:
    n_files = sum(1 for side in ("pred", "gt") for p in (depth_set / side).rglob("*") if p.is_file())
    first = evaluate(rpx, depth_set, tmp_path / "cache").json
    second = evaluate(rpx, depth_set, tmp_path / "cache").json
    assert first["run_provenance"]["digests"] == {"computed": n_files, "reused": 0}
    assert second["run_provenance"]["digests"] == {"computed": 0, "reused": n_files}
    assert without_digests(first) == without_digests(second)
    off = evaluate(rpx, depth_set, None).json
    assert off["run_provenance"]["digests"] == {"computed": n_files, "reused": 0}
    assert without_digests(off) == without_digests(first)


def test_input_files_use_the_cache_too(rpx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``rpx eval detection --coco-gt/--coco-dt``: the unchanged GT file's digest is reused,
    the new results file's hashed; the report is the same."""
    monkeypatch.setattr(digest_cache, "RACY_SECONDS", 0.0)
    shutil.copytree(FIXTURES / "detection" / "coco", tmp_path / "coco")
    files = ["--coco-gt", tmp_path / "coco" / "instances.json",
             "--coco-dt", tmp_path / "coco" / "results.json", "--digest-cache", tmp_path / "cache"]
    first = rpx(["eval", "detection", *files]).json
    results = tmp_path / "coco" / "results.json"
    results.write_bytes(results.read_bytes())  # new predictions, the same bytes
    second = rpx(["eval", "detection", *files]).json
    assert first["run_provenance"]["digests"] == {"computed": 2, "reused": 0}
    assert second["run_provenance"]["digests"] == {"computed": 1, "reused": 1}
    assert without_digests(first) == without_digests(second)


def test_new_content_with_the_old_mtime_put_back_is_hashed_again(rpx, depth_set: Path,
                                                                 tmp_path: Path) -> None:
    evaluate(rpx, depth_set, tmp_path / "cache")
    target = next(p for p in sorted((depth_set / "pred").rglob("*.npy")))
    before = target.stat()
    data = bytearray(target.read_bytes())
    data[-4] ^= 1  # same size, the last depth's lowest mantissa bit: other content
    target.write_bytes(bytes(data))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime restored, ctime not
    after = evaluate(rpx, depth_set, tmp_path / "cache").json
    assert after["run_provenance"]["digests"]["computed"] == 1
    fresh = evaluate(rpx, depth_set, None).json
    assert after["run_provenance"]["inputs"] == fresh["run_provenance"]["inputs"]


def test_a_file_changed_within_the_racy_margin_is_never_stored(rpx, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(INDOOR, tmp_path / "set")  # written just now: inside the 2 s margin
    assert digest_cache.RACY_SECONDS == 2.0
    for _ in range(2):
        report = evaluate(rpx, tmp_path / "set", tmp_path / "cache").json
        assert report["run_provenance"]["digests"]["reused"] == 0


def test_storable_follows_mtime_and_ctime(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    st = path.stat()
    cache = DigestCache(str(tmp_path), started_ns=max(st.st_mtime_ns, st.st_ctime_ns) + 2_000_000_000)
    assert cache.storable(st)
    cache.started_ns -= 1
    assert not cache.storable(st)


def test_a_corrupt_cache_file_is_reported_removed_and_rebuilt(rpx, depth_set: Path,
                                                              tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    evaluate(rpx, depth_set, cache)
    segment = next((cache / "digests-v1").glob("*.seg"))
    segment.write_bytes(segment.read_bytes()[:-5] + b"xxxxx")
    run = evaluate(rpx, depth_set, cache)
    assert run.exit_code == 0
    assert "digest cache" in run.stderr and "corrupt" in run.stderr
    assert run.json["run_provenance"]["digests"]["reused"] == 0
    assert not segment.exists()
    both = evaluate(rpx, depth_set, cache, "--no-digest-cache")
    assert both.exit_code == 2  # one or the other
    assert evaluate(rpx, depth_set, cache).json["run_provenance"]["digests"]["computed"] == 0


def test_an_unwritable_cache_is_a_warning_not_an_error(rpx, depth_set: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    run = evaluate(rpx, depth_set, blocker)
    assert run.exit_code == 0 and "digest cache: not saved" in run.stderr


def test_many_segments_are_merged_into_one(depth_set: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_cache, "MERGE_AT", 3)
    folder = tmp_path / "cache"
    for k in range(4):
        cache = DigestCache.open(str(folder))
        cache.add([(stat_key(os.stat(__file__))[:-8] + k.to_bytes(8, "little"), bytes(32))])
        cache.save()
    segments = list((folder / "digests-v1").glob("*.seg"))
    assert len(segments) == 1
    assert len(DigestCache.open(str(folder)).entries) == 4


def test_concurrent_runs_share_one_cache(tmp_path: Path) -> None:
    """Four processes write the cache at once; none fails, none corrupts it. The committed
    fixture files are older than the racy margin, so they are stored."""
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "rpx_cli", "eval", "depth", "--pred-dir", str(INDOOR / "pred"),
               "--gt-dir", str(INDOOR / "gt"), "--max-depth", "10", "--jobs", "1",
               "--digest-cache", str(cache)]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(4)]
    outputs = [run.communicate() for run in runs]
    assert all(run.returncode == 0 for run in runs), [err for _, err in outputs]
    reports = [json.loads(out) for out, _ in outputs]
    assert len({json.dumps(without_digests(r), sort_keys=True) for r in reports}) == 1
    again = json.loads(subprocess.run(command, capture_output=True, check=True).stdout)
    assert again["run_provenance"]["digests"]["computed"] == 0
    for segment in (cache / "digests-v1").glob("*.seg"):
        assert digest_cache._parse(segment.read_bytes()) is not None


@pytest.mark.parametrize(("fstype", "network"), [("ext4", False), ("nfs4", True),
                                                  ("fuse.sshfs", True), ("cifs", True),
                                                  ("tmpfs", False)])
def test_network_and_fuse_filesystems_are_not_cached(fstype: str, network: bool) -> None:
    mountinfo = ("22 1 0:21 / / rw,relatime - ext4 /dev/sda1 rw\n"
                 f"30 22 0:40 / /data rw,relatime - {fstype} server:/export rw\n")
    assert is_network_filesystem("/data/gt/a.png", mountinfo) is network
    assert is_network_filesystem("/home/a.png", mountinfo) is False



def test_opening_the_cache_sets_aside_only_what_its_segments_hold(tmp_path: Path) -> None:
    """A segment is read by its size: the cache opens in a process whose address space is
    capped far below the largest segment allowed (MAX_SEGMENT_BYTES, 576 MB), which
    ``read(MAX_SEGMENT_BYTES + 1)`` once set aside for every segment."""
    import subprocess
    import sys

    from rpx_cli.io.digest_cache import MAX_SEGMENT_BYTES, DigestCache, stat_key

    folder = tmp_path / "cache"
    cache = DigestCache.open(str(folder))
    probe = tmp_path / "probe.bin"
    probe.write_bytes(b"x")
    cache.add([(stat_key(probe.stat()), b"\1" * 32)])
    cache.save()
    assert MAX_SEGMENT_BYTES > 400 << 20
    script = ("import resource, sys\n"
              "resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))\n"
              "from rpx_cli.io.digest_cache import DigestCache\n"
              "cache = DigestCache.open(sys.argv[1])\n"
              "print(len(cache.entries), len(cache.warnings))\n")
    done = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "0"]
