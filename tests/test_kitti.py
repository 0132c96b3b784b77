"""``rpx eval detection3d --protocol kitti``: KITTI label files (reading and every malformed
line), hand-computed cases (difficulty edges, IoU edges, neighbours, DontCare, tiny sets),
rpx's vectorised benchmark against a plain loop (tests/kitti_loops.py), formats (auto, the
equality of rpx JSON and KITTI labels, ambiguity) and invariants (jobs, shards, frame
order, a perfect prediction). The reference's own numbers are in test_kitti_reference.py."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import kitti_loops
import numpy as np
import pytest
from helpers import FIXTURES, assert_jobs_and_shards_agree

from rpx_cli.errors import InputError
from rpx_cli.io.kitti_labels import parse_kitti_labels, to_boxes3d
from rpx_cli.tasks.detection3d import kitti as protocol

EDGES = Path(__file__).parent / "fixtures" / "kitti" / "edges"
GOLDEN = FIXTURES / "detection3d" / "kitti"
PARAMS = {"class_names": list(protocol.DEFAULT_CLASSES), "kitti_iou": "strict",
          "recall_points": 40, "conf_threshold": 0.0}


def line(name="Car", *, truncated=0.0, occluded=0, alpha=0.1, bbox=(100.0, 100.0, 200.0, 180.0),
         hwl=(1.5, 1.6, 4.0), loc=(0.0, 1.6, 20.0), ry=0.0, score=None) -> str:
    values = [truncated, occluded, alpha, *bbox, *hwl, *loc, ry] + ([] if score is None else [score])
    return name + " " + " ".join(repr(v) for v in values)


def write(root: Path, frames: dict[str, tuple[list[str], list[str]]]) -> Path:
    for side in ("gt", "pred"):
        (root / side).mkdir(parents=True, exist_ok=True)
    for stem, (gt, pred) in frames.items():
        (root / "gt" / f"{stem}.txt").write_text("".join(x + "\n" for x in gt))
        (root / "pred" / f"{stem}.txt").write_text("".join(x + "\n" for x in pred))
    return root


def kitti(rpx, root: Path, *extra: str) -> dict:
    run = rpx(["eval", "detection3d", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
               "--protocol", "kitti", *extra])
    assert run.exit_code == 0, run.stderr
    return run.json


def frames_of(folder: Path, n: int | None = None) -> list[SimpleNamespace]:
    stems = sorted(p.stem for p in (folder / "gt").glob("*.txt"))[:n]
    return [SimpleNamespace(
        gt=parse_kitti_labels((folder / "gt" / f"{s}.txt").read_bytes(), "gt", prediction=False),
        pred=parse_kitti_labels((folder / "pred" / f"{s}.txt").read_bytes(), "pred",
                                prediction=True)) for s in stems]


# --- reading ---------------------------------------------------------------------------------


def test_a_label_file_is_read_as_written():
    text = (line("Car", truncated=0.25, occluded=2, alpha=-1.5, bbox=(1, 2, 30, 40),
                 hwl=(1.5, 1.6, 4.0), loc=(1.0, 1.7, 25.0), ry=0.3) + "\n\n"
            + "DontCare -1 -1 -10 5 6 7 8 -1 -1 -1 -1000 -1000 -1000 -10\n")
    objects = parse_kitti_labels(text.encode(), "f.txt", prediction=False)
    assert objects.label_names() == ["Car", "DontCare"]
    assert objects.truncated.tolist() == [0.25, -1] and objects.occluded.tolist() == [2, -1]
    assert objects.bbox[0].tolist() == [1, 2, 30, 40] and objects.hwl[0].tolist() == [1.5, 1.6, 4.0]
    assert objects.location[0].tolist() == [1.0, 1.7, 25.0] and objects.rotation_y[0] == 0.3
    assert objects.score is None
    assert len(parse_kitti_labels(b"", "e.txt", prediction=True)) == 0
    assert len(parse_kitti_labels(b"\n  \n", "e.txt", prediction=False)) == 0


def test_the_camera_box_becomes_rpx_boxes_as_mmdet3d_converts_it():
    """x_l = z, y_l = -x, z_l = -y + h/2 (the centre); size (w, l, h); yaw = -ry - pi/2;
    DontCare left out."""
    text = line(hwl=(1.5, 1.6, 4.0), loc=(2.0, 1.7, 25.0), ry=0.3) + "\n" + \
        "DontCare -1 -1 -10 5 6 7 8 -1 -1 -1 -1000 -1000 -1000 -10\n"
    boxes = to_boxes3d(parse_kitti_labels(text.encode(), "f.txt", prediction=False))
    assert boxes.names == ["Car"]
    assert boxes.center[0].tolist() == pytest.approx([25.0, -2.0, -1.7 + 0.75])
    assert boxes.size[0].tolist() == [1.6, 4.0, 1.5]
    assert boxes.yaw[0] == pytest.approx(-0.3 - math.pi / 2)


@pytest.mark.parametrize(("text", "message"), [
    ("Car 0 0 0 1 2 3", "f.txt:1: 7 fields, expected 15 or 16"),
    (line() + "\n" + line(hwl=(1.5, -1.6, 4.0)), "f.txt:2: a negative size"),
    (line(loc=(0.0, float("nan"), 3.0)), "f.txt:1: a non-finite value"),
    (line(ry=float("inf")), "f.txt:1: a non-finite value"),
    (line().replace(" 0.1 ", " x "), "f.txt:1: field 4 is not a number"),
    (line(occluded=1.5), "f.txt:1: 'occluded' must be an integer"),
    (line(bbox=(10.0, 0.0, 5.0, 20.0)), "f.txt:1: a 2D box with x2 < x1"),
    ("\n" + line() + "\n" + line(score=0.5), "f.txt:3: 16 fields"),
])
def test_a_malformed_line_is_an_error_naming_file_and_line(text, message):
    with pytest.raises(InputError) as info:
        parse_kitti_labels(text.encode(), "f.txt", prediction=False)
    assert message in str(info.value)


def test_a_results_line_needs_its_score():
    with pytest.raises(InputError, match=r"p.txt:1: 15 fields, expected 16 .*needs the score"):
        parse_kitti_labels(line().encode(), "p.txt", prediction=True)


def test_a_bad_line_exits_1_naming_file_and_line_and_writes_no_report(rpx, tmp_path):
    root = write(tmp_path, {"000000": ([line()], [line(hwl=(1.0, -2.0, 3.0), score=0.5)])})
    out = tmp_path / "r.json"
    run = rpx(["eval", "detection3d", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
               "--protocol", "kitti", "-o", out])
    assert run.exit_code == 1
    assert "000000.txt:1: a negative size" in run.stderr and "Traceback" not in run.stderr
    assert not out.exists()


# --- hand-computed ------------------------------------------------------------------------------


def car_frames(n: int, **pred) -> dict:
    """n frames, one easy Car each (60 px tall), and its exact copy predicted with score
    (k + 1) / n."""
    return {f"{k:06d}": ([line(bbox=(100.0, 100.0, 180.0, 160.0), loc=(2.0 * k, 1.6, 20.0))],
                         [line(bbox=(100.0, 100.0, 180.0, 160.0), loc=(2.0 * k, 1.6, 20.0),
                               score=(k + 1) / n, **pred)]) for k in range(n)}


def test_a_perfect_prediction_of_80_cars_scores_1(rpx, tmp_path):
    """80 valid GT: the 41 sampled thresholds cover every recall point, so every slot's
    precision is 1; aos 1 too (alpha equal)."""
    report = kitti(rpx, write(tmp_path, car_frames(80)))
    car = report["dataset"]["kitti"]["Car"]
    for metric in ("bbox", "bev", "3d", "aos"):
        for level in ("easy", "moderate", "hard"):
            assert car[f"{metric}_{level}"] == 1.0
    assert car["n_gt_easy"] == car["n_gt_moderate"] == car["n_gt_hard"] == 80
    assert report["dataset"]["kitti"]["Pedestrian"]["3d_moderate"] == 0.0  # no GT: 0, as the reference
    assert report["dataset"]["kitti"]["mAP_3d_moderate"] == pytest.approx(1 / 3)
    assert report["aggregate"]["f1"] == 1.0


def test_one_perfect_detection_fills_only_the_first_slot(rpx, tmp_path):
    """One GT: one threshold, precision 1 in slot 0 only: AP_R40 = 0 (slots 1..40),
    AP_R11 = 1/11 (slot 0 of 0, 4, ..., 40), as the reference computes it."""
    root = write(tmp_path, car_frames(1))
    assert kitti(rpx, root)["dataset"]["kitti"]["Car"]["3d_easy"] == 0.0
    r11 = kitti(rpx, root, "--recall-points", "11")["dataset"]["kitti"]["Car"]
    assert r11["3d_easy"] == pytest.approx(1 / 11) and r11["bbox_hard"] == pytest.approx(1 / 11)


def test_difficulty_edges(tmp_path):
    """A GT exactly 40 px tall is not easy but moderate; 25 px is not moderate; occlusion
    and truncation at the bound count, above it do not."""
    def gt(**kw):
        return parse_kitti_labels(line(**kw).encode(), "g", prediction=False)

    cases = [
        (dict(bbox=(0.0, 0.0, 10.0, 40.0)), (0, 1, 1)),
        (dict(bbox=(0.0, 0.0, 10.0, 40.5)), (1, 1, 1)),
        (dict(bbox=(0.0, 0.0, 10.0, 25.0)), (0, 0, 0)),
        (dict(bbox=(0.0, 0.0, 10.0, 60.0), occluded=1), (0, 1, 1)),
        (dict(bbox=(0.0, 0.0, 10.0, 60.0), occluded=3), (0, 0, 0)),
        (dict(bbox=(0.0, 0.0, 10.0, 60.0), truncated=0.15), (1, 1, 1)),
        (dict(bbox=(0.0, 0.0, 10.0, 60.0), truncated=0.30000001), (0, 0, 1)),
        (dict(bbox=(0.0, 0.0, 10.0, 60.0), truncated=0.5), (0, 0, 1)),
    ]
    for kw, expected in cases:
        pair = SimpleNamespace(gt=gt(**kw), pred=parse_kitti_labels(b"", "p", prediction=True))
        table = protocol.summarize([pair], PARAMS)[0]["dataset"]["kitti"]["Car"]
        assert tuple(table[f"n_gt_{level}"] for level in protocol.LEVELS) == expected, kw


def shifted(dx: float) -> tuple[list[str], list[str]]:
    """A GT and its copy shifted by dx along x: 2D, BEV and 3D IoU (L - dx) / (L + dx)."""
    gt = line(bbox=(100.0, 100.0, 100.0 + 8 * 4.25, 164.0), hwl=(2.0, 2.0, 4.25), loc=(0.0, 2.0, 20.0))
    det = line(bbox=(100.0 + 8 * dx, 100.0, 100.0 + 8 * (4.25 + dx), 164.0), hwl=(2.0, 2.0, 4.25),
               loc=(dx, 2.0, 20.0), score=0.9)
    return [gt] * 80, [det] * 80


@pytest.mark.parametrize(("dx", "matched"), [(0.75, False), (0.75 - 1 / 64, True)])
def test_an_iou_of_exactly_the_threshold_is_no_match(tmp_path, dx, matched):
    """(4.25 - 0.75) / (4.25 + 0.75) = 0.7 exactly: KITTI's test is overlap > 0.7."""
    gt, pred = shifted(dx)
    root = write(tmp_path, {f"{k:03d}": ([gt[k]], [pred[k]]) for k in range(80)})
    pairs = frames_of(root)
    car = protocol.summarize(pairs, PARAMS)[0]["dataset"]["kitti"]["Car"]
    for metric in ("bbox", "bev", "3d"):
        assert car[f"{metric}_easy"] == (1.0 if matched else 0.0), metric


