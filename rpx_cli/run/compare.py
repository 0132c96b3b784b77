"""``rpx compare``: two reports metric by metric, with a paired bootstrap over the shared
stems and no-regression gates; the ``rpx.compare`` document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rpx_cli.engine import default_jobs
from rpx_cli.errors import InputError
from rpx_cli.params.option import convert_all
from rpx_cli.params.workflows import COMPARE_OPTIONS
from rpx_cli.report.compare import (
    check_no_regression,
    compare_reports,
    parse_no_regression,
    summary,
)
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.run import pooled
from rpx_cli.run.documents import read_valid_report, sha256_hex
from rpx_cli.run.invocation import Invocation, ProgressHooks, file_input, stamp


@dataclass
class Comparison:
    """The ``rpx.compare`` document, the failed no-regression gates and the warnings."""

    document: dict[str, Any]
    failed: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def run_compare(base: str, new: str, *, no_regression: Sequence[str] = (), bootstrap: int = 1000,
                seed: int = 0, force: bool = False, pooled_bootstrap: int = 200,
                jobs: int | None = None, invocation: Invocation | None = None,
                progress: ProgressHooks | None = None) -> Comparison:
    """Compare the reports at ``base`` and ``new``. Reports of different tasks or
    parameters are an input error unless ``force`` (then a warning); parameters that change
    no number (:func:`presentation_params`) never count. ``no_regression``,
    ``bootstrap``, ``seed``, ``force``, ``pooled_bootstrap`` and ``jobs`` are converted by
    their declarations (:data:`rpx_cli.params.workflows.COMPARE_OPTIONS`), as the CLI's
    flags are. Pooled figures get an interval from ``min(bootstrap, pooled_bootstrap)``
    paired resamples when both reports carry their statistics (:mod:`rpx_cli.run.pooled`),
    summarised in ``jobs`` worker processes (None: the CPUs available; ``progress``: a bar
    over them)."""
    given = convert_all(COMPARE_OPTIONS, {"no_regression": no_regression, "bootstrap": bootstrap,
                                          "seed": seed, "force": force,
                                          "pooled_bootstrap": pooled_bootstrap, "jobs": jobs},
                        "rpx compare")
    no_regression, bootstrap, seed, force, pooled_bootstrap, jobs = (
        given[option.param] for option in COMPARE_OPTIONS)
    stopwatch = Stopwatch()
    (base_doc, base_bytes), (new_doc, new_bytes) = read_valid_report(base), read_valid_report(new)
    problems = []
    if base_doc.get("task") != new_doc.get("task") or base_doc.get("schema") != new_doc.get("schema"):
        problems.append(f"different tasks: {base_doc.get('task')} vs {new_doc.get('task')}")
    base_params, new_params = base_doc.get("params") or {}, new_doc.get("params") or {}
    shown_only = presentation_params(new_doc.get("task"))
    differ = sorted(k for k in set(base_params) | set(new_params)
                    if base_params.get(k) != new_params.get(k))
    presentation = [k for k in differ if k in shown_only]
    differ = [k for k in differ if k not in shown_only]
    if differ:
        problems.append(f"parameters that change the numbers differ: {', '.join(differ)}")
    if problems and not force:
        raise InputError("; ".join(problems) + " (--force compares them anyway)", path=new)
    intervals, pooled_section = _pooled(base, base_doc, new, new_doc, problems,
                                        min(bootstrap, pooled_bootstrap), seed, jobs,
                                        progress or ProgressHooks())
    metrics = compare_reports(base_doc, new_doc, bootstrap=bootstrap, seed=seed, pooled=intervals)
    gates = check_no_regression(base_doc, new_doc, [parse_no_regression(t) for t in no_regression])
    counts = summary(metrics)
    document = {
        "schema": "rpx.compare", "schema_version": 1,
        "base": _side(base, base_doc, base_bytes), "new": _side(new, new_doc, new_bytes),
        "params_differ": differ, "presentation_params_differ": presentation,
        "summary": counts, "pooled_bootstrap": pooled_section, "metrics": metrics,
    }
    inputs = {"base": file_input(base, sha256_hex(base_bytes), exists=True),
              "new": file_input(new, sha256_hex(new_bytes), exists=True)}
    stamp(document, invocation or Invocation(command="rpx_cli.run_compare"), inputs, stopwatch)
    if gates:
        document["gates"] = gates
    notes = [] if pooled_section["resamples"] or not pooled_section.get("figures") else \
        [f"note: {pooled_section['figures']} pooled figure(s) (dataset.*) have no interval: "
         f"{pooled_section['reason']}"]
    return Comparison(document, [g for g in gates if not g["passed"]],
                      [f"warning: {p}" for p in problems] + notes)


def _pooled(base: str, base_doc: Mapping[str, Any], new: str, new_doc: Mapping[str, Any],
            problems: list[str], resamples: int, seed: int, jobs: int | None,
            hooks: ProgressHooks) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The intervals of the pooled figures both reports hold (:mod:`rpx_cli.run.pooled`)
    and the comparison's ``pooled_bootstrap``: how many resamples, or why there are none."""
    shared = set(pooled.pooled_paths(new_doc))
    paths = [path for path in pooled.pooled_paths(base_doc) if path in shared]
    section: dict[str, Any] = {"figures": len(paths), "resamples": 0, "seed": seed}
    kept = [pooled.read_kept(base, base_doc), pooled.read_kept(new, new_doc)]
    reason = None
    if not paths:
        reason = "the reports share no pooled figure"
    elif kept[0] is None or kept[1] is None:
        which = "neither report carries" if kept[0] is None and kept[1] is None else \
            f"{'BASE' if kept[0] is None else 'NEW'} carries no"
        reason = f"{which} statistics; {pooled.HOW}"
    elif problems:
        reason = "the reports are of different evaluations (--force)"
    elif not (kept[0].resampled and kept[1].resampled):
        reason = "the task keeps statistics summed over every pair, which cannot be resampled"
    elif resamples <= 0:
        reason = "--bootstrap or --pooled-bootstrap is 0"
    if reason is not None:
        return {}, {**section, "reason": reason}
    try:
        intervals = pooled.pooled_bootstrap(kept[0], kept[1], paths, resamples=resamples,
                                            seed=seed, jobs=default_jobs() if jobs is None else jobs,
                                            progress=hooks.start(resamples))
    finally:
        hooks.stop()
    if not intervals:
        return {}, {**section, "reason": "the reports share no evaluated stem"}
    return intervals, {**section, "resamples": resamples, "with_interval": len(intervals)}


def presentation_params(task_name: Any) -> set[str]:
    """The ``params`` of ``task_name``'s reports that change no number: its options declared
    ``changes_numbers=False`` (``keep_worst``, ``images_dir``; ``--html`` only sets
    ``keep_worst``). Empty for a task this installation does not know."""
    from rpx_cli.tasks.registry import find_task

    task = find_task(task_name) if isinstance(task_name, str) else None
    if task is None:
        return set()
    return {option.param for option in (*task.options, *task.aux_inputs)
            if not option.changes_numbers}


def _side(path: str, document: dict[str, Any], data: bytes) -> dict[str, Any]:
    return {"path": path, "schema": document.get("schema"), "task": document.get("task"),
            "n_pairs": document.get("n_pairs"), "sha256": sha256_hex(data)}
