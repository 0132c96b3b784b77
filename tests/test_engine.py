"""The engine: order, error collection, worker crashes, digests, for any number of jobs."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rpx_cli.engine.pairs import run_pairs
from rpx_cli.errors import InputError, WorkerCrashed
from rpx_cli.io.discover import Pair
from rpx_cli.tasks.base import MetricInfo, Sample, Task
from rpx_cli.tasks.stats import Stat


class Toy(Task):
    """Reads a text file holding an integer; the metric is pred - gt."""

    name = "toy"
    report_schema = "rpx.eval"
    suffixes = (".txt",)
    metrics = {"diff": MetricInfo("lower", "pred - gt")}
    stats = (Stat("diff"),)

    def read(self, path, buffer, params, warn, *, role="gt"):
        text = bytes(buffer.read(path)).decode()
        if text == "crash":
            os._exit(3)  # a worker dying without a word (OOM killer)
        if text == "bug":
            raise ZeroDivisionError("a bug, not a data problem")
        if not text.strip().lstrip("-").isdigit():
            raise InputError(f"not an integer: {text!r}", path=path)
        if int(text) < 0:
            warn("negative", path)
        return int(text)

    def empty_prediction(self, gt, params):
        return 0

    def evaluate(self, pred, gt, params, *, pred_path, gt_path):
        return Sample({"diff": pred - gt})


def make_pairs(tmp_path: Path, values: dict[str, tuple[str, str]]) -> list[Pair]:
    pairs = []
    for stem, (pred, gt) in sorted(values.items()):
        for role, text in (("pred", pred), ("gt", gt)):
            (tmp_path / role).mkdir(exist_ok=True)
            (tmp_path / role / f"{stem}.txt").write_text(text)
        pairs.append(Pair(stem, str(tmp_path / "pred"), f"{stem}.txt", str(tmp_path / "gt"),
                          f"{stem}.txt"))
    return pairs


@pytest.mark.parametrize("jobs", [1, 2, 4])
def test_rows_errors_and_digests_in_stem_order(tmp_path: Path, jobs: int) -> None:
    values = {f"s{i:03d}": (str(i * 2), str(i)) for i in range(60)}
    values["s007"] = ("oops", "7")
    values["s031"] = ("-31", "31")
    values["s040"] = ("40", "nope")
    pairs = make_pairs(tmp_path, values)
    result = run_pairs(Toy(), pairs, {}, jobs=jobs)
    # an unreadable prediction (s007) is scored as the empty one (0); an unreadable GT
    # (s040) drops its pair
    assert [row["stem"] for row in result.rows] == [p.stem for p in pairs if p.stem != "s040"]
    assert [row["diff"] for row in result.rows][:3] == [0, 1, 2]
    assert result.rows[7]["diff"] == 0 - 7 and result.rows[7]["pred_path"] is None
    assert [(e.stem, os.path.relpath(e.path, tmp_path), e.side) for e in result.errors] == [
        ("s007", os.path.join("pred", "s007.txt"), "pred"),
        ("s040", os.path.join("gt", "s040.txt"), "gt")]
    assert result.warnings == {"negative": [str(tmp_path / "pred" / "s031.txt")]}
    assert result.digests["gt"]["s010.txt"] == hashlib.sha256(b"10").digest()
    assert len(result.stats) == 59 and result.stats["diff"][:3].tolist() == [0, 1, 2]
    assert "s007.txt" not in result.digests["pred"] and len(result.digests["gt"]) == 59


@pytest.mark.parametrize("probe_seconds", [0.0, 1e-4, 10.0])
def test_chosen_processes_give_the_same_result(tmp_path: Path, monkeypatch,
                                               probe_seconds: float) -> None:
    """jobs=None: some pairs run here while timed, then a pool (forced here) takes the rest;
    rows, errors, warnings and digests come back in stem order exactly as with one process."""
    from rpx_cli.engine import workers

    values = {f"s{i:03d}": (str(i * 2), str(i)) for i in range(40)}
    values["s007"], values["s031"] = ("oops", "7"), ("-31", "31")
    pairs = make_pairs(tmp_path, values)
    want = run_pairs(Toy(), pairs, {}, jobs=1)
    from rpx_cli.engine import jobs

    monkeypatch.setattr(jobs, "PROBE_SECONDS", probe_seconds)
    monkeypatch.setattr(workers.Probe, "choose", lambda self, remaining, cpus: 2)
    got = run_pairs(Toy(), pairs, {}, jobs=None)
    assert got.rows == want.rows and got.errors == want.errors and got.warnings == want.warnings
    assert got.digests == want.digests and got.stats["diff"].tolist() == want.stats["diff"].tolist()
    assert got.execution["jobs"] == 2 and got.execution["chosen_by"] == "auto"
    assert got.execution["probed"] == (40 if probe_seconds == 10.0 else got.execution["probed"])


def test_heavy_pairs_start_their_workers_at_once(tmp_path: Path, monkeypatch) -> None:
    """A task whose pairs are heavy (sequences, large images) skips the timed first pairs:
    as many workers as CPUs stand idle, the same result as one process."""
    from rpx_cli.engine import workers

    class Heavy(Toy):
        heavy_pairs = True

    pairs = make_pairs(tmp_path, {f"s{i}": (str(i), "1") for i in range(5)})
    want = run_pairs(Toy(), pairs, {}, jobs=1)
    monkeypatch.setattr(workers, "idle_now", lambda window=0.02: 2.0)
    monkeypatch.setattr(workers, "default_jobs", lambda: 2)
    got = run_pairs(Heavy(), pairs, {}, jobs=None)
    assert got.rows == want.rows and got.stats["diff"].tolist() == want.stats["diff"].tolist()
    assert got.execution == {"jobs": 2, "chosen_by": "auto", "heavy_pairs": True, "free_cpus": 2.0}
    monkeypatch.setattr(workers, "idle_now", lambda window=0.02: 0.6)  # a busy machine
    assert run_pairs(Heavy(), pairs, {}, jobs=None).execution["jobs"] == 1


def test_free_cpus_are_read_since_start_up_without_sleeping(monkeypatch) -> None:
    """The heavy path's free CPUs: idle jiffies since the engine was imported (40 ms to
    1 s ago) plus the CPUs rpx's own threads used (at least one), with no sleep; a reading
    too old or too recent is replaced by one over a short sleep (then idle CPUs only: rpx
    sleeps meanwhile)."""
    import time

    from rpx_cli.engine import jobs as workers

    monkeypatch.setattr(workers, "default_jobs", lambda: 4)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 4)
    readings = iter([(130, 200)])  # since (100, 100): 30 of 100 jiffies idle = 1.2 CPUs
    monkeypatch.setattr(workers, "_cpu_times", lambda: next(readings))
    now = time.process_time()
    monkeypatch.setattr(workers, "_IMPORTED", (time.monotonic() - 0.1, (100, 100), now))
    monkeypatch.setattr(time, "sleep", lambda s: pytest.fail("slept"))
    monkeypatch.setattr(time, "process_time", lambda: now + 0.05)  # rpx: half a CPU
    assert workers.idle_now() == pytest.approx(2.2, rel=0.1)  # at least its own one
    readings = iter([(130, 200)])
    monkeypatch.setattr(time, "process_time", lambda: now + 0.18)  # main + digest threads
    assert workers.idle_now() == pytest.approx(3.0, rel=0.1)
    monkeypatch.undo()
    monkeypatch.setattr(workers, "default_jobs", lambda: 4)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 4)
    slept = []
    monkeypatch.setattr(time, "sleep", slept.append)
    readings = iter([(0, 0), (50, 100)])  # over the sleep: half of 4 CPUs idle
    monkeypatch.setattr(workers, "_cpu_times", lambda: next(readings))
    monkeypatch.setattr(workers, "_IMPORTED", (time.monotonic() - 5.0, (100, 100), 0.0))
    assert workers.idle_now() == pytest.approx(2.0) and slept == [0.02]


def test_the_cost_model_chooses_processes_only_when_they_pay(monkeypatch) -> None:
    from rpx_cli.engine import jobs as workers

    def probe(work_ms: float, consumer_ms: float, transfer_ms: float) -> workers.Probe:
        made = workers.Probe()
        made.done = made.sampled = 10
        made.work, made.consumer = 10 * work_ms / 1e3, 10 * consumer_ms / 1e3
        made.send = made.receive = 10 * transfer_ms / 2e3
        return made

    monkeypatch.setattr(workers, "_load_average", lambda: 0.0)
    assert probe(5.0, 0.01, 0.05).choose(1000, 2) == 2  # heavy pairs, light results
    assert probe(5.0, 0.01, 0.05).choose(1000, 8) == 8
    assert probe(0.02, 0.01, 0.05).choose(1000, 2) == 1  # sending costs more than working
    assert probe(0.2, 1.0, 0.05).choose(1000, 2) == 1  # this process is the bottleneck
    assert probe(5.0, 0.01, 0.05).choose(1, 2) == 1
    assert probe(5.0, 0.01, 0.05).choose(1000, 1) == 1
    monkeypatch.setattr(workers, "_load_average", lambda: 1.8)  # a busy machine
    assert probe(5.0, 0.01, 0.05).choose(1000, 2) == 1
    # the model's time for J workers: (work + send) / J, at most the free CPUs
    monkeypatch.setattr(workers, "_load_average", lambda: 0.0)
    made = probe(4.0, 0.0, 0.0)
    assert made.choose(1000, 4) == 4
    assert made.figures()["unit_ms"] == 4.0 and made.figures()["load_average"] == 0.0
    # where /proc/stat tells: this process's CPU and the CPUs idle while the probe ran
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 2)
    assert workers._idle_cpus((100, 1000), (150, 1100)) == 1.0
    assert workers._idle_cpus((100, 1000), (100, 1002)) is None  # too short to tell
    busy = probe(5.0, 0.01, 0.05)
    busy._idle_start, busy._idle_end = (100, 1000), (105, 1100)  # the other CPU was busy
    assert busy.choose(1000, 2) == 1 and busy.figures()["free_cpus"] == 1.1
    quiet = probe(5.0, 0.01, 0.05)
    quiet._idle_start, quiet._idle_end = (100, 1000), (150, 1100)
    monkeypatch.setattr(workers, "_load_average", lambda: 1.9)  # the load of earlier runs
    assert quiet.choose(1000, 2) == 2


def test_source_date_epoch_leaves_the_load_dependent_choice_out(rpx, monkeypatch) -> None:
    from helpers import FIXTURES

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    root = FIXTURES / "depth" / "indoor"
    argv = ["eval", "depth", "--pred-dir", str(root / "pred"), "--gt-dir", str(root / "gt")]
    from click.testing import CliRunner

    from rpx_cli.cli.main import cli

    done = CliRunner().invoke(cli, argv, catch_exceptions=False)  # no --jobs: chosen
    import json

    executor = json.loads(done.stdout)["run_provenance"]["executor"]
    assert executor == {"name": "local", "chosen_by": "auto"}


def test_progress_is_called_once_per_pair(tmp_path: Path) -> None:
    pairs = make_pairs(tmp_path, {f"{i}": ("1", "1") for i in range(7)})
    ticks: list[int] = []
    run_pairs(Toy(), pairs, {}, jobs=2, progress=ticks.append)
    assert ticks == [1] * 7


def test_a_dead_worker_is_an_error_not_a_hang(tmp_path: Path) -> None:
    pairs = make_pairs(tmp_path, {**{f"{i:02d}": ("1", "1") for i in range(10)}, "05": ("crash", "1")})
    with pytest.raises(WorkerCrashed, match="worker process died"):
        run_pairs(Toy(), pairs, {}, jobs=2)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG)")
def test_workers_end_when_rpx_is_killed(tmp_path: Path) -> None:
    """A parent killed outright (SIGKILL: no cleanup runs) takes its workers with it."""
    script = textwrap.dedent(f"""
        import os, time
        from rpx_cli.engine import run_units

        def job(worker, unit):
            open(os.path.join({str(tmp_path)!r}, f"worker-{{os.getpid()}}"), "w").close()
            time.sleep(60)

        list(run_units(job, list(range(8)), jobs=2))
    """)
    parent = subprocess.Popen([sys.executable, "-c", script])
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("worker-*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = [int(p.name.split("-")[1]) for p in tmp_path.glob("worker-*")]
        assert len(workers) == 2
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in workers)
    finally:
        parent.kill()
        for pid in workers:  # only if the test failed
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_bug_is_not_disguised_as_a_data_error(tmp_path: Path, jobs: int) -> None:
    pairs = make_pairs(tmp_path, {"a": ("1", "1"), "b": ("bug", "1")})
    with pytest.raises(RuntimeError, match="unexpected error while evaluating 'b'"):
        run_pairs(Toy(), pairs, {}, jobs=jobs)
