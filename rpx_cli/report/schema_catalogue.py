"""The report kinds ``rpx schema`` knows, the file each kind's schema is committed as, and
each kind's schema (Draft 2020-12), generated from the task registry: ``eval`` and every
task's own schema (:mod:`rpx_cli.report.schema_tasks`), the workflows' kinds
(:mod:`rpx_cli.report.schema_workflows`) and ``provenance``
(:mod:`rpx_cli.report.schema_provenance`).

``tools/make_schemas.py`` writes the built-in tasks' schemas to ``schemas/`` (committed and
shipped in the wheel); a test checks the committed files equal this module's output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.report.schema_provenance import provenance
from rpx_cli.report.schema_tasks import eval_schema, task_kind_schema
from rpx_cli.report.schema_workflows import compare, manifest, readiness, stability
from rpx_cli.tasks.base import Task

# the kinds that are not a task's report, and the file each kind is written to
WORKFLOW_KINDS = ("stability", "readiness", "compare", "manifest", "provenance")
FILE_NAMES = {"provenance": "rpx-run-provenance.v1.schema.json"}


def file_name(kind: str, tasks: Mapping[str, Task] | None = None) -> str:
    """The committed file of ``kind`` (an eval task's own schema: ``rpx-eval-<task>``)."""
    task = (tasks or {}).get(kind)
    if task is not None and task.report_schema == "rpx.eval":
        return f"rpx-eval-{kind}.v1.schema.json"
    return FILE_NAMES.get(kind, f"rpx-{kind}.v1.schema.json")


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
