"""COCO panoptic inputs: the JSON files (``annotations`` with each image's
``segments_info``, ``categories`` with ``isthing``) and the RGB PNGs whose pixels hold the
segment ids, ``id = R + 256·G + 256²·B`` (panopticapi's ``rgb2id``).

An id PNG is decoded by Pillow straight into a ``uint32`` array: Pillow keeps an RGB image
as four bytes a pixel (R, G, B, padding), so a 32-bit array mapped as the image's storage
receives the decoded pixels, and clearing the padding byte leaves the little-endian id in
each element — no 3-channel arithmetic (a third less time than ``np.asarray`` and the sum of
channels: 5.8 against 8.8 ms on a 1024x512 PNG). Anything unexpected decodes through
``np.asarray`` (:func:`reference_ids`, which a test compares). With the native core, the
plain case (8-bit RGB, not interlaced, nothing odd) is read by
:mod:`rpx_cli.io.png_native` instead: libdeflate's inflate and a C unfilter, ~5x faster.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.budget import check_pixels
from rpx_cli.io.images import png_header
from rpx_cli.io.json import loads_json
from rpx_cli.io.png_native import rgb_ids

_COLOR_TYPES = {0: "grayscale", 2: "RGB", 3: "palette", 4: "grayscale+alpha", 6: "RGBA"}
# the most pixels an id PNG may have (Pillow's decompression-bomb warning limit, 358 MB of
# uint32 ids): checked from the PNG's header, before a pixel is decoded — a 0.4 MB file can
# claim 12000x12000 pixels. A prediction is held to its GT's size the same way.
MAX_PIXELS = 89_478_485


def decode_ids(data: np.ndarray, path: str) -> np.ndarray:
    """The segment ids of an 8-bit RGB PNG (in memory) as a ``(H, W)`` uint32 array.

    Anything else (another format, grayscale, palette, alpha, 16 bits a channel) is an
    input error naming what it is: its pixels cannot hold panoptic ids as panopticapi
    reads them."""
    header = png_header(data)
    if header is None:
        raise InputError("not a PNG: panoptic segment ids are read from RGB PNGs", path=path)
    depth, color = header
    width, height = (int.from_bytes(bytes(data[at:at + 4]), "big") for at in (16, 20))
    check_pixels((height, width), path)  # a prediction: its GT's size, before decoding
    if width * height > MAX_PIXELS:
        raise InputError(f"is {width}x{height}: {width * height} pixels, more than the "
                         f"{MAX_PIXELS:,} a panoptic id PNG may have (checked before it is "
                         "decoded)", path=path)
    if color != 2 or depth != 8:
        kind = f"{depth}-bit {_COLOR_TYPES.get(color, f'colour type {color}')}"
        raise InputError(f"{kind} PNG: panoptic segment ids are 8-bit RGB "
                         "(id = R + 256·G + 256²·B)", path=path)
    ids = rgb_ids(data, width, height)  # the plain case, by the native core
    if ids is not None:
        return ids
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data.tobytes()), formats=("PNG",)) as image:
            if image.mode != "RGB" or len(image.tile) != 1:
                image.load()
                return _ids_of(np.asarray(image.convert("RGB")))
            width, height = image.size
            ids = np.empty((height, width), dtype="<u4")
            storage = Image.frombuffer("RGBX", (width, height), ids, "raw", "RGBX", 0, 1).im
            image.im = storage
            image.load()
            if image.im is not storage:  # Pillow decoded into its own memory
                return _ids_of(np.asarray(image))
    except Image.DecompressionBombError as exc:
        raise InputError(f"image too large to decode ({exc})", path=path) from None
    except (OSError, ValueError, SyntaxError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot decode PNG ({detail})", path=path) from None
    np.bitwise_and(ids, 0xFFFFFF, out=ids)  # the padding byte
    return ids


def _ids_of(rgb: np.ndarray) -> np.ndarray:
    rgb = rgb.astype(np.uint32)
    return rgb[..., 0] + 256 * rgb[..., 1] + 65536 * rgb[..., 2]


def reference_ids(data: bytes, path: str = "") -> np.ndarray:
    """panopticapi's reading: ``rgb2id(np.array(Image.open(...), dtype=np.uint32))``."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return _ids_of(np.asarray(image))


