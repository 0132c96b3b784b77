"""Every pair of a detection run read at once (``Detection.read_pairs``): each side's label
files parsed together by its format (YOLO's lines of many files in one vectorised pass,
VOC's files as one XML document; other formats file by file, without the engine's per-pair
round trip), in pieces of :data:`PIECE` files that the run's worker processes read side by
side when it lends them (:mod:`rpx_cli.io.pieces`); the kind's shapes built for a whole
side at once, and the frames laid straight into one
:class:`~rpx_cli.io.box_table.FrameTable` — as COCO files are read — instead of one
``Frame`` per pair.

It gives what the pair-by-pair path gives (the same table, rows, warnings and file digests;
tests compare the two), and steps aside — returning None, so the engine reads pair by pair
— wherever that path does something per frame or per file that it does not: a kind whose
pair step works per frame (polygons, masks), a malformed file (its error is the pair's, and
``--on-error`` decides), a region of every class (KITTI's DontCare, scoped per frame),
files behind a URL."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.box_table import BoxTable, FrameTable
from rpx_cli.io.boxes import Boxes, apply_class_map, label_order
from rpx_cli.io.discover import Pair
from rpx_cli.io.local_files import read_local_files
from rpx_cli.io.objects import concat_objects
from rpx_cli.io.pieces import run_pieces
from rpx_cli.io.skipped import skip_note
from rpx_cli.io.values import area_problem
from rpx_cli.tasks.base import PairsRead, Params
from rpx_cli.tasks.detection import sets
from rpx_cli.tasks.detection.parts import folder_format, kind_of, protocol_of
from rpx_cli.tasks.stats import StatTable

ROLES = ("gt", "pred")
PIECE = 2000  # files of one side read and parsed together (one worker's share)


def read_pairs(pairs: Sequence[Pair], params: Params, declared: tuple) -> PairsRead | None:
    """See the module."""
    kind = kind_of(params)
    if not pairs or kind.pair_all(FrameTable(0, [], _empty(False), _empty(True))) is None:
        return None
    warnings: dict[str, list[str]] = {}
    digests: dict[str, dict[str, bytes]] = {}
    every = {role: paths_of(pairs, role) for role in ROLES}
    files = {role: _files(pairs, role, every[role]) for role in ROLES}
    if any(paths is not None and any("://" in path for path in paths[1])
           for paths in files.values()):
        return None  # objects behind a URL: fetched pair by pair
    # every piece of both sides at once (the lent workers read them side by side)
    pieces = [(role, start) for role in ROLES if files[role] is not None
              for start in range(0, max(len(files[role][1]), 1), PIECE)]
    read = dict(zip(pieces, run_pieces(lambda piece: _piece(piece, files, params), pieces),
                    strict=True))
    sides = {}
    for role in ROLES:
        if files[role] is None:
            side = _given(pairs, role, params, warnings)
        else:
            parts = [read[piece] for piece in pieces if piece[0] == role]
            side = None if None in parts else _built(parts, files[role], role, params, warnings,
                                                     digests)
        if side is None:
            return None
        sides[role] = side
    (gt, gt_frame), (pred, pred_frame) = sides["gt"], sides["pred"]
    if gt.every_class is not None and gt.every_class.any():
        return None  # regions of every class are scoped frame by frame (Boxes.scoped)
    vocabulary = sorted(set(gt.labels) | set(pred.labels), key=label_order)
    code = {label: k for k, label in enumerate(vocabulary)}
    table = FrameTable(len(pairs), vocabulary, _table(gt, gt_frame, code, False),
                       _table(pred, pred_frame, code, True))
    columns = kind.pair_all(table)
    if columns is None or set(columns) != {stat.name for stat in declared}:
        return None
    rows = [{"stem": pair.stem, "pred_path": pred_path, "gt_path": gt_path, "n_gt": n_gt,
             "n_pred": n_pred}
            for pair, pred_path, gt_path, n_gt, n_pred in zip(
                pairs, every["pred"], every["gt"], table.n_gt(),
                table.n_pred(params["conf_threshold"]), strict=True)]
    return PairsRead(StatTable(declared, columns, len(pairs)), rows, warnings, digests)


def paths_of(pairs: Sequence[Pair], role: str) -> list[str | None]:
    """Each pair's file on side ``role`` (None: no prediction file), as ``Pair`` joins it."""
    if role == "gt":
        return [_join(pair.gt_dir, pair.gt_rel) for pair in pairs]
    return [None if pair.pred_rel is None else _join(pair.pred_dir, pair.pred_rel)
            for pair in pairs]


def _join(root: str, rel: str) -> str:
    """``os.path.join`` of a folder and a relative POSIX path (what pairing gives)."""
    return rel if not root else (root + rel if root.endswith("/") else f"{root}/{rel}")


def _files(pairs: Sequence[Pair], role: str,
           every: list[str | None]) -> tuple[list[int], list[str], list[str]] | None:
    """The files of side ``role`` (``every``: each pair's path): (the pairs that have one,
    their paths, their relative paths); None when the side was read whole before pairing
    (a set: ``Pair.given``)."""
    if pairs and any(name == role for name, _ in pairs[0].given):
        return None
    present = [k for k, path in enumerate(every) if path is not None]
    rels = [(pair.gt_rel if role == "gt" else pair.pred_rel) for pair in pairs]
    return present, [every[k] for k in present], [rels[k] for k in present]


