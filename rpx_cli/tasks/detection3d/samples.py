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
from rpx_cli.io.kitti_labels import KittiObjects
from rpx_cli.ops import detection3d as d3
from rpx_cli.ops.matching import passes
from rpx_cli.params.values import Band
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection3d.params import Conventions


@dataclass
class SamplePair:
    """One sample's boxes, as read (the statistic every pair keeps): rpx 3D boxes, or KITTI's
    camera-frame objects under ``--protocol kitti``."""

    gt: Boxes3D | KittiObjects
    pred: Boxes3D | KittiObjects


def encode_pair(pair: SamplePair) -> dict[str, Any]:
    return {"gt": pair.gt.as_json(), "pred": pair.pred.as_json()}


def decode_pair(data: dict[str, Any]) -> SamplePair:
    kind = KittiObjects if data["gt"].get("kitti") else Boxes3D
    return SamplePair(kind.from_json(data["gt"]), kind.from_json(data["pred"]))


def check_count(boxes: Boxes3D, params: Params, path: str, where: str) -> None:
    limit = params["max_boxes"]
    if len(boxes) > limit:
        raise InputError(f"{where}{len(boxes)} predictions in one sample, more than --max-boxes "
                         f"{limit} (the devkit's max_boxes_per_sample)", path=path)


# no sensor sees this far: boxes whose distance from the ego (``ego_translation``, else the
# centre) is mostly beyond it are in a map (global) frame, where caps and ranges mean nothing
GLOBAL_FRAME_M = 300.0


def check_frame(distance: np.ndarray, params: Params, path: str, role: str) -> None:
    """Refuse boxes that are clearly in a global (map) frame when ``--class-range`` or
    ``--range`` would measure them from the ego: the median distance beyond
    :data:`GLOBAL_FRAME_M`. Without the check every box is farther than its cap and the
    run scores 0 with nothing said (issue 30)."""
    if not distance.size or not (params.get("class_range") or params.get("ranges")):
        return
    median = float(np.median(distance))
    if median <= GLOBAL_FRAME_M:
        return
    flags = " and ".join(flag for flag, key in (("--class-range", "class_range"),
                                                 ("--range", "ranges")) if params.get(key))
    side = "predicted" if role == "pred" else "GT"
    raise InputError(
        f"the {side} boxes look like global (map) coordinates: their median distance "
        f"from the origin is {median:.0f} m, beyond any sensor's range, so {flags} (measured "
        "from the ego) would drop every box. Give each box 'ego_translation' (its centre minus "
        "the ego position, as the devkit's add_center_dist; examples/nuscenes_to_rpx.py writes "
        f"it), or leave out {flags}", path=path)


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
                c: Conventions) -> tuple[d3.Side, d3.Side, list[str]]:
    """Class caps (``--class-range``, kept by ``c.cap_rule``; predictions too when
    ``c.cap_predictions``) and the point filter (``c.min_pts``), and a warning for each
    filter that removes every GT box of a class, or of the run, naming the filter and the
    counts before and after (:func:`filter_warnings`)."""
    caps = np.full(len(classes), np.inf)
    for name, cap in class_range.items():
        if name in classes:
            caps[classes.index(name)] = cap

    def has_points(side: d3.Side) -> np.ndarray:
        return (side.num_pts < 0) | (side.num_pts >= c.min_pts)

    def within_cap(side: d3.Side) -> np.ndarray:
        if not np.isfinite(caps).any():
            return np.ones(len(side), bool)
        return passes(side.distance, caps[side.cls], c.cap_rule) | ~np.isfinite(caps[side.cls])

    points_ok, cap_ok = has_points(gt), within_cap(gt)
    steps = [(f"--min-pts {c.min_pts} (the point filter)", points_ok),
             ("--class-range", points_ok & cap_ok)]
    warnings = filter_warnings(gt.cls, classes, steps, caps)
    keep_pred = has_points(pred)
    if c.cap_predictions:
        keep_pred &= within_cap(pred)
    return gt.where(points_ok & cap_ok), pred.where(keep_pred), warnings


def filter_warnings(cls: np.ndarray, classes: list[str],
                    steps: list[tuple[str, np.ndarray]], caps: np.ndarray) -> list[str]:
    """One line per filter (``steps``: its flag and the GT boxes kept once it and the ones
    before it have run) that leaves a class, or the whole run, without a GT box it had:
    ``--class-range removed every GT box of car=50 (120 before, 0 after)``."""
    warnings = []
    n = len(classes)
    before = np.bincount(cls, minlength=n) if cls.size else np.zeros(n, np.int64)
    total = int(before.sum())
    for flag, kept in steps:
        after = np.bincount(cls[kept], minlength=n) if cls.size else np.zeros(n, np.int64)
        emptied = np.flatnonzero((before > 0) & (after == 0))
        if emptied.size:
            named = ", ".join(
                f"{classes[k]}{'=' + format(caps[k], 'g') if flag == '--class-range' else ''} "
                f"({before[k]} before, 0 after)" for k in emptied.tolist())
            warnings.append(f"{flag} removed every GT box of {named}")
        if total and not int(after.sum()) and int(before.sum()):
            warnings.append(f"{flag} left no GT box in the run ({int(before.sum())} before, 0 "
                            "after): every AP is 0 and every TP error undefined")
        before = after
    return warnings


def in_band(side: d3.Side, band: Band) -> d3.Side:
    """The boxes whose distance is in ``band`` (``[low, high)``)."""
    keep = side.distance >= band.low
    if band.high is not None:
        keep &= side.distance < band.high
    return side.where(keep)
