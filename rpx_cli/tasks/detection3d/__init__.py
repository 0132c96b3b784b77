"""``rpx eval detection3d``: 3D boxes scored as the nuScenes devkit, autoware-ml or the KITTI
object benchmark scores them.

Per stem (a sample): a JSON list of boxes, nuScenes-style or compact
(:mod:`rpx_cli.io.boxes3d`), or a KITTI label file (:mod:`rpx_cli.io.kitti_labels`;
``--pred-format``/``--gt-format``, :mod:`rpx_cli.tasks.detection3d.formats`), or one
nuScenes submission file each (``--pred-file``, ``--gt-file``). Every pair's boxes are kept
as its statistic; matching and AP are computed over all samples at once, so shards,
``rpx merge`` and ``--jobs`` give the same numbers bit for bit: every tie is broken by the
prediction's place over all samples (stem order, then its index in the file).

``--protocol`` is a declared part (:mod:`rpx_cli.tasks.detection3d.protocol`), which the
task asks for its params, its reading, its figures and its keys:

- ``nuscenes`` and ``autoware`` (:mod:`rpx_cli.tasks.detection3d.nuscenes`): mAP, NDS, TP
  errors and APH, every convention (match test, score ties, precision envelope, absent
  classes, class caps, TP-error selection, the barrier's orientation period, the point
  filter; the table is in docs/detection3d.md) set by the protocol, a flag overriding one
  item, ``params`` recording every resolved value. Rows (per sample, at ``--tp-threshold``,
  the predictions with score >= ``--conf-threshold``): ``tp``, ``fp``, ``fn``, ``n_gt``,
  ``n_pred``, ``mean_center_error``, and ``precision``, ``recall``, ``f1`` (both empty: 1).
- ``kitti`` (:mod:`rpx_cli.tasks.detection3d.kitti`): the KITTI object benchmark's AP_R40
  (or AP_R11) for bbox, bev, 3d and aos at easy / moderate / hard.

A flag only another protocol reads is a usage error when given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.errors import InputError, PairError, ParameterError
from rpx_cli.io.boxes3d import BOX_ORIGINS, read_submission, sample_objects
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.regular import read_bytes
from rpx_cli.ops.detection3d_curves import CURVE_ERRORS
from rpx_cli.params.parsers import NAME_NUMBERS, NAMES, integer, iou_threshold, parse_band, positive
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
from rpx_cli.tasks.detection3d import formats as file_formats
from rpx_cli.tasks.detection3d import kitti as _kitti  # noqa: F401 (registers the protocol)
from rpx_cli.tasks.detection3d import nuscenes as _nuscenes  # noqa: F401 (registers two)
from rpx_cli.tasks.detection3d.kitti import RECALL_POINTS
from rpx_cli.tasks.detection3d.params import ERRORS, MATCHES, parse_class_range, parse_exempt
from rpx_cli.tasks.detection3d.protocol import PROTOCOLS, Protocol, others_own
from rpx_cli.tasks.detection3d.samples import (
    SamplePair,
    check_count,
    decode_pair,
    encode_pair,
)
from rpx_cli.tasks.detection3d.summary import ROW_KEYS
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


def _recall_points(value: Any) -> int:
    """``--recall-points``: 40 or 11."""
    points = integer(value)
    if points not in RECALL_POINTS:
        raise ValueError(f"expected 40 or 11, got {value!r}")
    return points



@register_task
class Detection3D(Task):
    name = "detection3d"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("tp", "fp", "fn", "n_gt", "n_pred", "precision", "recall", "f1"),
              "aggregate": ("precision", "recall", "f1", "n_samples"),
              "dataset": ("", "pooled", "mAP", "NDS", "mAPH", "mATE", "mASE", "mAOE", "mAVE",
                          "mAAE")}
    primary_metric = "f1"
    headline = ("dataset.mAP", "dataset.NDS", "dataset.mAPH", "dataset.mATE", "dataset.mASE",
                "dataset.mAOE", "dataset.mAVE", "dataset.mAAE", "dataset.mAP_3d_moderate",
                "dataset.mAP_bev_moderate", "dataset.mAP_bbox_moderate", "dataset.mAP_aos_moderate")
    band_metrics = ("mAP", "NDS", "mAPH", "mATE", "mASE", "mAOE", "mAVE", "mAAE", "f1")
    page_view = "curves_bev"
    suffixes = file_formats.suffixes()
    help = ("3D object detection: nuScenes mAP, NDS, TP errors (ATE ASE AOE AVE AAE) and "
            "heading-weighted AP, as the nuScenes devkit or autoware-ml computes them; KITTI's "
            "AP_R40 (bbox, bev, 3d, aos at easy/moderate/hard).")
    formats = (
        'One JSON per sample (a list, or {"boxes": [...]}; GT without a score), each box\n'
        '  nuScenes-style: {"translation": [x, y, z], "size": [w, l, h], "rotation": [w, x, y, z],\n'
        '                   "velocity": [vx, vy], "detection_name": "car", "detection_score": 0.9}\n'
        '  or compact:     {"box": [x, y, z, l, w, h, yaw(, vx, vy)], "label": "car", "score": 0.9}\n'
        'yaw in radians, CCW about +z; --box-origin bottom when z is the box bottom.\n'
        'Or one nuScenes submission file per side: --pred-file/--gt-file {"results": {sample: [boxes]}}.\n'
        'Or KITTI labels, one .txt per frame (--pred-format/--gt-format kitti, auto by suffix):\n'
        '  type truncated occluded alpha x1 y1 x2 y2 h w l x y z rotation_y [score]\n'
        'With --protocol kitti, rpx boxes add "bbox_2d": [x1, y1, x2, y2] and on GT "truncated",\n'
        '"occluded" (and "alpha", optional).'
    )
    example = (
        'rpx eval detection3d --pred-dir fixtures/detection3d/street/pred \\\n'
        '    --gt-dir fixtures/detection3d/street/gt --range 0:20 --range 20: | jq .dataset.NDS\n'
        'rpx eval detection3d --pred-dir fixtures/detection3d/street/pred \\\n'
        '    --gt-dir fixtures/detection3d/street/gt --protocol autoware | jq .dataset.mAP\n'
        'rpx eval detection3d --pred-dir fixtures/detection3d/kitti/pred \\\n'
        '    --gt-dir fixtures/detection3d/kitti/gt --protocol kitti | jq .dataset.kitti.mAP_3d_moderate'
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
        "kitti": ((), ("dataset.kitti",)),
    }
    options = (
        Option("protocol", "--protocol", "choice", "nuscenes", choices=tuple(PROTOCOLS),
               help="Every convention of the nuScenes devkit or of autoware-ml (the flags below "
                    "override single items), or the KITTI object benchmark (AP_R40)."),
        Option("pred_format", "--pred-format", "choice", None,
               choices=(file_formats.AUTO, *file_formats.FORMATS),
               args_when_unset=False,
               help="Prediction files: rpx JSON, or KITTI results (.txt, 16 fields) [default: "
                    "auto, by the folder's suffixes]."),
        Option("gt_format", "--gt-format", "choice", None,
               choices=(file_formats.AUTO, *file_formats.FORMATS),
               args_when_unset=False,
               help="GT files: rpx JSON, or KITTI labels (.txt, 15 fields) [default: auto, by "
                    "the folder's suffixes]."),
        Option("recall_points", "--recall-points", "parsed", None, parse=_recall_points,
               metavar="40|11", recorded={"enum": [40, 11]},
               args_when_unset=False,
               help="--protocol kitti: AP over 40 recall positions (AP_R40) or 11 (AP_R11) "
                    "[default: 40]."),
        Option("kitti_iou", "--kitti-iou", "choice", None, choices=("strict", "loose"),
               args_when_unset=False,
               help="--protocol kitti: the class IoU thresholds (strict: Car 0.7, Pedestrian and "
                    "Cyclist 0.5) or the loose table (bev and 3d at 0.5 / 0.25 / 0.25) "
                    "[default: strict]."),
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
        Option("class_names", "--class-names", "str", (), multiple=True, metavar="NAMES", recorded=NAMES,
               help="Classes to evaluate, comma-separated (repeatable) or a file; a box of "
                    "another class is an input error [default: every label in GT or "
                    "predictions]."),
        Option("class_range", "--class-range", "parsed", (), multiple=True, parse=parse_class_range,
               recorded=NAME_NUMBERS,
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
               recorded={"type": "boolean", "description": "yes: true"},
               help="Whether --class-range also drops predictions (nuscenes) or only GT (autoware)."),
        Option("tp_errors", "--tp-errors", "choice", None, choices=("nuscenes", "autoware"),
               help="TP errors as the devkit's calc_tp at --tp-threshold, or autoware-ml's mean of "
                    "the first matches up to min recall per (class, threshold) curve."),
        Option("pi_period_classes", "--pi-period-class", "str", (), multiple=True, metavar="NAME",
               help="Classes whose orientation error has period pi (repeatable; 'none' for no "
                    "class) [nuscenes: barrier; autoware: none]."),
        Option("tp_error_exempt", "--tp-error-exempt", "parsed", (), multiple=True,
               recorded={"type": "object", "additionalProperties": {
                   "type": "array", "items": {"enum": ["ATE", "ASE", "AOE", "AVE", "AAE"]}}},
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
        """Every option over its default; the options only other protocols read must be at
        their defaults (else a usage error) and are left out; ``auto`` formats are left out
        (decided per folder by :meth:`settle_inputs`); the rest resolved by the protocol."""
        defaults = self.default_params
        out = {**defaults, **params}
        name = out["protocol"]
        if name not in PROTOCOLS:  # the option refuses it; this is for callers that skip it
            raise ParameterError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {name!r}")
        protocol = PROTOCOLS[name]
        flags = {option.param: option.flag for option in self.options}
        for key in others_own(protocol):
            if _plain(out.get(key)) != _plain(defaults[key]):
                owners = [p.name for p in PROTOCOLS.values() if key in p.own]
                raise ParameterError(f"{flags[key]} applies to --protocol {' or '.join(owners)}, "
                                     f"not {name}")
            out.pop(key, None)
        for role in ("pred", "gt"):
            if out.get(f"{role}_format") in (None, file_formats.AUTO):
                out.pop(f"{role}_format", None)
        if "metrics" in out:  # --metrics: the protocol's families (the others are skipped)
            chosen = [family for family in out["metrics"] if family in protocol.families]
            if not chosen:
                raise ParameterError(f"--metrics: --protocol {name} computes the families "
                                     f"{', '.join(protocol.families)}, not "
                                     f"{', '.join(out['metrics'])}")
            out["metrics"] = chosen
            out["skipped_metrics"] = [family for family in self.families if family not in chosen
                                      and (family in protocol.families or protocol.skips_others)]
        return protocol.resolve(out)

    def validate_params(self, params: Params) -> None:
        self.protocol(params).check(params)

    def settle_inputs(self, params: Params, inputs: Mapping[str, str | None]) -> dict[str, Any]:
        return file_formats.settle(params, inputs)

    def suffixes_for(self, params: Params, role: str) -> tuple[str, ...]:
        return file_formats.suffixes_of(params, role)

    def protocol(self, params: Params) -> Protocol:
        return PROTOCOLS[params["protocol"]]

    def thresholds(self, params: Params) -> list[Threshold]:
        return self.protocol(params).thresholds(params)

    def operating_threshold(self, params: Params) -> Threshold | None:
        return self.protocol(params).operating_threshold(params)

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        return self.protocol(params).metric_info(self.metrics, params, self.bands(params))

    # --- per pair ---------------------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Any:
        fmt = file_formats.of_role(params, role, path)
        boxes = self.protocol(params).read(fmt, buffer.read(path).tobytes(), path,
                                           prediction=role == "pred", params=params)
        if role == "pred":
            check_count(boxes, params, path, "")
        self.protocol(params).check_side(boxes, params, path, role)
        return boxes

    def empty_prediction(self, gt: Any, params: Params) -> Any:
        return self.protocol(params).empty()

    def evaluate(self, pred: Any, gt: Any, params: Params, *, pred_path: str | None,
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
        protocol = self.protocol(params)
        for stem in gt:
            where = f"sample {stem!r}: "
            try:
                gt_boxes = protocol.from_objects(sample_objects(gt[stem], gt_path, where), gt_path,
                                                 prediction=False, params=params, where=where)
            except InputError as exc:  # the sample is dropped
                errors.append(PairError.of(exc, stem, side="gt", path=gt_path))
                continue
            try:
                pred_boxes = protocol.from_objects(sample_objects(pred[stem], pred_path, where),
                                                   pred_path, prediction=True, params=params,
                                                   where=where)
                check_count(pred_boxes, params, pred_path, where)
            except InputError as exc:  # scored as the empty prediction
                errors.append(PairError.of(exc, stem, side="pred", path=pred_path))
                pred_boxes = self.empty_prediction(gt_boxes, params)
            stems.append(stem)
            samples.append((pred_boxes, gt_boxes))
        if samples:
            for role, path, index in (("gt", gt_path, 1), ("pred", pred_path, 0)):
                protocol.check_sides([sample[index] for sample in samples], params, path, role)
        return FileInput(stems, samples=samples, pred_path=pred_path, gt_path=gt_path,
                         errors=errors)

    # --- over all samples ---------------------------------------------------------------

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        return self.summarize_rows(stats, params)[0]

    def summarize_rows(self, stats: StatTable, params: Params):
        wanted = set(params.get("metrics") or self.families)
        return self.protocol(params).summarize(list(stats["sample"]), params, self.bands(params),
                                               wanted)


def _plain(value: Any) -> Any:
    """A parameter's value comparable with its default (sequences as lists)."""
    return list(value) if isinstance(value, (list, tuple)) else value
