"""``rpx eval tracking3d``: nuScenes 3D multi-object tracking, as nuscenes-devkit 1.1.9.

A pair is a **scene**: a folder ``<scene>/<sample>.json`` on each side (one sample's boxes
per file; the engine reads and digests every file, :attr:`Task.folder_pairs`), a scene of the
submission files ``--gt-file``/``--pred-file``, or ``Evaluator.update(scene, pred, gt)``
with ``{sample: boxes}`` documents. Rows are per scene. Each scene is prepared on its own —
the devkit's filters, track scores, interpolation and candidate pairs
(:mod:`rpx_cli.ops.track_scenes`) — and kept as the pair's statistic; the thresholds,
matching and figures need every scene at once and are computed in the summary
(:mod:`rpx_cli.ops.track_eval`), so shards, ``rpx merge`` and ``--jobs`` give the same
numbers. The scene's parts: :mod:`.scenes` (time order, timestamps), :mod:`.summary`
(report sections, rows), :mod:`.inputs` (the submission files).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.tracks3d import TrackSample, read_sample, read_samples, scene_document
from rpx_cli.ops.amota import CLASS_KEYS
from rpx_cli.ops.track_scenes import SceneFrames, prepare_scene
from rpx_cli.params.parsers import NAME_NUMBERS, NAMES, name_and_number, number, positive
from rpx_cli.tasks.base import FileInput, MetricInfo, Option, Params, Sample, Task, Warn, probability
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable
from rpx_cli.tasks.tracking3d.inputs import read_submissions
from rpx_cli.tasks.tracking3d.scenes import Scene, gt_scene, scene_sides
from rpx_cli.tasks.tracking3d.summary import ROW_KEYS, summarize_scenes

# the devkit's tracking_nips_2019 configuration
TRACKING_NAMES = ("bicycle", "bus", "car", "motorcycle", "pedestrian", "trailer", "truck")
CLASS_RANGE = {"bicycle": 40.0, "bus": 50.0, "car": 50.0, "motorcycle": 40.0,
               "pedestrian": 40.0, "trailer": 50.0, "truck": 50.0}
GLOBAL_FRAME_M = 300.0  # no sensor sees this far: such boxes are in a map frame


def _cap(value: Any) -> float | None:
    """A class range in metres, > 0; ``inf`` or ``none``: no cap (None)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    cap = number(value)
    if not cap > 0:
        raise ValueError(f"a class range must be > 0 metres (inf or none: no cap), got {value!r}")
    return None if math.isinf(cap) else cap


def _encode(frames: SceneFrames) -> dict[str, Any]:
    return frames.as_json()