def test_neighbours_and_dontcare(tmp_path):
    """A Car detection on a Van GT is neither a TP nor an FP (so precision stays 1); one
    inside a DontCare region is not a 2D FP but is a 3D FP."""
    car = line(bbox=(100.0, 100.0, 180.0, 160.0), loc=(0.0, 1.6, 20.0))
    van = line("Van", bbox=(300.0, 100.0, 380.0, 160.0), loc=(5.0, 1.6, 20.0))
    dc = "DontCare -1 -1 -10 500 100 600 200 -1 -1 -1 -1000 -1000 -1000 -10"
    frames = {f"{k:03d}": ([car, van, dc],
                           [car + " 0.9", van.replace("Van", "Car", 1) + " 0.8",
                            line(bbox=(510.0, 110.0, 590.0, 190.0), loc=(-5.0, 1.6, 30.0),
                                 score=0.95)]) for k in range(80)}
    root = write(tmp_path, frames)
    result = protocol.summarize(frames_of(root), PARAMS)[0]["dataset"]["kitti"]["Car"]
    assert result["bbox_easy"] == 1.0
    # in 3D the DontCare detection is an FP ranked first at every threshold: precision 1/2
    assert result["3d_easy"] == pytest.approx(0.5)


def test_rows_count_the_moderate_3d_matching(rpx, tmp_path):
    car = line(bbox=(100.0, 100.0, 180.0, 160.0), loc=(0.0, 1.6, 20.0))
    far = line(bbox=(300.0, 100.0, 380.0, 160.0), loc=(9.0, 1.6, 40.0))
    root = write(tmp_path, {"a": ([car, far], [car + " 0.9", line(loc=(20.0, 1.6, 9.0), score=0.4)]),
                            "b": ([], [])})
    report = kitti(rpx, root)
    a, b = report["rows"]
    assert (a["tp"], a["fp"], a["fn"], a["n_gt"]) == (1, 1, 1, 2)
    assert (b["tp"], b["fp"], b["fn"], b["f1"]) == (0, 0, 0, 1.0)
    assert report["dataset"]["pooled"]["tp"] == 1
    high = kitti(rpx, root, "--conf-threshold", "0.5")["rows"][0]
    assert (high["tp"], high["fp"], high["fn"]) == (1, 0, 1)


