"""The Python API: evaluate two directories and get the report as a dict.

No click here: the CLI parses flags and calls :func:`run_evaluation`; notebooks and
scripts call :func:`evaluate_dirs`.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rpx_cli.engine import default_jobs, run_pairs
from rpx_cli.errors import EvaluationFailed, InputError, PairError, ParameterError
from rpx_cli.io.discover import MISSING_POLICIES, Pairing, pair_dirs
from rpx_cli.report.envelope import build_report
from rpx_cli.report.provenance import (
    Stopwatch,
    build_provenance,
    collect_environment,
    collect_git,
    directory_input,
)
from rpx_cli.tasks.calculators import plugin_calculators
from rpx_cli.tasks.registry import get_task

ON_ERROR_POLICIES = ("fail", "skip")


@dataclass
class Evaluation:
    """A finished run: the report and what the user should be told on stderr."""

    report: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Invocation:
    """How the run was asked for, for ``run_provenance``."""

    command: str
    argv: list[str]
    args: Mapping[str, Any]
    out: str = "-"


class ProgressHooks:
    """Progress callbacks; the CLI passes a rich progress bar, the API nothing."""

    def start(self, total: int) -> Callable[[int], None] | None:
        return None

    def stop(self) -> None:
        pass


def run_evaluation(
    task_name: str,
    pred_dir: str,
    gt_dir: str,
    params: Mapping[str, Any],
    *,
    missing: str | None = None,
    on_error: str = "fail",
    jobs: int | None = None,
    include_rows: bool = True,
    shard: tuple[int, int] | None = None,
    invocation: Invocation | None = None,
    progress: ProgressHooks | None = None,
    manifest: str | None = None,
    primary_metric: str | None = None,
    bootstrap: int = 0,
    seed: int = 0,
) -> Evaluation:
    """Pair, evaluate and assemble the report. Raises :class:`rpx_cli.errors.RpxError`.

    ``shard=(k, n)`` evaluates only shard k of n (1-based, by a stable hash of the stem)
    and adds ``state``: what :func:`merge_reports` needs to rebuild the single-run report.
    ``manifest`` adds ``strata`` (SPEC §6) of ``primary_metric`` (the task's default when
    None), with ``bootstrap`` seeded resamples for 95 % intervals when > 0.
    """
    task = get_task(task_name)
    missing = task.default_missing if missing is None else missing
    if missing not in MISSING_POLICIES:
        raise ParameterError(f"missing must be one of {', '.join(MISSING_POLICIES)}")
    if on_error not in ON_ERROR_POLICIES:
        raise ParameterError(f"on_error must be one of {', '.join(ON_ERROR_POLICIES)}")
    params = task.normalise_params(params)
    task.validate_params(params)
    params = {**params, "missing": missing, "on_error": on_error}
    params = select_families(task, params)
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ParameterError(f"jobs must be >= 1, got {jobs}")
    stopwatch = Stopwatch()

    pairing = pair_dirs(pred_dir, gt_dir, task.suffixes, missing=missing)
    _check_pairing(pairing, pred_dir, gt_dir, task.suffixes, missing)
    whole = pairing.digest()
    plan = None
    if manifest is not None:
        from rpx_cli.deploy import eval_strata

        plan = eval_strata.plan(manifest, task, params, [pair.stem for pair in pairing.pairs],
                                primary_metric=primary_metric, bootstrap=bootstrap, seed=seed,
                                missing=missing)
        params = {**params, "strata": plan.params}
    if shard is not None:
        index, count = shard
        if not 1 <= index <= count:
            raise ParameterError(f"shard {index}/{count}: expected 1 <= K <= N")
        pairing = pairing.shard(index, count)

    calculators = plugin_calculators(task_name)
    hooks = progress or ProgressHooks()
    advance = hooks.start(len(pairing.pairs))
    try:
        result = run_pairs(task, pairing.pairs, params, jobs=jobs, progress=advance,
                           keep_rows=include_rows or plan is not None, calculators=calculators)
    finally:
        hooks.stop()
    if result.errors and on_error == "fail":
        raise EvaluationFailed(result.errors, len(pairing.pairs))
    if not len(result.stats) and shard is None:
        raise EvaluationFailed(
            result.errors, len(pairing.pairs),
            f"none of the {len(pairing.pairs)} pairs could be evaluated; no report written",
        )

    report = build_report(
        task=task,
        params=params,
        summary=_summary(task, result.stats, result.extras, params, result.rows),
        rows=result.rows,
        n_pairs=len(result.stats),
        unpaired=pairing.unpaired,
        errors=result.errors,
        include_rows=include_rows,
        calculators=calculators,
    )
    drop_skipped(task, params, report)
    strata_inputs = None
    if plan is not None:
        strata_inputs = eval_strata.inputs(plan, result.rows)
        if shard is None:
            report["strata"] = eval_strata.section(plan.params, plan.direction, strata_inputs,
                                                   plan.problems)
    if shard is not None:
        report["state"] = {
            "shard": {"index": shard[0], "count": shard[1]},
            "pairing": whole,
            "inputs": {"pred_dir": pred_dir, "gt_dir": gt_dir},
            "stems": result.stems,
            "stats": task.encode_stats(result.stats),
            "extras": result.extras,
            "digests": {"pred_dir": {k: v.hex() for k, v in result.pred_digests.items()},
                        "gt_dir": {k: v.hex() for k, v in result.gt_digests.items()}},
        }
        if plan is not None:
            report["state"]["strata"] = {"inputs": strata_inputs, "direction": plan.direction,
                                         "problems": plan.problems}
    invocation = invocation or Invocation(
        command=f"rpx_cli.evaluate_dirs({task_name!r})", argv=[], args={}
    )
    report["run_provenance"] = build_provenance(
        command=invocation.command,
        argv=invocation.argv,
        args=invocation.args,
        inputs={
            task.input_names[0]: directory_input(pred_dir, result.pred_digests),
            task.input_names[1]: directory_input(gt_dir, result.gt_digests),
            **({"manifest": file_input(manifest, plan.sha256)} if plan else {}),
        },
        outputs={"report": {"path": invocation.out}},
        clock=stopwatch.stop(),
        environment=collect_environment(),
        git=collect_git(os.getcwd()),
    )
    warnings = [task.warning_text(kind, paths) for kind, paths in sorted(result.warnings.items())]
    warnings += [f"manifest: {problem}" for problem in (plan.problems if plan else [])]
    return Evaluation(report=report, warnings=warnings)


def select_families(task: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Resolve ``params["metrics"]`` (families to run, default all) and name the skipped ones."""
    chosen = params.pop("metrics", None)
    if not task.families:
        if chosen:
            raise ParameterError(f"{task.name} has no metric families to choose from")
        return params
    names = list(task.families)
    if chosen is None:
        chosen = names
    if isinstance(chosen, str):
        chosen = [part.strip() for part in chosen.split(",") if part.strip()]
    unknown = [name for name in chosen if name not in task.families]
    if unknown or not chosen:
        raise ParameterError(f"unknown metric famil{'ies' if len(unknown) > 1 else 'y'} "
                             f"{', '.join(unknown) or '(none given)'} for {task.name} "
                             f"(known: {', '.join(names)})")
    return {**params, "metrics": [n for n in names if n in chosen],
            "skipped_metrics": [n for n in names if n not in chosen]}


