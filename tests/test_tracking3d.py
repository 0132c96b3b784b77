"""``rpx eval tracking3d``: hand-computed figures, the kernels against their references,
invariants and bad input. (Equality with the devkit: ``test_tracking3d_devkit.py``.)"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rpx_cli import Evaluator
from rpx_cli.errors import InputError
from rpx_cli.ops.center_distances import devkit_distances, fma, kernel_index, reference_distances
from rpx_cli.ops.track_scenes import TrackSide, interpolate, numpy_mean

LINSPACE = np.linspace(0.1, 1, 40).round(12)


def car(x: float, y: float, track: str, score: float | None = None, name: str = "car",
        **extra: Any) -> dict[str, Any]:
    box = {"translation": [x, y, 0.0], "tracking_id": track, "tracking_name": name, **extra}
    if score is not None:
        box["tracking_score"] = score
    return box


def write_scene(root: Path, gt: list[list[dict]], pred: list[list[dict]], *,
                stamps: list[int] | None = None, scene: str = "scene-a") -> tuple[Path, Path]:
    for side, samples in (("gt", gt), ("pred", pred)):
        folder = root / side / scene
        folder.mkdir(parents=True, exist_ok=True)
        for t, boxes in enumerate(samples):
            document: Any = boxes
            if side == "gt" and stamps is not None:
                document = {"timestamp": stamps[t], "boxes": boxes}
            (folder / f"s{t}.json").write_text(json.dumps(document))
    return root / "pred", root / "gt"


def evaluate(rpx, root: Path, *args: Any) -> dict[str, Any]:
    run = rpx(["eval", "tracking3d", "--pred-dir", root / "pred", "--gt-dir", root / "gt", *args])
    assert run.exit_code == 0, run.stderr
    return run.json


# --- hand-computed -----------------------------------------------------------------------


def test_a_perfect_prediction_scores_ideal_and_absent_classes_are_null(rpx, tmp_path: Path) -> None:
    gt = [[car(t, 0, "A"), car(5 - t, 3, "B"), car(9, t, "P", name="pedestrian")] for t in range(4)]
    pred = [[dict(b, tracking_id=b["tracking_id"].lower(), tracking_score=0.9) for b in boxes]
            for boxes in gt]
    write_scene(tmp_path, gt, pred)
    report = evaluate(rpx, tmp_path)
    dataset = report["dataset"]
    for name, n in (("car", 8), ("pedestrian", 4)):
        got = dataset["per_class"][name]
        assert (got["amota"], got["amotp"], got["mota"], got["motp"], got["recall"]) == (1, 0, 1, 0, 1)
        assert (got["tp"], got["fp"], got["fn"], got["ids"], got["frag"], got["gt"]) == (n, 0, 0, 0, 0, n)
        assert (got["tid"], got["lgd"], got["faf"], got["ml"]) == (0, 0, 0, 0)
    assert dataset["per_class"]["bus"] == dict.fromkeys(dataset["per_class"]["bus"])  # all null
    assert dataset["curves"]["bus"] is None
    assert dataset["amota"] == 1 and dataset["ids"] == 0 and dataset["tp"] == 12
    assert report["rows"][0]["mota"] == 1 and report["rows"][0]["n_gt"] == 12


def test_an_identity_switch(rpx, tmp_path: Path) -> None:
    """Track a for samples 0-1, b for 2-3, all at the GT: the b box of sample 2 is a
    SWITCH. MATCHed scores 0.5, 0.5, 0.5 of 4 GT: recall reaches 3/4; every target up to
    3/4 runs at threshold 0.5 (tp 3, ids 1): MOTA 1 - 1/4, MOTAR 1 - (1 - (1 - 3/4) 4)/3."""
    gt = [[car(t, 0, "A")] for t in range(4)]
    pred = [[car(t, 0, "a" if t < 2 else "b", 0.5)] for t in range(4)]
    write_scene(tmp_path, gt, pred)
    got = evaluate(rpx, tmp_path)["dataset"]["per_class"]["car"]
    reached = int((LINSPACE <= 0.75).sum())  # 29 of 40
    assert (got["tp"], got["ids"], got["fn"], got["fp"]) == (3, 1, 0, 0)
    assert got["mota"] == 1 - 1 / 4 and got["motar"] == 1 - (1 - (1 - 3 / 4) * 4) / 3
    assert got["recall"] == 1 and got["motp"] == 0
    assert got["amota"] == pytest.approx(reached * 1.0 / 40, abs=1e-15)
    assert got["amotp"] == pytest.approx((40 - reached) * 2.0 / 40, abs=1e-15)


def test_interpolation_weighs_as_the_devkit_does(rpx, tmp_path: Path) -> None:
    """Track a misses sample 2 of timestamps 0, 1, 2, 5 (x 1e5 us): its box there is
    (1 - r) L + r R with r = (t3 - t2) / (t3 - t1) = 3/4 — the devkit's weights (R's weight
    grows towards L's time) — so x = 1/4 + 3/4 * 3 = 2.5, 0.5 m from the GT at x = 2."""
    gt = [[car(t, 0, "A")] for t in range(4)]
    pred = [[car(t, 0, "a", 0.7)] if t != 2 else [] for t in range(4)]
    write_scene(tmp_path, gt, pred, stamps=[0, 100000, 200000, 500000])
    got = evaluate(rpx, tmp_path)["dataset"]["per_class"]["car"]
    assert (got["tp"], got["fn"], got["ids"]) == (4, 0, 0)
    assert got["motp"] == pytest.approx(0.5 / 4, abs=1e-15)
    assert got["amotp"] == pytest.approx(0.5 / 4, abs=1e-15) and got["amota"] == 1