# --- the JSON files -------------------------------------------------------------------------


@dataclass(frozen=True)
class Category:
    id: Any
    name: str
    isthing: bool


@dataclass(frozen=True)
class Annotation:
    """One image's entry: its id, its PNG (``file_name``, relative to the PNG folder), its
    stem (the file name without its suffix) and its segments as the JSON lists them (checked
    when the image is evaluated, so a bad image is that image's error)."""

    image_id: Any
    file_name: str
    stem: str
    segments: list[Any]


@dataclass
class PanopticFile:
    annotations: list[Annotation]
    categories: list[Category] | None  # the GT file's; None when the file has none


def read_panoptic_json(path: str, *, gt: bool) -> PanopticFile:
    """A COCO panoptic JSON file: ``{"annotations": [{"image_id", "file_name",
    "segments_info"}], "categories": [{"id", "name", "isthing"}]}`` (categories needed in
    the GT file unless given otherwise: ``gt`` False; a prediction file may be the
    annotations list alone). Errors name the file and the entry."""
    from rpx_cli.io.regular import read_bytes

    data = loads_json(read_bytes(path), path)
    if isinstance(data, list):
        data = {"annotations": data}
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list):
        raise InputError("not a COCO panoptic file: expected an object with an 'annotations' "
                         "list", path=path)
    categories = None
    if gt or data.get("categories") is not None:
        categories = _categories(data.get("categories"), path)
    annotations = []
    for i, entry in enumerate(data["annotations"]):
        where = f"annotations[{i}]"
        if not isinstance(entry, dict):
            raise InputError(f"{where} is not an object", path=path)
        image_id = entry.get("image_id")
        if image_id is None or isinstance(image_id, (bool, float, list, dict)):
            raise InputError(f"{where}: 'image_id' must be an integer or a string, got "
                             f"{image_id!r}", path=path)
        file_name = entry.get("file_name")
        if not isinstance(file_name, str) or not file_name.strip() or os.path.isabs(file_name) \
                or ".." in file_name.replace("\\", "/").split("/"):
            raise InputError(f"{where} (image {image_id!r}): 'file_name' must name a PNG "
                             f"inside the folder, got {file_name!r}", path=path)
        segments = entry.get("segments_info")
        if not isinstance(segments, list):
            raise InputError(f"{where} (image {image_id!r}): 'segments_info' must be a list",
                             path=path)
        rel = file_name.replace("\\", "/")
        base, dot, _ = rel.rpartition(".")
        stem = base if dot and base and not base.endswith("/") else rel
        annotations.append(Annotation(image_id, rel, stem, segments))
    return PanopticFile(annotations, categories)


def read_categories(value: Any) -> list[dict[str, Any]]:
    """Categories given on their own (``--categories``, ``Evaluator(categories=...)``): a
    list of ``{id, name, isthing}``, or a JSON file holding one (or a COCO file with
    ``categories``), as ``[{"id", "name", "isthing": bool}]``. Raises ``ValueError``."""
    path = "categories"
    if isinstance(value, (str, os.PathLike)):
        from rpx_cli.io.regular import read_bytes

        path = os.fspath(value)
        if not os.path.isfile(path):
            raise ValueError(f"{path}: no such file")
        try:
            value = loads_json(read_bytes(path), path)
        except InputError as exc:
            raise ValueError(str(exc)) from None
        if isinstance(value, dict):
            value = value.get("categories")
    if isinstance(value, tuple):
        value = list(value)
    try:
        found = _categories(value, path)
    except InputError as exc:
        raise ValueError(str(exc)) from None
    return [{"id": c.id, "name": c.name, "isthing": c.isthing} for c in found]