def _piece(piece: tuple[str, int], files: dict[str, Any], params: Params) -> Any:
    """One piece of a side: its files read (and hashed) and parsed; None when one needs a
    closer look (read pair by pair)."""
    role, start = piece
    paths = files[role][1][start:start + PIECE]
    fmt = folder_format(params, role)
    read_many = getattr(fmt, "read_many", None)
    if read_many is None:
        return None
    try:
        if paths:
            protocol_of(params).check_format(fmt, paths[0])
        datas = read_local_files(paths)
    except InputError:
        return None
    found = read_many(datas, paths, prediction=role == "pred", form=fmt.form_for(kind_of(params)),
                      params=params)
    if found is None:
        return None
    objects, image, skipped = found
    return objects, image + start, skipped, [hashlib.sha256(data).digest() for data in datas]


def _built(parts: list[Any], files: tuple[list[int], list[str], list[str]], role: str,
           params: Params, warnings: dict[str, list[str]],
           digests: dict[str, dict[str, bytes]]) -> tuple[Boxes, np.ndarray] | None:
    """A side's pieces as one :class:`Boxes` and each object's frame (pair index)."""
    present, paths, rels = files
    kind = kind_of(params)
    form = folder_format(params, role).form_for(kind)
    objects = concat_objects([part[0] for part in parts], form, prediction=role == "pred")
    image = np.concatenate([part[1] for part in parts])
    skipped = [skips for part in parts for skips in part[2]]
    for path, skips in zip(paths, skipped, strict=True):
        for what, count in skips.items():
            if count:
                warnings.setdefault(skip_note(role, what, count), []).append(path)
    try:
        boxes = kind.build(objects, paths[0] if paths else "", prediction=role == "pred",
                           params=params)
    except InputError:
        return None
    if role == "pred" and area_problem(boxes.area, "object") is not None:
        return None  # a detection beyond COCO's areas: the pair's error (Detection.read)
    index = np.asarray(present, np.int64)
    frame = index[image] if len(image) else np.zeros(0, np.int64)
    digests[role] = dict(zip(rels, (value for part in parts for value in part[3]), strict=True))
    return _mapped(boxes, frame, role, params, paths, index, warnings)


def _given(pairs: Sequence[Pair], role: str, params: Params,
           warnings: dict[str, list[str]]) -> tuple[Boxes, np.ndarray] | None:
    """A side read whole before pairing: every pair's record built at once, as each
    pair's worker builds its own (``sets.given``): skips noted, shapes built, class map."""
    kind = kind_of(params)
    records, frames, paths = [], [], []
    for k, pair in enumerate(pairs):
        record = dict(pair.given).get(role)
        if record is None:  # a prediction set without this image: no detection
            continue
        path = pair.gt_path if role == "gt" else pair.pred_path
        objects, skipped = record
        for what, count in skipped.items():
            if count:
                warnings.setdefault(skip_note(role, what, count), []).append(path)
        records.append(objects)
        frames.append(k)
        paths.append(f"{path} (image {pair.stem})")
    if not records:
        return Boxes.empty(with_scores=role == "pred"), np.zeros(0, np.int64)
    form = records[0].form
    counts = np.fromiter(map(len, records), np.int64, count=len(records))
    try:
        boxes = kind.build(concat_objects(records, form, prediction=role == "pred"),
                           paths[0].split(" (image ")[0], prediction=role == "pred", params=params)
    except InputError:
        return None
    if role == "pred" and area_problem(boxes.area, "object") is not None:
        return None  # a detection beyond COCO's areas: the pair's error (sets.given)
    index = np.asarray(frames, np.int64)
    return _mapped(boxes, np.repeat(index, counts), role, params, paths, index, warnings)


def _mapped(boxes: Boxes, frame: np.ndarray, role: str, params: Params, paths: list[str],
            present: np.ndarray, warnings: dict[str, list[str]]) -> tuple[Boxes, np.ndarray]:
    """``--class-map`` applied to the whole side; a GT file it empties warned as
    ``Detection.read`` warns it."""
    mapping = params.get("class_map")
    if not mapping:
        return boxes, frame
    keep = np.array([mapping.get(label, label) is not None for label in boxes.labels], bool)
    mapped = apply_class_map(boxes, mapping)
    if role == "gt":
        before = np.bincount(frame, minlength=int(present.max(initial=-1)) + 1)
        after = np.bincount(frame[keep], minlength=before.size)
        for k, file in enumerate(present.tolist()):
            if before[file] and not after[file]:
                warnings.setdefault(sets.CLASS_MAP_EMPTIED, []).append(paths[k])
    return mapped, frame[keep]


def _table(boxes: Boxes, frame: np.ndarray, code: dict[str, int], prediction: bool) -> BoxTable:
    label = np.fromiter(map(code.__getitem__, boxes.labels), np.int64, count=len(boxes))
    return BoxTable(frame, label, boxes.shape, boxes.crowd.astype(bool, copy=False),
                    np.asarray(boxes.area, np.float64),
                    np.asarray(boxes.scores, np.float64) if prediction else None,
                    None if boxes.ignore is None or not boxes.ignore.any() else boxes.ignore,
                    None if boxes.group is None or not boxes.group.any() else boxes.group)


def _empty(prediction: bool) -> BoxTable:
    return BoxTable(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 4)),
                    np.zeros(0, bool), np.zeros(0), np.zeros(0) if prediction else None)
