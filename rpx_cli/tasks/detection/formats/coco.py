"""COCO files (``--coco-gt instances.json --coco-dt results.json``): the GT file's images,
annotations and categories, and a results list, joined by image id.

Stems are ``file_name`` without its suffix; images keep their COCO ids (the COCO view orders
them by id, as pycocotools does). An object's shape is the kind's field (``bbox`` as
``[x, y, w, h]``, ``segmentation``, ``keypoints``: :mod:`rpx_cli.io.coco_objects`); a GT
annotation carries ``iscrowd`` and ``area``, the images ``height``/``width`` (which polygon
masks need). The whole set is read straight into a flat table (no per-image objects), with
``--class-map`` and the protocol's cap applied. A result naming a category not in the GT
file is not evaluated (as pycocotools), counted in a warning. It provides LVIS' category
``frequency`` and images' ``neg_category_ids`` / ``not_exhaustive_category_ids``. It cannot
express rotated boxes, polygons or cuboids (COCO has no field for them).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.box_table import FrameTable
from rpx_cli.io.coco_files import load_coco
from rpx_cli.tasks.base import FileInput, Params
from rpx_cli.tasks.detection.parts import (
    DetectionFormat,
    DetectionProtocol,
    SimilarityKind,
    register_format,
)
from rpx_cli.tasks.stats import Stat, StatTable


@register_format
class CocoJson(DetectionFormat):
    name, rank, title = "coco", 1, "COCO"
    file_options = ("coco_gt", "coco_dt")
    provides = frozenset({"lvis_categories"})

    def sniff(self, head: bytes, name: str) -> bool:
        """A ``.json`` file holding a GT file's ``images`` or a results list's ``image_id``."""
        return name.lower().endswith(".json") and (b'"images"' in head or b'"image_id"' in head)

    def expresses(self, kind: SimilarityKind) -> bool:
        return kind.coco_field is not None

    def read_files(self, files: Mapping[str, str], params: Params, kind: SimilarityKind,
                   protocol: DetectionProtocol, declared: tuple[Stat, ...]) -> FileInput:
        gt_file, dt_file = files["coco_gt"], files["coco_dt"]
        if not self.expresses(kind):
            raise ParameterError("--coco-gt/--coco-dt hold axis-aligned boxes: --geometry "
                                 f"{kind.geometry} reads per-stem files (--pred-dir/--gt-dir)")
        prepare_gt = kind.prepare_coco_gt()
        # (masks: the results' RLE dicts are made only if something reads them, PackedRles)
        coco = load_coco(gt_file, dt_file, shape_field=kind.coco_field,
                         lvis=bool(protocol.needs & self.provides),
                         skip=params.get("on_error") == "skip", prepare_gt=prepare_gt,
                         deferred_masks=prepare_gt is not None)
        if not coco.stems and not coco.errors:
            raise InputError("the COCO GT file has no images", path=gt_file)
        kind.check_files(coco, gt_file, dt_file, params)
        extra: dict[str, Any] = {**protocol.file_params(coco, gt_file), "pred_format": self.name,
                                 "gt_format": self.name}
        table = FrameTable(len(coco.stems), coco.categories, coco.gt, coco.pred, coco.image_ids,
                           coco.neg, coco.not_exhaustive, coco.file_order)
        zero_id = _zero_id_warning(table, coco.zero_id, kind, params, gt_file)
        n_gt = len(table.gt)
        table = protocol.cap(table, params).map_labels(params.get("class_map"))
        rows = [{"n_gt": a, "n_pred": b} for a, b in
                zip(table.n_gt(), table.n_pred(params["conf_threshold"]), strict=True)]
        warnings = []
        if n_gt and not len(table.gt):
            warnings.append(f"--class-map removed every GT box of {gt_file} ({n_gt} before, 0 "
                            "after): no image has an object left to find")
        if zero_id:
            warnings.append(zero_id)
        if coco.n_unknown_category:
            warnings.append(f"{coco.n_unknown_category} detection(s) name a category that is "
                            f"not in {gt_file}; they are not evaluated (as pycocotools)")
        return FileInput(coco.stems, stats=StatTable(declared, {"frame": table}, table.n),
                         rows=rows, params={"categories": table.vocabulary, **extra},
                         warnings=warnings, errors=coco.errors, sample=partial(_sample, table))


def _sample(table: FrameTable, i: int) -> tuple[Any, Any]:
    """Sample ``i``'s (prediction, GT) as ``read`` gives them (plugin calculators' input)."""
    frame = table[i]
    return frame.pred, frame.gt


def _zero_id_warning(table: FrameTable, rows: Any, kind: SimilarityKind, params: Params,
                     gt_file: str) -> str | None:
    """One line when a detection matches the GT annotation of ``id`` 0: rpx counts the match
    (as hotcoco); pycocotools and lvis read id 0 as "unmatched" and count a false positive,
    so their AP is lower on such a file (docs/detection.md)."""
    if rows is None or not len(rows):
        return None
    from rpx_cli.tasks.detection.views import zero_id_matches

    at_50, over_all = zero_id_matches(table, rows, lambda sub: kind.similarity(sub, sub, params),
                                      kind.coco_params.max_dets[-1])
    if not over_all:
        return None
    return (f"{gt_file}: {at_50} detection(s) match the GT annotation with id 0 at IoU 0.5 "
            f"({over_all} matches over IoU .50:.95); rpx counts them, while pycocotools and lvis "
            "read id 0 as no match and count each as a false positive (their AP is lower): "
            "number annotations from 1 to compare")