# --- against a plain loop ----------------------------------------------------------------------------


@pytest.mark.parametrize(("folder", "table", "points"), [
    (EDGES, "strict", 40), (EDGES, "loose", 11), (GOLDEN, "strict", 40), (GOLDEN, "strict", 11)])
def test_equals_a_plain_loop(folder, table, points):
    """On the first 40 edge frames and on the golden case (its expected.json too)."""
    pairs = frames_of(folder, 40)
    classes = list(protocol.CLASSES)
    ours = protocol.summarize(pairs, {**PARAMS, "class_names": classes, "kitti_iou": table,
                                      "recall_points": points})[0]["dataset"]["kitti"]
    thresholds = {name: {m: protocol.OVERLAPS[table][m][protocol.CLASSES.index(name)]
                         for m in ("bbox", "bev", "3d")} for name in classes}
    frames = [(kitti_loops.objects(p.gt), kitti_loops.objects(p.pred)) for p in pairs]
    loops = kitti_loops.benchmark(frames, classes, thresholds, points)
    for name in classes:
        for key, value in loops[name].items():
            mine = ours[name][key]
            if value != value:
                assert mine is None, (name, key)
            else:
                assert mine == pytest.approx(value, abs=1e-12), (name, key)
    if folder == GOLDEN and points == 40:
        golden = json.loads((GOLDEN / "expected.json").read_text())["dataset"]["kitti"]
        for name in protocol.DEFAULT_CLASSES:
            for key, value in loops[name].items():
                assert golden[name][key] == pytest.approx(value, abs=1e-12), (name, key)


