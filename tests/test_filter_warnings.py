"""Filters that silently leave nothing to score (issue 30, item 1): a filter that removes
every GT object of a class or of the run is a warning naming the filter and the counts
before and after (stderr and the report's ``warnings``); 3D boxes clearly in a global (map)
frame under ``--class-range``/``--range`` are an input error saying how to fix them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_detection3d import cbox, write

from rpx_cli.api import evaluate_dirs


def _street(tmp_path: Path) -> str:
    """A small ego-frame scene: two cars near the ego, one pedestrian at 30 m."""
    return write(tmp_path, {
        "a": ([cbox("car", 10, 0), cbox("pedestrian", 30, 0, lwh=(0.7, 0.7, 1.8))],
              [cbox("car", 10.2, 0, score=0.9), cbox("pedestrian", 30, 0.1, score=0.4,
                                                     lwh=(0.7, 0.7, 1.8))]),
        "b": ([cbox("car", 0, 12)], [cbox("car", 0, 12.3, score=0.8)]),
    })


def test_a_class_cap_that_removes_every_box_of_a_class_warns_with_counts(rpx, tmp_path) -> None:
    run = rpx(_street(tmp_path) + " --class-range pedestrian=20")
    assert run.exit_code == 0, run.stderr
    line = "--class-range removed every GT box of pedestrian=20 (1 before, 0 after)"
    assert line in run.json["warnings"]
    assert f"warning: {line}" in run.stderr
    # a cap that keeps the class says nothing
    quiet = rpx(_street(tmp_path / "q") + " --class-range pedestrian=40")
    assert "warnings" not in quiet.json and "warning" not in quiet.stderr


def test_caps_that_empty_the_run_say_so(rpx, tmp_path) -> None:
    run = rpx(_street(tmp_path) + " --class-range car=5 --class-range pedestrian=5")
    assert run.exit_code == 0
    warnings = run.json["warnings"]
    assert "--class-range removed every GT box of car=5 (2 before, 0 after), pedestrian=5 " \
           "(1 before, 0 after)" in warnings
    assert any(w.startswith("--class-range left no GT box in the run (3 before, 0 after)")
               for w in warnings)
    assert run.json["dataset"]["n_gt"] == 0


def test_the_point_filter_is_named_when_it_empties_a_class(rpx, tmp_path) -> None:
    cmd = write(tmp_path, {"a": ([cbox("car", 10, 0), cbox("barrier", 5, 5, num_pts=0)],
                                 [cbox("car", 10, 0, score=0.9)])})
    run = rpx(cmd)
    assert "--min-pts 1 (the point filter) removed every GT box of barrier (1 before, 0 after)" \
        in run.json["warnings"]
    # autoware keeps boxes without points: nothing to say
    assert "warnings" not in rpx(cmd + " --protocol autoware").json


def test_an_empty_range_band_and_a_conf_threshold_above_every_score_warn(rpx, tmp_path) -> None:
    run = rpx(_street(tmp_path) + " --range 0:20 --range 100: --conf-threshold 0.95")
    warnings = run.json["warnings"]
    assert "--range [100, inf) m holds no GT box (of the 3 the other filters keep): its " \
           "figures are 0 or null" in warnings
    assert not any("[0, 20)" in w for w in warnings)
    assert any(w.startswith("--conf-threshold 0.95 removed every prediction from the rows "
                            "(3 before, 0 after)") for w in warnings)


def test_warnings_survive_shards_and_merge(rpx, tmp_path) -> None:
    cmd = _street(tmp_path) + " --class-range pedestrian=20"
    single = rpx(cmd).json["warnings"]
    parts = []
    for k in (1, 2):
        out = tmp_path / f"part{k}.json"
        assert rpx(f"{cmd} --shard {k}/2 -o {out}").exit_code == 0
        parts.append(str(out))
    merged = rpx(f"merge {' '.join(parts)} -o {tmp_path / 'merged.json'}")
    assert merged.exit_code == 0
    assert json.loads((tmp_path / "merged.json").read_text())["warnings"] == single
    assert f"warning: {single[0]}" in merged.stderr


def test_the_api_report_carries_the_warnings(tmp_path) -> None:
    _street(tmp_path)
    report = evaluate_dirs("detection3d", tmp_path / "pred", tmp_path / "gt",
                           class_range=["pedestrian=20"])
    assert report["warnings"] == ["--class-range removed every GT box of pedestrian=20 "
                                  "(1 before, 0 after)"]


# --- global (map) frame boxes ------------------------------------------------------------


def _global(tmp_path: Path, *, ego: bool) -> str:
    """nuScenes' real form: centres in the map frame (x, y ~ 400-2000 m); with ``ego`` each
    box also carries its offset from the ego at (1000, 800)."""
    def box(label, x, y, score=None):
        out = {"translation": [1000.0 + x, 800.0 + y, 1.0], "size": [1.9, 4.5, 1.6],
               "rotation": [1.0, 0.0, 0.0, 0.0], "detection_name": label}
        if score is not None:
            out["detection_score"] = score
        if ego:
            out["ego_translation"] = [x, y, 1.0]
        return out
    return write(tmp_path, {"s1": ([box("car", 10, 0)], [box("car", 10.1, 0, 0.9)]),
                            "s2": ([box("car", 0, 60)], [box("car", 0, 60.2, 0.8)])})


@pytest.mark.parametrize("flags", ["--class-range car=50", "--range 0:50"])
def test_global_frame_boxes_with_caps_or_ranges_are_an_input_error(rpx, tmp_path, flags) -> None:
    run = rpx(f"{_global(tmp_path, ego=False)} {flags}")
    assert run.exit_code == 1 and run.stdout == ""
    flag = flags.split()[0]
    assert "look like global (map) coordinates" in run.stderr
    assert f"so {flag} (measured from the ego) would drop every box" in run.stderr
    assert "'ego_translation'" in run.stderr and "examples/nuscenes_to_rpx.py" in run.stderr
    assert str(tmp_path / "gt" / "s1.json") in run.stderr
    # without caps or ranges, global centres match as well as any (distances between boxes)
    plain = rpx(_global(tmp_path / "plain", ego=False))
    assert plain.exit_code == 0 and plain.json["dataset"]["n_gt"] == 2


def test_global_frame_boxes_with_ego_translation_are_capped_from_the_ego(rpx, tmp_path) -> None:
    run = rpx(f"{_global(tmp_path, ego=True)} --class-range car=50")
    assert run.exit_code == 0, run.stderr
    data = run.json["dataset"]
    assert data["n_gt"] == 1 and data["n_pred"] == 1  # the car 60 m away is capped, not both


def test_a_submission_file_in_the_global_frame_is_refused_naming_it(rpx, tmp_path) -> None:
    def box(x, score=None):
        out = {"translation": [900.0 + x, 1200.0, 1.0], "size": [1.9, 4.5, 1.6],
               "rotation": [1.0, 0.0, 0.0, 0.0], "detection_name": "car"}
        if score is not None:
            out["detection_score"] = score
        return out
    gt = {"results": {"t1": [box(0)], "t2": [box(5)]}}
    # GT exported with ego_translation, predictions as a model writes them (map frame)
    for boxes in gt["results"].values():
        boxes[0]["ego_translation"] = [10.0, 0.0, 1.0]
    pred = {"results": {"t1": [box(0, 0.9)], "t2": [box(5, 0.8)]}}
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "pred.json").write_text(json.dumps(pred))
    run = rpx(f"eval detection3d --gt-file {tmp_path / 'gt.json'} --pred-file "
              f"{tmp_path / 'pred.json'} --class-range car=50")
    assert run.exit_code == 1
    assert run.stderr.startswith(f"rpx: {tmp_path / 'pred.json'}: the predicted boxes look like "
                                 "global (map) coordinates")


# --- detection ------------------------------------------------------------------------------


def test_detection_conf_threshold_above_every_score_warns(rpx) -> None:
    shelf = "eval detection --pred-dir fixtures/detection/shelf/pred --gt-dir fixtures/detection/shelf/gt"
    everything = sum(row["n_pred"] for row in rpx(shelf).json["rows"])
    run = rpx(f"{shelf} --conf-threshold 1")
    assert run.exit_code == 0
    assert run.json["warnings"] == [f"--conf-threshold 1 removed every detection ({everything} "
                                    "before, 0 after): rows, pooled and confusion see none "
                                    "(COCO AP uses every score)"]
    assert "warnings" not in rpx(shelf).json


def test_detection_class_map_that_empties_gt_files_warns(rpx, tmp_path) -> None:
    gt = tmp_path / "gt"
    pred = tmp_path / "pred"
    gt.mkdir()
    pred.mkdir()
    (gt / "a.json").write_text(json.dumps([{"bbox": [0, 0, 10, 10], "label": "cup"}]))
    (pred / "a.json").write_text(json.dumps([{"bbox": [0, 0, 10, 10], "label": "cup", "score": 0.9}]))
    (tmp_path / "map.json").write_text(json.dumps({"cup": None}))
    run = rpx(f"eval detection --pred-dir {pred} --gt-dir {gt} --class-map {tmp_path / 'map.json'}")
    assert run.exit_code == 0
    assert f"warning: --class-map removed every GT box of 1 file(s) (e.g. {gt / 'a.json'})" in run.stderr


# --- range bands and label filters of the dense tasks -----------------------------------------


def test_a_depth_band_without_a_valid_pixel_warns(rpx, tmp_path) -> None:
    """GT between 1 and 5 m: the band [50, 80) m holds none of the 12 valid pixels."""
    import numpy as np

    for side in ("pred", "gt"):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "a.npy", np.linspace(1, 5, 12, dtype=np.float32).reshape(3, 4))
    cmd = f"eval depth --pred-dir {tmp_path / 'pred'} --gt-dir {tmp_path / 'gt'}"
    run = rpx(cmd + " --range 0:10 --range 50:80")
    assert run.exit_code == 0, run.stderr
    line = ("--range [50, 80) m holds no valid GT pixel in any frame (of the 12 the other "
            "filters keep): its metrics are null")
    assert run.json["warnings"] == [line] and f"warning: {line}" in run.stderr
    assert run.json["dataset"]["absrel_50m_80m"] is None
    assert "warnings" not in rpx(cmd + " --range 0:10").json


def test_a_segmentation3d_band_without_a_scored_point_warns(rpx, tmp_path) -> None:
    """Points within 5 m: the band [50, inf) m holds none."""
    import numpy as np
    from test_segmentation3d import write_scans

    points = np.column_stack([np.linspace(1, 5, 6), np.zeros(6), np.zeros(6)])
    root = write_scans(tmp_path, {"a": ([1, 1, 2, 2, 3, 3], [1, 2, 2, 2, 3, 1], points)})
    args = ["eval", "segmentation3d", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
            "--points-dir", root / "points"]
    run = rpx([*args, "--range", "0:20", "--range", "50:"])
    assert run.exit_code == 0, run.stderr
    assert run.json["warnings"] == [
        "--range [50, inf) m holds no scored GT point in any scan (of the 6 the other filters "
        "keep): its figures are null"]
    assert "warnings" not in rpx([*args, "--range", "0:20"]).json


def test_a_label_map_that_leaves_no_scored_point_warns(rpx, tmp_path) -> None:
    from test_segmentation3d import write_scans

    root = write_scans(tmp_path, {"a": ([1, 1, 2], [1, 2, 2], None)})
    (tmp_path / "map.json").write_text(json.dumps({"1": 0, "2": 0}))
    run = rpx(["eval", "segmentation3d", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
               "--label-map", tmp_path / "map.json", "--ignore-index", "0"])
    assert run.exit_code == 0, run.stderr
    assert run.json["warnings"] == [
        "no GT point of the 3 is of a scored class (--ignore-index, --label-map, "
        "--num-classes): every figure is null"]
