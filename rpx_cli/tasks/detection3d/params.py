"""The parameters of ``rpx eval detection3d`` (:mod:`rpx_cli.tasks.detection3d` has the task):
the conventions each ``--protocol`` fixes, the parsers of the flags, the match thresholds and
their key tokens, and the params resolved (a convention no flag sets comes from the protocol)
and checked."""

from __future__ import annotations

import math
import os
from typing import Any

from rpx_cli.errors import ParameterError
from rpx_cli.io.boxes3d import BOX_ORIGINS
from rpx_cli.io.class_names import read_class_names
from rpx_cli.ops import detection3d as d3
from rpx_cli.ops.depth import band_suffix
from rpx_cli.params.parsers import name_and_number, positive
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection3d.samples import unique_floats

NUSCENES_CLASSES = ("car", "truck", "bus", "trailer", "construction_vehicle", "pedestrian",
                    "motorcycle", "bicycle", "traffic_cone", "barrier")
# the devkit's configs/detection_cvpr_2019.json class_range
CVPR_2019_RANGES = {"car": 50, "truck": 50, "bus": 50, "trailer": 50, "construction_vehicle": 50,
                    "pedestrian": 40, "motorcycle": 40, "bicycle": 40, "traffic_cone": 30,
                    "barrier": 30}
MATCHES = ("center", "bev-iou", "iou3d")
ERRORS = d3.ERRORS
# every convention a protocol fixes, and its value under each protocol
PROTOCOLS: dict[str, dict[str, Any]] = {
    "nuscenes": {"dist_rule": "lt", "score_ties": "later", "precision_curve": "raw",
                 "absent_class": "zero", "cap_rule": "lt", "cap_predictions": True,
                 "tp_errors": "nuscenes", "pi_period_classes": ["barrier"],
                 "tp_error_exempt": {"traffic_cone": ["AOE", "AVE", "AAE"], "barrier": ["AVE", "AAE"]},
                 "min_pts": 1},
    "autoware": {"dist_rule": "le", "score_ties": "earlier", "precision_curve": "envelope",
                 "absent_class": "null", "cap_rule": "le", "cap_predictions": False,
                 "tp_errors": "autoware", "pi_period_classes": [], "tp_error_exempt": {},
                 "min_pts": 0},
}


parse_class_range = name_and_number("METRES", positive("class range"))


