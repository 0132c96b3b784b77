"""nuscenes-devkit 1.1.9's tracking evaluation, run on scenes given as plain data (tests only).

The devkit reads its GT from the nuScenes database; here a stand-in ``nusc`` answers the few
look-ups its loaders make (a sample's scene, timestamp and successor; a scene's first and
last sample; no annotations, so no bike racks), and the split is the scenes given. The boxes
go through the devkit's own ``filter_eval_boxes``, ``create_tracks`` (score averaging,
interpolation) and ``TrackingEval.evaluate`` (``TrackingEvaluation``, py-motmetrics 1.1.3).

Under Python 3.11, pandas >= 2 and numpy 2 the devkit's tracking code and motmetrics 1.1.3
break in four places; :func:`shimmed` patches them for the duration of a call, never the
installed files:

- ``collections.Iterable`` (gone in 3.10; motmetrics.metrics imports it),
- ``inspect.getargspec`` (gone in 3.11; motmetrics' MetricsHost uses it),
- ``DataFrame.append`` (gone in pandas 2; the devkit's ``merge_event_dataframes``; under
  pandas 3 appending to its empty MultiIndex frame must keep the MultiIndex),
- ``numpy.unique`` of NaNs: numpy >= 1.21 keeps one NaN (``equal_nan=True``), so the
  devkit's sanity check ``unachieved + duplicate + computed == num_thresholds`` counts the
  unreached thresholds twice; the devkit's module sees ``equal_nan=False``.
"""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import copy
import inspect
import types
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np


class _NumpyOldUnique(types.ModuleType):
    def __init__(self) -> None:
        super().__init__("numpy")

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    @staticmethod
    def unique(values: Any, *args: Any, **kwargs: Any) -> Any:
        return np.unique(values, *args, equal_nan=False, **kwargs)


@contextlib.contextmanager
def shimmed() -> Iterator[None]:
    """The devkit's tracking modules importable and runnable here (see the module doc)."""
    import pandas as pd

    patches: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        patches.append((owner, name, getattr(owner, name, _ABSENT)))
        setattr(owner, name, value)

    if not hasattr(collections, "Iterable"):
        patch(collections, "Iterable", collections.abc.Iterable)
    if not hasattr(inspect, "getargspec"):
        patch(inspect, "getargspec", inspect.getfullargspec)
    if not hasattr(pd.DataFrame, "append"):
        patch(pd.DataFrame, "append", _append)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import nuscenes.eval.tracking.algo as algo

            patch(algo, "np", _NumpyOldUnique())
            yield
    finally:
        for owner, name, old in reversed(patches):
            if old is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, old)


_ABSENT = object()


def _append(self: Any, other: Any) -> Any:
    """pandas 1's ``DataFrame.append`` as the devkit uses it. pandas 3's ``concat`` of the
    devkit's empty MultiIndex frame with a filled one flattens the index into tuples (the
    next ``index.get_level_values(0).max() + 1`` fails), so the empty start is skipped."""
    import pandas as pd

    return other.copy() if len(self) == 0 else pd.concat([self, other])


class _Nusc:
    """What the devkit's tracking loaders ask the database."""

    def __init__(self, scenes: Mapping[str, Sequence[str]], timestamps: Mapping[str, int]) -> None:
        self.records: dict[tuple[str, str], dict[str, Any]] = {}
        for scene, samples in scenes.items():
            self.records[("scene", scene)] = {"name": scene, "first_sample_token": samples[0],
                                              "last_sample_token": samples[-1]}
            for i, sample in enumerate(samples):
                self.records[("sample", sample)] = {
                    "scene_token": scene, "timestamp": timestamps[sample], "anns": [],
                    "next": samples[i + 1] if i + 1 < len(samples) else ""}

    def get(self, table: str, token: str) -> dict[str, Any]:
        return self.records[(table, token)]


def config(class_range: Mapping[str, float] | None = None, dist_th: float = 2.0,
           num_thresholds: int = 40, min_recall: float = 0.1) -> Any:
    from nuscenes.eval.common.config import config_factory
    from nuscenes.eval.tracking.data_classes import TrackingConfig

    cfg = config_factory("tracking_nips_2019")
    content = cfg.serialize()
    if class_range is not None:
        content["class_range"] = dict(class_range)
    content.update(dist_th_tp=dist_th, num_thresholds=num_thresholds, min_recall=min_recall)
    return TrackingConfig.deserialize(content)


def devkit_tracking(gt: Mapping[str, list[dict[str, Any]]], pred: Mapping[str, list[dict[str, Any]]],
                    scenes: Mapping[str, Sequence[str]], timestamps: Mapping[str, int], *,
                    class_range: Mapping[str, float] | None = None, dist_th: float = 2.0,
                    num_thresholds: int = 40, min_recall: float = 0.1) -> dict[str, Any]:
    """The devkit's ``metrics_summary`` (label_metrics and the means) and per-class
    ``metrics_details`` for boxes in the submission layout (sample -> list of box dicts;
    a box's ``ego_translation`` defaults to its translation)."""
    with shimmed(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import nuscenes.eval.tracking.loaders as loaders
        from nuscenes.eval.common.data_classes import EvalBoxes
        from nuscenes.eval.common.loaders import filter_eval_boxes
        from nuscenes.eval.tracking.data_classes import TrackingBox
        from nuscenes.eval.tracking.evaluate import TrackingEval

        cfg = config(class_range, dist_th, num_thresholds, min_recall)
        nusc = _Nusc(scenes, timestamps)

        def boxes(side: Mapping[str, list[dict[str, Any]]]) -> Any:
            out = EvalBoxes()
            for sample, items in side.items():
                made = []
                for item in items:
                    item = dict(copy.deepcopy(item), sample_token=sample)
                    item.setdefault("size", [1.0, 1.0, 1.0])
                    item.setdefault("rotation", [1.0, 0.0, 0.0, 0.0])
                    item.setdefault("velocity", [0.0, 0.0])
                    item.setdefault("ego_translation", item["translation"])
                    made.append(TrackingBox.deserialize(item))
                out.add_boxes(sample, made)
            return out

        old_splits = loaders.create_splits_scenes
        loaders.create_splits_scenes = lambda: {"rpx": list(scenes)}
        try:
            gt_boxes = filter_eval_boxes(nusc, boxes(gt), cfg.class_range)
            pred_boxes = filter_eval_boxes(nusc, boxes(pred), cfg.class_range)
            evaluation = TrackingEval.__new__(TrackingEval)
            evaluation.cfg, evaluation.verbose = cfg, False
            evaluation.output_dir, evaluation.render_classes = None, None
            evaluation.tracks_gt = loaders.create_tracks(gt_boxes, nusc, "rpx", gt=True)
            evaluation.tracks_pred = loaders.create_tracks(pred_boxes, nusc, "rpx", gt=False)
            metrics, details = evaluation.evaluate()
        finally:
            loaders.create_splits_scenes = old_splits
        summary = metrics.serialize()
        return {"summary": summary, "details": details.serialize()}
