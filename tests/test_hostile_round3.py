"""Issue 31, resource bounds and hangs (items 7-12), each through the real CLI in a child
process under a memory limit and a timeout (``test_hostile``'s harness): what used to hang,
run for minutes or end in an internal error is an input error naming the file, or runs."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES
from test_hostile import leftovers, run_child

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


# --- 7. polygon repair is bounded ---------------------------------------------------------------


def _ring(n: int, seed: int, ordered: bool = False, swaps: int = 0) -> list[list[float]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    if not ordered:
        return (rng.random((n, 2)) * 100).round(3).tolist()
    angle = np.linspace(0, 2 * np.pi, n, endpoint=False)
    points = np.c_[np.cos(angle), np.sin(angle)] * 50 + 50
    for at in rng.choice(n - 1, swaps, replace=False):
        points[[at, at + 1]] = points[[at + 1, at]]
    return points.tolist()


@pytest.mark.parametrize("n,words", [
    (500, "cross themselves more than 1,000 times"),  # used to run for minutes
    (20_000, "too tangled to repair"),  # used to end in an internal error
    (150_000, "more than 100,000"),
])
def test_a_tangled_or_huge_polygon_is_refused_at_once(tmp_path: Path, n: int, words: str) -> None:
    square = [[0, 0], [50, 0], [50, 50], [0, 50]]
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    (tmp_path / "gt" / "a.json").write_text(json.dumps([{"polygons": [square], "label": "x"}]))
    (tmp_path / "pred" / "a.json").write_text(json.dumps(
        [{"polygons": [square], "label": "x", "score": 0.5},
         {"polygons": [_ring(n, 0, ordered=n > 100_000)], "label": "x", "score": 0.9}]))
    child = run_child(["eval", "detection", "--geometry", "polygon", "--pred-dir", "pred",
                       "--gt-dir", "gt"], tmp_path, timeout=60)
    _one_line_error(child, "pred/a.json", "object 1", words)


def test_real_annotation_polygons_are_repaired_as_before(tmp_path: Path) -> None:
    """2,000 ordered vertices with a few hundred crossings (worse than any annotation tool
    leaves) stay under the bounds and are repaired as shapely's make_valid does."""
    shapely = pytest.importorskip("shapely")
    ring = _ring(2000, 1, ordered=True, swaps=300)
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    (tmp_path / "gt" / "a.json").write_text(json.dumps([{"polygons": [ring], "label": "x"}]))
    (tmp_path / "pred" / "a.json").write_text(json.dumps(
        [{"polygons": [ring], "label": "x", "score": 0.9}]))
    child = run_child(["eval", "detection", "--geometry", "polygon", "--pred-dir", "pred",
                       "--gt-dir", "gt", "-o", "r.json"], tmp_path, timeout=60)
    assert child.returncode == 0, child.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["rows"][0]["n_repaired"] == 2 and report["rows"][0]["tp"] == 1
    assert shapely.make_valid(shapely.Polygon(ring)).area > 0


def test_self_intersections_equal_shapelys_noding() -> None:
    shapely = pytest.importorskip("shapely")
    import numpy as np

    from rpx_cli.ops.polygons import self_intersections

    for seed in range(20):
        n = 5 + seed * 4
        points = np.asarray(_ring(n, seed))
        closed = np.vstack([points, points[:1]])
        noded = shapely.node(shapely.LinearRing(points))
        expected = (shapely.get_num_coordinates(noded) - shapely.get_num_geometries(noded) - n) // 2
        assert self_intersections(closed, np.array([0, n + 1]), 10**9) == expected, seed
        assert self_intersections(closed, np.array([0, n + 1]), 3) == min(expected, 4)


# --- 8. class counts never drive a dense C x C allocation past the bound -------------------------


def test_a_label_pair_with_65536_labels_is_refused(tmp_path: Path) -> None:
    """A 256 KB .label pair naming every uint16 label: a 65,536² confusion matrix (34 GB)."""
    import numpy as np

    labels = np.arange(65536, dtype=np.uint32)  # low 16 bits: every label once
    for side in ("pred", "gt"):
        (tmp_path / side).mkdir()
        labels.tofile(tmp_path / side / "000000.label")
    child = run_child(["eval", "segmentation3d", "--pred-dir", "pred", "--gt-dir", "gt"],
                      tmp_path, timeout=60)
    _one_line_error(child, "gt/000000.label", "65,536 distinct GT labels in one frame",
                    "at most 4,096 classes")


