"""A detection protocol's own AP view on the page (``--protocol voc07|voc|dota|ultralytics|
openimages``: ``dataset.<protocol>``): its precision–recall curve at the protocol's match,
its AP per class as bars and as a table (GT, predictions, ignored, why a class has no AP),
what it left out and why, and one curve per class. Every protocol writes the same shape —
``curves`` (``recall`` and ``overall``/``per_class`` precision at the 101 points),
``per_class`` and ``ignored`` (counts and ``why``) — so one view draws them all; the
protocol names itself and its match (:class:`~rpx_cli.tasks.base.Evaluated`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.report import svg_lines
from rpx_cli.report.html_blocks import cell_html, is_number, section_html, table_html
from rpx_cli.report.html_task_sections import per_class_bars
from rpx_cli.report.markup import esc, short

MAX_CLASS_CHARTS = 12  # small multiples: the worst classes first


def protocol_view(section: Any, run: Any) -> str:
    """The sections of the protocol's view (``section``: ``dataset.<protocol>``; ``run``:
    what the report evaluated); nothing when the report holds no such view."""
    if not isinstance(section, Mapping):
        return ""
    label, at, field = run.view_label or str(run.view), run.view_at or "its match", run.view_ap
    per_class = {str(k): v for k, v in (section.get("per_class") or {}).items()
                 if isinstance(v, Mapping)} if isinstance(section.get("per_class"), Mapping) else {}
    ap = {name: entry.get(field) for name, entry in per_class.items()}
    out = [_overall(section.get("curves"), label, at)]
    if per_class:
        out.append(section_html(f"{label}: AP per class", per_class_bars(
            per_class, field, title=f"{label} {field} per class ({at}), worst first", way="higher",
            name="protocol-ap-per-class"), "n/a: no GT of the class", kind="protocol-ap-per-class"))
        out.append(section_html(f"{label}: per class", _class_table(per_class, field, run.view),
                                kind="protocol-per-class"))
    out.append(_ignored(section.get("ignored"), label))
    out.append(_class_curves(section.get("curves"), ap, label, at, field))
    return "".join(out)


def _curve(curves: Any) -> tuple[list[Any], Mapping[str, Any]] | None:
    if not isinstance(curves, Mapping) or not isinstance(curves.get("recall"), list):
        return None
    return curves["recall"], curves


def _overall(curves: Any, label: str, at: str) -> str:
    found = _curve(curves)
    overall = found[1].get("overall") if found else None
    if not isinstance(overall, Mapping) or not isinstance(overall.get("precision"), list):
        return ""
    chart = svg_lines.line_chart(
        [{"name": at, "y": overall["precision"]}], x=found[0],
        title=f"{label}: precision–recall, mean over classes with GT", x_label="recall",
        y_label="precision (interpolated)", attrs={"name": "protocol-pr"})
    return section_html(f"{label}: precision–recall", chart,
                        f"{esc(at)}; the protocol's interpolated precision at {len(found[0])} recall "
                        "points, averaged over the classes with GT", kind="protocol-pr")


def _class_table(per_class: Mapping[str, Mapping[str, Any]], field: str, view: Any) -> str:
    """One row per class, worst AP first: every figure the protocol wrote for it."""
    names = sorted(per_class, key=lambda k: (not is_number(per_class[k].get(field)),
                                             per_class[k].get(field) if is_number(per_class[k].get(field)) else 0.0))
    keys = [field] + sorted({key for entry in per_class.values() for key in entry} - {field, "reason"})
    reason = any("reason" in entry for entry in per_class.values())
    rows = [[esc(name), *(cell_html(per_class[name].get(key), f"dataset.{view}.per_class.{name}.{key}")
                          for key in keys),
             *([esc(per_class[name].get("reason") or "")] if reason else [])] for name in names]
    return table_html(["class", *keys, *(["why no AP"] if reason else [])], rows, table="protocol-per-class")


def _ignored(ignored: Any, label: str) -> str:
    if not isinstance(ignored, Mapping):
        return ""
    counts = [(str(key), value) for key, value in ignored.items() if key != "why"]
    why = ignored.get("why")
    table = table_html(["left out", "count"], [[esc(key), cell_html(value)] for key, value in counts],
                       table="protocol-ignored") if counts else ""
    return section_html(f"{label}: what was left out", table, esc(why) if isinstance(why, str) else "",
                        kind="protocol-ignored")


def _class_curves(curves: Any, ap: Mapping[str, Any], label: str, at: str, field: str) -> str:
    found = _curve(curves)
    per_class = found[1].get("per_class") if found else None
    if not isinstance(per_class, Mapping):
        return ""
    drawn = [k for k, v in per_class.items() if isinstance(v, Mapping) and isinstance(v.get("precision"), list)]
    order = sorted(drawn, key=lambda k: (not is_number(ap.get(k)), ap.get(k) if is_number(ap.get(k)) else 0.0))
    charts = [svg_lines.line_chart(
        [{"name": at, "y": per_class[k]["precision"]}], x=found[0], x_attr=False,
        title=f"{k}: precision–recall", x_label=f"recall — {k} ({field} {short(ap.get(k))})",
        y_label="precision", width=250, height=190, legend=False,
        attrs={"name": "protocol-pr-class", "class": str(k)}) for k in order[:MAX_CLASS_CHARTS]]
    if not charts:
        return ""
    more = f"; {len(order) - MAX_CLASS_CHARTS} more in the report's curves" if len(order) > MAX_CLASS_CHARTS else ""
    return section_html(f"{label}: precision–recall per class", f'<div class="multiples">{"".join(charts)}</div>',
                        f"worst {esc(field)} first, {esc(at)}{esc(more)}", kind="protocol-pr-class")
