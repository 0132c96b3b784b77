"""Shared helpers for the benchmark scripts: timing in fresh processes, machine facts, the
read and provenance floors, and first runs / re-runs with the digest cache.

First run and re-run (the digest cache, `rpx_cli/io/digest_cache.py`):

- **first run**: an empty ``--digest-cache`` folder, so every input file is hashed;
- **re-run**: a warm cache (filled by an earlier run over the same ground truth) and new
  predictions: every prediction file is *renewed* before each re-run (its mtime and ctime
  set to now, :func:`renew`), which the cache cannot tell from a rewrite, so predictions
  are hashed again and only the ground truth's digests are reused — the normal case
  (the GT folder is fixed, the model changes).

The cache stores a digest only for a file unchanged for 2 s before the run started (the
racy rule), so :class:`DigestRuns` waits that margin out after data are generated and
checks, once before timing, that a re-run really reuses the digests it should.

Floors (one process, no rpx):

- **read floor**: every file read and decoded (``np.load``, Pillow, ``json.loads``);
- **provenance floor**: every file read once, sha256'd and decoded from the same bytes —
  what any tool that records SHA-256 provenance must at least do (``FLOOR --sha256``);
- **re-run provenance floor**: the same with only the prediction files hashed — the floor
  of a re-run whose ground-truth digests come from the cache.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Generated data (up to ~20 GB with saliency's 1,000 1080p pairs): outside the checkout,
# RPX_BENCH_DATA or /tmp/rpx-bench; delete it when done.
DATA = Path(os.environ.get("RPX_BENCH_DATA") or Path(tempfile.gettempdir()) / "rpx-bench")
RACY_MARGIN_S = 2.0  # rpx_cli.io.digest_cache.RACY_SECONDS


def rpx_command() -> list[str]:
    """How to run rpx, with its bytecode compiled first: an installed package has it, and
    with PYTHONDONTWRITEBYTECODE set (as on the team machine) every run would otherwise
    recompile rpx's modules (~70 ms)."""
    import compileall

    import rpx_cli

    compileall.compile_dir(str(Path(rpx_cli.__file__).parent), quiet=1)
    exe = shutil.which("rpx")
    return [exe] if exe else [sys.executable, "-m", "rpx_cli"]


def timed_run(argv: list[str], *, repeat: int = 1, env: dict | None = None) -> float:
    """Median wall time of ``argv`` run ``repeat`` times in fresh processes (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def timed_output(argv: list[str], *, repeat: int = 1) -> tuple[float, str]:
    """Median wall time of ``argv`` in fresh processes, and the stdout of the last run."""
    times, out = [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        out = done.stdout
    return statistics.median(times), out


@dataclass
class Timing:
    """Wall times of one command (seconds), in the order run, the CPU time (user + system,
    every process of the command) of each run, and its last stdout (when captured)."""

    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    stdout: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def spread(self) -> str:
        cpu = f", CPU {statistics.median(self.cpu):.2f}" if self.cpu else ""
        return f"{min(self.times):.2f}-{max(self.times):.2f}{cpu}"


def measure(commands: dict[str, Callable[[], list[str]]], *, repeat: int,
            capture: bool = False) -> dict[str, Timing]:
    """Time every command ``repeat`` times in fresh processes, round-robin (one of each per
    round, so a burst of load from other users hits all of them alike). Each entry is a
    callable returning the argv; it runs just before its timed run and may prepare the
    inputs (renew predictions, create an empty cache folder) outside the timing.
    ``capture`` keeps each command's last stdout."""
    out = {name: Timing() for name in commands}
    for _ in range(repeat):
        for name, prepare in commands.items():
            argv = prepare()
            before = _children_cpu()
            start = time.perf_counter()
            done = subprocess.run(argv, check=True, text=True,
                                  stdout=subprocess.PIPE if capture else subprocess.DEVNULL)
            out[name].times.append(time.perf_counter() - start)
            out[name].cpu.append(_children_cpu() - before)
            out[name].stdout = done.stdout or ""
    return out


def spread_line(timings: dict[str, Timing]) -> str:
    """One line: every command's fastest and slowest wall time and its median CPU time."""
    return "wall min-max s, median CPU s (all processes): " + "; ".join(
        f"{name} {timing.spread}" for name, timing in timings.items())


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}")


