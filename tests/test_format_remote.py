"""Labelling formats in object storage (``rpx[remote]``) against moto's S3 server on
127.0.0.1: ``--pred-format``/``--gt-format auto`` sniffs ``s3://`` folders (and a set's file
given as a URL) as it sniffs local ones, and the report equals the local run's."""

from __future__ import annotations

import json
import uuid

import pytest
from helpers import parse_report, without_provenance
from s3_server import filesystem, s3_server, upload

from rpx_cli.io import remote
from tests import format_data as fd


@pytest.fixture(scope="module")
def server():
    with s3_server() as running:
        yield running


@pytest.fixture
def s3(server, monkeypatch: pytest.MonkeyPatch):
    import s3fs

    for key, value in server.environ().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    s3fs.S3FileSystem.clear_instance_cache()
    fs = filesystem(server.environ())
    bucket = f"rpx-{uuid.uuid4().hex[:12]}"
    fs.mkdir(bucket)
    yield fs, bucket
    s3fs.S3FileSystem.clear_instance_cache()
    remote.configure(None)


def _same(rpx, local_args: list, remote_args: list, replace: dict[str, str]) -> dict:
    want = rpx(["eval", "detection", *map(str, local_args)])
    assert want.exit_code == 0, want.stderr
    got = rpx(["eval", "detection", *map(str, remote_args)])
    assert got.exit_code == 0, got.stderr
    report = parse_report(got.stdout.encode())
    text = json.dumps(without_provenance(report), sort_keys=True)
    for url, path in replace.items():
        text = text.replace(url, path)
    assert json.loads(text) == without_provenance(json.loads(want.stdout))
    return report


def test_auto_sniffs_s3_folders(rpx, s3, tmp_path):
    """YOLO predictions against VOC GT (difficult), both in a bucket, formats left to auto."""
    fs, bucket = s3
    images = fd.dataset(61, difficult=True)
    local = tmp_path / "local"
    fd.write_yolo(images, local / "pred", "pred")
    fd.write_voc(images, local / "gt", "gt")
    fd.write_data_yaml(local / "data.yaml")
    upload(fs, local, f"s3://{bucket}/set")
    common = ["--data-yaml", local / "data.yaml", "--image-size", "512,512"]
    report = _same(rpx, ["--pred-dir", local / "pred", "--gt-dir", local / "gt", *common],
                   ["--pred-dir", f"s3://{bucket}/set/pred", "--gt-dir", f"s3://{bucket}/set/gt", *common],
                   {f"s3://{bucket}/set": str(local)})
    assert report["params"]["pred_format"] == "yolo" and report["params"]["gt_format"] == "voc"
    assert report["run_provenance"]["inputs"]["gt_dir"]["n_files"] == len(images)


def test_sets_in_a_bucket(rpx, s3, tmp_path):
    """A CVAT XML given as an object's URL and a folder of VOC results files in a bucket."""
    fs, bucket = s3
    images = fd.dataset(62)
    local = tmp_path / "local"
    fd.write_cvat(images, local / "annotations.xml", "gt")
    fd.write_voc_results(fd.by_class(images), local / "results")
    upload(fs, local, f"s3://{bucket}/set")
    report = _same(rpx, ["--pred-dir", local / "results", "--gt-dir", local / "annotations.xml"],
                   ["--pred-dir", f"s3://{bucket}/set/results", "--gt-dir",
                    f"s3://{bucket}/set/annotations.xml"], {f"s3://{bucket}/set": str(local)})
    assert report["params"]["pred_format"] == "voc" and report["params"]["gt_format"] == "cvat"
    inputs = report["run_provenance"]["inputs"]
    assert inputs["gt_dir"]["kind"] == "file" and inputs["pred_dir"]["n_files"] == len(fd.NAMES)