def _categories(value: Any, path: str) -> list[Category]:
    if not isinstance(value, list) or not value:
        raise InputError("'categories' must be a non-empty list of {id, name, isthing}",
                         path=path)
    out: list[Category] = []
    ids: set[Any] = set()
    names: set[str] = set()
    for i, item in enumerate(value):
        where = f"categories[{i}]"
        if not isinstance(item, dict):
            raise InputError(f"{where} is not an object", path=path)
        cid, name, isthing = item.get("id"), item.get("name"), item.get("isthing")
        if cid is None or isinstance(cid, (bool, float, list, dict)):
            raise InputError(f"{where}: 'id' must be an integer, got {cid!r}", path=path)
        if not isinstance(name, str) or not name:
            name = str(cid) if name is None else None
        if name is None:
            raise InputError(f"{where}: 'name' must be text", path=path)
        if isthing not in (0, 1) or isinstance(isthing, float):
            raise InputError(f"{where} ({name}): 'isthing' must be 0 or 1, got {isthing!r}",
                             path=path)
        if cid in ids:
            raise InputError(f"{where}: category id {cid!r} is listed twice", path=path)
        if name in names:
            raise InputError(f"{where}: two categories are named {name!r}", path=path)
        ids.add(cid)
        names.add(name)
        out.append(Category(cid, name, bool(isthing)))
    return out


class PanopticImage(NamedTuple):
    """One side of an image as the metric takes it: the id map, the ``segments_info`` list
    as the JSON gives it (checked when the image is evaluated, so a bad image is that
    image's error) and the image's id for messages."""

    ids: np.ndarray
    segments: list[Any]
    image_id: Any


def in_memory_image(value: Any, path: str) -> PanopticImage:
    """An image with its segments as one document (``rpx_cli.Evaluator``'s in-memory form,
    or a ``.json`` file of it): ``{"ids": (H, W) integers 0 .. 256³-1, "segments_info":
    [...], "image_id"?}``, or ``"rgb"`` (an ``(H, W, 3)`` uint8 array as the PNG decodes)
    instead of ``"ids"``. ``path`` names it (its stem is the image id when none is given)."""
    if not isinstance(value, dict) or not isinstance(value.get("segments_info"), list):
        raise InputError("a panoptic sample is {'ids' or 'rgb': array, 'segments_info': [...]}",
                         path=path)
    if "ids" in value:
        try:
            ids = np.asarray(value["ids"])
        except ValueError:  # ragged lists
            raise InputError("'ids' must be an (H, W) integer array", path=path) from None
        if ids.ndim != 2 or ids.dtype.kind not in "ui":
            raise InputError(f"'ids' must be an (H, W) integer array, got {ids.dtype} "
                             f"{ids.shape}", path=path)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= MAX_ID):
            raise InputError(f"'ids' must be 0 .. {MAX_ID - 1} (an RGB PNG's range)", path=path)
        ids = ids.astype(np.uint32)
    elif "rgb" in value:
        try:
            rgb = np.asarray(value["rgb"])
        except ValueError:
            raise InputError("'rgb' must be an (H, W, 3) uint8 array", path=path) from None
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise InputError(f"'rgb' must be an (H, W, 3) uint8 array, got {rgb.dtype} "
                             f"{rgb.shape}", path=path)
        ids = _ids_of(rgb)
    else:
        raise InputError("a panoptic sample needs 'ids' (or 'rgb') beside 'segments_info'",
                         path=path)
    stem = os.path.basename(path).rpartition(".")[0] or path
    return PanopticImage(ids, value["segments_info"], value.get("image_id", stem))


@dataclass(frozen=True)
class Segments:
    """One image's segments on one side, in ``segments_info`` order: ids, category indices
    (positions in the GT file's ``categories``), crowd flags and the JSON's ``area``
    (-1 where it gives none)."""

    ids: np.ndarray  # int64
    category: np.ndarray  # int64
    crowd: np.ndarray  # bool
    area: np.ndarray  # int64

    @classmethod
    def none(cls) -> Segments:
        empty = np.zeros(0, np.int64)
        return cls(empty, empty, np.zeros(0, bool), empty)


MAX_ID = 256 ** 3  # ids an RGB PNG can hold
MAX_SEGMENTS = 65_533  # segments an image may list (rpx_cli.ops.panoptic's uint16 indices)
MAX_AREA = 2 ** 53  # a JSON 'area' (exact in float64, and far beyond any image)


