"""Label maps of point-cloud labels: a JSON object ``{"raw label": class label}``
(SemanticKITTI's ``learning_map``), read and checked (``rpx eval segmentation3d
--label-map``)."""

from __future__ import annotations

from typing import Any

from rpx_cli.errors import InputError


def load_label_map(path: str) -> dict[str, int]:
    """A JSON object ``{"raw label": class label}`` (SemanticKITTI's ``learning_map``)."""
    from rpx_cli.io.json import strict_json
    from rpx_cli.io.regular import read_bytes

    # a regular file only (a FIFO never blocks the run), parsed strictly (a label twice,
    # nesting too deep, a number too long: one input error)
    document = strict_json(read_bytes(path), path, "label map: ")
    try:
        return normalise_label_map(document)
    except ValueError as exc:
        raise InputError(f"label map: {exc}", path=path) from None


def normalise_label_map(document: Any) -> dict[str, int]:
    """``{raw: class}`` with integer keys (as decimal strings, sorted by value) and values."""
    if not isinstance(document, dict) or not document:
        raise ValueError('expected a JSON object {"raw label": class label, ...} '
                         "such as SemanticKITTI's learning_map")
    out: dict[int, int] = {}
    for key, value in document.items():
        try:
            raw = int(str(key).strip())
        except ValueError:
            raise ValueError(f"key {key!r} is not an integer label") from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"the class of {key!r} is {value!r}, not an integer")
        if raw in out:
            raise ValueError(f"label {raw} is listed twice")
        out[raw] = value
    return {str(raw): out[raw] for raw in sorted(out)}