def test_zero_point_gt_is_dropped_then_interpolated_and_ranges_are_strict(rpx, tmp_path: Path) -> None:
    gt = [[car(t, 0, "A", num_pts=0 if t == 1 else 5), car(50.0, t, "F"), car(49.5, t * 0.1, "N")]
          for t in range(4)]
    pred = [[car(t, 0, "a", 0.9), car(49.5, t * 0.1, "n", 0.9)] for t in range(4)]
    write_scene(tmp_path, gt, pred)
    got = evaluate(rpx, tmp_path)["dataset"]["per_class"]["car"]
    # A (its point-less box put back) and N count; F at 50 m is out (distance < 50 kept)
    assert (got["gt"], got["tp"], got["fn"], got["mota"]) == (8, 8, 0, 1)
    wide = evaluate(rpx, tmp_path, "--class-range", "car=inf")["dataset"]["per_class"]["car"]
    assert (wide["gt"], wide["fn"]) == (12, 4)


@pytest.mark.parametrize(("ghost", "fp", "mota"), [(0.3, 0, 1.0), (0.95, 4, 0.0)])
def test_a_false_track_counts_only_above_the_threshold(rpx, tmp_path: Path, ghost: float, fp: int,
                                                       mota: float) -> None:
    """Every target runs at the MATCHed score 0.9: a false track of score 0.3 is not there;
    one of 0.95 is (fp 4: MOTA max(0, 1 - 4/4), FAF 4 / 4 frames x 100)."""
    gt = [[car(0, t, "P", name="pedestrian")] for t in range(4)]
    pred = [[car(0, t, "p", 0.9, name="pedestrian"), car(10, 10, "f", ghost, name="pedestrian")]
            for t in range(4)]
    write_scene(tmp_path, gt, pred)
    got = evaluate(rpx, tmp_path)["dataset"]["per_class"]["pedestrian"]
    assert (got["fp"], got["mota"], got["faf"]) == (fp, mota, fp / 4 * 100)


def test_a_class_without_any_match_takes_the_worst_values(rpx, tmp_path: Path) -> None:
    gt = [[car(0, t, "A")] for t in range(3)]
    pred = [[car(20, t, "a", 0.8)] for t in range(3)]
    write_scene(tmp_path, gt, pred)
    got = evaluate(rpx, tmp_path)["dataset"]["per_class"]["car"]
    assert (got["amota"], got["amotp"], got["mota"], got["motp"], got["recall"]) == (0, 2, 0, 2, 0)
    assert (got["tid"], got["lgd"], got["faf"], got["fn"], got["ml"]) == (20, 20, 500, 3, 1)
    assert got["fp"] is None and got["ids"] is None and got["frag"] is None  # unknowable


# --- kernels against their references ------------------------------------------------------


def test_fma_is_correctly_rounded() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1e3, 5000), rng.normal(0, 1e3, 5000)
    c = -a * b + rng.normal(0, 1, 5000)  # cancellation: where rounding twice goes wrong
    exact = [float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(a, b, c, strict=True)]
    assert np.array_equal(fma(a, b, c), np.array(exact))


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (4, 1), (3, 6)])
def test_devkit_distances_equal_scikit_learns(shape: tuple[int, int]) -> None:
    from sklearn.metrics.pairwise import euclidean_distances

    rng = np.random.default_rng(sum(shape))
    n, m = shape
    for _ in range(200):
        x = rng.uniform(-2000, 2000, (n, 2))
        y = x[rng.integers(0, n, m)] + rng.normal(0, 1.5, (m, 2))
        i, j = np.divmod(np.arange(n * m), m)
        ours = devkit_distances(x[i], y[j])[kernel_index(n, m)].reshape(n, m)
        assert np.array_equal(ours, euclidean_distances(x, y))
        assert np.array_equal(ours, reference_distances(x, y))


