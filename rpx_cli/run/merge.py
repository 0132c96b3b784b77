"""``rpx merge``: the ``--shard`` parts of one evaluation back into the single-run report.

Each part carries its pairs' statistics by name (``state.stats``); they are re-sorted by
stem, concatenated and summarised once by the same code as a single run, so the merged
``aggregate``, ``dataset`` and rows equal it exactly."""

from __future__ import annotations

from typing import Any

from rpx_cli.errors import EvaluationFailed, InputError, PairError, ParameterError, unescaped
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.run.assemble import assemble
from rpx_cli.run.invocation import Invocation, file_input, input_entry, stamp
from rpx_cli.tasks.calculators import plugin_calculators
from rpx_cli.tasks.registry import get_task
from rpx_cli.tasks.stats import StatTable

Part = tuple[str, dict[str, Any], str]  # (path, report, sha256 of the file)


def merge_reports(parts: list[Part], *, invocation: Invocation | None = None) -> dict[str, Any]:
    """Merge the ``--shard`` reports of one evaluation. The result equals the single-run
    report apart from ``run_provenance``."""
    stopwatch = Stopwatch()
    _check_parts(parts)
    first_path, first, _ = parts[0]
    try:
        task = get_task(first["task"])
    except KeyError as exc:
        raise InputError(str(exc.args[0]), path=first_path) from None
    params = first["params"]
    declared = task.statistics(params)
    tables = []
    for path, part, _ in parts:
        state = part["state"]
        try:
            tables.append(StatTable.decode(declared, state["stats"], len(state["stems"])))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InputError(f"its statistics cannot be read ({exc}); was it written by another "
                             "rpx version? Re-run that shard", path=path) from None
    stems = [stem for _, part, _ in parts for stem in part["state"]["stems"]]
    keys = [unescaped(stem) for stem in stems]  # the order of the files' own names
    order = sorted(range(len(stems)), key=keys.__getitem__)
    stats = StatTable.concat(declared, tables).take(order)
    rows = sorted((row for _, part, _ in parts for row in part.get("rows", [])),
                  key=lambda row: unescaped(row["stem"]))
    errors = sorted((PairError(**error) for _, part, _ in parts for error in part["errors"]),
                    key=lambda error: unescaped(error.stem))
    unpaired = {side: sorted((stem for _, part, _ in parts for stem in part["unpaired"][side]),
                             key=unescaped)
                for side in ("pred_only", "gt_only")}
    if not len(stats):
        raise EvaluationFailed(errors, len(errors),
                               "none of the pairs in these parts could be evaluated")
    extras_all = [extra for _, part, _ in parts for extra in part["state"].get("extras", [])]
    extras = [extras_all[i] for i in order] if extras_all else []
    report = assemble(task, params, stats, rows=rows, extras=extras, unpaired=unpaired,
                      errors=errors, include_rows="rows" in first,
                      calculators=plugin_calculators(task.name))
    if "strata" in first["state"]:
        from rpx_cli.deploy import eval_strata

        gathered: dict[str, list[Any]] = {}
        for _, part, _ in parts:
            for key, values in part["state"]["strata"]["inputs"].items():
                gathered.setdefault(key, []).extend(values)
        strata_keys = [unescaped(stem) for stem in gathered.get("stems", [])]
        rank = sorted(range(len(strata_keys)), key=strata_keys.__getitem__)
        by_stem = {key: [values[i] for i in rank] for key, values in gathered.items()}
        first_strata = first["state"]["strata"]
        report["strata"] = eval_strata.section(params["strata"], first_strata["direction"],
                                               by_stem, first_strata["problems"])
    inputs = {}
    for name, path in first["state"]["inputs"].items():
        digests = [part["state"]["digests"][name] for _, part, _ in parts]
        if isinstance(digests[0], str):  # a file: the same in every part
            inputs[name] = input_entry(path, digests[0])
        else:
            inputs[name] = input_entry(path, {rel: h for d in digests for rel, h in d.items()})
    for path, part, sha in sorted(parts, key=lambda p: p[1]["state"]["shard"]["index"]):
        inputs[f"shard_{part['state']['shard']['index']}"] = file_input(path, sha)
    return stamp(report, invocation or Invocation(command="rpx_cli.merge_reports"), inputs,
                 stopwatch)


def _check_parts(parts: list[Part]) -> None:
    """Every part is a shard report of one evaluation (same task, parameters and inputs),
    and every shard 1..N is there exactly once."""
    if not parts:
        raise ParameterError("nothing to merge")
    for path, part, _ in parts:
        if not isinstance(part, dict) or "state" not in part:
            raise InputError("is not a --shard partial report (no 'state')", path=path)
    first_path, first, _ = parts[0]
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
