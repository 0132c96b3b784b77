"""``--protocol kitti`` against ``kitti_object_eval_python`` (OpenPCDet / mmdet3d), to 1e-9:

- on frames generated on every difficulty and IoU edge (tests/fixtures/kitti/edges: the
  labels and the reference's numbers, both written by tools/kitti_reference_vectors.py from
  a local copy of the reference, which rpx does not ship): every class of the reference's
  table, AP_R11 and AP_R40, bbox / bev / 3d / aos at easy / moderate / hard, both overlap
  tables — through the CLI, as a user runs it;
- on the reference's own test (mmdet3d ``tests/test_evaluation/test_functional/
  test_kitti_eval.py``: one frame, its expected numbers). Its GT holds Car rows with sizes
  -1 (KITTI's DontCare convention on a Car), which rpx's reader refuses (a negative size is
  an input error); the frame is therefore given to the benchmark as arrays, the way the
  reference's test gives it.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rpx_cli.io.kitti_labels import KittiObjects
from rpx_cli.ops import kitti_eval as ke
from rpx_cli.tasks.detection3d import kitti as protocol

EDGES = Path(__file__).parent / "fixtures" / "kitti" / "edges"


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads((EDGES / "reference.json").read_text())["percent"]


@pytest.mark.parametrize(("table", "points"), [("strict", 40), ("strict", 11), ("loose", 40),
                                               ("loose", 11)])
def test_equals_the_reference_on_edge_frames(rpx, reference, table, points):
    report = rpx(["eval", "detection3d", "--pred-dir", EDGES / "pred", "--gt-dir", EDGES / "gt",
                  "--protocol", "kitti", "--class-names", ",".join(protocol.CLASSES),
                  "--kitti-iou", table, "--recall-points", str(points)]).json
    kitti = report["dataset"]["kitti"]
    checked = 0
    for name in protocol.CLASSES:
        for metric in protocol.METRICS:
            for level in protocol.LEVELS:
                expected = reference[f"{table}.R{points}.{name}.{metric}_{level}"]
                assert kitti[name][f"{metric}_{level}"] * 100 == pytest.approx(expected, abs=1e-9), \
                    (name, metric, level)
                checked += 1
    assert checked == 72
    # the frames do exercise the edges: some APs are neither 0 nor 1
    assert 0 < kitti["Car"]["3d_moderate"] < 1 and 0 < kitti["Pedestrian"]["bev_hard"] < 1


# --- the reference's own test --------------------------------------------------------------------


def mmdet3d_frame() -> SimpleNamespace:
    """The frame of mmdet3d's test_kitti_eval.py (its GT dimensions are l h w, the
    annotation dict's order; KittiObjects holds h w l)."""
    gt_names = ["Pedestrian", "Cyclist", "Car", "Car", "Car", "DontCare", "DontCare"]
    gt_bbox = [[674.9179, 165.48549, 693.23694, 193.42134], [676.21954, 165.70988, 691.63745, 193.83748],
               [389.4093, 182.48041, 421.49072, 202.13422], [232.0577, 186.16724, 301.94623, 217.4024],
               [758.6537, 172.98509, 816.32434, 212.76743], [532.37, 176.35, 542.68, 185.27],
               [559.62, 175.83, 575.4, 183.15]]
    gt_lhw = [[12.34, 2.85, 2.63], [3.69, 1.67, 1.87], [2.02, 1.86, 0.6]] + [[-1.0] * 3] * 4
    gt_loc = [[0.47, 1.49, 69.44], [-16.53, 2.39, 58.49], [4.59, 1.32, 45.84]] + [[-1000.0] * 3] * 4
    dt_names = ["Pedestrian", "Cyclist", "Car", "Car", "Car"]
    dt_lhw = [[1.4441837, 1.7450154, 0.53160036], [1.6501029, 1.7540325, 0.5162356],
              [3.9313498, 1.4899347, 1.5655756], [4.0111866, 1.5350999, 1.585221],
              [3.7337692, 1.5117968, 1.5515774]]
    dt_loc = [[4.6671643, 1.285098, 45.836895], [4.658241, 1.3088846, 45.85148],
              [-16.598526, 2.298814, 58.618088], [-18.629122, 2.2990575, 39.305355],
              [7.0964046, 1.5178275, 29.32426]]

    def objects(names, truncated, occluded, alpha, bbox, lhw, loc, ry, score=None):
        vocabulary = list(dict.fromkeys(names))
        lhw = np.array(lhw, np.float64)
        return KittiObjects(np.array([vocabulary.index(n) for n in names], np.int64), vocabulary,
                            np.array(truncated, np.float64), np.array(occluded, np.int64),
                            np.array(alpha, np.float64), np.array(bbox, np.float64),
                            lhw[:, [1, 2, 0]], np.array(loc, np.float64), np.array(ry, np.float64),
                            None if score is None else np.array(score, np.float64))

    gt = objects(gt_names, [0.0, 0.0, 0.0, -1, -1, -1, -1], [0, 0, 3, -1, -1, -1, -1],
                 [-1.57, 1.85, -1.65, -10.0, -10.0, -10.0, -10.0], gt_bbox, gt_lhw, gt_loc,
                 [-1.56, 1.57, -1.55, -10.0, -10.0, -10.0, -10.0])
    det = objects(dt_names, [0.0] * 5, [0] * 5,
                  [1.0744612, 1.2775835, 1.82563, 2.1145396, -1.7676563], gt_bbox[:5], dt_lhw,
                  dt_loc, [1.174933, 1.3778262, 1.550529, 1.6742425, -1.5330327],
                  [0.18151495, 0.57920843, 0.27795696, 0.23100418, 0.21541929])
    return SimpleNamespace(gt=gt, pred=det)


