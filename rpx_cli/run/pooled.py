"""The paired bootstrap of pooled figures: what ``rpx compare`` resamples when a figure is
not a mean of rows (``dataset.coco.AP``, ``dataset.voc07.mAP``, ``dataset.pooled.f1``).

A report written with ``--keep-state`` carries its pairs' statistics (``statistics``: the
task's declared statistics by name, one entry per stem, in stem order; the same encoding as
a ``--shard`` part's ``state.stats``). For two such reports of one evaluation set-up,
:func:`pooled_bootstrap` draws the stems both evaluated with replacement — the same draw for
both sides — and recomputes every pooled figure of each side with the task's own
``summarize`` on the drawn pairs: the definition, not an approximation. A resample is the
drawn stems in stem order, a stem drawn k times standing k times in a row (each copy an
image of its own), which is what evaluating folders holding those copies gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rpx_cli.engine.workers import map_in_processes
from rpx_cli.errors import InputError, unescaped
from rpx_cli.report.compare import flatten
from rpx_cli.tasks.base import Task
from rpx_cli.tasks.stats import StatTable

SECTION = "statistics"
"""The report key a ``--keep-state`` report keeps its pairs' statistics under."""

HOW = "write both reports with rpx eval --keep-state (or rpx merge --keep-state)"


def kept_statistics(stems: Sequence[str], stats: StatTable) -> dict[str, Any]:
    """A report's ``statistics``: ``stems`` (the evaluated pairs) and ``stats`` (the task's
    statistics by name, :meth:`StatTable.encode`), both in the report's stem order."""
    keys = [unescaped(stem) for stem in stems]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    table = stats if order == list(range(len(order))) else stats.take(order)
    return {"stems": [stems[i] for i in order], "stats": table.encode()}


@dataclass
class Kept:
    """A report's statistics read back: its task, parameters, stems and table."""

    task: Task
    params: dict[str, Any]
    stems: list[str]
    table: StatTable

    @property
    def resampled(self) -> bool:
        """Whether its pairs can be drawn one by one: no statistic is folded over every pair
        (a summed confusion matrix keeps no pair's share)."""
        return not any(stat.folded for stat in self.table.declared)


def read_kept(path: str, report: Mapping[str, Any]) -> Kept | None:
    """The statistics ``report`` (read from ``path``) keeps, or None when it keeps none (or
    its task is not installed here). Statistics that do not decode are an
    :class:`InputError` naming the file."""
    from rpx_cli.tasks.registry import find_task

    section = report.get(SECTION)
    task = find_task(report.get("task")) if isinstance(report.get("task"), str) else None
    if section is None or task is None:
        return None
    params = dict(report.get("params") or {})
    try:
        stems = [str(stem) for stem in section["stems"]]
        table = StatTable.decode(task.statistics(params), section["stats"], len(stems))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InputError(f"its {SECTION} cannot be read ({exc}); was it written by another rpx "
                         "version? Re-run it with --keep-state", path=path) from None
    if len(set(stems)) != len(stems):
        raise InputError(f"its {SECTION} name a stem twice", path=path)
    table.stems = [unescaped(stem) for stem in stems]
    return Kept(task, params, stems, table)


def pooled_paths(report: Mapping[str, Any]) -> list[str]:
    """The pooled figures of a report: its ``dataset.*`` numbers (``rpx compare``'s
    :func:`~rpx_cli.report.compare.flatten`: per-class figures included, curves and the
    confusion matrix not)."""
    return [path for path in flatten(report) if path.startswith("dataset.")]


