"""The options that put the worst frames into a report, for its page (docs/reports.md: the page is
built from the JSON alone): ``--keep-worst N`` (what the page draws of the N frames worst
by the task's rank metric: boxes, overlays) and ``--images-dir DIR`` (the frames' images,
paired by stem, drawn under them). Declared once here; a task that can draw its frames
lists them in its ``options``. Their caps are :mod:`rpx_cli.io.pictures`' (docs/cli.md)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from rpx_cli.io.pictures import IMAGE_SUFFIXES, MAX_SIDE
from rpx_cli.params.option import Option

WORST_DEFAULT = 10  # frames kept when --html or --images-dir asks and --keep-worst does not say
MAX_KEEP_WORST = 50
MAX_FRAME_BOXES = 300  # boxes kept per side of a frame (predictions: the highest scores)

KEEP_WORST = Option(
    "keep_worst", "--keep-worst", "int", None, minimum=0, maximum=MAX_KEEP_WORST, metavar="N",
    changes_numbers=False,
    help="Keep what the HTML page draws of the N frames worst by the rank metric in the report "
         "(worst_frames: boxes, error overlays, images) [default: 0; "
         f"{WORST_DEFAULT} with --html or --images-dir].")
IMAGES_DIR = Option(
    "images_dir", "--images-dir", "dir", None, metavar="DIR", changes_numbers=False,
    help="Images paired by stem (" + " ".join(IMAGE_SUFFIXES) + "): the worst frames are drawn "
         f"on them, shrunk to {MAX_SIDE} px and embedded in the report (a missing or unreadable "
         "image is a warning).")


def settle(values: MutableMapping[str, Any], *, html: bool = False) -> None:
    """``keep_worst`` when not given: :data:`WORST_DEFAULT` with ``--images-dir`` (or
    ``--html``), else 0."""
    if "keep_worst" in values and values["keep_worst"] is None:
        values["keep_worst"] = WORST_DEFAULT if (html or values.get("images_dir")) else 0