def load() -> str:
    """The load averages (1, 5, 15 min), as ``uptime`` prints them: how busy the shared
    machine was while a benchmark ran."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


# --- floors -------------------------------------------------------------------------------------

FLOOR = textwrap.dedent(
    """
    import hashlib, io, json, sys
    from pathlib import Path
    import numpy as np

    def npy(data):  # header parsed by numpy, the array a view of the bytes read
        stream = io.BytesIO(data)
        version = np.lib.format.read_magic(stream)
        header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                  else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = header(stream)
        array = np.frombuffer(data, dtype, offset=stream.tell())
        return array.reshape(shape, order="F" if fortran else "C")

    def image(data):
        from PIL import Image
        with Image.open(io.BytesIO(data)) as handle:
            return np.asarray(handle)

    def text(data):
        return np.loadtxt(io.BytesIO(data), delimiter=",", ndmin=2)

    DECODE = {".npy": npy, ".png": image, ".pgm": image, ".json": json.loads, ".txt": text}
    hashed, plain, target = [], [], None
    for arg in sys.argv[1:]:
        if arg in ("--sha256", "--plain"):
            target = hashed if arg == "--sha256" else plain
        else:
            target.append(arg)
    for folder, digest in [(f, True) for f in hashed] + [(f, False) for f in plain]:
        given = Path(folder)
        for path in [given] if given.is_file() else sorted(given.rglob("*")):
            decode = DECODE.get(path.suffix.lower())
            if decode is None:
                continue
            with open(path, "rb") as handle:
                data = handle.read()
            if digest:
                hashlib.sha256(data).digest()
            decode(data)
    """
)


NP_LOAD = textwrap.dedent(
    """
    import sys, numpy as np
    from pathlib import Path
    for d in sys.argv[1:]:
        for path in sorted(Path(d).rglob("*.npy")):
            np.load(path)
    """
)


def np_load_command(*folders: Path | str) -> list[str]:
    """The read floor of ``.npy`` data: a process that only ``np.load``s every file."""
    return [sys.executable, "-c", NP_LOAD, *map(str, folders)]


def floor_command(*, hashed: Iterable[Path | str] = (), plain: Iterable[Path | str] = ()) -> list[str]:
    """A process that reads every file of the folders once and decodes it (by suffix:
    ``.npy`` header + view, PNG/PGM through Pillow, ``.json``, ``.txt`` MOT rows), hashing
    (sha256) those of ``hashed``: the provenance floor when every input is hashed, the
    re-run's when only the predictions are, the read floor when none is."""
    argv = [sys.executable, "-c", FLOOR]
    if hashed:
        argv += ["--sha256", *map(str, hashed)]
    if plain:
        argv += ["--plain", *map(str, plain)]
    return argv


# --- first runs and re-runs ---------------------------------------------------------------------


def renew(folders: Iterable[Path | str]) -> int:
    """Make every file under ``folders`` (or given) look rewritten to rpx's digest cache (mtime and
    ctime now; the bytes and the page cache stay as they were): a model's new predictions.
    Returns the number of files."""
    count = 0
    for path in _files(folders):
        os.utime(path)
        count += 1
    return count


def _files(roots: Iterable[Path | str]) -> Iterable[Path]:
    """Every file under the folders given (a file given is itself)."""
    for root in map(Path, roots):
        if root.is_file():
            yield root
        else:
            yield from (path for path in root.rglob("*") if path.is_file())


def wait_out_racy_margin(folders: Iterable[Path | str]) -> None:
    """Sleep until every file under ``folders`` was last changed more than the digest
    cache's racy margin ago, so a run starting now may store their digests."""
    newest = 0.0
    for path in _files(folders):
        st = path.stat()
        newest = max(newest, st.st_mtime, st.st_ctime)
    wait = newest + RACY_MARGIN_S + 0.5 - time.time()
    if wait > 0:
        time.sleep(wait)


def provenance_digests(report_path: Path | str) -> dict[str, int]:
    return json.loads(Path(report_path).read_text())["run_provenance"]["digests"]


class DigestRuns:
    """Digest-cache folders for first runs and re-runs of one benchmark.

    ``first()`` and ``rerun()`` renew the predictions and return the ``--digest-cache``
    arguments: a new empty folder for a first run, the warm folder for a re-run. Call
    :meth:`warm` once (it waits out the racy margin, fills the warm folder with a run and
    checks that a re-run reuses exactly the ground truth's digests) before timing."""

    def __init__(self, name: str, *, predictions: Iterable[Path | str],
                 ground_truth: Iterable[Path | str]) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"caches-{name}-", dir=_data_dir()))
        self.predictions = [Path(p) for p in predictions]
        self.ground_truth = [Path(p) for p in ground_truth]
        self.warm_dir = self.root / "warm"
        self._cold = 0

    def first(self) -> list[str]:
        renew(self.predictions)
        self._cold += 1
        cold = self.root / f"cold{self._cold}"
        cold.mkdir()
        return ["--digest-cache", str(cold)]

    def rerun(self) -> list[str]:
        renew(self.predictions)
        return ["--digest-cache", str(self.warm_dir)]

    def warm(self, argv: list[str], *, expect_reused: int | None = None,
             at_least: bool = False) -> dict[str, dict[str, int]]:
        """Fill the warm cache with one run of ``argv`` (a command writing nothing else to
        ``-o``), then re-run once and return both runs' ``run_provenance.digests``; raises
        when the re-run does not reuse ``expect_reused`` digests (or more, ``at_least``:
        a file read twice counts twice)."""
        wait_out_racy_margin(self.ground_truth)
        report = self.root / "check.json"
        seen = {}
        for name in ("first", "rerun"):
            renew(self.predictions)
            subprocess.run([*argv, "--digest-cache", str(self.warm_dir), "-o", str(report)],
                           check=True, stdout=subprocess.DEVNULL)
            seen[name] = provenance_digests(report)
        report.unlink()
        reused = seen["rerun"]["reused"]
        if expect_reused is not None and not (reused >= expect_reused if at_least
                                              else reused == expect_reused):
            raise SystemExit(f"the re-run reused {seen['rerun']['reused']} digests, expected "
                             f"{expect_reused}: {seen}")
        return seen

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _data_dir() -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    return DATA


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


def verdict(value: float, target: float, *, at_most: bool) -> str:
    met = value <= target if at_most else value >= target
    return f"{'met' if met else 'MISSED'} ({'<=' if at_most else '>='} {target:g})"
