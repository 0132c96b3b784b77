"""The JSON Schemas (Draft 2020-12) of every report kind, generated from the task registry.

The envelope every pair-reading report shares is written once here; the ``rpx.eval`` kind
accepts every registered task whose report kind is ``rpx.eval`` (its ``task`` enum comes
from the registry) and adds each task's declared properties (``report_properties``,
``row_properties`` on :class:`~rpx_cli.tasks.base.Task`) when ``task`` names it; a task with
a kind of its own (``saliency-mb``, ``coherence``) gets the envelope plus its properties.
Registering a task is therefore all it takes for its reports to have a schema.

Every schema is self-contained: the provenance schema it refers to is embedded under
``$defs``, so ``check-jsonschema --schemafile``, ajv and editors need nothing else.
``tools/make_schemas.py`` writes the built-in tasks' schemas to ``schemas/`` (committed and
shipped in the wheel); a test checks the committed files equal this module's output.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
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
ISO_TIME = "^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z$"

# the kinds that are not a task's report, and the file each kind is written to
WORKFLOW_KINDS = ("stability", "readiness", "compare", "manifest", "provenance")
FILE_NAMES = {"provenance": "rpx-run-provenance.v1.schema.json"}


def file_name(kind: str, tasks: Mapping[str, Task] | None = None) -> str:
    """The committed file of ``kind`` (an eval task's own schema: ``rpx-eval-<task>``)."""
    task = (tasks or {}).get(kind)
    if task is not None and task.report_schema == "rpx.eval":
        return f"rpx-eval-{kind}.v1.schema.json"
    return FILE_NAMES.get(kind, f"rpx-{kind}.v1.schema.json")


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
                                           "numpy": {"type": ["string", "null"]}}},
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


def _self_contained(schema: dict[str, Any]) -> dict[str, Any]:
    """Embed the provenance schema under ``$defs`` (every kind refers to it)."""
    embedded = provenance()
    del embedded["$schema"]
    schema["$defs"] = {"provenance": embedded}
    return schema


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
    "crowd": {"type": "array", "items": {"type": "boolean"}}}}
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
        "worst_frames": WORST_FRAMES,
        "run_provenance": PROVENANCE_REF,
    }


ENVELOPE_REQUIRED = ["schema", "schema_version", "task", "params", "n_pairs", "unpaired",
                     "errors", "metric_info", "run_provenance"]
ROW = {"type": "object", "required": ["stem", "pred_path", "gt_path"],
       "properties": {"stem": {"type": "string"}, "pred_path": {"type": ["string", "null"]},
                      "gt_path": {"type": ["string", "null"]}}}


def _rows(task: Task | None) -> dict[str, Any]:
    row = copy.deepcopy(ROW)
    if task is not None:
        row["required"] += [key for key in task.row_required if key not in row["required"]]
        row["properties"].update(copy.deepcopy(dict(task.row_properties)))
    return {"type": "array", "items": row}


def _full_report(required: list[str]) -> dict[str, Any]:
    """``required`` holds in a full report; a ``--shard`` part (with ``state``) may lack it."""
    return {"if": {"not": {"required": ["state"]}}, "then": {"required": required}}


def _nested(path: list[str], leaf: dict[str, Any], *, required: bool) -> dict[str, Any]:
    """A schema for the dotted ``path`` (``["dataset", "coco", "AP"]``): its last key
    validated by ``leaf``, every key on the way required when ``required``."""
    node: dict[str, Any] = leaf
    for key in reversed(path):
        node = {"properties": {key: node}, **({"required": [key]} if required else {})}
    return node


def _covering_families(task: Task, path: str) -> list[str] | None:
    """The ``--metrics`` families whose skipping removes ``path`` (a family's sections hold
    it, or its keys name it directly under ``aggregate``/``dataset``); None when the path
    is in no family although the task has some (it depends on the data, e.g. classification's
    ``mAP`` needs scores), ``[]`` for a task without families (always there)."""
    if not task.families:
        return []
    parts = path.split(".")
    found = []
    for name, (keys, sections) in task.families.items():
        held = any(path == section or path.startswith(section + ".") for section in sections)
        if held or (len(parts) == 2 and parts[0] in ("aggregate", "dataset") and parts[1] in keys):
            found.append(name)
    return found or None


