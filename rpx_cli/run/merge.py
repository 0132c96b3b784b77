"""``rpx merge``: the ``--shard`` parts of one evaluation back into the single-run report.

Each part carries its pairs' statistics by name (``state.stats``): a part is the
mergeable :class:`~rpx_cli.run.state.State` on disk. The parts' states are folded, re-sorted
by stem and summarised once by the same code as a single run, so the merged ``aggregate``,
``dataset`` and rows equal it exactly."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any

from rpx_cli.errors import EvaluationFailed, InputError, PairError, ParameterError, unescaped
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.report.written import rows_fragment, written_rows
from rpx_cli.run.assemble import assemble
from rpx_cli.run.invocation import Invocation, file_input, input_entry, stamp
from rpx_cli.tasks.base import Task
from rpx_cli.tasks.calculators import plugin_calculators
from rpx_cli.tasks.registry import get_task
from rpx_cli.tasks.stats import StatTable

Part = tuple[str, dict[str, Any], str]  # (path, report, sha256 of the file)


def merge_reports(parts: list[Part], *, invocation: Invocation | None = None,
                  written: Sequence[bytes] | None = None) -> dict[str, Any]:
    """Merge the ``--shard`` reports of one evaluation. The result equals the single-run
    report apart from ``run_provenance``.

    ``written``: the parts' bytes, for a report to be written indented (``dumps``, not
    compact). Rows the merge leaves as they are (a task that fills no row from all pairs
    at once) are then taken as written in the parts (:mod:`rpx_cli.report.written`): the
    report's ``rows`` is an :class:`orjson.Fragment`, the bytes ``dumps`` would write for
    the merged rows."""
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
    rows = [row for _, part, _ in parts for row in part.get("rows", [])]
    as_written = _rows_as_written(task, parts, written)
    if list(map(dict.get, rows, repeat("stem"))) == stems:  # a row per statistic: one sort
        rows_order = order
    else:
        rows_order = sorted(range(len(rows)), key=lambda i: unescaped(rows[i]["stem"]))
    rows = list(map(rows.__getitem__, rows_order))
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
            files: dict[str, str] = {}
            for part_files in digests:
                files.update(part_files)
            inputs[name] = input_entry(path, files)
    for path, part, sha in sorted(parts, key=lambda p: p[1]["state"]["shard"]["index"]):
        inputs[f"shard_{part['state']['shard']['index']}"] = file_input(path, sha)
    if as_written and "rows" in report:
        report["rows"] = rows_fragment(list(map(as_written.__getitem__, rows_order)))
    return stamp(report, invocation or Invocation(command="rpx_cli.merge_reports"), inputs,
                 stopwatch)


def merge_files(paths: Sequence[str], *, invocation: Invocation | None = None,
                indented: bool = True) -> dict[str, Any]:
    """Read the ``--shard`` parts at ``paths`` and merge them (:func:`merge_reports`);
    each part's sha256 is computed on a helper thread while the next one is parsed
    (hashlib releases the GIL). ``indented``: the report will be written indented, so rows
    may be taken as the parts wrote them."""
    from concurrent.futures import ThreadPoolExecutor

    from rpx_cli.run.documents import read_report, sha256_hex

    documents, data, digests = [], [], []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rpx-merge-digest") as pool:
        for path in paths:
            document, raw = read_report(path)
            documents.append(document)
            data.append(raw)
            digests.append(pool.submit(sha256_hex, raw))
        loaded = [(path, document, digest.result())
                  for path, document, digest in zip(paths, documents, digests, strict=True)]
    return merge_reports(loaded, invocation=invocation, written=data if indented else None)


def _rows_as_written(task: Task, parts: list[Part],
                     written: Sequence[bytes] | None) -> list[bytes] | None:
    """Every part's rows as written, in the parts' order, when each part is laid out as
    rpx writes an indented report and the task leaves rows as the parts computed them
    (its ``summarize_rows`` adds nothing from all pairs at once); else None."""
    if written is None or type(task).summarize_rows is not Task.summarize_rows:
        return None
    rows: list[bytes] = []
    for (_, part, _), data in zip(parts, written, strict=True):
        count = len(part.get("rows", ()))
        if not count:
            continue
        found = written_rows(data, count)
        if found is None:
            return None
        rows += found
    return rows


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
