"""``rpx eval detection3d``: 3D boxes scored as the nuScenes devkit or autoware-ml scores them.

Per stem (a sample): a JSON list of boxes, nuScenes-style or compact
(:mod:`rpx_cli.io.boxes3d`), or one nuScenes submission file each (``--pred-file``,
``--gt-file``). Every pair's boxes are kept as its statistic; matching, AP, APH, TP errors
and NDS are computed over all samples at once (:mod:`rpx_cli.ops.detection3d`), so shards,
``rpx merge`` and ``--jobs`` give the same numbers bit for bit: every tie is broken by the
prediction's place over all samples (stem order, then its index in the file).

``--protocol nuscenes|autoware`` sets every convention (match test, score ties, precision
envelope, absent classes, class caps, TP-error selection, the barrier's orientation period,
the point filter; the table is in docs/detection3d.md); a flag overrides one item, and the
report's ``params`` records every resolved value. Rows (per sample, at ``--tp-threshold``, the
predictions with score >= ``--conf-threshold``): ``tp``, ``fp``, ``fn``, ``n_gt``,
``n_pred``, ``mean_center_error``, and ``precision``, ``recall``, ``f1`` (both empty: 1).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.boxes3d import (
    BOX_ORIGINS,
    Boxes3D,
    boxes3d_from_objects,
    parse_boxes3d,
    read_submission,
)
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.regular import read_bytes
from rpx_cli.ops import detection3d as d3
from rpx_cli.ops.boxes3d import center_distance
from rpx_cli.ops.depth import band_suffix
from rpx_cli.ops.reduce import mean_present, prf, prf_arrays
from rpx_cli.tasks.base import (
    FileInput,
    MetricInfo,
    Option,
    Params,
    Sample,
    Task,
    Warn,
    probability,
)
from rpx_cli.tasks.depth import parse_range
from rpx_cli.tasks.detection3d_samples import (
    SamplePair,
    base_filter,
    check_count,
    column,
    conventions,
    decode_pair,
    encode_pair,
    flatten,
    in_band,
    unique_floats,
    vocabulary,
)
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

NUSCENES_CLASSES = ("car", "truck", "bus", "trailer", "construction_vehicle", "pedestrian",
                    "motorcycle", "bicycle", "traffic_cone", "barrier")
# the devkit's configs/detection_cvpr_2019.json class_range
CVPR_2019_RANGES = {"car": 50, "truck": 50, "bus": 50, "trailer": 50, "construction_vehicle": 50,
                    "pedestrian": 40, "motorcycle": 40, "bicycle": 40, "traffic_cone": 30,
                    "barrier": 30}
MATCHES = ("center", "bev-iou", "iou3d")
ERRORS = d3.ERRORS
ROW_KEYS = ("tp", "fp", "fn", "n_gt", "n_pred", "mean_center_error", "precision", "recall", "f1")
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


def _positive(name: str):
    def parse(text: str) -> float:
        value = float(text)
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number, got {text}")
        return value
    return parse


def _iou(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise ValueError(f"IoU threshold must be in (0, 1], got {text}")
    return value


def parse_class_range(text: str) -> tuple[str, float]:
    """``name=metres``: evaluate class ``name`` only within that distance."""
    name, sep, value = text.rpartition("=")
    if not sep or not name:
        raise ValueError(f"expected NAME=METRES, got {text!r}")
    return name, _positive("class range")(value)


def parse_exempt(text: str) -> tuple[str, tuple[str, ...]]:
    """``class=AOE,AVE`` (TP errors left undefined for that class) or ``none``."""
    if text == "none":
        return ("", ())
    name, sep, keys = text.partition("=")
    errors = tuple(k.strip().upper() for k in keys.split(",") if k.strip())
    if not sep or not name or not errors or any(k not in ERRORS for k in errors):
        raise ValueError(f"expected CLASS=ERR[,ERR] with ERR in {', '.join(ERRORS)}, or none; "
                         f"got {text!r}")
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
            from rpx_cli.tasks.segmentation import load_class_names

            names += load_class_names(item)
        else:
            names += [part.strip() for part in str(item).split(",") if part.strip()]
    if not names:
        return None
    return names


@register_task
class Detection3D(Task):
    name = "detection3d"
    primary_metric = "f1"
    suffixes = (".json",)
    help = ("3D object detection: nuScenes mAP, NDS, TP errors (ATE ASE AOE AVE AAE) and "
            "heading-weighted AP, as the nuScenes devkit or autoware-ml computes them.")
    formats = (
        'One JSON per sample (a list, or {"boxes": [...]}; GT without a score), each box\n'
        '  nuScenes-style: {"translation": [x, y, z], "size": [w, l, h], "rotation": [w, x, y, z],\n'
        '                   "velocity": [vx, vy], "detection_name": "car", "detection_score": 0.9}\n'
        '  or compact:     {"box": [x, y, z, l, w, h, yaw(, vx, vy)], "label": "car", "score": 0.9}\n'
        'yaw in radians, CCW about +z; --box-origin bottom when z is the box bottom.\n'
        'Or one nuScenes submission file per side: --pred-file/--gt-file {"results": {sample: [boxes]}}.'
    )
    example = (
        'rpx eval detection3d --pred-dir fixtures/detection3d/street/pred \\\n'
        '    --gt-dir fixtures/detection3d/street/gt --range 0:20 --range 20: | jq .dataset.NDS\n'
        'rpx eval detection3d --pred-dir fixtures/detection3d/street/pred \\\n'
        '    --gt-dir fixtures/detection3d/street/gt --protocol autoware | jq .dataset.mAP'
    )
    stats = (Stat("sample", encode=encode_pair, decode=decode_pair),)
    metrics = {
        "tp": MetricInfo("higher", "row: predictions (score >= conf threshold) matched at the TP "
                         "threshold"),
        "fp": MetricInfo("lower", "row: unmatched predictions (score >= conf threshold)"),
        "fn": MetricInfo("lower", "row: unmatched GT boxes"),
        "n_gt": MetricInfo("none", "GT boxes evaluated (after class caps and the point filter)"),
        "n_pred": MetricInfo("none", "predictions evaluated (rows: score >= conf threshold)"),
        "mean_center_error": MetricInfo("lower", "row: mean BEV centre distance of the matches (m)"),
        "precision": MetricInfo("higher", "row: tp / (tp + fp); both empty = 1"),
        "recall": MetricInfo("higher", "row: tp / (tp + fn); both empty = 1"),
        "f1": MetricInfo("higher", "row: 2PR / (P + R); both empty = 1"),
        "mAP": MetricInfo("higher", "mean over classes of AP (the mean over match thresholds)"),
        "NDS": MetricInfo("higher", "nuScenes detection score (5 mAP + sum max(0, 1 - mTPE)) / 10"),
        "mAPH": MetricInfo("higher", "mean over classes of APH (heading-weighted AP)"),
        "AP": MetricInfo("higher", "per class: mean AP over the match thresholds"),
        "APH": MetricInfo("higher", "per class: mean heading-weighted AP over the thresholds"),
        **{f"m{e}": MetricInfo("lower", f"mean {e} over classes (undefined left out)") for e in ERRORS},
        "ATE": MetricInfo("lower", "translation error: BEV centre distance (m)"),
        "ASE": MetricInfo("lower", "scale error: 1 - IoU of the aligned sizes"),
        "AOE": MetricInfo("lower", "orientation error: yaw difference (rad)"),
        "AVE": MetricInfo("lower", "velocity error: L2 of the XY velocity difference (m/s)"),
        "AAE": MetricInfo("lower", "attribute error: 1 - attribute accuracy"),
    }
    families = {
        "rows": (ROW_KEYS, ("dataset.pooled",)),
        "ap": (("mAP", "NDS", "AP"), ()),
        "tp": (tuple(f"m{e}" for e in ERRORS) + ERRORS, ()),
        "aph": (("mAPH", "APH"), ()),
    }
    options = (
        Option("protocol", "--protocol", "choice", "nuscenes", choices=tuple(PROTOCOLS),
               help="Every convention of the nuScenes devkit or of autoware-ml (the flags below "
                    "override single items)."),
        Option("match", "--match", "choice", "center", choices=MATCHES,
               help="Match by BEV centre distance (--dist-th), or by BEV footprint or 3D IoU "
                    "(--iou-th)."),
        Option("dist_th", "--dist-th", "parsed", (0.5, 1.0, 2.0, 4.0), multiple=True,
               parse=_positive("distance threshold"), metavar="M",
               help="Centre-distance match threshold in metres (repeatable)."),
        Option("iou_th", "--iou-th", "parsed", (0.5,), multiple=True, parse=_iou, metavar="T",
               help="IoU match threshold with --match bev-iou|iou3d (repeatable; IoU >= T); "
                    "TP errors and rows use the first."),
        Option("tp_threshold", "--tp-threshold", "parsed", 2.0, parse=_positive("TP threshold"),
               metavar="M", help="Centre-distance threshold of the TP errors and the rows (with IoU "
                                 "matching they use the first --iou-th)."),
        Option("class_names", "--class-names", "str", (), multiple=True, metavar="NAMES",
               help="Classes to evaluate, comma-separated (repeatable) or a file; a box of "
                    "another class is an input error [default: every label in GT or "
                    "predictions]."),
        Option("class_range", "--class-range", "parsed", (), multiple=True, parse=parse_class_range,
               metavar="NAME=M", help="Evaluate class NAME only within M metres of the ego "
                                      "(repeatable), e.g. car=50."),
        Option("ranges", "--range", "parsed", (), multiple=True, parse=parse_range, metavar="A:B",
               help="Also report every key for GT and predictions whose centre lies in [A, B) "
                    "metres (XY norm), suffixed like mAP_0m_50m; A: is open-ended. Repeatable."),
        Option("conf_threshold", "--conf-threshold", "parsed", 0.0,
               parse=probability("confidence threshold"), metavar="S",
               help="Rows count predictions with score >= S (AP always uses every prediction)."),
        Option("max_boxes", "--max-boxes", "int", 500, minimum=1,
               help="More predictions than this in one sample is an input error (the devkit's "
                    "max_boxes_per_sample)."),
        Option("box_origin", "--box-origin", "choice", "center", choices=BOX_ORIGINS,
               help="z of a compact 'box' is the centre or the bottom face."),
        Option("dist_rule", "--dist-rule", "choice", None, choices=("lt", "le"),
               help="Centre-distance match test: distance < th (nuscenes) or <= th (autoware)."),
        Option("score_ties", "--score-ties", "choice", None, choices=("later", "earlier"),
               help="Among equal scores the later-listed prediction ranks first (nuscenes) or "
                    "the earlier (autoware)."),
        Option("precision_curve", "--precision-curve", "choice", None, choices=("raw", "envelope"),
               help="Precision read at 101 recall points raw (nuscenes) or after its monotone "
                    "envelope (autoware)."),
        Option("absent_class", "--absent-class", "choice", None, choices=("zero", "null"),
               help="A class with no GT and no prediction scores AP 0, TP errors 1 (nuscenes) "
                    "or null, left out of the means (autoware)."),
        Option("cap_rule", "--cap-rule", "choice", None, choices=("lt", "le"),
               help="--class-range keeps distance < cap (nuscenes) or <= cap (autoware)."),
        Option("cap_predictions", "--cap-predictions", "choice", None, choices=("yes", "no"),
               help="Whether --class-range also drops predictions (nuscenes) or only GT (autoware)."),
        Option("tp_errors", "--tp-errors", "choice", None, choices=("nuscenes", "autoware"),
               help="TP errors as the devkit's calc_tp at --tp-threshold, or autoware-ml's mean of "
                    "the first matches up to min recall per (class, threshold) curve."),
        Option("pi_period_classes", "--pi-period-class", "str", (), multiple=True, metavar="NAME",
               help="Classes whose orientation error has period pi (repeatable; 'none' for no "
                    "class) [nuscenes: barrier; autoware: none]."),
        Option("tp_error_exempt", "--tp-error-exempt", "parsed", (), multiple=True,
               parse=parse_exempt, metavar="CLASS=ERR,..",
               help="TP errors left undefined for a class (repeatable, replaces the protocol's "
                    "list; 'none' for none) [nuscenes: traffic_cone=AOE,AVE,AAE barrier=AVE,AAE]."),
        Option("min_pts", "--min-pts", "int", None, minimum=0,
               help="Drop boxes whose num_pts is given and below N [nuscenes: 1, the devkit's "
                    "num_pts == 0 filter; autoware: 0]."),
        Option("min_recall", "--min-recall", "parsed", 0.1, parse=probability("min recall"),
               metavar="R", help="AP and TP errors start past this recall."),
        Option("min_precision", "--min-precision", "parsed", 0.1,
               parse=probability("min precision"), metavar="P",
               help="Precision below this counts 0 in AP."),
    )
    default_params = {option.param: option.default for option in options}
    file_inputs = (
        Option("gt_file", "--gt-file", "file", None, metavar="FILE",
               help='GT in the nuScenes submission layout {"results": {sample: [boxes]}} instead '
                    "of --gt-dir."),
        Option("pred_file", "--pred-file", "file", None, metavar="FILE",
               help='Predictions in the nuScenes submission layout {"results": {sample: '
                    '[boxes]}} instead of --pred-dir.'),
    )

    # --- parameters -------------------------------------------------------------------

    def normalise_params(self, params: Params) -> dict[str, Any]:
        p = {**self.default_params, **params}
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

    def validate_params(self, params: Params) -> None:
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

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        info = dict(self.metrics)
        keys = [threshold_key(t, params["match"]) for t in self._thresholds(params)]
        for key in keys:
            info[f"AP_{key}"] = MetricInfo("higher", f"per class: AP at match threshold {key}")
            info[f"APH_{key}"] = MetricInfo("higher", f"per class: APH at match threshold {key}")
        base = dict(info)
        for low, high in params["ranges"]:
            suffix = band_suffix(low, high)
            for name, item in base.items():
                info[f"{name}_{suffix}"] = MetricInfo(item.direction, f"{item.description}; "
                                                      f"boxes whose centre is in [{low:g}, "
                                                      f"{'inf' if high is None else f'{high:g}'}) m")
        return info

    @staticmethod
    def _thresholds(params: Params) -> list[float]:
        return list(params["dist_th"] if params["match"] == "center" else params["iou_th"])

    # --- per pair ---------------------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Boxes3D:
        boxes = parse_boxes3d(buffer.read(path).tobytes(), path, prediction=role == "pred",
                              box_origin=params["box_origin"], classes=params["class_names"])
        if role == "pred":
            check_count(boxes, params, path, "")
        return boxes

    def empty_prediction(self, gt: Boxes3D, params: Params) -> Boxes3D:
        return Boxes3D.empty(with_scores=True)

    def evaluate(self, pred: Boxes3D, gt: Boxes3D, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        return Sample({"n_gt": len(gt), "n_pred": len(pred)}, {"sample": SamplePair(gt, pred)})

    def read_files(self, files: Mapping[str, str], params: Params) -> FileInput:
        """``--gt-file``/``--pred-file`` in the nuScenes submission layout: the samples of
        the two files must be the same (the devkit asserts it too)."""
        sides = {}
        for role, key in (("gt", "gt_file"), ("pred", "pred_file")):
            path = files[key]
            data = read_bytes(path)
            sides[role] = (path, read_submission(data, path))
        (gt_path, gt), (pred_path, pred) = sides["gt"], sides["pred"]
        only_gt = [s for s in gt if s not in pred]
        only_pred = [s for s in pred if s not in gt]
        if only_gt or only_pred:
            parts = []
            if only_gt:
                parts.append(f"{len(only_gt)} GT sample(s) missing from {pred_path} "
                             f"(e.g. {only_gt[0]!r})")
            if only_pred:
                parts.append(f"{len(only_pred)} predicted sample(s) not in {gt_path} "
                             f"(e.g. {only_pred[0]!r})")
            raise InputError("the two files must hold the same samples: " + "; ".join(parts),
                             path=pred_path)
        stems = list(gt)
        samples = []
        origin, classes = params["box_origin"], params["class_names"]
        for stem in stems:
            where = f"sample {stem!r}: "
            gt_boxes = boxes3d_from_objects(gt[stem], gt_path, prediction=False, box_origin=origin,
                                            classes=classes, where=where)
            pred_boxes = boxes3d_from_objects(pred[stem], pred_path, prediction=True,
                                              box_origin=origin, classes=classes, where=where)
            check_count(pred_boxes, params, pred_path, where)
            samples.append((pred_boxes, gt_boxes))
        if not stems:
            raise InputError("the GT file has no sample", path=gt_path)
        return FileInput(stems, samples=samples, pred_path=pred_path, gt_path=gt_path)

    # --- over all samples ---------------------------------------------------------------

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        return self.summarize_rows(stats, params)[0]

    def summarize_rows(self, stats: StatTable, params: Params):
        wanted = set(params.get("metrics") or self.families)
        pairs: list[SamplePair] = list(stats["sample"])
        n = len(pairs)
        classes = params["class_names"] or vocabulary(pairs)
        gt, pred = flatten(pairs, classes)
        gt, pred = base_filter(gt, pred, classes, params)
        c = conventions(params)
        thresholds = self._thresholds(params)
        match_ths = list(thresholds)
        if params["match"] == "center":
            tp_column = column(match_ths, params["tp_threshold"])
            rule = "<" if params["dist_rule"] == "lt" else "<="
        else:
            tp_column, rule = 0, ">="
        views = [("", None)] + [(f"_{band_suffix(lo, hi)}", (lo, hi)) for lo, hi in params["ranges"]]
        dataset: dict[str, Any] = {"per_class": {name: {} for name in classes}}
        aggregate: dict[str, Any] = {"n_samples": n}
        rows: list[dict[str, Any]] = [{} for _ in range(n)]
        for suffix, band in views:
            g, p = (gt, pred) if band is None else (in_band(gt, band), in_band(pred, band))
            similarity = d3.distance_similarity(g, p) if params["match"] == "center" else \
                d3.iou_similarity(g, p, params["match"])
            matching = d3.match(g, p, len(classes), similarity, match_ths, rule,
                                later_first=c.later_first)
            if "rows" in wanted:
                self._rows(g, p, matching, tp_column, n, params, suffix, rows, aggregate, dataset)
            dataset[f"n_gt{suffix}"] = len(g)
            dataset[f"n_pred{suffix}"] = len(p)
            results = d3.score(g, p, matching, classes, thresholds, tp_column, c) \
                if wanted & {"ap", "tp", "aph"} else None
            for k, name in enumerate(classes):
                entry = dataset["per_class"][name]
                entry[f"n_gt{suffix}"] = int(np.count_nonzero(g.cls == k))
                entry[f"n_pred{suffix}"] = int(np.count_nonzero(p.cls == k))
                if results is None:
                    continue
                r = results[k]
                if "ap" in wanted:
                    entry[f"AP{suffix}"] = d3.mean_or_none(r.ap)
                    for t, value in zip(thresholds, r.ap, strict=True):
                        entry[f"AP_{threshold_key(t, params['match'])}{suffix}"] = value
                if "aph" in wanted:
                    entry[f"APH{suffix}"] = d3.mean_or_none(r.aph)
                    for t, value in zip(thresholds, r.aph, strict=True):
                        entry[f"APH_{threshold_key(t, params['match'])}{suffix}"] = value
                if "tp" in wanted:
                    for e in ERRORS:
                        entry[f"{e}{suffix}"] = r.errors[e]
            if results is not None:
                figures = d3.summary(results, c)
                keys = (["mAP", "NDS"] if "ap" in wanted else []) + \
                    (["mAPH"] if "aph" in wanted else []) + \
                    ([f"m{e}" for e in ERRORS] if "tp" in wanted else [])
                for key in keys:
                    dataset[f"{key}{suffix}"] = figures[key]
        dataset["classes"] = list(classes)
        return {"aggregate": aggregate, "dataset": dataset}, rows

    @staticmethod
    def _rows(g: d3.Side, p: d3.Side, matching: d3.Matching, tp_column: int, n: int,
              params: Params, suffix: str, rows: list[dict[str, Any]], aggregate: dict[str, Any],
              dataset: dict[str, Any]) -> None:
        keep = p.score >= params["conf_threshold"]
        hit = matching.matched[:, tp_column] & keep
        tp = np.bincount(p.sample[hit], minlength=n)
        n_pred = np.bincount(p.sample[keep], minlength=n)
        n_gt = np.bincount(g.sample, minlength=n)
        fp, fn = n_pred - tp, n_gt - tp
        taken = matching.gt[hit, tp_column]
        dist = center_distance(p.center[hit, :2], g.center[taken, :2])
        dist_sum = np.bincount(p.sample[hit], weights=dist, minlength=n)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_error = np.where(tp > 0, dist_sum / np.maximum(tp, 1), np.nan)
        figures = prf_arrays(tp, fp, fn)
        columns = {"tp": tp.tolist(), "fp": fp.tolist(), "fn": fn.tolist(), "n_gt": n_gt.tolist(),
                   "n_pred": n_pred.tolist(),
                   "mean_center_error": [None if v != v else v for v in mean_error.tolist()],
                   **{k: figures[k].tolist() for k in ("precision", "recall", "f1")}}
        for key in ROW_KEYS:
            for row, value in zip(rows, columns[key], strict=True):
                row[f"{key}{suffix}"] = value
        for key in ("precision", "recall", "f1"):
            aggregate[f"{key}{suffix}"] = mean_present(figures[key])
        aggregate[f"mean_center_error{suffix}"] = mean_present(mean_error)
        totals = [int(x.sum()) for x in (tp, fp, fn)]
        dataset[f"pooled{suffix}"] = {**prf(*totals), "tp": totals[0], "fp": totals[1],
                                      "fn": totals[2]}