def segments_of(items: list[Any], categories: dict[Any, int], *, image: str,
                path: str) -> Segments:
    """Check and tabulate ``segments_info``: every id an integer 1 .. 256³-1 and listed
    once, every ``category_id`` one of ``categories`` (id -> index), ``iscrowd`` 0/1
    (absent: 0), ``area`` a non-negative integer (at most 2^53) when given; at most
    :data:`MAX_SEGMENTS` segments. ``image`` words the errors
    (``image 42 (pred.json)``), ``path`` is the file they name (the image's PNG)."""
    n = len(items)
    if n > MAX_SEGMENTS:
        raise InputError(f"{image}: segments_info lists {n:,} segments, more than the "
                         f"{MAX_SEGMENTS:,} an image may have", path=path)
    segments = _plain_segments(items, categories)
    if segments is not None:
        return segments
    ids = np.empty(n, np.int64)
    category = np.empty(n, np.int64)
    crowd = np.zeros(n, bool)
    area = np.full(n, -1, np.int64)
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise InputError(f"{image}: segments_info[{i}] is not an object", path=path)
        sid = item.get("id")
        if not _is_int(sid) or not 0 < sid < MAX_ID:
            raise InputError(f"{image}: segments_info[{i}] has id {sid!r}; a segment id is an "
                             f"integer 1 .. {MAX_ID - 1} (0 is VOID)", path=path)
        cid = item.get("category_id")
        index = categories.get(cid) if _is_int(cid) or isinstance(cid, str) else None
        if index is None:
            raise InputError(f"{image}: segment {sid} has unknown category_id {cid!r}", path=path)
        flag = item.get("iscrowd", 0)
        if flag not in (0, 1) or isinstance(flag, float):
            raise InputError(f"{image}: segment {sid}: 'iscrowd' must be 0 or 1, got {flag!r}",
                             path=path)
        size = item.get("area")
        if size is not None:
            if isinstance(size, float) and size.is_integer():
                size = int(size)
            if not _is_int(size) or not 0 <= size <= MAX_AREA:
                raise InputError(f"{image}: segment {sid}: 'area' must be a non-negative "
                                 f"integer of at most 2^53, got {size!r}", path=path)
            area[i] = size
        ids[i], category[i], crowd[i] = sid, index, bool(flag)
    if n > 1:
        ordered = np.sort(ids)
        twice = ordered[1:][ordered[1:] == ordered[:-1]]
        if twice.size:
            raise InputError(f"{image}: segment id {int(twice[0])} is listed twice", path=path)
    return Segments(ids, category, crowd, area)


def _plain_segments(items: list[Any], categories: dict[Any, int]) -> Segments | None:
    """:func:`segments_of` for the usual list — objects with integer ids, known category ids,
    ``iscrowd`` 0/1 and integer areas (or none), no id twice — by columns: one pass per
    field instead of one Python iteration per segment (~10x less time). None for anything
    else: the loop in :func:`segments_of` then checks each segment and words the error."""
    if not all(type(item) is dict for item in items):
        return None
    ids = [item.get("id") for item in items]
    index = [categories.get(cid) if type(cid) in (int, str) else None
             for cid in (item.get("category_id") for item in items)]
    flags = [item.get("iscrowd", 0) for item in items]
    sizes = [item.get("area") for item in items]
    if (not all(type(v) is int for v in ids) or None in index
            or not all(type(v) in (int, bool) and v in (0, 1) for v in flags)):
        return None
    given = [v is not None for v in sizes]
    if not all(type(v) is int for v, known in zip(sizes, given, strict=True) if known):
        return None
    try:  # an integer beyond int64 overflows: the loop words it
        segment_ids = np.array(ids, np.int64).reshape(-1)
        area = np.array([v if known else -1 for v, known in zip(sizes, given, strict=True)],
                        np.int64).reshape(-1)
    except OverflowError:
        return None
    if (np.any((segment_ids <= 0) | (segment_ids >= MAX_ID))
            or np.any((area > MAX_AREA) | ((area < 0) & np.array(given, bool).reshape(-1)))
            or np.unique(segment_ids).size != segment_ids.size):
        return None
    return Segments(segment_ids, np.array(index, np.int64).reshape(-1),
                    np.array(flags, bool).reshape(-1), area)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
