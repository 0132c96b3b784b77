"""``rpx report``: one self-contained HTML page from one or more JSON reports.

The page is built from the reports alone (a merged run renders like a single one), with
inline CSS and inline SVG (:mod:`rpx_cli.report.svg`) and no script: it makes no network
request (a Content-Security-Policy forbids any), needs no other file, and opens offline.
Each report gets a header (task, parameters, provenance), its gates, its headline metrics
with their directions, the pictures of its kind and its worst rows; several reports are
shown side by side, after a table of their headline metrics with the change from the first.
Every number drawn is also in a ``data-*`` attribute (see ``docs/reports.md``).

This module is the page: its style, one article per report and the side-by-side table. The
sections every report has are in :mod:`rpx_cli.report.html_sections`, the pictures of each
kind in :mod:`rpx_cli.report.html_task_views` (``rpx.eval`` reports) and
:mod:`rpx_cli.report.html_workflow_views` (readiness, compare, stability), and the helpers
they share in :mod:`rpx_cli.report.html_blocks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rpx_cli.errors import first_line
from rpx_cli.report.html_blocks import (
    ARROW,
    cell_html,
    direction,
    is_number,
    kind_name,
    section_html,
    table_html,
)
from rpx_cli.report.html_frames import frames_section
from rpx_cli.report.html_sections import (
    WORST_N,
    all_metrics_section,
    card_paths,
    gates_section,
    headline_section,
    provenance_section,
    summary_text,
    worst_rows_section,
)
from rpx_cli.report.html_task_views import task_view
from rpx_cli.report.html_workflow_views import WORKFLOW_VIEWS
from rpx_cli.report.markup import esc, escaped_document, short
from rpx_cli.report.render import lookup

__all__ = ["CSS", "WORST_N", "direction", "render_html"]

CSS = """
:root{--bg:#fff;--fg:#1b1f24;--muted:#5b6570;--line:#d0d7de;--grid:#eaeef2;--panel:#f6f8fa;
--good:#0072B2;--bad:#D55E00;--cell0:#f3f4f6;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9aa5b1;--line:#30363d;
--grid:#21262d;--panel:#161b22;--good:#56B4E9;--bad:#E69F00;--cell0:#1c2128}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
header.page{padding:14px 24px;border-bottom:1px solid var(--line)}h1{font-size:20px;margin:0}
h2{font-size:18px;margin:0 0 4px}h3{font-size:15px;margin:22px 0 6px}
.muted,.note-text{color:var(--muted)}main{padding:8px 24px 40px}
.reports{display:grid;grid-template-columns:repeat(var(--n),minmax(520px,1fr));gap:28px;overflow-x:auto}
article{min-width:0}section{margin-bottom:10px}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:10px 0}
.card{border:1px solid var(--line);border-radius:6px;padding:6px 10px;min-width:118px;background:var(--panel)}
.card .v{font-size:20px;font-weight:600}.card .k{font-size:12px;color:var(--muted);word-break:break-all}
.card .d{font-size:11px;color:var(--muted)}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{border-bottom:1px solid var(--line);
padding:3px 8px;text-align:right;vertical-align:top}th:first-child,td:first-child{text-align:left}
td.code,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}
.pass{color:var(--good);font-weight:600}.fail{color:var(--bad);font-weight:600}
.good{color:var(--good)}.bad{color:var(--bad)}
details{margin:8px 0}figure.captioned{margin:10px 0 4px}summary{cursor:pointer;font-weight:600}
.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:6px 14px}
svg.chart{width:100%;height:auto;display:block;margin:4px 0;font-size:11px}
svg .ax{stroke:var(--fg);fill:none;stroke-width:1}svg .grid{stroke:var(--grid);stroke-width:1}
svg text{fill:var(--fg)}svg .tick,svg .legend{fill:var(--fg);font-size:11px}
svg .label{fill:var(--muted);font-size:12px}svg .note{fill:var(--muted);font-size:11px}
svg .series{fill:none;stroke-width:2}svg .marker{fill:none;stroke:var(--fg);stroke-width:2}
svg .cell0{fill:var(--cell0)}svg .legendbg{fill:var(--bg);opacity:.85}
"""


def render_html(reports: Sequence[tuple[str, Mapping[str, Any]]], *, title: str | None = None) -> str:
    """The page for ``reports`` (``(name, report)`` pairs, shown in that order). Every
    string of every report (and the names and title) is HTML-escaped once, here, before
    anything is built from it (:func:`~rpx_cli.report.svg.escaped_document`)."""
    reports = [(esc(name), escaped_document(dict(report))) for name, report in reports]
    title = None if title is None else esc(title)
    kinds = sorted({kind_name(report) for _, report in reports})
    heading = title or f"rpx report — {', '.join(kinds)}"
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
             "style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'\">",
             f"<title>{esc(heading)}</title><style>{CSS}</style></head><body>",
             f'<header class="page"><h1>{esc(heading)}</h1><div class="muted">{len(reports)} report(s): '
             f"{esc(', '.join(name for name, _ in reports))}</div></header><main>"]
    if len(reports) > 1:
        parts.append(_side_by_side(reports))
    parts.append(f'<div class="reports" style="--n:{len(reports)}">')
    for index, (name, report) in enumerate(reports):
        parts.append(_article(index, name, report))
    parts.append("</div></main></body></html>\n")
    return "".join(parts)


def _article(index: int, name: str, report: Mapping[str, Any]) -> str:
    schema = report.get("schema")
    kind = kind_name(report)
    parts = [f'<article data-report="{index}" data-schema="{esc(schema)}" data-task="{esc(report.get("task"))}">',
             f"<h2>{esc(kind)}</h2><div class=\"muted\"><code>{esc(name)}</code></div>",
             _drawn(lambda r: f"<p>{summary_text(r)}</p>", report), _drawn(gates_section, report),
             _drawn(headline_section, report)]
    view = WORKFLOW_VIEWS.get(str(schema)) or task_view(report)
    parts.append(_drawn(view, report))
    parts.append(_drawn(frames_section, report))
    if schema not in ("rpx.compare", "rpx.readiness"):
        parts.append(_drawn(worst_rows_section, report))
    parts.append(_drawn(all_metrics_section, report))
    parts.append(_drawn(provenance_section, report))
    parts.append("</article>")
    return "".join(parts)


# what a section raises on a report that its schema allows but rpx never writes (a string
# in a confusion matrix, a number where a class's entry is): the section is left out
UNDRAWABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError)


def _drawn(section: Callable[[Mapping[str, Any]], str], report: Mapping[str, Any]) -> str:
    """``section(report)``, or a note saying it could not be drawn from this report: the
    rest of the page is drawn."""
    try:
        return section(report)
    except UNDRAWABLE as exc:
        return section_html("not drawn", "", "a section could not be drawn from this report "
                            f"({esc(type(exc).__name__)}: {esc(first_line(exc))})",
                            kind="not-drawn")


def _side_by_side(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    first = reports[0][1]
    paths = card_paths(first)
    for _, report in reports[1:]:
        paths += [p for p in card_paths(report) if p not in paths]
    rows, attrs = [], []
    for path in paths:
        values = [lookup(report, path) for _, report in reports]
        way = direction(first, path)
        cells = [f"<code>{esc(path)}</code> <span class=\"muted\">{ARROW.get(way, '')[:1]}</span>"]
        base = values[0]
        for value in values:
            text = cell_html(value, path)
            if value is not base and is_number(value) and is_number(base) and value != base:
                better = (value > base) == (way == "higher") if way in ("higher", "lower") else None
                tone = "" if better is None else (' class="good"' if better else ' class="bad"')
                text += f' <span{tone}>({"+" if value > base else ""}{short(value - base)})</span>'
            cells.append(text)
        rows.append(cells)
        attrs.append(f'data-metric="{esc(path)}"')
    columns = ["metric", *(f"{i + 1}: {name}" for i, (name, _) in enumerate(reports))]
    return section_html("side by side", table_html(columns, rows, attrs=attrs, table="side-by-side"),
                        "headline metrics of every report; in brackets the change from the first "
                        "(blue better, orange worse given the metric's direction)", kind="side-by-side")
