"""The one run pipeline: a :class:`Plan` (the task, its resolved parameters, the pairs),
the :class:`State` a batch of pairs leaves behind, an exact associative merge, and the
report made from it once.

Every workflow goes through it: ``rpx eval`` on folders (:func:`plan_folders`,
:func:`evaluate_batch` over every pair, :func:`finalize`), input files
(:mod:`rpx_cli.run.files`: the file's records scored by the same per-pair step into a
state), a ``--shard`` part (the state on disk, :meth:`State.part`), ``rpx merge``
(:mod:`rpx_cli.run.merge`: parts read back with :meth:`State.from_part`, merged,
finalised), ``--executor dask`` (the pairs of a batch evaluated on a cluster), and any other
engine (Ray, Spark, a job array) through the public API (docs/distributed.md).

A :class:`State` holds, for the pairs it covers, the task's declared statistics (a
:class:`~rpx_cli.tasks.stats.StatTable`: numbers in float64, objects with their codecs,
folded statistics such as confusion matrices merged as they come), the rows, errors,
file digests and the unpaired stems. :func:`merge_states` concatenates states of one
evaluation (same task, parameters and pairing; no stem in two states) and :func:`finalize`
sorts by stem and summarises once, so any split into batches, folded in any order and
grouping, gives the single-run report exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rpx_cli.engine import CacheTally, Executor, Progress
from rpx_cli.engine.pairs import RunResult, run_pairs
from rpx_cli.errors import EvaluationFailed, InputError, PairError, ParameterError, unescaped
from rpx_cli.io.digest_cache import DigestCache
from rpx_cli.io.discover import Pair, layout_digest
from rpx_cli.io.skipped import skipped_counts
from rpx_cli.run.assemble import assemble
from rpx_cli.run.at_once import read_at_once
from rpx_cli.run.plan import Plan, plan
from rpx_cli.tasks.calculators import plugin_calculators
from rpx_cli.tasks.registry import get_task
from rpx_cli.tasks.stats import StatTable

__all__ = ["Plan", "State", "evaluate_batch", "finalize", "merge_states", "plan", "state_report"]


@dataclass
class State:
    """The statistics, rows, errors and digests of some pairs of one evaluation."""

    task: str
    params: dict[str, Any]
    pairing: str
    inputs: dict[str, str]
    stems: list[str]
    stats: StatTable
    rows: list[dict[str, Any]] | None  # None: rows are not kept (--no-rows without strata)
    extras: list[dict[str, Any]] = field(default_factory=list)
    errors: list[PairError] = field(default_factory=list)
    unpaired: dict[str, list[str]] = field(default_factory=lambda: {"pred_only": [],
                                                                     "gt_only": []})
    digests: dict[str, Any] = field(default_factory=dict)  # name -> {rel: hex}, or a file's hex
    strata: dict[str, Any] | None = None  # --manifest: {inputs, direction, problems}
    shard: tuple[int, int] | None = None  # the --shard part this state is
    include_rows: bool = True  # the report has rows (rows may be kept for strata only)
    # --manifest of a run (not of parts read back): strata inputs come from the final rows
    strata_plan: Any = None
    # what the run tells the user and the digest cache (not part of a --shard part)
    warnings: dict[str, list[str]] = field(default_factory=dict)  # kind -> paths
    tally: CacheTally = field(default_factory=CacheTally)
    execution: dict[str, Any] = field(default_factory=dict)  # processes used: jobs (auto: why)
    # a --shard run's own pairs and the digest of every shard's (Plan.shard_digests): what
    # its part carries so that `rpx merge` can verify it (run/merge.py)
    pairs: list[list[str | None]] | None = None
    shard_digests: list[str] | None = None
    # objects the inputs held that the run cannot express, left out: input name -> kind of
    # object -> how many (run_provenance.inputs.<name>.skipped; a --shard part keeps it)
    skipped: dict[str, dict[str, int]] = field(default_factory=dict)
    # the inputs read whole before pairing (files of the whole set, Task.read_sets): their
    # digests are of the set's files, the same in every part (a --shard part names them)
    whole: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.stems)

    def merge(self, other: State) -> State:
        """Both states as one: exact (statistics concatenated or folded, nothing rounded),
        associative, and commutative up to the order :func:`finalize` restores. Raises
        :class:`~rpx_cli.errors.InputError` for states of different evaluations, or that
        share a stem."""
        return merge_states([self, other])

    __or__ = merge

    @classmethod
    def of_result(cls, plan: Plan, result: RunResult, *,
                  digests: Mapping[str, Any] | None = None) -> State:
        """The state of the pairs ``result`` holds (run under ``plan``). ``digests``: the
        inputs' digests when they are files, not folders."""
        task = get_task(plan.task)
        if digests is None:
            digests = {name: {rel: value.hex() for rel, value in result.digests.get(role, {}).items()}
                       for name, role in _roles(task, plan.inputs)
                       if name not in plan.file_digests}
            digests.update(plan.file_digests)  # files a task's listing read
        keep = keeps_rows(plan)
        notes, warnings = skipped_counts(result.warnings)
        names = {role: name for name, role in _roles(task, plan.inputs)}
        skipped = {names.get(role, role): counts for role, counts in notes.items()}
        return cls(task=plan.task, params=plan.params, pairing=plan.pairing,
                   inputs=dict(plan.inputs), stems=result.stems, stats=result.stats,
                   rows=result.rows if keep else None, extras=result.extras,
                   errors=result.errors, unpaired={k: list(v) for k, v in plan.unpaired.items()},
                   digests=dict(digests), shard=plan.shard, include_rows=plan.include_rows,
                   strata_plan=plan.strata, warnings=warnings, tally=result.tally,
                   execution=result.execution,
                   pairs=plan.part_pairs() if plan.shard is not None else None,
                   shard_digests=plan.shard_digests, skipped=skipped,
                   whole=[name for name in task.input_names if name in plan.file_digests])

    # --- on disk: a --shard part ----------------------------------------------------------

    def part(self) -> dict[str, Any]:
        """A ``--shard`` part report's ``state``: which part of which run it is, and the
        statistics of its pairs by name (what ``rpx merge`` needs), with what lets merge
        verify it: the shard's pairs (stem, prediction and GT files), their digest and the
        digest of every shard's (the run's pairing bound to the shard count). The report
        adds its ``seal`` (:func:`seal_part`)."""
        if self.shard is None:
            raise ValueError("not a --shard state")
        part = {"shard": {"index": self.shard[0], "count": self.shard[1]},
                "pairing": self.pairing, "inputs": dict(self.inputs), "stems": self.stems,
                "stats": self.stats.encode(), "extras": self.extras, "digests": dict(self.digests)}
        if self.pairs is not None and self.shard_digests is not None:
            part["pairs"] = self.pairs
            part["shard_digest"] = self.shard_digests[self.shard[0] - 1]
            part["layout"] = layout_digest(self.shard_digests)
        if self.strata_plan is not None or self.strata is not None:
            part["strata"] = self.strata_inputs()
        if self.skipped:
            part["skipped"] = self.skipped
        if self.whole:
            part["whole"] = self.whole
        return part

    def strata_inputs(self) -> dict[str, Any]:
        """``--manifest``: each row's primary metric with its phase and difficulty, and the
        manifest's problems (what a part stores and :func:`finalize` stratifies). A run's
        come from its rows once :func:`finalize` has completed them."""
        if self.strata is not None:
            return self.strata
        from rpx_cli.deploy import eval_strata

        plan = self.strata_plan
        keys = [unescaped(row["stem"]) for row in self.rows or []]
        rows = [(self.rows or [])[i] for i in sorted(range(len(keys)), key=keys.__getitem__)]
        return {"inputs": eval_strata.inputs(plan, rows), "direction": plan.direction,
                "problems": plan.problems}

    @classmethod
    def from_part(cls, path: str, part: Mapping[str, Any]) -> State:
        """The state a ``--shard`` part report holds (``path`` names it in errors)."""
        try:
            task = get_task(part["task"])
        except KeyError as exc:
            raise InputError(str(exc.args[0]), path=path) from None
        state = part["state"]
        params = part["params"]
        try:
            stats = StatTable.decode(task.statistics(params), state["stats"], len(state["stems"]))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InputError(f"its statistics cannot be read ({exc}); was it written by another "
                             "rpx version? Re-run that shard", path=path) from None
        shard = state.get("shard") or {}
        return cls(task=task.name, params=params, pairing=state["pairing"],
                   inputs=dict(state["inputs"]), stems=list(state["stems"]), stats=stats,
                   rows=list(part["rows"]) if "rows" in part else None,
                   extras=list(state.get("extras", [])),
                   errors=[PairError.from_dict(error) for error in part["errors"]],
                   unpaired={side: list(part["unpaired"][side]) for side in ("pred_only", "gt_only")},
                   digests=dict(state["digests"]), strata=state.get("strata"),
                   shard=(shard["index"], shard["count"]) if shard else None,
                   include_rows="rows" in part, skipped=_skipped_of(state, path),
                   whole=[str(name) for name in state.get("whole") or ()])

    @classmethod
    def read(cls, path: str) -> State:
        """The state of the ``--shard`` part at ``path`` (a file or a URL)."""
        from rpx_cli.run.documents import read_report

        part, _ = read_report(path)
        if "state" not in part:
            raise InputError("is not a --shard partial report (no 'state')", path=path)
        return cls.from_part(path, part)

    def encode(self) -> dict[str, Any]:
        """A JSON-ready copy (what :meth:`decode` reads): send it between processes or
        store it; a ``--shard`` part keeps the same fields in its ``state``."""
        return {"task": self.task, "params": self.params, "pairing": self.pairing,
                "inputs": self.inputs, "stems": self.stems, "stats": self.stats.encode(),
                "rows": self.rows, "include_rows": self.include_rows, "extras": self.extras,
                "errors": [error.as_dict() for error in self.errors], "unpaired": self.unpaired,
                "digests": self.digests,
                "strata": self.strata_inputs() if self.strata_plan is not None else self.strata,
                **({"skipped": self.skipped} if self.skipped else {}),
                **({"whole": self.whole} if self.whole else {})}

    @classmethod
    def decode(cls, data: Mapping[str, Any]) -> State:
        task = get_task(data["task"])
        stats = StatTable.decode(task.statistics(data["params"]), data["stats"], len(data["stems"]))
        return cls(task=data["task"], params=dict(data["params"]), pairing=data["pairing"],
                   inputs=dict(data["inputs"]), stems=list(data["stems"]), stats=stats,
                   rows=None if data["rows"] is None else list(data["rows"]),
                   extras=list(data["extras"]),
                   errors=[PairError.from_dict(error) for error in data["errors"]],
                   unpaired={k: list(v) for k, v in data["unpaired"].items()},
                   digests=dict(data["digests"]), strata=data.get("strata"),
                   include_rows=data.get("include_rows", data["rows"] is not None),
                   skipped=_skipped_of(data, "a state"), whole=list(data.get("whole") or ()))


