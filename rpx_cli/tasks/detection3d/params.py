"""The parameters of the nuScenes-style protocols of ``rpx eval detection3d``
(:mod:`rpx_cli.tasks.detection3d` has the task, :mod:`rpx_cli.tasks.detection3d.nuscenes`
the protocols): the conventions each of them fixes (:data:`CONVENTIONS`, the one table of
them), the parsers of the flags, the params resolved (a convention no flag sets comes from
the protocol) and checked, and :class:`Conventions`, every convention of a run as one typed
value read from the resolved params: the samples, the summary and the task read the
conventions there and nowhere else."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rpx_cli.errors import ParameterError
from rpx_cli.io.class_names import read_class_names
from rpx_cli.ops import detection3d as d3
from rpx_cli.ops.matching import Rule
from rpx_cli.params.parsers import name_and_number, positive
from rpx_cli.params.values import Band, Threshold
from rpx_cli.tasks.base import Params

NUSCENES_CLASSES = ("car", "truck", "bus", "trailer", "construction_vehicle", "pedestrian",
                    "motorcycle", "bicycle", "traffic_cone", "barrier")
# the devkit's configs/detection_cvpr_2019.json class_range
CVPR_2019_RANGES = {"car": 50, "truck": 50, "bus": 50, "trailer": 50, "construction_vehicle": 50,
                    "pedestrian": 40, "motorcycle": 40, "bicycle": 40, "traffic_cone": 30,
                    "barrier": 30}
MATCHES = ("center", "bev-iou", "iou3d")
ERRORS = d3.ERRORS
# every convention a protocol fixes, and its value under each protocol as its flag spells it
# (resolve_params fills the flags left unset from here; Conventions.of reads the result)
CONVENTIONS: dict[str, dict[str, Any]] = {
    "nuscenes": {"dist_rule": "lt", "score_ties": "later", "precision_curve": "raw",
                 "absent_class": "zero", "cap_rule": "lt", "cap_predictions": "yes",
                 "tp_errors": "nuscenes", "pi_period_classes": ["barrier"],
                 "tp_error_exempt": {"traffic_cone": ["AOE", "AVE", "AAE"], "barrier": ["AVE", "AAE"]},
                 "min_pts": 1},
    "autoware": {"dist_rule": "le", "score_ties": "earlier", "precision_curve": "envelope",
                 "absent_class": "null", "cap_rule": "le", "cap_predictions": "no",
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


def unique_floats(values: Any) -> list[float]:
    """The thresholds in the order given, each once."""
    if isinstance(values, (int, float)):
        values = [values]
    return list(dict.fromkeys(float(v) for v in values))


def resolve_params(params: Params) -> dict[str, Any]:
    """``params`` (every option present), every convention a flag leaves unset taken from
    ``--protocol``'s column of :data:`CONVENTIONS` (as if its flag were given), every value
    in the form the report's ``params`` records."""
    out = dict(params)
    for key, value in CONVENTIONS[out["protocol"]].items():
        given = out.get(key)
        if given is None or (isinstance(given, (tuple, list)) and not given):
            out[key] = value
    out["cap_predictions"] = out["cap_predictions"] == "yes"
    periods = list(out["pi_period_classes"])
    out["pi_period_classes"] = [] if periods == ["none"] else sorted(set(periods) - {"none"})
    exempt = out["tp_error_exempt"]
    merged: dict[str, set[str]] = {}
    for item in (exempt.items() if isinstance(exempt, Mapping) else exempt):
        name, errors = parse_exempt(item) if isinstance(item, str) else item
        if name:  # "none" is ("", ())
            merged.setdefault(str(name), set()).update(errors)
    out["tp_error_exempt"] = {k: sorted(v, key=ERRORS.index) for k, v in sorted(merged.items())}
    out["dist_th"] = unique_floats(out["dist_th"])
    out["iou_th"] = unique_floats(out["iou_th"])
    out["tp_threshold"] = float(out["tp_threshold"])
    out["class_names"] = load_names(out.get("class_names") or None)
    caps = out.get("class_range") or {}
    out["class_range"] = {str(k): float(v) for k, v in
                          (caps.items() if isinstance(caps, Mapping) else caps)}
    out["ranges"] = [Band.of(band).as_param() for band in out.get("ranges") or ()]
    for key in ("conf_threshold", "min_recall", "min_precision"):
        out[key] = float(out[key])
    out["max_boxes"] = int(out["max_boxes"])
    out["min_pts"] = int(out["min_pts"])
    return out


