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

The task's parts are beside it: the protocols, flag parsers, resolved params and the run's
:class:`~rpx_cli.tasks.detection3d.params.Conventions` (every convention, typed, read once
from the params) in :mod:`rpx_cli.tasks.detection3d.params`, the samples in
:mod:`rpx_cli.tasks.detection3d.samples`, the figures over all samples in
:mod:`rpx_cli.tasks.detection3d.summary`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.errors import InputError, PairError
from rpx_cli.io.boxes3d import (
    BOX_ORIGINS,
    Boxes3D,
    boxes3d_from_objects,
    parse_boxes3d,
    read_submission,
    sample_objects,
)
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.regular import read_bytes
from rpx_cli.ops.detection3d_curves import CURVE_ERRORS
from rpx_cli.params.parsers import iou_threshold, parse_band, positive
from rpx_cli.params.pictures import KEEP_WORST
from rpx_cli.params.values import Threshold
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
from rpx_cli.tasks.detection3d.params import (
    ERRORS,
    MATCHES,
    PROTOCOLS,
    Conventions,
    check_params,
    parse_class_range,
    parse_exempt,
    resolve_params,
)
from rpx_cli.tasks.detection3d.samples import (
    SamplePair,
    check_count,
    check_frame,
    decode_pair,
    encode_pair,
)
from rpx_cli.tasks.detection3d.summary import ROW_KEYS, summarize_pairs
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

UNITS = {"ATE": "m", "ASE": "", "AOE": "rad", "AVE": "m/s", "AAE": ""}  # of the TP errors
_CURVE_POINTS = {"type": "array", "minItems": 101, "maxItems": 101, "items": {"type": ["number", "null"]}}
_CURVES = {
    "type": "object",
    "description": "Per class, per match-threshold token (0p5m, iou0p7): the 101-point curves "
                   "on the recall grid, as the devkit's DetectionMetricData (nuscenes) or "
                   "autoware-ml reads them (autoware); null for a class left out.",
    "additionalProperties": {"type": "object", "additionalProperties": {
        "oneOf": [{"type": "null"}, {
            "type": "object",
            "required": ["recall", "precision", "confidence", *CURVE_ERRORS.values()],
            "properties": {key: _CURVE_POINTS for key in
                           ("recall", "precision", "confidence", *CURVE_ERRORS.values())},
            "additionalProperties": False}]}}}


