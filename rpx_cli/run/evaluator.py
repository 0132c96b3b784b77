"""``rpx_cli.Evaluator``: a task's metrics inside a training loop, without files.

Each process folds its samples into a state with :meth:`Evaluator.update`; the states
(:meth:`Evaluator.state`, compact versioned bytes) are gathered across processes and
merged (:meth:`Evaluator.merged`); the report is computed once (:meth:`Evaluator.report`)::

    ev = Evaluator("detection3d", protocol="autoware", ranges=["0:50", "50:90"])
    for key, pred, gt in batches:
        ev.update(key, pred, gt)
    states = gather(ev.state())          # e.g. torch.distributed.all_gather_object
    report = Evaluator.merged(states).report()

It is the file pipeline with the files taken away: the options are resolved by the same
declarations as the CLI flags (``params`` is what ``rpx eval`` writes for those flags), a
sample is read by the task's own readers from the in-memory value
(:mod:`rpx_cli.io.memory`) and scored by the one per-pair step
(:func:`rpx_cli.engine.pairs.score_pair`), and states are the run's
:class:`~rpx_cli.run.state.State`, merged and finalised by the code ``rpx merge`` uses. The
report equals ``rpx eval`` on the same samples written as files (``.npy`` for arrays,
``.json`` for the per-stem structures), except ``run_provenance`` and the rows'
``pred_path``/``gt_path`` (null: there are no files).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from rpx_cli.engine.pairs import Gathering, score_loaded
from rpx_cli.engine.workers import guarded_parse
from rpx_cli.errors import SWAP_HINT, InputError, ParameterError, RpxError, escaped, first_line
from rpx_cli.io.mask_arrays import as_array
from rpx_cli.io.memory import memory_path, read_in_memory
from rpx_cli.params import resolve
from rpx_cli.params.workflows import INCLUDE_ROWS
from rpx_cli.report.provenance import Stopwatch
from rpx_cli.run.evaluator_state import decode_state, encode_state, pairing_of
from rpx_cli.run.invocation import Invocation, stamp
from rpx_cli.run.state import State, finalize, merge_states
from rpx_cli.tasks.calculators import plugin_calculators
from rpx_cli.tasks.registry import get_task

IN_MEMORY = "<in memory>"  # an auxiliary input given with each update, not as a folder


class Evaluator:
    """Evaluate ``task`` on samples given in memory. ``options``: the task's options by name,
    checked exactly as the CLI flags are (``ranges=["0:50"]``, ``protocol="autoware"``;
    a bad value is the CLI's :class:`~rpx_cli.errors.ParameterError`, before any update);
    ``metrics``: the metric families to compute (``"ap,tp"`` or a list; the others are
    named in ``params.skipped_metrics``); ``include_rows``: keep a row per sample (checked
    by the declaration of ``--no-rows``)."""

    def __init__(self, task: str, *, include_rows: bool = True, **options: Any) -> None:
        try:
            spec = get_task(task)
        except KeyError as exc:
            raise ParameterError(str(exc.args[0])) from None
        self.task = spec.name
        self._spec = spec
        # auxiliary inputs (segmentation3d's points) come with each update: given, in memory
        aux = {option.param: IN_MEMORY for option in spec.aux_inputs}
        # in-memory samples: nothing on disk to settle a parameter (formats: auto is rpx's)
        self.params: dict[str, Any] = {**spec.settle_inputs(resolve(spec, {**options, **aux}),
                                                            {"pred": None, "gt": None}),
                                       "missing": spec.default_missing, "on_error": "fail"}
        spec.check_in_memory(self.params)
        self.include_rows = INCLUDE_ROWS.convert(include_rows)
        self._calculators = plugin_calculators(spec.name)
        self._aux_names = {option.param.removesuffix("_dir"): option.param
                           for option in spec.aux_inputs}
        self.reset()

    def reset(self) -> None:
        """Forget every sample (a new epoch)."""
        self._gathering = Gathering(self._spec, self.params)
        self._keys: set[str] = set()
        self._base: State | None = None  # the states this evaluator was merged from

    def __len__(self) -> int:
        return len(self._keys)

    # --- samples --------------------------------------------------------------------------

    def update(self, key: str, pred: Any, gt: Any, **extra: Any) -> None:
        """Add one sample: ``key`` its stem (unique over every evaluator merged), ``pred`` and
        ``gt`` what the task reads from one file (an array for a map or labels; the per-stem
        JSON structure as dicts and lists, numpy arrays allowed; text; any tensor-like as its
        array; tracking's MOT rows as an ``(N, >= 6)`` array), ``pred=None`` a
        missing prediction (scored as ``--missing empty`` scores it); ``extra``: the task's
        auxiliary inputs (segmentation3d: ``points=``). A bad sample raises the file
        reader's :class:`~rpx_cli.errors.InputError`, naming the key."""
        if not isinstance(key, str) or not key:
            raise ParameterError(f"a sample's key must be a non-empty string, got {key!r}")
        stem = escaped(key)
        if stem in self._keys:
            raise InputError(f"the key '{stem}' was given twice: keys must be unique")
        unknown = sorted(set(extra) - set(self._aux_names) - set(self._aux_names.values()))
        if unknown:
            known = ", ".join(sorted(self._aux_names)) or "none"
            raise ParameterError(f"{self.task} takes no {', '.join(unknown)} (auxiliary "
                                 f"inputs: {known})")
        try:
            self._update(stem, pred, gt, extra)
        except InputError as exc:  # the readers' words for files, as this caller gave them
            raise InputError(in_memory_words(self._spec, exc.args[0] if exc.args else ""),
                             path=exc.path) from None

    def _update(self, stem: str, pred: Any, gt: Any, extra: Mapping[str, Any]) -> None:
        task, params = self._spec, self.params
        gt_value, gt_path = self._read(gt, f"gt/{stem}", "gt")
        aux = {}
        for name, param in self._aux_names.items():
            value = extra.get(name, extra.get(param))
            if value is not None:
                aux[param] = self._read(value, f"{name}/{stem}", param)[0]
        if aux:
            gt_value = task.attach(gt_value, aux, params)
        pred_path = None
        if pred is None:
            pred_value = task.empty_prediction(gt_value, params)
        else:
            pred_value, pred_path = self._read(pred, f"pred/{stem}", "pred")
        outcome = score_loaded(task, params, stem, pred_value, gt_value, pred_path=pred_path,
                               gt_path=gt_path, calculators=self._calculators,
                               keep_rows=self.include_rows, files=False)
        if outcome.error is not None:
            raise InputError(outcome.error.message, path=outcome.error.path)
        self._gathering.add(stem, outcome)
        self._keys.add(stem)

    def _read(self, value: Any, name: str, role: str) -> tuple[Any, str]:
        """The task's reader on the value (``name`` with the suffix of the format the value
        stands for names it in messages): what the reader returns, and that name."""
        task, params = self._spec, self.params
        suffixes = task.suffixes if role in ("gt", "pred") else self._aux_suffixes(role)
        try:  # a tensor-like (torch, jax) or an ndarray subclass: its plain array
            array = as_array(value)
        except InputError as exc:
            raise InputError(exc.args[0], path=name) from None
        if array is not None and array.dtype == object:  # what the .npy reader refuses
            raise InputError("an array of Python objects: give an array of numbers", path=name)
        value = value if array is None else array
        path = memory_path(value, name, suffixes, task.array_suffix)

        def read(path: str, buffer: Any) -> Any:
            return task.read(path, buffer, params, _ignore, role=role)

        return guarded_parse(lambda path, _: read_in_memory(read, value, path), path, None,
                             _ignore), path

    def _aux_suffixes(self, param: str) -> tuple[str, ...]:
        return next(option.suffixes for option in self._spec.aux_inputs if option.param == param)

    # --- states -----------------------------------------------------------------------------

    def _state(self) -> State:
        result = self._gathering.result()
        state = State(task=self.task, params=self.params, pairing=pairing_of(self.task, self.params),
                      inputs={}, stems=list(result.stems), stats=result.stats,
                      rows=list(result.rows) if self.include_rows else None,
                      extras=list(result.extras), errors=[], digests={},
                      include_rows=self.include_rows)
        if self._base is None:
            return state
        return merge_states([self._base, state]) if len(state) else self._base

    def state(self) -> bytes:
        """This evaluator's samples as compact, versioned bytes (JSON, zlib-compressed, with
        its length and sha256; no pickle): send them to another process and fold them there
        with :meth:`merged`, which checks them as strictly as a file
        (:mod:`rpx_cli.run.evaluator_state`)."""
        return encode_state(self._state().encode())

    @classmethod
    def merged(cls, states: Iterable[bytes | Evaluator]) -> Evaluator:
        """One evaluator holding every sample of ``states`` (bytes from :meth:`state`, or
        evaluators), in any number and order: exact. The states must come from evaluators of
        one task with the same options; a key in two states is an
        :class:`~rpx_cli.errors.InputError` naming it."""
        states = list(states)
        decoded = [item._state() if isinstance(item, Evaluator) else decode_state(item)
                   for item in states]
        if not decoded:
            raise ParameterError("nothing to merge: give at least one state")
        merged = merge_states(decoded)
        evaluator = cls.__new__(cls)
        evaluator._from_state(merged)
        # states that came as bytes passed decode_state's checks; what a summary of edited
        # parameters could still trip on is that state's error, not a raw exception
        evaluator._decoded = any(not isinstance(item, Evaluator) for item in states) or \
            any(getattr(item, "_decoded", False) for item in states if isinstance(item, Evaluator))
        return evaluator

    def _from_state(self, state: State) -> None:
        spec = get_task(state.task)
        self.task, self._spec, self.params = spec.name, spec, dict(state.params)
        self.include_rows = state.include_rows
        self._calculators = plugin_calculators(spec.name)
        self._aux_names = {option.param.removesuffix("_dir"): option.param
                           for option in spec.aux_inputs}
        self.reset()
        self._base = state
        self._keys = set(state.stems)

    # --- the report -------------------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        """The report of every sample: what ``rpx eval TASK`` writes for the same samples as
        files, with ``run_provenance`` saying the inputs were in memory."""
        stopwatch = Stopwatch()
        state = self._state()
        if not len(state):
            raise InputError("no sample was given: nothing to report")
        try:
            report = finalize(state)
        except RpxError:
            raise
        except Exception as exc:
            if not getattr(self, "_decoded", False):
                raise
            raise InputError(f"a merged Evaluator state cannot be summarised "
                             f"({type(exc).__name__}: {first_line(exc)}): was it edited, or "
                             "made by another rpx version?") from None
        inputs = {"samples": {"path": IN_MEMORY, "kind": "in-memory", "exists": True,
                              "n_files": 0, "n_samples": len(state), "sha256": None}}
        return stamp(report, Invocation(command=f"rpx_cli.Evaluator({self.task!r})",
                                        args=_args(self.params)), inputs, stopwatch)


def in_memory_words(task: Any, message: str) -> str:
    """A reader's message as an Evaluator's caller reads it: the task's flags named by the
    keywords that set them (``--range`` → ``ranges=``, ``--box-format`` → ``box_format=``)."""
    if "--" not in message:
        return message
    message = message.replace(SWAP_HINT, "did you swap pred and gt?")
    options = {option.flag: option for option in task.options if option.flag}
    if not options:
        return message
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(options, key=len,
                                                                        reverse=True))) +
                         r")(?![\w-])(?: ([\w.:|-]+))?")

    def keyword(match: re.Match[str]) -> str:
        option, value = options[match.group(1)], match.group(2)
        if value is not None and set(value.split("|")) <= set(option.choices):  # --box-format xywh
            return f"{option.param}=" + "|".join(map(repr, value.split("|")))
        return f"{option.param}=" + ("" if value is None else f" {value}")

    return pattern.sub(keyword, message)


def _ignore(kind: str, path: str) -> None:
    """Reader warnings of in-memory samples (e.g. an 8-bit PNG holding 255) are dropped."""


def _args(params: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in params.items() if key not in ("missing", "on_error")}
