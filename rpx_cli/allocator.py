"""Allocator tuning for worker processes (glibc only).

Per-frame temporaries of a few megabytes are, by default, returned to the kernel when freed
and page-faulted back in on the next frame: for a 480x640 depth pair that cost more than the
arithmetic (measured: 8.4 ms per pair with default malloc, 3.9-4.4 ms with the thresholds
below; ``benchmarks/RESULTS.md``). Raising glibc's mmap and trim thresholds keeps freed
memory in the process for reuse. Done once per process; a no-op where ``mallopt`` does not
exist. Numbers never depend on it.
"""

from __future__ import annotations

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
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    except (OSError, AttributeError):
        return False
    return True
