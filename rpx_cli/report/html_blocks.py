"""The building blocks of the HTML report (:mod:`rpx_cli.report.html`): reading a report
(a dotted path, a number, its kind), a metric's direction and the row metric the worst rows
are ranked by, and the markup every section is made of (a titled section, a table, a cell
whose full number is in ``data-value``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rpx_cli.report.svg import datum, esc, short

BAND = re.compile(r"^(?P<metric>.+?)_(?P<band>(?:minus)?\d[\dp]*m_(?:(?:minus)?\d[\dp]*m|inf))$")
_READINESS_WAY = {"ts_score": "higher", "sgc": "higher", "latency_ms": "lower", "params_m": "lower",
                  "flops_g": "lower", "actmem_gb": "lower"}
# the row metric the worst rows are sorted by (else the first row metric with a direction)
PRIMARY = {"depth": "absrel", "segmentation": "miou", "segmentation3d": "miou", "detection": "f1",
           "tracking": "mota", "grounding": "grounding_iou", "keypoints": "keypoint_acc",
           "pose": "pose_error_max_deg", "sparse-depth": "sparse_absrel", "nvs": "psnr",
           "saliency-mb": "iou", "coherence": "f_score", "detection3d": "tp"}


def kind_name(report: Mapping[str, Any]) -> str:
    schema = str(report.get("schema") or "report")
    task = report.get("task")
    return f"{task}" if schema == "rpx.eval" and task else f"{schema.removeprefix('rpx.')}" + (
        f" ({task})" if task and schema not in ("rpx.compare",) and task != schema.removeprefix("rpx.") else "")


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def direction(report: Mapping[str, Any], path: str) -> str:
    info = report.get("metric_info") or {}
    name = path.rsplit(".", 1)[-1]
    if report.get("schema") == "rpx.readiness":
        if name in ("s_overall", "primary_aggregate") or name.startswith("s_"):
            return str(report.get("direction") or "none")
        return _READINESS_WAY.get(name, "none")
    match = BAND.match(name)
    for key in (name, match["metric"] if match else None):
        if key and isinstance(info.get(key), Mapping):
            return str(info[key].get("direction", "none"))
    return "none"


ARROW = {"higher": "↑ higher is better", "lower": "↓ lower is better", "none": ""}


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


def primary(report: Mapping[str, Any]) -> tuple[str | None, str]:
    rows = report.get("rows") or []
    metric = (report.get("strata") or {}).get("primary_metric") or PRIMARY.get(str(report.get("task")))
    if rows and (metric is None or metric not in rows[0]):
        info = report.get("metric_info") or {}
        metric = next((k for k in rows[0] if k in info and info[k].get("direction") in ("higher", "lower")
                       and is_number(rows[0][k])), None)
    return metric, direction(report, metric) if metric else "none"
