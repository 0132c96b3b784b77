"""``rpx eval tracking``: hand-computed sequences, TrackEval (metric classes and its
MOTChallenge pipeline end to end), invariants and input errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import trackeval  # test-only reference implementation (the [test] extra)
from helpers import dirs, write_json
from hypothesis import given, settings
from hypothesis import strategies as st
from mot_data import generate, trackeval_metrics, trackeval_sequence, write_mot

from rpx_cli.ops import mot

QUIET = {"PRINT_CONFIG": False}
BOX = (0.0, 0.0, 10.0, 10.0)


def rows_of(*rows: tuple) -> np.ndarray:
    return np.array(rows, float).reshape(-1, 6)


def side(rows: np.ndarray) -> mot.Side:
    box = rows[:, 2:6].copy()
    box[:, 2] = box[:, 0] + box[:, 2]
    box[:, 3] = box[:, 1] + box[:, 3]
    return mot.Side(rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64), box)


def metrics(gt: np.ndarray, pred: np.ndarray) -> dict:
    return mot.finalize(mot.sequence_stats(side(gt), side(pred)))


def reference(gt: np.ndarray, pred: np.ndarray) -> dict:
    from trackeval.metrics import CLEAR, HOTA, Identity

    data = trackeval_sequence(gt, pred)
    return trackeval_metrics(tuple(cls(QUIET).eval_sequence(data) for cls in (CLEAR, Identity, HOTA)))


def assert_matches(got: dict, expected: dict) -> None:
    for key, value in expected.items():
        assert got[key] == pytest.approx(float(value), rel=1e-9, abs=1e-12), key


# --------------------------------------------------------------------------- hand-computed


def test_identity_switch_hand_computed() -> None:
    # one GT track over 4 frames; the tracker follows it perfectly but renames it halfway
    gt = rows_of(*[(f, 1, *BOX) for f in (1, 2, 3, 4)])
    pred = rows_of(*[(f, 10 if f <= 2 else 11, *BOX) for f in (1, 2, 3, 4)])
    got = metrics(gt, pred)
    assert (got["tp"], got["fp"], got["fn"], got["idsw"]) == (4, 0, 0, 1)
    assert got["mota"] == (4 - 0 - 1) / 4 and got["moda"] == 1.0 and got["motp"] == 1.0
    # the best one-to-one id pairing covers 2 of 4 frames on both sides
    assert (got["idtp"], got["idfp"], got["idfn"]) == (2, 2, 2)
    assert got["idf1"] == 2 / (2 + 0.5 * 2 + 0.5 * 2) and got["idp"] == got["idr"] == 0.5
    assert (got["mt"], got["pt"], got["ml"], got["frag"]) == (1, 0, 0, 0)
    # HOTA: DetA 1 at every alpha; AssA = sum over id pairs of 2 * 2 / (4 + 2 - 2), over 4 TPs
    assert got["deta"] == 1.0 and got["assa"] == pytest.approx((2 * 0.5 + 2 * 0.5) / 4)
    assert got["hota"] == pytest.approx(math.sqrt(0.5)) and got["loca"] == 1.0


def test_fragmentation_and_trackeval_gap_convention() -> None:
    gt = rows_of(*[(f, 1, *BOX) for f in range(1, 6)])
    tracked = [(f, 10, *BOX) for f in (1, 2, 4, 5)]
    # frame 3 holds only a far-away false alarm: the track is lost, then resumed
    lost = metrics(gt, rows_of(*tracked, (3, 20, 100, 100, 10, 10)))
    assert (lost["tp"], lost["fp"], lost["fn"], lost["frag"]) == (4, 1, 1, 1)
    assert lost["mota"] == (4 - 1 - 0) / 5
    assert (lost["mt"], lost["pt"], lost["ml"]) == (0, 1, 0)  # 4/5 = 0.8 is not > 0.8
    # frame 3 has no prediction at all: TrackEval skips the frame, keeping the previous
    # frame's matches, so no fragmentation is counted
    skipped = metrics(gt, rows_of(*tracked))
    assert (skipped["tp"], skipped["fp"], skipped["fn"], skipped["frag"]) == (4, 0, 1, 0)
    assert_matches(lost, reference(gt, rows_of(*tracked, (3, 20, 100, 100, 10, 10))))
    assert_matches(skipped, reference(gt, rows_of(*tracked)))


def test_iou_threshold_is_inclusive() -> None:
    gt = rows_of((1, 1, 0, 0, 10, 10))
    half = metrics(gt, rows_of((1, 5, 0, 0, 10, 5)))  # IoU 50 / 100
    assert half["tp"] == 1 and half["motp"] == 0.5 and half["idtp"] == 1
    below = metrics(gt, rows_of((1, 5, 0, 0, 10, 4.999)))
    assert below["tp"] == 0 and below["fp"] == 1 and below["fn"] == 1
    assert below["mota"] == (0 - 1 - 0) / 1


def test_continuing_a_track_beats_a_better_overlap() -> None:
    # frame 2: the id matched in frame 1 overlaps 0.6, a new id overlaps perfectly; CLEAR
    # keeps the track (no switch), the new id is a false positive
    gt = rows_of((1, 1, *BOX), (2, 1, *BOX))
    pred = rows_of((1, 10, *BOX), (2, 10, 0, 0, 10, 6), (2, 11, *BOX))
    got = metrics(gt, pred)
    assert (got["tp"], got["fp"], got["idsw"]) == (2, 1, 0)
    assert got["motp"] == (1.0 + 0.6) / 2
    assert_matches(got, reference(gt, pred))


def test_switch_counts_against_the_last_id_any_frames_back() -> None:
    gt = rows_of(*[(f, 1, *BOX) for f in range(1, 6)])
    pred = rows_of((1, 10, *BOX), (2, 10, *BOX), (4, 11, *BOX), (5, 11, *BOX))
    got = metrics(gt, pred)  # frame 3 missed, then a new id: one switch, as TrackEval
    assert got["idsw"] == 1
    assert_matches(got, reference(gt, pred))


def test_perfect_tracking_is_ideal() -> None:
    gt, _ = generate(3)
    pred = gt.copy()
    pred[:, 1] += 1000  # ids need not be equal, only consistent
    got = metrics(gt, pred)
    for key in ("mota", "moda", "motp", "idf1", "idp", "idr", "hota", "deta", "assa", "loca"):
        assert got[key] == 1.0, key
    assert got["idsw"] == got["fp"] == got["fn"] == got["frag"] == 0


def test_empty_sides() -> None:
    gt, pred = generate(1)
    nothing = rows_of()
    missed = metrics(gt, nothing)
    assert missed["fn"] == len(gt) and missed["ml"] == len(np.unique(gt[:, 1]))
    assert missed["mota"] == 0.0 and missed["hota"] == 0.0 and missed["loca"] == 1.0
    assert_matches(missed, reference(gt, nothing))
    no_gt = metrics(nothing, pred)
    assert no_gt["fp"] == len(pred) and no_gt["num_gt"] == 0
    assert all(no_gt[key] is None for key in ("mota", "idf1", "hota", "motp"))


# --------------------------------------------------------------------------- TrackEval


@pytest.mark.parametrize("seed", range(12))
def test_sequence_equals_trackeval(seed: int) -> None:
    variants = [{"p_double": 0.3}, {"gap": (20, 26)}, {"p_swap": 0.3, "jitter": 6.0},
                {"p_miss": 0.5, "p_fp": 0.6, "p_double": 0.2}]
    gt, pred = generate(seed, **variants[seed % 4])
    got = metrics(gt, pred)
    expected = reference(gt, pred)
    assert_matches(got, expected)
    assert got["mota"] == expected["mota"] and got["hota"] == expected["hota"]  # bit for bit


def test_dataset_equals_trackeval_combined(rpx, tmp_path: Path) -> None:
    from trackeval.metrics import CLEAR, HOTA, Identity

    classes = [CLEAR(QUIET), Identity(QUIET), HOTA(QUIET)]
    per_seq: list[dict] = [{}, {}, {}]
    for k in range(5):
        gt, pred = generate(100 + k, gap=(5, 9) if k == 2 else None)
        if k == 4:
            pred = pred[:0]  # a sequence the tracker missed entirely
        write_mot(tmp_path / "gt" / f"seq{k}.txt", gt, gt=True)
        write_mot(tmp_path / "pred" / f"seq{k}.txt", pred, gt=False)
        data = trackeval_sequence(gt, pred)
        for results, cls in zip(per_seq, classes, strict=True):
            results[f"seq{k}"] = cls.eval_sequence(data)
    combined = tuple(cls.combine_sequences(res) for cls, res in zip(classes, per_seq, strict=True))
    report = rpx(f"eval tracking {dirs(tmp_path)}").json
    assert_matches(report["dataset"], trackeval_metrics(combined))
    for row in report["rows"]:
        stem = row["stem"]
        assert_matches(row, trackeval_metrics(tuple(res[stem] for res in per_seq)))
    mean_mota = sum(row["mota"] for row in report["rows"]) / 5
    assert report["aggregate"]["mota"] == pytest.approx(mean_mota)  # the macro mean, labelled
    assert report["dataset"]["mota"] != pytest.approx(mean_mota)


def mot17_files(root: Path, seed: int) -> None:
    """A MOT17-style sequence: pedestrians (some zero-marked), distractor classes the
    tracker also follows, and other classes; GT sorted by id as in MOT17."""
    rng = np.random.default_rng(seed)
    gt, pred = generate(seed, n_tracks=16, n_frames=50)
    tracks = np.unique(gt[:, 1])
    cls = dict(zip(tracks.tolist(), rng.choice([1, 1, 1, 1, 1, 2, 7, 8, 12, 3, 9], len(tracks)).tolist(),
                   strict=True))
    classes = np.array([cls[t] for t in gt[:, 1].tolist()])
    flags = np.where(classes == 1, rng.random(len(gt)) > 0.1, rng.random(len(gt)) < 0.3)
    gt = np.c_[gt, flags.astype(float), classes]
    gt = gt[np.lexsort((gt[:, 0], gt[:, 1]))]
    write_mot(root / "gt" / "MOT17-02" / "gt" / "gt.txt", gt, gt=True)
    write_mot(root / "trackers" / "mine" / "data" / "MOT17-02.txt", pred, gt=False)
    write_mot(root / "rpx" / "gt" / "MOT17-02.txt", gt, gt=True)
    write_mot(root / "rpx" / "pred" / "MOT17-02.txt", pred, gt=False)


@pytest.mark.parametrize(("seed", "benchmark"), [(0, "mot17"), (1, "mot17"), (2, "none")])
def test_mot_challenge_pipeline_equals_trackeval(rpx, tmp_path: Path, seed: int,
                                                 benchmark: str) -> None:
    """TrackEval's own MOTChallenge loader and preprocessing, end to end on the same files:
    ``--benchmark mot17`` = its default; rpx's default = TrackEval without preprocessing
    (GT lines with flag 0 dropped, nothing else)."""
    mot17_files(tmp_path, seed)
    frames = int(np.loadtxt(tmp_path / "gt" / "MOT17-02" / "gt" / "gt.txt", delimiter=",")[:, 0].max())
    dataset = trackeval.datasets.MotChallenge2DBox({
        "GT_FOLDER": str(tmp_path / "gt"), "TRACKERS_FOLDER": str(tmp_path / "trackers"),
        "SKIP_SPLIT_FOL": True, "SEQ_INFO": {"MOT17-02": frames + 3}, "TRACKERS_TO_EVAL": ["mine"],
        "DO_PREPROC": benchmark != "none", **QUIET})
    evaluator = trackeval.Evaluator({"USE_PARALLEL": False, "PRINT_RESULTS": False,
                                     "PRINT_ONLY_COMBINED": True, "TIME_PROGRESS": False,
                                     "OUTPUT_SUMMARY": False, "OUTPUT_DETAILED": False,
                                     "PLOT_CURVES": False, "PRINT_CONFIG": False,
                                     "DISPLAY_LESS_PROGRESS": True})
    metrics_list = [trackeval.metrics.CLEAR(QUIET), trackeval.metrics.Identity(QUIET),
                    trackeval.metrics.HOTA(QUIET)]
    results, _ = evaluator.evaluate([dataset], metrics_list)
    seq = results["MotChallenge2DBox"]["mine"]["MOT17-02"]["pedestrian"]
    expected = trackeval_metrics((seq["CLEAR"], seq["Identity"], seq["HOTA"]))
    report = rpx(f"eval tracking {dirs(tmp_path / 'rpx')} --benchmark {benchmark}").json
    assert_matches(report["rows"][0], expected)
    assert_matches(report["dataset"], expected)
    if benchmark == "mot17":
        plain = rpx(f"eval tracking {dirs(tmp_path / 'rpx')}").json
        assert plain["dataset"]["num_pred"] > report["dataset"]["num_pred"]  # distractors removed


# --------------------------------------------------------------------------- invariants


def write_json_tracks(path: Path, rows: np.ndarray, name) -> None:
    frames = []
    for f in np.unique(rows[:, 0]).astype(int).tolist():
        frames.append({"frame": f, "objects": [
            {"id": name(int(r[1])), "bbox": [r[2], r[3], r[2] + r[4], r[3] + r[5]], "score": 0.9}
            for r in rows[rows[:, 0] == f]]})
    write_json(path, {"frames": frames})


def test_json_and_mot_text_give_the_same_report(rpx, tmp_path: Path) -> None:
    gt, pred = generate(7)
    write_mot(tmp_path / "txt" / "gt" / "a.txt", gt, gt=True)
    write_mot(tmp_path / "txt" / "pred" / "a.txt", pred, gt=False)
    for role, rows in (("gt", gt), ("pred", pred)):
        write_json_tracks(tmp_path / "json" / role / "a.json", rows, int)
        write_json_tracks(tmp_path / "named" / role / "a.json", rows, lambda k: f"track-{k}")
    from_text = rpx(f"eval tracking {dirs(tmp_path / 'txt')}").json
    from_json = rpx(f"eval tracking {dirs(tmp_path / 'json')}").json
    for key in ("aggregate", "dataset"):
        assert from_json[key] == from_text[key]
    # string ids sort differently ("track-10" < "track-2"): same matches, sums in another order
    named = rpx(f"eval tracking {dirs(tmp_path / 'named')}").json
    assert_matches(named["dataset"], {k: v for k, v in from_text["dataset"].items()
                                      if k != "hota_alpha"})


def test_line_order_does_not_matter(rpx, tmp_path: Path) -> None:
    """MOT GT sorted by id (MOT17's layout) or by frame gives the same report."""
    gt, pred = generate(11)
    write_mot(tmp_path / "a" / "gt" / "s.txt", gt, gt=True)
    write_mot(tmp_path / "b" / "gt" / "s.txt", gt[np.lexsort((gt[:, 0], gt[:, 1]))], gt=True)
    for case in ("a", "b"):
        write_mot(tmp_path / case / "pred" / "s.txt", pred, gt=False)
    first, second = (rpx(f"eval tracking {dirs(tmp_path / c)}").json for c in ("a", "b"))
    assert first["dataset"] == second["dataset"] and first["rows"][0]["mota"] == second["rows"][0]["mota"]


def test_flag_zero_gt_lines_are_dropped(rpx, tmp_path: Path) -> None:
    gt = np.array([(1, 1, *BOX, 1, 1), (1, 2, 50, 50, 10, 10, 0, 1), (2, 1, *BOX, 1, 1)])
    write_mot(tmp_path / "gt" / "s.txt", gt, gt=True)
    write_mot(tmp_path / "pred" / "s.txt", rows_of((1, 7, *BOX), (2, 7, *BOX)), gt=False)
    row = rpx(f"eval tracking {dirs(tmp_path)}").json["rows"][0]
    assert row["num_gt"] == 2 and row["mota"] == 1.0 and row["num_gt_ids"] == 1


def test_sequence_without_gt_is_null_and_pooled(rpx, tmp_path: Path) -> None:
    gt, pred = generate(5)
    write_mot(tmp_path / "gt" / "a.txt", gt, gt=True)
    write_mot(tmp_path / "pred" / "a.txt", pred, gt=False)
    (tmp_path / "gt" / "b.txt").write_text("")
    write_mot(tmp_path / "pred" / "b.txt", rows_of((1, 1, *BOX), (2, 1, *BOX)), gt=False)
    report = rpx(f"eval tracking {dirs(tmp_path)}").json
    a, b = report["rows"]
    assert b["mota"] is None and b["hota"] is None and b["fp"] == 2 and b["num_gt"] == 0
    assert report["aggregate"]["n_empty"] == 1 and report["aggregate"]["mota"] == a["mota"]
    assert report["dataset"]["fp"] == a["fp"] + 2
    assert report["dataset"]["mota"] == pytest.approx((a["tp"] - a["fp"] - 2 - a["idsw"]) / len(gt))


def test_missing_prediction_cannot_help(rpx, tmp_path: Path) -> None:
    for k in range(2):
        gt, pred = generate(20 + k)
        write_mot(tmp_path / "gt" / f"s{k}.txt", gt, gt=True)
        if k == 0:
            write_mot(tmp_path / "pred" / f"s{k}.txt", pred, gt=False)
    assert rpx(f"eval tracking {dirs(tmp_path)}").exit_code == 1
    report = rpx(f"eval tracking {dirs(tmp_path)} --missing empty").json
    missing = report["rows"][1]
    assert missing["fn"] == missing["num_gt"] and missing["mota"] == 0.0 and missing["hota"] == 0.0


def test_metric_info_and_directions(rpx, tmp_path: Path) -> None:
    gt, pred = generate(2)
    write_mot(tmp_path / "gt" / "a.txt", gt, gt=True)
    write_mot(tmp_path / "pred" / "a.txt", pred, gt=False)
    report = rpx(f"eval tracking {dirs(tmp_path)} --require dataset.mota>=-1 "
                 "--require dataset.idsw<=100000").json
    info = report["metric_info"]
    assert info["mota"]["direction"] == "higher" and info["idsw"]["direction"] == "lower"
    assert "flag" in info["benchmark"]["description"]
    assert all(gate["passed"] for gate in report["gates"])
    assert len(report["dataset"]["hota_alpha"]["hota"]) == 19


# --------------------------------------------------------------------------- input errors

GOOD = "1,1,0,0,10,10,1,1,1\n"


@pytest.mark.parametrize(("text", "message"), [
    (GOOD + "1,1,5,5,10,10,1,1,1\n", "line 2: id 1 appears twice in frame 1"),
    ("2,1,0,0,10,10,1,1,1\n1,1,0,0,10,10,1,1,1\n", "line 2: frames out of order"),
    (GOOD + "2,1,0,0,10\n", "line 2: 5 columns, expected 9"),
    (GOOD + "2,1,0,zero,10,10,1,1,1\n", "line 2: 'zero' is not a number"),
    (GOOD + "2.5,1,0,0,10,10,1,1,1\n", "line 2: frame must be an integer"),
    (GOOD + "2,1.5,0,0,10,10,1,1,1\n", "line 2: id must be an integer"),
    (GOOD + "2,1,0,0,-10,10,1,1,1\n", "line 2: box width and height must be >= 0"),
    (GOOD + "2,1,0,nan,10,10,1,1,1\n", "line 2: a value is not a finite number"),
    ("1,1,0,0,10\n", "line 1: 5 columns, need at least 6"),
])
def test_bad_mot_text(rpx, tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "gt").mkdir()
    (tmp_path / "gt" / "s.txt").write_text("\n" + text)  # a blank first line shifts the count
    write_mot(tmp_path / "pred" / "s.txt", rows_of((1, 1, *BOX)), gt=False)
    run = rpx(f"eval tracking {dirs(tmp_path)}")
    assert run.exit_code == 1 and run.stdout == ""
    line = int(message.split()[1].rstrip(":")) + 1
    expected = message.replace(f"line {line - 1}:", f"line {line}:")
    assert expected in run.stderr and "s.txt" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize(("document", "message"), [
    ({"frames": [{"frame": 2, "objects": []}, {"frame": 1, "objects": []}]},
     "frames[1]: frames out of order: frame 1 after frame 2"),
    ({"frames": [{"frame": 1, "objects": [{"id": 1, "bbox": [0, 0, 1, 1]},
                                          {"id": 1, "bbox": [0, 0, 2, 2]}]}]},
     "id 1 appears twice in frame 1"),
    ({"frames": [{"frame": 1, "objects": [{"id": 1, "bbox": [0, 0, 1]}]}]}, "'bbox' must be four numbers"),
    ({"frames": [{"frame": 1, "objects": [{"id": 1, "bbox": [5, 0, 1, 1]}]}]}, "x2 < x1"),
    ({"frames": [{"frame": 1, "objects": [{"id": [1], "bbox": [0, 0, 1, 1]}]}]},
     "'id' must be an integer or a string"),
    ({"frames": [{"frame": "1", "objects": []}]}, "frames[0].frame must be an integer"),
    ({"frames": [{"frame": 1, "objects": [{"id": 1, "bbox": [0, 0, 1, 1], "score": "hi"}]}]},
     "'score' must be a number"),
    ({"tracks": []}, 'expected {"frames"'),
])
def test_bad_json(rpx, tmp_path: Path, document: dict, message: str) -> None:
    write_json(tmp_path / "pred" / "s.json", document)
    write_mot(tmp_path / "gt" / "s.txt", rows_of((1, 1, *BOX)), gt=True)
    run = rpx(f"eval tracking {dirs(tmp_path)}")
    assert run.exit_code == 1 and run.stdout == ""
    assert message in run.stderr and "s.json" in run.stderr


def test_benchmark_checks(rpx, tmp_path: Path) -> None:
    (tmp_path / "gt").mkdir()
    (tmp_path / "gt" / "s.txt").write_text("1,1,0,0,10,10,1,42,1\n")
    write_mot(tmp_path / "pred" / "s.txt", rows_of((1, 1, *BOX)), gt=False)
    run = rpx(f"eval tracking {dirs(tmp_path)} --benchmark mot17")
    assert run.exit_code == 1 and "unknown GT class(es) 42" in run.stderr
    (tmp_path / "gt" / "s.txt").write_text("1,1,0,0,10,10\n")
    run = rpx(f"eval tracking {dirs(tmp_path)} --benchmark mot17")
    assert run.exit_code == 1 and "GT needs 8 columns" in run.stderr
    assert rpx(f"eval tracking {dirs(tmp_path)} --benchmark mot18").exit_code == 2
    assert rpx(f"eval tracking {dirs(tmp_path)} --iou-threshold 0").exit_code == 2


def test_assignment_solver_is_scipys_without_importing_scipy_optimize() -> None:
    import subprocess
    import sys

    from scipy.optimize import linear_sum_assignment

    from rpx_cli.ops.assignment import _load_extension

    rng = np.random.default_rng(0)
    direct = _load_extension()
    for shape in ((5, 5), (3, 7), (8, 2)):
        cost = rng.integers(0, 4, shape).astype(float)  # many ties
        for maximize in (False, True):
            for got, expected in zip(direct(cost, maximize), linear_sum_assignment(cost, maximize),
                                     strict=True):
                assert np.array_equal(got, expected)
    code = ("import sys; from rpx_cli.ops.assignment import solver; solver()([[1.0]], False); "
            "print('scipy.optimize' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_frames=st.integers(1, 8), n_gt=st.integers(0, 4),
       n_pred=st.integers(0, 5))
def test_tiny_integer_sequences_equal_trackeval(seed: int, n_frames: int, n_gt: int,
                                                n_pred: int) -> None:
    """Integer boxes on a coarse grid: identical boxes, exact IoU 0.5, zero-area boxes and
    tied assignments everywhere — the cases where a different summation or tie order
    would show."""
    rng = np.random.default_rng(seed)

    def rows(n_ids: int, first_id: int) -> np.ndarray:
        out = []
        for f in range(1, n_frames + 1):
            for k in rng.permutation(n_ids)[: rng.integers(0, n_ids + 1)].tolist():
                x, y = rng.integers(0, 3, 2) * 5
                w, h = rng.choice([0, 5, 10], 2)
                out.append((f, first_id + k, x, y, w, h))
        return np.array(out, float).reshape(-1, 6)

    gt, pred = rows(n_gt, 1), rows(n_pred, 50)
    got, expected = metrics(gt, pred), reference(gt, pred)
    for key, value in expected.items():
        if got["num_gt"] == 0 and key in ("mota", "moda", "motp", "idf1", "idp", "idr", "hota",
                                          "deta", "assa", "loca"):
            assert got[key] is None, key  # rpx: no GT, no ratio (TrackEval prints numbers)
            continue
        assert got[key] == pytest.approx(float(value), rel=1e-9, abs=1e-12), key


@pytest.mark.parametrize("threshold", [0.3, 0.7])
def test_iou_threshold_equals_trackeval_threshold(threshold: float) -> None:
    from trackeval.metrics import CLEAR, HOTA, Identity

    gt, pred = generate(31, jitter=6.0, p_double=0.2)
    data = trackeval_sequence(gt, pred)
    config = {**QUIET, "THRESHOLD": threshold}
    expected = trackeval_metrics((CLEAR(config).eval_sequence(data),
                                  Identity(config).eval_sequence(data),
                                  HOTA(QUIET).eval_sequence(data)))
    got = mot.finalize(mot.sequence_stats(side(gt), side(pred), threshold))
    assert_matches(got, expected)
    assert got["tp"] != metrics(gt, pred)["tp"]  # the threshold matters on this sequence


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-10**15, 10**15),
                          *[st.one_of(st.floats(-1e6, 1e6), st.integers(-10**6, 10**6))] * 2,
                          *[st.one_of(st.floats(0, 1e6), st.integers(0, 10**6))] * 2,
                          st.sampled_from(["1", "0", "0.25", "1e0", "-1", "2E-1"]),
                          st.sampled_from(["1", "7", "-1"])), min_size=1, max_size=20),
       st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_mot_text_read_as_json_equals_the_number_scanner(rows, newline: str, last: bool) -> None:
    """Comma-separated MOT text is read by orjson as one array; the same text with spaces
    after the commas takes ``np.fromstring``: every value equal, bit for bit."""
    from rpx_cli.io.tracks import parse_mot_text

    def spell(value) -> str:
        return repr(value) if isinstance(value, float) else str(value)

    lines = [",".join(spell(v) for v in (frame, *row)) for frame, row in enumerate(rows, 1)]
    text = newline.join(lines) + (newline if last else "")
    fast = parse_mot_text(text.encode(), "s.txt")
    slow = parse_mot_text(text.replace(",", ", ").encode(), "s.txt")
    for name in ("frame", "ids", "box", "flag", "cls"):
        a, b = getattr(fast, name), getattr(slow, name)
        assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)), name
    assert fast.scored == slow.scored


