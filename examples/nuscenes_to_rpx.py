"""Export nuScenes ground truth (and add ego distances to a submission) for
``rpx eval detection3d --gt-file/--pred-file``.

A nuScenes submission holds boxes in the global (map) frame, hundreds to thousands of metres
from the map's origin. The devkit measures its class caps (car 50 m, pedestrian 40 m, ...)
from the ego vehicle: ``add_center_dist`` gives every box its ``ego_translation``, the box
centre minus the ego pose of the sample's LIDAR_TOP keyframe. rpx reads ``ego_translation``
the same way, so both files need it before ``--class-range`` means anything (without it rpx
refuses global boxes under caps or ranges rather than scoring 0).

This script uses the devkit's own loaders (``pip install nuscenes-devkit``):

    python examples/nuscenes_to_rpx.py --dataroot /data/nuscenes --version v1.0-trainval \\
        --split val --gt-out gt.json --pred results.json --pred-out results_ego.json

then the devkit's numbers (docs/detection3d.md, "Reproducing the devkit's numbers"):

    rpx eval detection3d --gt-file gt.json --pred-file results_ego.json \\
        --class-names car,truck,...,barrier --class-range car=50 ... --class-range barrier=30

The GT is ``load_gt`` (the split's samples, detection classes, attributes, velocities,
``num_pts`` = lidar + radar points) with ``add_center_dist``; predictions are
``load_prediction`` with ``add_center_dist``. Unknown velocities are written as ``null``
(JSON has no NaN).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any


def serialise(boxes: Any) -> dict[str, list[dict[str, Any]]]:
    """EvalBoxes as ``{sample_token: [box, ...]}`` with NaN as null."""
    def clean(value: Any) -> Any:
        if hasattr(value, "tolist"):  # numpy arrays and scalars (velocities, distances)
            value = value.tolist()
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    return {token: [{key: clean(value) for key, value in box.serialize().items()}
                    for box in boxes[token]] for token in boxes.sample_tokens}


def export(dataroot: str, version: str, split: str, gt_out: str | None = None,
           pred: str | None = None, pred_out: str | None = None,
           max_boxes: int = 500) -> None:
    from nuscenes import NuScenes
    from nuscenes.eval.common.loaders import add_center_dist, load_gt, load_prediction
    from nuscenes.eval.detection.data_classes import DetectionBox

    nusc = NuScenes(version=version, dataroot=dataroot, verbose=False)
    meta = {"use_lidar": True, "use_camera": False, "use_radar": False, "use_map": False,
            "use_external": False}
    if gt_out:
        gt = add_center_dist(nusc, load_gt(nusc, split, DetectionBox, verbose=False))
        _write(gt_out, {"meta": meta, "results": serialise(gt)})
    if pred and pred_out:
        boxes, pred_meta = load_prediction(pred, max_boxes, DetectionBox, verbose=False)
        boxes = add_center_dist(nusc, boxes)
        _write(pred_out, {"meta": pred_meta, "results": serialise(boxes)})


def _write(path: str, document: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, allow_nan=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataroot", required=True, help="the nuScenes folder (holds VERSION/)")
    parser.add_argument("--version", default="v1.0-trainval", help="v1.0-trainval, v1.0-mini, ...")
    parser.add_argument("--split", default="val", help="val, mini_val, ... (the devkit's splits)")
    parser.add_argument("--gt-out", help="write the split's GT here (submission layout)")
    parser.add_argument("--pred", help="a submission file (global frame) to add ego distances to")
    parser.add_argument("--pred-out", help="where the submission with ego_translation goes")
    parser.add_argument("--max-boxes", type=int, default=500,
                        help="the devkit's max_boxes_per_sample")
    args = parser.parse_args(argv)
    if not args.gt_out and not (args.pred and args.pred_out):
        parser.error("give --gt-out, or --pred with --pred-out, or both")
    if bool(args.pred) != bool(args.pred_out):
        parser.error("--pred and --pred-out go together")
    export(args.dataroot, args.version, args.split, args.gt_out, args.pred, args.pred_out,
           args.max_boxes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
