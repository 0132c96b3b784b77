"""``rpx eval tracking3d`` equals nuscenes-devkit 1.1.9's tracking evaluation to 1e-9.

The devkit (with py-motmetrics 1.1.3, both test-only; shimmed for Python 3.11, pandas 3 and
numpy 2 in ``tests/tracking3d_reference.py``, never edited) runs its own ``filter_eval_boxes``,
``create_tracks`` and ``TrackingEval.evaluate`` on the same boxes. Compared: every figure of
every class (``label_metrics``), the means, and the per-class curves of
``metrics_details``. Its own tests (``nuscenes/eval/tracking/tests/test_algo.py``) are run
too: shimmed as they are, and their scenes through rpx's matching.
"""

from __future__ import annotations

import copy
import io
import json
import math
import unittest
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.tracking3d_data import CLASSES, generate, write_files, write_folders
from tests.tracking3d_reference import devkit_tracking, shimmed

TOLERANCE = 1e-9
KEYS = ("amota", "amotp", "recall", "motar", "gt", "mota", "motp", "mt", "ml", "faf", "tp", "fp",
        "fn", "ids", "frag", "tid", "lgd")


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None or (isinstance(b, float) and math.isnan(b)):
        return (a is None or (isinstance(a, float) and math.isnan(a))) and \
               (b is None or (isinstance(b, float) and math.isnan(b)))
    return abs(a - b) <= TOLERANCE * max(1.0, abs(b))


def assert_equal_to_devkit(report: dict[str, Any], reference: dict[str, Any]) -> None:
    summary, details = reference["summary"], reference["details"]
    dataset = report["dataset"]
    wrong = []
    for name in CLASSES:
        for key in KEYS:
            ours, theirs = dataset["per_class"][name][key], summary["label_metrics"][key][name]
            if not _close(ours, theirs):
                wrong.append(f"{name}.{key}: rpx {ours}, devkit {theirs}")
        curve = dataset["curves"][name]
        md = details[name]
        if curve is None:
            assert all(np.isnan(md["mota"])), name
            continue
        for key in ("confidence", "recall_hypo", "mota", "motar", "motp", "recall", "ids", "frag",
                    "tid", "lgd", "fp", "fn", "tp", "mt", "ml", "faf"):
            if not all(_close(a, b) for a, b in zip(curve[key], md[key], strict=True)):
                wrong.append(f"curves.{name}.{key}: rpx {curve[key]}, devkit {md[key]}")
    for key in KEYS:
        if not _close(dataset[key], summary[key]):
            wrong.append(f"{key}: rpx {dataset[key]}, devkit {summary[key]}")
    assert not wrong, "\n".join(wrong[:20])


def _run_both(rpx, tmp_path: Path, data: dict[str, Any], *args: str) -> None:
    pred, gt = write_folders(data, tmp_path / "dirs")
    run = rpx(["eval", "tracking3d", "--pred-dir", pred, "--gt-dir", gt, *args])
    assert run.exit_code == 0, run.stderr
    reference = devkit_tracking(data["gt"], data["pred"], data["scenes"], data["timestamps"])
    assert_equal_to_devkit(json.loads(run.stdout), reference)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_equals_the_devkit_on_generated_scenes(rpx, tmp_path: Path, seed: int) -> None:
    _run_both(rpx, tmp_path, generate(seed))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2))
def test_equals_the_devkit_with_ties_on_a_grid(rpx, tmp_path: Path, seed: int) -> None:
    """Centres on a 1 m grid: equal distances everywhere, the solver's ties decide."""
    _run_both(rpx, tmp_path, generate(100 + seed, integer=True, crowd=0.15, n_objects=8))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2))
def test_equals_the_devkit_in_crowds_and_on_the_threshold(rpx, tmp_path: Path, seed: int) -> None:
    """Predictions exactly 2 m from their GT (as far as float64 and the devkit's
    expanded-square distances decide) and crowded scenes (competing pairs)."""
    _run_both(rpx, tmp_path, generate(200 + seed, edge=2.0, crowd=0.1, n_objects=10))


@pytest.mark.slow
def test_equals_the_devkit_from_submission_files(rpx, tmp_path: Path) -> None:
    data = generate(7, n_scenes=3)
    pred, gt = write_files(data, tmp_path)
    run = rpx(["eval", "tracking3d", "--pred-file", pred, "--gt-file", gt])
    assert run.exit_code == 0, run.stderr
    reference = devkit_tracking(data["gt"], data["pred"], data["scenes"], data["timestamps"])
    assert_equal_to_devkit(json.loads(run.stdout), reference)


@pytest.mark.slow
def test_equals_the_devkit_on_the_fixture(rpx) -> None:
    """The committed fixture (crossings, switches, fragments, an interpolated GT box)."""
    root = Path(__file__).resolve().parent.parent / "fixtures" / "tracking3d" / "submission"
    gt_doc = json.loads((root / "gt.json").read_text())
    pred_doc = json.loads((root / "pred.json").read_text())
    stamps = {token: boxes[0]["timestamp"] for token, boxes in gt_doc["results"].items() if boxes}
    run = rpx(["eval", "tracking3d", "--pred-file", root / "pred.json", "--gt-file", root / "gt.json"])
    reference = devkit_tracking(gt_doc["results"], pred_doc["results"], gt_doc["scenes"], stamps)
    assert_equal_to_devkit(json.loads(run.stdout), reference)


