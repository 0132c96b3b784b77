"""Grids of coloured cells for the HTML report: confusion matrices (a heatmap, by count
or by share of the row) and values per row and column (per class x per range band)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rpx_cli.report.markup import data_list, datum, esc, short
from rpx_cli.report.svg import CHAR_PX, LABEL_PX, document, text_on, viridis

COMPACT_CELLS = 40 * 40  # larger heatmaps are drawn compactly (see heatmap)


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
    # the rotated row label, centred on the rows, lies within the chart: a few rows push it down
    half = LABEL_PX * len(row_label) / 2 + 2
    row_mid = max(top + cell * n / 2, half)
    height = max(height, row_mid + half)
    sums = [sum(r) for r in matrix]
    peak = max((v for r in matrix for v in r), default=0) or 1
    body = [f'<text class="label" x="{left + cell * m / 2:.1f}" y="12" text-anchor="middle">{esc(column_label)}</text>',
            f'<text class="label" transform="translate(12,{row_mid:.1f}) rotate(-90)" '
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
                            f'text-anchor="middle" font-size="{min(10.0, font):.1f}" style="{text_on(t)}">'
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
    half = LABEL_PX * len(row_label) / 2 + 2  # the rotated row label within the chart
    row_mid = max(top + cell_h * len(rows) / 2, half)
    height = max(height, row_mid + half)
    lo, hi = domain
    body = [f'<text class="label" x="{left + cell_w * len(columns) / 2:.1f}" y="12" text-anchor="middle">'
            f"{esc(column_label)}</text>"] if column_label else []
    if row_label:
        body.append(f'<text class="label" transform="translate(12,{row_mid:.1f}) '
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
                        f'font-size="11" style="{text_on(t)}">{short(value)}</text>')
    body.append(f'<text class="note" x="{left:.1f}" y="{height - 8:.1f}">{esc(value_label)}: colour from '
                f"{short(lo)} (dark) to {short(hi)} (light)</text>")
    return document(width, height, body, title=title, attrs={"chart": "grid", **(attrs or {})})
