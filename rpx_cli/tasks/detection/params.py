"""The parameters of ``rpx eval detection`` (:mod:`rpx_cli.tasks.detection` has the task):
what is recorded for each geometry, IoU type and protocol (:func:`normalise`), and the
combinations no run can use (:func:`check`). Each value alone was checked by its option's
declaration (choices, bounds)."""

from __future__ import annotations

from typing import Any

from rpx_cli.errors import ParameterError
from rpx_cli.io.boxes import load_class_map
from rpx_cli.ops.geometry import require_shapely
from rpx_cli.tasks.base import Params

PROTOCOLS = ("coco", "lvis")


def normalise(params: Params) -> dict[str, Any]:
    """``geometry`` is recorded unless it is ``box`` (so box reports stay as they were),
    ``angle_unit`` only for rotated boxes, ``box_format`` only for boxes."""
    mapping = params.get("class_map")
    if isinstance(mapping, str):
        mapping = load_class_map(mapping)
    out = {**params, "class_map": mapping, "iou_threshold": float(params["iou_threshold"]),
           "conf_threshold": float(params["conf_threshold"])}
    out.setdefault("iou_type", "bbox")
    out.setdefault("protocol", "coco")
    sigmas = out.pop("oks_sigmas", None)
    if out["iou_type"] == "keypoints":
        from rpx_cli.ops.oks import COCO_SIGMAS

        out["oks_sigmas"] = [float(x) for x in (COCO_SIGMAS.tolist() if sigmas is None else sigmas)]
    max_dets = out.pop("max_dets", None)
    if out["protocol"] == "lvis":
        out["max_dets"] = 300 if max_dets is None else int(max_dets)
    elif max_dets is not None:
        out["max_dets"] = max_dets  # refused by check
    geometry = out.pop("geometry", "box")
    angle_unit = out.pop("angle_unit", "deg")
    if geometry != "box":
        out.pop("box_format", None)
        out["geometry"] = geometry
        if geometry == "rotated":
            out["angle_unit"] = angle_unit
    return out



def check(params: Params) -> None:
    """Combinations no run can use (each value alone was checked by its option)."""
    geometry = params.get("geometry", "box")
    if geometry != "box" and "errors" in (params.get("metrics") or ()):
        raise ParameterError("--metrics errors (TIDE) is for axis-aligned boxes; "
                             f"--geometry {geometry} supports rows, pooled, confusion and coco")
    if geometry == "polygon":
        require_shapely()
    iou_type, protocol = params.get("iou_type", "bbox"), params.get("protocol", "coco")
    if iou_type != "bbox" and geometry != "box":
        raise ParameterError(f"--iou-type {iou_type} and --geometry {geometry} do not go "
                             "together: masks and keypoints are their own geometry")
    if protocol == "lvis" and iou_type == "keypoints":
        raise ParameterError("--protocol lvis evaluates boxes or masks (--iou-type bbox|segm)")
    if protocol != "lvis" and params.get("max_dets") is not None:
        raise ParameterError("--max-dets is LVIS' per-image cap: it needs --protocol lvis "
                             "(COCO's maxDets are fixed: 1/10/100, keypoints 20)")
    if iou_type == "keypoints" and "errors" in (params.get("metrics") or ()):
        raise ParameterError("--metrics errors (TIDE) is for boxes and masks; --iou-type "
                             "keypoints supports rows, pooled, confusion and coco")
    if protocol == "lvis" and "errors" in (params.get("metrics") or ()):
        raise ParameterError("--metrics errors (TIDE) is COCO's; --protocol lvis supports rows, "
                             "pooled, confusion and coco")
    if iou_type == "segm":
        from rpx_cli.ops.masks import require_pycocotools

        require_pycocotools()

