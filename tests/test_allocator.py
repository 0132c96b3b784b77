"""``rpx_cli.allocator.tune_allocator``: numpy's huge-page advice is turned off for a bulk
run (a fault in a madvised array may compact memory synchronously: seconds of system time
on a 177 MB keypoints file), unless ``NUMPY_MADVISE_HUGEPAGE`` chose; numbers never depend
on it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = """
import numpy as np
from rpx_cli.allocator import tune_allocator
tune_allocator()
core = getattr(np, "_core", None) or np.core
print(int(core.multiarray._set_madvise_hugepage(True)))  # returns the setting before
"""


def _advice_after_tuning(env: dict[str, str]) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env={**clean, **env}, check=True)
    return done.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="numpy advises on Linux only")
def test_tuning_turns_the_huge_page_advice_off():
    assert _advice_after_tuning({}) == "0"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="numpy advises on Linux only")
def test_numpy_own_switch_rules():
    assert _advice_after_tuning({"NUMPY_MADVISE_HUGEPAGE": "1"}) == "1"
