"""The JSON Schemas of the workflows' reports (``rpx stability``, ``rpx readiness``,
``rpx compare``) and of the per-stem metadata manifest ``--manifest`` reads."""

from __future__ import annotations

from typing import Any

from rpx_cli.deploy.figures import COST_METRICS
from rpx_cli.report.schema_envelope import DIRECTION, DRAFT, GATES, NUM_OR_NULL, PROVENANCE_REF, STEMS
from rpx_cli.report.schema_provenance import self_contained


def stability() -> dict[str, Any]:
    return self_contained({
        "$schema": DRAFT, "$id": "urn:rpx:schema:stability:v1",
        "title": "rpx temporal stability report (rpx.stability v1)",
        "type": "object",
        "required": ["schema", "schema_version", "task", "warp", "params", "ts_score",
                     "num_pairs", "n_null_pairs", "n_frames", "n_sequences", "sequences",
                     "unpaired", "skipped", "metric_info", "run_provenance"],
        "properties": {
            "schema": {"const": "rpx.stability"}, "schema_version": {"const": 1},
            "task": {"enum": ["depth", "segmentation"]},
            "warp": {"enum": ["reproject", "inplane", "none"]},
            "ts_score": NUM_OR_NULL, "num_pairs": {"type": "integer", "minimum": 0},
            "sequences": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["ts_score", "num_pairs", "per_pair"],
                "properties": {
                    "ts_score": NUM_OR_NULL, "num_pairs": {"type": "integer", "minimum": 0},
                    "per_pair": {"type": "array", "items": NUM_OR_NULL},
                    "n_null_pairs": {"type": "integer", "minimum": 0},
                    "n_frames": {"type": "integer", "minimum": 0},
                    "n_valid": {"type": "array", "items": {"type": "integer", "minimum": 0},
                                "description": "Pixels compared in each pair."},
                    "pairs": {"type": "array", "items": {"type": "array", "minItems": 2,
                                                         "maxItems": 2, "items": {"type": "string"}},
                              "description": "The stems of each pair (t, t+1), in order."},
                    "frames": {"type": "array", "items": {"type": "integer"}},
                    "scene": {"type": ["string", "null"]}, "phase": {"type": ["string", "null"]}}}},
            "params": {"type": "object", "description": "Every option that can change a number, "
                       "normalised (warp: as requested; the top-level warp is the one used)."},
            "n_null_pairs": {"type": "integer", "minimum": 0},
            "n_frames": {"type": "integer", "minimum": 0},
            "n_sequences": {"type": "integer", "minimum": 0},
            "unpaired": {"type": "object", "required": ["pred_only", "manifest_only"],
                         "properties": {"pred_only": STEMS, "manifest_only": STEMS}},
            "skipped": {"type": "array", "items": {
                "type": "object", "required": ["stem", "reason"],
                "properties": {"stem": {"type": "string"}, "reason": {"type": "string"}}}},
            "metric_info": {"type": "object", "additionalProperties": DIRECTION},
            "gates": GATES, "run_provenance": PROVENANCE_REF,
        },
    })


def readiness() -> dict[str, Any]:
    return self_contained({
        "$schema": DRAFT, "$id": "urn:rpx:schema:readiness:v1",
        "title": "rpx deployment readiness report (rpx.readiness v1)",
        "type": "object",
        "required": ["schema", "schema_version", "task", "model_name", "primary_metric",
                     "direction", "eval", "strata", "stability", "coherence", "cost", "summary",
                     "run_provenance"],
        "properties": {
            "schema": {"const": "rpx.readiness"}, "schema_version": {"const": 1},
            "task": {"type": "string"}, "eval": {"type": "object"},
            "strata": {"type": ["object", "null"]}, "stability": {"type": ["object", "null"]},
            "coherence": {"type": ["object", "null"]},
            "cost": {"type": "object", "properties": {
                key: NUM_OR_NULL for key in COST_METRICS}},
            "run_provenance": PROVENANCE_REF,
            "model_name": {"type": ["string", "null"]},
            "primary_metric": {"type": ["string", "null"]},
            "direction": {"enum": ["higher", "lower", "none", None]},
            "summary": {"type": "object",
                        "additionalProperties": {"type": ["number", "boolean", "null"]}},
            "gates": GATES,
        },
    })


_PAIR = {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "number"}}


