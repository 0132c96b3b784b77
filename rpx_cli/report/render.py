"""Human views of any report: headline figures, a one-line summary, Markdown."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rpx_cli.deploy.figures import READINESS_HEADLINE, STABILITY_HEADLINE
from rpx_cli.report import declared

_SKIP_TOP = {"schema_version", "n_pairs", "block_size", "threshold"}


def _scalars(prefix: str, value: Any, out: list[tuple[str, Any]], depth: int = 0) -> None:
    if isinstance(value, Mapping):
        if depth >= 3:
            return
        for key in sorted(value):
            if str(key).startswith("curves"):  # chart data (curves_<band> too), not figures
                continue
            _scalars(f"{prefix}.{key}" if prefix else str(key), value[key], out, depth + 1)
    elif value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        out.append((prefix, value))


def figures(report: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The report's metrics as (dotted path, value) pairs: its top-level figures (those its
    headline names first, in that order; the rest alphabetical), then its sections'."""
    lead = headline_paths(report)
    found: list[tuple[str, Any]] = []
    for key in sorted(report, key=lambda k: (lead.index(k) if k in lead else len(lead), k)):
        value = report[key]
        if key in _SKIP_TOP or isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) or (value is None and key.endswith("iou")):
            found.append((key, value))
    for section in ("aggregate", "dataset", "totals"):
        if isinstance(report.get(section), Mapping):
            _scalars(section, report[section], found)
    return found


def headline_paths(report: Mapping[str, Any]) -> tuple[str, ...]:
    """The dotted paths a reader looks at first: what the report's task declares, or for a
    workflow's report what the workflow declares (``rpx stability``: its TS score; ``rpx
    readiness``: its summary's scores and cost, :mod:`rpx_cli.deploy.figures`)."""
    if report.get("schema") == "rpx.stability":
        return STABILITY_HEADLINE
    if report.get("schema") == "rpx.readiness":
        return READINESS_HEADLINE
    return declared.headline(report)


