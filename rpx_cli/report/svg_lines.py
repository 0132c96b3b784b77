"""Line charts for the HTML report: lines over a shared x (or each series' own), with
rings marking points (an operating point, a class)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rpx_cli.report.markup import data_list, datum, esc
from rpx_cli.report.svg import CHAR_PX, PALETTE, Frame, document, legend_box


def line_chart(series: Sequence[dict[str, Any]], *, title: str, x_label: str, y_label: str,
               x: Sequence[float] | None = None, x_domain: tuple[float, float] = (0.0, 1.0),
               y_domain: tuple[float, float] = (0.0, 1.0), markers: Sequence[dict[str, Any]] = (),
               width: float = 520, height: float = 330, legend: bool = True, x_attr: bool = True,
               attrs: dict[str, Any] | None = None) -> str:
    """Lines over a shared ``x`` (or each series' own ``x``); None breaks a line. Each
    series: ``{"name", "y", "x"?, "colour"?, "dash"?}``; its numbers go to ``data-y`` (and
    ``data-x`` on the chart when shared, unless ``x_attr`` is False). Markers: ``{"x", "y", "label"}``, a ring with text."""
    frame = Frame(width, height, x_domain, y_domain)
    body = frame.axes(x_label, y_label)
    keys: list[tuple[str, str, str]] = []
    for i, s in enumerate(series):
        colour = s.get("colour") or PALETTE[i % len(PALETTE)]
        dash = s.get("dash", "")
        xs = s.get("x") or x or []
        parts, current = [], []
        points = list(zip(xs, s["y"], strict=False))
        for k, (xv, yv) in enumerate(points):
            if yv is None or xv is None:
                if current:
                    parts.append(current)
                current = []
                continue
            flat = (0 < k < len(points) - 1 and current and points[k - 1][1] == yv
                    and points[k + 1][1] == yv and points[k + 1][0] is not None)
            if not flat:  # the inner points of a flat run draw nothing
                current.append(f"{frame.sx(xv):.1f},{frame.sy(yv):.1f}")
        if current:
            parts.append(current)
        d = "".join("M" + "L".join(p) for p in parts)
        style = f' stroke-dasharray="{dash}"' if dash else ""
        own_x = f' data-x="{data_list(s["x"])}"' if s.get("x") else ""
        body.append(f'<path class="series" d="{d}" stroke="{colour}"{style} data-series="{esc(s["name"])}"'
                    f'{own_x} data-y="{data_list(s["y"])}"/>')
        keys.append((s["name"], colour, dash))
    for m in markers:
        if m.get("x") is None or m.get("y") is None:
            continue
        mx, my = frame.sx(m["x"]), frame.sy(m["y"])
        body.append(f'<circle class="marker" cx="{mx:.1f}" cy="{my:.1f}" r="5" data-x="{datum(m["x"])}" '
                    f'data-y="{datum(m["y"])}"><title>{esc(m.get("label", ""))}</title></circle>')
        if m.get("label"):
            anchor = "end" if mx > (frame.x0 + frame.x1) / 2 else "start"
            dx = -8 if anchor == "end" else 8
            body.append(f'<text class="note" x="{mx + dx:.1f}" y="{my - 7:.1f}" text-anchor="{anchor}">'
                        f'{esc(m["label"])}</text>')
    if legend and keys:
        longest = max(len(name) for name, _, _ in keys)
        body += legend_box(keys, frame.x1 - 30 - longest * CHAR_PX, frame.y1 + 8)
    chart_attrs = {"chart": "line", **(attrs or {})}
    if x is not None and x_attr:
        chart_attrs["x"] = data_list(x)
    return document(width, height, body, title=title, attrs=chart_attrs)