def _skipped_of(state: Mapping[str, Any], path: str) -> dict[str, dict[str, int]]:
    """A part's (or an encoded state's) ``skipped`` counts, checked."""
    given = state.get("skipped") or {}
    if not isinstance(given, Mapping) or not all(
            isinstance(counts, Mapping) and all(type(n) is int and n > 0 for n in counts.values())
            for counts in given.values()):
        raise InputError("its 'skipped' counts are not {input: {kind: count}}", path=path)
    return {str(name): dict(counts) for name, counts in given.items()}


def evaluate_batch(plan: Plan, pairs: Sequence[Pair] | None = None, *, jobs: int | None = 1,
                   cache: DigestCache | None = None, executor: Executor | None = None,
                   progress: Progress | None = None) -> State:
    """Evaluate ``pairs`` (some of ``plan.pairs``; all by default) in ``jobs`` processes
    (None: as many as the work pays for) or on ``executor``'s cluster: the state of that
    batch. Under ``on_error="fail"`` an
    unreadable pair is still recorded (:func:`finalize` refuses the report), so every batch
    can finish."""
    task = get_task(plan.task)
    pairs = plan.pairs if pairs is None else list(pairs)
    calculators = plugin_calculators(plan.task)
    result = None
    if executor is None and not calculators:  # read every pair at once, where the task can
        result = read_at_once(task, pairs, plan, keep_rows=keeps_rows(plan), jobs=jobs,
                              progress=progress)
    if result is None:
        result = run_pairs(task, pairs, plan.params, jobs=jobs, cache=cache, progress=progress,
                           keep_rows=keeps_rows(plan), calculators=calculators,
                           executor=executor)
    return State.of_result(plan, result)


