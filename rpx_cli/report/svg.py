"""Inline SVG charts for the HTML report, written as text (no plotting library).

Every chart is one ``<svg>`` element that draws with CSS classes (``ax``, ``grid``,
``label``: colours come from the page, so light and dark mode both work) and a
colour-blind-safe palette (Okabe & Ito; viridis for heatmaps). The numbers each mark shows
are in ``data-*`` attributes (full precision, Python ``repr``), so a test — or a user's
script — can read them back from the page and compare them with the JSON report.

Pure Python: rendering a report never imports numpy.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any

# Okabe & Ito, "Color Universal Design" (2008): distinguishable with every common form of
# colour blindness; yellow last (weak on white)
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
GOOD, BAD, NEUTRAL = "#0072B2", "#D55E00", "#888888"
# viridis at 0, .25, .5, .75, 1 (perceptually uniform, colour-blind safe)
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
COMPACT_CELLS = 40 * 40  # larger heatmaps are drawn compactly (see heatmap)
CHAR_PX = 6.4  # average width of a 11px sans-serif character, for label room


# an ampersand that does not already start one of the entities html.escape writes
_BARE_AMPERSAND = re.compile(r"&(?!(?:amp|lt|gt|quot|#x27);)")


def esc(text: Any) -> str:
    """``text`` escaped for HTML text and quoted attributes, idempotently: text that is
    escaped already (every string of a report is, once, as the page starts:
    :func:`escaped_document`) is returned as it is, so escaping it again never shows
    ``&amp;amp;``."""
    return (_BARE_AMPERSAND.sub("&amp;", str(text)).replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#x27;"))


def escaped_document(value: Any) -> Any:
    """A JSON document with every string — values and keys, at any depth — HTML-escaped
    (``html.escape``, quotes included). The one place where what a report holds becomes
    safe to write into the page: whatever markup is built from it afterwards, with
    :func:`esc` or without, carries no tag and cannot leave an attribute (issue 31.1)."""
    if isinstance(value, str):
        return html.escape(value, quote=True)
    if isinstance(value, dict):
        return {html.escape(str(key), quote=True): escaped_document(item)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [escaped_document(item) for item in value]
    return value


def datum(value: Any) -> str:
    """A number for a ``data-*`` attribute: shortest round-trip form, ``null`` for None."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "null"
    return str(value)


def data_list(values: Sequence[Any]) -> str:
    return "[" + ",".join(datum(v) for v in values) + "]"


