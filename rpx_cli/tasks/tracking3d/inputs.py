"""``--gt-file``/``--pred-file``: nuScenes tracking submissions, one pair per scene.

The GT file's ``scenes`` name each scene's samples in time order; its ``results`` hold the
GT boxes of each sample (a listed sample absent from them has none). The prediction file's
``results`` must hold the same samples as the GT's (the devkit asserts it). Each sample's
timestamp is its GT boxes' ``timestamp``, else the GT file's ``timestamps`` entry, else
filled in (:mod:`rpx_cli.tasks.tracking3d.scenes`). A bad GT sample drops its scene, a bad
predicted sample scores its scene's prediction as empty (``--on-error``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rpx_cli.errors import InputError, PairError
from rpx_cli.io.regular import read_bytes
from rpx_cli.io.tracks3d import read_submission
from rpx_cli.tasks.base import FileInput, Params
from rpx_cli.tasks.tracking3d.scenes import Scene, gt_scene


def read_submissions(task: Any, files: Mapping[str, str], params: Params) -> FileInput:
    gt_path, pred_path = files["gt_file"], files["pred_file"]
    gt_doc = read_submission(read_bytes(gt_path), gt_path, gt=True)
    pred_doc = read_submission(read_bytes(pred_path), pred_path, gt=False)
    gt_results, pred_results = gt_doc["results"], pred_doc["results"]
    scenes: dict[str, list[str]] = gt_doc["scenes"]
    stamps: dict[str, int] = gt_doc.get("timestamps", {})
    owner: dict[str, str] = {}
    for scene, samples in scenes.items():
        for sample in samples:
            if sample in owner:
                raise InputError(f"sample {sample!r} is listed in scenes {owner[sample]!r} and "
                                 f"{scene!r}", path=gt_path)
            owner[sample] = scene
    loose = [sample for sample in gt_results if sample not in owner]
    if loose:
        raise InputError(f"{len(loose)} sample(s) of 'results' are in no scene of 'scenes' "
                         f"(e.g. {loose[0]!r})", path=gt_path)
    only_gt = [s for s in gt_results if s not in pred_results]
    only_pred = [s for s in pred_results if s not in gt_results]
    if only_gt or only_pred:
        parts = []
        if only_gt:
            parts.append(f"{len(only_gt)} GT sample(s) missing from {pred_path} (e.g. {only_gt[0]!r})")
        if only_pred:
            parts.append(f"{len(only_pred)} predicted sample(s) not in {gt_path} "
                         f"(e.g. {only_pred[0]!r})")
        raise InputError("the two files must hold the same samples: " + "; ".join(parts),
                         path=pred_path)
    if not scenes:
        raise InputError("the GT file has no scene", path=gt_path)
    # every sample of a file read in one pass when all are well formed (else scene by scene,
    # so that a bad sample drops or empties its scene only)
    try:
        gt_all = task.samples(gt_results, gt_path, params, "gt")
    except InputError:
        gt_all = None
    try:
        pred_all = task.samples(pred_results, pred_path, params, "pred")
    except InputError:
        pred_all = None
    stems, samples, errors = [], [], []
    for scene, names in scenes.items():
        try:
            parsed = {name: gt_all[name] for name in names if name in gt_all} \
                if gt_all is not None else \
                task.samples({name: gt_results[name] for name in names if name in gt_results},
                             gt_path, params, "gt")
            gt = gt_scene(parsed, names, gt_path, sort_by_time=False, stamps=stamps)
        except InputError as exc:  # the scene is dropped
            errors.append(PairError.of(exc, scene, side="gt", path=gt_path))
            continue
        try:
            pred = Scene({name: pred_all[name] for name in names if name in pred_all}
                         if pred_all is not None else
                         task.samples({name: pred_results[name] for name in names
                                       if name in pred_results}, pred_path, params, "pred"))
        except InputError as exc:  # scored as the empty prediction
            errors.append(PairError.of(exc, scene, side="pred", path=pred_path))
            pred = Scene({})
        stems.append(scene)
        samples.append((pred, gt))
    return FileInput(stems, samples=samples, pred_path=pred_path, gt_path=gt_path, errors=errors)
