"""Gates: ``--require aggregate.absrel<=0.12`` and friends.

An expression is a path into the report, an operator (``<``, ``<=``, ``>``, ``>=``, ``==``)
and a number. The path is dotted (``dataset.per_class.person.recall``); a key holding dots
or other operator characters is bracket-quoted (``dataset.per_class["traffic.light"].iou``).
A bare name (``absrel``) means the top-level key if the report has one (``micro_iou``),
else ``aggregate.<name>``. A value that is null or not a number fails the gate with a
message saying so — never a silent pass. A path that does not exist is a mistake in the
expression, not a measurement: its entry is marked ``missing`` with the report's nearest
keys (``no such key aggregate.absrell; did you mean aggregate.absrel?``), and the CLI exits
2 (usage) rather than 3 (a regression).
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rpx_cli.params.parsers import parse_path

_OPERATORS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "<": operator.lt,
              ">": operator.gt}
_EXPR = re.compile(r"^\s*(?P<path>.+?)\s*(?P<op><=|>=|==|<|>)\s*(?P<number>[^<>=\s]+)\s*$")


@dataclass(frozen=True)
class Gate:
    expr: str
    path: tuple[str, ...]
    op: str
    threshold: float


def parse_gate(text: str) -> Gate:
    """Parse ``PATH OP NUMBER``; ValueError with a message when malformed."""
    match = _EXPR.match(text)
    if match is None:
        raise ValueError(f"expected PATH OP NUMBER with OP one of < <= > >= ==, got {text!r}")
    try:
        threshold = float(match["number"])
    except ValueError:
        raise ValueError(f"{match['number']!r} is not a number (in {text!r})") from None
    if not math.isfinite(threshold):
        raise ValueError(f"the threshold must be finite (in {text!r})")
    return Gate(text.strip(), parse_path(match["path"]), match["op"], threshold)


def resolve(report: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any, str]:
    """``(found, value, dotted path used)``; a bare name falls back to ``aggregate``."""
    if len(path) == 1 and path[0] not in report and isinstance(report.get("aggregate"), Mapping):
        path = ("aggregate", *path)
    node: Any = report
    for key in path:
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return False, None, ".".join(path)
    return True, node, ".".join(path)


def check(report: Mapping[str, Any], gates: list[Gate]) -> list[dict[str, Any]]:
    """One ``{expr, value, passed, message}`` per gate."""
    results = []
    for gate in gates:
        found, value, where = resolve(report, gate.path)
        if not found:
            near = suggestions(report, where)
            hint = f"; did you mean {' or '.join(near)}?" if near else ""
            results.append({"expr": gate.expr, "value": None, "passed": False, "missing": True,
                            "message": f"no such key {where} in the report{hint}"})
        elif value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            what = "null" if value is None else f"not a number ({type(value).__name__})"
            results.append({"expr": gate.expr, "value": None, "passed": False,
                            "message": f"{where} is {what}"})
        else:
            passed = bool(_OPERATORS[gate.op](value, gate.threshold))
            shown, bound = _numbers(value, gate.threshold)
            results.append({"expr": gate.expr, "value": value, "passed": passed,
                            "message": f"{where} = {shown} {'satisfies' if passed else 'fails'} "
                                       f"{gate.op} {bound}"})
    return results


def _numbers(value: float, threshold: float) -> tuple[str, str]:
    """The value and the threshold as a gate's message writes them: short (``%g``), unless
    that shows two different numbers alike (1.0000000000000002 against 1): then in full."""
    shown, bound = f"{value:g}", f"{threshold:g}"
    if shown == bound and value != threshold:
        return repr(float(value)), repr(float(threshold))
    return shown, bound


# sections whose keys are not figures a gate names (or too many to list)
_NOT_GATED = {"run_provenance", "metric_info", "params", "rows", "state", "statistics", "gates",
              "unpaired", "errors", "warnings"}


def suggestions(report: Mapping[str, Any], path: str, n: int = 3) -> list[str]:
    """The report's numeric paths nearest to ``path`` (a typo's likely meaning)."""
    paths: list[str] = []

    def walk(prefix: str, node: Any, depth: int) -> None:
        if isinstance(node, Mapping) and depth < 5:
            for key, value in node.items():
                if depth == 0 and key in _NOT_GATED:
                    continue
                walk(f"{prefix}.{key}" if prefix else str(key), value, depth + 1)
        elif node is None or (isinstance(node, (int, float)) and not isinstance(node, bool)):
            paths.append(prefix)

    walk("", report, 0)
    by_lower: dict[str, str] = {}
    for candidate in paths:  # compared case-blind: dataset.nds means dataset.NDS
        by_lower.setdefault(candidate.lower(), candidate)
    near = difflib.get_close_matches(path.lower(), list(by_lower), n=n, cutoff=0.85)
    return [by_lower[key] for key in near]
