"""The JSON Schemas of the reports of registered tasks, generated from their declarations.

The ``rpx.eval`` kind accepts every registered task whose report kind is ``rpx.eval`` (its
``task`` enum comes from the registry) and adds each task's block (:func:`task_block`:
its declared metrics typed, its headline required, its ``report_properties`` and
``row_properties``) when ``task`` names it; a task with a kind of its own (``saliency-mb``,
``coherence``) gets the envelope plus its properties. Registering a task is therefore all it
takes for its reports to have a schema.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from rpx_cli.report.schema_envelope import (
    DRAFT,
    ENVELOPE_REQUIRED,
    NUM_OR_NULL,
    envelope_properties,
    full_report,
    rows_schema,
)
from rpx_cli.report.schema_params import params_schema
from rpx_cli.report.schema_provenance import self_contained
from rpx_cli.tasks.base import Task


def nested(path: list[str], leaf: dict[str, Any], *, required: bool) -> dict[str, Any]:
    """A schema for the dotted ``path`` (``["dataset", "coco", "AP"]``): its last key
    validated by ``leaf``, every key on the way required when ``required``."""
    node: dict[str, Any] = leaf
    for key in reversed(path):
        node = {"properties": {key: node}, **({"required": [key]} if required else {})}
    return node


def covering_families(task: Task, path: str) -> list[str] | None:
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


def holding_families(task: Task, path: str) -> tuple[str, ...]:
    """The ``--metrics`` families whose skipping removes ``path``, a key the task always
    writes (``rows.absrel`` for a key of every row; :func:`covering_families`); none for a
    key every run writes."""
    parts = path.split(".")
    if parts[0] == "rows":
        return tuple(name for name, (keys, _) in task.families.items() if parts[1] in keys)
    return tuple(covering_families(task, path) or ())


def when_run(families: tuple[str, ...]) -> dict[str, Any]:
    """A full report (not a ``--shard`` part) in which none of ``families`` was skipped."""
    kept = {"properties": {"params": {"properties": {"skipped_metrics": {
        "not": {"anyOf": [{"contains": {"const": name}} for name in families]}}}}}} \
        if families else {}
    return {"allOf": [{"not": {"required": ["state"]}}, kept]}


def always_written(task: Task) -> list[dict[str, Any]]:
    """``task.always``: every key a full report writes, required (``dataset`` itself too)
    — a key a ``--metrics`` family holds only when that family ran (:func:`when_run`); keys
    under one condition share one check."""
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for section, keys in task.always.items():
        for key in keys:
            path = f"{section}.{key}" if key else section
            where = section if key else ""
            groups.setdefault((where, holding_families(task, path)), []).append(key or section)
    checks = []
    for (where, families), keys in groups.items():
        if where == "rows":
            need = {"properties": {"rows": {"items": {"required": keys}}}}
        elif where:
            need = {"properties": {where: {"required": keys}}, "required": [where]}
        else:
            need = {"required": keys}
        checks.append({"if": when_run(families), "then": need})
    return checks


def task_block(task: Task) -> dict[str, Any]:
    """What a report of ``task`` must hold beyond the envelope, generated from the task's
    declarations: ``params`` typed from its options (:func:`params_schema`); every declared
    metric, where it is a figure (``aggregate``, ``dataset``, rows,
    ``dataset.per_class.<name>``) typed number or null; every ``headline`` path typed number
    or null, and required in a full report unless a ``--metrics`` family that holds it was
    skipped (``params.skipped_metrics``); the keys it always writes (:attr:`Task.always`,
    :func:`always_written`); the task's own ``report_properties`` and rows."""
    figures = {name: NUM_OR_NULL for name in task.metrics}
    per_class = {"type": "object", "description": "One entry per class: its figures.",
                 "additionalProperties": {"type": "object", "properties": dict(figures)}}
    typed: dict[str, Any] = {"properties": {
        "aggregate": {"properties": dict(figures)},
        "dataset": {"type": "object", "properties": {**figures, "per_class": per_class}},
    }}
    checks: list[dict[str, Any]] = [typed]
    typed_paths: set[str] = set()
    for chosen_by, headline in task.headline_variants():
        when = [{"properties": {"params": {"required": list(chosen_by), "properties": {
            name: {"const": value} for name, value in chosen_by.items()}}}}] if chosen_by else []
        for path in headline:
            parts = path.split(".")
            if path not in typed_paths:
                typed_paths.add(path)
                checks.append(nested(parts, NUM_OR_NULL, required=False))
            families = covering_families(task, path)
            if families is None:
                continue
            kept = {"properties": {"params": {"properties": {"skipped_metrics": {
                "not": {"anyOf": [{"contains": {"const": name}} for name in families]}}}}}} \
                if families else {}
            checks.append({"if": {"allOf": [{"not": {"required": ["state"]}}, kept, *when]},
                           "then": nested(parts, NUM_OR_NULL, required=True)})
    checks += always_written(task)
    rows = rows_schema(task)
    rows["items"]["properties"] = {**figures, **rows["items"]["properties"]}
    then: dict[str, Any] = {"properties": {**copy.deepcopy(dict(task.report_properties)),
                                           "params": params_schema(task), "rows": rows},
                            "allOf": checks}
    if task.report_required:
        then["allOf"].append(full_report(list(task.report_required)))
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
            "rows": rows_schema(None),
            **{key: {} for task in tasks.values() if task.report_schema == "rpx.eval"
               for key in task.report_properties if key not in ("dataset",)},
        },
        "additionalProperties": False,
        **full_report(["aggregate"]),
    }
    if by_task:
        schema["allOf"] = by_task
    return self_contained(schema)


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
            "params": params_schema(task),
            "rows": rows_schema(task),
        },
        "additionalProperties": False,
    }
    if task.report_required:
        schema.update(full_report(list(task.report_required)))
    checks = always_written(task)
    if checks:
        schema["allOf"] = checks
    return self_contained(schema)
