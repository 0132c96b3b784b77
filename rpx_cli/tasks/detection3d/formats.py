"""The file formats ``rpx eval detection3d`` reads, ``--pred-format`` / ``--gt-format``
(docs/detection3d.md), each a declared part registered by name:

- ``rpx``: one JSON per sample (``.json``; :mod:`rpx_cli.io.boxes3d`), the default;
- ``kitti``: one KITTI label or results file per frame (``.txt``; :mod:`rpx_cli.io.kitti_labels`).

``auto`` (the default) decides each side from its folder's files before anything is read
(:func:`decide`): the format whose suffix the files have; a folder with files of both is
refused (exit 1) naming the candidates and the flag that settles it. The decision is
recorded in ``params.pred_format`` / ``params.gt_format`` when it is not ``rpx`` (so reports
of rpx JSON read as before); a format given by its flag is always recorded. Where no
folder is listed (``Evaluator.update``), each file's suffix decides (:func:`of_path`).

A format gives a sample's boxes in either form a protocol wants: rpx 3D boxes
(:class:`~rpx_cli.io.boxes3d.Boxes3D`) or KITTI's camera-frame objects
(:class:`~rpx_cli.io.kitti_labels.KittiObjects`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, ClassVar

from rpx_cli.errors import InputError
from rpx_cli.io.boxes3d import Boxes3D, parse_boxes3d, sample_objects
from rpx_cli.io.discover import list_stems
from rpx_cli.io.json import loads_json
from rpx_cli.io.kitti_labels import (
    KittiObjects,
    kitti_from_box_objects,
    parse_kitti_labels,
    to_boxes3d,
)
from rpx_cli.tasks.base import Params

FORMATS: dict[str, Format] = {}
AUTO = "auto"
DEFAULT = "rpx"  # what auto decides for a folder without files, and is not recorded


def register_format(cls: type[Format]) -> type[Format]:
    FORMATS[cls.name] = cls()
    return cls


class Format:
    name: ClassVar[str]
    suffixes: ClassVar[tuple[str, ...]]

    def boxes3d(self, data: bytes | memoryview, path: str, *, prediction: bool,
                params: Params) -> Boxes3D:
        raise NotImplementedError

    def kitti_objects(self, data: bytes | memoryview, path: str, *, prediction: bool,
                      params: Params) -> KittiObjects:
        raise NotImplementedError


@register_format
class Rpx(Format):
    """rpx's per-sample JSON of 3D boxes (docs/detection3d.md); for the KITTI protocol each
    box also carries ``bbox_2d`` and, on GT, ``truncated`` and ``occluded``."""

    name, suffixes = "rpx", (".json",)

    def boxes3d(self, data, path, *, prediction, params):
        return parse_boxes3d(data, path, prediction=prediction, box_origin=params["box_origin"],
                             classes=params["class_names"])

    def kitti_objects(self, data, path, *, prediction, params):
        objects = sample_objects(loads_json(data, path), path)
        return kitti_from_box_objects(objects, path, prediction=prediction,
                                      box_origin=params["box_origin"])


@register_format
class Kitti(Format):
    """KITTI object labels (GT) and results (predictions, a 16th field: the score); as rpx
    3D boxes, ``DontCare`` and (with ``--class-names``) the other classes left out."""

    name, suffixes = "kitti", (".txt",)

    def boxes3d(self, data, path, *, prediction, params):
        objects = parse_kitti_labels(data, path, prediction=prediction)
        return to_boxes3d(objects, classes=params["class_names"])

    def kitti_objects(self, data, path, *, prediction, params):
        return parse_kitti_labels(data, path, prediction=prediction)


def suffixes() -> tuple[str, ...]:
    """Every format's suffixes (the task's)."""
    return tuple(s for fmt in FORMATS.values() for s in fmt.suffixes)


def of_path(path: str) -> Format:
    """The format a file's suffix names (``auto`` without a folder listing)."""
    suffix = os.path.splitext(path)[1].lower()
    return next((fmt for fmt in FORMATS.values() if suffix in fmt.suffixes), FORMATS[DEFAULT])


def decide(folder: str, flag: str) -> str:
    """``auto`` for one folder: the one format whose files it holds (``rpx`` when it holds
    none: pairing then says so); several is an :class:`~rpx_cli.errors.InputError`."""
    found = list_stems(folder, suffixes())
    present = {fmt.name: sorted(rel for rel in found.values()
                                if os.path.splitext(rel)[1].lower() in fmt.suffixes)
               for fmt in FORMATS.values()}
    candidates = [name for name, files in present.items() if files]
    if len(candidates) > 1:
        examples = "; ".join(f"{name}: {len(present[name])} file(s) such as {present[name][0]}"
                             for name in candidates)
        raise InputError(f"{folder} holds files of several formats ({examples}): give "
                         f"{flag} {'|'.join(candidates)}", path=folder)
    return candidates[0] if candidates else DEFAULT


def settle(params: Params, folders: Mapping[str, str | None]) -> dict[str, Any]:
    """``params`` with ``auto`` decided for each side's folder (``folders``: role -> folder,
    None for in-memory samples: each value's kind decides), recorded when it is not
    ``rpx``."""
    out = dict(params)
    for role, folder in folders.items():
        key = f"{role}_format"
        if out.get(key) is None and folder is not None:
            decided = decide(os.fspath(folder), f"--{role}-format")
            if decided != DEFAULT:
                out[key] = decided
    return out


def suffixes_of(params: Params, role: str) -> tuple[str, ...]:
    """The suffixes side ``role``'s folder is paired by: its format's (settled: absent is
    ``rpx``)."""
    return FORMATS[params.get(f"{role}_format") or DEFAULT].suffixes


def of_role(params: Params, role: str, path: str) -> Format:
    name = params.get(f"{role}_format")
    return FORMATS[name] if name else of_path(path)
