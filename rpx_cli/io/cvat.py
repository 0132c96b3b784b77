"""CVAT for images 1.1: one XML file for the whole set (``annotations.xml`` of a "CVAT for
images" export).

``<annotations>`` holds one ``<image name width height>`` per image (every image of the
task, with or without shapes); its stem is ``name`` without its suffix. Shapes, in pixels:
``<box label xtl ytl xbr ybr [rotation]>`` (``rotation``: degrees clockwise on screen about
the box's centre, as CVAT's own exporters turn a rotated box into its corners) and
``<polygon label points="x1,y1;x2,y2;...">``. A prediction's shape carries
``<attribute name="score">``. How a shape is handed to the run's kind (the *form*,
:mod:`rpx_cli.io.objects`): ``box`` — a box as it is, a rotated box or a polygon as its
bounding box (as LabelMe polygons are); ``quad`` — a box as its four corners (rotation
kept), a polygon of four points as its corners; ``polygon`` — a box as its four corners, a
polygon as its ring. What the form cannot hold (a polygon of other than four points as a
rotated box) and the shapes rpx does not evaluate (``points``, ``polyline``, ``ellipse``,
``cuboid``, ``mask``, ``skeleton``) are skipped and counted as ``cvat_<shape>``; image tags
(``<tag>``) are no objects. Malformed (a missing or non-numeric coordinate, ``xbr < xtl``,
a polygon of fewer than three points, two images of one stem, CVAT for video's
``<track>``) is an :class:`~rpx_cli.errors.InputError` naming the image and the shape."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from itertools import chain
from operator import attrgetter, methodcaller
from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError
from rpx_cli.io.objects import BOX, POLYGON, QUAD, Objects
from rpx_cli.io.xml_text import parse_xml

SHAPES = ("box", "polygon")
UNEVALUATED = ("points", "polyline", "ellipse", "cuboid", "mask", "skeleton")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def stem_of(name: str) -> str:
    """An image's stem: its name without the suffix (POSIX separators, no leading ``./``)."""
    name = name.replace("\\", "/")
    while name.startswith("./"):
        name = name[2:]
    folder, _, base = name.rpartition("/")
    head, dot, _ = base.rpartition(".")
    base = head if dot and head else base
    return f"{folder}/{base}" if folder else base


def read_cvat(data: Any, path: str, *, prediction: bool,
              form: str) -> dict[str, tuple[Objects, dict[str, int]]]:
    """Every image of a CVAT for images XML: ``{stem: (objects in form, {cvat_<shape>:
    skipped})}``."""
    root = parse_xml(data, path)
    if root.tag != "annotations":
        raise InputError(f"expected a CVAT for images document (<annotations>), got <{root.tag}>",
                         path=path)
    if root.find("track") is not None:
        raise InputError("CVAT for video (<track>) is not read: export the task as CVAT for "
                         "images 1.1", path=path)
    images = root.findall("image")
    names: dict[str, str] = {}
    for index, name in enumerate(map(methodcaller("get", "name"), images)):
        if not name:
            raise InputError(f"<image> {index}: missing 'name'", path=path)
        stem = stem_of(name)
        if stem in names:
            raise InputError(f"two images have the stem '{stem}': {names[stem]!r} and {name!r}",
                             path=path)
        names[stem] = name
    fast = None if prediction else _boxes_at_once(images, form)
    if fast is not None:
        return dict(zip(names, fast, strict=True))
    return {stem: _image(image, f"image {name!r}", path, prediction, form)
            for (stem, name), image in zip(names.items(), images, strict=True)}


_PLAIN = re.compile(r"^[\s0-9.eE+-]*$")  # what float and _number read alike


def _floats(texts: list[str | None]) -> np.ndarray | None:
    if None in texts or not _PLAIN.match("".join(texts)):
        return None
    try:
        values = np.fromiter(map(float, texts), np.float64, count=len(texts))
    except ValueError:
        return None
    return values if np.isfinite(values).all() else None


