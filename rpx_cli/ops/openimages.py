"""The Open Images detection metric over every image and class at once, as hotcoco 1.3.0's
``COCOeval(..., oid_style=True)`` computes it (``detection/{expand,matching,accumulate}.rs``,
checked by its authors against the TensorFlow Object Detection API's challenge evaluator).

- **Hierarchy expansion** (:func:`expand`): every box is copied to each ancestor class of
  its own (the class tree's root is no class); a copy is dropped only when the input already
  holds an identical box (same image, class, coordinates, flags and score), so an expanded
  file comes back unchanged. GT always, predictions too (hotcoco's ``params.expand_dt``).
- **Image-level labels** (optional): only the classes verified on an image (present or
  absent; the GT classes of its boxes always) are scored there; predictions of other classes
  on it are left out, neither TP nor FP.
- **Per (image, class)**: at most the 100 best-scoring detections (hotcoco's ``max_dets``;
  tied scores in load order), walked by descending score. Each takes the free GT (group-of
  boxes aside) with the highest IoU ``>= 0.5`` (ties to the *last* GT in load order:
  pycocotools' ``>=`` scan); a GT that is ignored (difficult) only when no counted GT
  passes, and the detection is then ignored. IoU is pycocotools' on ``[x, y, w, h]``
  (nothing added), 0 where the union is 0.
- **Group-of boxes**: a detection left unmatched then takes the group-of box of its image
  and class it lies most inside — intersection over the *detection's* area ``>= 0.5``,
  ties to the *first* box (``numpy.argmax``); the best-scoring such detection is a TP, every
  later one inside the same box is ignored. A group-of box no detection lies in is one
  miss: each counts once in ``n_gt``.
- **AP**: per class, the scored detections of every image by descending score (ties: the
  earlier image in hotcoco's image id order — COCO files' ids, else the stem order —, then
  the pair's order), all-point area under the precision envelope (VOC2010's,
  :func:`rpx_cli.ops.voc.voc_ap`); the mean over the classes with GT.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rpx_cli.ops.matching import greedy_match
from rpx_cli.ops.voc import ClassCurves, VocInput, VocMatches, class_curves

IOU_THRESHOLD = 0.5
MAX_DETS = 100  # per image and class, as hotcoco's Open Images params


@dataclass
class Tree:
    """A class tree over class indices: each class's ancestors (itself and the root
    excluded) as CSR rows ``index[start[k]:start[k + 1]]``, and the same for descendants."""

    start: np.ndarray  # (K + 1,)
    index: np.ndarray
    down_start: np.ndarray  # (K + 1,)
    down_index: np.ndarray

    @classmethod
    def of(cls, parents: dict[int, list[int]], n_classes: int) -> Tree:
        """From each class's direct parents (a class under two parents has the ancestors of
        both; a cycle stops where it closes)."""
        ancestors: list[list[int]] = [[] for _ in range(n_classes)]
        for k in range(n_classes):  # the tree's classes, once each (not the boxes)
            seen: list[int] = []
            todo = list(parents.get(k, ()))
            while todo:
                parent = todo.pop()
                if parent != k and parent not in seen:
                    seen.append(parent)
                    todo.extend(parents.get(parent, ()))
            ancestors[k] = seen
        descendants: list[list[int]] = [[] for _ in range(n_classes)]
        for k, ups in enumerate(ancestors):
            for parent in ups:
                descendants[parent].append(k)
        return cls(*_csr(ancestors), *_csr(descendants))

    @classmethod
    def flat(cls, n_classes: int) -> Tree:
        """No hierarchy: no class has an ancestor."""
        return cls.of({}, n_classes)


def _csr(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    start = np.zeros(len(rows) + 1, np.int64)
    start[1:] = np.cumsum([len(row) for row in rows])
    return start, np.array([k for row in rows for k in row], np.int64)


def _rows_of(label: np.ndarray, start: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(source row, class)`` of every CSR entry of every ``label``, source-major."""
    counts = start[label + 1] - start[label]
    total = int(counts.sum())
    src = np.repeat(np.arange(label.size), counts)
    within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return src, index[np.repeat(start[label], counts) + within]