@register_task
class Tracking3D(Task):
    name = "tracking3d"
    help = ("3D multi-object tracking: nuScenes AMOTA, AMOTP, MOTA, MOTP, recall, IDS, FRAG, "
            "TID, LGD per class, as the nuScenes devkit computes them.")
    formats = (
        "One folder per scene on each side, one JSON per sample: <scene>/<sample>.json, a list of\n"
        '  {"translation": [x, y, z], "tracking_id": "t1", "tracking_name": "car",\n'
        '   "tracking_score": 0.8 (predictions), "num_pts": 12 (GT, optional),\n'
        '   "timestamp": 1533151603547590 (optional), "size"/"rotation"/"velocity" (optional)}\n'
        'or {"timestamp": T, "boxes": [...]}. Samples are ordered by timestamp, else by name.\n'
        'Or the nuScenes submission files: --pred-file/--gt-file {"results": {sample: [boxes]}},\n'
        'the GT file with "scenes": {scene: [samples in time order]}.'
    )
    example = (
        "rpx eval tracking3d --pred-dir fixtures/tracking3d/crossing/pred \\\n"
        "    --gt-dir fixtures/tracking3d/crossing/gt | jq .dataset.amota"
    )
    suffixes = (".json",)
    folder_pairs = True
    heavy_pairs = True
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("n_gt", "n_pred", "tp", "fp", "fn", "ids", "frag", "mota", "motp", "recall"),
              "aggregate": ("n_gt", "n_pred", "tp", "fp", "fn", "ids", "frag", "mota", "motp",
                            "recall"),
              "dataset": ("", "amota", "amotp", "mota", "motp", "recall", "ids", "frag",
                          "per_class")}
    primary_metric = "mota"
    rank_metric = "mota"
    headline = ("dataset.amota", "dataset.amotp", "dataset.mota", "dataset.motp",
                "dataset.recall", "dataset.ids", "dataset.frag")
    page_view = "mota_recall"
    input_help = ("Folder of predictions: <scene>/<sample>.json.",
                  "Folder of ground truth: <scene>/<sample>.json.")
    stats = (Stat("scene", encode=_encode, decode=SceneFrames.from_json),)
    metrics = {
        "n_gt": MetricInfo("none", "GT boxes evaluated (after the class ranges, the zero-point "
                                   "filter and interpolation)"),
        "n_pred": MetricInfo("none", "predicted boxes evaluated (after the class ranges and "
                                     "interpolation)"),
        "tp": MetricInfo("higher", "matches (at each class's best-MOTA threshold)"),
        "fp": MetricInfo("lower", "false positives"),
        "fn": MetricInfo("lower", "misses"),
        "ids": MetricInfo("lower", "identity switches"),
        "frag": MetricInfo("lower", "fragmentations: a tracked object lost and found again"),
        "mota": MetricInfo("higher", "multi-object tracking accuracy 1 - (fn + ids + fp) / gt "
                                     "(dataset: clipped at 0 per class; rows: not clipped)"),
        "motp": MetricInfo("lower", "mean centre distance of the matches (m)", "m"),
        "recall": MetricInfo("higher", "(tp + ids) / gt"),
        "amota": MetricInfo("higher", "average MOTAR over the recall targets"),
        "amotp": MetricInfo("lower", "average MOTP over the recall targets (m)", "m"),
        "motar": MetricInfo("higher", "recall-normalised MOTA at the best threshold"),
        "mt": MetricInfo("higher", "mostly tracked objects (>= 80 % of their boxes)"),
        "ml": MetricInfo("lower", "mostly lost objects (< 20 % of their boxes)"),
        "faf": MetricInfo("lower", "false alarms per 100 frames"),
        "gt": MetricInfo("none", "GT boxes of the class (dataset: mean over classes)"),
        "tid": MetricInfo("lower", "track initialisation duration (s)", "s"),
        "lgd": MetricInfo("lower", "longest gap duration (s)", "s"),
    }
    families = {
        "rows": (ROW_KEYS, ()),
        "curves": ((), ("dataset.curves",)),
    }
    options = (
        Option("class_names", "--class-names", "str", (), multiple=True, metavar="NAMES", recorded=NAMES,
               help="Tracking classes, comma-separated (repeatable) or a file; a box of another "
                    "class is an input error [default: the seven nuScenes tracking classes]."),
        Option("class_range", "--class-range", "parsed", (), multiple=True, recorded=NAME_NUMBERS,
               parse=name_and_number("METRES", _cap), metavar="NAME=M",
               help="Evaluate class NAME only within M metres of the ego (repeatable; inf: no "
                    "cap) [default: car, truck, bus, trailer 50; pedestrian, motorcycle, "
                    "bicycle 40; other classes uncapped]."),
        Option("dist_th", "--dist-th", "parsed", 2.0, parse=positive("distance threshold"),
               metavar="M", help="Centre-distance match threshold (a match needs distance < M)."),
        Option("num_thresholds", "--num-thresholds", "int", 40, minimum=1,
               help="Recall targets AMOTA and AMOTP average over."),
        Option("min_recall", "--min-recall", "parsed", 0.1, parse=probability("min recall"),
               metavar="R", help="The lowest recall target."),
        Option("max_boxes", "--max-boxes", "int", 500, minimum=1,
               help="More predictions than this in one sample is an input error (the devkit's "
                    "max_boxes_per_sample)."),
    )
    file_inputs = (
        Option("gt_file", "--gt-file", "file", None, urls=True, metavar="FILE",
               help='GT in the nuScenes submission layout with "scenes" {scene: [samples]} '
                    "instead of --gt-dir."),
        Option("pred_file", "--pred-file", "file", None, urls=True, metavar="FILE",
               help='Predictions in the nuScenes submission layout {"results": {sample: '
                    '[boxes]}} instead of --pred-dir.'),
    )

    # --- parameters -------------------------------------------------------------------

    def normalise_params(self, params: Params) -> dict[str, Any]:
        from rpx_cli.io.class_names import read_class_names

        out = dict(params)
        names: list[str] = []
        for item in params.get("class_names") or ():
            import os

            names += read_class_names(item) if os.path.isfile(item) else \
                [part.strip() for part in str(item).split(",") if part.strip()]
        out["class_names"] = sorted(dict.fromkeys(names or TRACKING_NAMES))
        caps = {name: CLASS_RANGE.get(name) for name in out["class_names"]}
        given = params.get("class_range") or ()
        for name, cap in (given.items() if isinstance(given, Mapping) else given):
            caps[str(name)] = None if cap is None or math.isinf(cap) else float(cap)
        out["class_range"] = caps
        out["dist_th"] = float(params["dist_th"])
        out["min_recall"] = float(params["min_recall"])
        return out

    def validate_params(self, params: Params) -> None:
        from rpx_cli.errors import ParameterError

        unknown = sorted(set(params["class_range"]) - set(params["class_names"]))
        if unknown:
            raise ParameterError(f"--class-range: {', '.join(unknown)} is not one of the "
                                 f"classes ({', '.join(params['class_names'])})")

    # --- per scene ----------------------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> TrackSample | Scene:
        data = buffer.read(path).tobytes()
        from rpx_cli.io.json import loads_json

        document = loads_json(data, path)
        samples = scene_document(document)
        if samples is None:  # one sample's file
            return self.sample(document, path, params, role)
        parsed = self.samples(samples, path, params, role)
        if role == "pred":
            return Scene(parsed)
        return gt_scene(parsed, list(parsed), path, sort_by_time=True)

    def sample(self, document: Any, path: str, params: Params, role: str,
               where: str = "") -> TrackSample:
        """One sample's boxes, checked: classes, and the devkit's box count."""
        sample = read_sample(document, path, prediction=role == "pred", where=where)
        return self.checked(sample, path, params, role, where)

    def samples(self, documents: Mapping[str, Any], path: str, params: Params,
                role: str) -> dict[str, TrackSample]:
        """Many samples' boxes (name -> document), read at once, each checked."""
        read = read_samples(documents, path, prediction=role == "pred")
        return {name: self.checked(sample, path, params, role, f"sample {name!r}: ")
                for name, sample in read.items()}

    def checked(self, sample: TrackSample, path: str, params: Params, role: str,
                where: str) -> TrackSample:
        known = set(params["class_names"])
        unknown = [i for i, name in enumerate(sample.names) if name not in known]
        if unknown:
            raise InputError(f"{where}box {unknown[0]}: tracking_name "
                             f"{sample.names[unknown[0]]!r} is not one of the classes "
                             f"({', '.join(params['class_names'])})", path=path)
        if role == "pred" and len(sample) > params["max_boxes"]:
            raise InputError(f"{where}{len(sample)} predictions in one sample, more than "
                             f"--max-boxes {params['max_boxes']} (the devkit's "
                             "max_boxes_per_sample)", path=path)
        return sample

    def combine(self, values: list[tuple[str, Any]], params: Params, *, role: str,
                path: str) -> Scene:
        samples = dict(values)
        if role == "pred":
            return Scene(samples)
        return gt_scene(samples, sorted(samples), path, sort_by_time=True)

    def empty_prediction(self, gt: Scene, params: Params) -> Scene:
        return Scene({})

    def evaluate(self, pred: Scene, gt: Scene, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        if not isinstance(gt, Scene) or not isinstance(pred, Scene):
            raise InputError("tracking3d evaluates scenes: give a scene's samples together, "
                             "{sample: boxes, ...} in time order (one sample's boxes alone "
                             "cannot be tracked)", path=gt_path)
        classes = params["class_names"]
        gt_side, pred_side = scene_sides(pred, gt, classes, pred_path or gt_path)
        caps = np.array([np.inf if params["class_range"].get(name) is None
                         else params["class_range"][name] for name in classes])
        for side, path, who in ((gt_side, gt_path, "GT"), (pred_side, pred_path, "predicted")):
            check_frame(side.distance, caps, path or gt_path, who)
        assert gt.timestamps is not None
        frames = prepare_scene(gt_side, pred_side, gt.timestamps, caps, len(classes),
                               params["dist_th"])
        return Sample({}, {"scene": frames})

    def read_files(self, files: Mapping[str, str], params: Params) -> FileInput:
        return read_submissions(self, files, params)

    # --- over all scenes ----------------------------------------------------------------

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        return self.summarize_rows(stats, params)[0]

    def summarize_rows(self, stats: StatTable, params: Params):
        wanted = set(params.get("metrics") or self.families)
        return summarize_scenes(list(stats["scene"]), params, wanted)


def check_frame(distance: np.ndarray, caps: np.ndarray, path: str, who: str) -> None:
    """Refuse boxes clearly in a global (map) frame when class ranges would measure them
    from the origin: every box would be dropped and the run score nothing, silently."""
    if not distance.size or not np.isfinite(caps).any():
        return
    median = float(np.median(distance))
    if median > GLOBAL_FRAME_M:
        raise InputError(
            f"the {who} boxes look like global (map) coordinates: their median distance from the "
            f"origin is {median:.0f} m, beyond any sensor's range, so the class ranges (measured "
            "from the ego) would drop every box. Give each box 'ego_translation' (its centre "
            "minus the ego position, as the devkit's add_center_dist), or --class-range "
            "NAME=inf for every class", path=path)


CLASS_METRICS = CLASS_KEYS