def short(value: Any, digits: int = 3) -> str:
    """A number as people read it on a chart."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) < 1e-3:
        return f"{value:.2e}"
    return f"{value:.{digits}g}"


LABEL_CHARS = 60  # a longer label is shortened with "…" (its full text in a tooltip)


def _label(name: Any) -> str:
    text = str(name)
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def viridis(t: float) -> str:
    t = min(max(t, 0.0), 1.0) * (len(_VIRIDIS) - 1)
    i = min(int(t), len(_VIRIDIS) - 2)
    f = t - i
    a, b = _VIRIDIS[i], _VIRIDIS[i + 1]
    return "#" + "".join(f"{round(a[k] + (b[k] - a[k]) * f):02x}" for k in range(3))


def _text_on(t: float) -> str:
    """Text colour on a viridis cell of value ``t``, as an inline style (it must win over the
    page's ``svg text`` colour, which follows light and dark mode)."""
    return "fill:#000" if t > 0.55 else "fill:#fff"  # viridis turns light past ~0.55


def _ticks(lo: float, hi: float, n: int = 5, *, integer: bool = False) -> list[float]:
    """About ``n`` round tick values from ``lo`` to ``hi``; whole numbers only when
    ``integer`` (counts: no tick at 0.5 of a box)."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    if integer:
        step = max(1, math.ceil(step))
        if step > 2:  # 1, 2, 5, 10, 20, 50, ...: never 2.5 of a count
            mag = 10 ** math.floor(math.log10(step))
            step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= step)
    first = math.ceil(lo / step - 1e-9) * step
    out, k = [], 0
    while first + k * step <= hi + step * 1e-9:
        out.append(round(first + k * step, 12))
        k += 1
    return out


# a chart is drawn at its own size and stretched to the width of its column, up to this
# factor (wider, its 11px text would read as headings)
MAX_STRETCH = 2.0


def document(width: float, height: float, body: list[str], *, title: str, attrs: dict[str, Any]) -> str:
    """The ``<svg>``: its drawing size in ``viewBox``; the page's CSS stretches it to the
    column's width (``width: 100%``), at most :data:`MAX_STRETCH` times that size."""
    extra = "".join(f' data-{k}="{esc(v)}"' for k, v in attrs.items())
    return (f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" style="max-width:{width * MAX_STRETCH:.0f}px" '
            f'role="img" aria-label="{esc(title)}"{extra}>'
            f"<title>{esc(title)}</title>" + "".join(body) + "</svg>")


class _Frame:
    """Plot area with linear scales and labelled axes."""

    def __init__(self, width: float, height: float, x: tuple[float, float], y: tuple[float, float],
                 *, left: float = 52, right: float = 14, top: float = 14, bottom: float = 42,
                 y_integer: bool = False) -> None:
        self.width, self.height = width, height
        self.x0, self.x1, self.y0, self.y1 = left, width - right, height - bottom, top
        self.xd, self.yd = x, y
        self.y_integer = y_integer  # counts on y: whole-number ticks

    def sx(self, v: float) -> float:
        lo, hi = self.xd
        return self.x0 + (v - lo) / ((hi - lo) or 1) * (self.x1 - self.x0)

    def sy(self, v: float) -> float:
        lo, hi = self.yd
        return self.y0 - (v - lo) / ((hi - lo) or 1) * (self.y0 - self.y1)

    def axes(self, x_label: str, y_label: str, *, x_ticks: bool = True) -> list[str]:
        out = []
        for t in _ticks(*self.yd, integer=self.y_integer):
            y = self.sy(t)
            out.append(f'<line class="grid" x1="{self.x0:.1f}" x2="{self.x1:.1f}" y1="{y:.1f}" y2="{y:.1f}"/>'
                       f'<text class="tick" x="{self.x0 - 5:.1f}" y="{y + 3.5:.1f}" text-anchor="end">'
                       f"{short(t)}</text>")
        if x_ticks:
            for t in _ticks(*self.xd):
                x = self.sx(t)
                out.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{self.y1:.1f}" y2="{self.y0:.1f}"/>'
                           f'<text class="tick" x="{x:.1f}" y="{self.y0 + 14:.1f}" text-anchor="middle">'
                           f"{short(t)}</text>")
        out.append(f'<path class="ax" d="M{self.x0:.1f},{self.y1:.1f}V{self.y0:.1f}H{self.x1:.1f}"/>')
        out.append(f'<text class="label" x="{(self.x0 + self.x1) / 2:.1f}" y="{self.height - 6:.1f}" '
                   f'text-anchor="middle">{esc(x_label)}</text>')
        cy = (self.y0 + self.y1) / 2
        out.append(f'<text class="label" transform="translate(12,{cy:.1f}) rotate(-90)" '
                   f'text-anchor="middle">{esc(y_label)}</text>')
        return out


def _legend(items: list[tuple[str, str, str]], x: float, y: float) -> list[str]:
    """(name, colour, dash) rows from (x, y), right-aligned boxes."""
    longest = max((len(name) for name, _, _ in items), default=0)
    out = [f'<rect class="legendbg" x="{x - 4:.1f}" y="{y - 8:.1f}" width="{30 + longest * CHAR_PX:.1f}" '
           f'height="{len(items) * 15 + 2}"/>']
    for i, (name, colour, dash) in enumerate(items):
        yy = y + i * 15
        style = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x:.1f}" x2="{x + 18:.1f}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="{colour}" '
                   f'stroke-width="2.5"{style}/><text class="legend" x="{x + 23:.1f}" y="{yy + 4:.1f}">'
                   f"{esc(name)}</text>")
    return out


