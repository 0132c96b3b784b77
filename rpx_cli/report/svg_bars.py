"""Bar charts for the HTML report: horizontal bars (one per label), vertical bars in
groups, and histograms (counts in equal-width bins)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rpx_cli.report.markup import datum, esc, short
from rpx_cli.report.svg import CHAR_PX, PALETTE, Frame, document, label_text, ticks


def bar_chart(labels: Sequence[str], values: Sequence[float | None], *, title: str, value_label: str,
              domain: tuple[float, float] | None = None, notes: Sequence[str] | None = None,
              colours: Sequence[str] | None = None, width: float = 520,
              attrs: dict[str, Any] | None = None) -> str:
    """Horizontal bars, one per label (``data-label``, ``data-value``); a None value is
    written "n/a" with no bar."""
    present = [v for v in values if v is not None]
    lo = min(0.0, min(present, default=0.0))
    hi = max(present, default=1.0) if domain is None else domain[1]
    if domain is not None:
        lo = domain[0]
    hi = hi if hi > lo else lo + 1
    label_px = max(40, CHAR_PX * max((len(label_text(a)) for a in labels), default=4) + 8)
    width = max(width, label_px + 70 + 200)  # a long label widens the chart, never cuts
    counts = bool(present) and all(isinstance(v, int) and not isinstance(v, bool) for v in present)
    row = 18
    height = 40 + row * len(labels) + 10
    # room right of the longest bar for the value and note written after it
    written = [f"{short(v)}{' ' + notes[i] if notes and notes[i] else ''}" for i, v in enumerate(values)
               if v is not None]
    right = max(70.0, CHAR_PX * max((len(text) for text in written), default=0) + 12)
    width = max(width, label_px + right + 200)
    frame = Frame(width, height, (lo, hi), (0, 1), left=label_px, right=right, top=8, bottom=34)
    body = []
    for t in ticks(lo, hi, integer=counts):
        xx = frame.sx(t)
        body.append(f'<line class="grid" x1="{xx:.1f}" x2="{xx:.1f}" y1="{frame.y1:.1f}" y2="{frame.y0:.1f}"/>'
                    f'<text class="tick" x="{xx:.1f}" y="{frame.y0 + 13:.1f}" text-anchor="middle">{short(t)}</text>')
    zero = frame.sx(max(lo, 0.0))
    for i, (name, value) in enumerate(zip(labels, values, strict=True)):
        y = frame.y1 + i * row
        note = notes[i] if notes else ""
        colour = colours[i] if colours else PALETTE[0]
        body.append(f'<text class="tick" x="{frame.x0 - 5:.1f}" y="{y + 12:.1f}" text-anchor="end">'
                    f"{esc(label_text(name))}<title>{esc(name)}</title></text>")
        if value is None:
            body.append(f'<text class="note" x="{zero + 4:.1f}" y="{y + 12:.1f}" data-label="{esc(name)}" '
                        f'data-value="null">n/a{esc(" " + note if note else "")}</text>')
            continue
        x1 = frame.sx(min(max(value, lo), hi))
        left, w = min(zero, x1), abs(x1 - zero)
        body.append(f'<rect class="bar" x="{left:.1f}" y="{y + 2:.1f}" width="{max(w, 0.5):.1f}" height="{row - 5}" '
                    f'fill="{colour}" data-label="{esc(name)}" data-value="{datum(value)}">'
                    f"<title>{esc(name)}: {short(value, 4)}{esc(' ' + note if note else '')}</title></rect>"
                    f'<text class="note" x="{max(zero, x1) + 4:.1f}" y="{y + 12:.1f}">{short(value)}'
                    f"{esc(' ' + note if note else '')}</text>")
    body.append(f'<path class="ax" d="M{zero:.1f},{frame.y1:.1f}V{frame.y0:.1f}"/>')
    body.append(f'<text class="label" x="{(frame.x0 + frame.x1) / 2:.1f}" y="{height - 5:.1f}" '
                f'text-anchor="middle">{esc(value_label)}</text>')
    return document(width, height, body, title=title, attrs={"chart": "bars", **(attrs or {})})


def grouped_bars(categories: Sequence[str], groups: Sequence[str], values: Sequence[Sequence[float | None]],
                 *, title: str, y_label: str, x_label: str, domain: tuple[float, float] | None = None,
                 width: float = 520, height: float = 300, attrs: dict[str, Any] | None = None) -> str:
    """Vertical bars: ``values[g][c]`` for group g (a colour) in category c (a cluster)."""
    present = [v for row in values for v in row if v is not None]
    lo = min(0.0, min(present, default=0.0)) if domain is None else domain[0]
    hi = max(present, default=1.0) if domain is None else domain[1]
    hi = hi if hi > lo else lo + 1
    frame = Frame(width, height, (0, len(categories)), (lo, hi), bottom=46, top=30)
    body = frame.axes(x_label, y_label, x_ticks=False)
    slot = (frame.x1 - frame.x0) / max(len(categories), 1)
    bar = slot * 0.8 / max(len(groups), 1)
    base = frame.sy(max(lo, 0.0))
    for c, category in enumerate(categories):
        body.append(f'<text class="tick" x="{frame.x0 + slot * (c + 0.5):.1f}" y="{frame.y0 + 14:.1f}" '
                    f'text-anchor="middle">{esc(category)}</text>')
        for g, group in enumerate(groups):
            value = values[g][c]
            x = frame.x0 + slot * c + slot * 0.1 + bar * g
            if value is None:
                body.append(f'<text class="note" x="{x + bar / 2:.1f}" y="{base - 4:.1f}" text-anchor="middle" '
                            f'data-group="{esc(group)}" data-category="{esc(category)}" data-value="null">–</text>')
                continue
            y = frame.sy(min(max(value, lo), hi))
            body.append(f'<rect class="bar" x="{x:.1f}" y="{min(y, base):.1f}" width="{bar * 0.92:.1f}" '
                        f'height="{max(abs(base - y), 0.5):.1f}" fill="{PALETTE[g % len(PALETTE)]}" '
                        f'data-group="{esc(group)}" data-category="{esc(category)}" data-value="{datum(value)}">'
                        f"<title>{esc(category)}, {esc(group)}: {short(value, 4)}</title></rect>")
    step = max(60, CHAR_PX * max((len(str(g)) for g in groups), default=4) + 22)
    body += [f'<rect x="{frame.x0 + i * step:.1f}" y="6" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>'
             f'<text class="legend" x="{frame.x0 + 14 + i * step:.1f}" y="15">{esc(g)}</text>'
             for i, g in enumerate(groups)]
    return document(width, height, body, title=title, attrs={"chart": "grouped-bars", **(attrs or {})})


def histogram(values: Sequence[float], *, title: str, x_label: str, bins: int = 30,
              width: float = 440, height: float = 240, attrs: dict[str, Any] | None = None) -> str:
    """Counts of ``values`` in equal-width bins (``data-lo``, ``data-hi``, ``data-count``)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    step = (hi - lo) / bins
    counts = [0] * bins
    for v in finite:
        counts[min(int((v - lo) / step), bins - 1)] += 1
    frame = Frame(width, height, (lo, hi), (0, max(counts, default=1) or 1), y_integer=True)
    body = frame.axes(x_label, "count")
    for k, c in enumerate(counts):
        a, b = lo + k * step, lo + (k + 1) * step
        if not c:
            continue
        x0, x1, y = frame.sx(a), frame.sx(b), frame.sy(c)
        body.append(f'<rect class="bar" x="{x0:.1f}" y="{y:.1f}" width="{max(x1 - x0 - 1, 0.5):.1f}" '
                    f'height="{frame.y0 - y:.1f}" fill="{PALETTE[0]}" data-lo="{datum(a)}" data-hi="{datum(b)}" '
                    f'data-count="{c}"><title>{short(a)} – {short(b)}: {c}</title></rect>')
    return document(width, height, body, title=title, attrs={"chart": "histogram", "n": len(finite), **(attrs or {})})
