"""``rpx eval tracking``: CLEAR-MOT, Identity and HOTA per sequence and pooled.

One file per sequence (MOTChallenge ``.txt`` or JSON, :mod:`rpx_cli.io.tracks`), paired by
stem. Row per sequence: TrackEval's CLEAR, Identity and HOTA on IoU similarity
(:mod:`rpx_cli.ops.mot`); ``dataset`` from the summed statistics of every sequence
(TrackEval's ``COMBINED_SEQ``), not a mean of rows; ``aggregate`` is the mean of the rows
(a per-sequence macro average, labelled as such).

GT filtering: by default MOT GT lines whose column 7 (the "consider" flag) is 0 are
dropped. ``--benchmark mot17`` (or ``mot20``) instead applies TrackEval's MOTChallenge
preprocessing: per frame, predictions matched (optimal assignment, IoU >= 0.5) to a GT box
of a distractor class (person on vehicle, static person, distractor, reflection; MOT20
adds non-MOT vehicle) are removed, then only pedestrian GT boxes with a non-zero flag are
kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.tracks import Tracks, read_tracks
from rpx_cli.ops import mot
from rpx_cli.ops.assignment import solver
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks.base import (
    SWAP_HINT,
    MetricInfo,
    Option,
    Params,
    Sample,
    Task,
    Warn,
)
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

BENCHMARKS = ("none", "mot17", "mot20")
# Caps (input errors naming the file past them): TrackEval's metrics, which rpx reproduces,
# compare every GT box of a frame with every predicted one, and every GT id with every
# predicted id, in dense matrices solved by optimal assignment. Busy benchmarks stay far
# below (MOT20: ~250 boxes a frame, ~1,200 GT ids a sequence); 8,000 boxes in one frame or
# 20,000 ids on each side would need gigabytes and hours.
MAX_BOXES_PER_FRAME = 2_000  # per side
MAX_ID_PAIRS = 1 << 24  # GT ids x predicted ids in one sequence (e.g. 4,096 x 4,096)
PEDESTRIAN = 1
GT_SCORED = "gt-scored"  # a GT file whose flag column holds confidences
MOT_CLASSES = range(1, 14)  # pedestrian … crowd (TrackEval's class_name_to_class_id)
DISTRACTORS = {"mot17": (2, 7, 8, 12), "mot20": (2, 6, 7, 8, 12)}
RATIOS = ("mota", "moda", "motp", "idf1", "idp", "idr", "hota", "deta", "assa", "loca")
COUNTS = ("idsw", "fp", "fn", "tp", "mt", "pt", "ml", "frag", "idtp", "idfp", "idfn", "num_gt",
          "num_pred", "num_gt_ids", "num_pred_ids")


@register_task
class Tracking(Task):
    name = "tracking"
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("mota", "motp", "idf1", "hota", "deta", "assa", "idsw", "fp", "fn",
                       "num_gt", "num_pred"),
              "aggregate": ("mota", "motp", "idf1", "hota", "deta", "assa", "idsw", "fp", "fn",
                            "num_gt", "num_pred", "n_sequences"),
              "dataset": ("", "mota", "motp", "idf1", "hota", "deta", "assa", "idsw", "fp", "fn",
                          "num_gt", "num_pred")}
    primary_metric = "mota"
    headline = ("dataset.hota", "dataset.mota", "dataset.idf1", "dataset.motp", "dataset.idsw")
    page_view = "sequences"
    suffixes = (".txt", ".json")
    array_suffix = ".txt"  # in memory: MOT rows as an (N, >= 6) array
    heavy_pairs = True  # a sequence / an image pair: tens of ms to seconds each
    help = "Multi-object tracking: CLEAR-MOT, IDF1 and HOTA equal to TrackEval."
    formats = (
        'One file per sequence (the stem names it), either side in either form:\n'
        '  MOTChallenge .txt  frame,id,x,y,w,h,conf,... one box per line (commas or spaces);\n'
        '                     in GT, column 7 is the "consider" flag (0 = ignored), 8 the class\n'
        '  JSON {"frames": [{"frame": 1, "objects": [{"id": 7, "bbox": [x1, y1, x2, y2]}]}, ...]}\n'
        '       (an object may add "score"; ids are integers or strings)'
    )
    example = (
        'rpx eval tracking --pred-dir fixtures/tracking/mot/pred --gt-dir fixtures/tracking/mot/gt \\\n'
        "    | jq '.dataset | {hota, mota, idf1}'\n"
        'rpx eval tracking --pred-dir fixtures/tracking/mot/pred --gt-dir fixtures/tracking/mot/gt \\\n'
        "    --benchmark mot17 | jq '.rows[] | {stem, mota}'"
    )
    metrics = {
        "mota": MetricInfo("higher", "1 - (FN + FP + IDSW) / num_gt (CLEAR)"),
        "moda": MetricInfo("higher", "1 - (FN + FP) / num_gt (CLEAR, no ID switches)"),
        "motp": MetricInfo("higher", "mean IoU of the CLEAR matches (TrackEval's similarity "
                           "form: higher is better)"),
        "idf1": MetricInfo("higher", "IDTP / (IDTP + (IDFP + IDFN) / 2): one-to-one id assignment"),
        "idp": MetricInfo("higher", "IDTP / (IDTP + IDFP)"),
        "idr": MetricInfo("higher", "IDTP / (IDTP + IDFN)"),
        "hota": MetricInfo("higher", "sqrt(DetA * AssA), averaged over alpha = 0.05 ... 0.95"),
        "deta": MetricInfo("higher", "HOTA detection accuracy TP / (TP + FN + FP), mean over alpha"),
        "assa": MetricInfo("higher", "HOTA association accuracy, mean over alpha"),
        "loca": MetricInfo("higher", "HOTA localisation accuracy (mean IoU of matches), mean "
                           "over alpha"),
        "idsw": MetricInfo("lower", "identity switches (CLEAR)"),
        "fp": MetricInfo("lower", "false positives (CLEAR)"),
        "fn": MetricInfo("lower", "misses (CLEAR)"),
        "tp": MetricInfo("higher", "CLEAR matches"),
        "mt": MetricInfo("higher", "mostly tracked GT tracks (> 80 % of frames matched)"),
        "pt": MetricInfo("none", "partially tracked GT tracks (20-80 %)"),
        "ml": MetricInfo("lower", "mostly lost GT tracks (< 20 %)"),
        "frag": MetricInfo("lower", "fragmentations: times a GT track resumes after a gap in "
                           "its matches"),
        "idtp": MetricInfo("higher", "identity true positives"),
        "idfp": MetricInfo("lower", "identity false positives"),
        "idfn": MetricInfo("lower", "identity false negatives"),
        "num_gt": MetricInfo("none", "GT boxes evaluated"),
        "num_pred": MetricInfo("none", "predicted boxes evaluated"),
        "num_gt_ids": MetricInfo("none", "GT tracks"),
        "num_pred_ids": MetricInfo("none", "predicted tracks"),
    }
    options = (
        Option("iou_threshold", "--iou-threshold", "float", 0.5, minimum=0.0, open_min=True,
               maximum=1.0, metavar="T",
               help="IoU a CLEAR or Identity match needs (HOTA always sweeps 0.05 ... 0.95)."),
        Option("box_format", "--box-format", "choice", "xyxy", choices=("xyxy", "xywh"),
               help="Boxes in JSON files are [x1, y1, x2, y2] or [x, y, w, h] (MOT text is "
                    "always x, y, w, h)."),
        Option("benchmark", "--benchmark", "choice", "none", choices=BENCHMARKS,
               help="Apply TrackEval's MOTChallenge preprocessing (distractor classes, "
                    "zero-marked GT, pedestrians only) [none: drop GT lines whose flag is 0]."),
    )
    # TrackEval's summed fields of one sequence, named by ops.mot.STAT_NAMES
    stats = (Stat("mot", width=mot.WIDTH, minimum=0),)  # counts and sums of similarities

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Tracks:
        tracks = read_tracks(path, buffer, box_format=params["box_format"])
        if role == "gt" and tracks.scored:
            warn(GT_SCORED, path)
        if params["benchmark"] != "none":
            _check_benchmark_file(tracks, path, role, params["benchmark"])
        return tracks

    def empty_prediction(self, gt: Tracks, params: Params) -> Tracks:
        return Tracks.empty()

    def evaluate(self, pred: Tracks, gt: Tracks, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        gt, pred, pairs = _preprocess(gt, pred, params["benchmark"])
        _check_size(gt, pred, pred_path, gt_path)
        stats = mot.sequence_stats(_side(gt), _side(pred), params["iou_threshold"], pairs=pairs)
        return Sample(mot.finalize(stats), {"mot": stats.tolist()})

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        vectors = stats["mot"]
        rows = [mot.finalize(vector) for vector in vectors]
        aggregate: dict[str, Any] = {"n_sequences": len(rows),
                                     "n_empty": sum(1 for row in rows if row["num_gt"] == 0)}
        for key in RATIOS:
            aggregate[key] = mean_present([row[key] for row in rows])
        for key in COUNTS:
            aggregate[key] = sum(row[key] for row in rows) / len(rows) if rows else None
        combined = mot.combine(vectors)
        dataset: dict[str, Any] = mot.finalize(combined)
        if dataset["num_gt"]:
            arrays = mot.alpha_arrays(combined)
            dataset["hota_alpha"] = {"alpha": [round(a, 2) for a in mot.ALPHAS.tolist()],
                                     **{key: arrays[key].tolist() for key in
                                        ("hota", "deta", "assa", "loca", "detre", "detpr",
                                         "assre", "asspr")}}
        sections: dict[str, Any] = {"aggregate": aggregate, "dataset": dataset}
        if rows and not dataset["num_gt"] and dataset["num_pred"]:
            sections["warnings"] = [
                f"no GT box is evaluated in any of the {len(rows)} sequence(s) while the "
                f"predictions hold {dataset['num_pred']}: every ratio is null; {SWAP_HINT}"]
        return sections

    def warning_text(self, kind: str, paths: list[str]) -> str:
        if kind == GT_SCORED:
            return (f"{len(paths)} GT file(s) hold confidences in column 7 (e.g. {paths[0]}), "
                    "as a results file does; in GT it is the consider flag, so those boxes are "
                    f"ignored: {SWAP_HINT}")
        return super().warning_text(kind, paths)

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        info = dict(self.metrics)
        info["benchmark"] = MetricInfo("none", {
            "none": "GT lines with flag (column 7) 0 dropped; every prediction kept",
            "mot17": "TrackEval MOTChallenge preprocessing (MOT17 distractor classes)",
            "mot20": "TrackEval MOTChallenge preprocessing (MOT20 distractor classes)",
        }[params["benchmark"]])
        return info


def _side(tracks: Tracks) -> mot.Side:
    return mot.Side(tracks.frame, tracks.ids, tracks.box)


def _check_benchmark_file(tracks: Tracks, path: str, role: str, benchmark: str) -> None:
    """TrackEval's MOTChallenge checks: GT needs flag and class columns with known classes;
    predictions may only be pedestrians (class column 1 or absent/-1)."""
    if not len(tracks):
        return
    if path.lower().endswith(".json"):
        raise InputError(f"--benchmark {benchmark} needs MOTChallenge .txt files", path=path)
    if role == "gt":
        if (tracks.cls < 0).all():
            raise InputError(f"--benchmark {benchmark}: GT needs 8 columns (frame, id, x, y, w, "
                             "h, flag, class)", path=path)
        unknown = np.setdiff1d(tracks.cls, np.asarray(MOT_CLASSES))
        if unknown.size:
            raise InputError(f"--benchmark {benchmark}: unknown GT class(es) "
                             f"{', '.join(map(str, unknown.tolist()))} (MOTChallenge classes are "
                             "1-13)", path=path)
    elif (tracks.cls > PEDESTRIAN).any():
        raise InputError(f"--benchmark {benchmark}: predictions must be pedestrians (column 8 "
                         f"is {int(tracks.cls.max())}; MOTChallenge evaluates class 1 only)",
                         path=path)


def _check_size(gt: Tracks, pred: Tracks, pred_path: str | None, gt_path: str) -> None:
    """Refuse, naming the file, a sequence past :data:`MAX_BOXES_PER_FRAME` or
    :data:`MAX_ID_PAIRS` (before any matrix is built)."""
    for side, path in ((gt, gt_path), (pred, pred_path or gt_path)):
        if len(side):
            frames, counts = np.unique(side.frame, return_counts=True)
            if counts.max() > MAX_BOXES_PER_FRAME:
                at = int(np.argmax(counts))
                raise InputError(f"frame {int(frames[at])} has {int(counts[at]):,} boxes; at most "
                                 f"{MAX_BOXES_PER_FRAME:,} per frame are evaluated (the metrics "
                                 "compare every GT box with every predicted one)", path=path)
    n_gt, n_pred = len(np.unique(gt.ids)), len(np.unique(pred.ids))
    if n_gt * n_pred > MAX_ID_PAIRS:
        raise InputError(f"{n_gt:,} GT ids x {n_pred:,} predicted ids ({gt_path}) exceed the "
                         f"{MAX_ID_PAIRS:,} id pairs evaluated per sequence (the identity "
                         "metrics match every GT id with every predicted one)",
                         path=pred_path or gt_path)


def _preprocess(gt: Tracks, pred: Tracks,
                benchmark: str) -> tuple[Tracks, Tracks, mot.Pairs | None]:
    """The boxes that are evaluated (see the module docstring), and under a benchmark
    their pairs (frame-sorted; the distractor matching computed every IoU already)."""
    if benchmark == "none":
        return gt.where(gt.flag != 0), pred, None
    gt = gt.where(np.argsort(gt.frame, kind="stable"))
    pred = pred.where(np.argsort(pred.frame, kind="stable"))
    if len(gt) and len(pred):
        pairs = mot.pair_up(_side(gt), _side(pred))
        remove = np.zeros(len(pred), bool)
        lsa = solver()
        distractor = np.isin(gt.cls, DISTRACTORS[benchmark])
        for g0, _, p0, _, _, sim in pairs.frame_matrices():
            scores = np.where(sim < 0.5 - mot.EPS, 0.0, sim)
            rows, cols = lsa(-scores)
            matched = scores[rows, cols] > mot.EPS
            hit = distractor[g0 + rows[matched]]
            remove[p0 + cols[matched][hit]] = True
        keep_g = (gt.flag != 0) & (gt.cls == PEDESTRIAN)
        return gt.where(keep_g), pred.where(~remove), mot.keep_pairs(pairs, keep_g, ~remove)
    return gt.where((gt.flag != 0) & (gt.cls == PEDESTRIAN)), pred, None
