"""``rpx merge``: the ``--shard`` parts of one evaluation back into the single-run report.

Each part carries its pairs' statistics by name (``state.stats``): a part is the
mergeable :class:`~rpx_cli.run.state.State` on disk. The parts' states are read back
(:meth:`State.from_part`), merged (:func:`merge_states`) and finalised by the same code as a
single run, so the merged ``aggregate``, ``dataset`` and rows equal it exactly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rpx_cli.errors import EvaluationFailed, InputError, ParameterError, unescaped
from rpx_cli.io.discover import layout_digest, lines_digest, shard_of
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.report.written import written_rows
from rpx_cli.run import pooled
from rpx_cli.run.invocation import Invocation, file_input, stamp
from rpx_cli.run.part_key import check_signature, part_key, part_seal
from rpx_cli.run.pictures import attach_pictures
from rpx_cli.run.state import State, finalize, merge_states, provenance_inputs
from rpx_cli.tasks.base import Task
from rpx_cli.tasks.registry import get_task

Part = tuple[str, dict[str, Any], str]  # (path, report, sha256 of the file)


def merge_reports(parts: list[Part], *, invocation: Invocation | None = None,
                  written: Sequence[bytes] | None = None,
                  warnings: list[str] | None = None, keep_state: bool = False) -> dict[str, Any]:
    """Merge the ``--shard`` reports of one evaluation. The result equals the single-run
    report apart from ``run_provenance`` (``keep_state``: with the pairs' ``statistics``,
    as ``rpx eval --keep-state`` writes them).

    ``written``: the parts' bytes, for a report to be written indented (``dumps``, not
    compact). Rows the merge leaves as they are (a task that fills no row from all pairs
    at once) are then taken as written in the parts (:mod:`rpx_cli.report.written`): the
    report's ``rows`` is an :class:`orjson.Fragment`, the bytes ``dumps`` would write for
    the merged rows. ``warnings``: the lines for stderr are added to it (an image of a
    worst frame that could not be read). With ``RPX_PART_KEY`` in the environment, every
    part must carry a valid signature (:mod:`rpx_cli.run.part_key`)."""
    stopwatch = Stopwatch()
    _check_parts(parts, part_key())
    states = [State.from_part(path, part) for path, part, _ in parts]
    merged = replace(merge_states(states), shard=None)
    if not len(merged):
        raise EvaluationFailed(sorted(merged.errors, key=lambda error: unescaped(error.stem)),
                               len(merged.errors),
                               "none of the pairs in these parts could be evaluated")
    task = get_task(merged.task)
    report = finalize(merged, check_errors=False, written=_rows_as_written(task, parts, written))
    lines = attach_pictures(report, task, merged.params)
    if keep_state:
        report[pooled.SECTION] = pooled.kept_statistics(merged.stems, merged.stats)
    if warnings is not None:
        warnings += lines
    inputs = provenance_inputs(merged)
    for path, part, sha in sorted(parts, key=lambda p: p[1]["state"]["shard"]["index"]):
        inputs[f"shard_{part['state']['shard']['index']}"] = file_input(path, sha)
    return stamp(report, invocation or Invocation(command="rpx_cli.merge_reports"), inputs,
                 stopwatch)


def merge_files(paths: Sequence[str], *, invocation: Invocation | None = None,
                indented: bool = True, warnings: list[str] | None = None,
                keep_state: bool = False) -> dict[str, Any]:
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
    return merge_reports(loaded, invocation=invocation, written=data if indented else None,
                         warnings=warnings, keep_state=keep_state)


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


def _check_parts(parts: list[Part], signing_key: bytes | None) -> None:
    """Every part is a shard report of one evaluation (same task, parameters and inputs),
    every shard 1..N is there exactly once, and each verifies (:func:`_verify_part`; with
    ``signing_key``, its signature too: :mod:`rpx_cli.run.part_key`). A
    part of another shape is named with its wrong key (its JSON Schema, checked only then:
    ~4 ms a part)."""
    if not parts:
        raise ParameterError("nothing to merge")
    for path, part, _ in parts:
        if not isinstance(part, dict) or "state" not in part:
            raise InputError("is not a --shard partial report (no 'state')", path=path)
    try:
        _check_verified(parts, signing_key)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        for path, part, _ in parts:
            _check_shape(path, part)
        raise InputError(f"a part is malformed ({type(exc).__name__}: {exc})",
                         path=parts[0][0]) from None


def _check_verified(parts: list[Part], signing_key: bytes | None) -> None:
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
    for path, part, _ in parts:
        _verify_part(path, part)
        check_signature(part["state"], path, signing_key)
    layouts = {part["state"]["layout"] for _, part, _ in parts}
    by_index = {part["state"]["shard"]["index"]: part for _, part, _ in parts}
    if len(layouts) != 1 or layout_digest(by_index[k]["state"]["shard_digest"]
                                          for k in range(1, count + 1)) != layouts.pop():
        for path, part, _ in parts:  # a part relabelled as another shard: name it
            _check_shard_of_stems(path, part)
        raise InputError("the parts' pairs do not make up the run's pairing (a part of another "
                         "run, or its pairs changed since it was written): re-run the shards",
                         path=first_path)


def _check_shape(path: str, part: dict[str, Any]) -> None:
    """A part has its kind's shape (its JSON Schema; rows: the first few, the verification
    below reads the others' stems): no key merge reads is missing or of another type."""
    from rpx_cli.report.schemas import check_report

    rows = part.get("rows")
    state = part["state"]
    shape = {**part, "rows": rows[:20]} if isinstance(rows, list) else dict(part)
    if isinstance(state, dict):  # the per-stem arrays are checked below, by what reads them
        shape["state"] = {key: value[:20] if isinstance(value, list) else value
                          for key, value in state.items() if key not in ("stats", "digests")}
        shape["state"].update(stats={}, digests={})
    check_report(shape, path)
    if not isinstance(state.get("digests"), dict) or not all(
            isinstance(row, dict) for row in rows or ()):
        raise InputError("is not a valid --shard part: its state or rows are malformed",
                         path=path)


