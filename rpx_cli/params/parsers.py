"""Parsers of option values, shared by every task or workflow that has such an option. Each
takes the text of a flag (or a ``rpx.toml`` value) or the Python value an API caller passes,
and returns the typed value or raises ``ValueError`` with the reason (the :class:`Option`
adds the flag's name). Also here: a report path (``dataset.per_class["car"].iou``), what a
gate and a no-regression gate name, so that ``report/`` and the options read it alike."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rpx_cli.params.values import Band


def number(value: Any) -> float:
    """A real number from text or a Python number (never a bool); NaN is refused."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            raise ValueError(f"expected a number, got {value!r}") from None
    elif isinstance(value, (int, float)) or hasattr(value, "__float__"):
        try:
            result = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"expected a number, got {value!r}") from None
    else:
        raise ValueError(f"expected a number, got {value!r}")
    if math.isnan(result):
        raise ValueError(f"expected a number, got {value!r}")
    return result


def integer(value: Any) -> int:
    """An integer from text or a Python integer (a float with no fraction too; never a bool)."""
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {value!r}")
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError(f"expected an integer, got {value!r}") from None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if hasattr(value, "__index__"):  # numpy integers
        return int(value.__index__())
    raise ValueError(f"expected an integer, got {value!r}")


def _shown(value: Any) -> str:
    return value.strip() if isinstance(value, str) else f"{value!r}"


def recorded(schema: dict[str, Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Attach the JSON Schema of what a parser returns, as ``params`` records it (a
    ``parsed`` option's schema in the report schemas: :mod:`rpx_cli.report.schema_params`)."""
    def attach(parse: Callable[..., Any]) -> Callable[..., Any]:
        parse.schema = schema  # type: ignore[attr-defined]
        return parse
    return attach


UNIT = {"type": "number", "minimum": 0, "maximum": 1}
# what options whose files a task reads record in ``params`` (Option.recorded)
NAMES = {"type": ["array", "null"], "items": {"type": "string"},
         "description": "The class names (read from the file given)."}
LABEL_MAP = {"type": "object", "additionalProperties": {"type": ["string", "null"]},
             "description": "{raw label: evaluated label, or null: dropped} (read from the file given)."}
NAME_NUMBERS = {"type": "object", "additionalProperties": {"type": ["number", "null"]},
                "description": "{class: metres} (null: no cap)."}


def probability(name: str) -> Callable[[Any], float]:
    """The parser of a value in [0, 1] (``name`` in its message)."""
    @recorded(UNIT)
    def parse(value: Any) -> float:
        result = number(value)
        if not 0.0 <= result <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {_shown(value)}")
        return result
    return parse


def positive(name: str) -> Callable[[Any], float]:
    """The parser of a positive, finite number (``name`` in its message)."""
    @recorded({"type": "number", "exclusiveMinimum": 0})
    def parse(value: Any) -> float:
        result = number(value)
        if not (math.isfinite(result) and result > 0):
            raise ValueError(f"{name} must be a positive number, got {_shown(value)}")
        return result
    return parse


@recorded({"type": "number", "exclusiveMinimum": 0, "maximum": 1})
def iou_threshold(value: Any) -> float:
    """An IoU threshold in (0, 1]."""
    result = number(value)
    if not 0 < result <= 1:
        raise ValueError(f"IoU threshold must be in (0, 1], got {_shown(value)}")
    return result


MAX_SHARDS = 1_000_000


def shard(value: Any) -> tuple[int, int]:
    """``K/N``: shard K (1-based) of N, with 1 <= K <= N (``(k, n)`` from Python)."""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        index, count = integer(value[0]), integer(value[1])
    elif isinstance(value, str):
        head, sep, tail = value.partition("/")
        if not (sep and _digits(head) and _digits(tail)):
            raise ValueError(f"expected K/N with 1 <= K <= N (e.g. 2/4), got {value!r}")
        index, count = int(head), int(tail)
    else:
        raise ValueError(f"expected K/N with 1 <= K <= N (e.g. 2/4), got {value!r}")
    if not 1 <= index <= count:
        raise ValueError(f"expected K/N with 1 <= K <= N (e.g. 2/4), got {index}/{count}")
    if count > MAX_SHARDS:
        raise ValueError(f"at most {MAX_SHARDS:,} shards, got {count}")
    return index, count


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


@recorded({"type": "array", "minItems": 2, "maxItems": 2, "description": "[min, max) metres; "
           "max null: open-ended", "prefixItems": [{"type": "number", "minimum": 0},
                                                   {"type": ["number", "null"]}]})
def parse_band(value: Any) -> Band:
    """``A:B`` or ``A:`` metres (a :class:`Band`; ``[low, high]`` from Python)."""
    return Band.of(value)


def name_and_number(what: str, parse_number: Callable[[Any], float]) -> Callable[[Any], tuple[str, float]]:
    """``NAME=NUMBER`` (a pair ``(name, number)`` from Python), e.g. ``car=50``."""
    def parse(value: Any) -> tuple[str, float]:
        if isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], str):
            name, amount = value
        elif isinstance(value, str):
            name, sep, amount = value.rpartition("=")
            if not sep or not name:
                raise ValueError(f"expected NAME={what}, got {value!r}")
        else:
            raise ValueError(f"expected NAME={what}, got {value!r}")
        if not name:
            raise ValueError(f"expected NAME={what}, got {value!r}")
        return name, parse_number(amount)
    return parse


SIGMA_RANGE = (1e-6, 1.0)  # OKS sigmas: COCO's are 0.025-0.107 (of the object's scale)


@recorded({"type": "array", "minItems": 1, "items": {"type": "number", "minimum": SIGMA_RANGE[0],
                                                     "maximum": SIGMA_RANGE[1]}})
def sigmas(value: Any) -> list[float]:
    """Keypoint sigmas (``--oks-sigmas``): a comma list ``0.26,0.25,...``, a file holding
    such a list or a flat JSON list, or a Python sequence; each a number within
    :data:`SIGMA_RANGE` (below it the OKS divides by zero, above it every prediction is close
    to every GT: 1e200 scored a point 1,000 px off as OKS 1)."""
    items: Any = value
    if isinstance(value, str):
        text = value.strip()
        if text and not _numeric_list(text):
            import os

            if not os.path.isfile(text):
                raise ValueError(f"expected a comma list of numbers or a file, got {_shown(value)}")
            with open(text, encoding="utf-8") as handle:
                text = handle.read().strip()
            if text.startswith("["):
                import json

                try:
                    items = json.loads(text)
                except ValueError as exc:
                    raise ValueError(f"{value}: not a JSON list of numbers ({exc})") from None
                if not isinstance(items, list) or any(isinstance(i, (list, dict)) for i in items):
                    raise ValueError(f"{value}: expected a flat JSON list of numbers")
        if isinstance(items, str):
            items = [part for part in text.replace("\n", ",").split(",") if part.strip()]
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise ValueError(f"expected a list of numbers, got {_shown(value)}")
    low, high = SIGMA_RANGE
    out = []
    for item in items:
        result = number(item)
        if not low <= result <= high:  # (NaN fails too)
            raise ValueError(f"sigmas must be numbers within [{low:g}, {high:g}] (COCO's are "
                             f"0.025-0.107), got {_shown(item)}")
        out.append(result)
    if not out:
        raise ValueError("expected at least one sigma")
    return out


def _numeric_list(text: str) -> bool:
    try:
        [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        return False
    return True


@recorded({"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": 1}})
def parse_kpt_shape(value: Any) -> tuple[int, int]:
    """``--kpt-shape K,2`` or ``K,3``."""
    parts = value if isinstance(value, (list, tuple)) else str(value).split(",")
    try:
        k, d = (int(v) for v in parts)
    except (TypeError, ValueError):
        raise ValueError(f"expected K,2 or K,3, got {value!r}") from None
    if k < 1 or d not in (2, 3):
        raise ValueError(f"expected K,2 or K,3 with K >= 1, got {value!r}")
    return k, d


@recorded({"type": "string"})
def parse_ultralytics_version(value: Any) -> str:
    """``--ultralytics-version 8.4.190`` (or ``8.3``): a release 8.0 or later, recorded as
    ``MAJOR.MINOR.PATCH``."""
    parts = str(value).strip().lstrip("v").split(".")
    if not 1 < len(parts) <= 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"an Ultralytics release is MAJOR.MINOR[.PATCH], e.g. 8.4.190: got {value!r}")
    version = tuple(int(part) for part in parts) + (0,) * (3 - len(parts))
    if version < (8, 0, 0):
        raise ValueError(f"Ultralytics {value}: rpx knows the rules of releases 8.0 and later")
    return ".".join(map(str, version))


