"""Write schemas/*.schema.json (the JSON Schemas of every report kind).

    python tools/make_schemas.py

The schemas are committed; edit this file and rerun it to change them (tests validate every
report the CLI produces against them).
"""
import json
import os

D = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "schemas")
os.makedirs(D, exist_ok=True)
S = "https://json-schema.org/draft/2020-12/schema"
num_or_null = {"type": ["number", "null"]}
stems = {"type": "array", "items": {"type": "string"}}
prov_ref = {"$ref": "urn:rpx:schema:provenance:v1"}
direction = {"type": "object", "required": ["direction"], "properties": {
    "direction": {"enum": ["higher", "lower", "none"]}, "description": {"type": "string"}}}
common_props = {
    "schema_version": {"const": 1},
    "task": {"type": "string"},
    "params": {"type": "object", "description": "Every option that can change a number, normalised."},
    "n_pairs": {"type": "integer", "minimum": 0},
    "unpaired": {"type": "object", "required": ["pred_only", "gt_only"], "additionalProperties": False,
                 "properties": {"pred_only": stems, "gt_only": stems}},
    "errors": {"type": "array", "items": {"type": "object", "required": ["stem", "path", "message"],
               "properties": {"stem": {"type": "string"}, "path": {"type": "string"}, "message": {"type": "string"}}}},
    "metric_info": {"type": "object", "additionalProperties": direction},
    "gates": {"type": "array", "items": {"type": "object", "required": ["expr", "value", "passed"],
              "properties": {"expr": {"type": "string"}, "value": num_or_null, "passed": {"type": "boolean"},
                             "message": {"type": "string"}}}},
    "state": {"type": "object", "description": "Sufficient statistics of a --shard partial report.",
              "required": ["shard", "pairing", "inputs", "stems", "stats", "digests"],
              "properties": {"shard": {"type": "object", "required": ["index", "count"],
                                       "properties": {"index": {"type": "integer", "minimum": 1},
                                                      "count": {"type": "integer", "minimum": 1}}},
                             "pairing": {"type": "string"}, "stems": stems,
                             "stats": {"type": "array"}, "inputs": {"type": "object"},
                             "digests": {"type": "object"}}},
    "run_provenance": prov_ref,
}
metric_map = {"type": "object", "additionalProperties": {"type": ["number", "null", "object", "array", "string", "boolean"]}}

provenance = {
    "$schema": S, "$id": "urn:rpx:schema:provenance:v1",
    "title": "rpx run provenance (rpx-run-provenance-v1)",
    "type": "object",
    "required": ["schema", "tool", "command", "argv", "args", "inputs", "outputs", "started_at",
                 "finished_at", "duration_s", "environment", "git"],
    "properties": {
        "schema": {"const": "rpx-run-provenance-v1"},
        "tool": {"type": "object", "required": ["name", "version"],
                 "properties": {"name": {"const": "rpx"}, "version": {"type": "string"}}},
        "command": {"type": "string"},
        "argv": {"type": "array", "items": {"type": "string"}},
        "args": {"type": "object"},
        "inputs": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["path", "kind", "exists", "n_files", "sha256"],
            "properties": {"path": {"type": "string"}, "kind": {"enum": ["directory", "file"]},
                           "exists": {"type": "boolean"}, "n_files": {"type": "integer", "minimum": 0},
                           "sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"}}}},
        "outputs": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}},
        "started_at": {"type": "string", "pattern": "^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z$"},
        "finished_at": {"type": "string", "pattern": "^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z$"},
        "duration_s": {"type": "number", "minimum": 0},
        "environment": {"type": "object", "required": ["python", "platform"],
                        "properties": {"python": {"type": "string"}, "platform": {"type": "string"},
                                       "numpy": {"type": ["string", "null"]}}},
        "git": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["commit", "dirty"],
                "properties": {"commit": {"type": "string", "pattern": "^[0-9a-f]{40,64}$"},
                               "dirty": {"type": ["boolean", "null"]}}}]},
    },
}

