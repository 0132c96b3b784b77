"""Strata of a primary metric over the manifest's phases and difficulties.

- ESD: the metric's mean per difficulty (``by_difficulty``), per phase (``by_phase``) and
  per (phase, difficulty) (``by_phase_difficulty``), each ``{mean, n}`` where ``n`` counts
  rows with a non-null value; an empty bucket is ``{mean: null, n: 0}``.
- Weighted phase score: ``S_p = Σ w_d M(p, d) / Σ w_d`` over the difficulties present in
  phase p (weights easy 0.25, medium 0.35, hard 0.40), ``overall`` the mean of the phases
  present, ``delta_int = S_interaction − S_clutter``, ``delta_rec = S_clean −
  S_interaction``. The RPX code scored an empty bucket 0.0, which drags a phase's score
  towards 0 (or towards "perfect" for a lower-is-better metric): here it is null.
- STR: the same two differences of the plain phase means.
- ``degrades`` / ``recovers`` read the deltas with the metric's direction, so "worse" is
  never a sign puzzle: for a higher-is-better metric the model degrades when
  ``delta_int < 0``; for a lower-is-better one when ``delta_int > 0``.
- ``bootstrap=N`` adds a 95 % percentile interval (``ci95``) to every figure: rows are
  resampled with replacement within each (phase, difficulty) group, so bucket sizes are
  kept; seeded, so the same inputs give the same intervals.

Everything is computed from per-group sums (16 groups: 3 phases and 3 difficulties, each
possibly absent), for the point estimate and for all bootstrap replicates at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

PHASES = ("clutter", "interaction", "clean")
DIFFICULTIES = ("easy", "medium", "hard")
WEIGHTS = np.array([0.25, 0.35, 0.40])
_GROUPS = 16  # (phase or none) x (difficulty or none)
_CHUNK = 200  # bootstrap replicates drawn at a time (bounds memory)


def compute_strata(values: Sequence[float | None], phases: Sequence[str | None],
                   difficulties: Sequence[str | None], *, metric: str, direction: str,
                   bootstrap: int = 0, seed: int = 0) -> dict[str, Any]:
    """The ``strata`` section from one value, phase and difficulty per row (rows in stem
    order; None where a row has no value or no label)."""
    value = np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    phase = np.array([PHASES.index(p) if p in PHASES else 3 for p in phases], dtype=np.int64)
    difficulty = np.array([DIFFICULTIES.index(d) if d in DIFFICULTIES else 3
                           for d in difficulties], dtype=np.int64)
    group = phase * 4 + difficulty
    present = ~np.isnan(value)
    counts = np.bincount(group[present], minlength=_GROUPS).astype(np.float64)
    sums = np.bincount(group[present], weights=value[present], minlength=_GROUPS)
    point = _figures(sums[np.newaxis], counts)
    out = _layout(point, counts, metric, direction)
    out["n_unassigned"] = int(np.count_nonzero((phase == 3) | (difficulty == 3)))
    if bootstrap > 0:
        replicates = _bootstrap(value, group, present, counts, bootstrap, seed)
        _attach_intervals(out, replicates, point)
        out["bootstrap"] = {"replicates": bootstrap, "seed": seed, "level": 0.95,
                            "resampling": "rows within each (phase, difficulty) group"}
    return out


def _figures(sums: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    """Every stratum figure for each row of ``sums`` (replicates, 16 groups); NaN = null."""
    b = sums.shape[0]
    s = sums.reshape(b, 4, 4)  # (replicate, phase or none, difficulty or none)
    c = counts.reshape(4, 4)
    with np.errstate(invalid="ignore", divide="ignore"):
        cell = s[:, :3, :3] / c[:3, :3]  # (b, phase, difficulty)
        by_phase = s[:, :3, :].sum(axis=2) / c[:3, :].sum(axis=1)
        by_difficulty = s[:, :, :3].sum(axis=1) / c[:, :3].sum(axis=0)
        has = ~np.isnan(cell)
        weights = np.where(has, WEIGHTS, 0.0)
        score = np.where(has, cell, 0.0) @ WEIGHTS / weights.sum(axis=2)  # (b, phase)
        score = np.where(weights.sum(axis=2) > 0, score, np.nan)
        n_phases = (~np.isnan(score)).sum(axis=1)
        overall = np.where(n_phases > 0, np.nansum(score, axis=1) / n_phases, np.nan)
    return {"cell": cell, "by_phase": by_phase, "by_difficulty": by_difficulty, "score": score,
            "overall": overall, "delta_int": score[:, 1] - score[:, 0],
            "delta_rec": score[:, 2] - score[:, 1], "str_c_to_i": by_phase[:, 1] - by_phase[:, 0],
            "str_i_to_l": by_phase[:, 2] - by_phase[:, 1]}


def _number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _verdicts(delta_int: float | None, delta_rec: float | None, direction: str) -> dict[str, Any]:
    sign = {"higher": 1.0, "lower": -1.0}.get(direction)
    if sign is None:
        return {"degrades": None, "recovers": None}
    return {"degrades": None if delta_int is None else sign * delta_int < 0,
            "recovers": None if delta_rec is None else sign * delta_rec > 0}


def _layout(f: dict[str, np.ndarray], counts: np.ndarray, metric: str,
            direction: str) -> dict[str, Any]:
    c = counts.reshape(4, 4)
    bucket = lambda mean, n: {"mean": _number(mean), "n": int(n)}  # noqa: E731
    score = [_number(v) for v in f["score"][0]]
    delta_int, delta_rec = _number(f["delta_int"][0]), _number(f["delta_rec"][0])
    str_c_to_i, str_i_to_l = _number(f["str_c_to_i"][0]), _number(f["str_i_to_l"][0])
    return {
        "primary_metric": metric,
        "direction": direction,
        "by_difficulty": {d: bucket(f["by_difficulty"][0, k], c[:, k].sum())
                          for k, d in enumerate(DIFFICULTIES)},
        "by_phase": {p: bucket(f["by_phase"][0, k], c[k, :].sum()) for k, p in enumerate(PHASES)},
        "by_phase_difficulty": {p: {d: bucket(f["cell"][0, i, j], c[i, j])
                                    for j, d in enumerate(DIFFICULTIES)}
                                for i, p in enumerate(PHASES)},
        "weighted_phase_score": {**dict(zip(PHASES, score, strict=True)),
                                 "overall": _number(f["overall"][0]), "delta_int": delta_int,
                                 "delta_rec": delta_rec, "weights": dict(zip(
                                     DIFFICULTIES, WEIGHTS.tolist(), strict=True)),
                                 **_verdicts(delta_int, delta_rec, direction)},
        "str": {"c_to_i": str_c_to_i, "i_to_l": str_i_to_l,
                **_verdicts(str_c_to_i, str_i_to_l, direction)},
    }


def _bootstrap(value: np.ndarray, group: np.ndarray, present: np.ndarray, counts: np.ndarray,
               replicates: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sums = np.zeros((replicates, _GROUPS))
    for g in range(_GROUPS):
        members = value[present & (group == g)]
        n = len(members)
        if n == 0:
            continue
        for start in range(0, replicates, _CHUNK):
            stop = min(start + _CHUNK, replicates)
            draws = rng.integers(0, n, (stop - start, n))
            sums[start:stop, g] = members[draws].sum(axis=1)
    return _figures(sums, counts)


def _interval(samples: np.ndarray, point: float) -> list[float] | None:
    if np.isnan(point):
        return None
    finite = samples[~np.isnan(samples)]
    low, high = np.percentile(finite, [2.5, 97.5])
    return [float(low), float(high)]


def _attach_intervals(out: dict[str, Any], r: dict[str, np.ndarray],
                      p: dict[str, np.ndarray]) -> None:
    for k, d in enumerate(DIFFICULTIES):
        out["by_difficulty"][d]["ci95"] = _interval(r["by_difficulty"][:, k], p["by_difficulty"][0, k])
    for i, phase in enumerate(PHASES):
        out["by_phase"][phase]["ci95"] = _interval(r["by_phase"][:, i], p["by_phase"][0, i])
        for j, d in enumerate(DIFFICULTIES):
            out["by_phase_difficulty"][phase][d]["ci95"] = _interval(r["cell"][:, i, j],
                                                                     p["cell"][0, i, j])
    wps = {phase: _interval(r["score"][:, i], p["score"][0, i]) for i, phase in enumerate(PHASES)}
    for key in ("overall", "delta_int", "delta_rec"):
        wps[key] = _interval(r[key], p[key][0])
    out["weighted_phase_score"]["ci95"] = wps
    out["str"]["ci95"] = {"c_to_i": _interval(r["str_c_to_i"], p["str_c_to_i"][0]),
                          "i_to_l": _interval(r["str_i_to_l"], p["str_i_to_l"][0])}
