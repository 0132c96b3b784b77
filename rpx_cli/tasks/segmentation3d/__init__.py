"""``rpx eval segmentation3d``: per-point semantic labels of lidar scans.

A stem is a scan: its GT labels, predicted labels and (with ``--points-dir``) its points, one
label per point in the same order. Labels are read as SemanticKITTI ``.label`` (semantic =
``& 0xFFFF``), nuScenes lidarseg ``.bin`` (uint8) or integer ``.npy``, then mapped by
``--label-map`` (both sides). Points whose GT label is in ``--ignore-index`` are left out of
everything; a predicted label outside the classes counts as wrong (the ``"other"`` column).

Each scan gives one confusion matrix per elementary distance interval (one ``np.bincount``,
:func:`rpx_cli.ops.confusion.interval_confusions`); the scan's matrix and each ``--range``
bucket's are sums of them. The matrices are folded over all scans as they arrive (exact
int64 sums), so ``--shard``/``rpx merge`` and ``--jobs`` give the same numbers and
``--no-rows`` memory does not grow with the number of scans.

``--protocol`` names the averaging rule (recorded in ``params`` and ``metric_info``):

- ``autoware`` (autoware-ml's ``Segmentation3DMetricSuite``): means over the classes with GT
  support; ``acc`` = correct / labelled points; a class without support has null scores.
  (autoware-ml drops points predicted outside the classes; here they count as wrong.)
- ``semantickitti`` (SemanticKITTI's ``np_ioueval.iouEval``): means over every class of
  ``--num-classes`` that is not ignored, an absent class scoring 0; ``acc`` = correct /
  labelled points predicted as one of those classes (a point predicted as an ignored class
  leaves the denominator, as ``getacc`` does). ``np_ioueval`` adds 1e-15 to denominators;
  here 0/0 is 0 exactly.

Rows follow the same rule per scan. Figures come from the matrices by the code 2D
segmentation uses (:mod:`rpx_cli.ops.confusion`). Formats, keys and a worked example of
both rules: docs/segmentation3d.md.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.class_names import read_class_names
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.label_map import load_label_map, normalise_label_map
from rpx_cli.io.lidar import (
    BIN_LABELS,
    LABEL_SUFFIXES,
    POINT_SUFFIXES,
    holds_words,
    read_point_labels,
    read_points,
)
from rpx_cli.ops.confusion import (
    EMPTY,
    MAX_CLASSES,
    OTHER,
    FrameConfusion,
    TooManyLabels,
    add_confusions,
    class_axis,
    decode_confusion,
    dense_matrix,
    encode_confusion,
    has_other,
    interval_confusions,
    not_in,
    trim,
)
from rpx_cli.ops.lidar import LabelMap, RangeIntervals
from rpx_cli.ops.point_counts import native_pass, semantic_labels, word_confusions
from rpx_cli.ops.reduce import mean_present
from rpx_cli.params import Band, banded
from rpx_cli.params.parsers import NAMES, parse_band
from rpx_cli.tasks.base import MetricInfo, Option, Params, Sample, Task, Warn
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.segmentation3d.scores import (
    bucket_metrics,
    class_metrics,
    scan_scores,
)
from rpx_cli.tasks.stats import Stat, StatTable

PROTOCOLS = ("autoware", "semantickitti")
NORMS = ("xy", "xyz")


class Scan(NamedTuple):
    """One scan's labels (after ``--label-map``), the file they came from, and (GT with
    ``--range``) each point's distance interval (:class:`RangeIntervals`). ``words``: the
    labels are still the file's SemanticKITTI uint32 words, to be masked and mapped in one
    pass with the other side's (:mod:`rpx_cli.ops.point_counts`; :func:`_mapped` otherwise)."""

    labels: np.ndarray
    path: str | None
    interval: np.ndarray | None = None
    words: bool = False


class Cloud(NamedTuple):
    """What a scan's points file contributes: its point count and each point's interval."""

    n: int
    interval: np.ndarray | None
    path: str