def test_numpy_mean_equals_numpy() -> None:
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 300, 60)
    group = np.repeat(np.arange(lengths.size), lengths)
    values = rng.random(group.size)
    means = numpy_mean(values, group, lengths.size)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    assert [float(np.mean(values[s:s + n])) for s, n in zip(starts, lengths, strict=True)] == means.tolist()


def test_interpolation_equals_the_devkits() -> None:
    from tests.tracking3d_reference import shimmed

    with shimmed():
        from collections import defaultdict

        from nuscenes.eval.common.config import config_factory
        from nuscenes.eval.tracking.data_classes import TrackingBox
        from nuscenes.eval.tracking.loaders import interpolate_tracks

        config_factory("tracking_nips_2019")
        rng = np.random.default_rng(3)
        stamps = np.cumsum(rng.integers(400_000, 600_000, 9))
        rows = [(int(t), float(x), float(y), f"t{k}", float(s))
                for k in range(6) for t, x, y, s in zip(
                    sorted(rng.choice(9, int(rng.integers(2, 9)), replace=False)),
                    rng.normal(0, 20, 9), rng.normal(0, 20, 9), rng.random(9), strict=False)]
        rows.sort(key=lambda r: r[0])
        frames = defaultdict(list)
        for t in range(9):
            frames[int(stamps[t])] = []
        for t, x, y, track, s in rows:
            frames[int(stamps[t])].append(TrackingBox(translation=(x, y, 0.0), tracking_id=track,
                                                      tracking_name="car", tracking_score=s))
        theirs = [(b.tracking_id, float(b.translation[0]), float(b.translation[1]), b.tracking_score)
                  for t in stamps for b in interpolate_tracks(frames)[int(t)]]
    codes = {f"t{k}": k for k in range(6)}
    side = TrackSide(np.array([r[0] for r in rows]), np.array([r[1:3] for r in rows]),
                     np.zeros(len(rows)), np.zeros(len(rows), np.int64),
                     np.array([codes[r[3]] for r in rows]), np.array([r[4] for r in rows]),
                     np.full(len(rows), -1))
    filled, order = interpolate(side, stamps.astype(np.float64))
    ours = [(f"t{filled.track[i]}", float(filled.xy[i, 0]), float(filled.xy[i, 1]),
             float(filled.score[i])) for i in order.tolist()]
    assert ours == theirs


# --- invariants ----------------------------------------------------------------------------


def test_scene_names_and_order_do_not_matter(rpx, tmp_path: Path) -> None:
    from tests.tracking3d_data import generate, write_folders

    data = generate(11, n_scenes=3)
    write_folders(data, tmp_path / "a")
    renamed = dict(data, scenes={f"z-{9 - i}": v for i, v in enumerate(data["scenes"].values())})
    write_folders(renamed, tmp_path / "b")
    first, second = evaluate(rpx, tmp_path / "a"), evaluate(rpx, tmp_path / "b")
    # equal up to the order distances are summed in (MOTP)
    assert json.loads(json.dumps(first["dataset"]), parse_float=lambda v: round(float(v), 12)) == \
        json.loads(json.dumps(second["dataset"]), parse_float=lambda v: round(float(v), 12))


def test_the_evaluator_takes_scenes_not_single_samples() -> None:
    gt = {"s0": [car(0, 0, "A")], "s1": [car(1, 0, "A")]}
    pred = {"s0": [car(0, 0, "a", 0.9)], "s1": [car(1, 0, "a", 0.9)]}
    evaluator = Evaluator("tracking3d")
    evaluator.update("scene-1", pred, gt)
    assert evaluator.report()["dataset"]["per_class"]["car"]["mota"] == 1
    with pytest.raises(InputError, match="scenes"):
        Evaluator("tracking3d").update("scene-1/s0", pred["s0"], gt["s0"])


# --- bad input: exit 1, the file and the box named, no report -----------------------------------


