"""Object storage (``rpx[remote]``) against a real S3-compatible server on 127.0.0.1 (moto's
server mode, started and stopped here): inputs, outputs and merge parts as URLs give the
local run's report; provenance keeps URLs and ETags; errors are one line, exit 1, no
report; no credential reaches any output; a local run never imports fsspec.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT, parse_report, without_provenance, write_manifest
from s3_server import CREDENTIALS, SECRET_KEY, filesystem, s3_server, upload

from rpx_cli.errors import InputError
from rpx_cli.io import remote
from rpx_cli.io.discover import list_stems


@pytest.fixture(scope="module")
def server():
    with s3_server() as running:
        yield running


@pytest.fixture
def s3(server, monkeypatch: pytest.MonkeyPatch):
    """The server's credentials in the environment, a fresh bucket; yields (fs, bucket)."""
    import s3fs

    for key, value in server.environ().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    s3fs.S3FileSystem.clear_instance_cache()
    fs = filesystem(server.environ())
    bucket = f"rpx-{uuid.uuid4().hex[:12]}"
    fs.mkdir(bucket)
    yield fs, bucket
    s3fs.S3FileSystem.clear_instance_cache()
    remote.configure(None)


def same_report(got: dict, want: dict, replace: dict[str, str]) -> None:
    """Equal but for run_provenance, with the URLs in ``got`` read as the local paths."""
    text = json.dumps(without_provenance(got), sort_keys=True)
    for url, path in replace.items():
        text = text.replace(url, path)
    assert json.loads(text) == without_provenance(want)


def no_secret(*texts: str | bytes) -> None:
    for text in texts:
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        for secret in CREDENTIALS:
            assert secret not in text, f"a credential leaked: {text[:300]}"


# --- evaluations from a bucket ----------------------------------------------------------------


def test_depth_from_a_bucket_to_a_bucket_equals_the_local_run(rpx, s3, monkeypatch) -> None:
    fs, bucket = s3
    local = FIXTURES / "depth" / "indoor"
    upload(fs, local, f"s3://{bucket}/depth")
    flags = "--max-depth 10 --range 0:2 --range 2:5 --range 5:"
    # --html keeps the 10 worst frames (their error maps read again, from the bucket)
    want = rpx(f"eval depth --pred-dir {local}/pred --gt-dir {local}/gt {flags} --keep-worst 10").json
    run = rpx(f"eval depth --pred-dir s3://{bucket}/depth/pred --gt-dir s3://{bucket}/depth/gt "
              f"{flags} -o s3://{bucket}/out/report.json --html s3://{bucket}/out/report.html")
    assert run.exit_code == 0, run.stderr
    assert run.stdout == ""
    data = fs.cat_file(f"{bucket}/out/report.json")
    got = parse_report(data)
    same_report(got, want, {f"s3://{bucket}/depth": str(local)})
    assert fs.cat_file(f"{bucket}/out/report.html").startswith(b"<!DOCTYPE html>")
    inputs, local_inputs = got["run_provenance"]["inputs"], want["run_provenance"]["inputs"]
    for name in ("pred_dir", "gt_dir"):  # digests of the bytes evaluated: as on disk
        assert inputs[name]["sha256"] == local_inputs[name]["sha256"]
        assert inputs[name]["path"] == f"s3://{bucket}/depth/{name[:-4]}"
        assert inputs[name]["exists"] is True and inputs[name]["n_files"] == 4
        listing = fs.find(f"{bucket}/depth/{name[:-4]}", detail=True)
        lines = "".join(f"{info['ETag'].strip(chr(34))}  {key.rsplit('/', 1)[1]}\n"
                        for key, info in sorted(listing.items()))
        import hashlib

        assert inputs[name]["etags"] == hashlib.sha256(lines.encode()).hexdigest()
    assert got["run_provenance"]["outputs"]["report"]["path"] == f"s3://{bucket}/out/report.json"
    no_secret(run.stdout, run.stderr, data)


