"""What every inline SVG chart of the HTML report is drawn with, as text (no plotting
library): the ``<svg>`` document, a plot area with linear scales and labelled axes, round
ticks, a legend, and the colours.

Every chart is one ``<svg>`` element that draws with CSS classes (``ax``, ``grid``,
``label``: colours come from the page, so light and dark mode both work) and a
colour-blind-safe palette (Okabe & Ito; viridis for heatmaps). The numbers each mark shows
are in ``data-*`` attributes (:func:`rpx_cli.report.markup.datum`). The charts themselves
are drawn by kind: lines (:mod:`~rpx_cli.report.svg_lines`), bars and histograms
(:mod:`~rpx_cli.report.svg_bars`), grids of cells (:mod:`~rpx_cli.report.svg_grids`),
intervals (:mod:`~rpx_cli.report.svg_intervals`) and the worst frames
(:mod:`~rpx_cli.report.svg_frames`).

Pure Python: rendering a report never imports numpy.
"""

from __future__ import annotations

import math
from typing import Any

from rpx_cli.report.markup import esc, short

# Okabe & Ito, "Color Universal Design" (2008): distinguishable with every common form of
# colour blindness; yellow last (weak on white)
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
GOOD, BAD, NEUTRAL = "#0072B2", "#D55E00", "#888888"
# viridis at 0, .25, .5, .75, 1 (perceptually uniform, colour-blind safe)
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
CHAR_PX = 6.4  # average width of a 11px sans-serif character, for label room
LABEL_PX = 7.0  # ... and of a 12px one (an axis label, class "label")
LABEL_CHARS = 60  # a longer label is shortened with "…" (its full text in a tooltip)


def label_text(name: Any) -> str:
    """``name`` as a chart's axis writes it: at most :data:`LABEL_CHARS` characters."""
    text = str(name)
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def viridis(t: float) -> str:
    t = min(max(t, 0.0), 1.0) * (len(_VIRIDIS) - 1)
    i = min(int(t), len(_VIRIDIS) - 2)
    f = t - i
    a, b = _VIRIDIS[i], _VIRIDIS[i + 1]
    return "#" + "".join(f"{round(a[k] + (b[k] - a[k]) * f):02x}" for k in range(3))


def luminance(colour: str) -> float:
    """The relative luminance of ``#rrggbb`` (WCAG 2: sRGB linearised, 0.2126 R + 0.7152 G
    + 0.0722 B), 0 for black to 1 for white."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(colour[k:k + 2], 16) / 255) for k in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_colour(fill: str) -> str:
    """Black or white, whichever contrasts more with a cell of colour ``fill`` (WCAG's
    contrast ratio (L1 + 0.05) / (L2 + 0.05)): black on cells lighter than L ≈ 0.18."""
    light = luminance(fill)
    return "#000" if (light + 0.05) / 0.05 >= 1.05 / (light + 0.05) else "#fff"


def text_on(t: float) -> str:
    """Text colour on a viridis cell of value ``t`` (:func:`text_colour`), as an inline
    style (it must win over the page's ``svg text`` colour, which follows light and dark
    mode)."""
    return f"fill:{text_colour(viridis(min(max(t, 0.0), 1.0)))}"


def ticks(lo: float, hi: float, n: int = 5, *, integer: bool = False) -> list[float]:
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


class Frame:
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
        for t in ticks(*self.yd, integer=self.y_integer):
            y = self.sy(t)
            out.append(f'<line class="grid" x1="{self.x0:.1f}" x2="{self.x1:.1f}" y1="{y:.1f}" y2="{y:.1f}"/>'
                       f'<text class="tick" x="{self.x0 - 5:.1f}" y="{y + 3.5:.1f}" text-anchor="end">'
                       f"{short(t)}</text>")
        if x_ticks:
            for t in ticks(*self.xd):
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


def legend_box(items: list[tuple[str, str, str]], x: float, y: float) -> list[str]:
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
