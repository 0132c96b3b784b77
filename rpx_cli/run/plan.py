"""The first step of every run over folders: :func:`plan_folders` resolves the task's
parameters (each option through its declaration), pairs the files by stem (auxiliary
folders too), reads the ``--manifest`` and chooses the ``--shard`` — all before any pair
is read. The :class:`Plan` it returns is what every batch
of the run shares (:mod:`rpx_cli.run.state` evaluates and merges them)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rpx_cli.errors import EvaluationFailed, InputError, PairError, ParameterError
from rpx_cli.io.discover import (
    Pair,
    Pairing,
    SetSide,
    listed_once,
    pair_folders,
    pair_sides,
    shard_layout,
)
from rpx_cli.io.filebuffer import sha256_file
from rpx_cli.params import resolve
from rpx_cli.run.options import RunOptions
from rpx_cli.tasks.base import SetInput, Task
from rpx_cli.tasks.registry import get_task

__all__ = ["Plan", "check_pairing", "plan", "plan_folders"]


@dataclass(frozen=True)
class Plan:
    """What every batch of one evaluation shares: the task, its resolved parameters, the
    pairs (stem order; one shard's under ``--shard``), the pairing's digest, the unpaired
    stems, the input folders and the strata's manifest. Picklable: send it (or only its
    ``pairs`` slices) to the workers."""

    task: str
    params: dict[str, Any]
    pairs: list[Pair]
    pairing: str
    unpaired: dict[str, list[str]]
    inputs: dict[str, str]  # input name (pred_dir, gt_dir, aux folders) -> folder or URL
    include_rows: bool = True
    strata: Any = None  # rpx_cli.deploy.eval_strata.StrataPlan (--manifest)
    shard: tuple[int, int] | None = None
    # input files read besides the folders (a task's listing files): name -> sha256 hex;
    # and the sides read whole before pairing (Task.read_sets): name -> {relative path: hex}
    # of a folder's files read, or the file's hex
    file_digests: dict[str, str | dict[str, str]] = field(default_factory=dict)
    # --shard: the digest of every shard's pairs (io.discover.shard_layout), what lets `rpx
    # merge` verify that the parts make up the run (a part's state carries its own and the
    # digest of them all)
    shard_digests: list[str] | None = None

    def part_pairs(self) -> list[list[str | None]]:
        """This shard's pairs as a part stores them: (stem, prediction file, GT file), a
        record of input files by its stem."""
        return [pair.stored for pair in self.pairs]

    def batches(self, size: int) -> list[list[Pair]]:
        """The pairs cut into batches of ``size`` (the last one shorter)."""
        if size < 1:
            raise ParameterError(f"batch size must be >= 1, got {size}")
        return [self.pairs[at:at + size] for at in range(0, len(self.pairs), size)]


def plan(task: str, pred_dir: str | os.PathLike[str], gt_dir: str | os.PathLike[str], *,
         missing: str | None = None, on_error: str = "fail", include_rows: bool = True,
         aux: Mapping[str, str | None] | None = None,
         files: Mapping[str, str] | None = None, **params: Any) -> Plan:
    """Pair two folders (or URL prefixes) for ``task`` with its parameters (defaults for
    those not given), as ``rpx eval`` does before it evaluates anything. ``files``: the
    input files of a task whose files list the pairs (panoptic's ``gt_json``, ``pred_json``)."""
    options = RunOptions(missing=missing, on_error=on_error, include_rows=include_rows)
    return plan_folders(get_task(task), pred_dir, gt_dir, params, options, aux=aux, files=files)


def plan_folders(task: Task, pred_dir: str | os.PathLike[str], gt_dir: str | os.PathLike[str],
                 params: Mapping[str, Any], options: RunOptions, *,
                 aux: Mapping[str, str | os.PathLike[str] | None] | None = None,
                 files: Mapping[str, str | os.PathLike[str] | None] | None = None) -> Plan:
    """The plan of a run over two folders: parameters resolved (every option through its
    declaration, :func:`rpx_cli.params.resolve`; the run options were converted by theirs
    when made), ``missing`` at the task's default when not given, the files paired by stem
    (auxiliary folders too) — or, for a task whose input files list the
    pairs (``files_list_pairs``), as ``files`` (option name -> path) list them — the
    manifest of ``--manifest`` read, and the pairs of ``--shard`` chosen. Raises before any
    pair is evaluated."""
    options = options.for_task(task.default_missing)
    # the auxiliary folders given are parameters too (their presence can change numbers);
    # the task's normalise_params decides how they are recorded
    aux_dirs = {option.param: None if (aux or {}).get(option.param) is None
                else os.fspath((aux or {})[option.param]) for option in task.aux_inputs}
    params = {**resolve(task, {**params, **aux_dirs}), **options.policies}
    pred_dir, gt_dir = os.fspath(pred_dir), os.fspath(gt_dir)
    file_digests: dict[str, str | dict[str, str]] = {}
    if task.files_list_pairs:
        given = _listing_files(task, files)
        listing = task.list_pairs(given, pred_dir, gt_dir, params, missing=str(options.missing))
        params = {**params, **(listing.params or {})}
        pairing = listing.pairing
        file_digests = {name: sha256_file(path) for name, path in given.items()}
    else:
        if any(value is not None for value in (files or {}).values()):
            raise ParameterError(f"{task.name} reads --pred-dir/--gt-dir or its input files, "
                                 "not both")
        # what the folders hold can settle parameters (detection's --pred-format auto), and
        # each side is found by its own suffixes (YOLO .txt predictions, VOC .xml GT) — or
        # read whole now when files of the whole set hold it (a CVAT XML, VOC results files);
        # a task whose pair is a folder of files on each side pairs folders (tracking3d's)
        with listed_once():  # sniffing and pairing look at each folder once
            params = task.settle_inputs(params, {"pred": pred_dir, "gt": gt_dir})
            pred_suffixes, gt_suffixes = task.suffixes_for(params, "pred"), task.suffixes_for(params, "gt")
            sets = task.read_sets(params, {"pred": pred_dir, "gt": gt_dir})
            if task.folder_pairs:
                pairing = pair_folders(pred_dir, gt_dir, pred_suffixes, missing=str(options.missing))
            else:
                sides = {role: _set_side(sets[role], sets[role].path or path) if role in sets
                         else path for role, path in (("pred", pred_dir), ("gt", gt_dir))}
                pairing = pair_sides(sides["pred"], sides["gt"], pred_suffixes,
                                     missing=str(options.missing), gt_suffixes=gt_suffixes)
        file_digests = {task.input_names[0 if role == "pred" else 1]: given.digests
                        for role, given in sets.items()}
        check_pairing(pairing, pred_dir, gt_dir, tuple(dict.fromkeys(pred_suffixes + gt_suffixes)),
                      str(options.missing), sets=tuple(sets))
    whole = pairing.digest()
    inputs = {task.input_names[0]: pred_dir, task.input_names[1]: gt_dir}
    for option in task.aux_inputs:
        if aux_dirs[option.param] is not None:
            pairing = pairing.with_aux(option.param, aux_dirs[option.param], option.suffixes)
            inputs[option.param] = aux_dirs[option.param]
    strata = None
    if options.strata is not None:
        from rpx_cli.deploy import eval_strata

        given = options.strata
        strata = eval_strata.plan(given.manifest, task, params,
                                  [pair.stem for pair in pairing.pairs],
                                  primary_metric=given.primary_metric, bootstrap=given.bootstrap,
                                  seed=given.seed, missing=str(options.missing))
        params = {**params, "strata": strata.params}
    shard_digests = None
    if options.shard is not None:
        shard_digests = shard_layout(pairing.lines(), options.shard[1])
        pairing = pairing.shard(*options.shard)
    return Plan(task.name, params, pairing.pairs, whole, pairing.unpaired,
                {**inputs, **{name: path for name, path in (files or {}).items()
                              if name in file_digests}},
                options.include_rows, strata, options.shard, file_digests, shard_digests)


def _set_side(given: SetInput, path: str) -> SetSide:
    """The side at ``path`` (a file, or a folder of per-class files) as pairing sees it."""
    if "://" in path:
        parent, _, name = path.rstrip("/").rpartition("/")
    else:
        parent, name = os.path.split(os.path.normpath(path))
    return SetSide(given.records, parent, name)


def _listing_files(task: Task, files: Mapping[str, Any] | None) -> dict[str, str]:
    """The listing files of ``task``, every one given, each checked by its declaration."""
    given = {option.param: (files or {}).get(option.param) for option in task.file_inputs}
    absent = [option.flag for option in task.file_inputs if given[option.param] is None]
    if absent:
        raise ParameterError(f"{task.name} needs {' and '.join(absent)} besides "
                             f"--{task.input_names[0].replace('_', '-')} and "
                             f"--{task.input_names[1].replace('_', '-')}")
    return {option.param: option.convert(os.fspath(given[option.param]))
            for option in task.file_inputs}


def check_pairing(pairing: Pairing, pred_dir: str, gt_dir: str, suffixes: tuple[str, ...],
                  missing: str, sets: tuple[str, ...] = ()) -> None:
    """Unpaired stems under ``--missing error``, or nothing to evaluate: an error naming the
    files (a side held by files of the whole set, ``sets``: the set and the stem), before
    any pair is read. An empty side is said first and alone (not one line per file of the
    other side)."""

    def where(role: str, folder: str, files: dict[str, str], stem: str) -> tuple[str, str]:
        if role in sets:
            return folder, f"image '{stem}': "
        return os.path.join(folder, files[stem]), ""

    kinds = "/".join(suffixes)
    if missing == "error" and (pairing.pred_only or pairing.gt_only):
        for name, folder, n, other, n_other, hint in (
                ("pred dir", pred_dir, pairing.n_pred_files, gt_dir, pairing.n_gt_files,
                 "; --missing empty scores missing predictions as empty"),
                ("gt dir", gt_dir, pairing.n_gt_files, pred_dir, pairing.n_pred_files, "")):
            if not n:
                raise InputError(f"{name} {folder} holds 0 {kinds} files, against {n_other:,} in "
                                 f"{other}: nothing to pair (a wrong path?{hint})", path=folder)
        problems = []
        for stem in pairing.gt_only:
            path, image = where("gt", gt_dir, pairing.gt_only_files, stem)
            problems.append(PairError(stem, path, f"{image}no prediction with this stem in {pred_dir}"))
        for stem in pairing.pred_only:
            path, image = where("pred", pred_dir, pairing.pred_only_files, stem)
            problems.append(PairError(stem, path, f"{image}no ground truth with this stem in {gt_dir}"))
        raise EvaluationFailed(
            problems,
            len(problems),
            f"{len(problems)} stem(s) are not in both directories; no report written "
            "(--missing skip evaluates the stems in both and lists the rest under 'unpaired')",
        )
    if not pairing.pairs:
        raise InputError(
            f"no pairs to evaluate: {pred_dir} has {pairing.n_pred_files} and {gt_dir} has "
            f"{pairing.n_gt_files} {kinds} file(s), and no stem is in both",
            path=pred_dir,
        )