def task_block(task: Task) -> dict[str, Any]:
    """What a report of ``task`` must hold beyond the envelope, generated from the task's
    declarations: every declared metric, where it is a figure (``aggregate``, ``dataset``,
    rows, ``dataset.per_class.<name>``) typed number or null; every ``headline`` path typed
    number or null, and required in a full report unless a ``--metrics`` family that holds it
    was skipped (``params.skipped_metrics``); the task's own ``report_properties`` and rows."""
    figures = {name: NUM_OR_NULL for name in task.metrics}
    per_class = {"type": "object", "description": "One entry per class: its figures.",
                 "additionalProperties": {"type": "object", "properties": dict(figures)}}
    typed: dict[str, Any] = {"properties": {
        "aggregate": {"properties": dict(figures)},
        "dataset": {"type": "object", "properties": {**figures, "per_class": per_class}},
    }}
    checks: list[dict[str, Any]] = [typed]
    for path in task.headline:
        parts = path.split(".")
        checks.append(_nested(parts, NUM_OR_NULL, required=False))
        families = _covering_families(task, path)
        if families is None:
            continue
        kept = {"properties": {"params": {"properties": {"skipped_metrics": {
            "not": {"anyOf": [{"contains": {"const": name}} for name in families]}}}}}} \
            if families else {}
        checks.append({"if": {"allOf": [{"not": {"required": ["state"]}}, kept]},
                       "then": _nested(parts, NUM_OR_NULL, required=True)})
    rows = _rows(task)
    rows["items"]["properties"] = {**figures, **rows["items"]["properties"]}
    then: dict[str, Any] = {"properties": {**copy.deepcopy(dict(task.report_properties)),
                                           "rows": rows},
                            "allOf": checks}
    if task.report_required:
        then["allOf"].append(_full_report(list(task.report_required)))
    return then


def eval_schema(tasks: Mapping[str, Task], *, only: str | None = None) -> dict[str, Any]:
    """``rpx.eval``: the envelope, ``aggregate``/``dataset``/``strata``/``rows``, and each
    registered eval task's block (:func:`task_block`) when ``task`` names it. ``only``: the
    schema of that task's reports alone (``rpx schema depth``)."""
    names = sorted(name for name, task in tasks.items() if task.report_schema == "rpx.eval")
    if only is not None:
        names = [only]
    by_task = [{"if": {"required": ["task"], "properties": {"task": {"const": name}}},
                "then": task_block(tasks[name])} for name in names]
    schema = {
        "$schema": DRAFT,
        "$id": "urn:rpx:schema:eval:v1" if only is None else f"urn:rpx:schema:eval:{only}:v1",
        "title": "rpx evaluation report (rpx.eval v1)" if only is None else
                 f"rpx eval {only} report (rpx.eval v1, task {only})",
        **({"description": tasks[only].help} if only is not None else {}),
        "type": "object",
        "required": list(ENVELOPE_REQUIRED),
        "properties": {
            "schema": {"const": "rpx.eval"},
            **envelope_properties(),
            "task": {"enum": names},
            "aggregate": {"type": "object",
                          "description": "Mean over rows where the metric is not null, plus counts.",
                          "additionalProperties": {"type": ["number", "null", "object"]}},
            "dataset": {"type": "object", "description": "Pooled figures (task-specific)."},
            "strata": {"type": "object"},
            "rows": _rows(None),
        },
        **_full_report(["aggregate"]),
    }
    if by_task:
        schema["allOf"] = by_task
    return _self_contained(schema)