def metric_infos(protocol: str) -> dict[str, MetricInfo]:
    """Every key's direction and meaning under a protocol (range keys add a suffix)."""
    semantickitti = protocol == "semantickitti"
    rule = ("over every class of --num-classes not ignored, an absent class scoring 0 "
            "(semantickitti)" if semantickitti else "over the classes with GT support (autoware)")
    accuracy = ("correct / labelled points predicted as an averaged class (np_ioueval)"
                if semantickitti else "correct / labelled points")
    return {
        "miou": MetricInfo("higher", f"mean IoU {rule}; rows: per scan"),
        "acc": MetricInfo("higher", f"point accuracy: {accuracy}; rows: per scan"),
        "n_points": MetricInfo("none", "points of the scan (ignored ones included)"),
        "n_labelled": MetricInfo("none", "points whose GT label is not ignored"),
        "fwiou": MetricInfo("higher", "frequency-weighted IoU: sum of support share x IoU"),
        "mprecision": MetricInfo("higher", f"mean precision {rule} (0/0 = 0)"),
        "mrecall": MetricInfo("higher", f"mean recall {rule}"),
        "mf1": MetricInfo("higher", f"mean F1 {rule} (0/0 = 0)"),
        "iou": MetricInfo("higher", "per class: TP / (TP + FP + FN)"),
        "precision": MetricInfo("higher", "per class: TP / (TP + FP)"),
        "recall": MetricInfo("higher", "per class: TP / (TP + FN)"),
        "f1": MetricInfo("higher", "per class: 2PR / (P + R)"),
        "support": MetricInfo("none", "per class: GT points"),
    }


@lru_cache(maxsize=8)
def _label_map(items: tuple[tuple[str, int], ...]) -> LabelMap:
    return LabelMap({int(raw): value for raw, value in items})


@lru_cache(maxsize=8)
def _intervals(bands: tuple[Band, ...]) -> RangeIntervals:
    return RangeIntervals(bands)


