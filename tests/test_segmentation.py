"""``rpx eval segmentation``: hand-computed cases, a per-class loop reference, invariants."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import dirs, without_provenance, write_npy, write_png
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rpx_cli.ops.confusion import confusion_scores, frame_confusion
from rpx_cli.tasks.segmentation import frame_scores


def write_pair(root: Path, stem: str, pred, gt, writer=write_png) -> None:
    suffix = ".png" if writer is write_png else ".npy"
    dtype = np.uint8 if writer is write_png else np.int64
    writer(root / "pred" / f"{stem}{suffix}", np.asarray(pred, dtype))
    writer(root / "gt" / f"{stem}{suffix}", np.asarray(gt, dtype))


# --- a reference: loops over classes, straight from the definitions ----------------------


def reference(preds, gts, ignore=(-1,), classes=None):
    """Pooled per-class figures and RPX per-frame mIoU, one class at a time."""
    preds = [np.asarray(p).ravel().astype(np.int64) for p in preds]
    gts = [np.asarray(g).ravel().astype(np.int64) for g in gts]
    keep = [~np.isin(g, ignore) for g in gts]
    if classes is None:
        classes = sorted({int(v) for g, k in zip(gts, keep, strict=True) for v in g[k]}
                         | {int(v) for p, k in zip(preds, keep, strict=True) for v in p[k] if v >= 0})
    per_class, frames = {}, []
    for p, g, k in zip(preds, gts, keep, strict=True):
        p, g = p[k], g[k]
        ious = []
        for c in sorted(set(g.tolist())):
            tp = np.sum((g == c) & (p == c))
            ious.append(tp / np.sum((g == c) | (p == c)))
        frames.append((np.mean(ious) if ious else None, np.mean(p == g) if g.size else None))
    p = np.concatenate([p[k] for p, k in zip(preds, keep, strict=True)])
    g = np.concatenate([g[k] for g, k in zip(gts, keep, strict=True)])
    for c in classes:
        tp, fp, fn = np.sum((g == c) & (p == c)), np.sum((g != c) & (p == c)), np.sum((g == c) & (p != c))
        if tp + fn == 0:
            continue
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[c] = {"iou": tp / (tp + fp + fn), "precision": precision, "recall": recall,
                        "f1": f1, "support": int(tp + fn)}
    support = np.array([v["support"] for v in per_class.values()], float)
    pooled = {
        "miou": np.mean([v["iou"] for v in per_class.values()]),
        "fwiou": np.sum(support / support.sum() * [v["iou"] for v in per_class.values()]),
        "acc": np.mean(p == g),
        "mprecision": np.mean([v["precision"] for v in per_class.values()]),
        "mrecall": np.mean([v["recall"] for v in per_class.values()]),
        "mf1": np.mean([v["f1"] for v in per_class.values()]),
    }
    return frames, pooled, per_class


# --- hand-computed ------------------------------------------------------------------------


def test_autoware_reference_case(rpx, tmp_path: Path) -> None:
    write_pair(tmp_path, "a", [[0, 1, 1]], [[0, 0, 1]])
    dataset = rpx(f"eval segmentation {dirs(tmp_path)}").json["dataset"]
    assert dataset["per_class"]["0"] == {"iou": 0.5, "recall": 0.5, "precision": 1.0,
                                         "f1": pytest.approx(2 / 3), "support": 2}
    assert dataset["per_class"]["1"] == {"iou": 0.5, "recall": 1.0, "precision": 0.5,
                                         "f1": pytest.approx(2 / 3), "support": 1}
    assert dataset["acc"] == pytest.approx(2 / 3)
    assert dataset["confusion"]["matrix"] == [[1, 1], [0, 1]]


def test_rpx_row_miou_over_gt_classes_with_ignore_excluded(rpx, tmp_path: Path) -> None:
    # GT 0 0 255 / 1 1 1 ; pred 0 1 0 / 1 1 2 ; 255 ignored (its prediction too)
    write_pair(tmp_path, "a", [[0, 1, 0], [1, 1, 2]], [[0, 0, 255], [1, 1, 1]])
    row = rpx(f"eval segmentation {dirs(tmp_path)} --ignore-index 255").json["rows"][0]
    # class 0: TP 1, union {(0,0),(0,1)} = 2 -> 1/2; class 1: TP 2, union 4 -> 1/2;
    # class 2 appears only in the prediction: no IoU of its own
    assert row["miou"] == (1 / 2 + 2 / 4) / 2
    assert row["pixel_acc"] == 3 / 5 and row["n_labelled"] == 5


def test_out_of_range_predictions_count_as_wrong_never_dropped(rpx, tmp_path: Path) -> None:
    write_pair(tmp_path, "a", [[0, 9, 1, 1]], [[0, 0, 1, 1]])
    report = rpx(f"eval segmentation {dirs(tmp_path)} --num-classes 2").json
    confusion = report["dataset"]["confusion"]
    assert confusion["labels"] == ["0", "1"] and confusion["columns"] == ["0", "1", "other"]
    assert confusion["matrix"] == [[1, 0, 1], [0, 2, 0]]
    assert report["dataset"]["acc"] == 3 / 4
    assert report["dataset"]["per_class"]["0"]["recall"] == 0.5


def test_gt_label_outside_num_classes_is_an_input_error(rpx, tmp_path: Path) -> None:
    write_pair(tmp_path, "a", [[0, 1]], [[0, 7]])
    run = rpx(f"eval segmentation {dirs(tmp_path)} --num-classes 5")
    assert run.exit_code == 1 and "GT label 7 is outside --num-classes 5" in run.stderr


def test_negative_gt_labels_must_be_ignored(rpx, tmp_path: Path) -> None:
    write_pair(tmp_path, "a", [[0, 1, 1]], [[0, -1, -3]], writer=write_npy)
    run = rpx(f"eval segmentation {dirs(tmp_path)}")  # -1 is the default ignore index
    assert run.exit_code == 1 and "negative label(s) [-3]" in run.stderr
    ok = rpx(f"eval segmentation {dirs(tmp_path)} --ignore-index -1 --ignore-index -3").json
    assert ok["rows"][0]["n_labelled"] == 1 and ok["rows"][0]["miou"] == 1.0


def test_frame_with_nothing_labelled_is_null(rpx, tmp_path: Path) -> None:
    write_pair(tmp_path, "a", [[1, 1]], [[255, 255]])
    write_pair(tmp_path, "b", [[1, 0]], [[1, 1]])
    report = rpx(f"eval segmentation {dirs(tmp_path)} --ignore-index 255").json
    assert report["rows"][0]["miou"] is None and report["rows"][0]["pixel_acc"] is None
    assert report["aggregate"]["n_empty"] == 1
    assert report["aggregate"]["miou"] == 0.5 and report["aggregate"]["pixel_acc"] == 0.5


def test_class_names_key_per_class_and_fix_num_classes(rpx, tmp_path: Path) -> None:
    write_pair(tmp_path, "a", [[0, 1, 2, 2]], [[0, 1, 2, 1]])
    names = tmp_path / "names.txt"
    names.write_text("# labels\nroad\ncar\n\nperson\n")
    gap = rpx(f"eval segmentation {dirs(tmp_path)} --class-names {names}")
    assert gap.exit_code in (1, 2) and "line 4 is blank" in gap.stderr  # it would shift person
    names.write_text("# labels\nroad\ncar\n# more\nperson\n\n")
    report = rpx(f"eval segmentation {dirs(tmp_path)} --class-names {names}").json
    assert sorted(report["dataset"]["per_class"]) == ["car", "person", "road"]
    assert report["params"]["class_names"] == ["road", "car", "person"]
    assert report["params"]["num_classes"] == 3
    as_json = tmp_path / "names.json"
    as_json.write_text(json.dumps(["road", "car", "person"]))
    again = rpx(f"eval segmentation {dirs(tmp_path)} --class-names {as_json}").json
    assert again["dataset"] == report["dataset"]
    assert rpx(f"eval segmentation {dirs(tmp_path)} --class-names {names} --num-classes 4").exit_code == 2
    assert rpx(f"eval segmentation {dirs(tmp_path)} --class-names {tmp_path / 'no.txt'}").exit_code == 2
    (tmp_path / "dup.txt").write_text("a\na\n")
    run = rpx(f"eval segmentation {dirs(tmp_path)} --class-names {tmp_path / 'dup.txt'}")
    assert run.exit_code == 1 and "duplicated a" in run.stderr


def test_label_map_formats(rpx, tmp_path: Path) -> None:
    from PIL import Image

    labels = np.array([[0, 1], [2, 3]], np.uint8)
    image = Image.fromarray(labels, mode="L").convert("P")
    image.putpalette([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * 756)
    (tmp_path / "gt").mkdir()
    image.save(tmp_path / "gt" / "pal.png")  # palette: read as indices
    write_npy(tmp_path / "pred" / "pal.npy", labels.astype(np.int32))
    write_png(tmp_path / "gt" / "wide.png", (labels.astype(np.uint16) * 1000))  # I;16
    write_npy(tmp_path / "pred" / "wide.npy", labels.astype(np.int64) * 1000)
    report = rpx(f"eval segmentation {dirs(tmp_path)}").json
    assert [row["miou"] for row in report["rows"]] == [1.0, 1.0]
    assert report["dataset"]["confusion"]["labels"] == ["0", "1", "2", "3", "1000", "2000", "3000"]


@pytest.mark.parametrize(("array", "message"), [
    (np.zeros((2, 2), np.float32), "dtype float32"),
    (np.zeros((2, 2, 3), np.uint8), "3 channels"),
    (np.zeros((2,), np.uint8), "2-D"),
])
def test_bad_label_maps(rpx, tmp_path: Path, array, message: str) -> None:
    write_npy(tmp_path / "gt" / "a.npy", np.zeros((2, 2), np.uint8))
    write_npy(tmp_path / "pred" / "a.npy", array)
    run = rpx(f"eval segmentation {dirs(tmp_path)}")
    assert run.exit_code == 1 and message in run.stderr and "pred/a.npy" in run.stderr


def test_shape_mismatch_names_both_files(rpx, tmp_path: Path) -> None:
    write_npy(tmp_path / "gt" / "a.npy", np.zeros((2, 3), np.uint8))
    write_npy(tmp_path / "pred" / "a.npy", np.zeros((3, 2), np.uint8))
    run = rpx(f"eval segmentation {dirs(tmp_path)}")
    assert run.exit_code == 1 and "pred/a.npy is 2x3" in run.stderr and "gt/a.npy is 3x2" in run.stderr


def test_missing_prediction_as_empty_counts_every_pixel_wrong(rpx, tmp_path: Path) -> None:
    write_pair(tmp_path, "a", [[0, 1]], [[0, 1]])
    write_png(tmp_path / "gt" / "b.png", np.array([[1, 1]], np.uint8))
    report = rpx(f"eval segmentation {dirs(tmp_path)} --missing empty").json
    assert report["rows"][1]["miou"] == 0.0 and report["rows"][1]["pixel_acc"] == 0.0
    assert report["dataset"]["confusion"]["columns"][-1] == "other"


# --- against the reference ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32])
def test_matches_the_per_class_loop_reference(rpx, tmp_path: Path, dtype) -> None:
    rng = np.random.default_rng(3)
    preds, gts = [], []
    for index in range(5):
        gt = rng.integers(0, 12, (30, 40))
        gt[rng.random(gt.shape) < 0.1] = 255
        pred = np.where(rng.random(gt.shape) < 0.7, gt, rng.integers(0, 14, gt.shape))
        pred[gt == 255] = rng.integers(0, 14)  # predictions under ignored pixels don't count
        preds.append(pred.astype(dtype))
        gts.append(gt.astype(dtype))
        write_npy(tmp_path / "pred" / f"{index}.npy", preds[-1])
        write_npy(tmp_path / "gt" / f"{index}.npy", gts[-1])
    report = rpx(f"eval segmentation {dirs(tmp_path)} --ignore-index 255").json
    frames, pooled, per_class = reference(preds, gts, ignore=(255,))
    for row, (miou, acc) in zip(report["rows"], frames, strict=True):
        assert row["miou"] == pytest.approx(miou, rel=1e-12)
        assert row["pixel_acc"] == pytest.approx(acc, rel=1e-12)
    for key, value in pooled.items():
        assert report["dataset"][key] == pytest.approx(value, rel=1e-12), key
    got = {int(k): v for k, v in report["dataset"]["per_class"].items()}
    assert sorted(got) == sorted(per_class)
    for label, expected in per_class.items():
        assert got[label] == pytest.approx(expected, rel=1e-12), label


# --- invariants ---------------------------------------------------------------------------

labels = hnp.arrays(np.uint8, st.tuples(st.integers(1, 12), st.integers(1, 12)),
                    elements=st.integers(0, 5))


@settings(max_examples=80, deadline=None)
@given(gt=labels, data=st.data())
def test_invariants(gt, data) -> None:
    pred = data.draw(hnp.arrays(np.uint8, gt.shape, elements=st.integers(0, 6)))
    confusion = frame_confusion(gt, pred)
    # perfect prediction
    assert frame_scores(frame_confusion(gt, gt)) == (1.0, 1.0)
    # pixel order does not matter
    order = data.draw(st.permutations(range(gt.size)))
    shuffled = frame_confusion(gt.ravel()[order], pred.ravel()[order])
    assert frame_scores(shuffled) == pytest.approx(frame_scores(confusion))
    # renaming classes with the same bijection on both sides changes nothing
    mapping = np.array(data.draw(st.permutations(range(7))), np.uint8)
    renamed = frame_confusion(mapping[gt], mapping[pred])
    assert frame_scores(renamed) == pytest.approx(frame_scores(confusion))
    # counts are exact and complete
    assert confusion.total == gt.size
    dense = np.zeros((7, 7), np.int64)
    np.add.at(dense, (gt.ravel(), pred.ravel()), 1)
    scores = confusion_scores(dense)
    miou, acc = frame_scores(confusion)
    assert acc == pytest.approx(scores.tp.sum() / gt.size)
    assert miou == pytest.approx(scores.iou[scores.support > 0].mean())


def test_jobs_do_not_change_the_report(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    for index in range(7):
        gt = rng.integers(0, 6, (10, 12)).astype(np.uint8)
        write_pair(tmp_path, f"s{index}", rng.integers(0, 7, gt.shape).astype(np.uint8), gt)
    reports = []
    for jobs in (1, 2):
        report = rpx(f"eval segmentation {dirs(tmp_path)} --jobs {jobs}").json
        reports.append(without_provenance(report))
    assert reports[0] == reports[1]


STREET = Path(__file__).resolve().parent.parent / "fixtures" / "segmentation" / "street"


def test_png_gt_holding_255_without_ignore_index_warns_once(rpx) -> None:
    """255 marks unlabelled pixels in most PNG datasets; scored as a class it drags the
    street fixture's mIoU from 0.891 to 0.725, so rpx says so on stderr (one line)."""
    plain = rpx(f"eval segmentation {dirs(STREET)}")
    assert plain.exit_code == 0 and round(plain.json["dataset"]["miou"], 3) == 0.725
    warnings = [line for line in plain.stderr.splitlines() if "255" in line]
    assert len(warnings) == 1, plain.stderr
    assert "4 GT PNG label map(s) hold 255" in warnings[0] and "--ignore-index 255" in warnings[0]
    assert str(STREET / "gt" / "000000.png") in warnings[0]
    ignored = rpx(f"eval segmentation {dirs(STREET)} --ignore-index 255")
    assert round(ignored.json["dataset"]["miou"], 3) == 0.891 and "255" not in ignored.stderr
    assert "255" not in rpx(f"eval segmentation {dirs(STREET)} --quiet").stderr


def test_255_is_not_warned_where_it_is_declared_or_not_a_png(rpx, tmp_path: Path) -> None:
    write_pair(tmp_path / "png", "a", [[0, 1]], [[0, 1]])  # no 255
    write_pair(tmp_path / "npy", "a", [[0, 255]], [[0, 255]], writer=write_npy)
    for root in (tmp_path / "png", tmp_path / "npy"):
        run = rpx(f"eval segmentation {dirs(root)}")
        assert run.exit_code == 0 and "255" not in run.stderr
    write_pair(tmp_path / "wide", "a", [[0, 255]], [[0, 255]])
    declared = rpx(f"eval segmentation {dirs(tmp_path / 'wide')} --num-classes 256")
    assert declared.exit_code == 0 and "255" not in declared.stderr
    narrow = rpx(f"eval segmentation {dirs(tmp_path / 'wide')} --num-classes 5")
    assert narrow.exit_code == 1 and "pass --ignore-index 255" in narrow.stderr