def compare() -> dict[str, Any]:
    return self_contained({
        "$schema": DRAFT, "$id": "urn:rpx:schema:compare:v1",
        "title": "rpx comparison of two reports (rpx.compare v1)",
        "type": "object",
        # presentation_params_differ is written by every rpx since it exists, but not
        # required: a comparison an earlier rpx wrote stays a valid v1 file
        "required": ["schema", "schema_version", "base", "new", "params_differ",
                     "summary", "metrics", "run_provenance"],
        "properties": {
            "schema": {"const": "rpx.compare"}, "schema_version": {"const": 1},
            "base": {"type": "object"}, "new": {"type": "object"},
            "params_differ": {"type": "array", "items": {"type": "string"},
                              "description": "Parameters that change the numbers and differ "
                                             "(compared anyway with --force)."},
            "presentation_params_differ": {
                "type": "array", "items": {"type": "string"},
                "description": "Parameters that change no number (declared changes_numbers=False: "
                               "keep_worst, images_dir) and differ: never a reason to refuse."},
            "summary": {"type": "object", "required": ["improved", "regressed", "unchanged"],
                        "properties": {"no_significant_change": {
                            "type": "integer", "minimum": 0, "description": "Figures that moved "
                            "within their 95% interval (it includes 0)."}},
                        "additionalProperties": {"type": "integer", "minimum": 0}},
            "pooled_bootstrap": {
                "type": "object", "required": ["figures", "resamples"],
                "description": "The pooled figures (dataset.*) both reports hold and how many "
                               "paired resamples gave them an interval (0: none; 'reason' says "
                               "why, e.g. a report written without --keep-state).",
                "properties": {"figures": {"type": "integer", "minimum": 0},
                               "resamples": {"type": "integer", "minimum": 0},
                               "with_interval": {"type": "integer", "minimum": 0},
                               "seed": {"type": "integer"}, "reason": {"type": "string"}}},
            "metrics": {"type": "array", "items": {
                "type": "object", "required": ["metric", "base", "new", "delta"],
                "properties": {"metric": {"type": "string"}, "base": NUM_OR_NULL,
                               "new": NUM_OR_NULL, "delta": NUM_OR_NULL,
                               "direction": {"enum": ["higher", "lower", "none"]},
                               "status": {"enum": ["improved", "regressed", "unchanged", "changed",
                                                   "n/a", "no significant change"],
                                          "description": "improved/regressed given the direction "
                                          "(significant, or without an interval), changed (no "
                                          "direction), unchanged, n/a (a value is null), or no "
                                          "significant change: the 95% interval includes 0."},
                               "point_status": {"enum": ["improved", "regressed", "changed"],
                                                "description": "With 'no significant change': "
                                                "which way the point estimate moved."},
                               "significant": {"type": ["boolean", "null"], "description":
                                               "The change's paired-bootstrap 95% interval "
                                               "excludes 0 (null: no interval)."},
                               "bootstrap": {"type": "object", "description": "Paired bootstrap "
                                             "over the shared stems: the mean delta's 95% "
                                             "interval (ci95) and each model's mean over the "
                                             "shared stems with its own (base_ci95, new_ci95), "
                                             "from the same resamples. A pooled figure's "
                                             "(pooled: true) is the figure recomputed on each "
                                             "resample of stems (mean_delta, base_mean, "
                                             "new_mean: on the shared stems themselves).",
                                             "properties": {
                                                 **{key: _PAIR for key in
                                                    ("ci95", "base_ci95", "new_ci95")},
                                                 "pooled": {"type": "boolean", "description":
                                                            "A pooled figure's interval."},
                                                 "defined_resamples": {
                                                     "type": "integer", "minimum": 0,
                                                     "description": "The resamples in which "
                                                     "the figure is defined on both sides "
                                                     "(when not all are)."}}}}}},
            "gates": GATES, "run_provenance": PROVENANCE_REF,
        },
        "additionalProperties": False,
    })


def manifest() -> dict[str, Any]:
    square = {"type": "array", "minItems": 4, "maxItems": 4,
              "items": {"type": "array", "minItems": 4, "maxItems": 4, "items": {"type": "number"}}}
    return {
        "$schema": DRAFT, "$id": "urn:rpx:schema:manifest:v1",
        "title": "rpx per-stem metadata manifest (v1)",
        "type": "object",
        "required": ["samples"],
        "properties": {
            "schema_version": {"const": 1},
            "samples": {"type": "array", "items": {
                "type": "object",
                "anyOf": [{"required": ["stem"]}, {"required": ["id"]}],
                "properties": {
                    "stem": {"type": "string"}, "id": {"type": "string"},
                    "scene": {"type": "string"},
                    "phase": {"oneOf": [{"enum": ["clutter", "interaction", "clean"]},
                                        {"enum": [0, 1, 2]}]},
                    "difficulty": {"enum": ["easy", "medium", "hard"]},
                    "sequence": {"type": "string"}, "frame": {"type": "integer"},
                    "pose": {"oneOf": [{"type": "string"}, square]},
                    "intrinsics": {"type": "array", "minItems": 4, "maxItems": 4,
                                   "items": {"type": "number"}},
                }}},
        },
    }
