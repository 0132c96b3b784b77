"""Line charts for the HTML report: lines over a shared x (or each series' own), with
rings marking points (an operating point, a class)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rpx_cli.report.markup import data_list, datum, esc
from rpx_cli.report.svg import CHAR_PX, PALETTE, Frame, document, legend_box

LABEL_HEIGHT = 11.0  # a marker label's box: its text's height ...
LABEL_GAP = 8.0  # ... and how far from its ring's centre it starts


def label_spot(mx: float, my: float, text: str, frame: Frame,
               taken: list[tuple[float, float, float, float]]) -> tuple[float, float, str] | None:
    """Where a marker's label goes (``(x, y, text-anchor)``), or None: the first of four
    spots beside its ring (above, then below, on the side facing the plot's middle, then on
    the other) whose box lies inside the chart and overlaps no label in ``taken``; the box
    chosen is added to ``taken``. A label that fits nowhere is left out (the ring's tooltip
    keeps it)."""
    if not text:
        return None
    width = CHAR_PX * len(text)
    facing = "end" if mx > (frame.x0 + frame.x1) / 2 else "start"
    for anchor in (facing, "start" if facing == "end" else "end"):
        for dy in (-7.0, 7.0 + LABEL_HEIGHT):
            x = mx - LABEL_GAP if anchor == "end" else mx + LABEL_GAP
            left = x - width if anchor == "end" else x
            box = (left, my + dy - LABEL_HEIGHT + 2, left + width, my + dy + 2)
            inside = box[0] >= 0 and box[2] <= frame.width and box[1] >= 0 and box[3] <= frame.height
            if inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3]
                                  for b in taken):
                taken.append(box)
                return x, my + dy, anchor
    return None


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
    taken: list[tuple[float, float, float, float]] = []  # the marker labels' boxes so far
    for m in markers:
        if m.get("x") is None or m.get("y") is None:
            continue
        mx, my = frame.sx(m["x"]), frame.sy(m["y"])
        body.append(f'<circle class="marker" cx="{mx:.1f}" cy="{my:.1f}" r="5" data-x="{datum(m["x"])}" '
                    f'data-y="{datum(m["y"])}"><title>{esc(m.get("label", ""))}</title></circle>')
        spot = label_spot(mx, my, str(m.get("label") or ""), frame, taken)
        if spot is not None:  # else the ring's tooltip alone names it
            tx, ty, anchor = spot
            body.append(f'<text class="note" x="{tx:.1f}" y="{ty:.1f}" text-anchor="{anchor}">'
                        f'{esc(m["label"])}</text>')
    if legend and keys:
        longest = max(len(name) for name, _, _ in keys)
        body += legend_box(keys, frame.x1 - 30 - longest * CHAR_PX, frame.y1 + 8)
    chart_attrs = {"chart": "line", **(attrs or {})}
    if x is not None and x_attr:
        chart_attrs["x"] = data_list(x)
    return document(width, height, body, title=title, attrs=chart_attrs)