# --- formats ---------------------------------------------------------------------------------------


def as_rpx(objects, prediction: bool) -> list[dict]:
    """KITTI objects as rpx compact boxes with the KITTI fields."""
    boxes = to_boxes3d(objects)
    keep = [i for i, name in enumerate(objects.label_names()) if name != "DontCare"]
    out = []
    for j, i in enumerate(keep):
        box = {"box": [*boxes.center[j].tolist(), boxes.size[j, 1], boxes.size[j, 0],
                       boxes.size[j, 2], float(boxes.yaw[j])],
               "label": objects.label_names()[i], "bbox_2d": objects.bbox[i].tolist(),
               "alpha": float(objects.alpha[i])}
        if prediction:
            box["score"] = min(max(float(objects.score[i]), 0.0), 1.0)
        else:
            box["truncated"] = float(objects.truncated[i])
            box["occluded"] = int(objects.occluded[i])
        out.append(box)
    return out


def test_rpx_boxes_with_kitti_fields_equal_the_label_files(rpx, tmp_path):
    """The same objects as KITTI predictions and as rpx JSON: the same APs (to rounding of
    the frame conversion), the formats recorded."""
    root = tmp_path / "json"
    (root / "pred").mkdir(parents=True)
    for path in sorted((GOLDEN / "pred").glob("*.txt")):
        objects = parse_kitti_labels(path.read_bytes(), str(path), prediction=True)
        (root / "pred" / f"{path.stem}.json").write_text(json.dumps(as_rpx(objects, True)))
    labels = rpx(["eval", "detection3d", "--pred-dir", GOLDEN / "pred", "--gt-dir", GOLDEN / "gt",
                  "--protocol", "kitti"]).json
    mixed = rpx(["eval", "detection3d", "--pred-dir", root / "pred", "--gt-dir", GOLDEN / "gt",
                 "--protocol", "kitti"]).json
    assert labels["params"]["pred_format"] == "kitti" and "pred_format" not in mixed["params"]
    assert mixed["params"]["gt_format"] == "kitti"
    for name, entry in labels["dataset"]["kitti"].items():
        if isinstance(entry, dict):
            for key, value in entry.items():
                assert mixed["dataset"]["kitti"][name][key] == pytest.approx(value, abs=1e-12)


