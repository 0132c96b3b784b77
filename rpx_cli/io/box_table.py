"""Boxes of many images as flat arrays, the form every detection view computes on.

A per-stem run reads one :class:`Boxes` per file and flattens them once
(:meth:`FrameTable.from_frames`); COCO files are read straight into tables, so 300,000
detections never become 5,000 per-image objects. Frames are numbered 0..n-1 (stem order);
within a frame, boxes keep their input order, which decides score ties.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from rpx_cli.io.boxes import Boxes


@dataclass
class Overlaps:
    """One frame's overlaps under a geometry whose IoU is not a formula of two boxes, computed
    once when the pair is evaluated (polygons): the (prediction, GT) pairs a view's result can
    depend on that have a nonzero intersection (see ``rpx_cli.tasks.detection.shapes.evaluate_shapes``),
    and each object's own area.
    Every view's IoU is ``inter / (pred_area + gt_area - inter)`` (over ``pred_area`` for a
    crowd region), 0 for a pair not listed (no intersection, or none that changes a result)."""

    pred: np.ndarray  # (P,) int64 index into the frame's predictions
    gt: np.ndarray  # (P,) int64 index into the frame's GT
    inter: np.ndarray  # (P,) float64 intersection area, > 0
    pred_area: np.ndarray  # (D,) float64 the geometry's area
    gt_area: np.ndarray  # (G,) float64 the geometry's area (not a GT's given 'area')

    def as_json(self) -> dict[str, list]:
        return {"pred": self.pred.tolist(), "gt": self.gt.tolist(), "inter": self.inter.tolist(),
                "pred_area": self.pred_area.tolist(), "gt_area": self.gt_area.tolist()}

    @classmethod
    def from_json(cls, data: dict[str, list]) -> Overlaps:
        return cls(np.asarray(data["pred"], np.int64), np.asarray(data["gt"], np.int64),
                   np.asarray(data["inter"], np.float64), np.asarray(data["pred_area"], np.float64),
                   np.asarray(data["gt_area"], np.float64))


@dataclass
class Frame:
    """One image's GT and predictions (labels already mapped). ``image_id``: the COCO id
    for COCO-file input (it orders images in the COCO view, as pycocotools does); None for
    per-stem input, whose images are numbered in stem order. ``overlaps``: for polygons (None
    for boxes, whose IoU the views compute, and for rotated boxes and cuboids, whose
    intersections the summary computes for all frames at once)."""

    gt: Boxes
    pred: Boxes
    image_id: int | None = None
    overlaps: Overlaps | None = None
    # the image's place in its GT file (COCO files; TIDE's tie order); None: stem order
    file_order: int | None = None
    # LVIS: the image's negative and not exhaustively annotated categories (labels)
    neg: list[str] | None = None
    not_exhaustive: list[str] | None = None


@dataclass
class BoxTable:
    """Boxes of many frames, sorted by ``frame`` (input order within a frame)."""

    frame: np.ndarray  # (N,) int64
    label: np.ndarray  # (N,) int64, index into the vocabulary
    shape: np.ndarray  # (N, 4) float64 x, y, w, h (other kinds: see Boxes.shape)
    crowd: np.ndarray  # (N,) bool
    area: np.ndarray  # (N,) float64: the given area, else w * h
    score: np.ndarray | None  # (N,) float64 for predictions
    # (N,) bool: GT ignored though not crowd (Boxes.ignore); None: none is
    ignore: np.ndarray | None = None
    # (N,) bool: group-of boxes (Boxes.group); None: none is
    group: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.frame.size)

    def take(self, index: np.ndarray, frame: np.ndarray | None = None) -> BoxTable:
        return BoxTable(self.frame[index] if frame is None else frame, self.label[index],
                        self.shape[index], self.crowd[index], self.area[index],
                        None if self.score is None else self.score[index],
                        None if self.ignore is None else self.ignore[index],
                        None if self.group is None else self.group[index])

    def ignored(self) -> np.ndarray:
        """(N,) bool: the ignored GT (all False without an ``ignore`` column)."""
        return np.zeros(len(self), bool) if self.ignore is None else self.ignore

    def counted(self) -> np.ndarray:
        """(N,) bool: the GT recall counts: neither a crowd region, ignored nor a group-of
        box (a region too, kept only under ``--protocol openimages``, which counts it itself)."""
        counted = ~self.crowd if self.ignore is None else ~self.crowd & ~self.ignore
        return counted if self.group is None else counted & ~self.group

    def where(self, keep: np.ndarray) -> BoxTable:
        return self if keep.all() else self.take(np.flatnonzero(keep))

    def bounds(self, n_frames: int) -> np.ndarray:
        """``bounds[i]:bounds[i + 1]`` are frame i's boxes."""
        return np.searchsorted(self.frame, np.arange(n_frames + 1), side="left")

    def counts(self, n_frames: int) -> np.ndarray:
        return np.bincount(self.frame, minlength=n_frames)[:n_frames]

    @classmethod
    def from_boxes(cls, parts: Sequence[Boxes], index: dict[str, int], with_scores: bool) -> BoxTable:
        counts = np.fromiter(map(len, parts), np.int64, count=len(parts))
        total = int(counts.sum())
        label = np.fromiter((index[label] for part in parts for label in part.labels), np.int64,
                            count=total)
        nonempty = [part for part in parts if len(part)]

        def cat(field: str, dtype, shape) -> np.ndarray:
            arrays = [getattr(part, field) for part in nonempty]
            if not arrays:
                return np.zeros(shape, dtype or np.float64)
            joined = np.concatenate(arrays)
            return joined if dtype is None else joined.astype(dtype, copy=False)

        def flags(field: str) -> np.ndarray | None:
            columns = [getattr(part, field) for part in nonempty]
            if all(column is None or not column.any() for column in columns):
                return None
            return np.concatenate([np.zeros(len(part), bool) if column is None else column
                                   for part, column in zip(nonempty, columns, strict=True)])

        if any(part.every_class is not None and part.every_class.any() for part in nonempty):
            raise ValueError("regions of every class must be scoped (Boxes.scoped) first")
        # the shapes keep their geometry's dtype (float64 boxes; WKB bytes for polygons)
        return cls(np.repeat(np.arange(len(parts)), counts), label, cat("shape", None, (0, 4)),
                   cat("crowd", bool, (0,)), cat("area", np.float64, (0,)),
                   cat("scores", np.float64, (0,)) if with_scores else None, flags("ignore"),
                   flags("group"))


