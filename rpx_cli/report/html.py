"""``rpx report``: one self-contained HTML page from one or more JSON reports.

The page is built from the reports alone (a merged run renders like a single one), with
inline CSS and inline SVG (:mod:`rpx_cli.report.svg`) and no script: it makes no network
request (a Content-Security-Policy forbids any), needs no other file, and opens offline.
Each report gets a header (task, parameters, provenance), its gates, its headline metrics
with their directions, the pictures of its kind and its worst rows; several reports are
shown side by side, after a table of their headline metrics with the change from the first.
Every number drawn is also in a ``data-*`` attribute (see ``docs/reports.md``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rpx_cli.report import svg
from rpx_cli.report.render import HEADLINE
from rpx_cli.report.svg import data_list, datum, esc, short

WORST_N = 10
_BAND = re.compile(r"^(?P<metric>.+?)_(?P<band>(?:minus)?\d[\dp]*m_(?:(?:minus)?\d[\dp]*m|inf))$")
READINESS = ("summary.s_overall", "summary.primary_aggregate", "summary.delta_int", "summary.delta_rec",
             "summary.ts_score", "summary.sgc", "summary.latency_ms", "summary.params_m", "summary.flops_g")
_READINESS_WAY = {"ts_score": "higher", "sgc": "higher", "latency_ms": "lower", "params_m": "lower",
                  "flops_g": "lower", "actmem_gb": "lower"}
# the row metric the worst rows are sorted by (else the first row metric with a direction)
PRIMARY = {"depth": "absrel", "segmentation": "miou", "segmentation3d": "miou", "detection": "f1",
           "tracking": "mota", "grounding": "grounding_iou", "keypoints": "keypoint_acc",
           "pose": "pose_error_max_deg", "sparse-depth": "sparse_absrel", "nvs": "psnr",
           "saliency-mb": "iou", "coherence": "f_score", "detection3d": "tp"}

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
details{margin:8px 0}summary{cursor:pointer;font-weight:600}
.multiples{display:flex;flex-wrap:wrap;gap:6px}
svg.chart{max-width:100%;height:auto;display:block;margin:4px 0;font-size:11px}
svg .ax{stroke:var(--fg);fill:none;stroke-width:1}svg .grid{stroke:var(--grid);stroke-width:1}
svg text{fill:var(--fg)}svg .tick,svg .legend{fill:var(--fg);font-size:11px}
svg .label{fill:var(--muted);font-size:12px}svg .note{fill:var(--muted);font-size:11px}
svg .series{fill:none;stroke-width:2}svg .marker{fill:none;stroke:var(--fg);stroke-width:2}
svg .cell0{fill:var(--cell0)}svg .legendbg{fill:var(--bg);opacity:.85}
"""


def render_html(reports: Sequence[tuple[str, Mapping[str, Any]]], *, title: str | None = None) -> str:
    """The page for ``reports`` (``(name, report)`` pairs, shown in that order)."""
    kinds = sorted({_kind_name(report) for _, report in reports})
    heading = title or f"rpx report — {', '.join(kinds)}"
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
             "style-src 'unsafe-inline'; img-src data:\">",
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


# --- helpers ------------------------------------------------------------------------------


def _kind_name(report: Mapping[str, Any]) -> str:
    schema = str(report.get("schema") or "report")
    task = report.get("task")
    return f"{task}" if schema == "rpx.eval" and task else f"{schema.removeprefix('rpx.')}" + (
        f" ({task})" if task and schema not in ("rpx.compare",) and task != schema.removeprefix("rpx.") else "")


def _get(report: Mapping[str, Any], path: str) -> Any:
    node: Any = report
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def direction(report: Mapping[str, Any], path: str) -> str:
    info = report.get("metric_info") or {}
    name = path.rsplit(".", 1)[-1]
    if report.get("schema") == "rpx.readiness":
        if name in ("s_overall", "primary_aggregate") or name.startswith("s_"):
            return str(report.get("direction") or "none")
        return _READINESS_WAY.get(name, "none")
    match = _BAND.match(name)
    for key in (name, match["metric"] if match else None):
        if key and isinstance(info.get(key), Mapping):
            return str(info[key].get("direction", "none"))
    return "none"