def _keys(columns: np.ndarray) -> np.ndarray:
    """One comparable value per row of a float64 table (its bytes)."""
    rows = np.ascontiguousarray(columns, np.float64)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()


def expand(label: np.ndarray, identity: np.ndarray, tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    """Hierarchy expansion: ``(source row, class)`` of the input rows (in order) followed
    by each row's copies to its ancestors (source order), less the copies identical to an
    input row (``identity``: what besides the class makes two boxes the same, (N, m))."""
    src, target = _rows_of(label, tree.start, tree.index)
    if src.size:
        given = _keys(np.column_stack([identity, label]))
        keep = ~np.isin(_keys(np.column_stack([identity[src], target])), given)
        src, target = src[keep], target[keep]
    return np.concatenate([np.arange(label.size), src]), np.concatenate([label, target])


def iou_xywh(dt: np.ndarray, gt: np.ndarray, *, over_detection: bool = False) -> np.ndarray:
    """pycocotools' IoU of ``[x, y, w, h]`` boxes (broadcast), as hotcoco computes it; with
    ``over_detection`` the intersection over the detection's area (group-of boxes)."""
    x1 = np.maximum(dt[..., 0], gt[..., 0])
    y1 = np.maximum(dt[..., 1], gt[..., 1])
    x2 = np.minimum(dt[..., 0] + dt[..., 2], gt[..., 0] + gt[..., 2])
    y2 = np.minimum(dt[..., 1] + dt[..., 3], gt[..., 1] + gt[..., 3])
    inter = np.maximum(x2 - x1, 0.0) * np.maximum(y2 - y1, 0.0)
    dt_area = dt[..., 2] * dt[..., 3]
    denominator = dt_area if over_detection else dt_area + gt[..., 2] * gt[..., 3] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator == 0, 0.0, inter / denominator)


@dataclass
class OiInput:
    """Every image's objects, flattened in the run's order (images in stem order, each
    image's objects in its file's order); classes index the vocabulary the tree covers."""

    n_classes: int
    gt_frame: np.ndarray
    gt_label: np.ndarray
    gt_box: np.ndarray  # (G, 4) x, y, w, h
    gt_group: np.ndarray  # bool: a group-of box
    gt_ignored: np.ndarray  # bool: difficult (never TP, never missed)
    dt_frame: np.ndarray
    dt_label: np.ndarray
    dt_box: np.ndarray
    dt_score: np.ndarray
    tree: Tree
    # image-level labels: (frame, class) pairs verified on the image, expanded (present:
    # and its ancestors; absent: and its descendants); None: every class is scored
    verified: tuple[np.ndarray, np.ndarray] | None = None


@dataclass
class OiResult:
    curves: ClassCurves  # AP (K, 1), the envelope at 101 recall points, n_pred, n_ignored
    npos: np.ndarray  # (K,) GT counted per class (group-of boxes once each)
    n_unverified: int  # predictions of classes not verified on their image: left out
    n_capped: int  # predictions past the 100 best of their image and class


