"""Optimal assignment: scipy's ``linear_sum_assignment``, without importing all of
``scipy.optimize``.

``import scipy.optimize`` costs 0.25–0.4 s on the build machine (it pulls in every
optimiser), more than a whole tracking or confusion-matrix evaluation. The solver itself
is the compiled module ``scipy.optimize._lsap``, which needs only numpy: it is loaded from
its file directly. The function is the very object ``scipy.optimize.linear_sum_assignment``
re-exports (a test checks that), so results are identical; any surprise (an unusual scipy
layout) falls back to the ordinary import.
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
