"""``--pred-format`` / ``--gt-format auto``: each side's format decided from its files — the
suffixes found in the folder, then, where formats share a suffix, the first bytes of a few
non-empty files of each (:meth:`~rpx_cli.tasks.detection.parts.DetectionFormat.sniff`), and
files that hold the whole set (a folder of VOC results or Task1 files, a CVAT XML; or the one
file given for the side: :meth:`~rpx_cli.tasks.detection.parts.DetectionFormat.sniff_set`).
One candidate is the decision (written to ``params.pred_format`` / ``params.gt_format``);
none, or several (a
folder of ``.txt`` files that read as YOLO and as KITTI, or ``.json`` and ``.xml`` side by
side), is an input error naming the candidates and the flag that settles it. In-memory
samples (the ``Evaluator``) have no files: ``auto`` is rpx's per-stem JSON there."""

from __future__ import annotations

import os
from typing import Any

from rpx_cli.errors import InputError
from rpx_cli.io.discover import find_files
from rpx_cli.io.regular import read_bytes
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import FORMATS, DetectionFormat
from rpx_cli.tasks.detection.sets import is_file

AUTO = "auto"
HEAD = 4096  # bytes of a file a sniff sees
SAMPLES = 3  # non-empty files sniffed per suffix


def folder_formats() -> list[DetectionFormat]:
    """The formats read one file per image from a folder, in rank order."""
    return [fmt for fmt in FORMATS.values() if fmt.suffixes]


def _head(path: str) -> bytes:
    if "://" in path:
        return read_bytes(path)[:HEAD]
    with open(path, "rb") as handle:
        return handle.read(HEAD)


def set_formats() -> list[DetectionFormat]:
    """The formats whose files can hold the whole set, in rank order."""
    return [fmt for fmt in FORMATS.values() if fmt.set_suffixes]


def _heads(root: str, rels: list[str], single: bool = False) -> list[tuple[str, bytes]]:
    """The first bytes of up to :data:`SAMPLES` non-empty files of ``rels``."""
    heads = []
    for rel in rels:
        head = _head(root if single else root.rstrip("/") + "/" + rel)
        if head.strip():
            heads.append((rel, head))
        if len(heads) >= SAMPLES:
            break
    return heads


def sniff_folder(folder: str, role: str) -> str:
    """The name of the one format the files of ``folder`` (or the one file) are in (see the
    module)."""
    flag = f"--{role}-format"
    if is_file(folder):
        name = folder.rstrip("/").rsplit("/", 1)[-1] if "://" in folder else os.path.basename(folder)
        heads = _heads(folder, [name], single=True)
        candidates = [fmt.name for fmt in set_formats() if fmt.set_members([name])
                      and heads and fmt.sniff_set([name], heads[0][1])]
        if len(candidates) == 1:
            return candidates[0]
        wholes = ", ".join(f"{fmt.name} ({'/'.join(fmt.set_suffixes)})" for fmt in set_formats())
        if not candidates:
            raise InputError(f"cannot tell which format this file is in (a file given for a "
                             f"side holds the whole set: {wholes}); give {flag}", path=folder)
        raise InputError(f"this file reads as {' or '.join(candidates)}: give {flag} "
                         f"{candidates[0]} to settle it", path=folder)
    suffixes = tuple(dict.fromkeys(s for fmt in folder_formats() for s in fmt.suffixes))
    whole = tuple(dict.fromkeys(s for fmt in set_formats() for s in fmt.set_suffixes))
    found: dict[str, list[str]] = {}  # one look at the folder: its files by suffix
    for rel in find_files(folder, suffixes + whole):
        found.setdefault("." + rel.rsplit(".", 1)[-1].lower(), []).append(rel)
    files = [rel for suffix in suffixes for rel in found.get(suffix, [])]
    if not found:  # nothing any format reads: pairing says so (no files to pair)
        return folder_formats()[0].name
    candidates: list[str] = []
    for suffix, rels in ((suffix, found[suffix]) for suffix in suffixes if suffix in found):
        heads = _heads(folder, rels)
        claiming = [fmt for fmt in folder_formats() if suffix in fmt.suffixes]
        # the content decides between formats that share a suffix (.txt: YOLO, KITTI, DOTA),
        # by the files some format reads (a broken file is its own error, later); a suffix
        # of one format is that format
        readable = [(rel, head) for rel, head in heads
                    if any(fmt.sniff(head, rel) for fmt in claiming)]
        for fmt in claiming:
            if len(claiming) == 1 or not heads or (
                    readable and all(fmt.sniff(head, rel) for rel, head in readable)):
                candidates.append(fmt.name)
    for fmt in set_formats():  # files of the whole set: VOC results, Task1, a CVAT XML
        members = fmt.set_members(sorted(rel for suffix in fmt.set_suffixes
                                         for rel in found.get(suffix, [])))
        heads = _heads(folder, members)
        if members and heads and all(fmt.sniff_set(members, head) for _, head in heads):
            candidates = [name for name in candidates if not set(files) <= set(members)]
            candidates.append(fmt.name)
    candidates = list(dict.fromkeys(candidates))
    if len(candidates) == 1:
        return candidates[0]
    names = ", ".join(fmt.name for fmt in FORMATS.values() if fmt.suffixes or fmt.set_suffixes)
    if not candidates:
        raise InputError(f"cannot tell which format the files of this folder are in; give "
                         f"{flag} ({names})", path=folder)
    raise InputError(f"the files of this folder read as {' or '.join(candidates)}: give "
                     f"{flag} {candidates[0]} (or another of {', '.join(candidates[1:])}) to "
                     "settle it", path=folder)


def settle_formats(params: Params, inputs: dict[str, Any]) -> dict[str, Any]:
    """``params`` with ``pred_format``/``gt_format`` decided (``auto`` sniffed)."""
    out = dict(params)
    for role in ("pred", "gt"):
        key = f"{role}_format"
        if out.get(key, AUTO) != AUTO:
            continue
        folder = inputs.get(role)
        out[key] = "rpx" if folder is None else sniff_folder(str(folder), role)
    return out