def test_detection_from_a_bucket_with_worker_processes(rpx, s3) -> None:
    fs, bucket = s3
    local = FIXTURES / "detection" / "shelf"
    upload(fs, local, f"s3://{bucket}/det")
    want = rpx(f"eval detection --pred-dir {local}/pred --gt-dir {local}/gt "
               "--conf-threshold 0.4").json
    run = rpx(f"eval detection --pred-dir s3://{bucket}/det/pred --gt-dir s3://{bucket}/det/gt "
              f"--conf-threshold 0.4 --jobs 2 -o s3://{bucket}/det.json")
    assert run.exit_code == 0, run.stderr
    got = parse_report(fs.cat_file(f"{bucket}/det.json"))
    same_report(got, want, {f"s3://{bucket}/det": str(local)})
    assert got["run_provenance"]["digests"] == {"computed": 12, "reused": 0}  # no cache for objects


def test_coco_files_and_a_manifest_as_urls(rpx, s3, tmp_path: Path) -> None:
    fs, bucket = s3
    coco = FIXTURES / "detection" / "coco"
    upload(fs, coco, f"s3://{bucket}/coco")
    want = rpx(f"eval detection --coco-gt {coco}/instances.json --coco-dt {coco}/results.json").json
    run = rpx(f"eval detection --coco-gt s3://{bucket}/coco/instances.json "
              f"--coco-dt s3://{bucket}/coco/results.json")
    assert run.exit_code == 0, run.stderr
    same_report(run.json, want, {f"s3://{bucket}/coco": str(coco)})
    entry = run.json["run_provenance"]["inputs"]["coco_gt"]
    assert entry["sha256"] == want["run_provenance"]["inputs"]["coco_gt"]["sha256"]
    assert entry["etag"] == fs.info(f"{bucket}/coco/instances.json")["ETag"].strip('"')

    depth = FIXTURES / "depth" / "indoor"
    write_manifest(tmp_path / "m.json", [f"frame00{i}" for i in range(4)])
    fs.pipe_file(f"{bucket}/manifest.json", (tmp_path / "m.json").read_bytes())
    want = rpx(f"eval depth --pred-dir {depth}/pred --gt-dir {depth}/gt "
               f"--manifest {tmp_path / 'm.json'}").json
    run = rpx(f"eval depth --pred-dir {depth}/pred --gt-dir {depth}/gt "
              f"--manifest s3://{bucket}/manifest.json")
    assert run.exit_code == 0, run.stderr
    same_report(run.json, want, {f"s3://{bucket}/manifest.json": str(tmp_path / "m.json")})
    assert run.json["run_provenance"]["inputs"]["manifest"]["etag"]


def test_auxiliary_folder_and_input_files_as_urls(rpx, s3) -> None:
    fs, bucket = s3
    kitti = FIXTURES / "segmentation3d" / "kitti"
    upload(fs, kitti, f"s3://{bucket}/kitti")
    flags = (f"--label-map {kitti}/learning_map.json --class-names {kitti}/names.txt "
             "--ignore-index 0 --range 0:20 --range 20:50 --range 50:")
    want = rpx(f"eval segmentation3d --pred-dir {kitti}/pred --gt-dir {kitti}/gt "
               f"--points-dir {kitti}/velodyne {flags}").json
    run = rpx(f"eval segmentation3d --pred-dir s3://{bucket}/kitti/pred "
              f"--gt-dir s3://{bucket}/kitti/gt --points-dir s3://{bucket}/kitti/velodyne {flags}")
    assert run.exit_code == 0, run.stderr
    same_report(run.json, want, {f"s3://{bucket}/kitti": str(kitti)})

    csv = FIXTURES / "classification" / "imagenet-csv"
    upload(fs, csv, f"s3://{bucket}/csv")
    want = rpx(f"eval classification --pred-file {csv}/pred.csv --gt-file {csv}/gt.csv "
               "--top-k 3").json
    run = rpx(f"eval classification --pred-file s3://{bucket}/csv/pred.csv "
              f"--gt-file s3://{bucket}/csv/gt.csv --top-k 3")
    assert run.exit_code == 0, run.stderr
    same_report(run.json, want, {f"s3://{bucket}/csv": str(csv)})


