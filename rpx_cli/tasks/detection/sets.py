"""Sides held by files of the whole set (``Task.read_sets`` of ``rpx eval detection``): a
CVAT for images XML or an Open Images CSV (``--gt-dir`` / ``--pred-dir`` naming the file,
or a folder holding it), VOC's per-class results files or DOTA's ``Task1_<class>.txt`` (a
folder of them).

A side is in its format's set layout when the path is a file, or a folder whose files of the
format's :attr:`~rpx_cli.tasks.detection.parts.DetectionFormat.set_suffixes` include set
files (:meth:`~rpx_cli.tasks.detection.parts.DetectionFormat.set_members`) and no file of
one image (:func:`set_layout`). Such a side is read once, before pairing, in the main
process: its files whole (each one's sha256 taken from the bytes read: the side's digest in
``run_provenance`` is of the files actually read), parsed by the format into each stem's
:class:`~rpx_cli.io.objects.Objects` and the count of what it had to skip. The run pairs
these stems with the other side (a GT set lists the images; a prediction set covers every
image — an image it has nothing on has no detection, never a missing file), and each pair's
worker builds the kind's shapes from its record (:func:`given`) as a file of one image is
built: class map, image sizes, skip counts (``inputs.<side>.skipped``) alike."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

from rpx_cli.errors import InputError
from rpx_cli.io.boxes import Boxes, apply_class_map
from rpx_cli.io.discover import find_files
from rpx_cli.io.image_size import image_sizes
from rpx_cli.io.objects import Objects
from rpx_cli.io.regular import read_bytes
from rpx_cli.io.skipped import skip_note
from rpx_cli.io.values import area_problem
from rpx_cli.tasks.base import Params, SetInput, Warn
from rpx_cli.tasks.detection.parts import DetectionFormat, folder_format, kind_of, protocol_of

CLASS_MAP_EMPTIED = "class-map-emptied"  # a GT image whose every object --class-map dropped


def is_file(path: str) -> bool:
    """Whether the side at ``path`` is one file (a URL: one object, not a prefix)."""
    if "://" in path:
        from rpx_cli.io import remote

        if remote.is_url(path):
            return remote.is_object(path)
    return os.path.isfile(path)


def set_layout(fmt: DetectionFormat, path: str) -> list[str] | None:
    """The files of the side at ``path`` that hold ``fmt``'s whole set (relative paths, or
    the one file's name), or None when the side is a folder of one file per image. A folder
    holding both is an input error naming them."""
    if not fmt.set_suffixes:
        return None
    if is_file(path):
        name = path.rstrip("/").rsplit("/", 1)[-1] if "://" in path else os.path.basename(path)
        members = fmt.set_members([name])
        if not members:
            raise InputError(f"a file given for a side holds the whole set ({fmt.title}: "
                             f"{' or '.join(fmt.set_suffixes)}); files of one image are "
                             "given as their folder", path=path)
        return members
    members = sorted(fmt.set_members(find_files(path, fmt.set_suffixes)))
    if not members:
        if not fmt.suffixes:
            raise InputError(f"holds no {fmt.title} file ({' or '.join(fmt.set_suffixes)})",
                             path=path)
        return None
    if fmt.suffixes:
        per_image = set(find_files(path, fmt.suffixes)) - set(members)
        if per_image:
            raise InputError(f"holds {fmt.title} files of one image ({sorted(per_image)[0]}) "
                             f"and files of the whole set ({members[0]}): give one or the other",
                             path=path)
    return members


def read_sets(params: Params, inputs: Mapping[str, str | None]) -> dict[str, SetInput]:
    """The sides of ``inputs`` (role -> path) in their format's set layout, read."""
    out: dict[str, SetInput] = {}
    for role, path in inputs.items():
        if path is None:
            continue
        fmt = folder_format(params, role)
        members = set_layout(fmt, str(path))
        if members is None:
            continue
        protocol_of(params).check_format(fmt, str(path))
        out[role] = read_set(fmt, str(path), members, role, params)
    return out


def read_set(fmt: DetectionFormat, path: str, members: list[str], role: str,
             params: Params) -> SetInput:
    """One side's set files read whole and parsed into each stem's record."""
    single = is_file(path)
    files, digests = {}, {}
    for rel in members:
        data = read_bytes(path if single else path.rstrip("/") + "/" + rel)
        files[rel] = data
        digests[rel] = hashlib.sha256(data).hexdigest()
    sizes = image_sizes(params.get("images_dir"), params.get("image_size"))

    def size(stem: str) -> tuple[int, int]:
        try:
            return sizes.of(stem)
        except InputError as exc:
            raise InputError(f"image {stem!r}: {exc.args[0]}", path=path) from None

    records = fmt.read_set(files, path, prediction=role == "pred",
                           form=fmt.form_for(kind_of(params)), params=params, size=size)
    named = path if single or len(members) > 1 else path.rstrip("/") + "/" + members[0]
    return SetInput(records, digests[members[0]] if single else digests, named)


def given(record: tuple[Objects, Mapping[str, int]], path: str, params: Params, warn: Warn, *,
          role: str, stem: str) -> Boxes:
    """A stem's record of a set as the kind's :class:`Boxes`, as a file of one image is
    read (``Detection.read``): skipped objects noted, the image's size filled in where the
    kind needs one, the kind's shapes built, ``--class-map`` applied."""
    objects, skipped = record
    for what, count in skipped.items():
        if count:
            warn(skip_note(role, what, count), path)
    if objects.size is None and (params.get("image_size") or params.get("images_dir")):
        objects.size = image_sizes(params.get("images_dir"), params.get("image_size")).of(stem)
    boxes = kind_of(params).build(objects, path, prediction=role == "pred", params=params)
    problem = area_problem(boxes.area, "object") if role == "pred" else None
    if problem is not None:  # as Detection.read refuses it
        raise InputError(f"image {stem!r}: {problem}", path=path)
    mapped = apply_class_map(boxes, params.get("class_map"))
    if role == "gt" and len(boxes) and not len(mapped):
        warn(CLASS_MAP_EMPTIED, f"{path} (image {stem})")
    return mapped
