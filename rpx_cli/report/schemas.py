"""JSON Schemas of the report kinds, and validation against them.

Schemas are generated from the task registry (:mod:`rpx_cli.report.schema_defs`), so a
registered plugin task's reports validate too; the built-in tasks' schemas are also
committed in ``schemas/`` and shipped in the wheel as ``rpx_cli/schemas/``. jsonschema is
imported only when a report is validated.
"""

from __future__ import annotations

import json
from typing import Any

from rpx_cli.errors import InputError
from rpx_cli.report import schema_defs
from rpx_cli.tasks.registry import TASKS, load_builtin_tasks

WORKFLOW_SCHEMAS = {"rpx.stability": "stability", "rpx.readiness": "readiness",
                    "rpx.compare": "compare", "rpx-run-provenance-v1": "provenance"}


def _tasks() -> dict[str, Any]:
    load_builtin_tasks()
    return dict(TASKS)


def schema_kinds() -> list[str]:
    """Every kind ``rpx schema`` accepts."""
    return schema_defs.kinds(_tasks())


def load_schema(kind: str) -> dict[str, Any]:
    try:
        return schema_defs.build(kind, _tasks())
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
