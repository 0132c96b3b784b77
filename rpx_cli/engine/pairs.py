"""The one per-pair path of every evaluation, on the engine (:mod:`rpx_cli.engine`).

:func:`score_pair` scores a pair already loaded (``task.evaluate`` and the plugin
calculators); :class:`PairJob` reads a pair of files (and its auxiliary files) with the
task's readers in a worker and scores it; :func:`score_loaded` scores a pair given in
memory (an input file's records, an ``Evaluator`` batch). :func:`run_pairs` runs pairs of
files and :func:`collect` gathers loaded ones: both give a :class:`RunResult` — statistics,
rows, errors, warnings and digests in stem order."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rpx_cli.engine.workers import (
    CacheTally,
    Digests,
    Executor,
    Progress,
    Worker,
    pair_error,
    run_units,
    warning_kind,
)
from rpx_cli.errors import GroundTruthWarning, InputError, PairError, RpxError
from rpx_cli.io.budget import pixel_budget
from rpx_cli.io.digest_cache import DigestCache
from rpx_cli.io.discover import Pair
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.tasks.base import Params, Task
from rpx_cli.tasks.calculators import run_calculators
from rpx_cli.tasks.stats import Collector, StatTable


@dataclass
class Outcome:
    """What one pair produced: its statistics (and the public row, if kept), an error, or
    both (a prediction that could not be read, scored as empty)."""

    stats: Any | None
    extra: dict[str, Any] | None  # plugin calculators' values
    row: dict[str, Any] | None
    error: PairError | None
    digests: Digests
    warnings: list[tuple[str, str]]
    tally: CacheTally


def score_pair(task: Task, params: Params, pred: Any, gt: Any, *, stem: str,
               pred_path: str | None, gt_path: str, calculators: Sequence[Any] = (),
               keep_rows: bool = True,
               warn: Callable[[str, str], None] | None = None) -> tuple[Any, dict[str, Any] | None,
                                                                       dict[str, Any] | None]:
    """The one per-pair step of every evaluation: a pair already loaded (read from files by
    :class:`PairJob`, given by an input file's reader, or handed over in memory) through
    ``task.evaluate`` and the plugin ``calculators``. Returns the pair's statistics, the
    calculators' values and the public row (when kept); raises the task's
    :class:`~rpx_cli.errors.RpxError` for bad data. Library warnings become one-line
    warnings through ``warn(kind, path)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sample = task.evaluate(pred, gt, params, pred_path=pred_path, gt_path=gt_path)
        extra = run_calculators(calculators, pred, gt) if calculators else None
    if warn is not None:
        for record in caught:  # one line each, never a library's source line
            about_gt = issubclass(record.category, GroundTruthWarning)
            warn(warning_kind(record), gt_path if about_gt else pred_path or gt_path)
    row = None
    if keep_rows:
        row = {"stem": stem, "pred_path": pred_path, "gt_path": gt_path, **sample.row,
               **(extra or {})}
    return sample.values, extra, row


class PartlyRead(Exception):
    """A folder pair's prediction of which some files could not be read: ``value`` combines
    the others (a broken file counts as a missing one), ``error`` is the first failure."""

    def __init__(self, error: RpxError, value: Any) -> None:
        super().__init__(str(error))
        self.error, self.value = error, value


Scored = tuple[Any, "dict[str, Any] | None", "dict[str, Any] | None"]


def score_or_empty(score: Callable[[Any, bool], Scored], pred: Any,
                   empty_prediction: Callable[[], Any], *, empty: bool) -> tuple[Scored, RpxError | None]:
    """The rule of a broken prediction, written once for every pair (read from files by
    :class:`PairJob`, given in memory to :func:`score_loaded`): ``score(pred, empty)``, and
    a prediction that cannot be scored against a GT that can is scored as the task's
    :meth:`~rpx_cli.tasks.base.Task.empty_prediction` (``empty_prediction()``) instead, its
    error returned beside the scores — a model never improves its score by breaking a
    prediction. ``empty``: ``pred`` is already the empty prediction (a missing prediction,
    or one that could not be read). Raises the first error when the pair cannot be scored
    even so: the GT is at fault, and the pair is dropped."""
    try:
        return score(pred, empty), None
    except RpxError as exc:
        if empty:
            raise
        try:
            return score(empty_prediction(), True), exc
        except RpxError:
            raise exc from None


@dataclass
class PairJob:
    """Read one :class:`~rpx_cli.io.discover.Pair` with a task's readers and score it."""

    task: Task
    params: Params
    keep_rows: bool = True
    calculators: Sequence[Any] = ()

    def __call__(self, worker: Worker, pair: Pair) -> Outcome:
        """The pair's outcome. The GT is read first: a GT (or auxiliary file) that cannot be
        read drops the pair (its error, side ``"gt"``). A prediction that cannot be read, or
        that cannot be evaluated against a GT that can (a shape mismatch), is scored as
        :meth:`~rpx_cli.tasks.base.Task.empty_prediction` — as ``--missing empty`` scores a
        missing one — and its error kept (side ``"pred"``): a model never improves its score
        by breaking a prediction. ``--on-error fail`` then refuses the report as before."""
        task, params = self.task, self.params
        pred_path, gt_path = pair.pred_path, pair.gt_path

        def reader(role: str) -> Callable[[str, FileBuffer], Any]:
            return lambda path, buffer: task.read(path, buffer, params, worker.warn, role=role)

        given = dict(pair.given)  # sides held by a file of the whole set: no file to read

        def side(role: str, gt: Any = None) -> Any:
            if role not in given:
                return self._read(worker, pair, role, reader)
            if given[role] is None:  # a prediction set without this image: no detection
                return task.empty_prediction(gt, params)
            return task.given(given[role], gt_path if role == "gt" else str(pred_path), params,
                              worker.warn, role=role, stem=pair.stem)

        try:
            try:
                gt = side("gt")
                if pair.aux:
                    gt = task.attach(gt, self._read_aux(worker, pair, reader), params)
            except RpxError as exc:
                return self._failed(worker, pair, exc, "gt", gt_path)
            broken: RpxError | None = None
            partly = False
            if pred_path is None:
                pred = task.empty_prediction(gt, params)
            else:
                try:
                    with pixel_budget(task.prediction_size(gt, params), gt_path):
                        pred = side("pred", gt)
                except PartlyRead as exc:  # a folder pair: the files that read, scored
                    broken, pred, partly = exc.error, exc.value, True
                except RpxError as exc:
                    broken, pred = exc, task.empty_prediction(gt, params)

            def score(pred: Any, empty: bool) -> Scored:
                return self._score(worker, pair, *self._joined(pair, pred, gt, empty),
                                   None if empty else pred_path)

            try:
                scored, unscorable = score_or_empty(
                    score, pred, lambda: task.empty_prediction(gt, params),
                    empty=pred_path is None or (broken is not None and not partly))
            except RpxError as exc:
                return self._failed(worker, pair, exc, "gt", gt_path)
            if unscorable is not None:  # (a folder pair's files too: all scored as empty)
                broken, partly = unscorable, False
            if broken is not None and not partly:
                worker.forget("pred")  # the broken prediction is not among the files evaluated
            digests = worker.take_digests()
        except Exception as exc:
            raise RuntimeError(f"unexpected error while evaluating '{pair.stem}': {exc!r}") from exc
        where = str(broken.path) if partly and broken is not None else str(pred_path)
        error = None if broken is None else replace(
            pair_error(broken, pair.stem, where, side="pred"), path=where)
        return Outcome(*scored, error, digests, worker.take_warnings(), worker.take_tally())

    def _read(self, worker: Worker, pair: Pair, role: str,
              reader: Callable[[str], Callable[[str, FileBuffer], Any]]) -> Any:
        """One side of the pair: its file, or (``task.folder_pairs``) every file of its
        folder, each into a slot of its own (each digested), combined by the task."""
        root, rel = (pair.gt_dir, pair.gt_rel) if role == "gt" else (pair.pred_dir, pair.pred_rel)
        path = os.path.join(root, str(rel))
        if not self.task.folder_pairs:
            return worker.read(role, path, rel, reader(role))
        values, failed = [], None
        for slot, (name, file) in enumerate(pair.entry.files(role)):
            try:
                values.append((name, worker.read(role, os.path.join(root, file), file,
                                                 reader(role), slot=slot)))
            except RpxError as exc:
                if role == "gt":
                    raise
                failed = failed or exc  # a broken prediction file: as if it were missing
        value = self.task.combine(values, self.params, role=role, path=path)
        if failed is not None:
            raise PartlyRead(failed, value)
        return value

    def _joined(self, pair: Pair, pred: Any, gt: Any, empty: bool) -> tuple[Any, Any]:
        """The pair with its listed entry joined (``task.join``); ``empty``: ``pred`` is the
        task's empty prediction (the entry's prediction side is not joined to it)."""
        if pair.entry is None or self.task.folder_pairs:
            return pred, gt
        return self.task.join(pred, gt, pair.entry, self.params, prediction=not empty)

    def _score(self, worker: Worker, pair: Pair, pred: Any, gt: Any,
               pred_path: str | None) -> tuple[Any, dict[str, Any] | None, dict[str, Any] | None]:
        return score_pair(self.task, self.params, pred, gt, stem=pair.stem, pred_path=pred_path,
                          gt_path=pair.gt_path, calculators=self.calculators,
                          keep_rows=self.keep_rows, warn=worker.warn)

    @staticmethod
    def _failed(worker: Worker, pair: Pair, exc: RpxError, side: str, path: str) -> Outcome:
        worker.forget()
        return Outcome(None, None, None, pair_error(exc, pair.stem, path, side=side), {},
                       worker.take_warnings(), worker.take_tally())

    @staticmethod
    def _read_aux(worker: Worker, pair: Pair,
                  reader: Callable[[str], Callable[[str, FileBuffer], Any]]) -> dict[str, Any]:
        values = {}
        for name, root, rel in pair.aux:
            if rel is None:
                raise InputError(f"no file with the stem '{pair.stem}' in {root} "
                                 f"(--{name.replace('_', '-')})", path=pair.gt_path)
            values[name] = worker.read(name, os.path.join(root, rel), rel, reader(name))
        return values


def score_loaded(task: Task, params: Params, stem: str, pred: Any, gt: Any, *,
                 pred_path: str | None, gt_path: str, calculators: Sequence[Any] = (),
                 keep_rows: bool = True, files: bool = True,
                 broken: PairError | None = None) -> Outcome:
    """:func:`score_pair` of a pair given in memory, as an :class:`Outcome` (a bad pair is
    its error, named by ``stem``), for :func:`collect`. ``files=False``: the paths name the
    samples in messages only; the rows' ``pred_path``/``gt_path`` are null (no files).
    ``broken``: the error of a prediction record that could not be read (``pred`` is then
    the task's empty prediction, and the outcome carries both the scores and the error); a
    prediction that cannot be scored against a GT that can is scored empty the same way
    (:func:`score_or_empty`)."""
    noted: list[tuple[str, str]] = []

    def score(pred: Any, empty: bool) -> Scored:
        return score_pair(task, params, pred, gt, stem=stem,
                          pred_path=None if empty else pred_path, gt_path=gt_path,
                          calculators=calculators, keep_rows=keep_rows,
                          warn=lambda kind, path: noted.append((kind, path)))

    try:
        scored, unscorable = score_or_empty(score, pred, lambda: task.empty_prediction(gt, params),
                                            empty=broken is not None or pred_path is None)
    except RpxError as exc:
        return Outcome(None, None, None, pair_error(exc, stem, gt_path, side="gt"), {}, noted,
                       CacheTally())
    if unscorable is not None:
        broken = PairError(stem, str(pred_path), str(unscorable), "pred")
    row = scored[2]
    if row is not None and not files:  # every path in the row (mask_path too): none
        names = {pred_path, gt_path} - {None}
        for key, value in row.items():
            if key in ("pred_path", "gt_path") or (isinstance(value, str) and value in names):
                row[key] = None
    return Outcome(*scored, broken, {}, noted, CacheTally())


@dataclass
class RunResult:
    """Everything the report needs, in stem order: the statistics table of the evaluated
    pairs, their stems, public rows (when kept), errors, warnings and file digests."""

    stats: StatTable
    stems: list[str] = field(default_factory=list)
    extras: list[dict[str, Any]] = field(default_factory=list)  # plugin values, when any
    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[PairError] = field(default_factory=list)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    digests: Digests = field(default_factory=dict)
    tally: CacheTally = field(default_factory=lambda: CacheTally())
    execution: dict[str, Any] = field(default_factory=dict)  # the processes used (jobs, ...)


def run_pairs(task: Task, pairs: Sequence[Pair], params: Params, *, jobs: int | None = 1,
              progress: Progress | None = None, digest: bool = True,
              cache: DigestCache | None = None, keep_rows: bool = True,
              calculators: Sequence[Any] = (), executor: Executor | None = None) -> RunResult:
    """Evaluate every pair; statistics, rows and errors come back in stem order.
    ``jobs=None``: the number of processes is chosen from the work (``RunResult.execution``
    says which, and why)."""
    gathering = Gathering(task, params)
    job = PairJob(task, params, keep_rows, tuple(calculators))
    chosen: dict[str, Any] = {}
    outcomes = run_units(job, pairs, jobs=jobs, digest=digest, cache=cache, progress=progress,
                         executor=executor, chosen=chosen, heavy=task.heavy_pairs)
    with contextlib.closing(outcomes):
        for pair, outcome in zip(pairs, outcomes, strict=True):
            gathering.add(pair.stem, outcome)
    result = gathering.result()
    result.execution = chosen
    return result


def collect(task: Task, params: Params, stems: Sequence[str],
            outcomes: Iterable[Outcome]) -> RunResult:
    """Every pair's outcome (stem order) into one :class:`RunResult`, as :func:`run_pairs`
    collects the pairs it reads (the pairs of an input file, an in-memory batch)."""
    gathering = Gathering(task, params)
    for stem, outcome in zip(stems, outcomes, strict=True):
        gathering.add(stem, outcome)
    return gathering.result()


class Gathering:
    """Outcomes added one at a time into a :class:`RunResult` (folded statistics merged as
    they come, so memory does not grow with the pairs when rows are not kept)."""

    def __init__(self, task: Task, params: Params) -> None:
        self.task = task
        self.collector = Collector(task.statistics(params))
        self._result = RunResult(stats=StatTable.empty(self.collector.declared))

    def add(self, stem: str, outcome: Outcome) -> None:
        result = self._result
        result.tally.add(outcome.tally)
        if outcome.error is not None:
            result.errors.append(outcome.error)
        if outcome.stats is not None:  # evaluated (a broken prediction: scored as empty)
            try:
                self.collector.add(outcome.stats)
            except (KeyError, ValueError) as exc:
                raise RuntimeError(f"{self.task.name} at '{stem}': {exc}") from None
            result.stems.append(stem)
            if outcome.extra is not None:
                result.extras.append(outcome.extra)
            if outcome.row is not None:
                result.rows.append(outcome.row)
            for role, digests in outcome.digests.items():
                result.digests.setdefault(role, {}).update(digests)
        for kind, path in outcome.warnings:
            result.warnings.setdefault(kind, []).append(path)

    def result(self) -> RunResult:
        """The outcomes so far (the statistics table built now)."""
        self._result.stats = self.collector.table()
        return self._result