@pytest.mark.parametrize(("text", "message"), [
    (GOOD + "2,1,0,true,10,10,1,1,1\n", "line 2: 'true' is not a number"),
    (GOOD + "2,1,0,1e999,10,10,1,1,1\n", "line 2: a value is not a finite number"),
    (GOOD + "2,1,0,+1,10,10,1,1,1\n", None),  # not JSON, a number to the scanner
    (GOOD + "2,1,0,.5,10,10,1,1,1\n", None),
    (GOOD + "2,1,0,0,10,10,1,1\n", "line 2: 8 columns, expected 9"),
    (GOOD + "2,1,0,0,10,10,1,1,1,\n", None),
])
def test_mot_text_that_is_not_json_takes_the_scanner(text: str, message: str | None) -> None:
    """Text the JSON reading refuses (or reads to another count) is read, or refused, as
    before, by the line-aware scanner."""
    from rpx_cli.errors import InputError
    from rpx_cli.io.tracks import parse_mot_text

    if message is None:
        tracks = parse_mot_text(text.encode(), "s.txt")
        assert len(tracks) == 2 and tracks.frame.tolist() == [1, 2]
    else:
        with pytest.raises(InputError, match=message.replace("+", r"\+")):
            parse_mot_text(text.encode(), "s.txt")


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 40), st.integers(0, 40), st.floats(0, 1))
def test_keep_pairs_equals_pairing_the_kept_boxes(seed: int, n_gt: int, n_pred: int,
                                                  share: float) -> None:
    """The pairs of a filtered sequence taken from the unfiltered pairs equal pair_up of
    the boxes kept: every array, in the same order."""
    rng = np.random.default_rng(seed)

    def sorted_side(n: int) -> mot.Side:
        frame = np.sort(rng.integers(1, 6, n))
        xy = rng.uniform(0, 20, (n, 2))
        return mot.Side(frame, rng.integers(0, 5, n), np.hstack([xy, xy + rng.uniform(0, 9, (n, 2))]))

    gt, pred = sorted_side(n_gt), sorted_side(n_pred)
    keep_g, keep_p = rng.random(n_gt) < share, rng.random(n_pred) < share
    kept = mot.keep_pairs(mot.pair_up(gt, pred), keep_g, keep_p)
    direct = mot.pair_up(mot.Side(gt.frame[keep_g], gt.ids[keep_g], gt.box[keep_g]),
                         mot.Side(pred.frame[keep_p], pred.ids[keep_p], pred.box[keep_p]))
    assert [m[:4] for m in kept.frame_matrices()] == [m[:4] for m in direct.frame_matrices()]
    for name in ("g", "p", "sim"):
        assert np.array_equal(getattr(kept, name), getattr(direct, name)), name
    for a, b in zip(kept.frame_matrices(), direct.frame_matrices(), strict=True):
        assert np.array_equal(a[5], b[5])
