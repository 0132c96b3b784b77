"""Shared helpers for the benchmark scripts (timing, subprocess runs, machine facts)."""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


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