def keeps_rows(plan: Plan) -> bool:
    """Rows are kept for the report, or (``--no-rows``) for what is made of them: the
    strata, and the worst frames (``--keep-worst``), ranked by a row metric."""
    return plan.include_rows or plan.strata is not None or bool(plan.params.get("keep_worst"))


def _roles(task: Any, inputs: Mapping[str, str]) -> Iterable[tuple[str, str]]:
    """(input name, the engine's digest role) of each input folder."""
    for name in inputs:
        if name == task.input_names[0]:
            yield name, "pred"
        elif name == task.input_names[1]:
            yield name, "gt"
        else:
            yield name, name


def merge_states(states: Iterable[State]) -> State:
    """All states as one, in one pass (the same as folding them pairwise with
    :meth:`State.merge`, in any order or grouping, without copying the columns again at
    every step)."""
    states = list(states)
    if not states:
        raise ParameterError("nothing to merge")
    first = states[0]
    if len(states) == 1:
        return first
    for other in states[1:]:
        if first.task != other.task:
            raise InputError(f"states of different evaluations cannot be merged (tasks "
                             f"{first.task} and {other.task})")
        if first.params != other.params:
            raise InputError("states of different evaluations cannot be merged (their params "
                             f"differ: {params_difference(first.params, other.params)})")
        if first.pairing != other.pairing:
            raise InputError("states of different evaluations cannot be merged (their "
                             "pairing differs: other inputs)")
        if (first.rows is None) != (other.rows is None) or first.include_rows != other.include_rows:
            raise InputError("one state has rows and another none (include_rows differs)")
    stems = [stem for state in states for stem in state.stems]
    if len(set(stems)) != len(stems):
        seen: set[str] = set()
        twice = next(stem for stem in stems if stem in seen or seen.add(stem))
        raise InputError(f"two states evaluated the stem '{twice}': a pair must be in one "
                         "batch only")
    digests: dict[str, Any] = {}
    for state in states:
        for name, value in state.digests.items():
            if isinstance(value, str):  # a file input: the same in every state
                digests.setdefault(name, value)
            else:
                digests.setdefault(name, {}).update(value)
    strata = None
    with_strata = [state.strata for state in states if state.strata is not None]
    plans = [state.strata_plan for state in states if state.strata_plan is not None]
    if plans and len(plans) < len(states):
        raise InputError("one state has strata and another none (--manifest differs)")
    if with_strata and plans:  # parts read back and batches of a run: stratify from rows
        with_strata = []
    if with_strata:
        strata = {**with_strata[0], "inputs": {
            key: [value for part in with_strata for value in part["inputs"][key]]
            for key in with_strata[0]["inputs"]}}
    inputs: dict[str, str] = {}
    for state in reversed(states):
        inputs.update(state.inputs)
    warnings: dict[str, list[str]] = {}
    tally = CacheTally()
    skipped: dict[str, dict[str, int]] = {}
    for state in states:
        for kind, paths in state.warnings.items():
            warnings.setdefault(kind, []).extend(paths)
        tally.add(state.tally)
        for name, counts in state.skipped.items():
            side = skipped.setdefault(name, {})
            for what, count in counts.items():
                side[what] = side.get(what, 0) + count
    return State(
        task=first.task, params=first.params, pairing=first.pairing, inputs=inputs, stems=stems,
        stats=StatTable.concat(first.stats.declared, [state.stats for state in states]),
        rows=None if first.rows is None else [row for state in states for row in state.rows or []],
        extras=[extra for state in states for extra in state.extras],
        errors=[error for state in states for error in state.errors],
        unpaired={side: sorted({stem for state in states for stem in state.unpaired[side]})
                  for side in ("pred_only", "gt_only")},
        digests=digests, strata=strata, include_rows=first.include_rows,
        strata_plan=plans[0] if plans else None, warnings=warnings, tally=tally,
        skipped={name: dict(sorted(counts.items())) for name, counts in sorted(skipped.items())},
        whole=first.whole)


