"""The sections every page of :mod:`rpx_cli.report.html` gives a report, whatever its kind:
the summary line, its gates, the headline cards with their directions, the worst rows, every
figure (collapsed), and the parameters and provenance."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.report.declared import rank_metric, row_labels
from rpx_cli.report.html_blocks import (
    ARROW,
    cell_html,
    direction,
    is_number,
    section_html,
    table_html,
)
from rpx_cli.report.markup import datum, esc, short
from rpx_cli.report.render import lookup

WORST_N = 10


def summary_text(report: Mapping[str, Any]) -> str:
    if report.get("schema") == "rpx.compare":
        counts = report.get("summary") or {}
        return (f"{esc(lookup(report, 'base.path'))} → {esc(lookup(report, 'new.path'))}: "
                f'<span class="bad">{counts.get("regressed", 0)} regressed '
                f'({counts.get("significant_regressed", 0)} significant)</span>, '
                f'<span class="good">{counts.get("improved", 0)} improved '
                f'({counts.get("significant_improved", 0)} significant)</span>, '
                f"{counts.get('no_significant_change', 0)} no significant change (moved within "
                "the 95% interval), "
                f"{counts.get('unchanged', 0)} unchanged (a metric's mean of rows and pooled value "
                "count once; significant: the 95% interval excludes 0).")
    bits = []
    if report.get("n_pairs") is not None:
        bits.append(f"{report['n_pairs']} pairs")
    unpaired = report.get("unpaired") or {}
    if unpaired:
        n = sum(len(v) for v in unpaired.values() if isinstance(v, list))
        bits.append(f"{n} unpaired" + (f" (skipped by --missing {esc(lookup(report, 'params.missing'))})"
                                       if n and lookup(report, "params.missing") else ""))
    if "errors" in report and isinstance(report.get("errors"), list):
        bits.append(f"{len(report['errors'])} unreadable pair(s) skipped")
    if report.get("state"):
        bits.append("a --shard part (merge the parts with rpx merge for the full report)")
    skipped = lookup(report, "params.skipped_metrics")
    if skipped:
        bits.append(f"not computed: {esc(', '.join(skipped))} (--metrics)")
    return esc(" · ".join(bits)) if bits else ""


def gates_section(report: Mapping[str, Any]) -> str:
    gates = report.get("gates") or []
    if not gates:
        return ""
    rows, attrs = [], []
    for gate in gates:
        passed = bool(gate.get("passed"))
        rows.append((f"<code>{esc(gate.get('expr'))}</code>", cell_html(gate.get("value")),
                     f'<span class="{"pass" if passed else "fail"}">{"✓ pass" if passed else "✗ FAIL"}</span>',
                     esc(gate.get("message", ""))))
        attrs.append(f'data-gate="{esc(gate.get("expr"))}" data-passed="{datum(passed)}"')
    failed = sum(1 for g in gates if not g.get("passed"))
    note = (f'<span class="fail">{failed} of {len(gates)} gate(s) failed</span>' if failed
            else f'<span class="pass">all {len(gates)} gate(s) passed</span>')
    return section_html("gates", table_html(["gate", "value", "result", ""], rows, attrs=attrs, table="gates"),
                        note, kind="gates")


def card_paths(report: Mapping[str, Any]) -> list[str]:
    """The figures the page shows as headline cards: the headline's paths the report holds
    (a number, or null: ``n/a``, as LVIS' APf of a set without frequent categories), filled
    up to four (and at most eight) from the report's top-level figures."""
    from rpx_cli.report import render

    paths = [p for p in render.headline_paths(report) if is_number(lookup(report, p)) or _holds_null(report, p)]
    if len(paths) < 4:
        for path, value in render.figures(report):
            last = path.rsplit(".", 1)[-1]
            if path in paths or last.startswith("n_") or last in ("schema_version",) or path.count(".") > 1:
                continue
            if is_number(value) or value is None:
                paths.append(path)
            if len(paths) >= 8:
                break
    return paths


def _holds_null(report: Mapping[str, Any], path: str) -> bool:
    """Whether the dotted ``path`` is in ``report`` with the value null."""
    parent, _, key = path.rpartition(".")
    node = lookup(report, parent) if parent else report
    return isinstance(node, Mapping) and key in node and node[key] is None


def headline_section(report: Mapping[str, Any]) -> str:
    if report.get("schema") == "rpx.compare":
        return ""
    cards = []
    for path in card_paths(report):
        value = lookup(report, path)
        way = direction(report, path)
        cards.append(f'<div class="card" data-metric="{esc(path)}" data-value="{datum(value)}" '
                     f'data-direction="{way}"><div class="v">{short(value, 4)}</div>'
                     f'<div class="k">{esc(path)}</div><div class="d">{ARROW.get(way, "")}</div></div>')
    if not cards:
        return ""
    note = "aggregate = mean over rows; dataset = pooled over everything" if report.get("aggregate") else ""
    return section_html("headline metrics", f'<div class="cards">{"".join(cards)}</div>', note, kind="headline")


def all_metrics_section(report: Mapping[str, Any]) -> str:
    from rpx_cli.report.render import figures

    if report.get("schema") == "rpx.compare":
        return ""
    rows = []
    for path, value in figures(report):
        rows.append((f"<code>{esc(path)}</code>", cell_html(value, path), ARROW.get(direction(report, path), "")))
    if not rows:
        return ""
    return (f"<details><summary>all {len(rows)} figures</summary>"
            f"{table_html(['metric', 'value', 'better'], rows, table='metrics')}</details>")


def provenance_section(report: Mapping[str, Any]) -> str:
    prov = report.get("run_provenance") or {}
    shown = param_values(report)
    rows = [(f"<code>{esc(k)}</code>", f'<span class="code">{esc(shown[k])}</span>') for k in sorted(shown)]
    body = [table_html(["parameter", "value"], rows, table="params")] if rows else []
    inputs = prov.get("inputs") or {}
    if inputs:
        body.append(table_html(["input", "path", "kind", "files", "sha256"], [
            (esc(name), f'<span class="code">{esc(i.get("path"))}</span>', esc(i.get("kind")), cell_html(i.get("n_files")),
             f'<span class="code" data-sha256="{esc(i.get("sha256"))}">{esc(i.get("sha256"))}</span>')
            for name, i in sorted(inputs.items())], table="inputs"))
    git = prov.get("git")
    facts = [("command", f"<code>{esc(' '.join(prov.get('argv') or []))}</code>"),
             ("tool", esc(f"{lookup(prov, 'tool.name')} {lookup(prov, 'tool.version')}")),
             ("git", esc(f"{git.get('commit')}{' (dirty)' if git.get('dirty') else ''}") if git else "not a git checkout"),
             ("started", esc(prov.get("started_at"))), ("finished", esc(prov.get("finished_at"))),
             ("duration", esc(f"{prov.get('duration_s')} s")),
             ("environment", esc(", ".join(f"{k} {v}" for k, v in sorted((prov.get("environment") or {}).items()))))]
    body.append(table_html(["run", ""], facts, table="run"))
    return f"<details open><summary>parameters and provenance</summary>{''.join(body)}</details>"


def param_values(report: Mapping[str, Any]) -> dict[str, str]:
    """Each of the report's ``params`` as a value, the way the JSON has it (``true``,
    ``null``, ``[0.5, 1, 2, 4]``, ``{barrier: [AVE, AAE]}``: no Python ``True``/``None``, no
    flattening that hides where one item ends), its range bands as their labels (``[0, 20) m,
    [20, inf) m``)."""
    from rpx_cli.report import declared

    params = report.get("params") or {}
    shown = {key: plain(value) for key, value in params.items()}
    key = declared.band_param(report)
    bands = declared.bands(report)
    if key in shown and bands:
        shown[key] = ", ".join(band.label for band in bands)
    return shown


def plain(value: Any) -> str:
    """A parameter's value for people: JSON's words and brackets, strings unquoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(plain(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {plain(v)}" for k, v in value.items()) + "}"
    return str(value)


def worst_rows_section(report: Mapping[str, Any]) -> str:
    rows = report.get("rows") or []
    if not rows:
        return ""
    metric, way = rank_metric(report)
    if metric is None:
        return ""
    ranked = worst_first([r for r in rows if is_number(r.get(metric))], metric, way)
    worst = ranked[:WORST_N]
    if not worst:
        return ""
    key = "stem" if "stem" in worst[0] else next(iter(worst[0]))
    others = [k for k, v in worst[0].items() if is_number(v) and k != metric][:5]
    labels = row_labels(report)
    if labels and not all(k in worst[0] for k in labels):
        labels = None
    head = ["true → predicted"] if labels else []

    def named(row: Mapping[str, Any]) -> list[str]:
        if not labels:
            return []
        true, predicted = (row.get(k) for k in labels)
        return [f'<span data-true="{esc(true)}" data-predicted="{esc(predicted)}">{esc(true)} → '
                f'{esc("(none)" if predicted is None else predicted)}</span>']

    table = table_html([key, *head, metric, *others],
                       [(f'<code>{esc(r.get(key))}</code>', *named(r), cell_html(r.get(metric), metric),
                         *(cell_html(r.get(k), k) for k in others)) for r in worst],
                       attrs=[f'data-stem="{esc(r.get(key))}" data-value="{datum(r.get(metric))}"' for r in worst],
                       table="worst")
    return section_html(f"worst {len(worst)} of {len(rows)} rows by {metric}", table,
                        f"sorted by {esc(metric)} ({esc(ARROW.get(way, ''))}): the samples to look at first",
                        kind="worst")


def worst_first(rows: list[Mapping[str, Any]], metric: str, way: str) -> list[Mapping[str, Any]]:
    """``rows`` by ``metric``, the worst first given its direction (``higher`` is better:
    the lowest first); among equal values a row's ``confidence``, highest first (the
    mistakes a model is surest of), then the rows' order."""
    sign = -1.0 if way == "lower" else 1.0

    def key(row: Mapping[str, Any]) -> tuple[float, float]:
        confidence = row.get("confidence")
        return sign * row[metric], -(confidence if is_number(confidence) else 0.0)

    return sorted(rows, key=key)