def test_shards_to_a_bucket_merged_with_a_glob(rpx, s3) -> None:
    fs, bucket = s3
    local = FIXTURES / "detection" / "shelf"
    upload(fs, local, f"s3://{bucket}/det")
    want = rpx(f"eval detection --pred-dir {local}/pred --gt-dir {local}/gt").json
    for k in (1, 2, 3):
        run = rpx(f"eval detection --pred-dir s3://{bucket}/det/pred "
                  f"--gt-dir s3://{bucket}/det/gt --shard {k}/3 "
                  f"-o s3://{bucket}/run/part-{k}.json")
        assert run.exit_code == 0, run.stderr
    run = rpx(["merge", f"s3://{bucket}/run/part-*.json", "-o", f"s3://{bucket}/run/merged.json"])
    assert run.exit_code == 0, run.stderr
    assert "merged 3 part(s)" in run.stderr
    merged = parse_report(fs.cat_file(f"{bucket}/run/merged.json"))
    same_report(merged, want, {f"s3://{bucket}/det": str(local)})
    shard = merged["run_provenance"]["inputs"]["shard_2"]
    assert shard["path"] == f"s3://{bucket}/run/part-2.json" and shard["etag"]
    missing = rpx(["merge", f"s3://{bucket}/elsewhere/part-*.json"])
    assert missing.exit_code == 1
    assert missing.stderr.strip() == (f"rpx: s3://{bucket}/elsewhere/part-*.json: no file "
                                      "matches this pattern")


def test_storage_options_are_used_and_never_written(rpx, s3, monkeypatch) -> None:
    fs, bucket = s3
    local = FIXTURES / "depth" / "indoor"
    upload(fs, local, f"s3://{bucket}/d")
    endpoint = remote_endpoint = fs.client_kwargs.get("endpoint_url") or \
        __import__("os").environ["AWS_ENDPOINT_URL"]
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name)
    options = json.dumps({"key": CREDENTIALS[0], "secret": SECRET_KEY, "token": CREDENTIALS[2],
                          "client_kwargs": {"endpoint_url": endpoint}})
    run = rpx(["eval", "depth", "--pred-dir", f"s3://{bucket}/d/pred", "--gt-dir",
               f"s3://{bucket}/d/gt", "--storage-options", options])
    assert run.exit_code == 0, run.stderr
    provenance = run.json["run_provenance"]
    assert provenance["args"]["storage_options"] == {
        "client_kwargs": {"endpoint_url": remote_endpoint}, "key": "***", "secret": "***",
        "token": "***"}
    no_secret(run.stdout, run.stderr)
    bad = rpx(["eval", "depth", "--pred-dir", "s3://x/p", "--gt-dir", "s3://x/g",
               "--storage-options", "{not json"])
    assert bad.exit_code == 2 and "--storage-options" in bad.stderr


# --- errors ------------------------------------------------------------------------------------


def one_line(run) -> str:
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    return lines[0]


def test_no_such_bucket_or_prefix_is_one_line_and_no_report(rpx, s3, tmp_path: Path) -> None:
    fs, bucket = s3
    out = tmp_path / "r.json"
    run = rpx(f"eval depth --pred-dir s3://no-such-bucket-{bucket}/p --gt-dir s3://{bucket}/g "
              f"-o {out}")
    assert run.exit_code == 1 and not out.exists()
    assert one_line(run) == f"rpx: s3://no-such-bucket-{bucket}/p: cannot list: no such bucket"
    fs.pipe_file(f"{bucket}/g/a.npy", b"x")
    run = rpx(f"eval depth --pred-dir s3://{bucket}/nothing --gt-dir s3://{bucket}/g -o {out}")
    assert run.exit_code == 1 and not out.exists()
    assert one_line(run) == (f"rpx: s3://{bucket}/nothing: no such folder (no object under this "
                             "prefix)")
    run = rpx(f"eval detection --coco-gt s3://{bucket}/missing.json "
              f"--coco-dt s3://{bucket}/missing.json -o {out}")
    assert run.exit_code == 1 and not out.exists()
    assert one_line(run) == f"rpx: s3://{bucket}/missing.json: cannot read: not found"
    local = FIXTURES / "depth" / "indoor"
    run = rpx(f"eval depth --pred-dir {local}/pred --gt-dir {local}/gt "
              f"-o s3://no-such-bucket-{bucket}/r.json")
    assert run.exit_code == 1
    assert one_line(run) == (f"rpx: s3://no-such-bucket-{bucket}/r.json: cannot write: no such "
                             "bucket")


