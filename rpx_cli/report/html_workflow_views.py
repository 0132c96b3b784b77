"""The pictures of the reports of ``rpx readiness``, ``rpx compare`` and ``rpx stability`` on
the HTML page (:mod:`rpx_cli.report.html`): the phase chart and readiness tables, the deltas
with their bootstrap intervals, and temporal stability per sequence."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rpx_cli.report import svg_bars, svg_intervals
from rpx_cli.report.html_blocks import ARROW, cell_html, is_number, section_html, table_html
from rpx_cli.report.html_sections import gates_section
from rpx_cli.report.markup import datum, esc, short


def _readiness(report: Mapping[str, Any]) -> str:
    from rpx_cli.report.readiness_view import DIFFICULTIES, PHASES, sections

    strata = report.get("strata") or {}
    cells = strata.get("by_phase_difficulty") or {}
    wps = strata.get("weighted_phase_score") or {}
    out = []
    metric, way = report.get("primary_metric"), report.get("direction")
    if cells:
        values = [[(cells.get(p, {}).get(d) or {}).get("mean") for p in PHASES] for d in DIFFICULTIES]
        values.append([wps.get(p) for p in PHASES])
        out.append(section_html("phase chart", svg_bars.grouped_bars(
            list(PHASES), [*DIFFICULTIES, "S_p"], values, title=f"{metric} per phase and difficulty",
            y_label=f"{metric} ({ARROW.get(str(way), '')})", x_label="phase", domain=None,
            attrs={"name": "phases"}), f"S_p = (0.25 E + 0.35 M + 0.40 H) / weights present; overall "
            f"{esc(short(wps.get('overall')))}", kind="phases"))
    tone = {"good": ("good", "▲ "), "bad": ("bad", "▼ "), "none": ("", "")}
    for title, columns, rows in sections(report):
        body = []
        for row in rows:
            cells_html = []
            for c in row:
                if isinstance(c, tuple):
                    cls, mark = tone[c[1]]
                    cells_html.append(f'<span class="{cls}" data-tone="{c[1]}">{mark}{esc(c[0])}</span>')
                else:
                    cells_html.append(esc(c))
            body.append(cells_html)
        out.append(section_html(title, table_html(columns, body, table=title.split(" ")[0]), kind="readiness"))
    return "".join(out)


def _compare(report: Mapping[str, Any]) -> str:
    from rpx_cli.report.compare import CHANGED, NO_CHANGE, order_key, verdict

    metrics = sorted((m for m in report.get("metrics") or [] if m.get("delta") is not None), key=order_key)
    out = []
    shown = [m for m in metrics if m.get("status") in (*CHANGED, NO_CHANGE)] or metrics
    items = [{"label": m["metric"], "delta": m["delta"],
              "low": (m.get("bootstrap") or {}).get("ci95", [None, None])[0],
              "high": (m.get("bootstrap") or {}).get("ci95", [None, None])[1], "status": verdict(m)
              if verdict(m) == NO_CHANGE else m.get("status"),
              "point_status": m.get("point_status", m.get("status")), "significant": m.get("significant")}
             for m in shown[:80]]
    if items:
        out.append(section_html("what changed", svg_intervals.interval_chart(
            items, title="delta (new − base) per metric, each on its own scale", x_label="delta (new − base)",
            attrs={"name": "deltas"}), f"{len(shown)} metric(s) changed{', first 80 shown' if len(shown) > 80 else ''}"
            "; each row on its own scale (the numbers on the right are the delta and its interval); whiskers: "
            "paired bootstrap 95% interval over the shared stems (per-row metrics, and pooled figures of reports "
            "written with --keep-state); a change is significant "
            "(filled ▲ better, ▼ worse) only when its interval excludes 0; hollow △ ▽: no significant change "
            "(the interval includes 0) or no interval", kind="deltas"))
    tone = {("improved", True): "good", ("regressed", True): "bad"}
    out.append(_both_models(shown))
    rows = [(f"<code>{esc(m['metric'])}</code>", cell_html(m.get("base")), cell_html(m.get("new")), cell_html(m.get("delta")),
             f'<span class="{tone.get((m.get("status"), bool(m.get("significant"))), "")}">{esc(verdict(m))}</span>',
             esc("[" + ", ".join(short(v) for v in m["bootstrap"]["ci95"]) + "]" if m.get("bootstrap") else ""))
            for m in metrics]
    out.append(section_html("every metric", table_html(["metric", "base", "new", "delta", "change", "95% CI"], rows,
                                                       attrs=[f'data-metric="{esc(m["metric"])}" data-delta="{datum(m["delta"])}" '
                                                              f'data-significant="{datum(m.get("significant"))}"'
                                                              for m in metrics], table="compare"), kind="compare-table"))
    gates = report.get("gates") or []
    if gates:
        out.append(gates_section({"gates": gates}))
    return "".join(out)


MAX_MODEL_CHARTS = 24


def _both_models(metrics: list[Mapping[str, Any]]) -> str:
    """One small chart per changed metric: both models' values, each with its 95% interval
    when the paired bootstrap gives one (per-row metrics: the mean over the shared stems;
    pooled figures of ``--keep-state`` reports: the figure on the shared stems)."""
    charts = []
    for m in metrics[:MAX_MODEL_CHARTS]:
        boot = m.get("bootstrap") or {}
        if boot.get("base_ci95"):
            values = [boot.get("base_mean"), boot.get("new_mean")]
            intervals = [boot["base_ci95"], boot["new_ci95"]]
        else:
            values, intervals = [m.get("base"), m.get("new")], [None, None]
        if all(v is None for v in values):
            continue
        charts.append(svg_intervals.model_intervals([{"label": m["metric"], "values": values, "intervals": intervals}],
                                                    title=m["metric"], attrs={"name": "models", "metric": m["metric"]}))
    if not charts:
        return ""
    more = f"; the first {MAX_MODEL_CHARTS} shown" if len(metrics) > MAX_MODEL_CHARTS else ""
    return section_html("both models", f'<div class="multiples">{"".join(charts)}</div>',
                        "each changed metric on its own scale: base hollow grey, new filled blue; whiskers: "
                        "each model's 95% interval over the shared stems (paired bootstrap; per-row metrics: "
                        "the means of the shared stems; a pooled figure: the figure of the shared stems, with an "
                        "interval only when both reports were written with --keep-state)" + more,
                        kind="models")


def _stability(report: Mapping[str, Any]) -> str:
    sequences = report.get("sequences") or {}
    out = []
    if sequences:
        names = sorted(sequences)
        out.append(section_html("temporal stability per sequence", svg_bars.bar_chart(
            names, [sequences[n].get("ts_score") for n in names], title="TS per sequence", value_label="ts_score",
            domain=None, notes=[f"{sequences[n].get('num_pairs')} pairs" for n in names],
            attrs={"name": "ts-per-sequence"}), f"warp {esc(report.get('warp'))}", kind="stability"))
        pairs = [v for n in names for v in (sequences[n].get("per_pair") or []) if is_number(v)]
        if len(pairs) > 1:
            out.append(section_html("per-pair distribution", svg_bars.histogram(
                pairs, title="TS per frame pair", x_label="ts", attrs={"name": "distribution", "metric": "ts"}),
                kind="distribution"))
    return "".join(out)


WORKFLOW_VIEWS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "rpx.readiness": _readiness, "rpx.compare": _compare, "rpx.stability": _stability,
}
