"""The ``params`` block of a task's report schema, generated from its option declarations
(:class:`~rpx_cli.params.Option`): each option's recorded value typed by its kind — a
boolean, an integer or a number within the declared bounds, an enum of the choices, a
path — an array for a repeatable option, ``null`` allowed where the option's default is
None, and for a ``parsed`` option the schema its parser declares
(:func:`rpx_cli.params.parsers.recorded`) or the option's own ``recorded`` schema (a value
the task's normalisation records in another form: a names file as its names). ``missing``
and ``on_error`` (the run options ``params`` records) and ``--metrics``' families are typed
the same way. Keys a task's normalisation adds (a protocol's conventions) are not
declared options and stay open."""

from __future__ import annotations

import copy
from typing import Any

from rpx_cli.params.option import Option
from rpx_cli.params.workflows import MISSING, MISSING_POLICIES, ON_ERROR
from rpx_cli.tasks.base import Task

_TYPES = {"flag": "boolean", "int": "integer", "float": "number", "str": "string",
          "file": "string", "dir": "string"}


def option_schema(option: Option) -> dict[str, Any]:
    """The JSON Schema of ``option``'s value as ``params`` records it."""
    if option.recorded is not None:
        schema = copy.deepcopy(dict(option.recorded))
    else:
        schema = _one(option)
        if option.multiple:
            schema = {"type": "array", "items": schema}
    if option.default is None:
        schema = nullable(schema)
    if option.help and "description" not in schema:
        schema["description"] = f"{option.flag}: {option.help}"
    return schema


def _one(option: Option) -> dict[str, Any]:
    if option.kind == "choice":
        return {"enum": list(option.choices)}
    if option.kind == "parsed":
        return copy.deepcopy(dict(getattr(option.parse, "schema", {})))
    schema: dict[str, Any] = {"type": _TYPES[option.kind]}
    for bound, given, strict in (("minimum", option.minimum, option.open_min),
                                 ("maximum", option.maximum, option.open_max)):
        if given is not None:
            schema[f"exclusive{bound.capitalize()}" if strict else bound] = given
    return schema


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null."""
    if not schema:
        return schema
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], *([] if None in schema["enum"] else [None])]}
    kind = schema.get("type")
    if isinstance(kind, str) and set(schema) <= {"type", "minimum", "maximum", "exclusiveMinimum",
                                                  "exclusiveMaximum", "description"}:
        return {**schema, "type": [kind, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


RECORDED_RUN_OPTIONS = (MISSING, ON_ERROR)


def params_schema(task: Task) -> dict[str, Any]:
    """``params`` of ``task``'s reports: every declared option typed (:func:`option_schema`),
    the run options it records, and the ``--metrics`` families run and skipped."""
    properties = {option.param: option_schema(option)
                  for option in (*RECORDED_RUN_OPTIONS, *task.options, *task.aux_inputs)}
    properties["missing"] = {"enum": list(MISSING_POLICIES), "description": MISSING.help}
    if task.families:
        names = {"type": "array", "items": {"enum": list(task.families)}, "uniqueItems": True}
        properties["metrics"] = {**names, "description": "--metrics: the families run."}
        properties["skipped_metrics"] = {**names, "description": "The families not run."}
    return {"type": "object", "description": "Every option that can change a number, "
            "normalised (typed from the options' declarations).", "properties": properties}
