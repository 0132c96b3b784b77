"""``--executor dask`` (``rpx[dask]``) on a real ``distributed.LocalCluster``: two worker
processes, started and stopped by this module. The report equals a local run's (only
``run_provenance`` differs) for every registered task's golden cases, alone and as
``--shard`` parts merged with parts run locally; a worker killed mid-run is Dask's to
retry and the report stays exact; an input error on a worker ends the run as a local one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from distributed import Client, LocalCluster, WorkerPlugin
from helpers import assert_matches_golden, command_of, golden_cases, without_provenance, write_npy

from rpx_cli.tasks import TASKS

# every golden case of a registered task that pairs folders (input files such as COCO JSON
# are read in one process: --executor dask refuses them, tested below; files that list the
# pairs of the folders, panoptic's, are read here and their pairs evaluated there)
CASES = [case for case in golden_cases() if case.parent.name in TASKS
         and (TASKS[case.parent.name].files_list_pairs
              or not {option.flag for option in TASKS[case.parent.name].file_inputs}
              & set(command_of(case)))]
IDS = [f"{case.parent.name}/{case.name}" for case in CASES]


@pytest.fixture(scope="module")
def cluster():
    """Two single-threaded worker processes on 127.0.0.1; yields the scheduler's address."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      # ":0", not None: None still binds the scheduler's HTTP server to
                      # 8787, and with that port taken (a dashboard of the user's, another
                      # test run) distributed warns, which this suite makes an error
                      dashboard_address=":0") as running, Client(running) as client:
        client.wait_for_workers(2, timeout=60)
        yield running.scheduler_address


def dask(address: str) -> list[str]:
    return ["--executor", "dask", "--scheduler", address]