def _check_shard_of_stems(path: str, part: dict[str, Any]) -> None:
    """Every pair of a part is of its shard (by the stable hash of its stem), else an
    :class:`InputError` naming the part: one relabelled as another shard."""
    state = part["state"]
    index, count = state["shard"]["index"], state["shard"]["count"]
    for pair in state["pairs"]:
        stem = pair[0]
        if shard_of(stem, count) != index and shard_of(unescaped(stem), count) != index:
            owner = shard_of(unescaped(stem), count)
            raise InputError(f"holds stem {stem!r} of shard {owner}/{count}, not of its own shard "
                             f"{index}/{count} (a part relabelled?)", path=path)


def _verify_part(path: str, part: dict[str, Any]) -> None:
    """A part is what its run wrote (issue 31.2): its seal matches its content, its pairs
    are its shard's and match their digest, its stems (evaluated, or dropped on error) are
    its pairs' stems, its rows are its stems and its digests name its pairs' files."""
    state = part["state"]
    if not all(key in state for key in ("seal", "pairs", "shard_digest", "layout")):
        raise InputError("carries no seal, pairs or layout (written by an older rpx?): it cannot "
                         "be verified; re-run that shard", path=path)
    try:
        sealed = part_seal(part, parsed=True)
    except (TypeError, ValueError, KeyError, AttributeError):
        sealed = None
    if sealed != state["seal"]:
        raise InputError("its content does not match its seal: it was changed after it was "
                         "written (statistics, stems, errors, shard index?); re-run that shard",
                         path=path)
    pairs = state["pairs"]
    if not isinstance(pairs, list) or not all(
            isinstance(p, list) and p and all(v is None or isinstance(v, str) for v in p)
            for p in pairs):
        raise InputError("its pairs are malformed", path=path)
    # names as the part stores them: pair_line of the run's names gave these lines
    lines = ["\t".join(value or "" for value in pair) for pair in pairs]
    lines += [f"{side}\t{stem}" for side in ("pred_only", "gt_only")
              for stem in part["unpaired"][side]]
    if lines_digest(lines) != state["shard_digest"]:
        raise InputError("its pairs do not match their digest (a pair removed or added?)",
                         path=path)
    paired = {pair[0] for pair in pairs}
    dropped = {error["stem"] for error in part["errors"]
               if error.get("effect") != "empty_prediction" and error["stem"]}
    evaluated = set(state["stems"])
    if len(evaluated) != len(state["stems"]) or (evaluated | dropped) != paired:
        lost = sorted(paired - evaluated - dropped)[:3]
        raise InputError("its stems are not its pairs' (evaluated or dropped on error)"
                         + (f": {', '.join(map(repr, lost))} unaccounted for" if lost else ""),
                         path=path)
    if "rows" in part and {row.get("stem") for row in part["rows"]} != evaluated:
        raise InputError("its rows are not its evaluated stems", path=path)
    files = {"pred": {pair[1] for pair in pairs if len(pair) > 2},
             "gt": {pair[2] for pair in pairs if len(pair) > 2}}
    task = get_task(part["task"])
    for name, role in (("pred", task.input_names[0]), ("gt", task.input_names[1])):
        known = state["digests"].get(role)
        if role in (state.get("whole") or ()):  # files of the whole set: every part reads them
            continue
        if isinstance(known, dict) and task.folder_pairs:  # a pair's files are in its folder
            known = {rel.rpartition("/")[0]: None for rel in known}
        if isinstance(known, dict) and not set(known) <= files[name]:
            stray = sorted(set(known) - files[name])[:3]
            raise InputError(f"its digests name files that are not its pairs' ({stray})",
                             path=path)