def check_params(params: Params) -> None:
    """Refuse resolved params no run can use (:class:`ParameterError`). Each value was
    checked by its option's declaration (choices, bounds — a min precision below 1, as AP
    divides by 1 - min precision — parsers); what is left is what a declaration cannot say:
    an empty list of thresholds, thresholds too close for their keys, repeated class names,
    a class range of a class not evaluated."""
    for key, flag, unit in (("dist_th", "--dist-th", "m"), ("iou_th", "--iou-th", "iou")):
        if not params[key]:
            raise ParameterError(f"{flag}: give at least one threshold")
        tokens = [Threshold(value, unit).token for value in params[key]]
        if len(set(tokens)) != len(tokens):  # e.g. 1 and 1.0000001: one key AP_1m for both
            raise ParameterError(f"{flag}: thresholds {', '.join(f'{v!r}' for v in params[key])} "
                                 "are too close to tell apart in the report's keys")
    names = params["class_names"]
    if names is not None:
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ParameterError(f"--class-names repeats {', '.join(repeated)}")
        unknown = sorted(set(params["class_range"]) - set(names))
        if unknown:
            raise ParameterError(f"--class-range names {', '.join(unknown)}, not in --class-names")


# how --dist-rule and --cap-rule spell a comparison
_RULES: dict[str, Rule] = {"lt": "<", "le": "<="}


@dataclass(frozen=True)
class Conventions:
    """How a run filters, matches and scores boxes: every convention of ``--protocol``
    (:data:`CONVENTIONS`, a flag overriding one item) and the match settings, typed, read once
    from the resolved params by :meth:`of`. Nothing else compares a protocol's name or a
    convention's spelling."""

    match: str  # --match: "center" (BEV centre distance), "bev-iou" or "iou3d"
    thresholds: tuple[Threshold, ...]  # the reported match thresholds (--dist-th or --iou-th)
    tp_threshold: Threshold  # of the TP errors and the rows: --tp-threshold, or the first --iou-th
    match_rule: Rule  # a pair matches when distance < th or <= th (--dist-rule), or IoU >= th
    cap_rule: Rule  # --class-range keeps distance < cap or <= cap (--cap-rule)
    cap_predictions: bool  # --class-range drops predictions too, not only GT
    min_pts: int  # boxes whose num_pts is given and below this are dropped
    scoring: d3.Scoring  # score ties, precision curve, absent classes, TP errors, AOE period, ...

    @classmethod
    def of(cls, params: Params) -> Conventions:
        """The conventions of resolved ``params`` (:func:`resolve_params`, or a report's)."""
        by_distance = params["match"] == "center"
        if by_distance:
            thresholds = tuple(Threshold(t, "m") for t in params["dist_th"])
            tp_threshold = Threshold(params["tp_threshold"], "m")
        else:
            thresholds = tuple(Threshold(t, "iou") for t in params["iou_th"])
            tp_threshold = thresholds[0]
        scoring = d3.Scoring(
            later_first=params["score_ties"] == "later",
            envelope=params["precision_curve"] == "envelope",
            absent_null=params["absent_class"] == "null",
            tp_errors=d3.TPErrors(params["tp_errors"]),
            pi_period=frozenset(params["pi_period_classes"]),
            exempt={name: tuple(errors) for name, errors in params["tp_error_exempt"].items()},
            min_recall=params["min_recall"], min_precision=params["min_precision"])
        return cls(match=params["match"], thresholds=thresholds, tp_threshold=tp_threshold,
                   match_rule=_RULES[params["dist_rule"]] if by_distance else ">=",
                   cap_rule=_RULES[params["cap_rule"]], cap_predictions=params["cap_predictions"],
                   min_pts=params["min_pts"], scoring=scoring)

    @property
    def by_distance(self) -> bool:
        """Matching by BEV centre distance (else by an IoU)."""
        return self.match == "center"