_ARROW = {"higher": "↑ higher is better", "lower": "↓ lower is better", "none": ""}


def _section(title: str, body: str, note: str = "", *, kind: str = "") -> str:
    extra = f' data-section="{esc(kind)}"' if kind else ""
    text = f'<p class="note-text">{note}</p>' if note else ""
    return f"<section{extra}><h3>{esc(title)}</h3>{text}{body}</section>"


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, attrs: Sequence[str] | None = None,
           table: str = "") -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for i, row in enumerate(rows):
        extra = f" {attrs[i]}" if attrs else ""
        body.append(f"<tr{extra}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    name = f' data-table="{esc(table)}"' if table else ""
    return f"<table{name}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cell(value: Any, path: str = "") -> str:
    """A table cell's content: the short form shown, the full number in data-value."""
    extra = f' data-metric="{esc(path)}"' if path else ""
    if _number(value) or value is None:
        return f'<span data-value="{datum(value)}"{extra}>{short(value, 4)}</span>'
    return esc(value)


# --- the page -------------------------------------------------------------------------------


def _article(index: int, name: str, report: Mapping[str, Any]) -> str:
    schema = report.get("schema")
    kind = _kind_name(report)
    parts = [f'<article data-report="{index}" data-schema="{esc(schema)}" data-task="{esc(report.get("task"))}">',
             f"<h2>{esc(kind)}</h2><div class=\"muted\"><code>{esc(name)}</code></div>",
             f'<p>{_summary(report)}</p>', _gates(report), _headline(report)]
    view = _VIEWS.get(str(report.get("task")) if schema == "rpx.eval" else str(schema), _generic)
    if schema == "rpx.eval" and report.get("task") not in _VIEWS:
        view = _generic
    parts.append(view(report))
    if schema not in ("rpx.compare", "rpx.readiness"):
        parts.append(_worst_rows(report))
    parts.append(_all_metrics(report))
    parts.append(_provenance(report))
    parts.append("</article>")
    return "".join(parts)


def _summary(report: Mapping[str, Any]) -> str:
    if report.get("schema") == "rpx.compare":
        counts = report.get("summary") or {}
        return (f"{esc(_get(report, 'base.path'))} → {esc(_get(report, 'new.path'))}: "
                f'<span class="good">{counts.get("improved", 0)} improved</span>, '
                f'<span class="bad">{counts.get("regressed", 0)} regressed</span>, '
                f"{counts.get('unchanged', 0)} unchanged.")
    bits = []
    if report.get("n_pairs") is not None:
        bits.append(f"{report['n_pairs']} pairs")
    unpaired = report.get("unpaired") or {}
    if unpaired:
        n = sum(len(v) for v in unpaired.values() if isinstance(v, list))
        bits.append(f"{n} unpaired" + (f" (skipped by --missing {esc(_get(report, 'params.missing'))})"
                                       if n and _get(report, "params.missing") else ""))
    if "errors" in report and isinstance(report.get("errors"), list):
        bits.append(f"{len(report['errors'])} unreadable pair(s) skipped")
    if report.get("state"):
        bits.append("a --shard part (merge the parts with rpx merge for the full report)")
    skipped = _get(report, "params.skipped_metrics")
    if skipped:
        bits.append(f"not computed: {esc(', '.join(skipped))} (--metrics)")
    return esc(" · ".join(bits)) if bits else ""


def _gates(report: Mapping[str, Any]) -> str:
    gates = report.get("gates") or []
    if not gates:
        return ""
    rows, attrs = [], []
    for gate in gates:
        passed = bool(gate.get("passed"))
        rows.append((f"<code>{esc(gate.get('expr'))}</code>", _cell(gate.get("value")),
                     f'<span class="{"pass" if passed else "fail"}">{"✓ pass" if passed else "✗ FAIL"}</span>',
                     esc(gate.get("message", ""))))
        attrs.append(f'data-gate="{esc(gate.get("expr"))}" data-passed="{datum(passed)}"')
    failed = sum(1 for g in gates if not g.get("passed"))
    note = (f'<span class="fail">{failed} of {len(gates)} gate(s) failed</span>' if failed
            else f'<span class="pass">all {len(gates)} gate(s) passed</span>')
    return _section("gates", _table(["gate", "value", "result", ""], rows, attrs=attrs, table="gates"),
                    note, kind="gates")


def _headline_paths(report: Mapping[str, Any]) -> list[str]:
    from rpx_cli.report.render import headline

    preferred = HEADLINE.get(str(report.get("task")), ()) if report.get("schema") == "rpx.eval" else ()
    if report.get("schema") == "rpx.readiness":
        preferred = READINESS
    paths = [p for p in preferred if _number(_get(report, p))]
    if len(paths) < 4:
        for path, value in headline(report):
            last = path.rsplit(".", 1)[-1]
            if path in paths or last.startswith("n_") or last in ("schema_version",) or path.count(".") > 1:
                continue
            if _number(value) or value is None:
                paths.append(path)
            if len(paths) >= 8:
                break
    return paths


def _headline(report: Mapping[str, Any]) -> str:
    if report.get("schema") == "rpx.compare":
        return ""
    cards = []
    for path in _headline_paths(report):
        value = _get(report, path)
        way = direction(report, path)
        cards.append(f'<div class="card" data-metric="{esc(path)}" data-value="{datum(value)}" '
                     f'data-direction="{way}"><div class="v">{short(value, 4)}</div>'
                     f'<div class="k">{esc(path)}</div><div class="d">{_ARROW.get(way, "")}</div></div>')
    if not cards:
        return ""
    note = "aggregate = mean over rows; dataset = pooled over everything" if report.get("aggregate") else ""
    return _section("headline metrics", f'<div class="cards">{"".join(cards)}</div>', note, kind="headline")


def _side_by_side(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    first = reports[0][1]
    paths = _headline_paths(first)
    for _, report in reports[1:]:
        paths += [p for p in _headline_paths(report) if p not in paths]
    rows, attrs = [], []
    for path in paths:
        values = [_get(report, path) for _, report in reports]
        way = direction(first, path)
        cells = [f"<code>{esc(path)}</code> <span class=\"muted\">{_ARROW.get(way, '')[:1]}</span>"]
        base = values[0]
        for value in values:
            text = _cell(value, path)
            if value is not base and _number(value) and _number(base) and value != base:
                better = (value > base) == (way == "higher") if way in ("higher", "lower") else None
                tone = "" if better is None else (' class="good"' if better else ' class="bad"')
                text += f' <span{tone}>({"+" if value > base else ""}{short(value - base)})</span>'
            cells.append(text)
        rows.append(cells)
        attrs.append(f'data-metric="{esc(path)}"')
    columns = ["metric", *(f"{i + 1}: {name}" for i, (name, _) in enumerate(reports))]
    return _section("side by side", _table(columns, rows, attrs=attrs, table="side-by-side"),
                    "headline metrics of every report; in brackets the change from the first "
                    "(blue better, orange worse given the metric's direction)", kind="side-by-side")


def _all_metrics(report: Mapping[str, Any]) -> str:
    from rpx_cli.report.render import headline

    if report.get("schema") == "rpx.compare":
        return ""
    rows = []
    for path, value in headline(report):
        rows.append((f"<code>{esc(path)}</code>", _cell(value, path), _ARROW.get(direction(report, path), "")))
    if not rows:
        return ""
    return (f"<details><summary>all {len(rows)} figures</summary>"
            f"{_table(['metric', 'value', 'better'], rows, table='metrics')}</details>")


def _provenance(report: Mapping[str, Any]) -> str:
    prov = report.get("run_provenance") or {}
    params = report.get("params") or {}
    rows = [(f"<code>{esc(k)}</code>", f'<span class="code">{esc(_plain(v))}</span>') for k, v in sorted(params.items())]
    body = [_table(["parameter", "value"], rows, table="params")] if rows else []
    inputs = prov.get("inputs") or {}
    if inputs:
        body.append(_table(["input", "path", "kind", "files", "sha256"], [
            (esc(name), f'<span class="code">{esc(i.get("path"))}</span>', esc(i.get("kind")), _cell(i.get("n_files")),
             f'<span class="code" data-sha256="{esc(i.get("sha256"))}">{esc(i.get("sha256"))}</span>')
            for name, i in sorted(inputs.items())], table="inputs"))
    git = prov.get("git")
    facts = [("command", f"<code>{esc(' '.join(prov.get('argv') or []))}</code>"),
             ("tool", esc(f"{_get(prov, 'tool.name')} {_get(prov, 'tool.version')}")),
             ("git", esc(f"{git.get('commit')}{' (dirty)' if git.get('dirty') else ''}") if git else "not a git checkout"),
             ("started", esc(prov.get("started_at"))), ("finished", esc(prov.get("finished_at"))),
             ("duration", esc(f"{prov.get('duration_s')} s")),
             ("environment", esc(", ".join(f"{k} {v}" for k, v in sorted((prov.get("environment") or {}).items()))))]
    body.append(_table(["run", ""], facts, table="run"))
    return f"<details open><summary>parameters and provenance</summary>{''.join(body)}</details>"


def _plain(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_plain(v)}" for k, v in value.items())
    return "null" if value is None else str(value)


def _primary(report: Mapping[str, Any]) -> tuple[str | None, str]:
    rows = report.get("rows") or []
    metric = (report.get("strata") or {}).get("primary_metric") or PRIMARY.get(str(report.get("task")))
    if rows and (metric is None or metric not in rows[0]):
        info = report.get("metric_info") or {}
        metric = next((k for k in rows[0] if k in info and info[k].get("direction") in ("higher", "lower")
                       and _number(rows[0][k])), None)
    return metric, direction(report, metric) if metric else "none"


def _worst_rows(report: Mapping[str, Any]) -> str:
    rows = report.get("rows") or []
    if not rows:
        return ""
    if report.get("task") == "classification" and "correct" in rows[0]:
        # wrong first, most confident first: the mistakes a model is surest of
        ranked = sorted((r for r in rows if _number(r.get("correct"))),
                        key=lambda r: (r["correct"], -(r.get("confidence") or 0.0)))
        metric, way = "correct", "higher"
    else:
        metric, way = _primary(report)
        if metric is None:
            return ""
        scored = [r for r in rows if _number(r.get(metric))]
        ranked = sorted(scored, key=lambda r: r[metric], reverse=way == "lower")
    worst = ranked[:WORST_N]
    if not worst:
        return ""
    key = "stem" if "stem" in worst[0] else next(iter(worst[0]))
    others = [k for k, v in worst[0].items() if _number(v) and k != metric][:5]
    table = _table([key, metric, *others],
                   [(f'<code>{esc(r.get(key))}</code>', _cell(r.get(metric), metric),
                     *(_cell(r.get(k), k) for k in others)) for r in worst],
                   attrs=[f'data-stem="{esc(r.get(key))}" data-value="{datum(r.get(metric))}"' for r in worst],
                   table="worst")
    return _section(f"worst {len(worst)} of {len(rows)} rows by {metric}", table,
                    f"sorted by {esc(metric)} ({esc(_ARROW.get(way, ''))}): the samples to look at first",
                    kind="worst")


# --- kinds -----------------------------------------------------------------------------------


def _confusion(confusion: Mapping[str, Any], what: str) -> str:
    labels, matrix = confusion.get("labels"), confusion.get("matrix")
    if not labels or not matrix:
        return ""
    columns = confusion.get("columns") or labels
    counts = svg.heatmap(labels, columns, matrix, title=f"{what} confusion matrix (counts)",
                         normalise_rows=False, attrs={"name": "confusion-counts"})
    shares = svg.heatmap(labels, columns, matrix, title=f"{what} confusion matrix (row-normalised)",
                         normalise_rows=True, attrs={"name": "confusion-rows"})
    return _section("confusion matrix", counts + shares,
                    "<b>rows are ground truth, columns are predictions</b>; the second matrix divides each "
                    "row by its total (recall on the diagonal)", kind="confusion")


def _per_class_bars(per_class: Mapping[str, Any], field: str, *, title: str, way: str,
                    domain: tuple[float, float] | None = (0.0, 1.0), name: str = "per-class") -> str:
    entries = [(label, entry.get(field) if isinstance(entry, Mapping) else None)
               for label, entry in per_class.items()]
    if not any(_number(v) for _, v in entries):
        return ""
    # the worst first: where it fails
    entries.sort(key=lambda e: (e[1] is None, e[1] if way != "lower" else -(e[1] or 0.0)))
    notes = [f"n={entry.get('support')}" if isinstance(entry, Mapping) and "support" in entry else ""
             for entry in (per_class[label] for label, _ in entries)]
    return svg.bar_chart([label for label, _ in entries], [v for _, v in entries], title=title,
                         value_label=field, domain=domain, notes=notes, attrs={"name": name, "field": field})


def _detection(report: Mapping[str, Any]) -> str:
    dataset = report.get("dataset") or {}
    out = []
    coco = dataset.get("coco") or {}
    curves = coco.get("curves")
    if curves:
        recall = curves["recall"]
        out.append(_section("precision–recall", svg.line_chart(
            [{"name": "IoU 0.5", "y": curves["iou50"]["overall"]["precision"]},
             {"name": "IoU 0.5:0.95 (mean)", "y": curves["iou50_95"]["overall"]["precision"], "dash": "6 3"}],
            x=recall, title="precision–recall, mean over classes with GT", x_label="recall",
            y_label="precision (interpolated)", attrs={"name": "pr-overall"}),
            "COCO's 101-point interpolated curves (area all, 100 detections per image); the area under "
            "each is AP50 and AP", kind="pr"))
    if coco.get("per_class"):
        out.append(_section("where it fails: AP per class", _per_class_bars(
            coco["per_class"], "AP", title="COCO AP per class (IoU 0.5:0.95), worst first", way="higher",
            name="ap-per-class"), "n/a: no GT box of the class", kind="ap-per-class"))
    pooled = dataset.get("pooled") or {}
    curve = pooled.get("by_confidence")
    if curve:
        threshold = _get(report, "params.conf_threshold")
        markers = [{"x": threshold, "y": pooled.get(k), "label": f"{k} {short(pooled.get(k))}"}
                   for k in ("precision", "recall", "f1")] if threshold is not None else []
        out.append(_section("precision, recall and F1 against confidence", svg.line_chart(
            [{"name": "precision", "y": curve["precision"]}, {"name": "recall", "y": curve["recall"], "dash": "6 3"},
             {"name": "F1", "y": curve["f1"], "dash": "2 2"}], x=curve["conf_threshold"],
            title="pooled P/R/F1 against the confidence threshold", x_label="confidence threshold (score >=)",
            y_label="pooled value", markers=markers, attrs={"name": "prf-confidence"}),
            f"rings: the operating point (--conf-threshold {esc(short(threshold))}, IoU "
            f"{esc(short(_get(report, 'params.iou_threshold')))}), dataset.pooled", kind="prf"))
    if dataset.get("confusion"):
        out.append(_confusion(dataset["confusion"], "detection (Aquarium: background last)"))
    errors = dataset.get("errors")
    if errors:
        names = ["cls", "loc", "both", "dupe", "bkg", "miss", "fp", "fn"]
        meaning = {"cls": "wrong class", "loc": "poor box", "both": "class and box", "dupe": "duplicate",
                   "bkg": "background", "miss": "missed GT", "fp": "all false positives",
                   "fn": "all false negatives"}
        counts = errors.get("counts") or {}
        out.append(_section("error breakdown (TIDE)", svg.bar_chart(
            [f"{n} — {meaning[n]}" for n in names], [errors.get(n) for n in names],
            title="TIDE: AP50 gained by fixing each error type", value_label="dAP (0–1 scale)",
            notes=[f"{counts[n]} errors" if n in counts else "" for n in names],
            colours=[svg.PALETTE[5]] * 6 + [svg.PALETTE[3]] * 2, attrs={"name": "tide"}),
            f"IoU {esc(short(errors.get('iou_threshold')))}, background {esc(short(errors.get('background_threshold')))}; "
            f"base AP50 (TIDE's matching) {esc(short(errors.get('ap50')))}; the last two are not a "
            "partition: fixing every false positive / false negative", kind="tide"))
    elif "errors" in (_get(report, "params.skipped_metrics") or []):
        out.append(_section("error breakdown (TIDE)", "", "not computed: run with <code>--metrics "
                            "rows,pooled,confusion,coco,errors</code> to add it", kind="tide"))
    if curves:
        per_class = curves["iou50"]["per_class"]
        ap = {k: (v or {}).get("AP") for k, v in (coco.get("per_class") or {}).items()}
        order = sorted(per_class, key=lambda k: (ap.get(k) is None, ap.get(k) or 0.0))
        charts = [svg.line_chart(
            [{"name": "IoU 0.5", "y": per_class[k]["precision"]},
             {"name": "0.5:0.95", "y": curves["iou50_95"]["per_class"][k]["precision"], "dash": "6 3"}],
            x=curves["recall"], x_attr=False, title=f"{k}: precision–recall",
            x_label=f"recall — {k} (AP {short(ap.get(k))})", y_label="precision", width=250, height=190,
            legend=False, attrs={"name": "pr-class", "class": k}) for k in order]
        out.append(_section("precision–recall per class", f'<div class="multiples">{"".join(charts)}</div>',
                            "worst AP first; solid IoU 0.5, dashed the mean over 0.5:0.95; recall on x from "
                            "0 to 1 (the 101 points of dataset.coco.curves.recall)", kind="pr-per-class"))
    return "".join(out)


def _segmentation(report: Mapping[str, Any]) -> str:
    dataset = report.get("dataset") or {}
    out = []
    if dataset.get("per_class"):
        out.append(_section("where it fails: IoU per class", _per_class_bars(
            dataset["per_class"], "iou", title="IoU per class (pooled), worst first", way="higher",
            name="iou-per-class"), "n = GT pixels (support); n/a: no GT support", kind="iou-per-class"))
    out.append(_bands(report))
    if dataset.get("confusion"):
        out.append(_confusion(dataset["confusion"], "segmentation"))
    out.append(_distribution(report))
    return "".join(out)


def _bands(report: Mapping[str, Any]) -> str:
    """Every ``<metric>_<band>`` key of ``dataset`` (else ``aggregate``): one bar chart per
    metric over the bands (depth bands, 3D ranges)."""
    for section in ("dataset", "aggregate"):
        values = report.get(section) or {}
        groups: dict[str, dict[str, Any]] = {}
        for key, value in values.items():
            match = _BAND.match(key)
            if match and (_number(value) or value is None) and not match["metric"].startswith("n_"):
                groups.setdefault(match["metric"], {})[match["band"]] = value
        if groups:
            break
    if not groups:
        return ""
    charts = []
    for metric, bands in list(groups.items())[:6]:
        way = direction(report, metric)
        charts.append(svg.bar_chart(list(bands), list(bands.values()), title=f"{metric} per band ({section})",
                                    value_label=f"{metric} ({_ARROW.get(way, '') or 'no direction'})",
                                    domain=None, width=420, attrs={"name": "bands", "metric": metric}))
    return _section(f"per band ({section})", f'<div class="multiples">{"".join(charts)}</div>',
                    "bands are [min, max) of the GT (depth: metres; 3D: range from the sensor)", kind="bands")


def _distribution(report: Mapping[str, Any], metric: str | None = None) -> str:
    rows = report.get("rows") or []
    if metric is None:
        metric, _ = _primary(report)
    if not rows or metric is None:
        return ""
    values = [r.get(metric) for r in rows if _number(r.get(metric))]
    if len(values) < 2:
        return ""
    return _section(f"per-row distribution of {metric}", svg.histogram(
        values, title=f"{metric} over {len(values)} rows", x_label=metric, attrs={"name": "distribution",
                                                                                  "metric": metric}),
        f"{len(rows) - len(values)} row(s) without a value left out", kind="distribution")


def _depth(report: Mapping[str, Any]) -> str:
    out = [_bands(report), _distribution(report, "absrel")]
    if (report.get("rows") or [{}])[0].get("rmse") is not None:
        out.append(_distribution(report, "rmse"))
    return "".join(out)


def _tracking(report: Mapping[str, Any]) -> str:
    rows = report.get("rows") or []
    out = []
    if rows:
        keys = [k for k in ("hota", "mota", "idf1", "motp", "deta", "assa", "idsw", "fp", "fn", "num_gt")
                if k in rows[0]]
        table = _table(["sequence", *keys], [(f"<code>{esc(r.get('stem'))}</code>", *(_cell(r.get(k), k) for k in keys))
                                             for r in rows],
                       attrs=[f'data-stem="{esc(r.get("stem"))}"' for r in rows], table="sequences")
        out.append(_section("per sequence", table, "dataset = summed over sequences (not a mean of rows)",
                            kind="sequences"))
        out.append(_section("HOTA and MOTA per sequence", svg.grouped_bars(
            [str(r.get("stem")) for r in rows], ["hota", "mota", "idf1"],
            [[r.get(k) for r in rows] for k in ("hota", "mota", "idf1")], title="per-sequence scores",
            y_label="score", x_label="sequence", domain=None, attrs={"name": "sequences"}), kind="sequence-bars"))
    alpha = _get(report, "dataset.hota_alpha")
    if isinstance(alpha, Mapping) and alpha.get("alpha"):
        series = [{"name": k, "y": alpha[k]} for k in ("hota", "deta", "assa") if isinstance(alpha.get(k), list)]
        out.append(_section("HOTA against the localisation threshold α", svg.line_chart(
            series, x=alpha["alpha"], x_domain=(0.0, 1.0), title="HOTA, DetA, AssA against α",
            x_label="α (IoU threshold)", y_label="score", attrs={"name": "hota-alpha"}), kind="hota-alpha"))
    return "".join(out)


def _classification(report: Mapping[str, Any]) -> str:
    dataset = report.get("dataset") or {}
    out = []
    calibration = dataset.get("calibration")
    if isinstance(calibration, Mapping) and calibration.get("confidence"):
        conf, acc = calibration["confidence"], calibration["accuracy"]
        counts = calibration.get("count") or []
        xs = [c for c in conf]
        markers = [{"x": c, "y": a, "label": ""} for c, a in zip(conf, acc, strict=False)
                   if c is not None and a is not None]
        chart = svg.line_chart(
            [{"name": "perfect calibration", "x": [0.0, 1.0], "y": [0.0, 1.0], "dash": "4 4",
              "colour": svg.NEUTRAL},
             {"name": "model", "x": xs, "y": acc}], title="reliability diagram",
            x_label="mean confidence in the bin", y_label="accuracy in the bin", markers=markers,
            attrs={"name": "reliability", "counts": data_list(counts)})
        out.append(_section("calibration", chart, f"ECE {esc(short(dataset.get('ece')))} over "
                            f"{esc(calibration.get('n_scored'))} scored samples; a point per non-empty bin "
                            f"({len(counts)} equal-width bins)", kind="calibration"))
    if dataset.get("per_class"):
        field = "f1" if any(isinstance(e, Mapping) and "f1" in e for e in dataset["per_class"].values()) else "ap"
        out.append(_section(f"where it fails: {field} per class", _per_class_bars(
            dataset["per_class"], field, title=f"{field} per class, worst first", way="higher",
            name="f1-per-class"), "n = support", kind="per-class"))
    if dataset.get("confusion"):
        out.append(_confusion(dataset["confusion"], "classification"))
    return "".join(out)


def _generic(report: Mapping[str, Any]) -> str:
    """Any other kind (a plugin task too): per-class bars, a confusion matrix, bands and the
    distribution of the primary row metric, wherever the report has them."""
    dataset = report.get("dataset") or {}
    out = []
    per_class = dataset.get("per_class")
    if isinstance(per_class, Mapping) and per_class:
        fields = [k for e in per_class.values() if isinstance(e, Mapping) for k, v in e.items() if _number(v)]
        field = next((f for f in ("iou", "AP", "ap", "f1", "recall") if f in fields), fields[0] if fields else None)
        if field:
            way = direction(report, field)
            out.append(_section(f"{field} per class", _per_class_bars(
                per_class, field, title=f"{field} per class, worst first", way=way, domain=None,
                name="per-class"), kind="per-class"))
    confusion = dataset.get("confusion")
    if isinstance(confusion, Mapping):
        out.append(_confusion(confusion, str(report.get("task") or "")))
    out.append(_bands(report))
    out.append(_distribution(report))
    return "".join(out)


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
        out.append(_section("phase chart", svg.grouped_bars(
            list(PHASES), [*DIFFICULTIES, "S_p"], values, title=f"{metric} per phase and difficulty",
            y_label=f"{metric} ({_ARROW.get(str(way), '')})", x_label="phase", domain=None,
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
        out.append(_section(title, _table(columns, body, table=title.split(" ")[0]), kind="readiness"))
    return "".join(out)


def _compare(report: Mapping[str, Any]) -> str:
    metrics = [m for m in report.get("metrics") or [] if m.get("delta") is not None]
    out = []
    order = {"regressed": 0, "improved": 1}
    metrics.sort(key=lambda m: (order.get(m.get("status"), 2), m["metric"]))
    shown = [m for m in metrics if m.get("status") in ("regressed", "improved")] or metrics
    items = [{"label": m["metric"], "delta": m["delta"],
              "low": (m.get("bootstrap") or {}).get("ci95", [None, None])[0],
              "high": (m.get("bootstrap") or {}).get("ci95", [None, None])[1], "status": m.get("status")}
             for m in shown[:80]]
    if items:
        out.append(_section("what changed", svg.interval_chart(
            items, title="delta (new − base) per metric", x_label="delta (new − base)",
            attrs={"name": "deltas"}), f"{len(shown)} metric(s) changed{', first 80 shown' if len(shown) > 80 else ''}"
            "; whiskers: paired bootstrap 95% interval over the shared stems (per-row metrics); "
            "▲ better, ▼ worse given the metric's direction", kind="deltas"))
    rows = [(f"<code>{esc(m['metric'])}</code>", _cell(m.get("base")), _cell(m.get("new")), _cell(m.get("delta")),
             f'<span class="{ {"improved": "good", "regressed": "bad"}.get(m.get("status"), "") }">'
             f'{esc(m.get("status"))}</span>',
             esc("[" + ", ".join(short(v) for v in m["bootstrap"]["ci95"]) + "]" if m.get("bootstrap") else ""))
            for m in metrics]
    out.append(_section("every metric", _table(["metric", "base", "new", "delta", "", "95% CI"], rows,
                                               attrs=[f'data-metric="{esc(m["metric"])}" data-delta="{datum(m["delta"])}"'
                                                      for m in metrics], table="compare"), kind="compare-table"))
    gates = report.get("gates") or []
    if gates:
        out.append(_gates({"gates": gates}))
    return "".join(out)


def _stability(report: Mapping[str, Any]) -> str:
    sequences = report.get("sequences") or {}
    out = []
    if sequences:
        names = sorted(sequences)
        out.append(_section("temporal stability per sequence", svg.bar_chart(
            names, [sequences[n].get("ts_score") for n in names], title="TS per sequence", value_label="ts_score",
            domain=None, notes=[f"{sequences[n].get('num_pairs')} pairs" for n in names],
            attrs={"name": "ts-per-sequence"}), f"warp {esc(report.get('warp'))}", kind="stability"))
        pairs = [v for n in names for v in (sequences[n].get("per_pair") or []) if _number(v)]
        if len(pairs) > 1:
            out.append(_section("per-pair distribution", svg.histogram(
                pairs, title="TS per frame pair", x_label="ts", attrs={"name": "distribution", "metric": "ts"}),
                kind="distribution"))
    return "".join(out)


_VIEWS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "detection": _detection, "segmentation": _segmentation, "depth": _depth, "tracking": _tracking,
    "classification": _classification, "rpx.readiness": _readiness, "rpx.compare": _compare,
    "rpx.stability": _stability,
}
