"""Optimal assignment: scipy's ``linear_sum_assignment``, without importing all of
``scipy.optimize``.

The solver is the compiled module ``scipy.optimize._lsap``, which needs only numpy: it is
loaded from its file directly. The function is the very object
``scipy.optimize.linear_sum_assignment`` re-exports (a test checks that), so results are
identical; any surprise (an unusual scipy layout) falls back to the ordinary import.

Why not the public import: ``import scipy.optimize`` pulls in every optimiser, 0.32 s
after numpy against 0.01-0.02 s for this loader, and the solver is imported by every
process that solves an assignment (each tracking worker; the main process for the
detection confusion matrix). Measured end to end (``benchmarks/assignment.py``, issue 26
in ``benchmarks/RESULTS.md``), the public import made ``rpx eval tracking`` on a
MOT17-train-sized set 38-58 % slower and ``rpx eval detection --metrics confusion`` on
5,000 images 18-21 % slower: far above the 5 % that would justify the plain import.
Re-run that benchmark after a scipy upgrade.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import cache
from typing import Any


@cache
def solver() -> Callable[..., Any]:
    """``scipy.optimize.linear_sum_assignment``."""
    loaded = sys.modules.get("scipy.optimize._lsap")
    if loaded is not None:
        return loaded.linear_sum_assignment
    try:
        return _load_extension()
    except Exception:  # any layout surprise: use the public import
        from scipy.optimize import linear_sum_assignment

        return linear_sum_assignment


def _load_extension() -> Callable[..., Any]:
    import importlib.machinery
    import importlib.util
    from pathlib import Path

    import scipy

    folder = Path(scipy.__file__).parent / "optimize"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"_lsap{suffix}"
        if path.is_file():
            break
    else:
        raise ImportError("scipy.optimize._lsap not found")
    spec = importlib.util.spec_from_file_location("scipy.optimize._lsap", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.linear_sum_assignment


def linear_sum_assignment(cost: Any, maximize: bool = False) -> Any:
    """``scipy.optimize.linear_sum_assignment(cost, maximize)``: (row indices, column indices)."""
    return solver()(cost, maximize)