def test_every_registered_task_has_a_case_here() -> None:
    assert {case.parent.name for case in CASES} == set(TASKS)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_dask_equals_local(case: Path, rpx, cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(case)  # relative folders: the workers read them from here too
    local = rpx([*command_of(case), "--executor", "local"])
    assert local.exit_code == 0, local.stderr
    run = rpx([*command_of(case), *dask(cluster)])
    assert run.exit_code == 0, run.stderr
    assert without_provenance(run.json) == without_provenance(local.json)
    assert_matches_golden(without_provenance(run.json),
                          json.loads((case / "expected.json").read_text()))
    executor = run.json["run_provenance"]["executor"]
    assert executor["name"] == "dask" and executor["scheduler"] == cluster
    assert executor["workers"] == 2 and executor["batches"] >= 1
    assert local.json["run_provenance"]["executor"]["name"] == "local"
    for name, entry in local.json["run_provenance"]["inputs"].items():  # digests as read here
        assert run.json["run_provenance"]["inputs"][name]["sha256"] == entry["sha256"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_dask_and_local_shards_merge_to_the_single_run(case: Path, rpx, cluster: str,
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Three parts: two on the cluster, one locally; merged in both orders."""
    monkeypatch.chdir(case)
    single = rpx([*command_of(case), "--executor", "local"])
    assert single.exit_code == 0, single.stderr
    expected = without_provenance(single.json)  # exactly, on this machine
    assert_matches_golden(expected, json.loads((case / "expected.json").read_text()))
    parts = []
    for k, where in ((1, dask(cluster)), (2, ["--executor", "local"]), (3, dask(cluster))):
        parts.append(str(tmp_path / f"part{k}.json"))
        run = rpx([*command_of(case), "--shard", f"{k}/3", *where, "-o", parts[-1]])
        assert run.exit_code == 0, run.stderr
    for order in (parts, parts[::-1]):
        merged = rpx(["merge", *order])
        assert merged.exit_code == 0, merged.stderr
        assert without_provenance(merged.json) == expected


def test_the_scheduler_from_the_environment(rpx, cluster: str, monkeypatch) -> None:
    case = Path(__file__).parent.parent / "fixtures" / "depth" / "indoor"
    monkeypatch.chdir(case)
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster)
    run = rpx([*command_of(case), "--executor", "dask"])
    assert run.exit_code == 0, run.stderr
    assert run.json["run_provenance"]["executor"]["scheduler"] == cluster
    assert_matches_golden(without_provenance(run.json),
                          json.loads((case / "expected.json").read_text()))
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    usage = rpx([*command_of(case), "--executor", "dask"])
    assert usage.exit_code == 2 and "--scheduler" in usage.stderr


def test_input_files_are_refused(rpx, cluster: str) -> None:
    coco = Path(__file__).parent.parent / "fixtures" / "detection" / "coco"
    run = rpx(["eval", "detection", "--coco-gt", coco / "instances.json", "--coco-dt",
               coco / "results.json", *dask(cluster)])
    assert run.exit_code == 2 and "--executor dask" in run.stderr


def depth_folder(root: Path, n: int) -> Path:
    rng = np.random.default_rng(19)
    for i in range(n):
        gt = rng.uniform(0.5, 9.0, (48, 64)).astype(np.float32)
        write_npy(root / "gt" / f"f{i:03d}.npy", gt)
        write_npy(root / "pred" / f"f{i:03d}.npy", gt * rng.uniform(0.9, 1.1, gt.shape))
    return root


def test_an_input_error_on_a_worker_is_reported_like_a_local_one(rpx, cluster: str,
                                                                 tmp_path: Path) -> None:
    root = depth_folder(tmp_path / "d", 12)
    (root / "pred" / "f007.npy").write_bytes(b"not an npy file")
    flags = f"eval depth --pred-dir {root}/pred --gt-dir {root}/gt --max-depth 10"
    out = tmp_path / "r.json"
    local = rpx(f"{flags} --executor local -o {out}")
    run = rpx([*f"{flags} -o {out}".split(), *dask(cluster)])
    assert local.exit_code == run.exit_code == 1
    assert not out.exists() and run.stdout == ""
    assert run.stderr == local.stderr and f"{root}/pred/f007.npy" in run.stderr
    assert "Traceback" not in run.stderr
    skip_local = rpx(f"{flags} --on-error skip --executor local")
    skip = rpx([*f"{flags} --on-error skip".split(), *dask(cluster)])
    assert skip.exit_code == 0, skip.stderr
    assert without_provenance(skip.json) == without_provenance(skip_local.json)
    assert [error["stem"] for error in skip.json["errors"]] == ["f007"]


def test_an_unreachable_scheduler_is_one_line(rpx, tmp_path: Path) -> None:
    import socket

    import dask.config

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = depth_folder(tmp_path / "d", 2)
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):  # Dask's own setting
        run = rpx(["eval", "depth", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
                   "--executor", "dask", "--scheduler", f"tcp://127.0.0.1:{port}"])
    assert run.exit_code == 1 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"rpx: cannot reach the Dask scheduler at tcp://127.0.0.1:{port}"), run.stderr


class KillFirstBatch(WorkerPlugin):
    """Ends the worker process that starts the first rpx batch (``os._exit``: no clean-up,
    as the kernel's OOM killer would), once: a marker file says it happened."""

    name = "rpx-kill-first-batch"

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def transition(self, key, start, finish, **kwargs) -> None:
        name = key[0] if isinstance(key, tuple) else str(key)
        if finish == "executing" and "_run_batch" in name:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            os._exit(1)


def test_a_worker_killed_mid_run_gives_the_exact_report(rpx, cluster: str,
                                                        tmp_path: Path) -> None:
    root = depth_folder(tmp_path / "d", 40)
    flags = (f"eval depth --pred-dir {root}/pred --gt-dir {root}/gt --max-depth 10 "
             "--range 0:3 --range 3:").split()
    local = rpx([*flags, "--executor", "local", "--jobs", "2"])
    assert local.exit_code == 0, local.stderr
    marker = tmp_path / "killed"
    with Client(cluster) as client:
        pids = set(client.run(os.getpid).values())
        client.register_plugin(KillFirstBatch(str(marker)))
        try:
            run = rpx([*flags, *dask(cluster)])
        finally:
            client.unregister_worker_plugin(KillFirstBatch.name)
            client.wait_for_workers(2, timeout=60)  # the nanny starts a new worker
        assert marker.is_file(), "no worker was killed"
        assert int(marker.read_text()) in pids  # one of the cluster's workers died
        assert int(marker.read_text()) not in set(client.run(os.getpid).values())
    assert run.exit_code == 0, run.stderr
    assert run.json["run_provenance"]["executor"]["batches"] > 1
    assert without_provenance(run.json) == without_provenance(local.json)


def test_workers_read_a_bucket_with_the_runs_storage_options(rpx, cluster: str,
                                                             monkeypatch) -> None:
    """The workers were started without any AWS variable: the run's --storage-options
    (credentials, endpoint) travel with each batch, and stay out of every output."""
    import s3fs
    from s3_server import CREDENTIALS, SECRET_KEY, filesystem, s3_server, upload

    from rpx_cli.io import remote

    local = Path(__file__).parent.parent / "fixtures" / "detection" / "shelf"
    with s3_server() as server:
        for key, value in server.environ().items():  # for the upload only
            monkeypatch.setenv(key, value)
        fs = filesystem(server.environ())
        fs.mkdir("rpx-dask")
        upload(fs, local, "s3://rpx-dask/det")
        for key in server.environ():
            monkeypatch.delenv(key)
        s3fs.S3FileSystem.clear_instance_cache()
        options = json.dumps({"key": CREDENTIALS[0], "secret": SECRET_KEY, "token": CREDENTIALS[2],
                              "client_kwargs": {"endpoint_url": server.endpoint,
                                                "region_name": "us-east-1"}})
        try:
            run = rpx(["eval", "detection", "--pred-dir", "s3://rpx-dask/det/pred", "--gt-dir",
                       "s3://rpx-dask/det/gt", "--conf-threshold", "0.4", "--storage-options",
                       options, *dask(cluster)])
        finally:
            remote.configure(None)
            s3fs.S3FileSystem.clear_instance_cache()
    assert run.exit_code == 0, run.stderr
    got = json.dumps(without_provenance(run.json)).replace("s3://rpx-dask/det/", "")
    assert_matches_golden(json.loads(got), json.loads((local / "expected.json").read_text()))
    assert run.json["run_provenance"]["executor"]["name"] == "dask"
    assert run.json["run_provenance"]["inputs"]["gt_dir"]["etags"]
    for secret in CREDENTIALS:
        assert secret not in run.stdout and secret not in run.stderr


def test_progress_moves_as_batches_complete(cluster: str, tmp_path: Path) -> None:
    from rpx_cli.run.evaluate import default_params, run_evaluation
    from rpx_cli.run.invocation import ProgressHooks
    from rpx_cli.run.options import RunOptions

    class Recorder(ProgressHooks):
        def __init__(self) -> None:
            self.total, self.steps, self.stopped = 0, [], False

        def start(self, total: int):
            self.total = total
            return self.steps.append

        def stop(self) -> None:
            self.stopped = True

    root = depth_folder(tmp_path / "d", 40)
    hooks = Recorder()
    params = {**default_params("depth"), "max_depth": 10.0}
    evaluation = run_evaluation("depth", str(root / "pred"), str(root / "gt"), params,
                                RunOptions(executor="dask", scheduler=cluster), progress=hooks)
    batches = evaluation.report["run_provenance"]["executor"]["batches"]
    assert hooks.total == 40 and sum(hooks.steps) == 40 and hooks.stopped
    assert len(hooks.steps) == batches > 1  # one step per completed batch
