"""The pictures of a report's worst frames (``--keep-worst``, ``--images-dir``): after the
report is assembled (its ``worst_frames`` ranked, with their files), each frame gets its
image from ``--images-dir`` (found by stem, shrunk, embedded) and the overlays its task
draws from the frame's two files (:meth:`~rpx_cli.tasks.base.Task.frame_overlays`: an error
map, the predicted classes), encoded at the image's size. Nothing here changes a number: a
missing or unreadable image or file is a warning, and the frame is kept without it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rpx_cli.errors import InputError, located, unescaped
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.pictures import find_image, fitted, overlay, thumbnail
from rpx_cli.tasks.base import Task


def attach_pictures(report: dict[str, Any], task: Task, params: Mapping[str, Any]) -> list[str]:
    """Images and overlays into ``report["worst_frames"]`` (when it has frames); returns the
    warning lines for stderr (one per kind of problem, naming the first file)."""
    worst = report.get("worst_frames")
    if not isinstance(worst, dict) or not worst.get("frames"):
        return []
    images_dir = params.get("images_dir")
    problems: dict[str, list[str]] = {}
    lines = []
    if images_dir and not os.path.isdir(images_dir):
        lines.append(f"worst frames: --images-dir {images_dir} is not a folder: no image embedded")
        images_dir = None
    buffers = {"gt": FileBuffer(digest=False), "pred": FileBuffer(digest=False)}
    for frame in worst["frames"]:
        size = None
        if images_dir:
            path = find_image(images_dir, unescaped(frame["stem"]))  # reports show names escaped
            if path is None:
                problems.setdefault("no image", []).append(f"{images_dir}/{frame['stem']}.*")
                frame["image"] = None
            else:
                try:
                    picture = thumbnail(path)
                except InputError as exc:
                    problems.setdefault("unreadable image", []).append(located(path, str(exc)))
                    frame["image"] = None
                else:
                    frame["image"] = picture.as_json()
                    size = picture.width, picture.height
        if task.draws_overlays and frame.get("gt_path"):
            drawn = _overlays(task, params, frame, buffers, size, problems)
            if drawn:
                frame["overlays"] = drawn
    return lines + [f"worst frames: {kind}: {len(items)} frame(s), e.g. {items[0]}"
                    for kind, items in problems.items()]


def _overlays(task: Task, params: Mapping[str, Any], frame: Mapping[str, Any],
              buffers: Mapping[str, FileBuffer], size: tuple[int, int] | None,
              problems: dict[str, list[str]]) -> dict[str, Any]:
    """The frame's two files read again and drawn by its task, each overlay encoded at
    ``size`` (the image's), else fitted to the page's picture size."""
    def quiet(kind: str, path: str) -> None:
        """Warnings were given when the pair was evaluated."""

    try:
        gt = task.read(unescaped(frame["gt_path"]), buffers["gt"], params, quiet, role="gt")
        pred = task.read(unescaped(frame["pred_path"]), buffers["pred"], params, quiet, role="pred") \
            if frame.get("pred_path") else task.empty_prediction(gt, params)
        layers = task.frame_overlays(pred, gt, params)
    except (InputError, OSError, ValueError) as exc:  # changed since the run, or gone
        problems.setdefault("unreadable file", []).append(str(exc))
        return {}
    out = {}
    for name, (rgba, smooth) in layers.items():
        width, height = size or fitted(rgba.shape[1], rgba.shape[0])[:2]
        out[name] = overlay(rgba, width, height, smooth=smooth).as_json()
    return out