def drop_skipped(task: Any, params: Mapping[str, Any], report: dict[str, Any]) -> None:
    """Leave the keys of skipped families out of rows, aggregate and the report."""
    for family in params.get("skipped_metrics", ()):
        keys, sections = task.families[family]
        for section in sections:  # "dataset" or a nested "dataset.pooled"
            *parents, last = section.split(".")
            node = report
            for key in parents:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict):
                node.pop(last, None)
        verdict: dict[str, bool] = {}  # rows share their keys: decide each key once
        for mapping in [*report.get("rows", ()), report.get("aggregate") or {}]:
            for key in list(mapping):
                drop = verdict.get(key)
                if drop is None:
                    drop = verdict[key] = _in_family(key, keys)
                if drop:
                    del mapping[key]


_BAND_SUFFIX = re.compile(r"(minus)?\d[\w]*m_((minus)?\d[\w]*m|inf)$")


def _in_family(key: str, keys: tuple[str, ...]) -> bool:
    """``key`` is one of ``keys``, or one of them with a depth-band suffix (absrel_0p3m_1m)."""
    return key in keys or any(key.startswith(k + "_") and _BAND_SUFFIX.match(key[len(k) + 1:])
                              for k in keys)


def _summary(task: Any, stats: Any, extras: list[dict[str, Any]], params: Mapping[str, Any],
             rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The task's summary, plus the mean of every plugin metric over its non-null rows.
    Per-row values the task computes across frames are merged into ``rows`` (stem order)."""
    summary: dict[str, Any] = {}
    # an empty --shard part has no summary, unless its schema requires the keys (coherence)
    if len(stats) or getattr(task, "summarize_empty", False):
        summary, values = task.summarize_rows(stats, params)
        if values is not None and rows:
            for row, extra in zip(rows, values, strict=True):
                row.update(extra)
    if extras:
        aggregate = summary.setdefault("aggregate", {})
        for key in sorted({k for extra in extras for k in extra}):
            values = [extra[key] for extra in extras if extra.get(key) is not None]
            aggregate[key] = math.fsum(values) / len(values) if values else None
    return summary


def _check_pairing(pairing: Pairing, pred_dir: str, gt_dir: str, suffixes: tuple[str, ...],
                   missing: str) -> None:
    if missing == "error" and (pairing.pred_only or pairing.gt_only):
        problems = [
            PairError(stem, os.path.join(gt_dir, pairing.gt_only_files[stem]),
                      f"no prediction with this stem in {pred_dir}")
            for stem in pairing.gt_only
        ] + [
            PairError(stem, os.path.join(pred_dir, pairing.pred_only_files[stem]),
                      f"no ground truth with this stem in {gt_dir}")
            for stem in pairing.pred_only
        ]
        raise EvaluationFailed(
            problems,
            len(problems),
            f"{len(problems)} stem(s) are not in both directories; no report written "
            "(--missing skip evaluates the stems in both and lists the rest under 'unpaired')",
        )
    if not pairing.pairs:
        kinds = "/".join(suffixes)
        raise InputError(
            f"no pairs to evaluate: {pred_dir} has {pairing.n_pred_files} and {gt_dir} has "
            f"{pairing.n_gt_files} {kinds} file(s), and no stem is in both",
            path=pred_dir,
        )


def evaluate_dirs(task: str, pred_dir: str | os.PathLike[str], gt_dir: str | os.PathLike[str],
                  **options: Any) -> dict[str, Any]:
    """Evaluate two directories and return the report as a dict.

    ``options``: the task's parameters (``block_size=16, threshold=0.5`` for saliency-mb)
    plus ``missing``, ``on_error``, ``jobs``, ``include_rows``.

    >>> report = evaluate_dirs("saliency-mb", "pred", "gt", block_size=16)  # doctest: +SKIP
    >>> report["micro_iou"]  # doctest: +SKIP
    """
    runner_keys = {"missing", "on_error", "jobs", "include_rows"}
    run_options = {k: options.pop(k) for k in list(options) if k in runner_keys}
    params = {**default_params(task), **options}
    unknown = set(params) - set(default_params(task))
    if unknown:
        raise ParameterError(f"unknown option(s) for {task}: {', '.join(sorted(unknown))}")
    return run_evaluation(task, os.fspath(pred_dir), os.fspath(gt_dir), params,
                          **run_options).report


def default_params(task: str) -> dict[str, Any]:
    return dict(get_task(task).default_params)


def run_coco_evaluation(
    gt_file: str,
    dt_file: str,
    params: Mapping[str, Any],
    *,
    on_error: str = "fail",
    include_rows: bool = True,
    shard: tuple[int, int] | None = None,
    invocation: Invocation | None = None,
) -> Evaluation:
    """``rpx eval detection --coco-gt F --coco-dt F``: the same report from COCO files.
    Images keep their COCO ids (the COCO view orders them by id); rows are ordered by stem
    (``file_name`` without its suffix)."""
    from collections import Counter

    from rpx_cli.io.box_table import FrameTable
    from rpx_cli.io.coco_files import load_coco
    from rpx_cli.io.filebuffer import sha256_file

    task = get_task("detection")
    params = task.normalise_params(params)
    task.validate_params(params)
    params = select_families(task, {**params, "missing": "error", "on_error": on_error})
    stopwatch = Stopwatch()
    files = load_coco(gt_file, dt_file)
    repeated = sorted(stem for stem, n in Counter(files.stems).items() if n > 1)
    if repeated:
        raise InputError(f"several images have the stem(s) {', '.join(repeated[:5])}: file_name "
                         "stems must be unique", path=gt_file)
    table = FrameTable(len(files.stems), files.categories, files.gt, files.pred, files.image_ids)
    table = table.map_labels(params.get("class_map"))
    params["categories"] = table.vocabulary
    order = sorted(range(table.n), key=files.stems.__getitem__)
    stems = [files.stems[i] for i in order]
    table = table.subset(order)  # frames in stem order; the COCO view orders them by image id
    whole = hashlib.sha256("".join(f"{stem}\t{image_id}\n" for stem, image_id in
                                   zip(stems, table.image_ids.tolist(), strict=True))
                           .encode()).hexdigest()
    if shard is not None:
        from rpx_cli.io.discover import shard_of

        mine = [i for i, stem in enumerate(stems) if shard_of(stem, shard[1]) == shard[0]]
        stems, table = [stems[i] for i in mine], table.subset(mine)
    stats = table
    rows = []
    if include_rows:
        n_gt, n_pred = table.n_gt(), table.n_pred(params["conf_threshold"])
        rows = [{"stem": stem, "pred_path": dt_file, "gt_path": gt_file, "n_gt": a, "n_pred": b}
                for stem, a, b in zip(stems, n_gt, n_pred, strict=True)]
    if not len(stats) and shard is None:
        raise InputError("the COCO GT file has no images", path=gt_file)
    report = build_report(task=task, params=params,
                          summary=_summary(task, stats, [], params, rows), rows=rows,
                          n_pairs=len(stats), unpaired={"pred_only": [], "gt_only": []},
                          errors=[], include_rows=include_rows)
    drop_skipped(task, params, report)
    digests = {"coco_gt": sha256_file(gt_file), "coco_dt": sha256_file(dt_file)}
    if shard is not None:
        report["state"] = {"shard": {"index": shard[0], "count": shard[1]}, "pairing": whole,
                           "inputs": {"coco_gt": gt_file, "coco_dt": dt_file},
                           "stems": stems,
                           "stats": task.encode_stats(stats), "extras": [], "digests": digests}
    invocation = invocation or Invocation(command="rpx_cli.run_coco_evaluation", argv=[], args={})
    report["run_provenance"] = build_provenance(
        command=invocation.command, argv=invocation.argv, args=invocation.args,
        inputs={role: file_input(path, digests[role])
                for role, path in (("coco_gt", gt_file), ("coco_dt", dt_file))},
        outputs={"report": {"path": invocation.out}}, clock=stopwatch.stop(),
        environment=collect_environment(), git=collect_git(os.getcwd()),
    )
    warnings = []
    if files.n_unknown_category:
        warnings.append(f"{files.n_unknown_category} detection(s) name a category that is not in "
                        f"{gt_file}; they are not evaluated (as pycocotools)")
    return Evaluation(report=report, warnings=warnings)


def file_input(path: str, sha256: str) -> dict[str, Any]:
    return {"path": path, "kind": "file", "exists": os.path.isfile(path), "n_files": 1,
            "sha256": sha256}


def merge_reports(parts: list[tuple[str, dict[str, Any], str]], *,
                  invocation: Invocation | None = None) -> dict[str, Any]:
    """Merge the ``--shard`` reports of one evaluation: ``parts`` are ``(path, report,
    sha256 of the file)``. The result equals the single-run report (apart from
    ``run_provenance``): statistics are re-sorted by stem and summarised once."""
    stopwatch = Stopwatch()
    if not parts:
        raise ParameterError("nothing to merge")
    for path, part, _ in parts:
        if not isinstance(part, dict) or "state" not in part:
            raise InputError("is not a --shard partial report (no 'state')", path=path)
    first_path, first, _ = parts[0]
    task = get_task(first["task"])
    count = first["state"]["shard"]["count"]
    for path, part, _ in parts[1:]:
        for key in ("schema", "schema_version", "task", "params"):
            if part.get(key) != first.get(key):
                raise InputError(f"its {key} differs from {first_path}'s: parts of different "
                                 "evaluations cannot be merged", path=path)
        state = part["state"]
        if state["pairing"] != first["state"]["pairing"]:
            raise InputError(f"its inputs (stems and files) differ from {first_path}'s", path=path)
        if state["shard"]["count"] != count:
            raise InputError(f"is shard {state['shard']['index']}/{state['shard']['count']}, "
                             f"not of {count}", path=path)
        if ("rows" in part) != ("rows" in first):
            raise InputError(f"has {'no ' if 'rows' not in part else ''}rows unlike {first_path}",
                             path=path)
    seen: dict[int, str] = {}
    for path, part, _ in parts:
        index = part["state"]["shard"]["index"]
        if index in seen:
            raise InputError(f"shard {index}/{count} is given twice: {seen[index]} and {path}",
                             path=path)
        seen[index] = path
    missing_shards = sorted(set(range(1, count + 1)) - set(seen))
    if missing_shards:
        raise InputError(f"shard(s) {', '.join(f'{k}/{count}' for k in missing_shards)} missing",
                         path=first_path)

    stems = [stem for _, part, _ in parts for stem in part["state"]["stems"]]
    decoded = [task.decode_stats(part["state"]["stats"]) for _, part, _ in parts]
    order = sorted(range(len(stems)), key=stems.__getitem__)
    if task.vector_stats:
        import numpy as np

        stacked = np.concatenate([d for d in decoded if len(d)]) if any(len(d) for d in decoded) \
            else np.empty((0, 0))
        stats: Any = stacked[order] if len(order) else stacked
    else:
        flat = [item for d in decoded for item in d]
        stats = [flat[i] for i in order]
    params = first["params"]
    include_rows = "rows" in first
    rows = sorted((row for _, part, _ in parts for row in part.get("rows", [])),
                  key=lambda row: row["stem"])
    errors = sorted((PairError(**error) for _, part, _ in parts for error in part["errors"]),
                    key=lambda error: error.stem)
    unpaired = {side: sorted(stem for _, part, _ in parts for stem in part["unpaired"][side])
                for side in ("pred_only", "gt_only")}
    if not len(stats):
        raise EvaluationFailed(errors, len(errors),
                               "none of the pairs in these parts could be evaluated")
    extras_all = [extra for _, part, _ in parts for extra in part["state"].get("extras", [])]
    extras = [extras_all[i] for i in order] if extras_all else []
    calculators = plugin_calculators(task.name)
    report = build_report(task=task, params=params,
                          summary=_summary(task, stats, extras, params, rows),
                          rows=rows, n_pairs=len(stats), unpaired=unpaired, errors=errors,
                          include_rows=include_rows, calculators=calculators)
    drop_skipped(task, params, report)
    if "strata" in first["state"]:
        from rpx_cli.deploy import eval_strata

        gathered: dict[str, list[Any]] = {}
        for _, part, _ in parts:
            for key, values in part["state"]["strata"]["inputs"].items():
                gathered.setdefault(key, []).extend(values)
        rank = sorted(range(len(gathered.get("stems", []))), key=gathered["stems"].__getitem__)
        by_stem = {key: [values[i] for i in rank] for key, values in gathered.items()}
        first_strata = first["state"]["strata"]
        report["strata"] = eval_strata.section(params["strata"], first_strata["direction"],
                                               by_stem, first_strata["problems"])
    if "coco_gt" in first["state"]["inputs"]:  # COCO files: the same two files in every part
        inputs = {role: file_input(first["state"]["inputs"][role], first["state"]["digests"][role])
                  for role in ("coco_gt", "coco_dt")}
    else:
        digests = {role: {rel: h for _, part, _ in parts
                          for rel, h in part["state"]["digests"][role].items()}
                   for role in ("pred_dir", "gt_dir")}
        inputs = {name: directory_input(first["state"]["inputs"][role], digests[role])
                  for name, role in zip(task.input_names, ("pred_dir", "gt_dir"), strict=True)}
    for path, part, sha in sorted(parts, key=lambda p: p[1]["state"]["shard"]["index"]):
        inputs[f"shard_{part['state']['shard']['index']}"] = {
            "path": path, "kind": "file", "exists": os.path.isfile(path), "n_files": 1, "sha256": sha}
    invocation = invocation or Invocation(command="rpx_cli.merge_reports", argv=[], args={})
    report["run_provenance"] = build_provenance(
        command=invocation.command, argv=invocation.argv, args=invocation.args, inputs=inputs,
        outputs={"report": {"path": invocation.out}}, clock=stopwatch.stop(),
        environment=collect_environment(), git=collect_git(os.getcwd()),
    )
    return report


def run_readiness(eval_report: str, *, stability: str | None = None, coherence: str | None = None,
                  cost: Mapping[str, float | None] | None = None, model_name: str | None = None,
                  invocation: Invocation | None = None) -> Evaluation:
    """The ``rpx.readiness`` report (SPEC §6) from the files of an eval report (with
    ``--manifest`` strata), and optionally a stability and a coherence report."""
    from rpx_cli.deploy.readiness import build_readiness
    from rpx_cli.report.serialize import loads

    stopwatch = Stopwatch()
    loaded: dict[str, tuple[str, str, Any]] = {}
    for name, path in (("eval", eval_report), ("stability", stability), ("coherence", coherence)):
        if path is None:
            continue
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
        try:
            loaded[name] = (path, hashlib.sha256(data).hexdigest(), loads(data))
        except ValueError as exc:
            raise InputError(f"not valid JSON ({exc})", path=path) from None
    report, warnings = build_readiness(loaded["eval"], stability=loaded.get("stability"),
                                       coherence=loaded.get("coherence"), cost=cost,
                                       model_name=model_name)
    invocation = invocation or Invocation(command="rpx_cli.run_readiness", argv=[], args={})
    report["run_provenance"] = build_provenance(
        command=invocation.command, argv=invocation.argv, args=invocation.args,
        inputs={name: file_input(path, sha) for name, (path, sha, _) in loaded.items()},
        outputs={"report": {"path": invocation.out}}, clock=stopwatch.stop(),
        environment=collect_environment(), git=collect_git(os.getcwd()),
    )
    return Evaluation(report=report, warnings=warnings)
