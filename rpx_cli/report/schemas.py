"""JSON Schemas of the report kinds, and validation against them.

Schemas are generated from the task registry (:mod:`rpx_cli.report.schema_catalogue`), so a
registered plugin task's reports validate too; the built-in tasks' schemas are also
committed in ``schemas/`` and shipped in the wheel as ``rpx_cli/schemas/``. jsonschema is
imported only when a report is validated.
"""

from __future__ import annotations

import json
from typing import Any

from rpx_cli.errors import InputError
from rpx_cli.report import schema_catalogue
from rpx_cli.tasks.registry import TASKS, load_builtin_tasks

WORKFLOW_SCHEMAS = {"rpx.stability": "stability", "rpx.readiness": "readiness",
                    "rpx.compare": "compare", "rpx-run-provenance-v1": "provenance"}


def _tasks() -> dict[str, Any]:
    load_builtin_tasks()
    return dict(TASKS)


def schema_kinds() -> list[str]:
    """Every kind ``rpx schema`` accepts."""
    return schema_catalogue.kinds(_tasks())


def load_schema(kind: str) -> dict[str, Any]:
    try:
        return schema_catalogue.build(kind, _tasks())
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from None


def schema_text(kind: str) -> bytes:
    return (json.dumps(load_schema(kind), indent=2) + "\n").encode()


def detect_kind(document: Any) -> str:
    """The report kind named by the document's ``schema`` field."""
    if isinstance(document, dict):
        name = document.get("schema")
        if name in WORKFLOW_SCHEMAS:
            return WORKFLOW_SCHEMAS[name]
        if isinstance(name, str) and name.startswith("rpx.") and name[4:] in schema_kinds():
            return name[4:]
        if "samples" in document and "schema" not in document:
            return "manifest"
        if name is None:
            raise InputError("has no 'schema' field naming its kind (pass --kind)")
        raise InputError(f"unknown schema {name!r} (pass --kind)")
    raise InputError("is not a JSON object")


_VALIDATORS: dict[tuple[str, tuple[str, ...]], Any] = {}


def _validator(kind: str):
    key = (kind, tuple(sorted(TASKS)))  # a task registered later changes the eval schema
    if key not in _VALIDATORS:
        from jsonschema import Draft202012Validator

        schema = load_schema(kind)
        Draft202012Validator.check_schema(schema)
        _VALIDATORS[key] = Draft202012Validator(schema)
    return _VALIDATORS[key]


def validation_errors(document: Any, kind: str) -> list[str]:
    """Every schema violation as ``<JSON path>: <message>``, shallowest first."""
    errors = sorted(_validator(kind).iter_errors(document),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    return [f"{error.json_path}: {error.message}" for error in errors]


# rows validated against the schema when a report is read (beyond them: objects of scalars
# named by a string stem, checked in one pass): jsonschema takes ~30 us a row
VALIDATED_ROWS = 1000


def report_problems(document: Any) -> tuple[str, list[str]]:
    """``(kind, problems)`` of a document read as a report (``rpx report``, ``show``,
    ``compare``): its kind from ``schema`` (an :class:`InputError` when it names none) and
    every schema violation, shallowest first — the first :data:`VALIDATED_ROWS` rows
    against the schema, the others as objects of scalars with a string ``stem``."""
    kind, tasks = _kind_and_tasks(document)
    validator = _validator_of(kind, tasks)

    def errors(value: Any) -> list[str]:
        found = sorted(validator.iter_errors(value),
                       key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
        return [f"{error.json_path}: {error.message}" for error in found]

    rows = document.get("rows")
    if isinstance(rows, list) and len(rows) > VALIDATED_ROWS:
        problems = errors({**document, "rows": rows[:VALIDATED_ROWS]})
        for index in range(VALIDATED_ROWS, len(rows)):
            row = rows[index]
            if not isinstance(row, dict) or not isinstance(row.get("stem"), str) or any(
                    isinstance(value, (dict, list)) for value in row.values()):
                problems.append(f"$.rows[{index}]: not an object of numbers and strings with "
                                "a string 'stem'")
                break
        return kind, problems
    return kind, errors(document)


def _kind_and_tasks(document: Any) -> tuple[str, dict[str, Any]]:
    """A report's kind, and the task its schema needs (only that task's module is
    imported, as `rpx report` does: ``registry.find_task``)."""
    from rpx_cli.tasks.registry import find_task

    if not isinstance(document, dict):
        raise InputError("is not a JSON object")
    name = document.get("schema")
    if name in WORKFLOW_SCHEMAS:
        return WORKFLOW_SCHEMAS[name], {}
    if name == "rpx.eval":
        task = find_task(document["task"]) if isinstance(document.get("task"), str) else None
        return "eval", {} if task is None else {task.name: task}
    if isinstance(name, str) and name.startswith("rpx."):
        task = find_task(name[4:])
        if task is not None and task.kind == name[4:]:
            return task.kind, {task.name: task}
    if name is None:
        raise InputError("has no 'schema' field naming its kind")
    raise InputError(f"unknown schema {name!r}")


def _validator_of(kind: str, tasks: dict[str, Any]):
    key = (kind, tuple(sorted(tasks)), "one")
    if key not in _VALIDATORS:
        from jsonschema import Draft202012Validator

        _VALIDATORS[key] = Draft202012Validator(schema_catalogue.build(kind, tasks))
    return _VALIDATORS[key]


def check_report(document: Any, path: str) -> str:
    """The kind of a report read from ``path``, or an :class:`InputError` naming the file
    and its first wrong key when it is not a valid rpx report (valid JSON of another
    shape is refused here, before any view of it is built)."""
    try:
        kind, problems = report_problems(document)
    except InputError as exc:
        raise InputError(f"is not an rpx report: {exc}", path=path) from None
    # a report stripped of its provenance (golden files, a report trimmed to share) is
    # still one to look at; `rpx validate` holds it to the whole schema
    problems = [p for p in problems if p != "$: 'run_provenance' is a required property"]
    if problems:
        more = f" (and {len(problems) - 1} more: rpx validate lists them)" if len(problems) > 1 else ""
        raise InputError(f"is not a valid rpx {kind} report: {problems[0]}{more}", path=path)
    return kind
