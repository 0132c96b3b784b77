"""The COCO view and the pooled operating point of resamples of the images, for ``rpx
compare``'s paired bootstrap (:mod:`rpx_cli.run.pooled`), without summarising each resample
from the start.

Everything COCOeval decides image by image — each detection's match at every IoU threshold
and area range, which GT counts where — and each image's TP/FP/FN at the operating point do
not depend on the other images, so they are computed once (:func:`rpx_cli.ops.coco.match`,
:func:`~rpx_cli.tasks.detection.views.operating_point`); a resample then only pools its
images (:func:`rpx_cli.ops.coco.accumulate` over the drawn images' detections, copies
adjacent; the counts weighted by how often each image was drawn). The figures are those
:func:`~rpx_cli.tasks.detection.summary.summarize_frames` gives the resampled frames, bit
for bit: the same arithmetic in the same order (``rpx compare`` checks it on the shared
stems before it trusts this route, and the tests against folders of the drawn images).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from rpx_cli.io.box_table import FrameTable
from rpx_cli.ops.coco import accumulate, match
from rpx_cli.ops.reduce import prf
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import COCO_SECTION, kind_of, protocol_of
from rpx_cli.tasks.detection.views import coco_input, operating_point, vocabulary
from rpx_cli.tasks.stats import StatTable

POOLED = ("precision", "recall", "f1", "tp", "fp", "fn")


def resampler(stats: StatTable, params: Params,
              paths: Sequence[str]) -> Callable[[np.ndarray], Mapping[str, Any]] | None:
    """The figures ``paths`` of any resample of ``stats``' frames (sorted frame indices, a
    frame drawn k times k times), or None where this route does not apply: a protocol other
    than COCO's, or a figure outside ``dataset.coco`` (AP/AR and per class) and
    ``dataset.pooled``."""
    kind, protocol = kind_of(params), protocol_of(params)
    if not protocol.pools_image_matches or protocol.section != COCO_SECTION:
        return None
    prefixes = (f"dataset.{COCO_SECTION}.", "dataset.pooled.")
    if not paths or not all(path.startswith(prefixes) for path in paths):
        return None
    frames = stats["frame"]
    table = frames if isinstance(frames, FrameTable) else FrameTable.from_frames(
        frames, params.get("categories") or vocabulary(frames))
    table = protocol.frames(table, params)
    gt_ignore = kind.gt_ignore(table)
    if table.gt.ignore is not None:
        gt_ignore = table.gt.ignore if gt_ignore is None else gt_ignore | table.gt.ignore
    geometry, table = kind.similarity(table, frames, params)
    n = table.n
    used = ~((table.gt.counts(n) == 0) & bool(params["skip_empty_gt"]))
    counts = [x * used for x in operating_point(table, params["iou_threshold"],
                                                params["conf_threshold"], geometry=geometry)]
    data = coco_input(table, geometry=geometry, area_given=kind.area_given, gt_ignore=gt_ignore)
    image = table.coco_image()
    matches = match(data, protocol.coco_params(kind, params))
    labels = list(table.vocabulary)

    def figures(index: np.ndarray) -> dict[str, Any]:
        drawn = np.bincount(index, minlength=n)
        totals = [int((drawn * x).sum()) for x in counts]
        out = {f"dataset.pooled.{key}": value for key, value in
               {**prf(*totals), **dict(zip(("tp", "fp", "fn"), totals, strict=True))}.items()}
        result = accumulate(matches, np.sort(image[index]))
        out.update({f"dataset.{COCO_SECTION}.{name}": value
                    for name, value in result.stats().items()})
        out.update({f"dataset.{COCO_SECTION}.per_class.{label}.AP": ap
                    for label, ap in zip(labels, result.per_category_ap(), strict=True)})
        return out

    if not set(paths) <= set(figures(np.arange(n))):
        return None
    return figures