def _boxes_at_once(images: list[ET.Element], form: str) -> list[tuple[Objects, dict[str, int]]] | None:
    """Every image's GT boxes gathered attribute by attribute (C-level maps, vectorised
    corners) — what :func:`_image` makes of each, when every shape is a well-formed box;
    None otherwise (a polygon, an odd value: :func:`_image`, image by image, decides and
    names the shape at fault)."""
    children = list(map(list, images))
    flat = list(chain.from_iterable(children))
    owner = np.repeat(np.arange(len(images)), np.fromiter(map(len, children), np.int64, count=len(images)))
    tags = np.array(list(map(attrgetter("tag"), flat)), dtype=object)
    if (tags == "polygon").any():
        return None
    chosen = np.flatnonzero(tags == "box")
    boxes = [flat[i] for i in chosen.tolist()]
    labels = list(map(methodcaller("get", "label"), boxes))
    if None in labels or "" in labels:
        return None
    corners = _floats([text for key in ("xtl", "ytl", "xbr", "ybr")
                       for text in map(methodcaller("get", key), boxes)])
    rotations = list(map(methodcaller("get", "rotation", "0"), boxes))
    angles = _floats(rotations)
    sizes = [(image.get("height"), image.get("width")) for image in images]
    given = [text for pair in sizes if None not in pair for text in pair]
    if corners is None or angles is None or _floats(given) is None:
        return None
    x0, y0, x1, y1 = corners.reshape(4, -1)
    if ((x1 < x0) | (y1 < y0)).any():
        return None
    quads = np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1), np.stack([x1, y1], 1),
                      np.stack([x0, y1], 1)], axis=1)
    turned = np.radians(angles) != 0
    if turned.any():  # as _corners turns them (the same operations, element for element)
        angle = np.radians(angles[turned])
        centre = np.stack([(x0 + x1) / 2, (y0 + y1) / 2], 1)[turned][:, None, :]
        cos, sin = np.cos(angle)[:, None], np.sin(angle)[:, None]
        d = quads[turned] - centre
        quads[turned] = np.stack([d[..., 0] * cos - d[..., 1] * sin,
                                  d[..., 0] * sin + d[..., 1] * cos], axis=-1) + centre
    skipped = {tag: np.bincount(owner[tags == tag], minlength=len(images)) for tag in UNEVALUATED
               if (tags == tag).any()}
    bounds = np.searchsorted(owner[chosen], np.arange(len(images) + 1))
    out = []
    for k, (height, width) in enumerate(sizes):
        lo, hi = bounds[k], bounds[k + 1]
        size = None if height is None or width is None else (int(float(height)), int(float(width)))
        objects = Objects(form, labels[lo:hi], None, lines=None, size=size)
        if form == QUAD:
            objects.quads = quads[lo:hi]
        else:
            objects.boxes = np.concatenate([quads[lo:hi].min(axis=1), quads[lo:hi].max(axis=1)], axis=1)
            if form == POLYGON:
                objects.polygons = [[ring] for ring in quads[lo:hi]]
        out.append((objects, {f"cvat_{tag}": int(counts[k]) for tag, counts in skipped.items()
                              if counts[k]}))
    return out