@dataclass
class FrameTable(Sequence):
    """Every frame's GT and predictions. ``image_ids``: COCO image ids (the COCO view
    orders images by them, as pycocotools does); None numbers images in frame order."""

    n: int
    vocabulary: list[str]
    gt: BoxTable
    pred: BoxTable
    image_ids: np.ndarray | None = None
    # LVIS: (frame, label) pairs of each image's negative and not-exhaustive categories
    neg: tuple[np.ndarray, np.ndarray] | None = None
    not_exhaustive: tuple[np.ndarray, np.ndarray] | None = None
    # each frame's place in its GT file's images list (COCO files); None: frame order
    file_order: np.ndarray | None = None
    # each frame's stem (the summary sets them where the run knows them); None: unknown
    stems: list[str] | None = None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):  # a Frame, built on demand (sharding, tests)
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self.n))]
        if not -self.n <= i < self.n:
            raise IndexError(i)
        i %= self.n
        image_id = None if self.image_ids is None else int(self.image_ids[i])
        return Frame(self._boxes(self.gt, i), self._boxes(self.pred, i), image_id,
                     neg=self._labels_of(self.neg, i),
                     not_exhaustive=self._labels_of(self.not_exhaustive, i),
                     file_order=None if self.file_order is None else int(self.file_order[i]))

    def _labels_of(self, pairs: tuple[np.ndarray, np.ndarray] | None, i: int) -> list[str] | None:
        if pairs is None:
            return None
        return [self.vocabulary[k] for k in pairs[1][pairs[0] == i].tolist()]

    def __iter__(self) -> Iterator[Frame]:
        return (self[i] for i in range(self.n))

    def _boxes(self, table: BoxTable, i: int) -> Boxes:
        lo, hi = np.searchsorted(table.frame, [i, i + 1])
        names = [self.vocabulary[k] for k in table.label[lo:hi].tolist()]
        return Boxes(table.shape[lo:hi], names, None if table.score is None else table.score[lo:hi],
                     table.crowd[lo:hi], table.area[lo:hi],
                     None if table.ignore is None else table.ignore[lo:hi],
                     group=None if table.group is None else table.group[lo:hi])

    @classmethod
    def from_frames(cls, frames: Sequence[Frame], vocabulary: list[str]) -> FrameTable:
        index = {label: k for k, label in enumerate(vocabulary)}
        ids = [frame.image_id for frame in frames]
        image_ids = np.array(ids, np.int64) if ids and None not in ids else None
        places = [frame.file_order for frame in frames]
        file_order = np.array(places, np.int64) if places and None not in places else None

        def pairs(field: str) -> tuple[np.ndarray, np.ndarray] | None:
            lists = [getattr(frame, field) for frame in frames]
            if all(labels is None for labels in lists):
                return None
            lists = [labels or [] for labels in lists]
            return (np.repeat(np.arange(len(lists)), [len(labels) for labels in lists]).astype(np.int64),
                    np.array([index[label] for labels in lists for label in labels], np.int64))

        return cls(len(frames), list(vocabulary),
                   BoxTable.from_boxes([frame.gt for frame in frames], index, False),
                   BoxTable.from_boxes([frame.pred for frame in frames], index, True), image_ids,
                   pairs("neg"), pairs("not_exhaustive"), file_order)

    def subset(self, frames: Sequence[int] | np.ndarray) -> FrameTable:
        """The frames ``frames``, in that order (renumbered 0..len-1; a frame named twice is
        there twice, each copy a frame of its own: a bootstrap resample). Every frame in its
        own order (a run's stems in frame order) shares the columns: no copy."""
        frames = np.asarray(frames, np.int64)
        if frames.size == self.n and (frames == np.arange(self.n)).all():
            return FrameTable(self.n, self.vocabulary, self.gt, self.pred, self.image_ids,
                              self.neg, self.not_exhaustive, self.file_order)

        def rows_of(frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            # each named frame's rows (input order within it), named frame after named frame
            order = np.argsort(frame, kind="stable")
            bounds = np.searchsorted(frame[order], np.arange(self.n + 1))
            sizes = bounds[frames + 1] - bounds[frames]
            total = int(sizes.sum())
            first = np.repeat(bounds[frames] - (np.cumsum(sizes) - sizes), sizes)
            return order[first + np.arange(total)], np.repeat(np.arange(frames.size), sizes)

        def pick(table: BoxTable) -> BoxTable:
            rows, renumbered = rows_of(table.frame)
            return table.take(rows, renumbered)

        def pick_pairs(pairs):
            if pairs is None:
                return None
            rows, renumbered = rows_of(pairs[0])
            return renumbered, pairs[1][rows]

        return FrameTable(int(frames.size), self.vocabulary, pick(self.gt), pick(self.pred),
                          None if self.image_ids is None else self.image_ids[frames],
                          pick_pairs(self.neg), pick_pairs(self.not_exhaustive),
                          None if self.file_order is None else self.file_order[frames])

    def take(self, frames: Sequence[int] | np.ndarray) -> FrameTable:
        """:meth:`subset` (the method a statistics table uses to reorder a column)."""
        return self.subset(frames)

    def map_labels(self, mapping: dict[str, str | None] | None) -> FrameTable:
        """Rename labels; drop those mapped to None (labels not in the map are kept)."""
        if not mapping:
            return self
        renamed = [mapping.get(label, label) for label in self.vocabulary]
        vocabulary = list(dict.fromkeys(label for label in renamed if label is not None))
        position = {label: k for k, label in enumerate(vocabulary)}
        code = np.array([-1 if label is None else position[label] for label in renamed], np.int64)

        def relabel(table: BoxTable) -> BoxTable:
            label = code[table.label]
            keep = np.flatnonzero(label >= 0)
            out = table.take(keep)
            out.label = label[keep]
            return out

        def relabel_pairs(pairs):
            if pairs is None:
                return None
            label = code[pairs[1]]
            keep = label >= 0
            return pairs[0][keep], label[keep]

        return FrameTable(self.n, vocabulary, relabel(self.gt), relabel(self.pred), self.image_ids,
                          relabel_pairs(self.neg), relabel_pairs(self.not_exhaustive),
                          self.file_order)

    def as_ids(self) -> FrameTable:
        """The same table with each object's shape replaced by its id (``0..N-1`` per side,
        in table order): what the views see when the similarity looks intersections up."""
        return replace(self, gt=replace(self.gt, shape=np.arange(len(self.gt))),
                       pred=replace(self.pred, shape=np.arange(len(self.pred))))

    def n_gt(self) -> list[int]:
        """GT boxes per frame, crowd regions and ignored GT excluded."""
        regular = self.gt.frame[self.gt.counted()]
        return np.bincount(regular, minlength=self.n).tolist()

    def n_pred(self, conf_threshold: float) -> list[int]:
        """Detections per frame with score >= ``conf_threshold``."""
        kept = self.pred.frame[self.pred.score >= conf_threshold]
        return np.bincount(kept, minlength=self.n).tolist()

    def file_image(self) -> np.ndarray:
        """Each frame's position in its GT file's image order (frame order without one):
        the order tidecv walks images in."""
        if self.file_order is None:
            return np.arange(self.n)
        rank = np.empty(self.n, np.int64)
        rank[np.argsort(self.file_order, kind="stable")] = np.arange(self.n)
        return rank

    def coco_image(self) -> np.ndarray:
        """Each frame's position in COCO image id order (frame order without ids)."""
        if self.image_ids is None:
            return np.arange(self.n)
        rank = np.empty(self.n, np.int64)
        rank[np.argsort(self.image_ids, kind="stable")] = np.arange(self.n)
        return rank
