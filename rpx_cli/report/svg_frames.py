"""The worst frames as pictures (``--keep-worst``, ``--images-dir``): a bird's-eye view of a
3D frame's footprints (:func:`bev`) and a 2D frame's boxes over its image or an error map
(:func:`frame_picture`), matches and misses coloured alike. Built from the report's JSON
alone, like every chart of :mod:`rpx_cli.report.svg`."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from rpx_cli.report.markup import datum, esc, short
from rpx_cli.report.svg import BAD, CHAR_PX, GOOD, document

FOUND, MISSED, FALSE = GOOD, BAD, "#E69F00"  # matched, a GT missed, a false positive
FRAME_PX = 320.0
MIN_FRAME_PX = 240.0


def _legend(items: Sequence[tuple[str, str, str, bool]], y: float, width: float) -> tuple[list[str], float]:
    """Swatches in rows no wider than ``width``, the first row's text at ``y``: (name, colour,
    dash, filled) — dash and fill repeat the meaning in shape. Returns the markup and the
    height the rows take (the picture starts below)."""
    out, x, row = [], 6.0, 0
    for name, colour, dash, filled in items:
        room = 24 + CHAR_PX * len(name)
        if x > 6.0 and x + room - 6 > width:
            x, row = 6.0, row + 1
        yy = y + row * 15
        style = f' stroke-dasharray="{dash}"' if dash else ""
        fill = f'fill="{colour}" fill-opacity="0.3"' if filled else 'fill="none"'
        out.append(f'<rect x="{x:.1f}" y="{yy - 8:.1f}" width="14" height="9" {fill} stroke="{colour}" '
                   f'stroke-width="2"{style}/><text class="legend" x="{x + 18:.1f}" y="{yy:.1f}">{esc(name)}</text>')
        x += room
    return out, row * 15


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
    body, extra = _legend(FRAME_LEGEND, 14, size)
    top = 24.0 + extra
    half = size / 2
    scale = (half - 8) / radius
    cx, cy = half, top + half

    def point(x: float, y: float) -> str:
        return f"{cx + x * scale:.1f},{cy - y * scale:.1f}"

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
                  conf_threshold: float = 0.0, skeleton: Sequence[Sequence[int]] = (),
                  attrs: dict[str, Any] | None = None) -> str:
    """One frame as the page shows it: its image (``frame["image"]``), the overlays named in
    ``layers`` laid over it, and its boxes (``[x, y, w, h]`` in the image's pixels, drawn at
    the picture's scale): GT as outlines (blue found, vermillion dashed missed),
    predictions lightly filled (blue matched, orange false; faint below the confidence
    threshold); masks filled and keypoints joined by ``skeleton`` in the same colours
    (:func:`_instances`). Without an image the overlays, or the objects alone, on the page's
    panel."""
    image = frame.get("image")
    overlays = [frame["overlays"][name] for name in layers if name in (frame.get("overlays") or {})]
    gt, pred = frame.get("gt") or {}, frame.get("pred") or {}
    base = image or (overlays[0] if overlays else None)
    if base is not None:
        width, height, scale = float(base["width"]), float(base["height"]), float(base["scale"])
    else:  # boxes only: their extent (and the masks' image size), shrunk to the frame size
        corners = [(b[0] + b[2], b[1] + b[3]) for b in (*(gt.get("box") or []), *(pred.get("box") or []))]
        corners += [(m["size"][1], m["size"][0]) for m in (*(gt.get("mask") or []), *(pred.get("mask") or []))]
        extent_w = max([c[0] for c in corners] or [1.0])
        extent_h = max([c[1] for c in corners] or [1.0])
        scale = min(1.0, FRAME_PX / max(extent_w, extent_h, 1.0))
        width, height = max(extent_w * scale, 40.0), max(extent_h * scale, 40.0)
    # a small frame (a 64 x 48 label map) is shown larger, its pixels kept square
    grow = max(1.0, min(MIN_FRAME_PX / max(width, 1.0), 8.0))
    width, height, scale = width * grow, height * grow, scale * grow
    body, extra = _legend(FRAME_LEGEND, 12, width) if (gt or pred) else ([], 0.0)
    top = 18.0 + extra if (gt or pred) else 0.0
    body.append(f'<rect class="cell0" x="0" y="{top:.1f}" width="{width:.1f}" height="{height:.1f}"/>')
    if image is not None:
        body.append(f'<image href="{esc(image["data"])}" x="0" y="{top:.1f}" width="{width:.1f}" '
                    f'height="{height:.1f}" data-layer="image"/>')
    for name, layer in zip([n for n in layers if n in (frame.get("overlays") or {})], overlays, strict=True):
        body.append(f'<image href="{esc(layer["data"])}" x="0" y="{top:.1f}" width="{width:.1f}" '
                    f'height="{height:.1f}" preserveAspectRatio="none" style="image-rendering:pixelated" '
                    f'data-layer="{esc(name)}"/>')
    for side, data in (("gt", gt), ("pred", pred)):
        body += _instances(side, data, scale, top, skeleton, conf_threshold)
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


def _colour(side: str, matched: bool) -> str:
    return (FOUND if matched else MISSED) if side == "gt" else (FOUND if matched else FALSE)


def _instances(side: str, data: dict[str, Any], scale: float, top: float, skeleton: Sequence[Sequence[int]],
               conf_threshold: float) -> list[str]:
    """What a side's objects hold beyond their boxes, at the picture's ``scale``: each mask
    (``data["mask"]``, a compressed RLE) as a translucent fill in its box's colour, each
    object's points (``data["points"]``, ``[x1, y1, v1, ...]``: GT rings, predictions dots;
    a GT point with v 0 is not labelled) joined by the ``skeleton``'s lines."""
    out = []
    scores = data.get("score") or []
    for i, rle in enumerate(data.get("mask") or []):
        colour = _colour(side, bool(data["matched"][i]))
        faint = side == "pred" and scores[i] < conf_threshold
        d = _mask_path(rle, scale, top)
        if d:
            out.append(f'<path d="{d}" stroke="{colour}" stroke-width="{max(scale, 1.0):.2f}" '
                       f'stroke-opacity="{0.15 if faint else 0.4}" fill="none" data-side="{side}" '
                       f'data-mask="{i}" data-label="{esc(data["label"][i])}"/>')
    for i, flat in enumerate(data.get("points") or []):
        colour = _colour(side, bool(data["matched"][i]))
        points = [(flat[k] * scale, top + flat[k + 1] * scale, flat[k + 2]) for k in range(0, len(flat) - 2, 3)]
        shown = [side == "pred" or v > 0 for _, _, v in points]
        faint = ' opacity="0.35"' if side == "pred" and scores[i] < conf_threshold else ""
        lines = "".join(f"M{points[a][0]:.1f},{points[a][1]:.1f}L{points[b][0]:.1f},{points[b][1]:.1f}"
                        for a, b in skeleton if max(a, b) < len(points) and shown[a] and shown[b])
        if lines:
            out.append(f'<path d="{lines}" stroke="{colour}" stroke-width="1.2" fill="none"{faint}/>')
        fill = f'fill="{colour}"' if side == "pred" else 'fill="none"'
        out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" {fill} stroke="{colour}" stroke-width="1.2"{faint} '
                f'data-side="{side}" data-point="{k}"/>' for k, (x, y, _) in enumerate(points) if shown[k]]
    return out


