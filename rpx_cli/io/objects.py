"""One image's objects as a labelling format writes them, before a similarity kind makes
them its shapes: :class:`Objects`, the neutral record every format reader of
:mod:`rpx_cli.io` (YOLO, VOC, KITTI, DOTA, LabelMe, CVAT, Open Images) returns.

An object is one of four *forms*, all in pixels of the image (y down): ``box`` (an
axis-aligned ``[x1, y1, x2, y2]``), ``quad`` (four corners ``(4, 2)``: YOLO obb, DOTA),
``polygon`` (rings of ``(n, 2)`` points: YOLO segment, LabelMe, CVAT) and ``keypoints``
(``(K, 3)`` rows ``x, y, v`` with the object's box: YOLO pose). A record holds objects of
one form; each carries its label (text), score (predictions), crowd and ignored flags
(VOC's and DOTA's ``difficult``), whether a crowd region's scope is every class (KITTI's
``DontCare``), whether it is a group of objects (Open Images' ``IsGroupOf``), a given area
(NaN: the shape's) and the line (or element) it came from, for messages. A kind says which forms it is
built from (``SimilarityKind.forms``) and builds its shapes from them
(``SimilarityKind.build``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BOX, QUAD, POLYGON, KEYPOINTS = "box", "quad", "polygon", "keypoints"
FORMS = (BOX, QUAD, POLYGON, KEYPOINTS)


@dataclass
class Objects:
    """The objects of one image in one form (see the module's docstring)."""

    form: str
    labels: list[str]
    scores: np.ndarray | None  # (N,) predictions
    boxes: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))  # (N, 4) xyxy
    quads: np.ndarray | None = None  # (N, 4, 2)
    polygons: list[list[np.ndarray]] | None = None  # per object, its rings (n, 2)
    keypoints: np.ndarray | None = None  # (N, K, 3)
    crowd: np.ndarray | None = None  # (N,) bool
    ignore: np.ndarray | None = None  # (N,) bool
    area: np.ndarray | None = None  # (N,) float64, NaN: the shape's
    lines: list[str] | None = None  # where each object is, as messages name it ("12", "object 3")
    size: tuple[int, int] | None = None  # the image's (height, width), when known
    every_class: np.ndarray | None = None  # (N,) bool: crowd regions of every class (DontCare)
    group: np.ndarray | None = None  # (N,) bool: group-of boxes (Open Images' IsGroupOf)

    def __len__(self) -> int:
        return len(self.labels)

    def crowds(self) -> np.ndarray:
        return np.zeros(len(self), bool) if self.crowd is None else self.crowd

    def ignored(self) -> np.ndarray:
        return np.zeros(len(self), bool) if self.ignore is None else self.ignore

    def given_area(self) -> np.ndarray:
        return np.full(len(self), np.nan) if self.area is None else self.area

    def where(self, index: int) -> str:
        """Object ``index``'s place, as a message names it (``line 12``)."""
        if self.lines is None:
            return f"object {index}"
        return self.lines[index]

    def select(self, keep: np.ndarray) -> Objects:
        """The objects where ``keep`` (bool) is True."""
        idx = np.flatnonzero(keep)

        def pick(array):
            return None if array is None else array[idx]

        return Objects(self.form, [self.labels[i] for i in idx.tolist()], pick(self.scores),
                       self.boxes[idx] if len(self.boxes) else self.boxes, pick(self.quads),
                       None if self.polygons is None else [self.polygons[i] for i in idx.tolist()],
                       pick(self.keypoints), pick(self.crowd), pick(self.ignore), pick(self.area),
                       None if self.lines is None else [self.lines[i] for i in idx.tolist()],
                       self.size, pick(self.every_class), pick(self.group))

    def flags(self, *, prediction: bool) -> dict[str, np.ndarray | None]:
        """The optional flag columns a kind's :class:`~rpx_cli.io.boxes.Boxes` carries
        (GT only; None where no object has the flag): ``ignore``, ``every_class``,
        ``group``."""
        out = {}
        for key in ("ignore", "every_class", "group"):
            column = getattr(self, key)
            out[key] = None if prediction or column is None or not column.any() else column.copy()
        return out


def bounding_boxes(rings: list[list[np.ndarray]]) -> np.ndarray:
    """(N, 4) ``[x1, y1, x2, y2]`` of each object's rings."""
    out = np.zeros((len(rings), 4))
    for i, parts in enumerate(rings):
        points = np.concatenate(parts) if parts else np.zeros((1, 2))
        out[i] = (*points.min(axis=0), *points.max(axis=0))
    return out


def by_image(ids: list[str]) -> list[tuple[str, np.ndarray]]:
    """The rows of each image of a file of the whole set (``ids``: each row's image), images
    in stem order, each one's rows (int64) in file order."""
    if not ids:
        return []
    stems, inverse = np.unique(np.array(ids, dtype=object), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(stems) + 1))
    return [(stem, order[bounds[k]:bounds[k + 1]]) for k, stem in enumerate(stems.tolist())]


def concat_objects(parts: list[Objects], form: str, *, prediction: bool) -> Objects:
    """The objects of many images as one record (``parts`` all in ``form``), in order: what
    a kind builds the shapes of a whole set from at once."""
    n = sum(len(part) for part in parts)
    out = Objects(form, [label for part in parts for label in part.labels],
                  np.concatenate([part.scores for part in parts]) if prediction and parts
                  else (np.zeros(0) if prediction else None),
                  boxes=np.concatenate([part.boxes.reshape(-1, 4) for part in parts]) if parts
                  else np.zeros((0, 4)))
    if form == QUAD:
        out.quads = np.concatenate([part.quads for part in parts]) if parts else np.zeros((0, 4, 2))
    if form == POLYGON:
        out.polygons = [rings for part in parts for rings in (part.polygons or [])]
    if form == KEYPOINTS:
        out.keypoints = np.concatenate([part.keypoints for part in parts if len(part)]) if n else None
    for name in ("crowd", "ignore", "every_class", "group"):
        columns = [getattr(part, name) for part in parts]
        if any(column is not None for column in columns):
            setattr(out, name, np.concatenate([np.zeros(len(part), bool) if column is None
                                               else column for part, column
                                               in zip(parts, columns, strict=True)]))
    if any(part.area is not None for part in parts):
        out.area = np.concatenate([part.given_area() for part in parts])
    return out