def line_chart(series: Sequence[dict[str, Any]], *, title: str, x_label: str, y_label: str,
               x: Sequence[float] | None = None, x_domain: tuple[float, float] = (0.0, 1.0),
               y_domain: tuple[float, float] = (0.0, 1.0), markers: Sequence[dict[str, Any]] = (),
               width: float = 520, height: float = 330, legend: bool = True, x_attr: bool = True,
               attrs: dict[str, Any] | None = None) -> str:
    """Lines over a shared ``x`` (or each series' own ``x``); None breaks a line. Each
    series: ``{"name", "y", "x"?, "colour"?, "dash"?}``; its numbers go to ``data-y`` (and
    ``data-x`` on the chart when shared, unless ``x_attr`` is False). Markers: ``{"x", "y", "label"}``, a ring with text."""
    frame = _Frame(width, height, x_domain, y_domain)
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
        body += _legend(keys, frame.x1 - 30 - longest * CHAR_PX, frame.y1 + 8)
    chart_attrs = {"chart": "line", **(attrs or {})}
    if x is not None and x_attr:
        chart_attrs["x"] = data_list(x)
    return document(width, height, body, title=title, attrs=chart_attrs)


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
    label_px = max(40, CHAR_PX * max((len(_label(a)) for a in labels), default=4) + 8)
    width = max(width, label_px + 70 + 200)  # a long label widens the chart, never cuts
    counts = bool(present) and all(isinstance(v, int) and not isinstance(v, bool) for v in present)
    row = 18
    height = 40 + row * len(labels) + 10
    frame = _Frame(width, height, (lo, hi), (0, 1), left=label_px, right=70, top=8, bottom=34)
    body = []
    for t in _ticks(lo, hi, integer=counts):
        xx = frame.sx(t)
        body.append(f'<line class="grid" x1="{xx:.1f}" x2="{xx:.1f}" y1="{frame.y1:.1f}" y2="{frame.y0:.1f}"/>'
                    f'<text class="tick" x="{xx:.1f}" y="{frame.y0 + 13:.1f}" text-anchor="middle">{short(t)}</text>')
    zero = frame.sx(max(lo, 0.0))
    for i, (name, value) in enumerate(zip(labels, values, strict=True)):
        y = frame.y1 + i * row
        note = notes[i] if notes else ""
        colour = colours[i] if colours else PALETTE[0]
        body.append(f'<text class="tick" x="{frame.x0 - 5:.1f}" y="{y + 12:.1f}" text-anchor="end">'
                    f"{esc(_label(name))}<title>{esc(name)}</title></text>")
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
    frame = _Frame(width, height, (0, len(categories)), (lo, hi), bottom=46, top=30)
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


