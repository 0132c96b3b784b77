"""``rpx convert --to coco``: detections in any format rpx reads (docs/formats.md) written
as COCO files, so that the data can go to any other tool. Every GT file is an image (its
stem the ``file_name`` with the suffix of its image under ``--images-dir``, else
``.jpg``); the objects are read exactly as ``rpx eval detection`` reads them (same
options, same checks) and written in the run's kind's COCO field: boxes, masks
(compressed RLE) or keypoints (a YOLO pose GT's area, ``0.53 · w · h``, kept); a region
of every class (KITTI's ``DontCare``) as a crowd region in every category. A
prediction file whose stem has no GT file is an input error. Writes
``OUT/instances.json`` and ``OUT/results.json`` (when predictions are given); rpx reads
them back (``--coco-gt``/``--coco-dt``) to the same report, and pycocotools loads them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.coco_writer import coco_documents, write_json
from rpx_cli.io.discover import list_stems
from rpx_cli.io.image_size import image_sizes
from rpx_cli.io.memory import MemoryBuffer
from rpx_cli.io.pictures import find_image
from rpx_cli.io.regular import read_bytes
from rpx_cli.params import resolve
from rpx_cli.tasks.registry import get_task


def convert_to_coco(gt_dir: str, out_dir: str, params: Mapping[str, Any], *,
                    pred_dir: str | None = None) -> dict[str, Any]:
    """Write the COCO files of the folders; returns what was written (paths, counts)."""
    task = get_task("detection")
    params = task.settle_inputs(resolve(task, dict(params)), {"pred": pred_dir, "gt": gt_dir})
    from rpx_cli.tasks.detection.parts import FORMATS, kind_of
    from rpx_cli.tasks.detection.views import vocabulary

    kind = kind_of(params)
    if kind.coco_field is None:
        raise ParameterError(f"COCO files cannot hold what {kind.flag} evaluates: convert boxes, "
                             "masks (--iou-type segm) or keypoints (--iou-type keypoints)")
    # each side a folder of one file per image, or files of the whole set (a CVAT XML, VOC
    # results): read as `rpx eval detection` reads them
    sets = task.read_sets(params, {"gt": gt_dir, **({"pred": pred_dir} if pred_dir else {})})
    gts = sets["gt"].records if "gt" in sets else list_stems(gt_dir, task.suffixes_for(params, "gt"))
    preds: dict[str, Any] = {}
    if pred_dir:
        preds = sets["pred"].records if "pred" in sets else \
            list_stems(pred_dir, task.suffixes_for(params, "pred"))
    stray = sorted(set(preds) - set(gts))
    if stray:
        raise InputError(f"{len(stray)} prediction(s) name an image the GT does not have (e.g. "
                         f"{stray[0]}): every image of the COCO files is a GT image", path=pred_dir)
    stems = sorted(gts)

    def read(folder: str, stem: str, found: dict[str, Any], role: str) -> Boxes:
        if role in sets:
            return task.given(found[stem], folder, params, lambda *_: None, role=role, stem=stem)
        path = os.path.join(folder, found[stem])
        return task.read(path, MemoryBuffer(read_bytes(path)), params, lambda *_: None, role=role)

    images, gt_objects, pred_objects, frames = [], [], [], []
    sizes = image_sizes(params.get("images_dir"), params.get("image_size"))
    fmt = FORMATS[params["gt_format"]]
    for stem in stems:
        gt = read(gt_dir, stem, gts, "gt")
        pred = read(pred_dir, stem, preds, "pred") if stem in preds else None
        image: dict[str, Any] = {"file_name": _file_name(params, stem)}
        if "gt" not in sets:
            size = _size(fmt, os.path.join(gt_dir, gts[stem]), params, sizes)
        elif params.get("image_size") or params.get("images_dir"):
            size = sizes.of(stem)
        else:
            size = gts[stem][0].size  # the set's own (a CVAT image's width and height)
        if size is not None:
            image.update(height=int(size[0]), width=int(size[1]))
        images.append(image)
        frames.append((gt, pred))
    # a region of every class (KITTI's DontCare) is a crowd region in every category
    labels = vocabulary([_Frame(gt.scoped([]), pred) for gt, pred in frames])
    for gt, pred in frames:
        gt_objects.append(_objects(gt.scoped(labels), kind, prediction=False))
        pred_objects.append(_objects(pred, kind, prediction=True) if pred is not None else [])
    instances, results = coco_documents(images, labels, gt_objects, pred_objects)
    os.makedirs(out_dir, exist_ok=True)
    written = {"instances": os.path.join(out_dir, "instances.json")}
    write_json(written["instances"], instances)
    if pred_dir:
        written["results"] = os.path.join(out_dir, "results.json")
        write_json(written["results"], results)
    return {"written": written, "images": len(images), "annotations": len(instances["annotations"]),
            "results": len(results), "pred_format": params["pred_format"] if pred_dir else None,
            "gt_format": params["gt_format"]}


class _Frame:
    def __init__(self, gt: Boxes, pred: Boxes | None) -> None:
        self.gt = gt
        self.pred = pred if pred is not None else Boxes.empty(True)


def _file_name(params: Mapping[str, Any], stem: str) -> str:
    images_dir = params.get("images_dir")
    found = find_image(images_dir, stem) if images_dir else None
    if found is not None:
        return os.path.relpath(found, images_dir).replace(os.sep, "/")
    return f"{stem}.jpg"


def _size(fmt: Any, path: str, params: Mapping[str, Any], sizes: Any) -> tuple[int, int] | None:
    """The image's ``(height, width)``: the flags', else the file's own (VOC, LabelMe)."""
    if params.get("image_size") or params.get("images_dir"):
        return sizes.of(path)
    objects = getattr(fmt, "objects", None)
    if objects is None:
        return None
    from rpx_cli.tasks.detection.parts import kind_of

    kind = kind_of(params)
    form = next((f for f in kind.forms if f in fmt.forms), None)
    if form is None:
        return None
    return objects(read_bytes(path), path, prediction=False, form=form, params=params)[0].size


def _objects(boxes: Boxes, kind: Any, *, prediction: bool) -> list[dict[str, Any]]:
    """Each object's COCO record: its shape as the kind writes it, label, score (results),
    area, crowd and ignore flags (GT)."""
    ignore = boxes.ignored()
    out = kind.coco_shapes(boxes, prediction=prediction)
    for i, item in enumerate(out):
        item["label"] = boxes.labels[i]
        if prediction:
            item["score"] = float(boxes.scores[i])
            continue
        if not np.isnan(boxes.area[i]):
            item["area"] = float(boxes.area[i])
        item["iscrowd"] = int(boxes.crowd[i])
        if ignore[i]:
            item["ignore"] = 1
    return out
