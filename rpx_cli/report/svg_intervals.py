"""Intervals for the HTML report: deltas with their confidence intervals, one row each on
its own scale (``rpx compare``), and two models' values with their intervals on one chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rpx_cli.report.markup import datum, esc, short
from rpx_cli.report.svg import BAD, CHAR_PX, GOOD, NEUTRAL, Frame, document, ticks


def interval_chart(items: Sequence[dict[str, Any]], *, title: str, x_label: str, width: float = 620,
                   attrs: dict[str, Any] | None = None) -> str:
    """Deltas with their confidence intervals, one row each: ``{"label", "delta", "low",
    "high", "status", "significant"}``, every row on its own scale (metrics differ by orders
    of magnitude: absrel 0.01, rmse 0.5, counts in the hundreds), zero in the middle, the
    numbers written on the right (``data-scale``: the row's half-width). A significant
    change is blue ▲ (better) or vermillion ▼ (worse); one whose interval includes 0 (status
    "no significant change", ``point_status`` the way it moved), or that has none, is grey
    △ ▽ (the shape carries the meaning too). Labels are never cut: the
    chart widens to hold the longest."""
    label_px = max(60, CHAR_PX * max((len(it["label"]) for it in items), default=6) + 10)
    notes = [short(it["delta"]) + (f" [{short(it['low'])}, {short(it['high'])}]"
                                   if it.get("low") is not None else "") for it in items]
    note_px = max(60, CHAR_PX * max((len(n) for n in notes), default=6) + 12)
    plot = max(width - label_px - note_px - 14, 240)
    width = label_px + 14 + plot + note_px
    row = 20
    height = 40 + row * len(items) + 10
    frame = Frame(width, height, (-1.1, 1.1), (0, 1), left=label_px + 14, right=note_px, top=8, bottom=34)
    zero = frame.sx(0)
    body = [f'<path class="ax" d="M{zero:.1f},{frame.y1:.1f}V{frame.y0:.1f}"/>',
            f'<text class="tick" x="{zero:.1f}" y="{frame.y0 + 13:.1f}" text-anchor="middle">0</text>']
    for i, it in enumerate(items):
        y = frame.y1 + i * row + row / 2
        status = it.get("status", "")
        significant = bool(it.get("significant"))
        if significant:
            colour, mark = {"improved": (GOOD, "▲"), "regressed": (BAD, "▼")}.get(status, (NEUTRAL, "●"))
        else:
            way = it.get("point_status") or status  # no significant change: which way it moved
            colour, mark = NEUTRAL, {"improved": "△", "regressed": "▽"}.get(way, "●")
        values = [abs(v) for v in (it["delta"], it.get("low"), it.get("high")) if v is not None]
        scale = max(values, default=1.0) or 1.0

        def at(v: float, scale: float = scale) -> float:
            return frame.sx(v / scale)

        body.append(f'<text class="tick" x="{frame.x0 - 6:.1f}" y="{y + 4:.1f}" text-anchor="end">'
                    f"{esc(it['label'])}</text>")
        if it.get("low") is not None and it.get("high") is not None:
            body.append(f'<path d="M{at(it["low"]):.1f},{y:.1f}H{at(it["high"]):.1f}'
                        f'M{at(it["low"]):.1f},{y - 4:.1f}v8M{at(it["high"]):.1f},{y - 4:.1f}v8" '
                        f'stroke="{colour}" stroke-width="1.6" fill="none"/>')
        body.append(f'<text x="{at(it["delta"]):.1f}" y="{y + 4:.1f}" text-anchor="middle" fill="{colour}" '
                    f'style="fill:{colour}" font-size="12" data-metric="{esc(it["label"])}" '
                    f'data-delta="{datum(it["delta"])}" data-low="{datum(it.get("low"))}" '
                    f'data-high="{datum(it.get("high"))}" data-status="{esc(status)}" '
                    f'data-significant="{datum(it.get("significant"))}" data-scale="{datum(scale)}">{mark}'
                    f"<title>{esc(it['label'])}: {short(it['delta'], 4)} ({esc(status)}"
                    f"{', significant' if significant else ''})</title></text>")
        body.append(f'<text class="note" x="{frame.x1 + 6:.1f}" y="{y + 4:.1f}">{esc(notes[i])}</text>')
    body.append(f'<text class="label" x="{(frame.x0 + frame.x1) / 2:.1f}" y="{height - 5:.1f}" '
                f'text-anchor="middle">{esc(x_label)}</text>')
    return document(width, height, body, title=title, attrs={"chart": "intervals", **(attrs or {})})

def model_intervals(items: Sequence[dict[str, Any]], *, title: str, names: tuple[str, str] = ("base", "new"),
                    width: float = 250, attrs: dict[str, Any] | None = None) -> str:
    """Two models on one chart of a metric: for each ``{"label", "values": [a, b], "intervals":
    [[lo, hi] | None, ...]}`` the two values as points (base hollow grey, new filled blue)
    with their 95% intervals as whiskers, on one shared scale."""
    numbers = [v for it in items for v in (*it["values"], *(x for iv in it["intervals"] if iv for x in iv))
               if v is not None]
    lo, hi = (min(numbers), max(numbers)) if numbers else (0.0, 1.0)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.05 or 0.5
    lo, hi = lo - pad, hi + pad
    row = 24.0
    height = 34 + row * len(items) * 2 + 30
    frame = Frame(width, height, (lo, hi), (0, 1), left=14, right=14, top=30, bottom=30)
    body = [f'<circle cx="20" cy="12" r="4" fill="none" stroke="{NEUTRAL}" stroke-width="2"/>'
            f'<text class="legend" x="28" y="16">{esc(names[0])}</text>'
            f'<circle cx="{40 + CHAR_PX * len(names[0]):.1f}" cy="12" r="4" fill="{GOOD}"/>'
            f'<text class="legend" x="{48 + CHAR_PX * len(names[0]):.1f}" y="16">{esc(names[1])}</text>']
    for t in ticks(lo, hi, 4):
        x = frame.sx(t)
        body.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{frame.y1:.1f}" y2="{frame.y0:.1f}"/>'
                    f'<text class="tick" x="{x:.1f}" y="{frame.y0 + 13:.1f}" text-anchor="middle">{short(t)}</text>')
    for i, it in enumerate(items):
        for k, (value, interval) in enumerate(zip(it["values"], it["intervals"], strict=True)):
            y = frame.y1 + row * (2 * i + k) + row / 2
            colour = NEUTRAL if k == 0 else GOOD
            if interval:
                a, b = frame.sx(interval[0]), frame.sx(interval[1])
                body.append(f'<path d="M{a:.1f},{y:.1f}H{b:.1f}M{a:.1f},{y - 4:.1f}v8M{b:.1f},{y - 4:.1f}v8" '
                            f'stroke="{colour}" stroke-width="1.6" fill="none"/>')
            if value is None:
                continue
            fill = "none" if k == 0 else colour
            body.append(f'<circle cx="{frame.sx(value):.1f}" cy="{y:.1f}" r="4.5" fill="{fill}" stroke="{colour}" '
                        f'stroke-width="2" data-model="{esc(names[k])}" data-metric="{esc(it["label"])}" '
                        f'data-value="{datum(value)}" data-low="{datum(interval[0] if interval else None)}" '
                        f'data-high="{datum(interval[1] if interval else None)}"><title>{esc(names[k])}: '
                        f"{short(value, 4)}" + (f" [{short(interval[0])}, {short(interval[1])}]" if interval else "")
                        + "</title></circle>")
    body.append(f'<text class="label" x="{(frame.x0 + frame.x1) / 2:.1f}" y="{height - 6:.1f}" '
                f'text-anchor="middle">{esc(title)}</text>')
    return document(width, height, body, title=title, attrs={"chart": "models", **(attrs or {})})
