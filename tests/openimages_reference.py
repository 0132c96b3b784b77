"""hotcoco 1.3.0's Open Images evaluation (``COCOeval(..., oid_style=True)``, test-only), the
reference of ``--protocol openimages``: the same objects as a COCO dataset, its hierarchy
and ``params.expand_dt``, and the per-class all-point AP read from its ``eval``."""

from __future__ import annotations

import warnings
from typing import Any


def hotcoco_oid(images: list[tuple[list[dict], list[dict]]], classes: list[str],
                parents: dict[str, str] | None = None, *, expand_dt: bool = True,
                image_ids: list[int] | None = None) -> dict[str, Any]:
    """``{"mAP", "per_class": {name: AP or None}}`` of hotcoco on ``images``, each ``(GT,
    predictions)`` with ``{"bbox": [x, y, w, h], "label", "group": bool, "score"}``; image
    ids 1.. in list order (ties across images go to the lower id), annotation ids in list
    order. ``parents``: child -> parent class (the tree without its root); ``expand_dt``:
    hotcoco expands the predictions too (else they are given expanded); ``image_ids``: the
    images' ids (default 1..n)."""
    hotcoco = __import__("hotcoco")
    cat = {name: k + 1 for k, name in enumerate(classes)}
    gt_anns, dt_anns = [], []
    ids = image_ids or list(range(1, len(images) + 1))
    for i, (gt, pred) in zip(ids, images, strict=True):
        for obj in gt:
            x, y, w, h = obj["bbox"]
            gt_anns.append({"id": len(gt_anns) + 1, "image_id": i, "category_id": cat[obj["label"]],
                            "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0,
                            "is_group_of": bool(obj.get("group"))})
        for obj in pred:
            x, y, w, h = obj["bbox"]
            dt_anns.append({"id": len(dt_anns) + 1, "image_id": i, "category_id": cat[obj["label"]],
                            "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0,
                            "score": obj["score"]})
    dataset = {"images": [{"id": i, "width": 1000, "height": 1000, "file_name": f"{i}.jpg"}
                          for i in ids],
               "annotations": gt_anns,
               "categories": [{"id": k, "name": name} for name, k in cat.items()]}
    gt_coco = hotcoco.COCO(dataset)
    dt_coco = gt_coco.load_res(dt_anns) if dt_anns else gt_coco.load_res([])
    hierarchy = hotcoco.Hierarchy.from_parent_map(
        {cat[child]: cat[parent] for child, parent in (parents or {}).items()})
    ev = hotcoco.COCOeval(gt_coco, dt_coco, "bbox", oid_style=True, hierarchy=hierarchy)
    ev.params.expand_dt = expand_dt
    with warnings.catch_warnings():  # "does not implement the image-level-label rule"
        warnings.simplefilter("ignore")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    results = ev.get_results(per_class=True)
    return {"mAP": results["AP"], "expand_dt": ev.params.expand_dt,
            "per_class": {name: results.get(f"AP/{name}") for name in classes}}
