"""The pictures of a tracking3d report (``page_view = "mota_recall"``): AMOTA and AMOTP per
class, and the MOTA–recall curve the nuScenes devkit draws (``render.recall_metric_curve``:
each class's MOTA at the recall targets it reached, from ``dataset.curves``). The worst
scenes are the page's worst rows (ranked by the scene's MOTA)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.report.html_blocks import is_number, section_html
from rpx_cli.report.svg_bars import bar_chart
from rpx_cli.report.svg_lines import line_chart


def _bars(per_class: Mapping[str, Any], field: str, title: str, domain: tuple[float, float] | None,
          way: str) -> str:
    entries = [(name, (entry or {}).get(field)) for name, entry in per_class.items()]
    if not any(is_number(v) for _, v in entries):
        return ""
    entries.sort(key=lambda e: (e[1] is None, e[1] if way != "lower" else -(e[1] or 0.0)))
    return bar_chart([name for name, _ in entries], [v for _, v in entries], title=title,
                         value_label=field, domain=domain, attrs={"name": "per-class", "field": field})


def mota_recall_view(report: Mapping[str, Any]) -> str:
    dataset = report.get("dataset") or {}
    per_class = dataset.get("per_class") or {}
    out = []
    bars = _bars(per_class, "amota", "AMOTA per class", (0.0, 1.0), "higher")
    peak = max([v.get("amotp") for v in per_class.values() if v and is_number(v.get("amotp"))] or [2.0])
    bars += _bars(per_class, "amotp", "AMOTP per class (m)", (0.0, max(peak, 1e-9)), "lower")
    if bars:
        out.append(section_html("AMOTA and AMOTP per class", bars,
                                "the worst class first; a class without GT has none (null)",
                                kind="per-class"))
    curves = dataset.get("curves")
    if isinstance(curves, Mapping):
        series = []
        for name, curve in sorted(curves.items()):
            if not isinstance(curve, Mapping):
                continue
            points = [(r, m) for r, m, c in zip(curve.get("recall_hypo") or [], curve.get("mota") or [],
                                                curve.get("confidence") or [], strict=False)
                      if c is not None and r is not None]
            if points:
                series.append({"name": name, "x": [r for r, _ in points], "y": [m for _, m in points]})
        if series:
            chart = line_chart(series, title="MOTA against recall", x_label="recall (target)",
                                   y_label="MOTA", attrs={"name": "mota-recall"})
            out.append(section_html("MOTA against recall", chart,
                                    "each class's MOTA at the recall targets it reached (the score threshold "
                                    "of each target), as the devkit's recall_metric_curve draws it",
                                    kind="mota-recall"))
    return "".join(out)
