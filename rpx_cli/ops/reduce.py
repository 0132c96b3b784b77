"""The small reductions every task repeats, written once.

- :func:`mean_present`: the mean over rows where a metric is defined (``aggregate``), with
  ``math.fsum`` so it does not depend on row order or on how rows were split into shards;
- :func:`prf` / :func:`prf_arrays`: precision, recall and F1 from counts, 0/0 = 0;
- :func:`f_score`: the harmonic mean of a precision and a recall.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def mean_present(values: np.ndarray | Sequence[float | None]) -> float | None:
    """Mean of the defined values (NaN in an array, None in a list, are undefined); None
    when no value is defined. The sum is correctly rounded (``math.fsum``)."""
    if isinstance(values, np.ndarray):
        kept = values[~np.isnan(values)].tolist()
    else:
        kept = [v for v in values if v is not None]
    return math.fsum(kept) / len(kept) if kept else None


def f_score(precision: float, recall: float) -> float:
    """``2PR / (P + R)``; 0 when both are 0."""
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def prf(tp: int, fp: int, fn: int, *, empty: float | None = 1.0) -> dict[str, float]:
    """Precision, recall and F1 from counts; a 0/0 is 0. Nothing to find and nothing
    predicted (all three counts 0) scores ``empty`` on all three (1.0: the RPX rows)."""
    if tp + fp + fn == 0 and empty is not None:
        return {"precision": empty, "recall": empty, "f1": empty}
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": precision, "recall": recall, "f1": f_score(precision, recall)}


def prf_arrays(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, *,
               empty: float | None = 1.0) -> dict[str, np.ndarray]:
    """:func:`prf` element-wise, the same operations."""
    tp, fp, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn))
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        recall = np.where(tp + fn > 0, tp / (tp + fn), 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    if empty is None:
        return {"precision": precision, "recall": recall, "f1": f1}
    ideal = tp + fp + fn == 0
    return {"precision": np.where(ideal, empty, precision), "recall": np.where(ideal, empty, recall),
            "f1": np.where(ideal, empty, f1)}


def worst_order(values: np.ndarray, direction: str, confidence: np.ndarray | None = None) -> np.ndarray:
    """Indices of the defined ``values`` (NaN left out), the worst first given
    ``direction`` (``higher`` is better: the lowest first; ``lower``: the highest first);
    among equal values the highest ``confidence`` first (the mistakes a model is surest of;
    NaN counts 0), then the given order. The worst rows of the page are ordered the same
    way (``rpx_cli.report.html_sections.worst_first``)."""
    values = np.asarray(values, dtype=np.float64)
    index = np.arange(values.size)
    sign = -1.0 if direction == "lower" else 1.0
    tie = np.zeros(values.size) if confidence is None else \
        -np.nan_to_num(np.asarray(confidence, dtype=np.float64), nan=0.0)
    order = np.lexsort((index, tie, sign * values))
    return order[~np.isnan(values[order])]