def test_a_corrupt_object_is_that_objects_input_error(rpx, s3) -> None:
    fs, bucket = s3
    local = FIXTURES / "depth" / "indoor"
    upload(fs, local, f"s3://{bucket}/d")
    fs.pipe_file(f"{bucket}/d/pred/frame001.npy", b"not an npy file")
    run = rpx(f"eval depth --pred-dir s3://{bucket}/d/pred --gt-dir s3://{bucket}/d/gt "
              "--on-error skip")
    assert run.exit_code == 0
    [error] = run.json["errors"]
    assert error["path"] == f"s3://{bucket}/d/pred/frame001.npy"
    # a broken prediction is scored as an empty one (SPEC §2): the pair stays
    assert error["effect"] == "empty_prediction" and run.json["n_pairs"] == 4


def test_access_denied_is_one_line_without_credentials(rpx, s3, tmp_path: Path) -> None:
    from moto.core.authorization import enable_iam_authentication

    fs, bucket = s3
    upload(fs, FIXTURES / "depth" / "indoor", f"s3://{bucket}/d")
    out = tmp_path / "r.json"
    with enable_iam_authentication():  # the made-up key is now unknown to the server: 403
        run = rpx(f"eval depth --pred-dir s3://{bucket}/d/pred --gt-dir s3://{bucket}/d/gt "
                  f"-o {out}")
    assert run.exit_code == 1 and not out.exists()
    line = one_line(run)
    assert line.startswith(f"rpx: s3://{bucket}/d/pred: cannot list: access denied"), line
    no_secret(run.stdout, run.stderr)