def test_a_folder_of_both_formats_is_refused_naming_the_flag(rpx, tmp_path):
    root = write(tmp_path, car_frames(2))
    (root / "pred" / "000009.json").write_text("[]")
    run = rpx(["eval", "detection3d", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
               "--protocol", "kitti"])
    assert run.exit_code == 1
    assert "--pred-format kitti|rpx" in run.stderr or "--pred-format rpx|kitti" in run.stderr
    settled = rpx(["eval", "detection3d", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
                   "--protocol", "kitti", "--pred-format", "kitti"])
    assert settled.exit_code == 0, settled.stderr


def test_nuscenes_scores_kitti_labels_through_the_conversion(rpx):
    """The nuScenes protocol on KITTI files: GT and predictions as rpx boxes."""
    report = rpx(["eval", "detection3d", "--pred-dir", GOLDEN / "pred", "--gt-dir", GOLDEN / "gt"]).json
    assert report["params"]["gt_format"] == "kitti" and report["dataset"]["n_gt"] > 0
    assert "DontCare" not in report["dataset"]["classes"]


@pytest.mark.parametrize("args", [["--protocol", "kitti", "--dist-th", "1"],
                                  ["--protocol", "kitti", "--match", "iou3d"],
                                  ["--recall-points", "11"], ["--kitti-iou", "loose"],
                                  ["--protocol", "kitti", "--recall-points", "12"]])
def test_a_flag_of_another_protocol_is_a_usage_error(rpx, args):
    run = rpx(["eval", "detection3d", "--pred-dir", GOLDEN / "pred", "--gt-dir", GOLDEN / "gt", *args])
    assert run.exit_code == 2, run.stderr


