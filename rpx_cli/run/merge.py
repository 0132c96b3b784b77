"""``rpx merge``: the ``--shard`` parts of one evaluation back into the single-run report.

Each part carries its pairs' statistics by name (``state.stats``): a part is the
mergeable :class:`~rpx_cli.run.state.State` on disk. The parts' states are folded, re-sorted
by stem and summarised once by the same code as a single run, so the merged ``aggregate``,
``dataset`` and rows equal it exactly."""

from __future__ import annotations

from typing import Any

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.run.invocation import Invocation, file_input, input_entry, stamp
from rpx_cli.run.state import State, finalize, merge_states

Part = tuple[str, dict[str, Any], str]  # (path, report, sha256 of the file)


def merge_reports(parts: list[Part], *, invocation: Invocation | None = None) -> dict[str, Any]:
    """Merge the ``--shard`` reports of one evaluation. The result equals the single-run
    report apart from ``run_provenance``."""
    stopwatch = Stopwatch()
    _check_parts(parts)
    # each part is the mergeable state on disk (run/state.py): folded, then summarised once
    state = merge_states(State.from_part(path, part) for path, part, _ in parts)
    report = finalize(state, check_errors=False)
    inputs = {name: input_entry(path, state.digests[name]) for name, path in state.inputs.items()}
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
