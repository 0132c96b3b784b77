"""``rpx eval grounding``: one box answers a referring expression.

GT ``{"text": ..., "boxes": [[...], ...]}`` (any GT box is a right answer), prediction
``{"boxes": [[...], ...], "scores": [...]}``. The highest-scoring predicted box is the
answer (ties: the first); the RPX code took the first box whatever its score — fixed.
Row: ``grounding_iou`` = the best IoU of the answer with any GT box, ``grounding_acc`` =
IoU >= ``--iou-threshold``. No prediction scores 0/0; a GT without boxes gives nulls,
counted in ``aggregate.n_empty``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError
from rpx_cli.io.boxes import boxes_from_objects
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.json import loads_json
from rpx_cli.ops.boxes import iou_xywh
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks.base import MetricInfo, Option, Params, Sample, Task, Warn, probability
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

GT_SCORED = "gt-scored"  # a GT file with 'scores', as a prediction has
PRED_TEXT = "pred-text"  # a prediction with the query 'text' and no 'scores', as GT has


@register_task
class Grounding(Task):
    name = "grounding"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("grounding_iou", "grounding_acc"),
              "aggregate": ("grounding_iou", "grounding_acc", "n_frames", "n_empty"),
              "dataset": ("",)}
    primary_metric = "grounding_acc"
    rank_metric = "grounding_iou"
    suffixes = (".json",)
    help = "Visual grounding: IoU and accuracy of the highest-scoring box for each expression."
    formats = (
        'One JSON per stem; the highest-scoring predicted box answers, any GT box is right:\n'
        '  GT          {"text": "the red mug", "boxes": [[x1, y1, x2, y2], ...]}\n'
        '  prediction  {"boxes": [[x1, y1, x2, y2], ...], "scores": [0.8, ...]}\n'
        '--box-format xywh reads [x, y, w, h].'
    )
    example = (
        'rpx eval grounding --pred-dir fixtures/grounding/refer/pred \\\n'
        '    --gt-dir fixtures/grounding/refer/gt | jq .aggregate.grounding_acc'
    )
    metrics = {
        "grounding_iou": MetricInfo("higher", "best IoU of the highest-scoring predicted box "
                                    "with any GT box (0 without a prediction)"),
        "grounding_acc": MetricInfo("higher", "grounding_iou >= the IoU threshold"),
    }
    options = (
        Option("box_format", "--box-format", "choice", "xyxy", choices=("xyxy", "xywh"),
               help="Boxes are [x1, y1, x2, y2] or [x, y, w, h]."),
        Option("iou_threshold", "--iou-threshold", "parsed", 0.5,
               parse=probability("IoU threshold"), metavar="T",
               help="An answer is right when its IoU with a GT box is >= T."),
    )
    stats = (Stat("grounding_iou"), Stat("grounding_acc"))

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> tuple[np.ndarray, np.ndarray]:
        document = loads_json(buffer.read(path), path)
        if not isinstance(document, dict) or not isinstance(document.get("boxes"), list):
            raise InputError('expected {"boxes": [[...], ...]' +
                             (', "scores": [...]}' if role == "pred" else ', "text": ...}'), path=path)
        boxes = document["boxes"]
        scores = document.get("scores")
        if role == "gt" and "scores" in document:
            warn(GT_SCORED, path)
        elif role == "pred" and "text" in document and scores is None:
            warn(PRED_TEXT, path)
        if role == "pred":
            if scores is None and len(boxes) == 1:
                scores = [1.0]
            if not isinstance(scores, list) or len(scores) != len(boxes):
                raise InputError(f"'scores' must be a list as long as 'boxes' ({len(boxes)})",
                                 path=path)
        objects = [{"bbox": b, "label": "x", **({"score": s} if role == "pred" else {})}
                   for b, s in zip(boxes, scores or [None] * len(boxes), strict=True)]
        parsed = boxes_from_objects(objects, path, prediction=role == "pred",
                                    box_format=params["box_format"])
        return parsed.shape, parsed.scores if parsed.scores is not None else np.zeros(0)

    def warning_text(self, kind: str, paths: list[str]) -> str:
        if kind == GT_SCORED:
            return (f"{len(paths)} GT file(s) hold 'scores' as predictions do (e.g. {paths[0]}): "
                    f"{SWAP_HINT}")
        if kind == PRED_TEXT:
            return (f"{len(paths)} prediction(s) hold the query 'text' and no 'scores' as GT "
                    f"does (e.g. {paths[0]}): {SWAP_HINT}")
        return super().warning_text(kind, paths)

    def empty_prediction(self, gt: Any, params: Params) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros((0, 4)), np.zeros(0)

    def evaluate(self, pred, gt, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        gt_boxes, _ = gt
        pred_boxes, scores = pred
        if not len(gt_boxes):
            return Sample({"grounding_iou": None, "grounding_acc": None})
        if not len(pred_boxes):
            return Sample({"grounding_iou": 0.0, "grounding_acc": 0.0})
        answer = pred_boxes[int(np.argmax(scores))][None, :]
        iou = float(iou_xywh(answer, gt_boxes).max())
        return Sample({"grounding_iou": iou, "grounding_acc": float(iou >= params["iou_threshold"])})

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        iou = stats["grounding_iou"]
        aggregate: dict[str, Any] = {"n_frames": len(stats),
                                     "n_empty": int(np.count_nonzero(np.isnan(iou)))}
        for key in ("grounding_iou", "grounding_acc"):
            aggregate[key] = mean_present(stats[key])
        return {"aggregate": aggregate, "dataset": {}}
