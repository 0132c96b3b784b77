"""The sections a task's view on the HTML page is made of (:mod:`rpx_cli.report.html_task_views`),
each drawn wherever the report has what it shows: a confusion matrix (counts and row shares),
a figure per class as bars (the worst first), the figures the task charts per range band,
one figure per class and band as a grid, and the distribution of a row metric."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.report import declared, svg_bars, svg_grids
from rpx_cli.report.html_blocks import axis_label, is_number, section_html
from rpx_cli.report.markup import esc


def confusion_section(confusion: Mapping[str, Any], what: str) -> str:
    labels, matrix = confusion.get("labels"), confusion.get("matrix")
    if not labels or not matrix:
        return ""
    columns = confusion.get("columns") or labels
    if not isinstance(matrix, list) or len(matrix) != len(labels) or not all(
            isinstance(row, list) and len(row) == len(columns) and all(map(is_number, row))
            for row in matrix):
        return section_html("confusion matrix", "", "not drawn: the report's matrix is not a "
                            "table of counts, one row per label", kind="confusion")
    counts = svg_grids.heatmap(labels, columns, matrix, title=f"{what} confusion matrix (counts)",
                         normalise_rows=False, attrs={"name": "confusion-counts"})
    shares = svg_grids.heatmap(labels, columns, matrix, title=f"{what} confusion matrix (row-normalised)",
                         normalise_rows=True, attrs={"name": "confusion-rows"})
    return section_html("confusion matrix", counts + shares,
                        "<b>rows are ground truth, columns are predictions</b>; the second matrix divides each "
                        "row by its total (recall on the diagonal)", kind="confusion")


def per_class_bars(per_class: Mapping[str, Any], field: str, *, title: str, way: str,
                   domain: tuple[float, float] | None = (0.0, 1.0), name: str = "per-class",
                   label: str | None = None) -> str:
    entries = [(label, entry.get(field) if isinstance(entry, Mapping) else None)
               for label, entry in per_class.items()]
    if not any(is_number(v) for _, v in entries):
        return ""
    # the worst first: where it fails
    entries.sort(key=lambda e: (e[1] is None, e[1] if way != "lower" else -(e[1] or 0.0)))
    notes = [f"n={entry.get('support')}" if isinstance(entry, Mapping) and "support" in entry else ""
             for entry in (per_class[label] for label, _ in entries)]
    return svg_bars.bar_chart([label for label, _ in entries], [v for _, v in entries], title=title,
                              value_label=label or field, domain=domain, notes=notes,
                              attrs={"name": name, "field": field})


def bands_section(report: Mapping[str, Any]) -> str:
    """One bar chart per metric the task charts per band (its ``band_metrics``, in order),
    a bar per band of the report's ``params`` (depth bands, 3D ranges), labelled ``[A, B) m``:
    the values of ``band.key(metric)`` in ``dataset``, else in ``aggregate``."""
    bands = declared.bands(report)
    charts, sections = [], []
    for metric in declared.band_metrics(report) if bands else ():
        keys = [band.key(metric) for band in bands]
        section = next((name for name in ("dataset", "aggregate") if isinstance(report.get(name), Mapping)
                        and any(key in report[name] for key in keys)), None)
        if section is None:
            continue
        values = [report[section].get(key) for key in keys]
        charts.append(svg_bars.bar_chart([band.label for band in bands],
                                         [v if is_number(v) else None for v in values],
                                         title=f"{metric} per band ({section})",
                                         value_label=axis_label(report, metric),
                                         domain=None, width=420, attrs={"name": "bands", "metric": metric}))
        if section not in sections:
            sections.append(section)
    if not charts:
        return ""
    return section_html(f"per band ({', '.join(sections)})", f'<div class="multiples">{"".join(charts)}</div>',
                        "bands are [min, max) of the GT (depth: metres; 3D: range from the sensor)", kind="bands")


def distribution_section(report: Mapping[str, Any], metric: str | None = None) -> str:
    rows = report.get("rows") or []
    if metric is None:
        metric, _ = declared.rank_metric(report)
    if not rows or metric is None:
        return ""
    values = [r.get(metric) for r in rows if is_number(r.get(metric))]
    if len(values) < 2:
        return ""
    return section_html(f"per-row distribution of {metric}", svg_bars.histogram(
        values, title=f"{metric} over {len(values)} rows", x_label=axis_label(report, metric, way=False),
        attrs={"name": "distribution", "metric": metric}),
        f"{len(rows) - len(values)} row(s) without a value left out", kind="distribution")


def class_band_grid(report: Mapping[str, Any], field: str) -> str:
    """``per_class.<name>.<field>`` over the whole range and per band (``band.key(field)``),
    one row per class (the worst overall first), one column per band."""
    per_class = (report.get("dataset") or {}).get("per_class")
    bands = declared.bands(report)
    if not field or not bands or not isinstance(per_class, Mapping):
        return ""
    keys = [field, *(band.key(field) for band in bands)]
    entries = {k: v for k, v in per_class.items() if isinstance(v, Mapping) and any(key in v for key in keys[1:])}
    if not entries:
        return ""
    names = sorted(entries, key=lambda k: (not is_number(entries[k].get(field)), entries[k].get(field) or 0.0))
    values = [[entries[k].get(key) if is_number(entries[k].get(key)) else None for key in keys] for k in names]
    return section_html(f"{field} per class and range", svg_grids.value_grid(
        names, ["all", *(band.label for band in bands)], values, title=f"{field} per class and range band",
        value_label=field, row_label="class", column_label="range band (distance from the sensor)",
        attrs={"name": "class-bands", "field": field}),
        f"per_class.&lt;name&gt;.{esc(field)} and its per-band keys; the worst class overall first; "
        "n/a: nothing to score in that band", kind="class-bands")
