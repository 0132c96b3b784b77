"""The worst frames as pictures (``--keep-worst``, ``--images-dir``): a bird's-eye view of a
3D frame's footprints (:func:`bev`) and a 2D frame's boxes over its image or an error map
(:func:`frame_picture`), matches and misses coloured alike. Built from the report's JSON
alone, like every chart of :mod:`rpx_cli.report.svg`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rpx_cli.report.markup import datum, esc, short
from rpx_cli.report.svg import BAD, CHAR_PX, GOOD, document

FOUND, MISSED, FALSE = GOOD, BAD, "#E69F00"  # matched, a GT missed, a false positive
FRAME_PX = 320.0
MIN_FRAME_PX = 240.0


def _legend_row(items: Sequence[tuple[str, str, str, bool]], y: float) -> list[str]:
    """Swatches in one row: (name, colour, dash, filled) — dash and fill repeat the meaning
    in shape."""
    out, x = [], 6.0
    for name, colour, dash, filled in items:
        style = f' stroke-dasharray="{dash}"' if dash else ""
        fill = f'fill="{colour}" fill-opacity="0.3"' if filled else 'fill="none"'
        out.append(f'<rect x="{x:.1f}" y="{y - 8:.1f}" width="14" height="9" {fill} stroke="{colour}" '
                   f'stroke-width="2"{style}/><text class="legend" x="{x + 18:.1f}" y="{y:.1f}">{esc(name)}</text>')
        x += 24 + CHAR_PX * len(name)
    return out


FRAME_LEGEND = (("GT found", FOUND, "", False), ("GT missed", MISSED, "4 3", False),
                ("pred ok", FOUND, "", True), ("pred false", FALSE, "", True))


def _nice_step(extent: float) -> float:
    raw = extent / 4
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def bev(frame: dict[str, Any], *, title: str, conf_threshold: float = 0.0, size: float = FRAME_PX,
        attrs: dict[str, Any] | None = None) -> str:
    """A bird's-eye view of one frame's boxes (``frame["gt"]``, ``frame["pred"]``: footprints
    ``[x, y, w, l, yaw]`` in metres, ``matched`` flags): the sensor at the centre, x to the
    right, y up, distance rings; GT as outlines (blue found, vermillion dashed missed),
    predictions filled (blue matched, orange false; faint below the confidence threshold),
    each with a heading tick. Every box carries ``data-side``, ``data-label``,
    ``data-matched`` (and ``data-score``)."""
    gt, pred = frame.get("gt") or {}, frame.get("pred") or {}
    boxes = [*(gt.get("box") or []), *(pred.get("box") or [])]
    reach = max([max(abs(b[0]), abs(b[1])) + max(b[2], b[3]) / 2 for b in boxes] or [10.0])
    step = _nice_step(max(reach, 10.0))
    radius = step * math.ceil(reach / step)
    top = 24.0
    half = size / 2
    scale = (half - 8) / radius
    cx, cy = half, top + half

    def point(x: float, y: float) -> str:
        return f"{cx + x * scale:.1f},{cy - y * scale:.1f}"

    body = _legend_row(FRAME_LEGEND, 14)
    for k in range(1, round(radius / step) + 1):
        r = k * step * scale
        body.append(f'<circle class="grid" cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="none"/>'
                    f'<text class="note" x="{cx + r * 0.71 + 2:.1f}" y="{cy - r * 0.71 - 2:.1f}">'
                    f"{short(k * step)} m</text>")
    body.append(f'<path class="ax" d="M{cx - 5:.1f},{cy + 4:.1f}L{cx + 7:.1f},{cy:.1f}L{cx - 5:.1f},{cy - 4:.1f}Z"/>')
    for side, data in (("gt", gt), ("pred", pred)):
        scores = data.get("score") or []
        for i, (x, y, w, length, yaw) in enumerate(data.get("box") or []):
            c, s = math.cos(yaw), math.sin(yaw)
            hx, hy, nx, ny = c * length / 2, s * length / 2, -s * w / 2, c * w / 2
            corners = [(x + hx + nx, y + hy + ny), (x + hx - nx, y + hy - ny),
                       (x - hx - nx, y - hy - ny), (x - hx + nx, y - hy + ny)]
            shape = " ".join(point(px, py) for px, py in corners)
            matched = bool(data["matched"][i])
            label = data["label"][i]
            info = f'data-side="{side}" data-label="{esc(label)}" data-matched="{datum(matched)}"'
            if side == "gt":
                colour, dash = (FOUND, "") if matched else (MISSED, ' stroke-dasharray="4 3"')
                style = f'fill="none" stroke="{colour}" stroke-width="1.6"{dash}'
                tip = f"GT {label}: {'found' if matched else 'missed'}"
            else:
                score = scores[i]
                colour = FOUND if matched else FALSE
                faint = ' opacity="0.35"' if score < conf_threshold else ""
                style = f'fill="{colour}" fill-opacity="0.3" stroke="{colour}" stroke-width="1.2"{faint}'
                info += f' data-score="{datum(score)}"'
                tip = f"{label} {short(score)}: {'matched' if matched else 'false positive'}"
            body.append(f'<polygon points="{shape}" {style} {info}><title>{esc(tip)}</title></polygon>'
                        f'<path d="M{point(x, y)}L{point(x + hx, y + hy)}" stroke="{colour}" stroke-width="1"/>')
    return document(size, size + top, body, title=title, attrs={"chart": "bev", **(attrs or {})})


def frame_picture(frame: dict[str, Any], *, title: str, layers: Sequence[str] = (),
                  conf_threshold: float = 0.0, attrs: dict[str, Any] | None = None) -> str:
    """One frame as the page shows it: its image (``frame["image"]``), the overlays named in
    ``layers`` laid over it, and its boxes (``[x, y, w, h]`` in the image's pixels, drawn at
    the picture's scale): GT as outlines (blue found, vermillion dashed missed),
    predictions lightly filled (blue matched, orange false; faint below the confidence
    threshold). Without an image the overlays, or the boxes alone, on the page's panel."""
    image = frame.get("image")
    overlays = [frame["overlays"][name] for name in layers if name in (frame.get("overlays") or {})]
    gt, pred = frame.get("gt") or {}, frame.get("pred") or {}
    base = image or (overlays[0] if overlays else None)
    if base is not None:
        width, height, scale = float(base["width"]), float(base["height"]), float(base["scale"])
    else:  # boxes only: their extent, shrunk to the frame size
        corners = [(b[0] + b[2], b[1] + b[3]) for b in (*(gt.get("box") or []), *(pred.get("box") or []))]
        extent_w = max([c[0] for c in corners] or [1.0])
        extent_h = max([c[1] for c in corners] or [1.0])
        scale = min(1.0, FRAME_PX / max(extent_w, extent_h, 1.0))
        width, height = max(extent_w * scale, 40.0), max(extent_h * scale, 40.0)
    # a small frame (a 64 x 48 label map) is shown larger, its pixels kept square
    grow = max(1.0, min(MIN_FRAME_PX / max(width, 1.0), 8.0))
    width, height, scale = width * grow, height * grow, scale * grow
    top = 18.0 if (gt or pred) else 0.0
    body = _legend_row(FRAME_LEGEND, 12) if top else []
    body.append(f'<rect class="cell0" x="0" y="{top:.1f}" width="{width:.1f}" height="{height:.1f}"/>')
    if image is not None:
        body.append(f'<image href="{esc(image["data"])}" x="0" y="{top:.1f}" width="{width:.1f}" '
                    f'height="{height:.1f}" data-layer="image"/>')
    for name, layer in zip([n for n in layers if n in (frame.get("overlays") or {})], overlays, strict=True):
        body.append(f'<image href="{esc(layer["data"])}" x="0" y="{top:.1f}" width="{width:.1f}" '
                    f'height="{height:.1f}" preserveAspectRatio="none" style="image-rendering:pixelated" '
                    f'data-layer="{esc(name)}"/>')
    for side, data in (("gt", gt), ("pred", pred)):
        scores = data.get("score") or []
        for i, (x, y, w, h) in enumerate(data.get("box") or []):
            matched = bool(data["matched"][i])
            label = data["label"][i]
            if side == "gt":
                colour = FOUND if matched else MISSED
                dash = "" if matched else ' stroke-dasharray="4 3"'
                extra, tip = "", f"GT {label}: {'found' if matched else 'missed'}"
            else:
                colour, dash = (FOUND if matched else FALSE), ""
                extra = f' data-score="{datum(scores[i])}"' + (' opacity="0.35"' if scores[i] < conf_threshold else "")
                tip = f"{label} {short(scores[i])}: {'matched' if matched else 'false positive'}"
            fill = f'fill="{colour}" fill-opacity="0.15"' if side == "pred" else 'fill="none"'
            body.append(f'<rect x="{x * scale:.1f}" y="{top + y * scale:.1f}" width="{max(w * scale, 1):.1f}" '
                        f'height="{max(h * scale, 1):.1f}" {fill} stroke="{colour}" stroke-width="1.5"{dash} '
                        f'data-side="{side}" data-label="{esc(label)}" data-matched="{datum(matched)}"{extra}>'
                        f"<title>{esc(tip)}</title></rect>")
    return document(width, height + top, body, title=title, attrs={"chart": "frame", **(attrs or {})})