def test_the_devkits_own_tests_pass_under_the_shims() -> None:
    """``nuscenes/eval/tracking/tests/test_algo.py`` as released, with the shims."""
    with shimmed():
        from nuscenes.eval.tracking.tests import test_algo

        suite = unittest.defaultTestLoader.loadTestsFromModule(test_algo)
        np.random.seed(0)
        result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
    assert result.wasSuccessful(), result.failures + result.errors


def _algo_scenes() -> list[tuple[str, dict, dict]]:
    """The scenes of the devkit's test_algo: (name, GT, prediction) as timestamp -> boxes."""
    base = {t: [{"translation": [0.0, 0.0, 0.0], "tracking_id": "ta", "tracking_name": "car",
                 "tracking_score": 0.5}] for t in range(4)}
    cases = [("gt_submission", base, copy.deepcopy(base))]
    empty = {t: [] for t in range(4)}
    cases.append(("empty_submission", base, empty))
    drop = copy.deepcopy(base)
    drop[1] = []
    cases.append(("drop_prediction", base, drop))
    drop3 = copy.deepcopy(base)
    drop3[0] = drop3[1] = drop3[2] = []
    cases.append(("drop_prediction_multiple", base, drop3))
    switch = copy.deepcopy(base)
    switch[2][0]["tracking_id"] = "tb"
    cases.append(("identity_switch", base, switch))
    gt_drop = copy.deepcopy(base)
    gt_drop[1] = []
    cases.append(("drop_gt", gt_drop, copy.deepcopy(base)))
    return cases


def _algo_md(gt: dict, pred: dict) -> Any:
    """The devkit's TrackingEvaluation.accumulate on these tracks, as test_algo runs it."""
    with shimmed():
        from nuscenes.eval.common.config import config_factory
        from nuscenes.eval.tracking.algo import TrackingEvaluation
        from nuscenes.eval.tracking.data_classes import TrackingBox, TrackingMetricData

        cfg = config_factory("tracking_nips_2019")

        def tracks(side: dict) -> dict:
            return {"scene-1": {t: [TrackingBox(translation=tuple(b["translation"]),
                                                tracking_id=b["tracking_id"], tracking_name="car",
                                                tracking_score=b["tracking_score"]) for b in boxes]
                                for t, boxes in side.items()}}

        return TrackingEvaluation(tracks(gt), tracks(pred), "car", cfg.dist_fcn_callable,
                                  cfg.dist_th_tp, cfg.min_recall,
                                  num_thresholds=TrackingMetricData.nelem,
                                  metric_worst=cfg.metric_worst, verbose=False).accumulate()


@pytest.mark.parametrize("case", _algo_scenes(), ids=lambda case: case[0])
def test_the_devkits_own_scenes_through_rpx_matching(case) -> None:
    """test_algo's scenes (no interpolation: the devkit's TrackingEvaluation alone) through
    rpx's matching and per-threshold figures: every curve point equal."""
    from rpx_cli.ops.amota import class_curves, distinct_thresholds, lane_figures, score_thresholds
    from rpx_cli.ops.track_matching import ClassFrames, match_lanes
    from rpx_cli.ops.track_scenes import TrackSide, candidate_pairs

    _, gt, pred = case

    def side(boxes: dict, scores: bool) -> TrackSide:
        rows = [(t, b) for t, items in boxes.items() for b in items]
        ids = {b["tracking_id"]: 0 for _, b in rows}
        codes = {i: k for k, i in enumerate(ids)}
        return TrackSide(np.array([t for t, _ in rows], np.int64),
                         np.array([b["translation"][:2] for _, b in rows], np.float64).reshape(-1, 2),
                         np.zeros(len(rows)), np.zeros(len(rows), np.int64),
                         np.array([codes[b["tracking_id"]] for _, b in rows], np.int64),
                         np.array([b["tracking_score"] for _, b in rows]) if scores else None,
                         np.full(len(rows), -1, np.int64))

    g, p = side(gt, False), side(pred, True)
    pg, pp, distance = candidate_pairs(g, p, 1, 2.0)
    frames = ClassFrames(g.sample, np.zeros(len(g), np.int64), g.track, p.sample,
                         np.zeros(len(p), np.int64), p.track, p.score, pg, pp, distance, 1,
                         int(g.track.max(initial=-1)) + 1)
    free = match_lanes(frames, np.array([-np.inf]), 2.0)
    thresholds, targets = score_thresholds(free.match_scores, len(g), 40, 0.1)
    distinct = distinct_thresholds(thresholds)
    figures = lane_figures(frames, match_lanes(frames, distinct, 2.0)) if distinct.size else None
    ours = class_curves(thresholds, targets, figures, len(g), frames.n_objects)
    md = _algo_md(gt, pred)
    np.testing.assert_array_equal(ours.confidence, md.confidence)
    for key, values in ours.values.items():
        np.testing.assert_allclose(values, getattr(md, key), rtol=1e-12, atol=0, err_msg=key)
