"""Human views of an ``rpx.readiness`` report: the phase table, transitions coloured by
the metric's direction, temporal stability, geometric coherence and cost."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.report.render import fmt

PHASES = ("clutter", "interaction", "clean")
DIFFICULTIES = ("easy", "medium", "hard")


def _verdict(delta: Any, good: bool | None) -> tuple[str, str]:
    """(text, tone) of a transition: tone ``good``, ``bad`` or ``none``."""
    if delta is None or good is None:
        return fmt(delta), "none"
    sign = "+" if delta > 0 else ""
    return f"{sign}{fmt(delta)}", "good" if good else "bad"


def sections(report: Mapping[str, Any]) -> list[tuple[str, list[str], list[tuple[Any, ...]]]]:
    """``(title, columns, rows)`` tables; transition cells are ``(text, tone)`` pairs."""
    strata = report.get("strata") or {}
    metric, direction = report.get("primary_metric"), report.get("direction")
    out = []
    cells = strata.get("by_phase_difficulty") or {}
    wps = strata.get("weighted_phase_score") or {}
    if cells:
        rows = []
        for phase in PHASES:
            row = cells.get(phase, {})
            rows.append((phase, *(f"{fmt(row.get(d, {}).get('mean'))} (n={row.get(d, {}).get('n', 0)})"
                                  for d in DIFFICULTIES), fmt(wps.get(phase))))
        rows.append(("overall", "", "", "", fmt(wps.get("overall"))))
        out.append((f"weighted phase score — {metric} ({direction} is better; weights .25/.35/.40)",
                    ["phase", *DIFFICULTIES, "S_p"], rows))
        transitions = [
            ("delta_int (interaction − clutter)",
             _verdict(wps.get("delta_int"), None if wps.get("degrades") is None
                      else not wps.get("degrades"))),
            ("delta_rec (clean − interaction)", _verdict(wps.get("delta_rec"), wps.get("recovers"))),
        ]
        str_ = strata.get("str") or {}
        transitions += [
            ("STR c→i (phase means)", _verdict(str_.get("c_to_i"), None if str_.get("degrades") is None
                                                else not str_.get("degrades"))),
            ("STR i→l (phase means)", _verdict(str_.get("i_to_l"), str_.get("recovers"))),
        ]
        out.append(("transitions", ["", "value"], transitions))
    stability, coherence = report.get("stability"), report.get("coherence")
    rows = []
    if stability:
        rows.append(("TS (temporal stability)", fmt(stability.get("ts_score")),
                     f"warp {stability.get('warp')}, {stability.get('num_pairs')} pairs"))
    if coherence:
        rows.append(("SGC (geometric coherence)", fmt(coherence.get("sgc")),
                     f"P {fmt(coherence.get('precision'))}, R {fmt(coherence.get('recall'))}"))
    if rows:
        out.append(("deployment", ["", "score", "detail"], rows))
    cost = {k: v for k, v in (report.get("cost") or {}).items() if v is not None}
    if cost:
        out.append(("cost", ["", "value"], [(k, fmt(v)) for k, v in cost.items()]))
    return out


def table_cells(rows: list[tuple[Any, ...]]) -> list[tuple[str, ...]]:
    """Rows for a rich table: transition cells coloured (green good, red bad)."""
    style = {"good": "[green]{}[/green]", "bad": "[red]{}[/red]", "none": "{}"}
    return [tuple(style[c[1]].format(c[0]) if isinstance(c, tuple) else str(c) for c in row)
            for row in rows]


def markdown(report: Mapping[str, Any]) -> str:
    mark = {"good": " 🟢", "bad": " 🔴", "none": ""}
    name = report.get("model_name") or "model"
    lines = [f"### rpx readiness: {name} on {report.get('task')}", ""]
    for title, columns, rows in sections(report):
        lines += [f"**{title}**", "", "| " + " | ".join(columns) + " |",
                  "|---|" + "---:|" * (len(columns) - 1)]
        for row in rows:
            cells = [f"{c[0]}{mark[c[1]]}" if isinstance(c, tuple) else str(c) for c in row]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    if len(lines) == 2:
        lines.append("(no strata, stability, coherence or cost in this report)")
    return "\n".join(lines).rstrip("\n") + "\n"
