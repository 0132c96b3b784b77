"""``--protocol voc07|voc|dota``: hand-computed cases (formulas), the devkit's ``voc_eval``
and DOTA_devkit's task 1 (tests/voc_reference.py) on generated data with difficult
objects, duplicates and cross-image score ties, and the invariants (--jobs, shards)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import assert_jobs_and_shards_agree, write_json_pair
from tests.voc_reference import detectron2_figures, dota_eval

NAMES = ["bird", "car", "cat", "dog"]


# --- hand-computed ------------------------------------------------------------------------


def _pair(root: Path, stem: str, gt, pred) -> None:
    write_json_pair(root, stem, gt, pred)


def _run(rpx, root: Path, protocol: str, *extra: str) -> dict:
    run = rpx(["eval", "detection", "--pred-dir", root / "pred", "--gt-dir", root / "gt",
               "--protocol", protocol, *extra])
    assert run.exit_code == 0, run.stderr
    return run.json["dataset"][protocol]


def test_duplicate_and_strict_threshold(rpx, tmp_path):
    """Two GT, three detections: the best (IoU 1 on A) is a TP; the second overlaps A best
    (IoU 0.8) though B is free (IoU 0.6): the devkit calls it a duplicate, a FP (COCO would
    match B); the third sits on B at IoU exactly 0.5: not > 0.5, a FP (COCO: >= 0.5, a TP)."""
    gt = [{"bbox": [0, 0, 10, 10], "label": "a"}, {"bbox": [4, 0, 14, 10], "label": "a"}]
    pred = [{"bbox": [0, 0, 10, 10], "label": "a", "score": 0.9},
            {"bbox": [2, 0, 12, 10], "label": "a", "score": 0.8},
            {"bbox": [4, 0, 14, 5], "label": "a", "score": 0.7}]
    _pair(tmp_path, "s", gt, pred)
    voc07 = _run(rpx, tmp_path, "voc07")
    # rec 1/2, 1/2, 1/2; prec 1, 1/2, 1/3: 11-point: levels 0..0.5 reach precision 1 (6 of
    # them; 0.30000000000000004 too), none of 0.6..1
    assert voc07["per_class"]["a"]["AP"] == pytest.approx(6 / 11, abs=1e-12)
    voc = _run(rpx, tmp_path, "voc")
    assert voc["per_class"]["a"]["AP"] == pytest.approx(0.5, abs=1e-12)  # 1/2 recall at 1
    assert voc["mAP"] == voc["AP50"] == voc["per_class"]["a"]["AP"]
    assert voc["per_class"]["a"]["n_gt"] == 2 and voc["per_class"]["a"]["n_pred"] == 3


def test_difficult_is_neither_and_never_missed(rpx, tmp_path):
    """A detection on a difficult GT changes nothing; the difficult GT is not in npos."""
    gt = [{"bbox": [0, 0, 10, 10], "label": "a"},
          {"bbox": [20, 20, 30, 30], "label": "a", "ignore": 1}]
    pred = [{"bbox": [20, 20, 30, 30], "label": "a", "score": 0.95},
            {"bbox": [0, 0, 10, 10], "label": "a", "score": 0.9},
            {"bbox": [20, 20, 30, 30], "label": "a", "score": 0.5},
            {"bbox": [50, 50, 60, 60], "label": "a", "score": 0.4}]
    _pair(tmp_path, "s", gt, pred)
    out = _run(rpx, tmp_path, "voc")
    cls = out["per_class"]["a"]
    assert (cls["n_gt"], cls["n_pred"], cls["n_ignored"]) == (1, 4, 2)
    assert cls["AP"] == pytest.approx(1.0)  # the TP comes first among the counted ones
    assert out["ignored"]["gt"] == 1 and out["ignored"]["pred"] == 2


def test_class_without_gt_is_null_and_left_out(rpx, tmp_path):
    gt = [{"bbox": [0, 0, 10, 10], "label": "a"}]
    pred = [{"bbox": [0, 0, 10, 10], "label": "a", "score": 0.9},
            {"bbox": [0, 0, 10, 10], "label": "b", "score": 0.8}]
    _pair(tmp_path, "s", gt, pred)
    out = _run(rpx, tmp_path, "voc07")
    assert out["per_class"]["b"]["AP"] is None and "reason" in out["per_class"]["b"]
    assert out["mAP"] == pytest.approx(1.0)


def test_perfect_predictions_score_one(rpx, tmp_path):
    gt = [{"bbox": [0, 0, 10, 10], "label": "a"}, {"bbox": [30, 0, 40, 10], "label": "b"}]
    pred = [dict(obj, score=0.5) for obj in gt]
    _pair(tmp_path, "s", gt, pred)
    for protocol in ("voc07", "voc"):
        out = _run(rpx, tmp_path, protocol, "--require", f"dataset.{protocol}.mAP<=1")
        # exactly 1: the devkit's running sum of eleven 1/11 is 1.0000000000000002
        assert out["mAP"] == 1.0 and out["mAP_coco_style"] == 1.0
        assert all(entry["AP"] == 1.0 for entry in out["per_class"].values())


def test_protocol_view_replaces_coco_by_default(rpx, tmp_path):
    _pair(tmp_path, "s", [{"bbox": [0, 0, 10, 10], "label": "a"}],
          [{"bbox": [0, 0, 10, 10], "label": "a", "score": 0.5}])
    run = rpx(["eval", "detection", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt",
               "--protocol", "voc07"])
    assert "voc07" in run.json["dataset"] and "coco" not in run.json["dataset"]
    assert run.json["params"]["skipped_metrics"] == ["coco", "errors"]
    both = rpx(["eval", "detection", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt",
                "--protocol", "voc07", "--metrics", "voc07,coco"]).json
    assert both["dataset"]["coco"]["AP50"] == pytest.approx(1.0)
    refused = rpx(["eval", "detection", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt",
                   "--protocol", "voc07", "--metrics", "dota"])
    assert refused.exit_code == 2 and "Traceback" not in refused.stderr
    boxes_only = rpx(["eval", "detection", "--pred-dir", tmp_path / "pred", "--gt-dir",
                      tmp_path / "gt", "--protocol", "dota"])
    assert boxes_only.exit_code == 2 and "--geometry polygon" in boxes_only.stderr


# --- against the devkit ---------------------------------------------------------------------


def _voc_dataset(seed: int, n: int = 40, *, decimals: int = 1):
    """Images with integer VOC boxes (1-based, inclusive), a few difficult; detections
    jittered around GT (some twice: duplicates), false positives, scores on a coarse grid
    (ties within and across images)."""
    rng = np.random.default_rng(seed)
    images = []
    for i in range(n):
        gt, pred = [], []
        for _ in range(int(rng.integers(0, 6))):
            x1, y1 = (int(v) for v in rng.integers(1, 300, 2))
            w, h = (int(v) for v in rng.integers(8, 120, 2))
            gt.append({"name": NAMES[int(rng.integers(0, 4))], "difficult": int(rng.random() < 0.15),
                       "bbox": [x1, y1, x1 + w, y1 + h]})
        for obj in gt:
            for _ in range(int(rng.choice([0, 1, 1, 2, 3]))):
                jitter = rng.normal(0, 6, 4)
                x1, y1, x2, y2 = (np.array(obj["bbox"], float) + jitter).round(decimals)
                if x2 <= x1 or y2 <= y1:
                    continue
                name = obj["name"] if rng.random() < 0.9 else NAMES[int(rng.integers(0, 4))]
                pred.append((name, round(float(rng.integers(1, 10)) / 10, 3), [x1, y1, x2, y2]))
        for _ in range(int(rng.integers(0, 3))):
            x1, y1 = rng.uniform(1, 300, 2).round(decimals)
            w, h = rng.uniform(8, 100, 2).round(decimals)
            pred.append((NAMES[int(rng.integers(0, 4))], round(float(rng.random()), 3),
                         [x1, y1, x1 + w, y1 + h]))
        images.append((f"img{i:03d}", gt, pred))
    return images


def _num(value: float) -> str:
    return repr(float(value)) if value != int(value) else str(int(value))


def _write_voc(images, root: Path) -> None:
    for side in ("gt", "pred"):
        (root / side).mkdir(parents=True, exist_ok=True)
    for stem, gt, pred in images:
        for side, objects in (("gt", [(o["name"], None, o["bbox"], o["difficult"]) for o in gt]),
                              ("pred", [(name, score, box, 0) for name, score, box in pred])):
            parts = ["<annotation><size><width>500</width><height>500</height></size>"]
            for name, score, (x1, y1, x2, y2), difficult in objects:
                tag = "" if score is None else f"<score>{_num(score)}</score>"
                parts.append(f"<object><name>{name}</name><difficult>{difficult}</difficult>{tag}"
                             f"<bndbox><xmin>{_num(x1)}</xmin><ymin>{_num(y1)}</ymin>"
                             f"<xmax>{_num(x2)}</xmax><ymax>{_num(y2)}</ymax></bndbox></object>")
            parts.append("</annotation>\n")
            (root / side / f"{stem}.xml").write_text("".join(parts))


def _reference_inputs(images):
    recs = {stem: gt for stem, gt, _ in images}
    lines: dict[str, list[str]] = {}
    for stem, _, pred in images:  # as detectron2 writes them: image by image
        for name, score, box in pred:
            lines.setdefault(name, []).append(" ".join([stem, _num(score), *map(_num, box)]))
    return recs, lines


@pytest.mark.parametrize("seed", [0, 1])
def test_voc_equals_the_devkit(rpx, tmp_path, seed):
    images = _voc_dataset(seed)
    _write_voc(images, tmp_path)
    recs, lines = _reference_inputs(images)
    stems = [stem for stem, _, _ in images]
    for protocol, eleven in (("voc07", True), ("voc", False)):
        got = _run(rpx, tmp_path, protocol)
        want = detectron2_figures(lines, recs, stems, NAMES, eleven)
        assert got["mAP"] == pytest.approx(want["AP50"], abs=1e-9)
        assert got["AP75"] == pytest.approx(want["AP75"], abs=1e-9)
        assert got["mAP_coco_style"] == pytest.approx(want["AP"], abs=1e-9)
        for name in NAMES:
            assert got["per_class"][name]["AP"] == pytest.approx(want["per_class50"][name], abs=1e-9)
            assert got["per_class"][name]["AP75"] == pytest.approx(want["per_class75"][name], abs=1e-9)


def test_voc_jobs_and_shards_change_nothing(rpx, tmp_path):
    _write_voc(_voc_dataset(3, n=24), tmp_path)
    assert_jobs_and_shards_agree(rpx, f"eval detection --pred-dir {tmp_path / 'pred'} --gt-dir "
                                      f"{tmp_path / 'gt'} --protocol voc", tmp_path)


def _quad(cx, cy, w, h, angle):
    t = np.radians(angle)
    u, v = np.array([np.cos(t), -np.sin(t)]), np.array([np.sin(t), np.cos(t)])
    corners = [(-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2)]
    return [float(c) for a, b in corners for c in np.array([cx, cy]) + a * u + b * v]


def _dota_dataset(seed: int, n: int = 24):
    rng = np.random.default_rng(seed)
    images = []
    for i in range(n):
        gt, pred = [], []
        for _ in range(int(rng.integers(0, 5))):
            cx, cy = rng.uniform(50, 450, 2)
            w, h = rng.uniform(10, 80, 2)
            angle = float(rng.choice([0.0, 15.0, 30.0, 45.0, 80.0]))
            gt.append({"name": NAMES[int(rng.integers(0, 4))], "difficult": int(rng.random() < 0.15),
                       "bbox": _quad(cx, cy, w, h, angle), "rect": (cx, cy, w, h, angle)})
        for obj in gt:
            cx, cy, w, h, angle = obj["rect"]
            for _ in range(int(rng.choice([0, 1, 1, 2]))):
                shift = rng.normal(0, 3, 2)
                quad = _quad(cx + shift[0], cy + shift[1], w * rng.uniform(0.8, 1.2),
                             h * rng.uniform(0.8, 1.2), angle + rng.normal(0, 5))
                pred.append((obj["name"], round(float(rng.integers(1, 10)) / 10, 3), quad))
        images.append((f"img{i:03d}", gt, pred))
    return images


def _write_dota(images, root: Path) -> None:
    for side in ("gt", "pred"):
        (root / side).mkdir(parents=True, exist_ok=True)
    for stem, gt, pred in images:
        (root / "gt" / f"{stem}.txt").write_text("".join(
            " ".join([*map(repr, o["bbox"]), o["name"], str(o["difficult"])]) + "\n" for o in gt))
        (root / "pred" / f"{stem}.txt").write_text("".join(
            " ".join([*map(repr, quad), name, repr(score)]) + "\n" for name, score, quad in pred))


@pytest.mark.parametrize("geometry", ["polygon", "rotated"])
def test_dota_equals_the_devkit(rpx, tmp_path, geometry):
    pytest.importorskip("shapely")
    images = _dota_dataset(5)
    _write_dota(images, tmp_path)
    recs = {stem: [{k: o[k] for k in ("name", "difficult", "bbox")} for o in gt]
            for stem, gt, _ in images}
    lines: dict[str, list[str]] = {}
    for stem, _, pred in images:
        for name, score, quad in pred:
            lines.setdefault(name, []).append(" ".join([stem, repr(score), *map(repr, quad)]))
    got = _run(rpx, tmp_path, "dota", "--geometry", geometry)
    stems = [stem for stem, _, _ in images]
    want = {name: dota_eval(lines.get(name, []), recs, stems, name)[2] for name in NAMES}
    for name in NAMES:
        assert got["per_class"][name]["AP"] == pytest.approx(want[name], abs=1e-9), name
    assert got["mAP"] == pytest.approx(np.mean(list(want.values())), abs=1e-9)
    assert "mAP_coco_style" not in got


def test_voc_coordinates_reproduce_the_plus_one(rpx, tmp_path):
    """The same objects as VOC XML and as pixel boxes ``[xmin − 1, ymin − 1, xmax, ymax]``
    in rpx JSON give one report (the "+1" IoU is the conversion)."""
    images = _voc_dataset(7, n=10)
    _write_voc(images, tmp_path / "voc")
    for stem, gt, pred in images:
        write_json_pair(tmp_path / "rpx", stem,
                        [{"bbox": [o["bbox"][0] - 1, o["bbox"][1] - 1, *o["bbox"][2:]],
                          "label": o["name"], **({"ignore": 1} if o["difficult"] else {})} for o in gt],
                        [{"bbox": [b[0] - 1, b[1] - 1, b[2], b[3]], "label": n, "score": s}
                         for n, s, b in pred])
    a = _run(rpx, tmp_path / "voc", "voc07")
    b = _run(rpx, tmp_path / "rpx", "voc07")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) or \
        all(a["per_class"][n]["AP"] == pytest.approx(b["per_class"][n]["AP"], abs=1e-12) for n in NAMES)


def test_headline_and_evaluator_follow_the_protocol(rpx, tmp_path):
    """The summary line and the page's cards lead with the protocol's figures; the
    Evaluator's merged states give the file run's numbers."""
    from rpx_cli import Evaluator
    from rpx_cli.report.declared import headline

    gt = [{"bbox": [0, 0, 10, 10], "label": "a"}, {"bbox": [20, 0, 30, 10], "label": "a"}]
    preds = [[{"bbox": [0, 0, 10, 10], "label": "a", "score": 0.9}],
             [{"bbox": [0, 0, 10, 10], "label": "a", "score": 0.8}]]
    for i, pred in enumerate(preds):
        _pair(tmp_path, f"s{i}", gt[i:i + 1], pred)
    run = rpx(["eval", "detection", "--pred-dir", tmp_path / "pred", "--gt-dir", tmp_path / "gt",
               "--protocol", "voc07"])
    assert headline(run.json)[:2] == ("dataset.voc07.mAP", "dataset.voc07.mAP_coco_style")
    assert "dataset.voc07.mAP" in run.stderr
    states = []
    for i, pred in enumerate(preds):
        ev = Evaluator("detection", protocol="voc07")
        ev.update(f"s{i}", pred, gt[i:i + 1])
        states.append(ev.state())
    report = Evaluator.merged(states[::-1]).report()
    assert report["dataset"]["voc07"] == run.json["dataset"]["voc07"]
    # one TP (0.9) then one FP (0.8) of 2 GT: recall 1/2 at precision 1: 6 of 11 levels
    assert report["dataset"]["voc07"]["mAP"] == pytest.approx(6 / 11)