# mmdet3d's expected numbers (percent) for classes [Pedestrian, Cyclist, Car]
# (current_classes [1, 2, 0]: its class 1 is Pedestrian, 2 Cyclist, 0 Car), difficulty,
# overlap table (strict, loose)
EXPECTED = {
    ("bbox", 11): [[[0, 0], [9.09090909] * 2, [9.09090909] * 2]] * 3,
    ("bbox", 40): [[[0, 0], [0, 0], [0, 0]]] * 2 + [[[0, 0], [2.5, 2.5], [2.5, 2.5]]],
    ("bev", 11): [[[0, 0]] * 3] * 3, ("bev", 40): [[[0, 0]] * 3] * 3,
    ("3d", 11): [[[0, 0]] * 3] * 3, ("3d", 40): [[[0, 0]] * 3] * 3,
    ("aos", 11): [[[0, 0], [0.55020816] * 2, [0.55020816] * 2],
                  [[0, 0], [8.36633862] * 2, [8.36633862] * 2],
                  [[0, 0], [8.63476893] * 2, [8.63476893] * 2]],
    ("aos", 40): [[[0, 0]] * 3] * 2 + [[[0, 0], [1.58140643] * 2, [1.58140643] * 2]],
}


@pytest.mark.parametrize("points", [11, 40])
def test_equals_mmdet3d_test_do_eval(points):
    frame = mmdet3d_frame()
    classes = ["Pedestrian", "Cyclist", "Car"]
    for t, table in enumerate(("strict", "loose")):
        kitti = protocol.summarize([frame], {"class_names": classes, "kitti_iou": table,
                                             "recall_points": points,
                                             "conf_threshold": 0.0})[0]["dataset"]["kitti"]
        for (metric, p), expected in EXPECTED.items():
            if p != points:
                continue
            for j, name in enumerate(classes):
                for d, level in enumerate(protocol.LEVELS):
                    assert kitti[name][f"{metric}_{level}"] * 100 == pytest.approx(
                        expected[j][d][t], abs=1e-6), (metric, name, level, table)
        # test_kitti_eval: the 2D moderate and hard means over the three classes
        if table == "strict":
            mean = kitti["mAP_bbox_moderate"] * 100
            assert mean == pytest.approx(9.090909090909092 if points == 11 else 0.8333333333333334,
                                         abs=1e-9)


def test_equals_mmdet3d_test_eval_class():
    """The sums of the 2D precision, recall and orientation curves over the three classes,
    three difficulties and both tables: 16, 16 and 10.252829201850309."""
    frame = mmdet3d_frame()
    vocabulary = {name.lower(): k for k, name in enumerate(protocol.CLASSES)}
    gt, _ = protocol._table([frame.gt], vocabulary, scores=False)
    det, _ = protocol._table([frame.pred], vocabulary, scores=True)
    from rpx_cli.ops import kitti_overlaps as ko

    pairs = ko.bbox_overlaps(det.bbox, det.frame, gt.bbox, gt.frame, 1)
    dc = np.flatnonzero(gt.dontcare)
    cover = ko.dontcare_cover(det.bbox, det.frame, gt.bbox[dc], gt.frame[dc], 1)
    sums = np.zeros(3)
    for name in ("Pedestrian", "Cyclist", "Car"):
        code = vocabulary[name.lower()]
        neighbour = vocabulary[protocol.NEIGHBOURS[name].lower()] if name in protocol.NEIGHBOURS else -1
        for level in ke.DIFFICULTIES:
            for table in ("strict", "loose"):
                th = protocol.OVERLAPS[table]["bbox"][protocol.CLASSES.index(name)]
                gi, di = ke.ignored_gt(gt, code, neighbour, level), ke.ignored_det(det, code, level)
                c = ke.candidates(pairs, th, gi, di, gt.frame)
                thresholds = ke.sample_thresholds(ke.tp_scores(c, gi, di, det.score), int((gi == 0).sum()))
                covered = np.zeros(det.frame.size, bool)
                covered[cover.det[cover.overlap > th]] = True
                curve = ke.curve(ke.counts(c, gt, det, gi, di, thresholds, covered))
                sums += [curve.recall.sum(), curve.precision.sum(), curve.aos.sum()]
    assert sums.tolist() == pytest.approx([16, 16, 10.252829201850309], abs=1e-9)