def rle_counts(text: str) -> list[int]:
    """The runs of a compressed RLE's ``counts`` (pycocotools' ``rleFrString``): 0s first,
    then 1s, alternately, the pixels counted column by column."""
    counts: list[int] = []
    p = 0
    while p < len(text):
        x, k, more = 0, 0, True
        while more and p < len(text):
            c = ord(text[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def _mask_path(rle: dict[str, Any], scale: float, top: float) -> str:
    """A mask as vertical strokes at ``scale``: one per column of the picture (a source
    column when the picture is larger, else the source columns that fall in one picture
    pixel, merged), each covering that column's runs of 1s where they meet or overlap."""
    height = int(rle["size"][0])
    if height <= 0:
        return ""
    step = scale if scale >= 1 else 1.0  # a stroke's width: one source or picture column
    spans: dict[int, list[list[float]]] = {}
    t = 0
    # the page escaped every string of the report once (markup.escaped_document), and COCO's
    # alphabet ('0' to 'o') holds '<' and '>'
    for k, run in enumerate(rle_counts(html.unescape(str(rle["counts"])))):
        if k % 2:
            end = t + run
            while t < end:  # a run crosses into the next column: one span per column
                column, row = divmod(t, height)
                length = min(end - t, height - row)
                spans.setdefault(int(column * scale / step), []).append([row * scale, (row + length) * scale])
                t += length
        else:
            t += run
    parts = []
    for key in sorted(spans):
        merged: list[list[float]] = []
        for y0, y1 in sorted(spans[key]):
            if merged and y0 <= merged[-1][1] + 0.5:
                merged[-1][1] = max(merged[-1][1], y1)
            else:
                merged.append([y0, y1])
        parts += [f"M{(key + 0.5) * step:.1f},{top + y0:.1f}v{y1 - y0:.1f}" for y0, y1 in merged]
    return "".join(parts)