def parse_exempt(value: Any) -> tuple[str, tuple[str, ...]]:
    """``class=AOE,AVE`` (TP errors left undefined for that class) or ``none``; from Python,
    ``(class, [errors])``."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], str):
        name, errors = value[0], tuple(str(k).strip().upper() for k in value[1])
        sep = "="
    elif isinstance(value, str):
        if value == "none":
            return ("", ())
        name, sep, keys = value.partition("=")
        errors = tuple(k.strip().upper() for k in keys.split(",") if k.strip())
    else:
        raise ValueError(f"expected CLASS=ERR[,ERR] or none, got {value!r}")
    if not sep or not name or not errors or any(k not in ERRORS for k in errors):
        raise ValueError(f"expected CLASS=ERR[,ERR] with ERR in {', '.join(ERRORS)}, or none; "
                         f"got {value!r}")
    return name, errors


def threshold_key(value: float, match: str) -> str:
    """``0p5m`` for a 0.5 m distance (autoware-ml's token), ``iou0p7`` for an IoU of 0.7."""
    token = f"{value:g}".replace("-", "minus").replace(".", "p")
    return f"{token}m" if match == "center" else f"iou{token}"


def load_names(items: Any) -> list[str] | None:
    """``--class-names``: names separated by commas (repeatable), or a file with one name
    per line or a JSON list."""
    if items is None:
        return None
    if isinstance(items, str):
        items = [items]
    names: list[str] = []
    for item in items:
        if os.path.isfile(item):
            names += read_class_names(item)
        else:
            names += [part.strip() for part in str(item).split(",") if part.strip()]
    if not names:
        return None
    return names


def match_thresholds(params: Params) -> list[float]:
    """The match thresholds: ``--dist-th`` with ``--match center``, else ``--iou-th``."""
    return list(params["dist_th"] if params["match"] == "center" else params["iou_th"])


def resolve_params(params: Params, defaults: Params) -> dict[str, Any]:
    """``params`` over the task's ``defaults``, every convention a flag leaves unset taken
    from ``--protocol``, every value in its canonical type."""
    p = {**defaults, **params}
    protocol = p.get("protocol") or "nuscenes"
    if protocol not in PROTOCOLS:
        raise ParameterError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    out = dict(p)
    for key, value in PROTOCOLS[protocol].items():
        given = p.get(key)
        if given is None or (isinstance(given, (tuple, list)) and not given):
            out[key] = value
    out["cap_predictions"] = out["cap_predictions"] in (True, "yes")
    periods = list(out["pi_period_classes"])
    out["pi_period_classes"] = [] if periods == ["none"] else sorted(set(periods) - {"none"})
    exempt = out["tp_error_exempt"]
    if isinstance(exempt, dict):
        exempt = {str(k): sorted(set(v), key=ERRORS.index) for k, v in sorted(exempt.items())}
    else:
        merged: dict[str, set[str]] = {}
        for item in exempt:
            name, errors = parse_exempt(item) if isinstance(item, str) else item
            if name:
                merged.setdefault(name, set()).update(errors)
        exempt = {k: sorted(v, key=ERRORS.index) for k, v in sorted(merged.items())}
    out["tp_error_exempt"] = exempt
    out["dist_th"] = unique_floats(out["dist_th"])
    out["iou_th"] = unique_floats(out["iou_th"])
    out["tp_threshold"] = float(out["tp_threshold"])
    out["class_names"] = load_names(out.get("class_names") or None)
    caps = out.get("class_range") or {}
    out["class_range"] = {str(k): float(v) for k, v in
                          (caps.items() if isinstance(caps, dict) else caps)}
    out["ranges"] = [[float(a), None if b is None else float(b)] for a, b in out.get("ranges") or ()]
    for key in ("conf_threshold", "min_recall", "min_precision"):
        out[key] = float(out[key])
    out["max_boxes"] = int(out["max_boxes"])
    out["min_pts"] = int(out["min_pts"])
    return out


def check_params(params: Params) -> None:
    """Refuse resolved params no run can use (:class:`ParameterError`)."""
    if params["match"] not in MATCHES:
        raise ParameterError(f"match must be one of {', '.join(MATCHES)}")
    if params["box_origin"] not in BOX_ORIGINS:
        raise ParameterError(f"box origin must be one of {', '.join(BOX_ORIGINS)}")
    if not params["dist_th"] or any(not (math.isfinite(t) and t > 0) for t in params["dist_th"]):
        raise ParameterError("distance thresholds must be positive numbers")
    if not params["iou_th"] or any(not 0 < t <= 1 for t in params["iou_th"]):
        raise ParameterError("IoU thresholds must be in (0, 1]")
    if not (math.isfinite(params["tp_threshold"]) and params["tp_threshold"] > 0):
        raise ParameterError("the TP threshold must be a positive number")
    if not 0 <= params["min_precision"] < 1 or not 0 <= params["min_recall"] <= 1:
        raise ParameterError("min precision must be in [0, 1) and min recall in [0, 1]")
    if params["max_boxes"] < 1:
        raise ParameterError("max boxes must be >= 1")
    names = params["class_names"]
    if names is not None:
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ParameterError(f"--class-names repeats {', '.join(repeated)}")
        unknown = sorted(set(params["class_range"]) - set(names))
        if unknown:
            raise ParameterError(f"--class-range names {', '.join(unknown)}, not in --class-names")
    suffixes = [band_suffix(low, high) for low, high in params["ranges"]]
    if len(set(suffixes)) != len(suffixes):
        raise ParameterError("--range bands must be different")
    for key, choices in (("dist_rule", ("lt", "le")), ("score_ties", ("later", "earlier")),
                         ("precision_curve", ("raw", "envelope")),
                         ("absent_class", ("zero", "null")), ("cap_rule", ("lt", "le")),
                         ("tp_errors", ("nuscenes", "autoware"))):
        if params[key] not in choices:
            raise ParameterError(f"{key.replace('_', ' ')} must be one of {', '.join(choices)}")
