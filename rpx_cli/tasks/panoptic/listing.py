"""The images of a panoptic evaluation, from its two JSON files.

Each GT annotation is paired with the prediction annotation of the same ``image_id``, as
panopticapi pairs them; a GT image that no prediction of its id names is then paired with a
prediction whose ``file_name`` stem is the GT's and whose id no GT image has (pairing by
``file_name``: detectron2 names Cityscapes prediction PNGs after the input image,
so ids are the key that always agrees, and file names rescue predictions written with other
ids). The stem of a pair is the GT ``file_name`` without its suffix; each side's PNG is its
own ``file_name`` in its folder. Unpaired images follow ``--missing``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rpx_cli.errors import EvaluationFailed, InputError, PairError
from rpx_cli.io.discover import Pair, Pairing
from rpx_cli.io.panoptic import Annotation, read_panoptic_json


@dataclass(frozen=True)
class Entry:
    """What the JSON files say about one image (a :class:`Pair`'s ``entry``)."""

    image_id: Any
    gt_segments: list[Any]
    pred_segments: list[Any] | None  # None: no prediction (--missing empty)


def list_images(gt_json: str, pred_json: str, pred_dir: str, gt_dir: str, *, missing: str,
                categories: list[dict[str, Any]] | None = None
                ) -> tuple[Pairing, list[dict[str, Any]]]:
    """The pairs (stem order) and the categories as params (``[{id, name, isthing}]``):
    ``categories`` when given (``--categories``), else the GT file's."""
    gt = read_panoptic_json(gt_json, gt=categories is None)
    pred = read_panoptic_json(pred_json, gt=False)
    gt_by_id = _unique(gt.annotations, gt_json, stems=True)
    pred_by_id = _unique(pred.annotations, pred_json, stems=False)
    loose = {a.stem: a for a in pred.annotations if a.image_id not in gt_by_id}
    claimed: set[Any] = set()
    pairs: list[Pair] = []
    gt_only: list[str] = []
    gt_only_files: dict[str, str] = {}
    for ann in sorted(gt.annotations, key=lambda a: a.stem):
        match = pred_by_id.get(ann.image_id)
        if match is None:
            match = loose.get(ann.stem)
            if match is not None and match.image_id in claimed:
                match = None
        if match is None:
            gt_only.append(ann.stem)
            gt_only_files[ann.stem] = ann.file_name
            if missing == "empty":
                pairs.append(Pair(ann.stem, pred_dir, None, gt_dir, ann.file_name,
                                  entry=Entry(ann.image_id, ann.segments, None)))
            continue
        claimed.add(match.image_id)
        pairs.append(Pair(ann.stem, pred_dir, match.file_name, gt_dir, ann.file_name,
                          entry=Entry(ann.image_id, ann.segments, match.segments)))
    extra = sorted((a for a in pred.annotations if a.image_id not in claimed),
                   key=lambda a: a.stem)
    if missing == "error" and (gt_only or extra):
        ids = {a.stem: a.image_id for a in gt.annotations}
        problems = [PairError(stem, gt_json, f"image {ids[stem]!r}: no prediction in "
                              f"{pred_json} (by image_id or file_name)") for stem in gt_only]
        problems += [PairError(a.stem, pred_json, f"image {a.image_id!r}: not in {gt_json}")
                     for a in extra]
        raise EvaluationFailed(problems, len(problems),
                               f"{len(problems)} image(s) are not in both JSON files; no report "
                               "written (--missing skip evaluates the images in both and lists "
                               "the rest under 'unpaired')")
    if not pairs:
        raise InputError(f"no pairs to evaluate: {gt_json} lists {len(gt.annotations)} "
                         f"image(s) and {pred_json} {len(pred.annotations)}, and none is in both",
                         path=gt_json)
    pairing = Pairing(pairs, pred_only=sorted({a.stem for a in extra}), gt_only=gt_only,
                      pred_only_files={a.stem: a.file_name for a in extra},
                      gt_only_files=gt_only_files, n_pred_files=len(pred.annotations),
                      n_gt_files=len(gt.annotations))
    if categories is None:
        assert gt.categories is not None
        categories = [{"id": c.id, "name": c.name, "isthing": c.isthing} for c in gt.categories]
    return pairing, categories


def _unique(annotations: list[Annotation], path: str, *, stems: bool) -> dict[Any, Annotation]:
    by_id: dict[Any, Annotation] = {}
    by_stem: dict[str, Annotation] = {}
    for ann in annotations:
        if ann.image_id in by_id:
            raise InputError(f"image_id {ann.image_id!r} has two annotations", path=path)
        by_id[ann.image_id] = ann
        if stems:
            other = by_stem.get(ann.stem)
            if other is not None:
                raise InputError(f"images {other.image_id!r} and {ann.image_id!r} have the "
                                 f"stem '{ann.stem}' ({other.file_name}, {ann.file_name})",
                                 path=path)
            by_stem[ann.stem] = ann
    return by_id