def _image(image: ET.Element, at: str, path: str, prediction: bool,
           form: str) -> tuple[Objects, dict[str, int]]:
    size = None
    width, height = image.get("width"), image.get("height")
    if width is not None and height is not None:
        size = (int(_number(height, path, at, "height")), int(_number(width, path, at, "width")))
    labels, shapes, scores, where, skipped = [], [], [], [], {}
    counts: dict[str, int] = {}
    for element in image:
        tag = element.tag
        if tag not in SHAPES:
            if tag in UNEVALUATED:
                skipped[f"cvat_{tag}"] = skipped.get(f"cvat_{tag}", 0) + 1
            continue
        counts[tag] = counts.get(tag, 0) + 1
        here = f"{at} {tag} {counts[tag] - 1}"
        label = element.get("label")
        if not label:
            raise InputError(f"{here}: missing 'label'", path=path)
        corners = _corners(element, here, path) if tag == "box" else _points(element, here, path)
        if form == QUAD and tag == "polygon" and len(corners) != 4:
            skipped["cvat_polygon"] = skipped.get("cvat_polygon", 0) + 1
            continue
        if prediction:
            scores.append(_score(element, here, path))
        labels.append(label)
        shapes.append(corners)
        where.append(here)
    objects = Objects(form, labels, np.asarray(scores, np.float64) if prediction else None,
                      lines=where, size=size)
    if form == POLYGON:
        objects.polygons = [[ring] for ring in shapes]
        objects.boxes = _bounds(shapes)
    elif form == QUAD:
        objects.quads = np.asarray(shapes, np.float64).reshape(-1, 4, 2)
    elif form == BOX:
        objects.boxes = _bounds(shapes)
    else:
        raise ValueError(form)
    return objects, skipped


def _bounds(rings: list[np.ndarray]) -> np.ndarray:
    if not rings:
        return np.zeros((0, 4))
    return np.array([(*ring.min(axis=0), *ring.max(axis=0)) for ring in rings], np.float64)


def _corners(element: ET.Element, at: str, path: str) -> np.ndarray:
    """A box's corners (tl, tr, br, bl), turned ``rotation`` degrees clockwise on screen."""
    x0, y0, x1, y1 = (_number(element.get(key), path, at, key) for key in ("xtl", "ytl", "xbr", "ybr"))
    if x1 < x0 or y1 < y0:
        raise InputError(f"{at}: xbr < xtl or ybr < ytl ({x0:g}, {y0:g}, {x1:g}, {y1:g})", path=path)
    corners = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float64)
    rotation = element.get("rotation")
    if rotation is None:
        return corners
    angle = np.radians(_number(rotation, path, at, "rotation"))
    if angle == 0:
        return corners
    centre = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
    cos, sin = np.cos(np.float64(angle)), np.sin(np.float64(angle))
    d = corners - centre
    return np.stack([d[:, 0] * cos - d[:, 1] * sin, d[:, 0] * sin + d[:, 1] * cos], axis=-1) + centre


def _points(element: ET.Element, at: str, path: str) -> np.ndarray:
    text = element.get("points")
    if text is None:
        raise InputError(f"{at}: missing 'points'", path=path)
    try:
        ring = np.array([[float(v) for v in pair.split(",")] for pair in text.split(";") if pair.strip()],
                        np.float64)
    except ValueError:
        raise InputError(f"{at}: 'points' must be \"x1,y1;x2,y2;...\" of numbers", path=path) from None
    if ring.ndim != 2 or ring.shape[1] != 2 or not np.isfinite(ring).all():
        raise InputError(f"{at}: 'points' must be \"x1,y1;x2,y2;...\" of finite numbers", path=path)
    if len(ring) < 3:
        raise InputError(f"{at}: a polygon needs at least 3 points, got {len(ring)}", path=path)
    return ring


def _score(element: ET.Element, at: str, path: str) -> float:
    for attribute in element.iter("attribute"):
        if attribute.get("name") == "score":
            return _number((attribute.text or "").strip(), path, at, "score")
    raise InputError(f"{at}: a prediction needs <attribute name=\"score\"> ({SWAP_HINT})", path=path)


def _number(text: str | None, path: str, at: str, name: str) -> float:
    if text is None:
        raise InputError(f"{at}: missing '{name}'", path=path)
    if not _NUMBER.match(text.strip()) or not math.isfinite(float(text)):
        raise InputError(f"{at}: '{name}' is not a finite number: {text!r}", path=path)
    return float(text)