def heatmap(rows: Sequence[str], columns: Sequence[str], matrix: Sequence[Sequence[float]], *,
            title: str, normalise_rows: bool, row_label: str = "ground truth (rows)",
            column_label: str = "predicted (columns)", attrs: dict[str, Any] | None = None) -> str:
    """A confusion matrix; colour by count, or by share of its row (``normalise_rows``).
    Only non-zero cells are drawn; each carries ``data-row``, ``data-col``, ``data-count``
    and ``data-share`` (count / row sum) and a tooltip. Past :data:`COMPACT_CELLS` cells
    (COCO's 81 × 81) the cells are one path per colour step and each row is one element
    with ``data-counts`` (the row) and ``data-total``: the page stays small."""
    n, m = len(rows), len(columns)
    cell = float(max(8, min(30, int(620 / max(n, m, 1)))))
    font = min(11.0, max(6.0, cell * 0.55))
    label_px = min(150, CHAR_PX * max((len(str(a)) for a in (*rows, *columns)), default=4) * font / 11 + 10)
    left, top = label_px + 20, label_px + 24
    width, height = left + cell * m + 110, top + cell * n + 12
    sums = [sum(r) for r in matrix]
    peak = max((v for r in matrix for v in r), default=0) or 1
    body = [f'<text class="label" x="{left + cell * m / 2:.1f}" y="12" text-anchor="middle">{esc(column_label)}</text>',
            f'<text class="label" transform="translate(12,{top + cell * n / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle">{esc(row_label)}</text>',
            f'<rect class="cell0" x="{left}" y="{top}" width="{cell * m:.1f}" height="{cell * n:.1f}"/>']
    for j, name in enumerate(columns):
        x = left + cell * (j + 0.5)
        body.append(f'<text class="tick" font-size="{font:.1f}" transform="translate({x + font / 3:.1f},{top - 4:.1f}) '
                    f'rotate(-60)">{esc(str(name)[:24])}</text>')
    show_numbers = cell >= 22
    compact = n * m > COMPACT_CELLS
    bins: dict[str, list[str]] = {}
    for i, name in enumerate(rows):
        y = top + cell * i
        body.append(f'<text class="tick" font-size="{font:.1f}" x="{left - 4:.1f}" y="{y + cell / 2 + font / 3:.1f}" '
                    f'text-anchor="end">{esc(str(name)[:24])}</text>')
        if compact:
            # one data element per row (its counts), cells drawn as one path per colour
            body.append(f'<g data-row="{i}" data-label="{esc(name)}" data-total="{datum(sums[i])}" '
                        f'data-counts="{data_list(matrix[i])}"/>')
        for j, count in enumerate(matrix[i]):
            if not count:
                continue
            share = count / sums[i] if sums[i] else 0.0
            t = share if normalise_rows else count / peak
            if compact:
                bins.setdefault(viridis(round(t * 31) / 31), []).append(
                    f"M{left + cell * j:.0f} {y:.0f}h{cell:.0f}v{cell:.0f}h-{cell:.0f}z")
                continue
            shown = f"{share:.0%}" if normalise_rows else short(count)
            body.append(f'<rect x="{left + cell * j:.1f}" y="{y:.1f}" width="{cell:.1f}" height="{cell:.1f}" '
                        f'fill="{viridis(t)}" data-row="{i}" data-col="{j}" data-count="{datum(count)}" '
                        f'data-share="{datum(share)}"><title>GT {esc(name)} → predicted {esc(columns[j])}: '
                        f"{short(count)} ({share:.1%} of the row)</title></rect>")
            if show_numbers:
                body.append(f'<text x="{left + cell * (j + 0.5):.1f}" y="{y + cell / 2 + 3.5:.1f}" '
                            f'text-anchor="middle" font-size="{min(10.0, font):.1f}" style="{_text_on(t)}">'
                            f"{shown}</text>")
    body += [f'<path d="{"".join(d)}" fill="{colour}"/>' for colour, d in sorted(bins.items())]
    # colour scale
    sx = left + cell * m + 18
    for k in range(20):
        body.append(f'<rect x="{sx:.1f}" y="{top + k * cell * n / 20:.1f}" width="12" '
                    f'height="{cell * n / 20 + 0.5:.1f}" fill="{viridis(1 - k / 19)}"/>')
    hi_text = "100% of row" if normalise_rows else short(peak)
    body.append(f'<text class="tick" x="{sx + 16:.1f}" y="{top + 9:.1f}">{hi_text}</text>'
                f'<text class="tick" x="{sx + 16:.1f}" y="{top + cell * n:.1f}">{"0%" if normalise_rows else "1"}</text>')
    return document(width, height, body, title=title,
                attrs={"chart": "heatmap", "normalised": "rows" if normalise_rows else "none", **(attrs or {})})


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
    frame = _Frame(width, height, (lo, hi), (0, max(counts, default=1) or 1), y_integer=True)
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


def interval_chart(items: Sequence[dict[str, Any]], *, title: str, x_label: str, width: float = 620,
                   attrs: dict[str, Any] | None = None) -> str:
    """Deltas with their confidence intervals, one row each: ``{"label", "delta", "low",
    "high", "status", "significant"}``, every row on its own scale (metrics differ by orders
    of magnitude: absrel 0.01, rmse 0.5, counts in the hundreds), zero in the middle, the
    numbers written on the right (``data-scale``: the row's half-width). A significant
    change is blue ▲ (better) or vermillion ▼ (worse); one whose interval includes 0, or that
    has none, is grey △ ▽ (the shape carries the meaning too). Labels are never cut: the
    chart widens to hold the longest."""
    label_px = max(60, CHAR_PX * max((len(it["label"]) for it in items), default=6) + 10)
    notes = [short(it["delta"]) + (f" [{short(it['low'])}, {short(it['high'])}]"
                                   if it.get("low") is not None else "") for it in items]
    note_px = max(60, CHAR_PX * max((len(n) for n in notes), default=6) + 12)
    plot = max(width - label_px - note_px - 14, 240)
    width = label_px + 14 + plot + note_px
    row = 20
    height = 40 + row * len(items) + 10
    frame = _Frame(width, height, (-1.1, 1.1), (0, 1), left=label_px + 14, right=note_px, top=8, bottom=34)
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
            colour, mark = NEUTRAL, {"improved": "△", "regressed": "▽"}.get(status, "●")
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