def test_num_classes_past_the_bound_is_a_usage_error(tmp_path: Path) -> None:
    import numpy as np

    for side in ("pred", "gt"):
        (tmp_path / side).mkdir()
        np.zeros(5, np.uint32).tofile(tmp_path / side / "a.label")
    child = run_child(["eval", "segmentation3d", "--pred-dir", "pred", "--gt-dir", "gt",
                       "--num-classes", "10000"], tmp_path, timeout=60)
    _one_line_error(child, "--num-classes", "4096", code=2)
    child = run_child(["eval", "segmentation3d", "--pred-dir", "pred", "--gt-dir", "gt",
                       "--num-classes", "4096"], tmp_path, timeout=60)
    assert child.returncode == 0, child.stderr


def test_segmentation_labels_of_all_frames_past_the_bound(tmp_path: Path) -> None:
    import numpy as np

    for side in ("pred", "gt"):
        (tmp_path / side).mkdir()
        for k in range(3):  # 2,000 labels a frame, 6,000 over the run
            np.save(tmp_path / side / f"f{k}.npy",
                    np.arange(2000 * k, 2000 * (k + 1), dtype=np.int64).reshape(40, 50))
    child = run_child(["eval", "segmentation", "--pred-dir", "pred", "--gt-dir", "gt"],
                      tmp_path, timeout=60)
    _one_line_error(child, "6,000 classes, more than 4,096")


def test_classification_csvs_naming_20000_classes(tmp_path: Path) -> None:
    rows = "".join(f"s{i},c{i}\n" for i in range(20000))
    for side in ("gt", "pred"):
        (tmp_path / f"{side}.csv").write_text("stem,label\n" + rows)
    child = run_child(["eval", "classification", "--gt-file", "gt.csv", "--pred-file",
                       "pred.csv"], tmp_path, timeout=60)
    _one_line_error(child, "gt.csv", "20,000 classes, more than 4,096")
    child = run_child(["eval", "classification", "--gt-file", "gt.csv", "--pred-file",
                       "pred.csv", "--ece-bins", "9223372036854775807"], tmp_path, timeout=60)
    _one_line_error(child, "--ece-bins", "10000", code=2)


# --- 11. --scheduler: a service that is not a scheduler, malformed addresses ----------------------


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:notaport", "ftp://127.0.0.1:21", ":::::",
                                     "tcp://[::1", "tcp://127.0.0.1:99999"])
def test_a_malformed_scheduler_address_is_a_usage_error(tmp_path: Path, address: str) -> None:
    pytest.importorskip("distributed")
    child = run_child(["eval", "depth", "--pred-dir", str(DEPTH / "pred"), "--gt-dir",
                       str(DEPTH / "gt"), "--executor", "dask", "--scheduler", address],
                      tmp_path, timeout=60)
    _one_line_error(child, "is not a Dask scheduler address", code=2)
    assert "Exception ignored" not in child.stderr