@pytest.mark.parametrize(("box", "words"), [
    ({"translation": [0, 0, 0], "tracking_name": "car", "tracking_score": 0.5}, ["box 0", "tracking_id"]),
    (car(0, 0, "a", 0.5, size=[1.0, -2.0, 1.0]), ["box 0", "size"]),
    (car(0, 0, "a", 0.5, name="barrier"), ["box 0", "barrier"]),
    (car(0, 0, "a", None), ["box 0", "tracking_score"]),
    (car(0, 0, "a", "high"), ["box 0", "tracking_score"]),
])
def test_a_bad_prediction_box_is_named(rpx, tmp_path: Path, box: dict, words: list[str]) -> None:
    write_scene(tmp_path, [[car(0, 0, "A")]], [[box]])
    run = rpx(["eval", "tracking3d", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt"])
    assert run.exit_code == 1 and run.stdout == ""
    assert "Traceback" not in run.stderr and str(tmp_path / "pred" / "scene-a" / "s0.json") in run.stderr
    assert all(word in run.stderr for word in words), run.stderr


def test_non_finite_values_and_repeated_ids_are_named(rpx, tmp_path: Path) -> None:
    write_scene(tmp_path, [[car(0, 0, "A")]], [[car(0, 0, "a", 0.5)]])
    sample = tmp_path / "pred" / "scene-a" / "s0.json"
    sample.write_text('[{"translation": [NaN, 0, 0], "tracking_id": "a", "tracking_name": "car", '
                      '"tracking_score": 0.5}]')
    run = rpx(["eval", "tracking3d", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt"])
    assert run.exit_code == 1 and "non-finite" in run.stderr and str(sample) in run.stderr
    sample.write_text(json.dumps([car(0, 0, "a", 0.5), car(1, 0, "a", 0.5)]))
    run = rpx(["eval", "tracking3d", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt"])
    assert run.exit_code == 1 and "'a'" in run.stderr and "tracking_id" in run.stderr


def test_timestamps_must_increase_and_files_need_a_scene_folder(rpx, tmp_path: Path) -> None:
    write_scene(tmp_path, [[car(0, 0, "A")], [car(1, 0, "A")]], [[], []], stamps=[5, 5])
    run = rpx(["eval", "tracking3d", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt"])
    assert run.exit_code == 1 and "must increase" in run.stderr
    loose = tmp_path / "loose"
    (loose / "gt").mkdir(parents=True)
    (loose / "pred").mkdir()
    for side in ("gt", "pred"):
        (loose / side / "s0.json").write_text("[]")
    run = rpx(["eval", "tracking3d", "--pred-dir", loose / "pred", "--gt-dir", loose / "gt"])
    assert run.exit_code == 1 and "not in a folder" in run.stderr


def test_a_submission_box_without_tracking_id_names_the_sample(rpx, tmp_path: Path) -> None:
    gt = {"results": {"tok-1": [car(0, 0, "A")]}, "scenes": {"scene-x": ["tok-1"]}}
    pred = {"results": {"tok-1": [{"translation": [0, 0, 0], "tracking_name": "car",
                                   "tracking_score": 0.4}]}}
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    run = rpx(["eval", "tracking3d", "--pred-file", tmp_path / "pred.json", "--gt-file",
               tmp_path / "gt.json"])
    assert run.exit_code == 1 and run.stdout == ""
    assert "'tok-1'" in run.stderr and "tracking_id" in run.stderr and "pred.json" in run.stderr
    (tmp_path / "gt.json").write_text(json.dumps({"results": gt["results"]}))
    run = rpx(["eval", "tracking3d", "--pred-file", tmp_path / "pred.json", "--gt-file",
               tmp_path / "gt.json"])
    assert run.exit_code == 1 and '"scenes"' in run.stderr


def test_a_missing_sample_file_is_an_empty_sample_and_listed(rpx, tmp_path: Path) -> None:
    """Within a paired scene, a GT sample without its prediction file has no predicted
    boxes (listed under unpaired.gt_only); a scene without a prediction folder follows
    --missing."""
    gt = [[car(t, 0, "A")] for t in range(3)]
    pred = [[car(t, 0, "a", 0.9)] for t in range(3)]
    write_scene(tmp_path, gt, pred)
    write_scene(tmp_path, gt, pred, scene="scene-b")
    (tmp_path / "pred" / "scene-a" / "s1.json").unlink()
    run = rpx(["eval", "tracking3d", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt"])
    assert run.exit_code == 1 and "scene-a/s1" in run.stderr
    report = evaluate(rpx, tmp_path, "--missing", "skip")
    assert report["unpaired"]["gt_only"] == ["scene-a/s1"]
    rows = {row["stem"]: row for row in report["rows"]}
    # sample 1's prediction is interpolated back from samples 0 and 2: still matched
    assert rows["scene-a"]["tp"] == 3 and rows["scene-b"]["tp"] == 3
    import shutil

    shutil.rmtree(tmp_path / "pred" / "scene-b")
    report = evaluate(rpx, tmp_path, "--missing", "empty")
    rows = {row["stem"]: row for row in report["rows"]}
    assert rows["scene-b"]["fn"] == 3 and rows["scene-b"]["pred_path"] is None


def test_the_page_draws_amota_per_class_and_the_mota_recall_curve(rpx, tmp_path: Path) -> None:
    case = Path(__file__).resolve().parent.parent / "fixtures" / "tracking3d" / "crossing"
    page = tmp_path / "tracks.html"
    assert rpx(["report", case / "expected.json", "-o", page]).exit_code == 0
    html = page.read_text()
    assert "AMOTA per class" in html and "MOTA against recall" in html and "mota-recall" in html
    assert "scene-0002" in html  # the worst scenes (by MOTA)