def test_network_down_is_one_line(rpx, s3, monkeypatch, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port on this machine that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    out = tmp_path / "r.json"
    started = time.monotonic()
    run = rpx(f"eval depth --pred-dir s3://b/p --gt-dir s3://b/g -o {out}")
    assert run.exit_code == 1 and not out.exists()
    line = one_line(run)
    assert line.startswith("rpx: s3://b/p: cannot list: "), line
    assert f"127.0.0.1:{port}" in line
    assert time.monotonic() - started < 60
    no_secret(run.stderr)


def test_a_secret_in_a_message_is_masked(monkeypatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    remote.configure({"key": "K3Y-VALUE", "client_kwargs": {"aws_session_token": "T0KEN-1"}})
    try:
        text = remote.scrub(f"failed with {SECRET_KEY} and K3Y-VALUE, T0KEN-1 at "
                            "ftp://user:pa55@host/x")
        assert text == "failed with *** and ***, *** at ftp://user:***@host/x"
    finally:
        remote.configure(None)
    assert remote.redact({"key": "a", "endpoint_url": "http://e", "client_kwargs": {
        "region_name": "r", "aws_secret_access_key": "s"}}) == {
        "key": "***", "endpoint_url": "http://e",
        "client_kwargs": {"region_name": "r", "aws_secret_access_key": "***"}}
    assert remote.redacted_argv(["rpx", "--storage-options", '{"secret": "s"}', "-o", "x"]) == [
        "rpx", "--storage-options", '{"secret": "***"}', "-o", "x"]
    assert remote.redacted_argv(["--storage-options={bad"]) == ["--storage-options=***"]


# --- other URL schemes, pairing, imports -------------------------------------------------------


def test_file_and_memory_urls(rpx, tmp_path: Path) -> None:
    import fsspec

    local = FIXTURES / "depth" / "indoor"
    want = rpx(f"eval depth --pred-dir {local}/pred --gt-dir {local}/gt").json
    run = rpx(f"eval depth --pred-dir file://{local}/pred --gt-dir file://{local}/gt "
              f"-o file://{tmp_path}/out/r.json")
    assert run.exit_code == 0, run.stderr
    got = parse_report((tmp_path / "out" / "r.json").read_bytes())
    same_report(got, want, {f"file://{local}": str(local)})
    assert got["run_provenance"]["inputs"]["gt_dir"]["etags"] is None  # no ETags on disk

    memory = fsspec.filesystem("memory")
    prefix = f"/rpx-{uuid.uuid4().hex[:8]}"
    for path in sorted(local.rglob("*")):
        if path.is_file():
            memory.pipe_file(f"{prefix}/{path.relative_to(local).as_posix()}", path.read_bytes())
    for k in (1, 2):
        run = rpx(f"eval depth --pred-dir memory://{prefix}/pred --gt-dir memory://{prefix}/gt "
                  f"--shard {k}/2 -o memory://{prefix}/parts/p{k}.json")
        assert run.exit_code == 0, run.stderr
    run = rpx(["merge", f"memory://{prefix}/parts/p*.json"])
    assert run.exit_code == 0, run.stderr
    same_report(run.json, want, {f"memory://{prefix}": str(local)})


def test_listing_pairs_like_a_folder_walk(tmp_path: Path) -> None:
    for rel in ("a.npy", "sub/b.NPY", "sub/.hidden.npy", ".git/c.npy", "d.txt", "e.png",
                "deep/er/f.npy"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"")
    suffixes = (".npy", ".png")
    assert list_stems(f"file://{tmp_path}", suffixes) == list_stems(str(tmp_path), suffixes)
    (tmp_path / "a.png").write_bytes(b"")
    for root in (str(tmp_path), f"file://{tmp_path}"):
        with pytest.raises(InputError, match="two files have the stem 'a'"):
            list_stems(root, suffixes)


def test_a_local_run_never_imports_fsspec(tmp_path: Path) -> None:
    local = FIXTURES / "depth" / "indoor"
    code = (
        "import sys; from rpx_cli.cli.main import cli\n"
        f"cli(['eval', 'depth', '--pred-dir', '{local}/pred', '--gt-dir', '{local}/gt', "
        f"'--jobs', '1', '-o', '{tmp_path}/r.json', '-q'], standalone_mode=False)\n"
        f"cli(['merge', '--help'], standalone_mode=False)\n"
        "print('loaded:' + ','.join(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'fsspec', 's3fs', 'botocore', 'aiobotocore', 'gcsfs', 'distributed', 'dask'})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.strip().splitlines()[-1] == "loaded:"
    assert (tmp_path / "r.json").is_file()


def test_missing_extra_is_one_line(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)  # import fsspec raises ImportError
    with pytest.raises(Exception) as caught:
        remote.read("s3://bucket/key")
    assert str(caught.value) == ("s3://bucket/key: reading or writing URLs needs the remote "
                                 "extra: pip install 'rpx-eval[remote]'")


@pytest.mark.parametrize("key", ["pred/sub//frame002.npy", "pred/../frame002.npy",
                                 "pred/./frame002.npy"])
def test_a_key_no_file_path_can_be_is_an_error_not_skipped(rpx, s3, key: str) -> None:
    """Issue 31.5: an object whose key holds '//', '.' or '..' used to be left out of the
    evaluation without a word."""
    fs, bucket = s3
    local = FIXTURES / "depth" / "indoor"
    upload(fs, local, f"s3://{bucket}/d")
    fs.pipe_file(f"{bucket}/d/{key}", (local / "pred" / "frame001.npy").read_bytes())
    run = rpx(f"eval depth --pred-dir s3://{bucket}/d/pred --gt-dir s3://{bucket}/d/gt")
    if not fs.exists(f"{bucket}/d/{key}") or key not in [k.split("/d/", 1)[1] for k in
                                                         fs.find(f"{bucket}/d")]:
        pytest.skip(f"the store normalised the key {key!r}")
    assert run.exit_code == 1, run.stderr
    assert "its key has an empty ('//'), '.' or '..' segment" in run.stderr
