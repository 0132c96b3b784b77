"""KITTI object labels for 2D detection: one ``.txt`` per frame, ``type truncated occluded
alpha x1 y1 x2 y2 h w l x y z rotation_y`` per line (15 fields; a prediction adds its
score, 16). The 2D box is ``x1 y1 x2 y2`` in pixels; the class is ``type``. A GT
``DontCare`` line (:data:`DONT_CARE`) is an ignore region of every class: a crowd region
(``crowd``) whose scope is every class (``every_class``), so that a detection of any class
whose intersection over its own area with it reaches the IoU threshold is ignored, as the
KITTI devkit ignores detections in DontCare areas. A ``DontCare`` prediction is no
detection: it is left out and counted.
Malformed (a field count, a non-number, ``x2 < x1``) is an input error naming
``file:line``. (3D boxes for ``detection3d`` are read by that task's reader.)"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError
from rpx_cli.io.objects import BOX, Objects

DONT_CARE = "DontCare"


def read_kitti_2d(data: Any, path: str, *, prediction: bool) -> tuple[Objects, int]:
    """``(objects, number of DontCare predictions left out)``: the 2D boxes of one label
    file, GT ``DontCare`` regions among them (crowd regions of every class)."""
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
    labels, boxes, scores, where, regions, skipped = [], [], [], [], [], 0
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        want = 16 if prediction else 15
        if len(fields) != want:
            hint = ""
            if len(fields) == 31 - want:
                hint = (" (a GT line with a score?" if not prediction else
                        " (a prediction line without a score?") + f" {SWAP_HINT})"
            raise InputError(f"{len(fields)} fields where a KITTI {'prediction' if prediction else 'GT'} "
                             f"line has {want}{hint}", path=f"{path}:{n}")
        try:
            values = np.array(fields[1:], np.float64)
        except ValueError:
            raise InputError("not a number", path=f"{path}:{n}") from None
        if not np.isfinite(values).all():
            raise InputError("not a finite number", path=f"{path}:{n}")
        x1, y1, x2, y2 = values[3:7]
        if x2 < x1 or y2 < y1:
            raise InputError("x2 < x1 or y2 < y1", path=f"{path}:{n}")
        if fields[0] == DONT_CARE and prediction:
            skipped += 1
            continue
        labels.append(fields[0])
        boxes.append((x1, y1, x2, y2))
        scores.append(values[14] if prediction else 0.0)
        regions.append(fields[0] == DONT_CARE)
        where.append(str(n))
    objects = Objects(BOX, labels, np.asarray(scores, np.float64) if prediction else None,
                      boxes=np.asarray(boxes, np.float64).reshape(-1, 4), lines=where)
    if any(regions):
        objects.crowd = objects.every_class = np.asarray(regions, bool)
    return objects, skipped