def summary_params(task: Task, params: Mapping[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    """``params`` with ``metrics`` naming only the task's families that hold ``paths`` (a
    resample computes no view nobody compares; a task without families computes all)."""
    families = [name for name, (_, sections) in task.families.items()
                if any(path == section or path.startswith(section + ".")
                       for section in sections for path in paths)]
    return {**params, "metrics": families} if families else dict(params)


def figures_of(task: Task, table: StatTable, params: Mapping[str, Any],
               paths: Sequence[str]) -> np.ndarray:
    """The figures ``paths`` of the task's summary of ``table`` (NaN where null or absent)."""
    flat = flatten(task.summarize(table, params))
    return np.array([_number(flat.get(path)) for path in paths], dtype=np.float64)


def fast_route(side: Kept, params: Mapping[str, Any],
               paths: Sequence[str]) -> Callable[[np.ndarray], Mapping[str, Any]] | None:
    """The task's own route to ``paths`` on resamples of ``side``'s rows, when it offers one
    (a task's ``resampler(stats, params, paths)``: detection under ``--protocol coco``
    pools each image's matches instead of matching every resample anew); None otherwise.
    :func:`pooled_bootstrap` uses it only when it gives the summary's numbers on the
    shared stems exactly."""
    offer = getattr(side.task, "resampler", None)
    return None if offer is None else offer(side.table, params, paths)


def resample_index(rng: np.random.Generator, n: int) -> np.ndarray:
    """One resample of ``n`` stems: ``n`` draws with replacement, in stem order."""
    return np.sort(rng.integers(0, n, size=n))


def pooled_bootstrap(base: Kept, new: Kept, paths: Sequence[str], *, resamples: int,
                     seed: int, jobs: int = 1,
                     progress: Callable[[int], None] | None = None) -> dict[str, dict[str, Any]]:
    """For every figure in ``paths``, the 95 % percentile interval of its change (new − base)
    over ``resamples`` paired resamples of the stems both reports evaluated, and each side's
    own interval from the same resamples; ``mean_delta``, ``base_mean`` and ``new_mean`` are
    the figures on the shared stems themselves (the reports' own values when both evaluated
    the same stems). A figure null in every resample gets no entry. Resample ``r`` draws
    :func:`resample_index` from ``numpy.random.default_rng(seed)`` after the ``r`` before it;
    the resamples are summarised in ``jobs`` worker processes (the same numbers for any);
    ``progress`` is told how many resamples each finished piece held."""
    positions = {stem: i for i, stem in enumerate(new.stems)}
    shared = sorted((stem for stem in base.stems if stem in positions), key=unescaped)
    n = len(shared)
    if n == 0 or resamples <= 0 or not paths:
        return {}
    base_at = {stem: i for i, stem in enumerate(base.stems)}
    where = (np.array([base_at[stem] for stem in shared], np.int64),
             np.array([positions[stem] for stem in shared], np.int64))
    sides = (base, new)
    params = [summary_params(side.task, side.params, paths) for side in sides]
    # each row's stem (Open Images reads its image-level labels by stem): a copy keeps its own
    names = [np.array(side.table.stems, dtype=object) for side in sides]

    def figures(index: np.ndarray) -> np.ndarray:
        """(2, figures): each side's figures on the stems ``index`` (into ``shared``)."""
        out = []
        for side, at, wanted, stems in zip(sides, where, params, names, strict=True):
            # a column of objects read from JSON is a list: a stem drawn twice is two rows
            table = side.table.take(at[index])
            table.stems = stems[at[index]].tolist()
            out.append(figures_of(side.task, table, wanted, paths))
        return np.stack(out)

    point = figures(np.arange(n))
    routes = [fast_route(side, wanted, paths) for side, wanted in zip(sides, params, strict=True)]
    if all(route is not None for route in routes):
        def pooled_only(index: np.ndarray) -> np.ndarray:
            out = []
            for route, at in zip(routes, where, strict=True):
                found = route(at[index])
                out.append([_number(found.get(path)) for path in paths])
            return np.array(out, dtype=np.float64)

        if np.array_equal(pooled_only(np.arange(n)), point, equal_nan=True):
            figures = pooled_only  # the same numbers on the shared stems: trusted

    def chunk(indices: np.ndarray) -> np.ndarray:
        return np.stack([figures(index) for index in indices])

    rng = np.random.default_rng(seed)
    dtype = np.int32 if n < 2**31 else np.int64  # every draw is made here, before the workers
    indices = np.stack([resample_index(rng, n).astype(dtype) for _ in range(resamples)])
    pieces = np.array_split(indices, min(resamples, max(1, jobs) * 4))
    done = []
    for piece in map_in_processes(chunk, pieces, jobs=max(1, jobs)):
        done.append(piece)
        if progress is not None:
            progress(len(piece))
    drawn = np.concatenate(done)
    base_values, new_values = drawn[:, 0, :], drawn[:, 1, :]
    out = {}
    for j, path in enumerate(paths):
        both = np.isfinite(base_values[:, j]) & np.isfinite(new_values[:, j])
        if not both.any() or not np.isfinite(point[:, j]).all():
            continue
        low, high = (float(v) for v in np.percentile(new_values[both, j] - base_values[both, j],
                                                     [2.5, 97.5]))
        own = [[float(v) for v in np.percentile(values[both, j], [2.5, 97.5])]
               for values in (base_values, new_values)]
        out[path] = {"n_shared": n, "mean_delta": float(point[1][j] - point[0][j]),
                     "ci95": [low, high], "significant": bool(low > 0 or high < 0),
                     "resamples": resamples, "seed": seed, "pooled": True,
                     "base_mean": float(point[0][j]), "new_mean": float(point[1][j]),
                     "base_ci95": own[0], "new_ci95": own[1]}
        if int(both.sum()) < resamples:
            out[path]["defined_resamples"] = int(both.sum())
    return out


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else np.nan
