"""The mergeable state of an evaluation: what a batch of pairs leaves behind, an exact
associative merge, and the report made from it once — so Ray, Spark, a job array or any
other engine can evaluate batches where it likes and fold the results
(docs/distributed.md).

A :class:`State` holds, for the pairs it covers, the task's declared statistics (a
:class:`~rpx_cli.tasks.stats.StatTable`: numbers in float64, objects with their codecs,
folded statistics such as confusion matrices merged as they come), the rows, errors,
file digests and the unpaired stems. :meth:`State.merge` concatenates two states of one
evaluation (same task, parameters and pairing; no stem in both) and :func:`finalize`
sorts by stem and summarises once with the code of a single run, so any split into
batches, folded in any order and grouping, gives the single-run report exactly.

A ``--shard`` part report is this state on disk: :meth:`State.from_part` reads one and
:meth:`State.to_part` writes the part's ``state`` and the envelope keys it needs.
``rpx merge`` (:func:`rpx_cli.run.merge.merge_reports`) reads the same parts by a faster
path of its own (one sort, rows copied as the parts wrote them); tests hold the two, and
a single run, equal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rpx_cli.engine.pairs import run_pairs
from rpx_cli.errors import InputError, PairError, ParameterError, unescaped
from rpx_cli.io.discover import Pair, pair_dirs
from rpx_cli.run.assemble import assemble, resolve_params
from rpx_cli.run.evaluate import _check_pairing
from rpx_cli.tasks.calculators import plugin_calculators
from rpx_cli.tasks.registry import get_task
from rpx_cli.tasks.stats import StatTable

__all__ = ["Plan", "State", "evaluate_batch", "finalize", "merge_states", "plan",
           "state_report"]


@dataclass(frozen=True)
class Plan:
    """What every batch of one evaluation shares: the task, its resolved parameters, the
    pairs (stem order), the pairing's digest, the unpaired stems and the input folders.
    Picklable: send it (or only its ``pairs`` slices) to the workers."""

    task: str
    params: dict[str, Any]
    pairs: list[Pair]
    pairing: str
    unpaired: dict[str, list[str]]
    inputs: dict[str, str]  # input name (pred_dir, gt_dir, aux folders) -> folder or URL
    include_rows: bool = True

    def batches(self, size: int) -> list[list[Pair]]:
        """The pairs cut into batches of ``size`` (the last one shorter)."""
        if size < 1:
            raise ParameterError(f"batch size must be >= 1, got {size}")
        return [self.pairs[at:at + size] for at in range(0, len(self.pairs), size)]


def plan(task: str, pred_dir: str | os.PathLike[str], gt_dir: str | os.PathLike[str], *,
         missing: str | None = None, on_error: str = "fail", include_rows: bool = True,
         aux: Mapping[str, str | None] | None = None, **params: Any) -> Plan:
    """Pair two folders (or URL prefixes) for ``task`` with its parameters (defaults for
    those not given), as ``rpx eval`` does before it evaluates anything."""
    spec = get_task(task)
    missing = spec.default_missing if missing is None else missing
    unknown = set(params) - set(spec.default_params)
    if unknown:
        raise ParameterError(f"unknown option(s) for {task}: {', '.join(sorted(unknown))}")
    aux_dirs = {option.param: None if (aux or {}).get(option.param) is None
                else os.fspath((aux or {})[option.param]) for option in spec.aux_inputs}
    resolved = resolve_params(spec, {**spec.default_params, **params, **aux_dirs},
                              missing=missing, on_error=on_error)
    pred_dir, gt_dir = os.fspath(pred_dir), os.fspath(gt_dir)
    pairing = pair_dirs(pred_dir, gt_dir, spec.suffixes, missing=missing)
    _check_pairing(pairing, pred_dir, gt_dir, spec.suffixes, missing)
    whole = pairing.digest()
    inputs = {spec.input_names[0]: pred_dir, spec.input_names[1]: gt_dir}
    for option in spec.aux_inputs:
        if aux_dirs[option.param] is not None:
            pairing = pairing.with_aux(option.param, aux_dirs[option.param], option.suffixes)
            inputs[option.param] = aux_dirs[option.param]
    return Plan(task, resolved, pairing.pairs, whole, pairing.unpaired, inputs, include_rows)


@dataclass
class State:
    """The statistics, rows, errors and digests of some pairs of one evaluation."""

    task: str
    params: dict[str, Any]
    pairing: str
    inputs: dict[str, str]
    stems: list[str]
    stats: StatTable
    rows: list[dict[str, Any]] | None  # None: rows are not kept (--no-rows)
    extras: list[dict[str, Any]] = field(default_factory=list)
    errors: list[PairError] = field(default_factory=list)
    unpaired: dict[str, list[str]] = field(default_factory=lambda: {"pred_only": [],
                                                                     "gt_only": []})
    digests: dict[str, Any] = field(default_factory=dict)  # name -> {rel: hex}, or a file's hex
    strata: dict[str, Any] | None = None  # --manifest: {inputs, direction, problems}

    def __len__(self) -> int:
        return len(self.stems)

    def merge(self, other: State) -> State:
        """Both states as one: exact (statistics concatenated or folded, nothing rounded),
        associative, and commutative up to the order :func:`finalize` restores. Raises
        :class:`~rpx_cli.errors.InputError` for states of different evaluations, or that
        share a stem."""
        return merge_states([self, other])

    __or__ = merge

    # --- on disk: a --shard part ----------------------------------------------------------

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
        return cls(task=task.name, params=params, pairing=state["pairing"],
                   inputs=dict(state["inputs"]), stems=list(state["stems"]), stats=stats,
                   rows=list(part["rows"]) if "rows" in part else None,
                   extras=list(state.get("extras", [])),
                   errors=[PairError(**error) for error in part["errors"]],
                   unpaired={side: list(part["unpaired"][side]) for side in ("pred_only", "gt_only")},
                   digests=dict(state["digests"]), strata=state.get("strata"))

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
                "rows": self.rows, "extras": self.extras,
                "errors": [error.as_dict() for error in self.errors], "unpaired": self.unpaired,
                "digests": self.digests, "strata": self.strata}

    @classmethod
    def decode(cls, data: Mapping[str, Any]) -> State:
        task = get_task(data["task"])
        stats = StatTable.decode(task.statistics(data["params"]), data["stats"], len(data["stems"]))
        return cls(task=data["task"], params=dict(data["params"]), pairing=data["pairing"],
                   inputs=dict(data["inputs"]), stems=list(data["stems"]), stats=stats,
                   rows=None if data["rows"] is None else list(data["rows"]),
                   extras=list(data["extras"]),
                   errors=[PairError(**error) for error in data["errors"]],
                   unpaired={k: list(v) for k, v in data["unpaired"].items()},
                   digests=dict(data["digests"]), strata=data.get("strata"))


def evaluate_batch(plan: Plan, pairs: Sequence[Pair] | None = None, *,
                   jobs: int = 1) -> State:
    """Evaluate ``pairs`` (some of ``plan.pairs``; all by default) here, in ``jobs``
    processes: the state of that batch. Under ``on_error="fail"`` an unreadable pair is
    still recorded (:func:`finalize` refuses the report), so every batch can finish."""
    task = get_task(plan.task)
    pairs = plan.pairs if pairs is None else list(pairs)
    calculators = plugin_calculators(plan.task)
    result = run_pairs(task, pairs, plan.params, jobs=jobs, cache=None,
                       keep_rows=plan.include_rows, calculators=calculators)
    digests = {name: {rel: value.hex() for rel, value in result.digests.get(role, {}).items()}
               for name, role in _roles(task, plan.inputs)}
    return State(task=plan.task, params=plan.params, pairing=plan.pairing,
                 inputs=dict(plan.inputs), stems=result.stems, stats=result.stats,
                 rows=result.rows if plan.include_rows else None, extras=result.extras,
                 errors=result.errors, unpaired={k: list(v) for k, v in plan.unpaired.items()},
                 digests=digests)


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
        for key in ("task", "params", "pairing"):
            if getattr(first, key) != getattr(other, key):
                raise InputError(f"states of different evaluations cannot be merged (their "
                                 f"{key} differ)")
        if (first.rows is None) != (other.rows is None):
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
    if with_strata:
        strata = {**with_strata[0], "inputs": {
            key: [value for part in with_strata for value in part["inputs"][key]]
            for key in with_strata[0]["inputs"]}}
    inputs: dict[str, str] = {}
    for state in reversed(states):
        inputs.update(state.inputs)
    return State(
        task=first.task, params=first.params, pairing=first.pairing, inputs=inputs, stems=stems,
        stats=StatTable.concat(first.stats.declared, [state.stats for state in states]),
        rows=None if first.rows is None else [row for state in states for row in state.rows or []],
        extras=[extra for state in states for extra in state.extras],
        errors=[error for state in states for error in state.errors],
        unpaired={side: sorted({stem for state in states for stem in state.unpaired[side]})
                  for side in ("pred_only", "gt_only")},
        digests=digests, strata=strata)


def finalize(state: State, *, check_errors: bool = True) -> dict[str, Any]:
    """The report of a state, without ``run_provenance``: rows, statistics and errors in stem
    order, summarised once by the code of a single run. ``check_errors``: an error under
    ``on_error="fail"`` raises :class:`~rpx_cli.errors.EvaluationFailed`, as a run does."""
    from rpx_cli.errors import EvaluationFailed

    task = get_task(state.task)
    # the order of the files' own names: stems are kept escaped (errors.escaped)
    errors = sorted(state.errors, key=lambda error: unescaped(error.stem))
    if check_errors and errors and state.params.get("on_error") == "fail":
        raise EvaluationFailed(errors, len(state.stems) + len(errors))
    if not len(state.stems):
        raise EvaluationFailed(errors, len(errors), "none of the pairs in these parts could be "
                               "evaluated")
    keys = [unescaped(stem) for stem in state.stems]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    stats = state.stats.take(order)
    rows = [] if state.rows is None else sorted(state.rows, key=lambda row: unescaped(row["stem"]))
    extras = [state.extras[i] for i in order] if state.extras else []
    report = assemble(task, state.params, stats, rows=rows, extras=extras,
                      unpaired={side: sorted(stems, key=unescaped)
                                for side, stems in state.unpaired.items()},
                      errors=errors, include_rows=state.rows is not None,
                      calculators=plugin_calculators(task.name))
    if state.strata is not None:
        from rpx_cli.deploy import eval_strata

        gathered = state.strata["inputs"]
        strata_keys = [unescaped(stem) for stem in gathered.get("stems", [])]
        rank = sorted(range(len(strata_keys)), key=strata_keys.__getitem__)
        by_stem = {key: [values[i] for i in rank] for key, values in gathered.items()}
        report["strata"] = eval_strata.section(state.params["strata"], state.strata["direction"],
                                               by_stem, state.strata["problems"])
    return report


def state_report(state: State, *, invocation: Any = None) -> dict[str, Any]:
    """:func:`finalize` with ``run_provenance`` stamped (inputs and their digests)."""
    from rpx_cli.report.provenance import Stopwatch
    from rpx_cli.run.invocation import Invocation, input_entry, stamp

    stopwatch = Stopwatch()
    report = finalize(state)
    inputs = {name: input_entry(path, state.digests.get(name, {}))
              for name, path in state.inputs.items()}
    return stamp(report, invocation or Invocation(command="rpx_cli.api.report"), inputs,
                 stopwatch)
