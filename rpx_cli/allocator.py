"""Allocator tuning for worker processes (glibc only).

Per-frame temporaries of a few megabytes are, by default, returned to the kernel when freed
and page-faulted back in on the next frame: for a 480x640 depth pair that cost more than the
arithmetic (measured: 8.4 ms per pair with default malloc, 3.9-4.4 ms with the thresholds
below; ``benchmarks/RESULTS.md``). Raising glibc's mmap and trim thresholds keeps freed
memory in the process for reuse. Done once per process; a no-op where ``mallopt`` does not
exist. Numbers never depend on it.

numpy also advises the kernel to back every array of 4 MB or more with transparent huge
pages (``madvise(MADV_HUGEPAGE)``). Where the kernel's THP ``defrag`` setting is ``madvise``
(a common default) a fault in such an array may compact memory synchronously, and on a
long-running machine with fragmented memory that costs far more than the TLB saves: a
177 MB keypoints results file (500,000 rows of 56 values, a few copies of ~220 MB each) spent
~5.5 s of system time in page faults, ~1.2 s without the advice. The advice is turned off
here too, unless ``NUMPY_MADVISE_HUGEPAGE`` is set (numpy's own switch, which then rules).
"""

from __future__ import annotations

import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 256 * 1024 * 1024
_tuned = False


def tune_allocator() -> bool:
    """Raise glibc's mmap/trim thresholds once per process; True when it was applied."""
    global _tuned
    if _tuned or not sys.platform.startswith("linux"):
        return _tuned
    _tuned = True
    _no_hugepage_advice()
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    except (OSError, AttributeError):
        return False
    return True


def _no_hugepage_advice() -> None:
    """Stop numpy's ``madvise(MADV_HUGEPAGE)`` on large arrays (the module's docstring),
    unless the user chose with ``NUMPY_MADVISE_HUGEPAGE``."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    import numpy as np

    core = getattr(np, "_core", None) or getattr(np, "core", None)
    setter = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)