def test_a_tcp_service_that_is_not_a_scheduler_is_an_error_not_a_hang(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It accepts the connection and never answers Dask's registration: distributed waits
    without a bound; rpx gives up after the connect timeout and a margin."""
    import socket
    import threading

    pytest.importorskip("distributed")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", "2")
    try:  # the child's timeout (60 s) is the hang this test would meet
        child = run_child(["eval", "depth", "--pred-dir", str(DEPTH / "pred"), "--gt-dir",
                           str(DEPTH / "gt"), "--executor", "dask", "--scheduler",
                           f"tcp://127.0.0.1:{server.getsockname()[1]}"], tmp_path, timeout=60)
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        server.close()
    _one_line_error(child, "did not answer as a Dask scheduler within 7 s")


# --- 12. signals to the process group; a signal after the report was written ---------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_to_the_process_group_prints_no_traceback(tmp_path: Path, signame: str) -> None:
    """A CI runner cancelling a job signals the whole group: rpx and its workers, at any
    moment — as the workers are forked (a child still running the parent's handlers), while
    they run, as they die (the pool's manager thread). Every moment ends in rpx's one line
    and 128 + the signal, never a traceback."""
    import signal
    import subprocess
    import time

    import numpy as np
    from test_hostile import ROOT, _children

    signum = getattr(signal, signame)
    for side in ("pred", "gt"):
        (tmp_path / side).mkdir()
        for k in range(200):
            np.save(tmp_path / side / f"{k:03d}.npy", np.full((300, 300), 2.0 + k, np.float32))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    stopped = 0
    for delay in (0.0, 0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3):
        child = subprocess.Popen(
            [sys.executable, "-m", "rpx_cli", "eval", "depth", "--pred-dir", "pred", "--gt-dir",
             "gt", "--jobs", "2", "--no-digest-cache", "-o", "r.json"], cwd=tmp_path, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + 30
        while not _children(child.pid) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)  # until the first worker is forked
        time.sleep(delay)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signum)
        _, stderr = child.communicate(timeout=60)
        text = stderr.decode()
        assert "Traceback" not in text and "Exception ignored" not in text, (delay, text)
        if child.returncode == 128 + signum:
            assert text.strip().splitlines()[-1].startswith("rpx: "), (delay, text)
            stopped += 1
        else:  # finished first (exit 0), or signalled just after its handlers were restored
            assert child.returncode in (0, -signum) and "pairs" in text, (delay, text)
        (tmp_path / "r.json").unlink(missing_ok=True)
    assert stopped >= 4, stopped


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_handled_inside_a_finaliser_still_stops_the_run(tmp_path: Path, signame: str,
                                                                   when: str) -> None:
    """Python runs a signal's handler at the next bytecode it can, which may be inside a
    finaliser or a weakref callback (seen: an import lock's). An exception raised there is
    "ignored" by Python (a traceback on stderr) and the run went on. The stop must still
    happen: rpx's one line, 128 + the signal, no traceback; no report if it came before the
    report was written, and a line saying the report was written if it came after."""
    import signal
    import subprocess

    from helpers import ROOT

    signum = getattr(signal, signame)
    script = f"""
import os, signal, sys
import rpx_cli.cli.output as output

class Late:
    def __del__(self):
        os.kill(os.getpid(), {int(signum)})
        for _ in range(100000):  # the handler runs here, inside the finaliser
            pass

original = output.finish
def finish(*args, **kwargs):
    if {when!r} == "before":
        Late()  # dropped at once: its finaliser runs now
    result = original(*args, **kwargs)
    if {when!r} == "after":
        Late()
    return result
output.finish = finish
sys.argv = ["rpx", "eval", "depth", "--pred-dir", {str(DEPTH / "pred")!r}, "--gt-dir",
            {str(DEPTH / "gt")!r}, "--no-digest-cache", "-o", "r.json"]
from rpx_cli.__main__ import main
main()
"""
    child = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "Traceback" not in child.stderr and "Exception ignored" not in child.stderr, \
        child.stderr
    assert child.returncode == 128 + signum, child.stderr
    what = "interrupted" if signame == "SIGINT" else f"stopped by {signame}"
    lines = child.stderr.strip().splitlines()
    if when == "before":
        assert lines == [f"rpx: {what}; no report written"]
        assert not (tmp_path / "r.json").exists()
    else:
        assert lines[0].startswith("depth: 4 pairs") and len(lines) == 2, lines
        assert lines[1] == f"rpx: {what} after the report was written to r.json"
        assert json.loads((tmp_path / "r.json").read_text())["n_pairs"] == 4
    assert leftovers(tmp_path) == []


def test_a_signal_while_the_html_page_renders_says_the_report_was_written(
        rpx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report is complete and in place when --html starts: a stop signal then must not
    say "no report written"."""
    import signal

    import rpx_cli.report.html
    from rpx_cli.errors import Interrupted

    def stopped(*args, **kwargs):
        raise Interrupted(signal.SIGTERM)  # what the CLI's handler raises

    monkeypatch.setattr(rpx_cli.report.html, "render_html", stopped)
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    run = rpx(["eval", "depth", "--pred-dir", str(DEPTH / "pred"), "--gt-dir", str(DEPTH / "gt"),
               "-o", str(out), "--html", str(page)])
    assert run.exit_code == 143, run.stderr
    assert json.loads(out.read_text())["n_pairs"] == 4 and not page.exists()
    assert f"stopped by SIGTERM after the report was written to {out}; the HTML page {page} " \
           "was not written" in run.stderr
    assert "no report written" not in run.stderr
