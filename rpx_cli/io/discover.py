"""File discovery and pairing by stem.

A stem is the path of a file relative to the directory it was found under, without its
suffix, in POSIX form (``scene1/clutter/000120``). Suffixes match case-insensitively;
hidden files and folders (a name starting with ``.``) are ignored; files whose suffix the
task does not read are ignored too.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from rpx_cli.errors import InputError, escaped

MISSING_POLICIES = ("error", "skip", "empty")


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
    gt_rel: str
    aux: tuple[tuple[str, str, str | None], ...] = ()
    entry: Any = None
    given: tuple[tuple[str, Any], ...] = ()

    @property
    def pred_path(self) -> str | None:
        return None if self.pred_rel is None else os.path.join(self.pred_dir, self.pred_rel)

    @property
    def gt_path(self) -> str:
        return os.path.join(self.gt_dir, self.gt_rel)


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

    def with_aux(self, name: str, root: str, suffixes: Iterable[str]) -> Pairing:
        """Attach each pair's file in the auxiliary folder ``root`` (None where the folder
        has no file with the stem: the task reports it when it reads the pair)."""
        files = discover(root, suffixes)
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


def _split_suffix(name: str) -> tuple[str, str]:
    base, dot, suffix = name.rpartition(".")
    if not dot or not base:
        return name, ""
    return base, "." + suffix.lower()


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
    preds = pred.records if isinstance(pred, SetSide) else discover(pred, suffixes)
    gts = gt.records if isinstance(gt, SetSide) else discover(
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


def discover(root: str, suffixes: Iterable[str]) -> dict[str, str]:
    """Map stem -> relative POSIX path for every readable file under ``root``.

    Raises :class:`InputError` when ``root`` is not a directory, or when two files share
    one stem (``a.npy`` and ``a.PGM``): which one is meant cannot be guessed. A URL
    (``s3://bucket/prefix``) lists the objects under the prefix (:mod:`rpx_cli.io.remote`).
    """
    if "://" in root:
        from rpx_cli.io import remote

        if remote.is_url(root):
            return remote.discover(root, suffixes)
    found: dict[str, str] = {}
    clashes: list[str] = []
    for stem, rel in _walk(root, suffixes):
        if stem in found:
            clashes.append(
                f"two files have the stem '{stem}': "
                f"{os.path.join(root, found[stem])} and {os.path.join(root, rel)}"
            )
            continue
        found[stem] = rel
    if clashes:
        raise InputError("; ".join(clashes), path=root)
    return found


def index_paths(root: str, rels: Iterable[str], suffixes: Iterable[str]) -> dict[str, str]:
    """:func:`discover` over relative POSIX paths listed by other means (the objects under
    a URL prefix, sorted): the same stems, hidden names, suffixes and clashes."""
    wanted = {s.lower() for s in suffixes}
    found: dict[str, str] = {}
    clashes: list[str] = []
    join = root.rstrip("/") + "/"
    for rel in rels:
        parts = rel.split("/")
        odd = [part for part in parts if part in ("", ".", "..")]
        if odd and _split_suffix(parts[-1])[1] in wanted:
            # an object key no file path can be: never silently left out
            raise InputError(f"object {join}{rel}: its key has an empty ('//'), '.' or '..' "
                             "segment, which no file path has; rename it (or move it out of "
                             "the prefix)", path=root)
        if any(part.startswith(".") or not part for part in parts):
            continue
        base, suffix = _split_suffix(parts[-1])
        if suffix not in wanted:
            continue
        stem = "/".join([*parts[:-1], base])
        if stem in found:
            clashes.append(f"two files have the stem '{stem}': {join}{found[stem]} and {join}{rel}")
            continue
        found[stem] = rel
    if clashes:
        raise InputError("; ".join(clashes), path=root)
    return found


def pair_dirs(pred_dir: str, gt_dir: str, suffixes: Iterable[str], *, missing: str,
              gt_suffixes: Iterable[str] | None = None) -> Pairing:
    """Pair the files of two directories by stem, rows ordered by stem (``suffixes``: the
    files read on both sides, or on the prediction side when ``gt_suffixes`` names the GT
    side's: YOLO ``.txt`` predictions against VOC ``.xml`` GT).

    ``missing``: ``error`` leaves unpaired stems for the caller to reject, ``skip`` pairs the
    intersection, ``empty`` also keeps GT stems without a prediction (``pred_path`` None).
    Unpaired stems are always listed.
    """
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {MISSING_POLICIES}, got {missing!r}")
    suffixes = tuple(suffixes)
    preds = discover(pred_dir, suffixes)
    gts = discover(gt_dir, suffixes if gt_suffixes is None else tuple(gt_suffixes))
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


def find_files(root: str, suffixes: Iterable[str]) -> list[str]:
    """The relative POSIX paths of the files under ``root`` with one of ``suffixes``, as
    :func:`discover` finds them (walk order), without its one-stem-one-file check (for a
    look at what a folder holds: sniffing its format)."""
    if "://" in root:
        return sorted(discover(root, suffixes).values())
    return [rel for _, rel in _walk(root, suffixes)]


_LISTINGS: ContextVar[dict[str, list[tuple[str, str, str]]] | None] = ContextVar(
    "rpx_listings", default=None)


@contextlib.contextmanager
def listed_once() -> Iterator[None]:
    """Within the block, each folder is walked once: what one step of a run looks at several
    times (sniffing a side's format, then pairing its files) is listed a single time."""
    token = _LISTINGS.set({})
    try:
        yield
    finally:
        _LISTINGS.reset(token)


def _listing(root: str) -> list[tuple[str, str, str]]:
    """(stem, relative path, lower-case suffix) of every file under the folder ``root``,
    hidden files and folders left out, in sorted order."""
    memo = _LISTINGS.get()
    if memo is not None and root in memo:
        return memo[root]
    if not os.path.isdir(root):
        what = "does not exist" if not os.path.exists(root) else "is not a directory"
        raise InputError(f"directory {what}", path=root)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel_dir = os.path.relpath(dirpath, root)
        prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            base, suffix = _split_suffix(name)
            out.append((prefix + base, prefix + name, suffix))
    if memo is not None:
        memo[root] = out
    return out


def _walk(root: str, suffixes: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(stem, relative path) of every file under the folder ``root`` with one of
    ``suffixes`` (case-insensitive), hidden files and folders left out, in sorted order."""
    wanted = {s.lower() for s in suffixes}
    return ((stem, rel) for stem, rel, suffix in _listing(root) if suffix in wanted)