row_eval = {"type": "object", "required": ["stem", "pred_path", "gt_path"],
            "properties": {"stem": {"type": "string"}, "pred_path": {"type": ["string", "null"]},
                           "gt_path": {"type": ["string", "null"]}}}
eval_schema = {
    "$schema": S, "$id": "urn:rpx:schema:eval:v1",
    "title": "rpx evaluation report (rpx.eval v1)",
    "type": "object",
    "required": ["schema", "schema_version", "task", "params", "n_pairs", "unpaired", "errors",
                 "metric_info", "run_provenance"],
    "properties": {
        "schema": {"const": "rpx.eval"},
        **common_props,
        "task": {"enum": ["depth", "segmentation", "detection", "grounding", "pose", "keypoints",
                          "tracking", "sparse-depth", "nvs"]},
        "aggregate": {"type": "object", "description": "Mean over rows where the metric is not null, plus counts.",
                      "additionalProperties": {"type": ["number", "null", "object"]}},
        "dataset": metric_map,
        "strata": {"type": "object"},
        "rows": {"type": "array", "items": row_eval},
    },
}

sal_row = {"type": "object",
           "required": ["stem", "pred_path", "gt_path", "width", "height", "block_size", "pred_blocks",
                        "gt_blocks", "intersection_blocks", "union_blocks", "iou"],
           "properties": {
               "stem": {"type": "string"}, "pred_path": {"type": ["string", "null"]}, "gt_path": {"type": "string"},
               "width": {"type": "integer", "minimum": 1}, "height": {"type": "integer", "minimum": 1},
               "block_size": {"type": "integer", "minimum": 1},
               "pred_blocks": {"type": "integer", "minimum": 0}, "gt_blocks": {"type": "integer", "minimum": 0},
               "intersection_blocks": {"type": "integer", "minimum": 0},
               "union_blocks": {"type": "integer", "minimum": 0},
               "iou": {"type": "number", "minimum": 0, "maximum": 1}}}
saliency = {
    "$schema": S, "$id": "urn:rpx:schema:saliency-mb:v1",
    "title": "rpx block-level saliency IoU report (rpx.saliency-mb v1)",
    "description": "Top-level and row keys of eval_saliency_per_mb.py, plus the rpx envelope.",
    "type": "object",
    "required": ["schema", "schema_version", "task", "n_pairs", "params", "unpaired", "errors",
                 "metric_info", "run_provenance"],
    "if": {"not": {"required": ["state"]}},
    "then": {"required": ["block_size", "threshold", "macro_iou", "micro_iou", "totals"]},
    "properties": {
        "schema": {"const": "rpx.saliency-mb"},
        **common_props,
        "task": {"const": "saliency-mb"},
        "block_size": {"type": "integer", "minimum": 1},
        "threshold": {"type": "number", "minimum": 0, "maximum": 1},
        "macro_iou": {"type": "number", "minimum": 0, "maximum": 1},
        "micro_iou": {"type": "number", "minimum": 0, "maximum": 1},
        "totals": {"type": "object", "required": ["intersection_blocks", "union_blocks", "blocks"],
                   "properties": {k: {"type": "integer", "minimum": 0}
                                  for k in ["intersection_blocks", "union_blocks", "blocks"]}},
        "rows": {"type": "array", "items": sal_row},
    },
}