def test_an_unknown_class_is_a_usage_error(rpx):
    run = rpx(["eval", "detection3d", "--pred-dir", GOLDEN / "pred", "--gt-dir", GOLDEN / "gt",
               "--protocol", "kitti", "--class-names", "Car,Tram"])
    assert run.exit_code == 2 and "Tram" in run.stderr


# --- invariants --------------------------------------------------------------------------------------


def test_jobs_and_shards_change_nothing(rpx, tmp_path):
    assert_jobs_and_shards_agree(
        rpx, f"eval detection3d --pred-dir {EDGES / 'pred'} --gt-dir {EDGES / 'gt'} "
             "--protocol kitti", tmp_path)


def test_frame_order_does_not_matter(rpx, tmp_path):
    """Renaming the frames (another stem order) leaves every AP as it is."""
    stems = sorted(p.stem for p in (GOLDEN / "gt").glob("*.txt"))
    order = np.random.default_rng(1).permutation(len(stems))
    for side in ("gt", "pred"):
        (tmp_path / side).mkdir()
        for new, old in zip(order, stems, strict=True):
            (tmp_path / side / f"f{new:03d}.txt").write_bytes((GOLDEN / side / f"{old}.txt").read_bytes())
    one = kitti(rpx, GOLDEN)["dataset"]["kitti"]
    two = kitti(rpx, tmp_path)["dataset"]["kitti"]
    assert one == two  # the similarity sums are exact (fsum): no bit depends on the order


def test_the_page_shows_the_ap_table_and_the_worst_frames(rpx, tmp_path):
    page = tmp_path / "page.html"
    run = rpx(["eval", "detection3d", "--pred-dir", GOLDEN / "pred", "--gt-dir", GOLDEN / "gt",
               "--protocol", "kitti", "--html", page, "-o", tmp_path / "r.json"])
    assert run.exit_code == 0, run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    frames = report["worst_frames"]["frames"]
    assert frames and all(len(f["gt"]["box"]) == len(f["gt"]["matched"]) for f in frames)
    assert sum(sum(f["pred"]["matched"]) for f in frames) <= sum(r["tp"] for r in report["rows"])
    html = page.read_text()
    assert 'data-name="benchmark-ap"' in html and "KITTI AP_R40 per class" in html
    assert 'data-row="mean"' in html and 'data-col="3d moderate"' in html


def test_submission_files_equal_the_label_folders(rpx, tmp_path):
    """The golden frames as the nuScenes submission layout (rpx boxes with the KITTI fields):
    the same APs as the label folders."""
    results = {}
    for side, prediction in (("gt", False), ("pred", True)):
        samples = {}
        for path in sorted((GOLDEN / side).glob("*.txt")):
            objects = parse_kitti_labels(path.read_bytes(), str(path), prediction=prediction)
            samples[path.stem] = as_rpx(objects, prediction)
        results[side] = tmp_path / f"{side}.json"
        results[side].write_text(json.dumps({"results": samples}))
    files = rpx(["eval", "detection3d", "--pred-file", results["pred"], "--gt-file", results["gt"],
                 "--protocol", "kitti"]).json
    labels = kitti(rpx, GOLDEN)
    for name in protocol.DEFAULT_CLASSES:
        for key, value in labels["dataset"]["kitti"][name].items():
            if key.startswith(("bev", "3d")):  # DontCare regions are not in the JSON: 2D differs
                assert files["dataset"]["kitti"][name][key] == pytest.approx(value, abs=1e-12)


def test_a_gt_box_without_the_kitti_fields_is_an_input_error(rpx, tmp_path):
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    box = {"box": [10.0, 0.0, 0.0, 4.0, 1.8, 1.5, 0.0], "label": "Car", "bbox_2d": [1, 2, 50, 60]}
    (tmp_path / "gt" / "a.json").write_text(json.dumps([box]))
    (tmp_path / "pred" / "a.json").write_text(json.dumps([{**box, "score": 0.5}]))
    run = rpx(["eval", "detection3d", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt",
               "--protocol", "kitti"])
    assert run.exit_code == 1 and "box 0: a GT box needs 'truncated'" in run.stderr