def task_kind_schema(task: Task) -> dict[str, Any]:
    """A task with a report kind of its own: the envelope plus its declared keys."""
    schema = {
        "$schema": DRAFT, "$id": f"urn:rpx:schema:{task.kind}:v1",
        "title": f"rpx {task.name} report ({task.report_schema} v1)",
        "description": task.help,
        "type": "object",
        "required": list(ENVELOPE_REQUIRED),
        "properties": {
            "schema": {"const": task.report_schema},
            **envelope_properties(),
            "task": {"const": task.name},
            **copy.deepcopy(dict(task.report_properties)),
            "rows": _rows(task),
        },
    }
    if task.report_required:
        schema.update(_full_report(list(task.report_required)))
    return _self_contained(schema)


def stability() -> dict[str, Any]:
    return _self_contained({
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
    return _self_contained({
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
                key: NUM_OR_NULL for key in ("params_m", "flops_g", "latency_ms", "actmem_gb")}},
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
    return _self_contained({
        "$schema": DRAFT, "$id": "urn:rpx:schema:compare:v1",
        "title": "rpx comparison of two reports (rpx.compare v1)",
        "type": "object",
        "required": ["schema", "schema_version", "base", "new", "params_differ", "summary",
                     "metrics", "run_provenance"],
        "properties": {
            "schema": {"const": "rpx.compare"}, "schema_version": {"const": 1},
            "base": {"type": "object"}, "new": {"type": "object"},
            "params_differ": {"type": "array", "items": {"type": "string"},
                              "description": "Parameters that change the numbers and differ "
                                             "(compared anyway with --force)."},
            "summary": {"type": "object", "required": ["improved", "regressed", "unchanged"],
                        "additionalProperties": {"type": "integer", "minimum": 0}},
            "metrics": {"type": "array", "items": {
                "type": "object", "required": ["metric", "base", "new", "delta"],
                "properties": {"metric": {"type": "string"}, "base": NUM_OR_NULL,
                               "new": NUM_OR_NULL, "delta": NUM_OR_NULL,
                               "direction": {"enum": ["higher", "lower", "none"]},
                               "status": {"enum": ["improved", "regressed", "unchanged", "changed",
                                                   "n/a"]},
                               "significant": {"type": ["boolean", "null"], "description":
                                               "The change's paired-bootstrap 95% interval "
                                               "excludes 0 (null: no interval)."},
                               "bootstrap": {"type": "object", "description": "Paired bootstrap "
                                             "over the shared stems (per-row metrics): the mean "
                                             "delta's 95% interval (ci95) and each model's mean "
                                             "over the shared stems with its own (base_ci95, "
                                             "new_ci95), from the same resamples.",
                                             "properties": {key: _PAIR for key in
                                                            ("ci95", "base_ci95", "new_ci95")}}}}},
            "gates": GATES, "run_provenance": PROVENANCE_REF,
        },
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


def kinds(tasks: Mapping[str, Task]) -> list[str]:
    """Every report kind ``rpx schema`` knows: ``eval``, each eval task's own schema (its
    name: ``rpx schema depth``), the tasks' own kinds, workflows."""
    own = sorted({task.kind for task in tasks.values() if task.report_schema != "rpx.eval"})
    evals = sorted(name for name, task in tasks.items() if task.report_schema == "rpx.eval")
    return ["eval", *[name for name in evals if name not in own], *own, *WORKFLOW_KINDS]


def build(kind: str, tasks: Mapping[str, Task]) -> dict[str, Any]:
    """The schema of ``kind`` for the tasks ``tasks``."""
    if kind == "eval":
        return eval_schema(tasks)
    workflows = {"stability": stability, "readiness": readiness, "compare": compare,
                 "manifest": manifest, "provenance": provenance}
    if kind in workflows:
        return workflows[kind]()
    for task in tasks.values():
        if task.report_schema != "rpx.eval" and task.kind == kind:
            return task_kind_schema(task)
    task = tasks.get(kind)
    if task is not None and task.report_schema == "rpx.eval":
        return eval_schema(tasks, only=kind)
    raise KeyError(f"unknown report kind {kind!r} (known: {', '.join(kinds(tasks))})")