stability = {
    "$schema": S, "$id": "urn:rpx:schema:stability:v1",
    "title": "rpx temporal stability report (rpx.stability v1)",
    "type": "object",
    "required": ["schema", "schema_version", "task", "warp", "ts_score", "num_pairs", "sequences", "run_provenance"],
    "properties": {
        "schema": {"const": "rpx.stability"}, "schema_version": {"const": 1},
        "task": {"enum": ["depth", "segmentation"]}, "warp": {"enum": ["reproject", "inplane", "none"]},
        "ts_score": num_or_null, "num_pairs": {"type": "integer", "minimum": 0},
        "sequences": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["ts_score", "num_pairs", "per_pair"],
            "properties": {"ts_score": num_or_null, "num_pairs": {"type": "integer", "minimum": 0},
                           "per_pair": {"type": "array", "items": num_or_null}}}},
        "gates": common_props["gates"], "run_provenance": prov_ref,
    },
}
coherence = {
    "$schema": S, "$id": "urn:rpx:schema:coherence:v1",
    "title": "rpx stack-level geometric coherence report (rpx.coherence v1)",
    "type": "object",
    "required": ["schema", "schema_version", "sgc", "precision", "recall", "n_pairs", "run_provenance"],
    "properties": {
        "schema": {"const": "rpx.coherence"}, "schema_version": {"const": 1},
        "sgc": num_or_null, "precision": num_or_null, "recall": num_or_null,
        "n_pairs": {"type": "integer", "minimum": 0}, "params": {"type": "object"},
        "rows": {"type": "array", "items": {"type": "object"}},
        "gates": common_props["gates"], "run_provenance": prov_ref,
    },
}
readiness = {
    "$schema": S, "$id": "urn:rpx:schema:readiness:v1",
    "title": "rpx deployment readiness report (rpx.readiness v1)",
    "type": "object",
    "required": ["schema", "schema_version", "run_provenance"],
    "properties": {
        "schema": {"const": "rpx.readiness"}, "schema_version": {"const": 1},
        "task": {"type": "string"}, "eval": {"type": "object"}, "strata": {"type": "object"},
        "stability": {"type": ["object", "null"]}, "coherence": {"type": ["object", "null"]},
        "cost": {"type": "object", "properties": {k: num_or_null for k in
                                                  ["params_m", "flops_g", "latency_ms", "actmem_gb"]}},
        "run_provenance": prov_ref,
    },
}
compare = {
    "$schema": S, "$id": "urn:rpx:schema:compare:v1",
    "title": "rpx comparison of two reports (rpx.compare v1)",
    "type": "object",
    "required": ["schema", "schema_version", "base", "new", "metrics", "run_provenance"],
    "properties": {
        "schema": {"const": "rpx.compare"}, "schema_version": {"const": 1},
        "base": {"type": "object"}, "new": {"type": "object"},
        "metrics": {"type": "array", "items": {"type": "object", "required": ["metric", "base", "new", "delta"],
                    "properties": {"metric": {"type": "string"}, "base": num_or_null, "new": num_or_null,
                                   "delta": num_or_null, "direction": {"enum": ["higher", "lower", "none"]}}}},
        "gates": common_props["gates"], "run_provenance": prov_ref,
    },
}
manifest = {
    "$schema": S, "$id": "urn:rpx:schema:manifest:v1",
    "title": "rpx per-stem metadata manifest (v1)",
    "type": "object",
    "required": ["samples"],
    "properties": {
        "schema_version": {"const": 1},
        "samples": {"type": "array", "items": {
            "type": "object",
            "anyOf": [{"required": ["stem"]}, {"required": ["id"]}],
            "properties": {
                "stem": {"type": "string"}, "id": {"type": "string"}, "scene": {"type": "string"},
                "phase": {"oneOf": [{"enum": ["clutter", "interaction", "clean"]}, {"enum": [0, 1, 2]}]},
                "difficulty": {"enum": ["easy", "medium", "hard"]},
                "sequence": {"type": "string"}, "frame": {"type": "integer"},
                "pose": {"oneOf": [{"type": "string"}, {"type": "array", "minItems": 4, "maxItems": 4,
                         "items": {"type": "array", "minItems": 4, "maxItems": 4, "items": {"type": "number"}}}]},
                "intrinsics": {"type": "array", "minItems": 4, "maxItems": 4, "items": {"type": "number"}},
            }}},
    },
}
for name, doc in [("rpx-run-provenance.v1", provenance), ("rpx-eval.v1", eval_schema),
                  ("rpx-saliency-mb.v1", saliency), ("rpx-stability.v1", stability),
                  ("rpx-coherence.v1", coherence), ("rpx-readiness.v1", readiness),
                  ("rpx-compare.v1", compare), ("rpx-manifest.v1", manifest)]:
    with open(f"{D}/{name}.schema.json", "w") as f:
        json.dump(doc, f, indent=2, sort_keys=False)
        f.write("\n")
