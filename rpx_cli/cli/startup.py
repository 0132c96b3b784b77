"""What ``rpx`` starts before its command line is imported (``rpx_cli.__main__``): the
~0.25 s of importing numpy, click and the task modules hold one core, and an ``rpx eval``
can use the other meanwhile.

For any ``rpx eval``: the two ``git`` processes of ``run_provenance.git``
(:func:`rpx_cli.report.provenance.start_git`) and the clock of the default ``--jobs``
(:mod:`rpx_cli.engine.jobs` reads the CPUs left idle since it was imported instead of
sleeping 20 ms to measure them); for ``rpx eval detection --coco-gt G --coco-dt D``, both
files read, scanned and hashed (:mod:`rpx_cli.io.prefetch`). Nothing here raises or
prints, and nothing changes a report."""

from __future__ import annotations

import os


def begin(argv: list[str]) -> None:
    """Start what ``argv`` (``sys.argv[1:]``) will need, when it is an ``rpx eval``."""
    if "--" in argv:
        argv = argv[:argv.index("--")]
    if argv[:1] != ["eval"] or "--help" in argv:
        return
    from rpx_cli.report.provenance import start_git

    start_git(os.getcwd())
    from rpx_cli.io.prefetch import start

    start(argv)
    import rpx_cli.engine.jobs  # noqa: F401  (its clock starts now)