@register_task
class Segmentation3D(Task):
    name = "segmentation3d"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("miou", "acc", "n_points", "n_labelled"),
              "aggregate": ("miou", "acc", "n_frames", "n_empty"),
              "dataset": ("", "miou", "fwiou", "acc", "mprecision", "mrecall", "mf1", "per_class",
                          "confusion", "n_labelled", "n_points")}
    primary_metric = "miou"
    headline = ("dataset.miou", "dataset.acc", "dataset.mf1", "dataset.fwiou", "aggregate.miou")
    band_metrics = ("miou", "acc", "mf1", "fwiou", "mprecision", "mrecall")
    suffixes = LABEL_SUFFIXES
    help = ("Point-cloud semantic segmentation (SemanticKITTI .label, nuScenes lidarseg .bin, "
            "integer .npy): per-scan mIoU and accuracy, pooled confusion-matrix metrics, "
            "per distance range, under autoware-ml's or SemanticKITTI's averaging rule.")
    formats = (
        "Per-point labels, one file per scan (prediction and GT of one stem hold the same number\n"
        "of points, in the same order):\n"
        "  .label  SemanticKITTI: uint32, semantic class = value & 0xFFFF (upper bits: instance)\n"
        "  .bin    nuScenes lidarseg: uint8 (--label-format nuscenes)\n"
        "  .npy    integers, shape (N,)\n"
        "Points for --range (--points-dir, paired by stem): .bin float32 with --point-fields 4\n"
        "(x, y, z, remission) or 5 (nuScenes), or .npy (N, >= 2). --label-map: JSON {raw: class}."
    )
    example = (
        "rpx eval segmentation3d --pred-dir fixtures/segmentation3d/kitti/pred \\\n"
        "    --gt-dir fixtures/segmentation3d/kitti/gt \\\n"
        "    --points-dir fixtures/segmentation3d/kitti/velodyne \\\n"
        "    --label-map fixtures/segmentation3d/kitti/learning_map.json --num-classes 20 \\\n"
        "    --ignore-index 0 --range 0:20 --range 20: | jq .dataset.miou_0m_20m"
    )
    options = (
        Option("ignore_index", "--ignore-index", "int", (-1,), multiple=True,
               help="GT label (after --label-map) whose points are left out of everything "
                    "(repeatable; SemanticKITTI: 0)."),
        Option("num_classes", "--num-classes", "int", None, minimum=1, maximum=MAX_CLASSES,
               help="Classes are 0..N-1: a GT label >= N is an input error, a predicted one "
                    "counts in the 'other' column [default: the labels that appear]. Needed "
                    "by --protocol semantickitti."),
        Option("class_names", "--class-names", "file", None, metavar="FILE", recorded=NAMES,
               help="Class names, one per line or a JSON list; label i is line i. Keys "
                    "dataset.per_class by name and implies --num-classes."),
        Option("label_map", "--label-map", "file", None, metavar="FILE",
               recorded={"type": "object", "additionalProperties": {"type": "integer"}},
               help='JSON {"raw label": class label} applied to GT and predictions (e.g. '
                    "SemanticKITTI's learning_map: 252 moving-car -> car). A label it does "
                    "not list is an input error."),
        Option("label_format", "--label-format", "choice", "auto", choices=BIN_LABELS,
               help="What .bin label files hold: nuscenes = lidarseg uint8, semantickitti = "
                    "uint32 like .label; auto refuses .bin labels. .label and .npy are "
                    "read as such."),
        Option("point_fields", "--point-fields", "int", 4, minimum=2,
               help="float32 values per point in .bin point files: 4 = SemanticKITTI (x, y, "
                    "z, remission), 5 = nuScenes (x, y, z, intensity, ring)."),
        Option("ranges", "--range", "parsed", (), multiple=True, parse=parse_band,
               metavar="A:B", unique=True,
               help="Also report every metric for the points at distance [A, B) metres, "
                    "suffixed like miou_0m_50m; A: is open-ended. Repeatable; needs "
                    "--points-dir."),
        Option("range_norm", "--range-norm", "choice", "xy", choices=NORMS,
               help="The distance --range buckets by: xy = hypot(x, y) (autoware-ml), xyz "
                    "= the 3D norm; float64."),
        Option("protocol", "--protocol", "choice", "autoware", choices=PROTOCOLS,
               help="Averaging rule: autoware = means over classes with GT support; "
                    "semantickitti = np_ioueval's means over every non-ignored class of "
                    "--num-classes (absent = 0) and its accuracy."),
    )
    aux_inputs = (
        Option("points_dir", "--points-dir", "dir", None, metavar="DIR", suffixes=POINT_SUFFIXES,
               help="Point clouds with the same stems (.bin float32, see --point-fields, or "
                    ".npy (N, >= 2)); needed by --range. Point counts are checked against "
                    "the labels."),
    )
    metrics = metric_infos("autoware")  # metric_info(params) names the protocol used
    families = {"rows": (("miou", "acc"), ()), "confusion": ((), ("dataset",))}

    # --- parameters -------------------------------------------------------------------

    def normalise_params(self, params: Params) -> dict[str, Any]:
        out = {**self.default_params, **params}
        points_dir = out.pop("points_dir", None)
        names = out.get("class_names")
        if isinstance(names, str):
            names = read_class_names(names, reserved=(OTHER,))
        ignore = out.get("ignore_index", (-1,))
        ignore = [ignore] if isinstance(ignore, int) else list(ignore)
        num_classes = out.get("num_classes")
        if names is not None:
            names = list(names)
            if num_classes is not None and num_classes != len(names):
                raise ParameterError(f"--num-classes {num_classes} but {len(names)} class names")
            if len(names) > MAX_CLASSES:
                raise ParameterError(f"--class-names: {len(names):,} classes, more than the "
                                     f"{MAX_CLASSES:,} a confusion matrix holds")
            num_classes = len(names)
        label_map = out.get("label_map")
        if isinstance(label_map, str):
            label_map = load_label_map(label_map)
        elif label_map is not None:
            try:
                label_map = normalise_label_map(dict(label_map))
            except ValueError as exc:
                raise ParameterError(f"label map: {exc}") from None
        ranges = self.bands(out)
        if ranges and points_dir is None:
            raise ParameterError("--range buckets points by their distance: give the point "
                                 "clouds with --points-dir")
        if out.get("protocol") == "semantickitti" and num_classes is None:
            raise ParameterError("--protocol semantickitti averages over every class 0..N-1 "
                                 "(an absent class scores 0): give --num-classes or "
                                 "--class-names")
        return {**out, "ignore_index": sorted({int(i) for i in ignore}),
                "num_classes": num_classes, "class_names": names, "label_map": label_map,
                "point_fields": int(out["point_fields"]),
                "ranges": [band.as_param() for band in ranges]}

    def validate_params(self, params: Params) -> None:
        # a single value is checked by its option (choices, --point-fields >= 2, --range
        # given once); what is left depends on two options
        if params["range_norm"] == "xyz" and params["point_fields"] < 3:
            raise ParameterError(f"--point-fields {params['point_fields']} has no z for "
                                 "--range-norm xyz")

    def statistics(self, params: Params) -> tuple[Stat, ...]:
        """Per scan: the row's ``miou`` and ``acc`` (for ``aggregate``) and the point count;
        folded over all scans: the confusion matrix, overall and per range."""
        stats: list[Stat] = [Stat("n_points", minimum=0)]
        for band in [None, *self.bands(params)]:
            stats += [Stat(banded("miou", band)), Stat(banded("acc", band)),
                      Stat(banded("confusion", band), encode=_encode_trimmed,
                           decode=decode_confusion, merge=add_confusions)]
        return tuple(stats)

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        base = metric_infos(params.get("protocol", "autoware"))
        info = dict(base)
        for band in self.bands(params):
            where = f"points at {params.get('range_norm', 'xy')} distance in {band.label}"
            for key, item in base.items():
                if key != "n_points":
                    info[band.key(key)] = MetricInfo(item.direction, f"{item.description}; {where}")
        return info

    # --- per scan ---------------------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Scan | Cloud:
        if role == "points_dir":
            norm = params["range_norm"]
            points = read_points(path, buffer, fields=params["point_fields"],
                                 columns=3 if norm == "xyz" else 2)
            interval = None
            bands = self.bands(params)
            if bands:
                interval = _intervals(tuple(bands)).index_points(points, norm)
            return Cloud(points.shape[0], interval, path)
        label_map = _label_map(tuple(params["label_map"].items())) if params["label_map"] else None
        if (label_map is not None and label_map.class_table() is not None
                and holds_words(path, params["label_format"]) and native_pass()):
            # mapped and counted with the other side's in one pass (evaluate)
            words = read_point_labels(path, buffer, bin_labels=params["label_format"], words=True)
            return Scan(words, path, words=True)
        labels = read_point_labels(path, buffer, bin_labels=params["label_format"])
        return Scan(_map_labels(labels, label_map, path), path)

    def attach(self, gt: Scan, aux: dict[str, Any], params: Params) -> Scan:
        cloud = aux.get("points_dir")
        if cloud is None:
            return gt
        if cloud.n != gt.labels.size:
            _mapped(gt, params)  # a label the map does not list is the GT file's first error
            raise InputError(f"point counts differ: {cloud.path} has {cloud.n} points, "
                             f"{gt.path} has {gt.labels.size} labels", path=cloud.path)
        return gt._replace(interval=cloud.interval)

    def empty_prediction(self, gt: Scan, params: Params) -> Scan:
        return Scan(np.full(gt.labels.size, -1, dtype=np.int16), None)  # every point wrong

    def evaluate(self, pred: Scan, gt: Scan, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        n = gt.labels.size
        bands = self.bands(params)
        intervals = _intervals(tuple(bands)) if bands else None
        counted = None
        if gt.words and pred.words and (not bands or gt.interval is not None):
            counted = word_confusions(gt.labels, pred.labels,
                                      _label_map(tuple(params["label_map"].items())),
                                      gt.interval, intervals.count if intervals else 1,
                                      params["ignore_index"])
        if counted is None:  # the numpy path (and every error, in the readers' order)
            gt_labels, pred_labels = _mapped(gt, params), _mapped(pred, params)
            if pred_labels.size != n:
                raise InputError(f"label counts differ: {pred_path} has {pred_labels.size} "
                                 f"labels, {gt_path} has {n}", path=pred_path)
            if bands and gt.interval is None:  # the Evaluator's update without points=
                raise InputError("--range buckets points by their distance: this scan has no "
                                 "points (points=)", path=gt_path)
            try:
                counted = interval_confusions(gt_labels, pred_labels, gt.interval,
                                              intervals.count if intervals else 1,
                                              tuple(params["ignore_index"]))
            except TooManyLabels as exc:
                raise InputError(str(exc), path=gt_path if exc.side == "gt" else pred_path) from None
        gt_values, pred_values, counts = counted
        # the scan's matrix, then each range's: sums of the interval matrices
        buckets = np.empty((1 + len(bands),) + counts.shape[1:], dtype=counts.dtype)
        counts.sum(axis=0, out=buckets[0])
        for bucket, (first, stop) in zip(buckets[1:], intervals.spans if intervals else (),
                                         strict=True):
            counts[first:stop].sum(axis=0, out=bucket)
        _check_gt(gt_values, buckets[0], params, gt_path)
        scores = scan_scores(gt_values, pred_values, buckets, params)
        labelled = buckets.sum(axis=(1, 2)).tolist()
        row: dict[str, Any] = {"n_points": n, "n_labelled": labelled[0]}
        stats: dict[str, Any] = {"n_points": n}
        # kept untrimmed (zero rows and columns included): scans with the same labels then
        # fold by one addition; trimmed when written (shard parts) and summarised
        for band, bucket, total, (miou, acc) in zip([None, *bands], buckets, labelled, scores,
                                                    strict=True):
            row[banded("miou", band)] = miou
            row[banded("acc", band)] = acc
            if band is not None:
                row[band.key("n_labelled")] = total
            stats[banded("miou", band)] = miou
            stats[banded("acc", band)] = acc
            stats[banded("confusion", band)] = FrameConfusion(gt_values, pred_values, bucket)
        return Sample(row, stats)

    # --- over all scans -----------------------------------------------------------------

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        aggregate: dict[str, Any] = {"n_frames": len(stats)}
        bands = [None, *self.bands(params)]
        for band in bands:
            miou = stats[banded("miou", band)]
            aggregate[banded("miou", band)] = mean_present(miou)
            aggregate[banded("acc", band)] = mean_present(stats[banded("acc", band)])
            aggregate[banded("n_empty", band)] = int(np.count_nonzero(np.isnan(miou)))
        overall = trim(stats["confusion"] or EMPTY)
        classes = class_axis([overall], params["num_classes"])
        other = has_other(overall, classes)
        names = params["class_names"]
        labels = [names[int(c)] if names else str(int(c)) for c in classes]
        scored = not_in(classes, params["ignore_index"])
        dataset: dict[str, Any] = {"n_points": int(stats["n_points"].sum())}
        per_class: dict[str, dict[str, Any]] = {label: {} for label in labels}
        warnings, scored_points = [], 0
        for band in bands:
            matrix = dense_matrix(trim(stats[banded("confusion", band)] or EMPTY), classes,
                                  other=other)
            here = int(matrix[scored].sum())  # GT points of a scored class
            if band is None:
                scored_points = here
                if not here and dataset["n_points"]:
                    warnings.append(f"no GT point of the {dataset['n_points']:,} is of a scored "
                                    "class (--ignore-index, --label-map, --num-classes): "
                                    "every figure is null")
            elif not here and scored_points:
                warnings.append(f"--range {band.label} holds no scored GT point in any scan (of "
                                f"the {scored_points:,} the other filters keep): its figures "
                                "are null")
            dataset.update(bucket_metrics(matrix, scored, params["protocol"], band))
            dataset[banded("confusion", band)] = {"labels": labels,
                                                  "columns": labels + ([OTHER] if other else []),
                                                  "matrix": matrix.tolist()}
            for c, values in class_metrics(matrix, scored, params["protocol"]).items():
                per_class[labels[c]].update({banded(key, band): value
                                             for key, value in values.items()})
        dataset["per_class"] = per_class
        return {"aggregate": aggregate, "dataset": dataset,
                **({"warnings": warnings} if warnings else {})}


def _map_labels(labels: np.ndarray, label_map: LabelMap | None, path: str | None) -> np.ndarray:
    """``labels`` through ``--label-map`` (as they are without one); a raw label the map
    does not list is an :class:`InputError` naming the file."""
    if label_map is None:
        return labels
    labels, unmapped = label_map.apply(labels)
    if unmapped.size:
        shown = ", ".join(str(v) for v in unmapped[:10].tolist())
        raise InputError(f"label(s) {shown}{' ...' if unmapped.size > 10 else ''} are "
                         "not in --label-map", path=path)
    return labels


def _mapped(scan: Scan, params: Params) -> np.ndarray:
    """A scan's labels after ``--label-map`` (the words of :class:`Scan` masked and mapped)."""
    if not scan.words:
        return scan.labels
    return _map_labels(semantic_labels(scan.labels),
                       _label_map(tuple(params["label_map"].items())), scan.path)


def _check_gt(gt_values: np.ndarray, matrix: np.ndarray, params: Params, gt_path: str) -> None:
    """The GT labels that hold points (rows of ``matrix``) are classes."""
    present = gt_values[matrix.any(axis=1)]
    bad = present[present < 0]
    if bad.size:
        raise InputError(f"GT holds negative label(s) {bad.tolist()} that are not "
                         "--ignore-index", path=gt_path)
    num_classes = params["num_classes"]
    if num_classes is not None and present.size and present[-1] >= num_classes:
        raise InputError(f"GT label {int(present[-1])} is outside --num-classes "
                         f"{num_classes}", path=gt_path)


def _encode_trimmed(confusion: FrameConfusion) -> list[list[int]]:
    return encode_confusion(trim(confusion))