def value_grid(rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[float | None]], *,
               title: str, value_label: str, domain: tuple[float, float] = (0.0, 1.0),
               row_label: str = "", column_label: str = "", attrs: dict[str, Any] | None = None) -> str:
    """A grid of values (per class × per range band): each cell coloured by its value on
    ``domain`` (viridis) with the value written in it; a None cell is grey "n/a". Each
    cell carries ``data-row``, ``data-col`` (the labels) and ``data-value``."""
    cell_w, cell_h = 62.0, 22.0
    label_px = min(200, CHAR_PX * max((len(str(r)) for r in rows), default=4) + 12)
    left, top = label_px + (18 if row_label else 4), 40
    width = max(left + cell_w * len(columns) + 12,  # room for the centred column label
                left + cell_w * len(columns) / 2 + CHAR_PX * len(column_label) / 2 + 12)
    height = top + cell_h * len(rows) + 28
    lo, hi = domain
    body = [f'<text class="label" x="{left + cell_w * len(columns) / 2:.1f}" y="12" text-anchor="middle">'
            f"{esc(column_label)}</text>"] if column_label else []
    if row_label:
        body.append(f'<text class="label" transform="translate(12,{top + cell_h * len(rows) / 2:.1f}) '
                    f'rotate(-90)" text-anchor="middle">{esc(row_label)}</text>')
    for j, name in enumerate(columns):
        body.append(f'<text class="tick" x="{left + cell_w * (j + 0.5):.1f}" y="{top - 6:.1f}" '
                    f'text-anchor="middle">{esc(str(name)[:12])}</text>')
    for i, name in enumerate(rows):
        y = top + cell_h * i
        body.append(f'<text class="tick" x="{left - 5:.1f}" y="{y + cell_h / 2 + 4:.1f}" '
                    f'text-anchor="end">{esc(str(name)[:30])}</text>')
        for j, value in enumerate(values[i]):
            x = left + cell_w * j
            where = f'data-row="{esc(name)}" data-col="{esc(columns[j])}" data-value="{datum(value)}"'
            if value is None:
                body.append(f'<rect class="cell0" x="{x:.1f}" y="{y:.1f}" width="{cell_w - 1:.1f}" '
                            f'height="{cell_h - 1:.1f}" {where}><title>{esc(name)}, {esc(columns[j])}: '
                            f'n/a</title></rect><text class="note" x="{x + cell_w / 2:.1f}" '
                            f'y="{y + cell_h / 2 + 4:.1f}" text-anchor="middle">n/a</text>')
                continue
            t = (value - lo) / ((hi - lo) or 1.0)
            body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell_w - 1:.1f}" height="{cell_h - 1:.1f}" '
                        f'fill="{viridis(t)}" {where}><title>{esc(name)}, {esc(columns[j])}: '
                        f"{short(value, 4)}</title></rect>"
                        f'<text x="{x + cell_w / 2:.1f}" y="{y + cell_h / 2 + 4:.1f}" text-anchor="middle" '
                        f'font-size="11" style="fill:{_text_on(min(max(t, 0.0), 1.0))}">{short(value)}</text>')
    body.append(f'<text class="note" x="{left:.1f}" y="{height - 8:.1f}">{esc(value_label)}: colour from '
                f"{short(lo)} (dark) to {short(hi)} (light)</text>")
    return document(width, height, body, title=title, attrs={"chart": "grid", **(attrs or {})})


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
    frame = _Frame(width, height, (lo, hi), (0, 1), left=14, right=14, top=30, bottom=30)
    body = [f'<circle cx="20" cy="12" r="4" fill="none" stroke="{NEUTRAL}" stroke-width="2"/>'
            f'<text class="legend" x="28" y="16">{esc(names[0])}</text>'
            f'<circle cx="{40 + CHAR_PX * len(names[0]):.1f}" cy="12" r="4" fill="{GOOD}"/>'
            f'<text class="legend" x="{48 + CHAR_PX * len(names[0]):.1f}" y="16">{esc(names[1])}</text>']
    for t in _ticks(lo, hi, 4):
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
