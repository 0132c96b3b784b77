"""What a task reads besides a pair of files per stem, and what it hands the engine back: files
that replace the two folders (:class:`FileInput`, COCO's), one side held by files of the whole
set (:class:`SetInput`, CVAT's XML), every pair of a batch read at once (:class:`PairsRead`)
and the pairs a task's own files list (:class:`Listing`). The hooks that return them are
:class:`~rpx_cli.tasks.base.Task`'s; plugin tasks import them from there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rpx_cli.errors import PairError
from rpx_cli.io.discover import Pairing
from rpx_cli.tasks.stats import StatTable


@dataclass
class FileInput:
    """Inputs a task read from files that replace the two folders (:attr:`Task.file_inputs`,
    e.g. COCO files), one entry per stem. Either ``samples`` — (prediction, GT) pairs in the
    form ``read`` returns, evaluated like pairs read from folders — or, when the task can
    build its statistics faster in bulk, ``stats`` with the public ``rows`` values, and
    ``sample``: sample i's (prediction, GT) in the form ``read`` returns, built on demand,
    for the plugin calculators (a task that cannot give it refuses a run with plugins). A
    bad record is not the whole file's error: it is listed in ``errors`` (a bad prediction
    record scored as the sample's empty prediction, a bad GT record's sample left out), and
    ``--on-error`` decides (:func:`rpx_cli.run.files.run_file_evaluation`)."""

    stems: list[str]
    samples: list[tuple[Any, Any]] | None = None
    stats: StatTable | None = None
    rows: list[dict[str, Any]] | None = None
    sample: Callable[[int], tuple[Any, Any]] | None = None  # bulk: stem i's (pred, gt)
    params: dict[str, Any] | None = None  # added to the report's params (e.g. categories)
    warnings: list[str] | None = None
    # the files the rows name as pred_path/gt_path (default: the last and the first of
    # the task's file_inputs)
    pred_path: str | None = None
    gt_path: str | None = None
    # records that could not be read (the --on-error rule of folders, docs/usage.md): a sample
    # whose prediction record is bad is in ``stems`` with the empty prediction (its error
    # side "pred"); a sample whose GT record is bad is left out of ``stems`` (side "gt");
    # a record that names no sample has the stem "" (it is not evaluated)
    errors: list[PairError] = field(default_factory=list)


@dataclass
class SetInput:
    """One side of the pairs held by files of the whole set (detection's CVAT XML, Open
    Images CSV, VOC's per-class results files), read once before pairing
    (:meth:`Task.read_sets`): what the set says of each stem (``records``: stem -> a record
    :meth:`Task.given` turns into what :meth:`Task.read` returns) and the files read
    (``digests``: relative path -> sha256 hex when the side is a folder, the file's hex when
    it is one file) — what ``run_provenance`` digests for the side; ``path``: what rows name
    as the side's file (the one file read, else the folder; None: the path given)."""

    records: dict[str, Any]
    digests: dict[str, str] | str
    path: str | None = None


@dataclass
class PairsRead:
    """Every pair of a batch read at once in this process (:meth:`Task.read_pairs`), as
    the pair-by-pair path would have left them: the declared statistics (pair order), each
    pair's public row (``stem``, ``pred_path``, ``gt_path`` and the task's row values),
    the warnings the readers noted (kind -> paths) and the sha256 of every file read
    (role -> relative path -> 32 raw bytes)."""

    stats: StatTable
    rows: list[dict[str, Any]]
    warnings: dict[str, list[str]]
    digests: dict[str, dict[str, bytes]]


@dataclass
class Listing:
    """The pairs a task's input files list in its two folders (:meth:`Task.list_pairs`):
    ``pairing`` (stem order; each :class:`~rpx_cli.io.discover.Pair` carries its ``entry``,
    what the files say about it, handed to :meth:`Task.join` in the worker) and ``params``
    added to the report's params (e.g. the categories the files define)."""

    pairing: Pairing
    params: dict[str, Any] | None = None
