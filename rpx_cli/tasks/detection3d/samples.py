"""The samples of ``rpx eval detection3d`` as the metric sees them
(:mod:`rpx_cli.tasks.detection3d` has the task,
:mod:`rpx_cli.tasks.detection3d.params` its protocols): a sample's two box
sets as kept per stem, and all samples flattened into one GT and one prediction side
(:class:`rpx_cli.ops.detection3d.Side`), filtered by class, range and band, with the
run's :class:`~rpx_cli.tasks.detection3d.params.Conventions`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.boxes3d import Boxes3D
from rpx_cli.ops import detection3d as d3
from rpx_cli.ops.matching import passes
from rpx_cli.params.values import Band
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection3d.params import Conventions


@dataclass
class SamplePair:
    """One sample's boxes, as read (the statistic every pair keeps)."""

    gt: Boxes3D
    pred: Boxes3D


def encode_pair(pair: SamplePair) -> dict[str, Any]:
    return {"gt": pair.gt.as_json(), "pred": pair.pred.as_json()}


def decode_pair(data: dict[str, Any]) -> SamplePair:
    return SamplePair(Boxes3D.from_json(data["gt"]), Boxes3D.from_json(data["pred"]))


def check_count(boxes: Boxes3D, params: Params, path: str, where: str) -> None:
    limit = params["max_boxes"]
    if len(boxes) > limit:
        raise InputError(f"{where}{len(boxes)} predictions in one sample, more than --max-boxes "
                         f"{limit} (the devkit's max_boxes_per_sample)", path=path)


def vocabulary(pairs: list[SamplePair]) -> list[str]:
    labels = {name for pair in pairs for side in (pair.gt, pair.pred) for name in side.names}
    return sorted(labels, key=lambda label: (0, int(label), "") if label.lstrip("-").isdigit()
                  else (1, 0, label))


def flatten(pairs: list[SamplePair], classes: list[str]) -> tuple[d3.Side, d3.Side]:
    """Every sample's boxes as flat arrays with global class and attribute codes."""
    index = {name: k for k, name in enumerate(classes)}
    attribute_names = sorted({a for pair in pairs for side in (pair.gt, pair.pred)
                              for a in side.attributes})
    attr_index = {name: k for k, name in enumerate(attribute_names)}

    def side(parts: list[Boxes3D], with_scores: bool) -> d3.Side:
        counts = np.fromiter(map(len, parts), np.int64, count=len(parts))
        sample = np.repeat(np.arange(len(parts)), counts)
        # local codes -> global, through one lookup table over every sample's vocabulary
        offsets = np.cumsum([0] + [len(b.names) for b in parts])
        lut = np.array([index.get(name, -1) for b in parts for name in b.names], np.int64)
        aoff = np.cumsum([0] + [len(b.attributes) for b in parts])
        alut = np.array([attr_index[a] for b in parts for a in b.attributes] + [-1], np.int64)
        nonempty = [b for b in parts if len(b)]

        def cat(get, shape, dtype=np.float64):
            arrays = [get(b) for b in nonempty]
            return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(shape, dtype)

        local = cat(lambda b: b.label, (0,), np.int64)
        cls = lut[local + np.repeat(offsets[:-1], counts)] if local.size else local
        attr_local = cat(lambda b: b.attribute, (0,), np.int64)
        attr = np.where(attr_local < 0, -1,
                        alut[np.where(attr_local < 0, len(alut) - 1,
                                      attr_local + np.repeat(aoff[:-1], counts))]) \
            if attr_local.size else attr_local
        return d3.Side(sample, cls, cat(lambda b: b.center, (0, 3)), cat(lambda b: b.size, (0, 3)),
                       cat(lambda b: b.yaw, (0,)), cat(lambda b: b.velocity, (0, 2)), attr,
                       cat(lambda b: b.num_pts, (0,), np.int64), cat(lambda b: b.distance, (0,)),
                       cat(lambda b: b.score, (0,)) if with_scores else None)

    return side([pair.gt for pair in pairs], False), side([pair.pred for pair in pairs], True)


def base_filter(gt: d3.Side, pred: d3.Side, classes: list[str], class_range: Mapping[str, float],
                c: Conventions) -> tuple[d3.Side, d3.Side]:
    """Class caps (``--class-range``, kept by ``c.cap_rule``; predictions too when
    ``c.cap_predictions``) and the point filter (``c.min_pts``)."""
    caps = np.full(len(classes), np.inf)
    for name, cap in class_range.items():
        if name in classes:
            caps[classes.index(name)] = cap

    def keep(side: d3.Side, capped: bool) -> np.ndarray:
        ok = (side.num_pts < 0) | (side.num_pts >= c.min_pts)
        if capped and np.isfinite(caps).any():
            ok &= passes(side.distance, caps[side.cls], c.cap_rule) | ~np.isfinite(caps[side.cls])
        return ok

    return gt.where(keep(gt, True)), pred.where(keep(pred, c.cap_predictions))


def in_band(side: d3.Side, band: Band) -> d3.Side:
    """The boxes whose distance is in ``band`` (``[low, high)``)."""
    keep = side.distance >= band.low
    if band.high is not None:
        keep &= side.distance < band.high
    return side.where(keep)
