"""The Open Images challenge metric (``--protocol openimages``), as hotcoco 1.3.0's
``COCOeval(gt, dt, "bbox", oid_style=True)`` with a hierarchy and ``params.expand_dt``
(:mod:`rpx_cli.ops.openimages` has the rules): hierarchy expansion of GT and predictions
(``--oi-hierarchy``), image-level labels (``--oi-image-labels``: only an image's verified
classes are scored on it), group-of boxes (the best detection inside one is its TP, the
others inside it are ignored), IoU >= 0.5, all-point AP per class, ``mAP`` the mean over
classes with GT.

Classes are matched by name: the hierarchy's and the image labels' ``LabelName`` go
through ``--oi-class-descriptions`` when it is given (as the box CSVs' do), else they are
the class names themselves (Open Images ids in its CSVs, COCO category names, rpx labels).
A class with boxes that the hierarchy does not hold is an input error; the hierarchy's
classes without boxes of their own (``Animal`` above ``Dog``) are scored from the expanded
boxes. Group-of boxes are Open Images' ``IsGroupOf`` and COCO's crowd regions; difficult
GT (VOC, ``ignore``) are ignored GT. Keys (``dataset.openimages``): ``mAP``,
``per_class.<name>.{AP, n_gt, n_pred, n_ignored}``, ``ignored``, ``curves``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.box_table import FrameTable
from rpx_cli.io.openimages import read_hierarchy, read_image_labels
from rpx_cli.ops.openimages import (
    IOU_THRESHOLD,
    MAX_DETS,
    OiInput,
    Tree,
    evaluate,
    verified_pairs,
)
from rpx_cli.ops.voc import CURVE_RECALL, mean_defined
from rpx_cli.tasks.base import MetricInfo, Params
from rpx_cli.tasks.detection.formats.openimages import class_descriptions
from rpx_cli.tasks.detection.parts import DetectionProtocol, register_protocol

INFO = {
    "mAP": "Open Images: mean over classes with GT of the class's all-point AP (IoU >= 0.5, "
           "hierarchy-expanded, group-of boxes once each)",
    "AP": "Open Images: the class's all-point AP at IoU >= 0.5",
    "n_ignored": "detections neither TP nor FP: on a difficult GT, or inside a group-of box "
                 "another detection scored",
}
NO_LABELS = ("--protocol openimages without --oi-image-labels: every class present in an "
             "image's GT or predictions is scored on it (the challenge scores only the "
             "image's verified classes)")


@register_protocol
class OpenImages(DetectionProtocol):
    name, rank, section = "openimages", 6, "openimages"
    title = "Open Images (challenge metric)"
    label = "Open Images"
    curves_at = "IoU ≥ 0.5"
    kinds = ("box",)
    iou_types_text = "axis-aligned boxes (--iou-type bbox, --geometry box)"
    headline = ("mAP",)
    options = ("oi_hierarchy", "oi_image_labels")
    group_of = True

    def metric_info(self, info: dict[str, MetricInfo], params: Params) -> None:
        info.update({key: MetricInfo("none" if key == "n_ignored" else "higher", text)
                     for key, text in INFO.items()})

    def frames(self, table: FrameTable, params: Params) -> FrameTable:
        """Group-of boxes are crowd regions for every other view (rows, pooled, confusion,
        COCO's): a region, not an object to find."""
        gt = table.gt
        if gt.group is None:
            return table
        return replace(table, gt=replace(gt, crowd=gt.crowd.astype(bool) | gt.group))

    def warnings(self, params: Params) -> list[str]:
        return [] if params.get("oi_image_labels") else [NO_LABELS]

    def evaluate(self, table: FrameTable, similarity: Any, kind: Any, params: Params,
                 gt_ignore: np.ndarray | None = None) -> dict[str, Any]:
        return openimages_view(table, params, gt_ignore)


def _classes(table: FrameTable, params: Params) -> tuple[list[str], Tree]:
    """The classes scored (the run's, then the hierarchy's others) and their tree."""
    vocabulary = list(table.vocabulary)
    path = params.get("oi_hierarchy")
    if path is None:
        return vocabulary, Tree.flat(len(vocabulary))
    root, parents = read_hierarchy(path, class_descriptions(params.get("oi_class_descriptions")))
    used = np.unique(np.concatenate([table.gt.label, table.pred.label]))
    unknown = [vocabulary[k] for k in used.tolist() if vocabulary[k] not in parents
               and vocabulary[k] != root]
    if unknown:
        raise InputError(f"class {unknown[0]!r} (of the GT or predictions) is not in the "
                         f"hierarchy{f' (nor {len(unknown) - 1} more)' if len(unknown) > 1 else ''}",
                         path=path)
    index = {name: k for k, name in enumerate(vocabulary)}
    for name in (*parents, *(p for ps in parents.values() for p in ps)):
        if name not in index:
            index[name] = len(vocabulary)
            vocabulary.append(name)
    tree = Tree.of({index[child]: [index[p] for p in ps] for child, ps in parents.items()},
                   len(vocabulary))
    return vocabulary, tree


def _verified(table: FrameTable, params: Params, vocabulary: list[str],
              tree: Tree) -> tuple[np.ndarray, np.ndarray] | None:
    """``--oi-image-labels`` as (frame, class) pairs, expanded; None without it."""
    path = params.get("oi_image_labels")
    if path is None:
        return None
    if table.stems is None:
        raise InputError("--oi-image-labels needs the images' stems (ImageID), which this run "
                         "does not know", path=path)
    labels = read_image_labels(path, class_descriptions(params.get("oi_class_descriptions")))
    index = {name: k for k, name in enumerate(vocabulary)}
    rows = [(i, index[name], present) for i, stem in enumerate(table.stems)
            for present, names in ((True, labels.get(stem, ((), ()))[0]),
                                   (False, labels.get(stem, ((), ()))[1]))
            for name in names if name in index]
    frame, label, present = (np.array(column, dtype) for column, dtype in
                             zip(zip(*rows, strict=True) if rows else ((), (), ()),
                                 (np.int64, np.int64, bool), strict=True))
    return verified_pairs(frame, label, present, tree)


def openimages_view(table: FrameTable, params: Params,
                    gt_ignore: np.ndarray | None) -> dict[str, Any]:
    """``dataset.openimages`` (module docstring)."""
    vocabulary, tree = _classes(table, params)
    gt, pred = table.gt, table.pred
    ignored = np.zeros(len(gt), bool) if gt_ignore is None else gt_ignore.astype(bool)
    group = gt.crowd.astype(bool) if gt.group is None else gt.crowd.astype(bool) | gt.group
    # images in hotcoco's order: by COCO image id where the files give them, else stem order
    place = np.arange(table.n)
    if table.image_ids is not None:
        place[np.argsort(table.image_ids, kind="stable")] = np.arange(table.n)
    verified = _verified(table, params, vocabulary, tree)
    if verified is not None:
        verified = (place[verified[0]], verified[1])
    result = evaluate(OiInput(
        len(vocabulary), place[gt.frame], gt.label, gt.shape.astype(np.float64), group,
        ignored & ~group, place[pred.frame], pred.label, pred.shape.astype(np.float64),
        pred.score, tree, verified))
    curves, npos = result.curves, result.npos
    ap = curves.ap[:, 0]
    listed = np.zeros(len(vocabulary), bool)
    listed[:len(table.vocabulary)] = True
    listed |= (npos > 0) | (curves.n_pred > 0)
    per_class: dict[str, Any] = {}
    for k in np.flatnonzero(listed).tolist():
        entry: dict[str, Any] = {"AP": None if np.isnan(ap[k]) else float(ap[k]),
                                 "n_gt": int(npos[k]), "n_pred": int(curves.n_pred[k]),
                                 "n_ignored": int(curves.n_ignored[k])}
        if entry["AP"] is None:
            entry["reason"] = "no GT box of this class (after hierarchy expansion)"
        per_class[vocabulary[k]] = entry
    with_gt = ~np.isnan(curves.curve[:, 0])
    out: dict[str, Any] = {
        "mAP": mean_defined(ap), "per_class": per_class, "iou_threshold": IOU_THRESHOLD,
        "ignored": {
            "gt": int(np.count_nonzero(ignored & ~group)),
            "gt_group_of": int(np.count_nonzero(group)),
            "pred": int(curves.n_ignored.sum()),
            "pred_unverified": result.n_unverified,
            "pred_over_max_dets": result.n_capped,
            "why": f"difficult GT count in no n_gt; a detection on one is neither TP nor FP, as "
                   f"is every detection inside a group-of box but the best; predictions of a "
                   f"class not verified on their image (--oi-image-labels) and those past the "
                   f"{MAX_DETS} best of their image and class are not scored",
        },
        "curves": {
            "recall": CURVE_RECALL.tolist(),
            "per_class": {vocabulary[k]: {"precision": curves.curve[k].tolist()}
                          for k in np.flatnonzero(with_gt & listed).tolist()},
            "overall": {"precision": curves.curve[with_gt].mean(axis=0).tolist() if with_gt.any()
                        else [None] * CURVE_RECALL.size},
        },
    }
    if out["mAP"] is None:
        out["null_reasons"] = {"mAP": "no GT box of any class"}
    return out
