"""``rpx eval panoptic``: panoptic quality (PQ, SQ, RQ) on the COCO panoptic format, as
panopticapi's ``pq_compute`` computes it (docs/panoptic.md).

The JSON files list the images (:meth:`Panoptic.list_pairs`, :mod:`.listing`): each GT
annotation is paired with the prediction of the same ``image_id`` (panopticapi's key; a
prediction no GT id claims is paired by its ``file_name`` stem instead) and each side's PNG
is its own ``file_name`` in its folder. The PNGs are read and decoded in the worker
processes like any pair of files; the image's ``segments_info`` come with the pair
(:meth:`Panoptic.join`). Per image, :func:`rpx_cli.ops.panoptic.overlap_counts` counts
every area and intersection in one pass and :func:`~rpx_cli.ops.panoptic.match_image`
gives the TP/FP/FN counts and IoU sums per category, kept as one small object per image;
the summary adds them up in stem order, so ``--shard`` parts, ``rpx merge``, ``--jobs``
and ``--executor dask`` give the single run's numbers exactly.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.errors import GroundTruthWarning, InputError, ParameterError
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.json import loads_json
from rpx_cli.io.panoptic import (
    PanopticImage,
    Segments,
    decode_ids,
    in_memory_image,
    read_categories,
    segments_of,
)
from rpx_cli.ops.panoptic import ImageResult, Quality, match_image, overlap_counts
from rpx_cli.ops.reduce import mean_present
from rpx_cli.tasks.base import Listing, MetricInfo, Option, Params, Sample, Task, Warn, shape_text
from rpx_cli.tasks.panoptic.listing import Entry, list_images
from rpx_cli.tasks.registry import register_task
from rpx_cli.tasks.stats import Stat, StatTable

SPLITS = ("", "_things", "_stuff")  # all classes, things, stuff: the key suffixes
AREA_MISMATCH = ("GT segment area in the JSON differs from its pixel count in the PNG (the "
                 "JSON's is used, as panopticapi does)")
ABSENT_GT = ("GT segment listed in segments_info has no pixel in the PNG (a false negative "
             "unless crowd, as panopticapi counts it)")


def _encode_classes(result: ImageResult) -> dict[str, list[Any]]:
    return {"category": result.category.tolist(), "tp": result.tp.tolist(),
            "fp": result.fp.tolist(), "fn": result.fn.tolist(), "iou": result.iou.tolist()}


def _decode_classes(data: Mapping[str, list[Any]]) -> ImageResult:
    ints = [np.asarray(data[key], np.int64) for key in ("category", "tp", "fp", "fn")]
    return ImageResult(*ints, np.asarray(data["iou"], np.float64))


@register_task
class Panoptic(Task):
    name = "panoptic"
    help = ("Panoptic segmentation (COCO panoptic format): PQ, SQ and RQ over all classes, "
            "things and stuff, per class and per image, as panopticapi's pq_compute.")
    details = (
        "Images come from the JSON files: each GT annotation is paired with the prediction of "
        "the same image_id (a prediction whose id no GT claims: by its file_name stem), and "
        "each side's PNG is its own file_name in its folder; rows are named by the GT "
        "file_name without its suffix. A match needs IoU > 0.5 with the same category (the "
        "prediction's pixels on VOID left out of the union); an unmatched prediction is a "
        "false positive unless more than half of it lies on VOID or on a crowd region of its "
        "category. Class means take the classes with TP + FP + FN > 0."
    )
    formats = (
        "--gt-json / --pred-json: COCO panoptic JSON {annotations: [{image_id, file_name,\n"
        "  segments_info: [{id, category_id, iscrowd?, area?}]}], categories: [{id, name,\n"
        "  isthing}]} (categories from the GT file; the prediction file may be the list alone).\n"
        "--gt-dir / --pred-dir: the PNGs the annotations name, 8-bit RGB, segment id =\n"
        "  R + 256*G + 256^2*B (0 = VOID / unlabelled)."
    )
    example = (
        "rpx eval panoptic --gt-json fixtures/panoptic/coco/gt.json --gt-dir fixtures/panoptic/coco/gt \\\n"
        "    --pred-json fixtures/panoptic/coco/pred.json --pred-dir fixtures/panoptic/coco/pred \\\n"
        "    | jq .dataset.pq"
    )
    # the id PNGs; .json: an image with its segments, {ids or rgb, segments_info}, as
    # rpx_cli.Evaluator takes one in memory
    suffixes = (".png", ".json")
    heavy_pairs = True  # a sequence / an image pair: tens of ms to seconds each
    input_help = ("Folder of the prediction PNGs that --pred-json names.",
                  "Folder of the GT PNGs that --gt-json names.")
    files_list_pairs = True
    file_inputs = (
        Option("gt_json", "--gt-json", "file", None, metavar="FILE",
               help="COCO panoptic GT JSON: the images, their segments and the categories "
                    "(with isthing)."),
        Option("pred_json", "--pred-json", "file", None, metavar="FILE",
               help="COCO panoptic prediction JSON: each image's segments (image_id, "
                    "file_name, segments_info)."),
    )
    options = (
        Option("categories", "--categories", "parsed", None, parse=read_categories,
               metavar="FILE", recorded={"type": "array", "items": {
                   "type": "object", "required": ["id", "name", "isthing"],
                   "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                  "isthing": {"type": "boolean"}}}},
               help="The categories, a JSON list of {id, name, isthing} (or a COCO file with "
                    "'categories') [default: the GT JSON's]. rpx_cli.Evaluator takes the list."),
    )
    # what every full report writes (the schema requires it; a --metrics family's keys only when it ran)
    always = {"rows": ("pq", "sq", "rq", "tp", "fp", "fn"),
              "aggregate": ("pq", "sq", "rq", "n_images"),
              "dataset": ("", "pq", "sq", "rq", "pq_things", "sq_things", "rq_things", "pq_stuff",
                          "sq_stuff", "rq_stuff", "per_class", "n_images")}
    primary_metric = "pq"
    rank_metric = "pq"
    headline = ("dataset.pq", "dataset.sq", "dataset.rq", "dataset.pq_things",
                "dataset.pq_stuff", "aggregate.pq")
    page_view = "things_and_stuff"
    metrics = {
        "pq": MetricInfo("higher", "panoptic quality Σ IoU(TP) / (TP + FP/2 + FN/2) per "
                         "class; dataset: the mean over classes with TP + FP + FN > 0 "
                         "(panopticapi); row: the same mean over that image's classes"),
        "sq": MetricInfo("higher", "segmentation quality Σ IoU(TP) / TP per class (0 without a "
                         "TP), averaged as pq"),
        "rq": MetricInfo("higher", "recognition quality TP / (TP + FP/2 + FN/2) per class, "
                         "averaged as pq"),
        **{f"{key}{split}": MetricInfo("higher", f"{key} averaged over the {split[1:]} classes "
                                       "with TP + FP + FN > 0 (isthing = "
                                       f"{int(split == '_things')})")
           for split in SPLITS[1:] for key in ("pq", "sq", "rq")},
        "tp": MetricInfo("higher", "matched segments (IoU > 0.5, same category)"),
        "fp": MetricInfo("lower", "unmatched predicted segments, not mostly on VOID or crowd"),
        "fn": MetricInfo("lower", "unmatched non-crowd GT segments"),
        "n_classes": MetricInfo("none", "classes in the mean (TP + FP + FN > 0)"),
        "n_classes_things": MetricInfo("none", "thing classes in the mean"),
        "n_classes_stuff": MetricInfo("none", "stuff classes in the mean"),
        "n_images": MetricInfo("none", "images evaluated"),
    }
    stats = (Stat("pq"), Stat("sq"), Stat("rq"),
             Stat("classes", encode=_encode_classes, decode=_decode_classes))
    report_properties = {"dataset": {"type": "object", "properties": {
        "per_class": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["pq", "sq", "rq", "tp", "fp", "fn", "isthing"],
            "properties": {"isthing": {"type": "boolean"}}}}}}}

    # --- the pairs the JSON files list --------------------------------------------------

    def list_pairs(self, files: Mapping[str, str], pred_dir: str, gt_dir: str, params: Params, *,
                   missing: str) -> Listing:
        pairing, categories = list_images(files["gt_json"], files["pred_json"], pred_dir,
                                          gt_dir, missing=missing, categories=params["categories"])
        return Listing(pairing, {"categories": categories})

    # --- per image (in a worker) ------------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> np.ndarray | PanopticImage:
        data = buffer.read(path)
        if path.lower().endswith(".json"):  # {ids or rgb, segments_info}: rpx_cli.Evaluator's
            return in_memory_image(loads_json(data.tobytes(), path), path)
        return decode_ids(data, path)  # a PNG: its segments come with the pair (join)

    def empty_prediction(self, gt: np.ndarray | PanopticImage,
                         params: Params) -> np.ndarray | PanopticImage:
        if isinstance(gt, PanopticImage):
            return PanopticImage(np.zeros_like(gt.ids), [], gt.image_id)
        return np.zeros_like(gt)  # all VOID, no segment

    def prediction_size(self, gt: np.ndarray | PanopticImage,
                        params: Params) -> tuple[tuple[int, int], int]:
        """The GT's size: a prediction PNG declaring more is refused before it is decoded."""
        ids = gt.ids if isinstance(gt, PanopticImage) else gt
        return (int(ids.shape[0]), int(ids.shape[1])), 1

    def join(self, pred: np.ndarray, gt: np.ndarray, entry: Entry, params: Params, *,
             prediction: bool = True) -> tuple[PanopticImage, PanopticImage]:
        segments = entry.pred_segments or [] if prediction else []  # empty: no segment
        return (PanopticImage(pred, segments, entry.image_id),
                PanopticImage(gt, entry.gt_segments, entry.image_id))

    def evaluate(self, pred: PanopticImage, gt: PanopticImage, params: Params, *,
                 pred_path: str | None, gt_path: str) -> Sample:
        categories = params["categories"]
        if not categories:
            raise ParameterError("panoptic needs the categories: Evaluator('panoptic', "
                                 "categories=[{'id', 'name', 'isthing'}, ...])")
        index = {category["id"]: i for i, category in enumerate(categories)}
        image = f"image {gt.image_id!r}"
        gt_segments = segments_of(gt.segments, index, image=f"{image} (GT)", path=gt_path)
        pred_path = pred_path or gt_path
        pred_segments = segments_of(pred.segments, index, image=f"{image} (prediction)",
                                    path=pred_path)
        if pred.ids.shape != gt.ids.shape:
            raise InputError(f"{image}: the prediction PNG is {shape_text(pred.ids)} and the GT "
                             f"PNG {shape_text(gt.ids)}", path=pred_path)
        counts = overlap_counts(gt.ids, pred.ids, gt_segments.ids, pred_segments.ids)
        _check_ids(counts, pred, pred_segments, f"{image} (prediction)", pred_path)
        if counts[0].any():  # GT pixels with an id the GT JSON does not list
            _unlisted(gt, gt_segments, f"{image} (GT)", gt_path)
        pixels = counts[2:, :].sum(axis=1, dtype=np.int64)
        area = np.where(gt_segments.area >= 0, gt_segments.area, pixels)
        zero = (area == 0) & (pixels > 0)
        if zero.any():  # a union of 0 pixels: no IoU (panopticapi would divide by zero)
            raise InputError(f"{image} (GT): segment {int(gt_segments.ids[zero][0])} has area 0 "
                             f"in the JSON but {int(pixels[zero][0])} pixel(s) in the PNG",
                             path=gt_path)
        if np.any((gt_segments.area >= 0) & (gt_segments.area != pixels)):
            warnings.warn(AREA_MISMATCH, GroundTruthWarning, stacklevel=1)
        if np.any(pixels == 0):
            warnings.warn(ABSENT_GT, GroundTruthWarning, stacklevel=1)
        result = match_image(counts, gt_segments.category, gt_segments.crowd, area,
                             pred_segments.category, len(categories))
        quality = Quality.of(result.tp, result.fp, result.fn, result.iou)
        pq, sq, rq, _ = quality.means()
        row = {"pq": pq, "sq": sq, "rq": rq, "tp": int(result.tp.sum()),
               "fp": int(result.fp.sum()), "fn": int(result.fn.sum())}
        return Sample(row, {"pq": pq, "sq": sq, "rq": rq, "classes": result})

    # --- over all images ----------------------------------------------------------------

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        categories = params["categories"]
        k = len(categories)
        results = stats["classes"]
        totals = {}
        category = np.concatenate([r.category for r in results]) if results else np.zeros(0, np.int64)
        for key in ("tp", "fp", "fn", "iou"):
            values = np.concatenate([getattr(r, key) for r in results]) if results else np.zeros(0)
            totals[key] = np.bincount(category, weights=values.astype(np.float64), minlength=k)
        tp, fp, fn = (np.rint(totals[key]).astype(np.int64) for key in ("tp", "fp", "fn"))
        quality = Quality.of(tp, fp, fn, totals["iou"])
        isthing = np.array([bool(c["isthing"]) for c in categories], bool)
        dataset: dict[str, Any] = {}
        for split, among in zip(SPLITS, (None, isthing, ~isthing), strict=True):
            pq, sq, rq, n = quality.means(among)
            dataset.update({f"pq{split}": pq, f"sq{split}": sq, f"rq{split}": rq,
                            f"n_classes{split}": n})
        dataset.update({"n_images": len(stats), "tp": int(tp.sum()), "fp": int(fp.sum()),
                        "fn": int(fn.sum())})
        dataset["per_class"] = {
            c["name"]: {"pq": _number(quality.pq[i]), "sq": _number(quality.sq[i]),
                        "rq": _number(quality.rq[i]), "tp": int(tp[i]), "fp": int(fp[i]),
                        "fn": int(fn[i]), "isthing": bool(c["isthing"])}
            for i, c in enumerate(categories)}
        aggregate = {key: mean_present(stats[key]) for key in ("pq", "sq", "rq")}
        aggregate["n_images"] = len(stats)
        aggregate["n_empty"] = int(np.count_nonzero(np.isnan(stats["pq"])))
        return {"aggregate": aggregate, "dataset": dataset}

    def warning_text(self, kind: str, paths: list[str]) -> str:
        return f"{kind}: {len(paths)} image(s), e.g. {paths[0]}"


def _number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def _check_ids(counts: np.ndarray, pred: PanopticImage, segments: Segments, image: str,
               path: str) -> None:
    """panopticapi's checks of a prediction: every PNG id listed, every listed id in the PNG."""
    if counts[:, 0].any():
        _unlisted(pred, segments, image, path)
    absent = segments.ids[counts[:, 2:].sum(axis=0) == 0]
    if absent.size:
        shown = ", ".join(str(i) for i in absent[:5].tolist())
        raise InputError(f"{image}: segment id(s) {shown}{' ...' if absent.size > 5 else ''} "
                         "listed in segments_info are not in the PNG", path=path)


def _unlisted(side: PanopticImage, segments: Segments, image: str, path: str) -> None:
    ids = np.unique(side.ids)
    extra = ids[(ids != 0) & ~np.isin(ids, segments.ids)]
    shown = ", ".join(str(i) for i in extra[:5].tolist())
    raise InputError(f"{image}: segment id(s) {shown}{' ...' if extra.size > 5 else ''} in the "
                     "PNG are not listed in segments_info", path=path)
