"""The worst frames on the HTML page (``worst_frames``: ``--keep-worst``, ``--html``,
``--images-dir``): each frame's picture (:mod:`rpx_cli.report.svg_frames`), captioned, worst
first, with what the colours and overlays mean."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.report import svg_frames
from rpx_cli.report.html_blocks import ARROW, section_html
from rpx_cli.report.markup import datum, esc, short

# what the page says of the overlays the tasks draw (rpx_cli.tasks.base.Task.frame_overlays)
OVERLAY_NOTES = {"errors": "<b>errors</b>: wrong pixels vermillion, ignored ones grey",
                 "classes": "<b>classes</b>: the prediction in the class colours",
                 "absrel": "<b>absrel</b>: |p − g| / g of each valid pixel, viridis from 0 (dark) to 0.5 "
                           "and beyond (light)"}


def frames_section(report: Mapping[str, Any]) -> str:
    """The worst frames (``worst_frames``, ``--keep-worst``/``--html``/``--images-dir``):
    footprints seen from above, or the frame's image with its overlays and boxes, worst
    first, each captioned with its stem and value."""
    worst = report.get("worst_frames")
    if not isinstance(worst, Mapping) or not worst.get("frames"):
        return ""
    metric, conf = worst.get("metric"), worst.get("conf_threshold") or 0.0
    pictures = []
    for frame in worst["frames"]:
        caption = f"{frame['stem']} — {metric} {short(frame.get('value'))}"
        name = {"name": "frame", "stem": frame["stem"], "value": datum(frame.get("value"))}
        boxes = (frame.get("gt") or {}).get("box") or (frame.get("pred") or {}).get("box") or []
        if boxes and len(boxes[0]) == 5:  # footprints [x, y, w, l, yaw]
            drawn = [svg_frames.bev(frame, title=caption, conf_threshold=conf, attrs=name)]
        else:
            layers = list(frame.get("overlays") or {}) or [""]
            drawn = [svg_frames.frame_picture(frame, title=f"{caption} {layer}".strip(), layers=[layer] if layer else [],
                                       conf_threshold=conf, skeleton=worst.get("skeleton") or (),
                                       attrs={**name, "layer": layer})
                     for layer in layers]
        pictures.append(f'<figure data-stem="{esc(frame["stem"])}">{"".join(drawn)}<figcaption class="muted">'
                        f"<code>{esc(frame['stem'])}</code> {esc(metric)} {esc(short(frame.get('value')))}"
                        "</figcaption></figure>")
    frames = worst["frames"]
    said = [f"the {len(frames)} frames worst by {esc(metric)} ({esc(ARROW.get(str(worst.get('direction')), ''))})"]
    if any(f.get("gt") or f.get("pred") for f in frames):
        said.append("GT outlined (blue found, vermillion dashed missed), predictions filled (blue matched, orange "
                    "false; faint below the confidence threshold)")
    if any((f.get(side) or {}).get("mask") for f in frames for side in ("gt", "pred")):
        said.append("each mask a translucent fill in its box's colour (GT and prediction overlap where they agree)")
    if any((f.get(side) or {}).get("points") for f in frames for side in ("gt", "pred")):
        said.append("keypoints: GT as rings, predictions as dots, in their object's colour"
                    + (", joined by the skeleton" if worst.get("skeleton") else ""))
    layers = {layer for f in frames for layer in (f.get("overlays") or {})}
    said += [OVERLAY_NOTES[layer] for layer in sorted(layers) if layer in OVERLAY_NOTES]
    if any("image" in f and f["image"] is None for f in frames):
        said.append("a grey panel: no image for that stem in --images-dir")
    note = "; ".join(said)
    return section_html("worst frames", f'<div class="multiples">{"".join(pictures)}</div>', note, kind="frames")
