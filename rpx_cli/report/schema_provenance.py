"""The JSON Schema of ``run_provenance`` (``rpx-run-provenance-v1``), which every report
kind embeds under ``$defs`` so that each schema is self-contained:
``check-jsonschema --schemafile``, ajv and editors need nothing else."""

from __future__ import annotations

from typing import Any

from rpx_cli.report.schema_envelope import DRAFT

ISO_TIME = "^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z$"


def provenance() -> dict[str, Any]:
    """``run_provenance`` (schema ``rpx-run-provenance-v1``)."""
    return {
        "$schema": DRAFT, "$id": "urn:rpx:schema:provenance:v1",
        "title": "rpx run provenance (rpx-run-provenance-v1)",
        "type": "object",
        "required": ["schema", "tool", "command", "argv", "args", "inputs", "outputs",
                     "started_at", "finished_at", "duration_s", "environment", "git"],
        "properties": {
            "schema": {"const": "rpx-run-provenance-v1"},
            "tool": {"type": "object", "required": ["name", "version"],
                     "properties": {"name": {"const": "rpx"}, "version": {"type": "string"}}},
            "command": {"type": "string"},
            "argv": {"type": "array", "items": {"type": "string"}},
            "args": {"type": "object"},
            "inputs": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["path", "kind", "exists", "n_files", "sha256"],
                "properties": {"path": {"type": "string"},
                               "kind": {"enum": ["directory", "file", "in-memory"]},
                               "n_samples": {"type": "integer", "minimum": 0, "description":
                                             "in-memory: the samples given (rpx_cli.Evaluator)"},
                               "exists": {"type": "boolean"},
                               "n_files": {"type": "integer", "minimum": 0},
                               "sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"},
                               "etag": {"type": ["string", "null"], "description": "An object "
                                        "given by URL: its ETag as the store reported it."},
                               "etags": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$",
                                         "description": "A prefix given by URL: sha256 of the "
                                         "'<etag>  <relative path>' lines of the objects "
                                         "evaluated (null: the store gives no ETags)."},
                               "skipped": {"type": "object", "description": "Objects the input "
                                           "held that the run cannot express (a LabelMe circle, "
                                           "an Open Images group-of box under a protocol "
                                           "without group-of), left out: how many of each "
                                           "kind, among the pairs evaluated (present only "
                                           "when something was skipped).",
                                           "additionalProperties": {"type": "integer",
                                                                    "minimum": 1}}}}},
            "outputs": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}},
            "started_at": {"type": "string", "pattern": ISO_TIME},
            "finished_at": {"type": "string", "pattern": ISO_TIME},
            "duration_s": {"type": "number", "minimum": 0},
            "environment": {"type": "object", "required": ["python", "platform"],
                            "properties": {"python": {"type": "string"},
                                           "platform": {"type": "string"},
                                           "numpy": {"type": ["string", "null"]},
                                           "pycocotools": {"type": "string", "description":
                                                           "on the numpy path only, where it "
                                                           "computes masks"},
                                           "kernels": {"type": "string", "description":
                                                       "which path ran the kernels: native "
                                                       "(rpx_cli._native) or numpy (why)"}}},
            "digests": {"type": "object", "description": "Input digests computed, and reused "
                        "from the digest cache (the only field the cache changes).",
                        "required": ["computed", "reused"],
                        "properties": {"computed": {"type": "integer", "minimum": 0},
                                       "reused": {"type": "integer", "minimum": 0}}},
            "executor": {"type": "object", "description": "Where the pairs were evaluated: "
                         "local worker processes, or a Dask cluster (--executor dask).",
                         "required": ["name"],
                         "properties": {"name": {"enum": ["local", "dask"]},
                                        "jobs": {"type": "integer", "minimum": 1},
                                        "chosen_by": {"const": "auto", "description":
                                                      "no --jobs: the processes were chosen "
                                                      "from the work (docs/usage.md); under "
                                                      "SOURCE_DATE_EPOCH the choice is not "
                                                      "recorded (it depends on the machine's "
                                                      "load)"},
                                        "probed": {"type": "integer", "minimum": 0},
                                        "unit_ms": {"type": "number", "minimum": 0},
                                        "consumer_ms": {"type": "number", "minimum": 0},
                                        "transfer_ms": {"type": "number", "minimum": 0},
                                        "load_average": {"type": "number", "minimum": 0},
                                        "free_cpus": {"type": "number", "minimum": 0},
                                        "heavy_pairs": {"type": "boolean"},
                                        "scheduler": {"type": "string"},
                                        "workers": {"type": "integer", "minimum": 0},
                                        "batches": {"type": "integer", "minimum": 0}}},
            "git": {"oneOf": [{"type": "null"}, {
                "type": "object", "required": ["commit", "dirty"],
                "properties": {"commit": {"type": "string", "pattern": "^[0-9a-f]{40,64}$"},
                               "dirty": {"type": ["boolean", "null"]}}}]},
        },
    }


def self_contained(schema: dict[str, Any]) -> dict[str, Any]:
    """Embed the provenance schema under ``$defs`` (every kind refers to it)."""
    embedded = provenance()
    del embedded["$schema"]
    schema["$defs"] = {"provenance": embedded}
    return schema
