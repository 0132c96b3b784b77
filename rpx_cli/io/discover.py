"""Pairing by stem: the files of two folders (or URL prefixes) that share a stem
(:mod:`rpx_cli.io.stems`) are one pair; ``--shard`` parts and what a part carries so that
``rpx merge`` can verify it.

:func:`list_stems` lists a folder on disk (:func:`rpx_cli.io.stems.folder_stems`) or the
objects under a URL prefix (:func:`rpx_cli.io.remote.prefix_stems`, only then is fsspec
imported); the listings below know nothing of each other or of pairing.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from rpx_cli.errors import InputError, escaped
from rpx_cli.io.stems import folder_files, folder_stems, listed_once

__all__ = ["Pair", "Pairing", "SetSide", "find_files", "list_stems", "listed_once", "pair_dirs",
           "pair_sides", "shard_of"]


@dataclass(frozen=True, slots=True)
class Pair:
    """One unit of work: a stem and its files, relative to the two folders (the folder
    strings are shared by every pair). ``pred_rel`` is None for a missing prediction under
    ``--missing empty``. ``aux``: the stem's file in each auxiliary folder a task reads
    besides the two (``(name, folder, relative path or None)``, e.g. point clouds).
    ``entry``: what a task's input files say about the pair when they list the pairs
    (panoptic's segments of both images; ``Task.list_pairs``), None otherwise. ``given``:
    the sides held by a file of the whole set (a CVAT XML, VOC's per-class results files),
    read once before pairing: ``((role, record), ...)``, the record what the set says of
    this stem (``Task.given`` makes it what ``Task.read`` returns; None: a prediction set
    without this image, an image without detections); that side's ``*_rel`` names the set
    (its file, or its folder) and is not read per pair."""

    stem: str
    pred_dir: str
    pred_rel: str | None
    gt_dir: str
    gt_rel: str | None  # None: a record of input files (Pair.record)
    aux: tuple[tuple[str, str, str | None], ...] = ()
    entry: Any = None
    given: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def record(cls, stem: str, index: int | None, pred_file: str, gt_file: str) -> Pair:
        """A sample of input files that replace the folders (an image of COCO files, a row
        of CSV tables): no file of its own; ``entry`` its index in what the task read (None:
        a sample whose GT record could not be read, left out but still its shard's)."""
        return cls(stem, pred_file, None, gt_file, None, entry=index)

    @property
    def pred_path(self) -> str | None:
        return None if self.pred_rel is None else os.path.join(self.pred_dir, self.pred_rel)

    @property
    def gt_path(self) -> str:
        return self.gt_dir if self.gt_rel is None else os.path.join(self.gt_dir, self.gt_rel)

    @property
    def stored(self) -> list[str | None]:
        """What a ``--shard`` part stores of the pair, and its line in the shard's digest:
        its stem, prediction and GT files; a record's stem alone."""
        return [self.stem] if self.gt_rel is None else [self.stem, self.pred_rel, self.gt_rel]


@dataclass(frozen=True, slots=True)
class FolderEntry:
    """The files of a pair whose unit is a folder on each side (``pair_folders``): each
    file's name within the folder (its stem there, sorted) and its path relative to each
    side's root (None: no such file among the predictions)."""

    names: tuple[str, ...]
    gt_rels: tuple[str, ...]
    pred_rels: tuple[str | None, ...]

    def files(self, role: str) -> list[tuple[str, str]]:
        """``(name, relative path)`` of the side's files, in name order."""
        rels = self.gt_rels if role == "gt" else self.pred_rels
        return [(name, rel) for name, rel in zip(self.names, rels, strict=True) if rel is not None]


@dataclass
class Pairing:
    pairs: list[Pair]
    pred_only: list[str] = field(default_factory=list)
    gt_only: list[str] = field(default_factory=list)
    pred_only_files: dict[str, str] = field(default_factory=dict)  # stem -> relative path
    gt_only_files: dict[str, str] = field(default_factory=dict)
    n_pred_files: int = 0
    n_gt_files: int = 0

    @property
    def unpaired(self) -> dict[str, list[str]]:
        return {"pred_only": self.pred_only, "gt_only": self.gt_only}

    def digest(self) -> str:
        """sha256 of every stem and its files (before sharding): shards of one evaluation
        agree on it, so ``rpx merge`` can tell that parts come from the same inputs."""
        digest = hashlib.sha256()
        for pair in self.pairs:
            digest.update(_raw(f"{pair.stem}\t{pair.pred_rel}\t{pair.gt_rel}\n"))
        for stem in self.pred_only:
            digest.update(_raw(f"pred_only\t{stem}\n"))
        for stem in self.gt_only:
            digest.update(_raw(f"gt_only\t{stem}\n"))
        return digest.hexdigest()

    def lines(self) -> list[tuple[str, str]]:
        """(stem, line) of every pair and unpaired stem, for :func:`shard_layout`."""
        lines = [(pair.stem, pair_line(pair.stored)) for pair in self.pairs]
        lines += [(stem, pair_line((side, stem))) for side, stems in self.unpaired.items()
                  for stem in stems]
        return lines

    def with_aux(self, name: str, root: str, suffixes: Iterable[str]) -> Pairing:
        """Attach each pair's file in the auxiliary folder ``root`` (None where the folder
        has no file with the stem: the task reports it when it reads the pair)."""
        files = list_stems(root, suffixes)
        self.pairs = [replace(pair, aux=(*pair.aux, (name, root, files.get(pair.stem))))
                      for pair in self.pairs]
        return self

    def shard(self, index: int, count: int) -> Pairing:
        """Shard ``index`` (1-based) of ``count``: the stems whose stable hash falls in it."""
        def mine(stem: str) -> bool:
            return shard_of(stem, count) == index

        return Pairing(
            pairs=[pair for pair in self.pairs if mine(pair.stem)],
            pred_only=[stem for stem in self.pred_only if mine(stem)],
            gt_only=[stem for stem in self.gt_only if mine(stem)],
            pred_only_files={k: v for k, v in self.pred_only_files.items() if mine(k)},
            gt_only_files={k: v for k, v in self.gt_only_files.items() if mine(k)},
            n_pred_files=self.n_pred_files,
            n_gt_files=self.n_gt_files,
        )


def shard_of(stem: str, count: int) -> int:
    """The 1-based shard of a stem: the first 8 bytes of sha256(stem) modulo ``count`` — the
    same on every machine and Python version (``hash()`` is salted per process)."""
    value = int.from_bytes(hashlib.sha256(_raw(stem)).digest()[:8], "big")
    return value % count + 1


# --- what a --shard part carries so that `rpx merge` can verify it -------------------------


def report_text(name: str) -> str:
    """A name as a report stores it: as it is, or as ``ls -b`` shows it when it holds bytes
    that are not UTF-8 (the report serializer's rule)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return escaped(name)
    return name


def pair_line(values: Iterable[str | None]) -> str:
    """One pair (stem, prediction file, GT file) or unpaired stem (side, stem) as a line of
    a shard's digest, from the names as a report stores them."""
    return "\t".join("" if value is None else report_text(value) for value in values)


def lines_digest(lines: Iterable[str]) -> str:
    """sha256 of a shard's lines, in any order."""
    return hashlib.sha256("\n".join(sorted(lines)).encode("utf-8", "surrogateescape")).hexdigest()


def layout_digest(shard_digests: Iterable[str]) -> str:
    """The run's pairing bound to its shard count: sha256 of every shard's digest, 1..N."""
    digest = hashlib.sha256()
    for value in shard_digests:
        digest.update(bytes.fromhex(value))
    return digest.hexdigest()


def shard_layout(lines: Iterable[tuple[str, str]], count: int) -> list[str]:
    """The digest of each shard 1..``count`` of a run: ``lines`` are (stem, line) of every
    pair and unpaired stem before sharding."""
    groups: dict[int, list[str]] = {}
    for stem, line in lines:
        groups.setdefault(shard_of(stem, count), []).append(line)
    empty = lines_digest(())
    return [lines_digest(groups[k]) if k in groups else empty for k in range(1, count + 1)]


def _raw(text: str) -> bytes:
    """A name's bytes as on disk: UTF-8, and any byte that is not UTF-8 as it was (names
    are decoded with surrogateescape, so such a name round-trips to its file)."""
    return text.encode("utf-8", "surrogateescape")


def list_stems(root: str, suffixes: Iterable[str]) -> dict[str, str]:
    """Map stem -> relative POSIX path for every readable file under ``root``: a folder
    (:func:`~rpx_cli.io.stems.folder_stems`), or a URL (``s3://bucket/prefix``), whose
    objects under the prefix are listed (:func:`~rpx_cli.io.remote.prefix_stems`)."""
    if "://" in root:
        from rpx_cli.io import remote

        if remote.is_url(root):
            return remote.prefix_stems(root, suffixes)
    return folder_stems(root, suffixes)


def find_files(root: str, suffixes: Iterable[str]) -> list[str]:
    """The relative POSIX paths of the files under ``root`` with one of ``suffixes``, as
    :func:`list_stems` finds them, without its one-stem-one-file check (a look at what a
    folder holds: sniffing its format)."""
    if "://" in root:
        return sorted(list_stems(root, suffixes).values())
    return folder_files(root, suffixes)


@dataclass(frozen=True)
class SetSide:
    """One side of the pairs held by files of the whole set, read before pairing: the
    records by stem and where they come from (``parent`` joined with ``name`` is the file,
    or the folder of per-class files, that rows name as the side's path)."""

    records: dict[str, Any]
    parent: str
    name: str


def pair_sides(pred: str | SetSide, gt: str | SetSide, suffixes: Iterable[str], *, missing: str,
               gt_suffixes: Iterable[str] | None = None) -> Pairing:
    """Pair two sides by stem, each a folder (its files found by suffix, as
    :func:`pair_dirs`) or a :class:`SetSide`. A GT set lists the images (a stem with no
    record in it is not evaluated); a prediction set covers every image: a GT stem it has no
    record of is an image without detections (given as None), never a missing prediction.
    Unpaired stems follow ``missing`` as for folders."""
    if isinstance(pred, str) and isinstance(gt, str):
        return pair_dirs(pred, gt, suffixes, missing=missing, gt_suffixes=gt_suffixes)
    suffixes = tuple(suffixes)
    preds = pred.records if isinstance(pred, SetSide) else list_stems(pred, suffixes)
    gts = gt.records if isinstance(gt, SetSide) else list_stems(
        gt, suffixes if gt_suffixes is None else tuple(gt_suffixes))
    pairs: list[Pair] = []
    for stem in sorted(gts):
        given: list[tuple[str, Any]] = []
        if isinstance(gt, SetSide):
            gt_dir, gt_rel = gt.parent, gt.name
            given.append(("gt", gts[stem]))
        else:
            gt_dir, gt_rel = gt, gts[stem]
        if isinstance(pred, SetSide):
            pred_dir, pred_rel = pred.parent, pred.name
            given.append(("pred", preds.get(stem)))
        else:
            pred_dir, pred_rel = pred, preds.get(stem)
            if pred_rel is None and missing != "empty":
                continue
        pairs.append(Pair(stem, pred_dir, pred_rel, gt_dir, gt_rel, given=tuple(given)))
    pred_only = sorted(set(preds) - set(gts))
    gt_only = [] if isinstance(pred, SetSide) else sorted(set(gts) - set(preds))

    def files(side: str | SetSide, stems: list[str], found: dict[str, Any]) -> dict[str, str]:
        if isinstance(side, SetSide):
            return {stem: side.name for stem in stems}
        return {stem: found[stem] for stem in stems}

    return Pairing(pairs=pairs, pred_only=pred_only, gt_only=gt_only,
                   pred_only_files=files(pred, pred_only, preds),
                   gt_only_files=files(gt, gt_only, gts), n_pred_files=len(preds),
                   n_gt_files=len(gts))


def pair_dirs(pred_dir: str, gt_dir: str, suffixes: Iterable[str], *, missing: str,
              gt_suffixes: Iterable[str] | None = None) -> Pairing:
    """Pair the files of two directories by stem, rows ordered by stem (``suffixes``: the
    files read on both sides, or on the prediction side when ``gt_suffixes`` names the GT
    side's: YOLO ``.txt`` predictions against VOC ``.xml`` GT).

    ``missing`` (``--missing``, checked by its declaration:
    :data:`rpx_cli.params.workflows.MISSING`): ``error`` leaves unpaired stems for the
    caller to reject, ``skip`` pairs the intersection, ``empty`` also keeps GT stems without
    a prediction (``pred_path`` None). Unpaired stems are always listed.
    """
    suffixes = tuple(suffixes)
    preds = list_stems(pred_dir, suffixes)
    gts = list_stems(gt_dir, suffixes if gt_suffixes is None else tuple(gt_suffixes))
    pairs: list[Pair] = []
    for stem in sorted(gts):
        pred_rel = preds.get(stem)
        if pred_rel is None and missing != "empty":
            continue
        pairs.append(Pair(stem, pred_dir, pred_rel, gt_dir, gts[stem]))
    pred_only = sorted(set(preds) - set(gts))
    gt_only = sorted(set(gts) - set(preds))
    return Pairing(
        pairs=pairs,
        pred_only=pred_only,
        gt_only=gt_only,
        pred_only_files={stem: preds[stem] for stem in pred_only},
        gt_only_files={stem: gts[stem] for stem in gt_only},
        n_pred_files=len(preds),
        n_gt_files=len(gts),
    )


def pair_folders(pred_dir: str, gt_dir: str, suffixes: Iterable[str], *, missing: str) -> Pairing:
    """Pair two directories by the folders that hold their files (a task whose unit is a
    folder: tracking3d's ``<scene>/<sample>.json``): a pair's stem is the folder's relative
    path, its :class:`FolderEntry` lists the GT files and the prediction of each.

    A GT folder without a prediction folder follows ``missing`` like a stem (``empty``: an
    empty prediction). Within a pair, a GT file without a prediction file is listed in
    ``gt_only`` (as ``folder/name``) and its prediction left empty; a prediction file
    without a GT file is listed in ``pred_only`` and not read. Files directly in a root
    (no folder) are an input error.
    """
    suffixes = tuple(suffixes)
    preds, gts = list_stems(pred_dir, suffixes), list_stems(gt_dir, suffixes)
    for root, found in ((gt_dir, gts), (pred_dir, preds)):
        loose = sorted(stem for stem in found if "/" not in stem)
        if loose:
            raise InputError(f"{os.path.join(root, found[loose[0]])} is not in a folder: each "
                             "folder is one unit (e.g. a scene of samples), "
                             "<folder>/<name>", path=root)

    def grouped(found: dict[str, str]) -> dict[str, dict[str, str]]:
        folders: dict[str, dict[str, str]] = {}
        for stem in sorted(found):
            folder, _, name = stem.rpartition("/")
            folders.setdefault(folder, {})[name] = found[stem]
        return folders

    pred_folders, gt_folders = grouped(preds), grouped(gts)
    pairs: list[Pair] = []
    pred_only = sorted(set(pred_folders) - set(gt_folders))
    gt_only = sorted(set(gt_folders) - set(pred_folders))
    pred_only_files = {stem: next(iter(pred_folders[stem].values())) for stem in pred_only}
    gt_only_files = {stem: next(iter(gt_folders[stem].values())) for stem in gt_only}
    for folder in sorted(gt_folders):
        gt_files, pred_files = gt_folders[folder], pred_folders.get(folder)
        if pred_files is None and missing != "empty":
            continue
        names = tuple(gt_files)
        pred_rels = tuple((pred_files or {}).get(name) for name in names)
        if pred_files is not None:
            for name in names:
                if name not in pred_files:
                    gt_only.append(f"{folder}/{name}")
                    gt_only_files[f"{folder}/{name}"] = gt_files[name]
            for name in sorted(set(pred_files) - set(gt_files)):
                pred_only.append(f"{folder}/{name}")
                pred_only_files[f"{folder}/{name}"] = pred_files[name]
        entry = FolderEntry(names, tuple(gt_files[name] for name in names), pred_rels)
        pairs.append(Pair(folder, pred_dir, folder if pred_files is not None else None, gt_dir,
                          folder, entry=entry))
    return Pairing(pairs=pairs, pred_only=sorted(pred_only), gt_only=sorted(gt_only),
                   pred_only_files=pred_only_files, gt_only_files=gt_only_files,
                   n_pred_files=len(preds), n_gt_files=len(gts))
