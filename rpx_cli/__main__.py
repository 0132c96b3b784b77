"""``python -m rpx_cli`` and the ``rpx`` console script.

A stop signal (Ctrl-C, SIGTERM, SIGHUP: a CI runner cancelling a job signals the whole
process group) can arrive while the command line is still being imported, before the CLI
installs its own handlers (``cli.main.stop_signals``): nothing has been read or written
then, so :func:`main` first makes such a signal end the process at once with the CLI's
line and exit status, instead of a ``KeyboardInterrupt`` traceback from inside an import."""

from __future__ import annotations

import os
import signal
import sys

_STOP = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
              if hasattr(signal, name))


def _stop_at_start(signum: int, frame: object) -> None:
    what = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    os.write(2, f"rpx: {what}; no report written\n".encode())
    os._exit(128 + signum)


# One thread per process for the math libraries, unless the user set otherwise: rpx runs
# pairs in worker processes (--jobs), and OpenBLAS's threads on rpx's small dot products
# (nvs: a 512x512x3 image's) only spin — measured 2.0x the CPU for the same wall time, so a
# second worker process had no CPU left (benchmarks/RESULTS.md, issue 33). One thread also
# makes a sum's order the same on every machine.
SINGLE_THREADED = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def main() -> None:
    for signum in _STOP:
        signal.signal(signum, _stop_at_start)
    for name in SINGLE_THREADED:  # before numpy is imported (the command line imports it)
        os.environ.setdefault(name, "1")
    # what an `rpx eval` needs started while the rest imports (cli/startup.py)
    from rpx_cli.cli.startup import begin

    begin(sys.argv[1:])
    from rpx_cli.cli.main import main as run

    run()


if __name__ == "__main__":
    main()
