"""tracking3d's report sections from every scene's prepared frames.

``dataset``: the devkit's figures over classes (``amota``, ``amotp``, ``motar``, ``mota``,
``motp``, ``recall``, ``mt``, ``ml``, ``faf``, ``gt``, ``tp``, ``fp``, ``fn``, ``ids``,
``frag``, ``tid``, ``lgd``: counts summed over classes, the rest averaged over the classes
where they are defined), ``per_class.<class>`` with the same keys, ``curves.<class>`` (the
devkit's ``metrics_details``: each figure at each of the recall targets, null where not
reached; null for a class without GT) and ``classes``. Rows, one per scene: its share of
the dataset's figures, each class at its best threshold (:mod:`rpx_cli.ops.track_eval`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.ops.amota import CLASS_KEYS, LANE_KEYS, ClassCurves
from rpx_cli.ops.reduce import mean_present
from rpx_cli.ops.track_eval import evaluate_scenes
from rpx_cli.ops.track_scenes import SceneFrames

ROW_KEYS = ("n_gt", "n_pred", "tp", "fp", "fn", "ids", "frag", "mota", "motp", "recall")
COUNTS = ("n_gt", "n_pred", "tp", "fp", "fn", "ids", "frag")


def summarize_scenes(scenes: list[SceneFrames], params: Mapping[str, Any],
                     wanted: set[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(sections, per-scene row values)`` of every scene (stem order)."""
    classes = list(params["class_names"])
    result = evaluate_scenes(scenes, classes, dist_th=params["dist_th"],
                             num_thresholds=params["num_thresholds"],
                             min_recall=params["min_recall"])
    rows = scene_rows(result.scenes, len(scenes))
    dataset: dict[str, Any] = {**result.overall, "per_class": result.per_class,
                               "classes": classes}
    if "curves" in wanted:
        dataset["curves"] = {name: curve_json(curve) for name, curve in result.curves.items()}
    aggregate = {key: mean_present([row[key] for row in rows]) for key in ROW_KEYS}
    return {"aggregate": aggregate, "dataset": dataset}, rows


def scene_rows(counts: Mapping[str, np.ndarray], n: int) -> list[dict[str, Any]]:
    """Each scene's counts with ``mota`` (not clipped), ``motp`` and ``recall``."""
    rows = []
    for s in range(n):
        row: dict[str, Any] = {key: int(counts[key][s]) for key in COUNTS}
        gt, found = row["n_gt"], row["tp"] + row["ids"]
        row["mota"] = 1.0 - (row["fn"] + row["ids"] + row["fp"]) / gt if gt else None
        row["motp"] = float(counts["distance"][s]) / found if found else None
        row["recall"] = found / gt if gt else None
        rows.append(row)
    return rows


def curve_json(curve: ClassCurves | None) -> dict[str, Any] | None:
    """A class's curves as JSON: null for NaN, ``lane`` left out."""
    if curve is None:
        return None

    def plain(values: np.ndarray) -> list[float | None]:
        return [None if v != v else float(v) for v in values.tolist()]

    return {"confidence": plain(curve.confidence), "recall_hypo": plain(curve.recall_hypo),
            **{key: plain(curve.values[key]) for key in LANE_KEYS}}


DATASET_KEYS = CLASS_KEYS
