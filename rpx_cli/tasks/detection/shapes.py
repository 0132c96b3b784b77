"""What the similarity kinds of shapes share — rotated boxes, cuboids (``kinds/rotated.py``,
``kinds/cuboid.py``: rectangles) and polygons (``kinds/polygon.py``): their objects are read
from rpx's per-stem JSON by an io layout (:mod:`rpx_cli.io.shapes`), made ready in the
workers (``prepare``: polygons repaired), and their IoU is not a formula of two boxes, so the
views see objects as ids and look their intersections up in an
:class:`~rpx_cli.ops.geometry.OverlapTable` — every frame's at once in the summary for
rectangles (:class:`RectangleKind`), per frame in the workers for polygons."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from rpx_cli.io.box_table import Frame, FrameTable
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.shapes import ShapeLayout, parse_shapes
from rpx_cli.ops.geometry import OverlapTable
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.frames import Codec, frame_stat, rows_codec
from rpx_cli.tasks.detection.parts import SimilarityKind
from rpx_cli.tasks.stats import Stat


class ShapeKind(SimilarityKind):
    """A kind of shape other than an axis-aligned box (recorded as ``params.geometry``)."""

    layout: ClassVar[ShapeLayout]  # how the per-stem JSON holds it
    codec: ClassVar[Codec]  # how a --shard part writes it

    def normalise(self, out: dict[str, Any], given: dict[str, Any]) -> None:
        out.pop("box_format", None)
        out["geometry"] = self.geometry

    def read_rpx(self, data: Any, path: str, *, prediction: bool, params: Params) -> Boxes:
        return parse_shapes(data, path, prediction=prediction, layout=self.layout, options=params)

    def statistics(self) -> tuple[Stat, ...]:
        return (frame_stat(self.codec),)

    def similarity(self, table: FrameTable, frames: Any, params: Params):
        return self.overlaps(frames, table), table.as_ids()

    def overlaps(self, frames: Any, table: FrameTable) -> OverlapTable:
        """The intersections of every frame's (prediction, GT) pairs, ids numbered as
        ``table`` lays the objects out."""
        raise NotImplementedError


class RectangleKind(ShapeKind):
    """Rectangles ``[x, y, length, width, angle]``: nothing to repair; their
    intersections are computed for every frame at once (:mod:`rpx_cli.ops.rectangles`)."""

    codec = rows_codec(5)

    def pair(self, pred: Boxes, gt: Boxes, params: Params, *, pred_path: str | None,
             gt_path: str) -> tuple[dict[str, Any], dict[str, Any]]:
        from rpx_cli.ops import rectangles

        return {"frame": Frame(replace(gt, shape=rectangles.rectangles_of(gt.shape)),
                               replace(pred, shape=rectangles.rectangles_of(pred.shape)))}, {}

    def pair_all(self, table: FrameTable) -> dict[str, Any]:
        from rpx_cli.ops import rectangles

        return {"frame": replace(table, gt=replace(table.gt, shape=rectangles.rectangles_of(table.gt.shape)),
                                 pred=replace(table.pred, shape=rectangles.rectangles_of(table.pred.shape)))}

    def overlaps(self, frames: Any, table: FrameTable) -> OverlapTable:
        from rpx_cli.ops import rectangles

        pred, gt = rectangles.rectangles_of(table.pred.shape), rectangles.rectangles_of(table.gt.shape)
        d, g, inter = rectangles.table_overlaps(pred, gt, table.pred.frame, table.gt.frame, table.n)
        return OverlapTable(rectangles.area(pred), rectangles.area(gt), d, g, inter)