@register_task
class Detection3D(Task):
    name = "detection3d"
    primary_metric = "f1"
    headline = ("dataset.mAP", "dataset.NDS", "dataset.mAPH", "dataset.mATE", "dataset.mASE",
                "dataset.mAOE", "dataset.mAVE", "dataset.mAAE")
    band_metrics = ("mAP", "NDS", "mAPH", "mATE", "mASE", "mAOE", "mAVE", "mAAE", "f1")
    page_view = "curves_bev"
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
    report_properties = {"dataset": {
        "type": "object",
        "properties": {"curves": _CURVES},
        "patternProperties": {"^curves_": _CURVES}}}
    metrics = {
        "tp": MetricInfo("higher", "row: predictions (score >= conf threshold) matched at the TP "
                         "threshold"),
        "fp": MetricInfo("lower", "row: unmatched predictions (score >= conf threshold)"),
        "fn": MetricInfo("lower", "row: unmatched GT boxes"),
        "n_gt": MetricInfo("none", "GT boxes evaluated (after class caps and the point filter)"),
        "n_pred": MetricInfo("none", "predictions evaluated (rows: score >= conf threshold)"),
        "mean_center_error": MetricInfo("lower", "row: mean BEV centre distance of the matches (m)",
                                        "m"),
        "precision": MetricInfo("higher", "row: tp / (tp + fp); both empty = 1"),
        "recall": MetricInfo("higher", "row: tp / (tp + fn); both empty = 1"),
        "f1": MetricInfo("higher", "row: 2PR / (P + R); both empty = 1"),
        "mAP": MetricInfo("higher", "mean over classes of AP (the mean over match thresholds)"),
        "NDS": MetricInfo("higher", "nuScenes detection score (5 mAP + sum max(0, 1 - mTPE)) / 10"),
        "mAPH": MetricInfo("higher", "mean over classes of APH (heading-weighted AP)"),
        "AP": MetricInfo("higher", "per class: mean AP over the match thresholds"),
        "APH": MetricInfo("higher", "per class: mean heading-weighted AP over the thresholds"),
        **{f"m{e}": MetricInfo("lower", f"mean {e} over classes (undefined left out)", UNITS[e])
           for e in ERRORS},
        "ATE": MetricInfo("lower", "translation error: BEV centre distance (m)", "m"),
        "ASE": MetricInfo("lower", "scale error: 1 - IoU of the aligned sizes"),
        "AOE": MetricInfo("lower", "orientation error: yaw difference (rad)", "rad"),
        "AVE": MetricInfo("lower", "velocity error: L2 of the XY velocity difference (m/s)", "m/s"),
        "AAE": MetricInfo("lower", "attribute error: 1 - attribute accuracy"),
    }
    families = {
        "rows": (ROW_KEYS, ("dataset.pooled",)),
        "ap": (("mAP", "NDS", "AP"), ()),
        "tp": (tuple(f"m{e}" for e in ERRORS) + ERRORS, ()),
        "aph": (("mAPH", "APH"), ()),
        "curves": ((), ()),
    }
    options = (
        Option("protocol", "--protocol", "choice", "nuscenes", choices=tuple(PROTOCOLS),
               help="Every convention of the nuScenes devkit or of autoware-ml (the flags below "
                    "override single items)."),
        Option("match", "--match", "choice", "center", choices=MATCHES,
               help="Match by BEV centre distance (--dist-th), or by BEV footprint or 3D IoU "
                    "(--iou-th)."),
        Option("dist_th", "--dist-th", "parsed", (0.5, 1.0, 2.0, 4.0), multiple=True,
               parse=positive("distance threshold"), metavar="M",
               help="Centre-distance match threshold in metres (repeatable)."),
        Option("iou_th", "--iou-th", "parsed", (0.5,), multiple=True, parse=iou_threshold, metavar="T",
               help="IoU match threshold with --match bev-iou|iou3d (repeatable; IoU >= T); "
                    "TP errors and rows use the first."),
        Option("tp_threshold", "--tp-threshold", "parsed", 2.0, parse=positive("TP threshold"),
               metavar="M", help="Centre-distance threshold of the TP errors and the rows (with IoU "
                                 "matching they use the first --iou-th)."),
        Option("class_names", "--class-names", "str", (), multiple=True, metavar="NAMES",
               help="Classes to evaluate, comma-separated (repeatable) or a file; a box of "
                    "another class is an input error [default: every label in GT or "
                    "predictions]."),
        Option("class_range", "--class-range", "parsed", (), multiple=True, parse=parse_class_range,
               metavar="NAME=M", help="Evaluate class NAME only within M metres of the ego "
                                      "(repeatable), e.g. car=50."),
        Option("ranges", "--range", "parsed", (), multiple=True, parse=parse_band, metavar="A:B",
               unique=True,
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
        Option("min_precision", "--min-precision", "float", 0.1, minimum=0.0, maximum=1.0,
               open_max=True, metavar="P",
               help="Precision below this counts 0 in AP (AP divides by 1 - P)."),
        KEEP_WORST,
    )
    file_inputs = (
        Option("gt_file", "--gt-file", "file", None, urls=True, metavar="FILE",
               help='GT in the nuScenes submission layout {"results": {sample: [boxes]}} instead '
                    "of --gt-dir."),
        Option("pred_file", "--pred-file", "file", None, urls=True, metavar="FILE",
               help='Predictions in the nuScenes submission layout {"results": {sample: '
                    '[boxes]}} instead of --pred-dir.'),
    )

    # --- parameters -------------------------------------------------------------------

    def normalise_params(self, params: Params) -> dict[str, Any]:
        return resolve_params(params, self.default_params)

    def validate_params(self, params: Params) -> None:
        check_params(params)

    def thresholds(self, params: Params) -> list[Threshold]:
        return list(Conventions.of(params).thresholds)

    def operating_threshold(self, params: Params) -> Threshold | None:
        c = Conventions.of(params)
        return c.tp_threshold if c.tp_threshold in c.thresholds else None

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        info = dict(self.metrics)
        for threshold in Conventions.of(params).thresholds:
            info[threshold.key("AP")] = MetricInfo("higher", "per class: AP at match threshold "
                                                   f"{threshold.token}")
            info[threshold.key("APH")] = MetricInfo("higher", "per class: APH at match threshold "
                                                    f"{threshold.token}")
        base = dict(info)
        for band in self.bands(params):
            for name, item in base.items():
                info[band.key(name)] = MetricInfo(item.direction, f"{item.description}; boxes "
                                                  f"whose centre is in {band.label}")
        return info

    # --- per pair ---------------------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Boxes3D:
        boxes = parse_boxes3d(buffer.read(path).tobytes(), path, prediction=role == "pred",
                              box_origin=params["box_origin"], classes=params["class_names"])
        if role == "pred":
            check_count(boxes, params, path, "")
        check_frame(boxes.distance, params, path, role)
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
        if not gt:
            raise InputError("the GT file has no sample", path=gt_path)
        stems, samples, errors = [], [], []
        origin, classes = params["box_origin"], params["class_names"]
        for stem in gt:
            where = f"sample {stem!r}: "
            try:
                gt_boxes = boxes3d_from_objects(sample_objects(gt[stem], gt_path, where), gt_path,
                                                prediction=False, box_origin=origin,
                                                classes=classes, where=where)
            except InputError as exc:  # the sample is dropped
                errors.append(PairError.of(exc, stem, side="gt", path=gt_path))
                continue
            try:
                pred_boxes = boxes3d_from_objects(sample_objects(pred[stem], pred_path, where),
                                                  pred_path, prediction=True, box_origin=origin,
                                                  classes=classes, where=where)
                check_count(pred_boxes, params, pred_path, where)
            except InputError as exc:  # scored as the empty prediction
                errors.append(PairError.of(exc, stem, side="pred", path=pred_path))
                pred_boxes = self.empty_prediction(gt_boxes, params)
            stems.append(stem)
            samples.append((pred_boxes, gt_boxes))
        if samples:
            for role, path, index in (("gt", gt_path, 1), ("pred", pred_path, 0)):
                distances = [sample[index].distance for sample in samples]
                check_frame(np.concatenate(distances), params, path, role)
        return FileInput(stems, samples=samples, pred_path=pred_path, gt_path=gt_path,
                         errors=errors)

    # --- over all samples ---------------------------------------------------------------

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        return self.summarize_rows(stats, params)[0]

    def summarize_rows(self, stats: StatTable, params: Params):
        wanted = set(params.get("metrics") or self.families)
        return summarize_pairs(list(stats["sample"]), params, self.bands(params), wanted)