def params_difference(a: Mapping[str, Any], b: Mapping[str, Any], most: int = 3) -> str:
    """The parameters two states disagree on, with both values (``max_depth 5.0 vs None``)."""
    keys = sorted(key for key in {*a, *b} if (key in a) != (key in b) or a[key] != b[key])
    shown = [f"{key} {a.get(key)!r:.40} vs {b.get(key)!r:.40}" for key in keys[:most]]
    return ", ".join(shown) + (f" and {len(keys) - most} more" if len(keys) > most else "")


def finalize(state: State, *, check_errors: bool = True,
             written: Sequence[bytes] | None = None) -> dict[str, Any]:
    """The report of a state, without ``run_provenance``: rows, statistics and errors in stem
    order, summarised once by the code of a single run (a ``--shard`` state: the part's
    summary, without strata). ``check_errors``: an error under ``on_error="fail"``, or no
    pair at all, raises :class:`~rpx_cli.errors.EvaluationFailed`, as a run does.

    ``written``: each row as a part wrote it (aligned with ``state.rows``), for ``rpx
    merge``: the report's ``rows`` is then one :class:`orjson.Fragment` of them in stem
    order, the bytes ``dumps`` would write for the rows (:mod:`rpx_cli.report.written`)."""
    task = get_task(state.task)
    # the order of the files' own names: stems are kept escaped (errors.escaped)
    errors = sorted(state.errors, key=lambda error: unescaped(error.stem))
    if check_errors and errors and state.params.get("on_error") == "fail":
        raise EvaluationFailed(errors, len(state.stems) + sum(error.side != "pred"
                                                              for error in errors))
    if check_errors and not len(state.stems) and state.shard is None:
        raise EvaluationFailed(errors, len(errors), "none of the pairs could be evaluated; no "
                               "report written")
    keys = [unescaped(stem) for stem in state.stems]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    stats = state.stats if order == list(range(len(order))) else state.stats.take(order)
    rows: list[dict[str, Any]] = []
    rows_order: list[int] = []
    if state.rows is not None:
        row_stems = [row["stem"] for row in state.rows]
        rows_order = order if row_stems == state.stems else \
            sorted(range(len(row_stems)), key=lambda i: unescaped(row_stems[i]))
        rows = [state.rows[i] for i in rows_order]
    extras = [state.extras[i] for i in order] if state.extras else []
    report = assemble(task, state.params, stats, rows=rows, extras=extras,
                      stems=[state.stems[i] for i in order], part=state.shard is not None,
                      unpaired={side: sorted(stems, key=unescaped)
                                for side, stems in state.unpaired.items()},
                      errors=errors, include_rows=state.include_rows,
                      calculators=plugin_calculators(task.name))
    if (state.strata is not None or state.strata_plan is not None) and state.shard is None:
        from rpx_cli.deploy import eval_strata

        strata = state.strata_inputs()  # after assemble: rows complete (summarize_rows)
        gathered = strata["inputs"]
        strata_keys = [unescaped(stem) for stem in gathered.get("stems", [])]
        rank = sorted(range(len(strata_keys)), key=strata_keys.__getitem__)
        by_stem = {key: [values[i] for i in rank] for key, values in gathered.items()}
        report["strata"] = eval_strata.section(state.params["strata"], strata["direction"],
                                               by_stem, strata["problems"])
    if written is not None and "rows" in report:
        from rpx_cli.report.written import rows_fragment

        report["rows"] = rows_fragment([written[i] for i in rows_order])
    return report


