"""The building blocks of the HTML report (:mod:`rpx_cli.report.html`): reading a report
(a dotted path, a number, its kind), a metric's direction, and the markup every section is
made of (a titled section, a table, a cell whose full number is in ``data-value``). What a
report's task declares (headline, rank metric, bands) is read in
:mod:`rpx_cli.report.declared`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rpx_cli.deploy.figures import readiness_direction
from rpx_cli.report.declared import evaluated, metric_direction, unit
from rpx_cli.report.markup import datum, esc, short


def kind_name(report: Mapping[str, Any]) -> str:
    """The report's title: what an ``rpx.eval`` run evaluated (``detection · masks · LVIS``,
    :func:`~rpx_cli.report.declared.evaluated`), else the workflow and its task."""
    schema = str(report.get("schema") or "report")
    task = report.get("task")
    return evaluated(report).title if schema == "rpx.eval" and task else f"{schema.removeprefix('rpx.')}" + (
        f" ({task})" if task and schema not in ("rpx.compare",) and task != schema.removeprefix("rpx.") else "")


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def direction(report: Mapping[str, Any], path: str) -> str:
    name = path.rsplit(".", 1)[-1]
    if report.get("schema") == "rpx.readiness":  # no metric_info: rpx readiness declares them
        return readiness_direction(name, report.get("direction"))
    return metric_direction(report, name)


ARROW = {"higher": "↑ higher is better", "lower": "↓ lower is better", "none": ""}


def axis_label(report: Mapping[str, Any], metric: str, *, way: bool = True) -> str:
    """A chart axis for ``metric``: its name, its unit when the task declares one, and which
    way is better: ``mATE (m), ↓ lower is better``."""
    text = metric + (f" ({unit(report, metric)})" if unit(report, metric) else "")
    arrow = ARROW.get(direction(report, metric), "") if way else ""
    return f"{text}, {arrow}" if arrow else text


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 error``, ``3 errors``."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def section_html(title: str, body: str, note: str = "", *, kind: str = "") -> str:
    extra = f' data-section="{esc(kind)}"' if kind else ""
    text = f'<p class="note-text">{note}</p>' if note else ""
    return f"<section{extra}><h3>{esc(title)}</h3>{text}{body}</section>"


def table_html(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, attrs: Sequence[str] | None = None,
               table: str = "") -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for i, row in enumerate(rows):
        extra = f" {attrs[i]}" if attrs else ""
        body.append(f"<tr{extra}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    name = f' data-table="{esc(table)}"' if table else ""
    return f"<table{name}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def cell_html(value: Any, path: str = "") -> str:
    """A table cell's content: the short form shown, the full number in data-value."""
    extra = f' data-metric="{esc(path)}"' if path else ""
    if is_number(value) or value is None:
        return f'<span data-value="{datum(value)}"{extra}>{short(value, 4)}</span>'
    return esc(value)
