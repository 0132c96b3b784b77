"""JSON Schemas of the report kinds, and validation against them.

The schemas live in the top-level ``schemas/`` folder of a checkout and inside the wheel
as ``rpx_cli/schemas/``. jsonschema is imported only when a report is validated.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from rpx_cli.errors import InputError

SCHEMA_FILES = {
    "eval": "rpx-eval.v1.schema.json",
    "saliency-mb": "rpx-saliency-mb.v1.schema.json",
    "stability": "rpx-stability.v1.schema.json",
    "coherence": "rpx-coherence.v1.schema.json",
    "readiness": "rpx-readiness.v1.schema.json",
    "compare": "rpx-compare.v1.schema.json",
    "manifest": "rpx-manifest.v1.schema.json",
    "provenance": "rpx-run-provenance.v1.schema.json",
}
KIND_BY_SCHEMA = {
    "rpx.eval": "eval",
    "rpx.saliency-mb": "saliency-mb",
    "rpx.stability": "stability",
    "rpx.coherence": "coherence",
    "rpx.readiness": "readiness",
    "rpx.compare": "compare",
    "rpx-run-provenance-v1": "provenance",
}


def schema_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    packaged = here / "schemas"
    return packaged if packaged.is_dir() else here.parent / "schemas"


def schema_text(kind: str) -> bytes:
    return (schema_dir() / SCHEMA_FILES[kind]).read_bytes()


@cache
def load_schema(kind: str) -> dict[str, Any]:
    import json

    return json.loads(schema_text(kind))


def detect_kind(document: Any) -> str:
    """The report kind named by the document's ``schema`` field."""
    if isinstance(document, dict):
        name = document.get("schema")
        if name in KIND_BY_SCHEMA:
            return KIND_BY_SCHEMA[name]
        if "samples" in document and "schema" not in document:
            return "manifest"
        if name is None:
            raise InputError("has no 'schema' field naming its kind (pass --kind)")
        raise InputError(f"unknown schema {name!r} (pass --kind)")
    raise InputError("is not a JSON object")


@cache
def _validator(kind: str):
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resources = []
    for name in SCHEMA_FILES:
        schema = load_schema(name)
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry = Registry().with_resources(resources)
    schema = load_schema(kind)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=registry)


def validation_errors(document: Any, kind: str) -> list[str]:
    """Every schema violation as ``<JSON path>: <message>``, shallowest first."""
    errors = sorted(_validator(kind).iter_errors(document),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    return [f"{error.json_path}: {error.message}" for error in errors]
