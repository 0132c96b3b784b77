"""The parameters of ``rpx eval detection`` (:mod:`rpx_cli.tasks.detection` has the task):
what a run records (:func:`normalise`: the shared parameters, then what the run's similarity
kind and protocol record) and the combinations no run can use (:func:`check`: each part's
own refusals). Each value alone was checked by its option's declaration (choices, bounds)."""

from __future__ import annotations

from typing import Any

from rpx_cli.errors import ParameterError
from rpx_cli.io.boxes import load_class_map
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import (
    DEFAULT_GEOMETRY,
    DEFAULT_IOU_TYPE,
    DEFAULT_PROTOCOL,
    FORMATS,
    PROTOCOL_OPTIONS,
    SimilarityKind,
    kind_of,
    protocol_of,
)

# options only some parts read: each part records them (or not) in normalise
_PART_OPTIONS = ("geometry", "angle_unit", "oks_sigmas")
_FORMAT_OPTIONS = ("image_size", "data_yaml", "class_names", "kpt_shape", "oi_class_descriptions")


def normalise(params: Params) -> dict[str, Any]:
    """The report's ``params``: thresholds as floats, the class map loaded, the iou type and
    protocol always; the kind's own (``geometry`` for shapes other than boxes, with
    ``angle_unit`` for rotated boxes and without ``box_format``; ``oks_sigmas`` for
    keypoints) and the protocol's (``max_dets`` for LVIS, ``ultralytics_version``)."""
    mapping = params.get("class_map")
    if isinstance(mapping, str):
        mapping = load_class_map(mapping)
    out = {**params, "class_map": mapping, "iou_threshold": float(params["iou_threshold"]),
           "conf_threshold": float(params["conf_threshold"])}
    out.setdefault("iou_type", DEFAULT_IOU_TYPE)
    out.setdefault("protocol", DEFAULT_PROTOCOL)
    given = {name: out.pop(name, None) for name in _PART_OPTIONS}
    given["geometry"] = given["geometry"] or DEFAULT_GEOMETRY
    given["angle_unit"] = given["angle_unit"] or "deg"
    own = {name: out.pop(name, None) for name in PROTOCOL_OPTIONS}
    kind_of({**out, "geometry": given["geometry"]}).normalise(out, given)
    protocol_of(out).normalise(out, own)
    # the formats' options: recorded when given (the formats themselves always)
    out.setdefault("pred_format", "auto")
    out.setdefault("gt_format", "auto")
    for name in _FORMAT_OPTIONS:
        value = out.pop(name, None)
        if value is not None:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


def check_parts(params: Params) -> SimilarityKind:
    """What the run's parts refuse: the kind's (TIDE, a missing extra), then the protocol's
    (kinds it does not score, ``--max-dets``, TIDE). Returns the kind."""
    kind = kind_of(params)
    kind.check(params)
    protocol_of(params).check(params, kind)
    return kind


def check(params: Params) -> None:
    """Combinations no run can use: the kind's (TIDE, a missing extra), then the
    protocol's (kinds it does not score, ``--max-dets``, TIDE)."""
    kind = check_parts(params)
    for role in ("pred", "gt"):
        name = params.get(f"{role}_format", "auto")
        fmt = FORMATS.get(name)
        if fmt is None:
            continue
        if fmt.file_options:
            flags = "/".join("--" + option.replace("_", "-") for option in fmt.file_options)
            raise ParameterError(f"--{role}-format {name}: {fmt.title} files are given as "
                                 f"{flags}, not as --pred-dir/--gt-dir")
        if not fmt.expresses(kind):
            fmt.form_for(kind)  # the ParameterError naming what is missing