def verified_pairs(frame: np.ndarray, label: np.ndarray, present: np.ndarray,
                   tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    """The image-level labels expanded: a class verified present makes its ancestors
    present, one verified absent its descendants absent."""
    up_src, up = _rows_of(label[present], tree.start, tree.index)
    down_src, down = _rows_of(label[~present], tree.down_start, tree.down_index)
    return (np.concatenate([frame, frame[present][up_src], frame[~present][down_src]]),
            np.concatenate([label, up, down]))


def evaluate(data: OiInput) -> OiResult:
    """The metric (module docstring) on ``data``."""
    K = max(data.n_classes, 1)
    # --- GT: expanded, each (image, class) in load order, copies after the originals
    identity = np.column_stack([data.gt_frame, data.gt_box, data.gt_group, data.gt_ignored])
    src, label = expand(data.gt_label, identity, data.tree)
    key = data.gt_frame[src] * K + label
    order = np.argsort(key, kind="stable")
    src, glabel, gkey = src[order], label[order], key[order]
    gbox, group, ignored = data.gt_box[src], data.gt_group[src], data.gt_ignored[src]
    npos = np.bincount(glabel[~ignored], minlength=data.n_classes)[:data.n_classes]
    # --- predictions: expanded, the unverified left out, the pair's best 100 by score
    identity = np.column_stack([data.dt_frame, data.dt_box, data.dt_score])
    src, label = expand(data.dt_label, identity, data.tree)
    dkey = data.dt_frame[src] * K + label
    n_unverified = 0
    if data.verified is not None:
        allowed = np.concatenate([data.verified[0] * K + data.verified[1], gkey])
        keep = np.isin(dkey, allowed)
        n_unverified = int(np.count_nonzero(~keep))
        src, label, dkey = src[keep], label[keep], dkey[keep]
    score = data.dt_score[src]
    order = np.lexsort((-score, dkey))  # stable: tied scores in load order
    src, label, dkey, score = src[order], label[order], dkey[order], score[order]
    first = np.searchsorted(dkey, dkey, side="left")
    kept = np.arange(dkey.size) - first < MAX_DETS
    n_capped = int(np.count_nonzero(~kept))
    src, label, dkey, score = src[kept], label[kept], dkey[kept], score[kept]
    dbox = data.dt_box[src]
    tp, ign = _match(dkey, dbox, gkey, gbox, group, ignored)
    # --- per class: every image's scored detections by descending score
    rank = np.empty(dkey.size, np.int64)
    rank[np.lexsort((-score, label))] = np.arange(dkey.size)
    walk = VocInput(data.n_classes, gkey // K, glabel, ignored, group, dkey // K, label, score,
                    pairs=None)  # type: ignore[arg-type]  (the walk reads no similarity)
    matches = VocMatches(rank, np.full(rank.size, np.nan), np.full(rank.size, -1), tp[:, None],
                         ign[:, None], npos)
    return OiResult(class_curves(walk, matches, eleven_point=False), npos, n_unverified,
                    n_capped)


def _match(dkey: np.ndarray, dbox: np.ndarray, gkey: np.ndarray, gbox: np.ndarray,
           group: np.ndarray, ignored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(TP, ignored)`` of every detection (sorted by pair, then rank) against the GT
    (sorted by pair, load order within)."""
    regular = np.flatnonzero(~group)
    rbox = gbox[regular]

    def similarity(det: np.ndarray, slots: np.ndarray, crowd: np.ndarray) -> np.ndarray:
        return iou_xywh(dbox[det][:, None, :], rbox[slots])

    # an ignored (difficult) GT is taken only when no counted one passes, and not again:
    # the greedy matcher's "area outside the range" (value 1 outside [0, 0.5])
    found = greedy_match(dkey, gkey[regular], similarity, IOU_THRESHOLD, ">=", ties="last",
                         gt_area=ignored[regular].astype(np.float64),
                         area_ranges=np.array([[0.0, 0.5]]))
    tp = found.matched[:, 0] & ~found.ignored[:, 0]
    ign = found.ignored[:, 0].copy()
    boxes = np.flatnonzero(group)
    if not boxes.size:
        return tp, ign
    # group-of boxes: the unmatched detections, each against the boxes of its pair
    bkey = gkey[boxes]
    free = np.flatnonzero(~found.matched[:, 0])
    start = np.searchsorted(bkey, dkey[free], side="left")
    count = np.searchsorted(bkey, dkey[free], side="right") - start
    free, start, count = free[count > 0], start[count > 0], count[count > 0]
    if not free.size:
        return tp, ign
    offsets = np.cumsum(count) - count
    det = np.repeat(free, count)
    slot = np.repeat(start, count) + np.arange(det.size) - np.repeat(offsets, count)
    ioa = iou_xywh(dbox[det], gbox[boxes[slot]], over_detection=True)
    best = np.maximum.reduceat(ioa, offsets)
    at_best = np.flatnonzero(ioa == np.repeat(best, count))
    segment = np.repeat(np.arange(free.size), count)[at_best]
    _, first = np.unique(segment, return_index=True)  # the first box reaching the maximum
    taken = slot[at_best[first]]
    inside = best >= IOU_THRESHOLD
    free, taken = free[inside], taken[inside]
    _, scorer = np.unique(taken, return_index=True)  # the best-ranked detection in each box
    credited = np.zeros(free.size, bool)
    credited[scorer] = True
    tp[free[credited]] = True
    ign[free[~credited]] = True
    return tp, ign