def provenance_inputs(state: State) -> dict[str, Any]:
    """``run_provenance.inputs`` of the folders or files a state was evaluated from."""
    from rpx_cli.run.invocation import input_entry

    out = {name: input_entry(path, state.digests.get(name, {}))
           for name, path in state.inputs.items()}
    for name, counts in state.skipped.items():  # what the input held that the run cannot express
        if name in out and counts:
            out[name]["skipped"] = dict(sorted(counts.items()))
    return out


def skipped_lines(state: State) -> list[str]:
    """One stderr line per input and kind of object left out (``State.skipped``)."""
    return [f"{name}: {count} {what} skipped (rpx cannot express them; counted in "
            f"run_provenance.inputs.{name}.skipped)"
            for name, counts in sorted(state.skipped.items())
            for what, count in sorted(counts.items())]


def state_report(state: State, *, invocation: Any = None) -> dict[str, Any]:
    """:func:`finalize` with ``run_provenance`` stamped (inputs and their digests)."""
    from rpx_cli.report.provenance import Stopwatch
    from rpx_cli.run.invocation import Invocation, stamp

    stopwatch = Stopwatch()
    report = finalize(replace(state, shard=None))
    return stamp(report, invocation or Invocation(command="rpx_cli.api.report"),
                 provenance_inputs(state), stopwatch)