@recorded({"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": 1}})
def parse_image_size(value: Any) -> tuple[int, int]:
    """``--image-size W,H`` (pixels, each >= 1)."""
    parts = value if isinstance(value, (list, tuple)) else str(value).split(",")
    try:
        w, h = (int(v) for v in parts)
    except (TypeError, ValueError):
        raise ValueError(f"expected W,H in pixels, got {value!r}") from None
    if w < 1 or h < 1:
        raise ValueError(f"expected W,H >= 1, got {value!r}")
    return w, h


# --- report paths (gates) -----------------------------------------------------------------

_SEGMENT = re.compile(r'\["((?:[^"\\]|\\.)*)"\]|([^.\[\]<>=]+)')


def parse_path(text: str) -> tuple[str, ...]:
    """``a.b["c.d"].e`` -> ``("a", "b", "c.d", "e")``; ValueError when malformed."""
    segments: list[str] = []
    position = 0
    text = text.strip()
    while position < len(text):
        if text[position] == "." and segments:
            position += 1
        match = _SEGMENT.match(text, position)
        if match is None:
            raise ValueError(f"cannot read the path {text!r} at character {position + 1}")
        quoted, plain = match.groups()
        segments.append(plain.strip() if quoted is None else quoted.replace('\\"', '"'))
        position = match.end()
    if not segments or any(not s for s in segments):
        raise ValueError(f"empty path in {text!r}")
    return tuple(segments)


@dataclass(frozen=True)
class NoRegression:
    """``METRIC[:TOL]``: TOL absolute (``0.01``) or relative (``5%``), default 0."""

    text: str
    path: tuple[str, ...]
    tolerance: float
    relative: bool


def parse_no_regression(text: str) -> NoRegression:
    """``METRIC[:TOL]`` (``absrel:5%``, ``dataset.miou``); ValueError when malformed."""
    metric, sep, tol = text.rpartition(":") if ":" in text else (text, "", "")
    if not sep:
        metric, tol = text, "0"
    tol = tol.strip()
    relative = tol.endswith("%")
    try:
        value = float(tol[:-1] if relative else tol)
    except ValueError:
        raise ValueError(f"tolerance {tol!r} is not a number or a percentage (in {text!r})") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"tolerance must be a non-negative number (in {text!r})")
    path = parse_path(metric)
    if len(path) == 1:
        path = ("aggregate", *path)  # a bare metric name means aggregate.<name>
    return NoRegression(text.strip(), path, value / 100 if relative else value, relative)
