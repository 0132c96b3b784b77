"""``--pred-format`` / ``--gt-format auto``: each side's format decided from its files — the
suffixes found in the folder, then, where formats share a suffix, the first bytes of a few
non-empty files of each (:meth:`~rpx_cli.tasks.detection.parts.DetectionFormat.sniff`). One candidate is the
decision (written to ``params.pred_format`` / ``params.gt_format``); none, or several (a
folder of ``.txt`` files that read as YOLO and as KITTI, or ``.json`` and ``.xml`` side by
side), is an input error naming the candidates and the flag that settles it. In-memory
samples (the ``Evaluator``) have no files: ``auto`` is rpx's per-stem JSON there."""

from __future__ import annotations

from typing import Any

from rpx_cli.errors import InputError
from rpx_cli.io.discover import list_stems
from rpx_cli.io.regular import read_bytes
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import FORMATS, DetectionFormat

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


def sniff_folder(folder: str, role: str) -> str:
    """The name of the one format the files of ``folder`` are in (see the module)."""
    flag = f"--{role}-format"
    suffixes = tuple(dict.fromkeys(s for fmt in folder_formats() for s in fmt.suffixes))
    files = list_stems(folder, suffixes)
    by_suffix: dict[str, list[str]] = {}
    for _stem, rel in sorted(files.items()):
        by_suffix.setdefault("." + rel.rsplit(".", 1)[-1].lower(), []).append(rel)
    candidates: list[str] = []
    for suffix, rels in by_suffix.items():
        heads = []
        for rel in rels:
            head = _head(folder.rstrip("/") + "/" + rel)
            if head.strip():
                heads.append((rel, head))
            if len(heads) >= SAMPLES:
                break
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
    candidates = list(dict.fromkeys(candidates))
    if len(candidates) == 1:
        return candidates[0]
    names = ", ".join(fmt.name for fmt in folder_formats())
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
