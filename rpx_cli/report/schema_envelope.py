"""What the JSON Schema (Draft 2020-12) of every report kind is built from: the small
schemas they share (a number or null, a list of stems, a metric's direction, the gates, the
reference to the embedded provenance) and the envelope every pair-reading report has
(``eval`` and a task's own kind: params, counts, errors, metric_info, a ``--shard`` part's
state, the worst frames, rows), with what a full report requires."""

from __future__ import annotations

import copy
from typing import Any

from rpx_cli.tasks.base import Task

DRAFT = "https://json-schema.org/draft/2020-12/schema"
PROVENANCE_REF = {"$ref": "#/$defs/provenance"}
NUM_OR_NULL = {"type": ["number", "null"]}
STEMS = {"type": "array", "items": {"type": "string"}}
DIRECTION = {"type": "object", "required": ["direction"], "properties": {
    "direction": {"enum": ["higher", "lower", "none"]}, "description": {"type": "string"}}}
GATES = {"type": "array", "items": {"type": "object", "required": ["expr", "value", "passed"],
         "properties": {"expr": {"type": "string"}, "value": NUM_OR_NULL,
                        "passed": {"type": "boolean"}, "message": {"type": "string"}}}}

_PICTURE = {"type": "object", "required": ["data", "width", "height", "scale"],
            "properties": {"data": {"type": "string", "pattern": "^data:image/(png|jpeg);base64,"},
                           "width": {"type": "integer", "minimum": 1},
                           "height": {"type": "integer", "minimum": 1},
                           "scale": {"type": "number", "exclusiveMinimum": 0}}}
_FRAME_BOXES = {"type": "object", "required": ["label", "box", "matched"], "properties": {
    "label": {"type": "array", "items": {"type": "string"}},
    "box": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
    "matched": {"type": "array", "items": {"type": "boolean"}},
    "score": {"type": "array", "items": {"type": "number"}},
    "crowd": {"type": "array", "items": {"type": "boolean"}},
    "mask": {"type": "array", "description": "Masks: each object's compressed RLE.", "items": {
        "type": "object", "required": ["size", "counts"],
        "properties": {"size": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                       "counts": {"type": "string"}}}},
    "points": {"type": "array", "description": "Keypoints: each object's [x1, y1, v1, ...].",
               "items": {"type": "array", "items": {"type": "number"}}}}}
WORST_FRAMES = {
    "type": "object",
    "description": "--keep-worst (and --html, --images-dir): the frames worst by the rank "
                   "metric, worst first, with what the page draws of them: boxes (detection: "
                   "[x, y, w, h] px; detection3d: footprints [x, y, w, l, yaw]), overlays and "
                   "the image, shrunk and embedded as data: URIs.",
    "required": ["metric", "direction", "frames"],
    "properties": {
        "metric": {"type": "string"}, "direction": {"enum": ["higher", "lower", "none"]},
        "ranked": {"type": "integer", "minimum": 0},
        "skeleton": {"type": "array", "description": "Keypoints: the pairs of points joined.",
                     "items": {"type": "array", "items": {"type": "integer", "minimum": 0}}},
        "frames": {"type": "array", "items": {
            "type": "object", "required": ["stem", "value"],
            "properties": {"stem": {"type": "string"}, "value": {"type": ["number", "null"]},
                           "pred_path": {"type": ["string", "null"]},
                           "gt_path": {"type": ["string", "null"]},
                           "image": {"oneOf": [{"type": "null"}, _PICTURE]},
                           "overlays": {"type": "object", "additionalProperties": _PICTURE},
                           "gt": _FRAME_BOXES, "pred": _FRAME_BOXES}}}}}


def envelope_properties() -> dict[str, Any]:
    """The keys every pair-reading report (``eval`` and a task's own kind) has."""
    return {
        "schema_version": {"const": 1},
        "task": {"type": "string"},
        "params": {"type": "object",
                   "description": "Every option that can change a number, normalised."},
        "n_pairs": {"type": "integer", "minimum": 0},
        "unpaired": {"type": "object", "required": ["pred_only", "gt_only"],
                     "additionalProperties": False,
                     "properties": {"pred_only": STEMS, "gt_only": STEMS}},
        "errors": {"type": "array", "items": {
            "type": "object", "required": ["stem", "path", "message"],
            "properties": {"stem": {"type": "string"}, "path": {"type": "string"},
                           "message": {"type": "string"},
                           "side": {"enum": ["pred", "gt"], "description": "The file at fault."},
                           "effect": {"enum": ["empty_prediction", "dropped"], "description":
                                      "A prediction is scored as empty; a GT drops the pair."}}}},
        "metric_info": {"type": "object", "additionalProperties": DIRECTION},
        "warnings": {"type": "array", "items": {"type": "string"},
                     "description": "What the summary found misleading (a filter that removed "
                                    "every GT object of a class or of the run); also on stderr."},
        "gates": GATES,
        "state": {"type": "object", "description": "Sufficient statistics of a --shard partial report.",
                  "required": ["shard", "pairing", "inputs", "stems", "stats", "digests"],
                  "properties": {
                      "shard": {"type": "object", "required": ["index", "count"],
                                "properties": {"index": {"type": "integer", "minimum": 1},
                                               "count": {"type": "integer", "minimum": 1}}},
                      "pairing": {"type": "string"}, "stems": STEMS,
                      "stats": {"type": "object", "description": "The task's declared statistics "
                                "by name: one entry per stem (null: undefined), or one "
                                "value for all the part's stems (a folded statistic)."},
                      "inputs": {"type": "object"}, "digests": {"type": "object"}}},
        "statistics": {"type": "object", "description": "--keep-state: every evaluated pair's "
                       "statistics (what rpx compare resamples for the interval of a pooled "
                       "figure), in stem order.", "required": ["stems", "stats"],
                       "properties": {"stems": STEMS, "stats": {
                           "type": "object", "description": "The task's declared statistics by "
                           "name, encoded as a --shard part's state.stats."}}},
        "worst_frames": WORST_FRAMES,
        "run_provenance": PROVENANCE_REF,
    }


ENVELOPE_REQUIRED = ["schema", "schema_version", "task", "params", "n_pairs", "unpaired",
                     "errors", "metric_info", "run_provenance"]
ROW = {"type": "object", "required": ["stem", "pred_path", "gt_path"],
       "properties": {"stem": {"type": "string"}, "pred_path": {"type": ["string", "null"]},
                      "gt_path": {"type": ["string", "null"]}}}


def rows_schema(task: Task | None) -> dict[str, Any]:
    row = copy.deepcopy(ROW)
    if task is not None:
        row["required"] += [key for key in task.row_required if key not in row["required"]]
        row["properties"].update(copy.deepcopy(dict(task.row_properties)))
    return {"type": "array", "items": row}


def full_report(required: list[str]) -> dict[str, Any]:
    """``required`` holds in a full report; a ``--shard`` part (with ``state``) may lack it."""
    return {"if": {"not": {"required": ["state"]}}, "then": {"required": required}}