def metric_table(report: Mapping[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Columns and rows for display: ``metric | aggregate | dataset`` side by side when the
    report has both (per-row mean next to pooled), else ``metric | value``."""
    if report.get("schema") == "rpx.stability":
        return _stability_table(report)
    aggregate, dataset = report.get("aggregate"), report.get("dataset")
    if isinstance(aggregate, Mapping) and isinstance(dataset, Mapping):
        names = [k for k in aggregate if not isinstance(aggregate[k], Mapping)]
        names += [k for k in dataset if k not in aggregate and not isinstance(dataset[k], Mapping)]
        rows = [(name, fmt(aggregate.get(name, "")) if name in aggregate else "",
                 fmt(dataset[name]) if name in dataset else "") for name in sorted(names)]
        nested = [(name, value) for name, value in figures({"dataset": dataset})
                  if name.count(".") > 1 and not name.startswith("dataset.per_class.")]
        rows += [(name, "", fmt(value)) for name, value in nested]
        # what the task declares a reader looks at first leads, in its order (detection3d:
        # mAP, NDS, ...), the rest alphabetical as before
        lead = headline_paths(report)

        def first(row: tuple[Any, ...]) -> int:
            name = str(row[0])
            spots = [lead.index(p) for p in (name, f"dataset.{name}", f"aggregate.{name}") if p in lead]
            return min(spots, default=len(lead))

        rows.sort(key=first)  # stable: the alphabetical order stays within the rest
        return ["metric", "aggregate (mean of rows)", "dataset (pooled)"], rows
    return ["metric", "value"], [(name, fmt(value)) for name, value in figures(report)]


def context(report: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """What was evaluated: task, parameters, counts."""
    if report.get("schema") == "rpx.stability":
        return _stability_context(report)
    unpaired = report.get("unpaired") or {}
    items: list[tuple[str, Any]] = [
        ("task", report.get("task") or report.get("schema", "?")),
        ("pairs", report.get("n_pairs")),
        ("unpaired (pred only / gt only)",
         f"{len(unpaired.get('pred_only', []))} / {len(unpaired.get('gt_only', []))}"),
        ("errors", len(report.get("errors") or [])),
    ]
    for key, value in sorted((report.get("params") or {}).items()):
        items.append((f"params.{key}", value))
    return items


def _stability_table(report: Mapping[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """``rpx stability``: the overall TS, then one row per sequence."""
    columns = ["sequence", "ts_score", "pairs", "null pairs", "frames"]
    rows = [("(all)", fmt(report.get("ts_score")), fmt(report.get("num_pairs")),
             fmt(report.get("n_null_pairs")), fmt(report.get("n_frames")))]
    for name, entry in sorted((report.get("sequences") or {}).items()):
        if isinstance(entry, Mapping):
            rows.append((name, fmt(entry.get("ts_score")), fmt(entry.get("num_pairs")),
                         fmt(entry.get("n_null_pairs")), fmt(entry.get("n_frames"))))
    return columns, rows


def _stability_context(report: Mapping[str, Any]) -> list[tuple[str, Any]]:
    unpaired = report.get("unpaired") or {}
    items: list[tuple[str, Any]] = [
        ("task", report.get("task")),
        ("warp used", report.get("warp")),
        ("sequences / frames / pairs",
         f"{report.get('n_sequences')} / {report.get('n_frames')} / {report.get('num_pairs')}"),
        ("unpaired (pred only / manifest only)",
         f"{len(unpaired.get('pred_only', []))} / {len(unpaired.get('manifest_only', []))}"),
        ("skipped", len(report.get("skipped") or [])),
    ]
    for key, value in sorted((report.get("params") or {}).items()):
        items.append((f"params.{key}", value))
    return items


def fmt(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, (list, dict, bool)):
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) >= 1e-4 or value == 0 else f"{value:.3e}"
    return str(value)


def summary_line(report: Mapping[str, Any], out: str) -> str:
    if report.get("schema") == "rpx.stability":
        where = "stdout" if out == "-" else out
        return (f"stability {report.get('task')}: {report.get('num_pairs')} pairs in "
                f"{len(report.get('sequences') or {})} sequence(s), warp {report.get('warp')}; "
                f"ts_score {fmt(report.get('ts_score'))} -> {where}")
    if report.get("schema") == "rpx.readiness":
        summary = report.get("summary") or {}
        where = "stdout" if out == "-" else out
        shown = ", ".join(f"{k} {fmt(summary.get(k))}" for k in ("s_overall", "delta_int", "delta_rec",
                                                                  "ts_score", "sgc") if k in summary)
        return f"readiness {report.get('task')} ({report.get('primary_metric')}): {shown} -> {where}"
    metrics = [(path, lookup(report, path)) for path in headline_paths(report)
               if isinstance(lookup(report, path), (int, float))]
    metrics += [(name, value) for name, value in figures(report)
                if not name.startswith("totals.") and name not in dict(metrics)
                and not name.rsplit(".", 1)[-1].startswith("n_")]
    shown = ", ".join(f"{name} {fmt(value)}" for name, value in metrics[:4])
    where = "stdout" if out == "-" else out
    unpaired = report.get("unpaired") or {}
    n_unpaired = sum(len(v) for v in unpaired.values() if isinstance(v, list))
    shard = " (--shard part)" if report.get("state") else ""
    return (f"{title(report)}: {report.get('n_pairs')} pairs, {n_unpaired} unpaired, "
            f"{errors_text(report.get('errors') or [])}{shard}; {shown} -> {where}")


def errors_text(errors: list[Any]) -> str:
    """What ``--on-error skip`` did, for the summary line: "0 skipped on error", or how many
    predictions were scored as empty and how many pairs were dropped (an unreadable GT)."""
    n_empty = sum(1 for error in errors if isinstance(error, Mapping)
                  and error.get("effect") == "empty_prediction")
    if not n_empty:
        return f"{len(errors)} skipped on error"
    return (f"{len(errors)} on error ({n_empty} unreadable prediction(s) scored as empty, "
            f"{len(errors) - n_empty} pair(s) dropped)")


def title(report: Mapping[str, Any]) -> str:
    """What a report's run evaluated, as its task names it (``detection · masks · LVIS``;
    :func:`rpx_cli.report.declared.evaluated`): the summary line's, ``rpx show``'s and the
    Markdown's title."""
    return declared.evaluated(report).title if report.get("task") else str(report.get("schema", ""))


def lookup(report: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` ("dataset.per_class.car.iou"), None where absent."""
    node: Any = report
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def markdown(report: Mapping[str, Any]) -> str:
    """A Markdown summary for a PR comment or ``$GITHUB_STEP_SUMMARY``."""
    columns, rows = metric_table(report)
    lines = [f"### rpx {title(report)} report", "", "| " + " | ".join(columns) + " |",
             "|---|" + "---:|" * (len(columns) - 1)]
    lines += ["| `" + str(row[0]) + "` | " + " | ".join(str(c) for c in row[1:]) + " |" for row in rows]
    per_class = (report.get("dataset") or {}).get("per_class")
    if isinstance(per_class, Mapping) and per_class:
        fields = sorted({k for entry in per_class.values() if isinstance(entry, Mapping) for k in entry})
        lines += ["", "| class | " + " | ".join(fields) + " |", "|---|" + "---:|" * len(fields)]
        lines += [f"| {name} | " + " | ".join(fmt(entry.get(k)) for k in fields) + " |"
                  for name, entry in per_class.items() if isinstance(entry, Mapping)]
    lines += ["", "| run | |", "|---|---|"]
    lines += [f"| {name} | {fmt(value)} |" for name, value in context(report)]
    gates = report.get("gates") or []
    if gates:
        lines += ["", "| gate | value | result |", "|---|---:|---|"]
        lines += [
            f"| `{g.get('expr')}` | {fmt(g.get('value'))} | {'pass' if g.get('passed') else 'FAIL'} |"
            for g in gates
        ]
    return "\n".join(lines) + "\n"


def compare_markdown(document: Mapping[str, Any]) -> str:
    """A Markdown table of a comparison: significant regressions first. A change is marked
    🔴/🟢 only when its 95 % interval excludes 0; one whose interval includes 0, or that has
    none (a pooled figure of a report without ``--keep-state``), is written out without the
    mark, and a line under the heading says why pooled figures have no interval."""
    from rpx_cli.report.compare import order_key, summary_text, verdict

    summary = document.get("summary") or {}
    lines = [f"### rpx compare: {document['new'].get('task')} — {summary_text(summary)}", "",
             "A change is significant when its paired-bootstrap 95% interval excludes 0.", ""]
    pooled = document.get("pooled_bootstrap") or {}
    if pooled.get("figures") and not pooled.get("resamples") and pooled.get("reason"):
        lines += [f"Pooled figures (`dataset.*`) have no interval: {pooled['reason']}.", ""]
    elif pooled.get("resamples"):
        lines += [f"Pooled figures (`dataset.*`): {pooled['resamples']} paired resamples of the "
                  "shared stems, each figure recomputed.", ""]
    lines += ["| metric | base | new | delta | change | 95% CI |", "|---|---:|---:|---:|---|---|"]
    for m in sorted(document.get("metrics") or [], key=order_key):
        if m["base"] is None and m["new"] is None:
            continue
        mark = verdict(m, {"regressed": "worse", "improved": "better"})
        if m.get("significant"):
            mark = {"regressed": "🔴 ", "improved": "🟢 "}[m["status"]] + mark
        boot = m.get("bootstrap")
        ci = f"[{fmt(boot['ci95'][0])}, {fmt(boot['ci95'][1])}]" if boot else ""
        lines.append(f"| `{m['metric']}` | {fmt(m['base'])} | {fmt(m['new'])} | {fmt(m['delta'])} "
                     f"| {mark} | {ci} |")
    gates = document.get("gates") or []
    if gates:
        lines += ["", "| gate | result |", "|---|---|"]
        lines += [f"| `{g['expr']}` | {'pass' if g['passed'] else 'FAIL'}: {g['message']} |"
                  for g in gates]
    return "\n".join(lines) + "\n"


# --- tables for `rpx show` (terminal) and `--format csv|tsv` ---------------------------------

MAX_CONFUSION_SIDE = 30  # larger matrices: `rpx report` draws them, a terminal cannot


def per_class_table(report: Mapping[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """One row per class with every per-class figure the report has: ``dataset.per_class``,
    else detection's COCO AP (``AP``) beside its confusion-matrix P/R/F1/support."""
    dataset = report.get("dataset") or {}
    merged: dict[str, dict[str, Any]] = {}
    sources = [("", dataset.get("per_class")), ("", (dataset.get("confusion") or {}).get("per_class")),
               ("", (dataset.get("coco") or {}).get("per_class"))]
    for _, source in sources:
        if isinstance(source, Mapping):
            for name, entry in source.items():
                if isinstance(entry, Mapping):
                    merged.setdefault(str(name), {}).update(
                        {k: v for k, v in entry.items() if not isinstance(v, (Mapping, list, str))})
    fields = sorted({k for entry in merged.values() for k in entry})
    return ["class", *fields], [(name, *(entry.get(k) for k in fields)) for name, entry in merged.items()]


def confusion_table(report: Mapping[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]] | None:
    """``dataset.confusion`` as a table: one row per GT label, one column per prediction."""
    confusion = (report.get("dataset") or {}).get("confusion")
    if not isinstance(confusion, Mapping) or not confusion.get("labels") or not confusion.get("matrix"):
        return None
    columns = confusion.get("columns") or confusion["labels"]
    return (["GT \\ predicted", *map(str, columns)],
            [(str(label), *row)
             for label, row in zip(confusion["labels"], confusion["matrix"], strict=False)])


def rows_table(report: Mapping[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The per-sample rows (a comparison's metrics; a stability report's sequences)."""
    if report.get("schema") == "rpx.compare":
        columns = ["metric", "base", "new", "delta", "rel_delta", "direction", "status", "significant",
                   "ci95_low", "ci95_high"]
        out = []
        for m in report.get("metrics") or []:
            ci = (m.get("bootstrap") or {}).get("ci95") or [None, None]
            out.append((m.get("metric"), m.get("base"), m.get("new"), m.get("delta"), m.get("rel_delta"),
                        m.get("direction"), m.get("status"), m.get("significant"), ci[0], ci[1]))
        return columns, out
    rows = report.get("rows") or []
    if not rows and report.get("schema") == "rpx.stability":
        rows = [{"sequence": name, **{k: v for k, v in entry.items() if not isinstance(v, (list, Mapping))}}
                for name, entry in sorted((report.get("sequences") or {}).items())]
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns and not isinstance(row[k], (Mapping, list))]
    lead = [k for k in ("stem", "sequence") if k in columns]
    columns = lead + [k for k in columns if k not in lead]
    return columns, [tuple(row.get(k) for k in columns) for row in rows]


def metrics_rows(report: Mapping[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Every headline figure as ``metric,value`` (full precision)."""
    return ["metric", "value"], [(name, value) for name, value in figures(report)]


def compare_table(document: Mapping[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """A comparison for the terminal: significant regressions first, then the other
    changes, then the rest; each change qualified by its interval (:func:`verdict`)."""
    from rpx_cli.report.compare import order_key, verdict

    metrics = sorted((m for m in document.get("metrics") or []
                      if m.get("base") is not None or m.get("new") is not None), key=order_key)
    rows = []
    for m in metrics:
        boot = m.get("bootstrap")
        ci = f"[{fmt(boot['ci95'][0])}, {fmt(boot['ci95'][1])}]" if boot else ""
        rows.append((m["metric"], fmt(m["base"]), fmt(m["new"]), fmt(m["delta"]), verdict(m), ci))
    return ["metric", "base", "new", "delta", "change", "95% CI"], rows


def gates_table(report: Mapping[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]] | None:
    gates = report.get("gates") or []
    if not gates:
        return None
    return ["gate", "value", "result", ""], [
        (g.get("expr"), fmt(g.get("value")), "pass" if g.get("passed") else "FAIL", g.get("message", ""))
        for g in gates]


def cell_text(value: Any) -> str:
    """A value for a CSV/TSV cell: full precision, empty for null, JSON for lists."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)
