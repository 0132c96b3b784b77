"""``rpx eval classification``: scikit-learn equality, hand-computed ECE, Aquarium's 0/0 rule,
CSV == per-stem JSON, input errors, invariants, and the documented commands."""

from __future__ import annotations

import json
import re
import shlex
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXTURES, ROOT, assert_jobs_and_shards_agree

sklearn_metrics = pytest.importorskip("sklearn.metrics")

TOL = 1e-9


def write_single(root: Path, truth: np.ndarray, scores: np.ndarray | None = None,
                 labels: np.ndarray | None = None) -> tuple[Path, Path]:
    """Per-stem JSON (classes are the integers 0..C-1, written as text)."""
    pred, gt = root / "pred", root / "gt"
    pred.mkdir(parents=True)
    gt.mkdir(parents=True)
    for i, y in enumerate(truth.tolist()):
        (gt / f"s{i:04d}.json").write_text(json.dumps({"label": y}))
        if scores is not None:
            doc = {"scores": {str(c): float(v) for c, v in enumerate(scores[i])}}
        else:
            doc = {"label": int(labels[i])}
        (pred / f"s{i:04d}.json").write_text(json.dumps(doc))
    return pred, gt


def write_csv(root: Path, truth: np.ndarray, scores: np.ndarray) -> tuple[Path, Path]:
    root.mkdir(parents=True, exist_ok=True)
    gt = root / "gt.csv"
    gt.write_text("stem,label\n" + "".join(f"s{i:04d},{y}\n" for i, y in enumerate(truth.tolist())))
    pred = root / "pred.csv"
    header = "stem," + ",".join(str(c) for c in range(scores.shape[1])) + "\n"
    pred.write_text(header + "".join(f"s{i:04d}," + ",".join(repr(float(v)) for v in row) + "\n"
                                     for i, row in enumerate(scores)))
    return pred, gt


def generated(seed: int, n: int = 80, n_classes: int = 6):
    """Scores on a coarse grid (many ties, also for the top score), class n-1 without
    support, class 3 never predicted."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_classes - 1, n)
    scores = rng.integers(0, 5, (n, n_classes)) / 4.0
    scores[:, 0] = np.maximum(scores[:, 0], 0.25)
    scores[:, 3] = 0.0
    scores[np.arange(n), truth] += rng.integers(0, 2, n) * 0.25
    scores /= 2.0
    return truth, scores


def quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def close(a, b) -> None:
    assert a == pytest.approx(b, abs=TOL, rel=0), (a, b)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_single_label_equals_scikit_learn(rpx, tmp_path: Path, seed: int) -> None:
    m = sklearn_metrics
    truth, scores = generated(seed)
    n_classes = scores.shape[1]
    pred_dir, gt_dir = write_single(tmp_path, truth, scores)
    report = rpx(f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir} --top-k 1 "
                 f"--top-k 2 --top-k 3 --top-k 10 --jobs 1").json
    data = report["dataset"]
    labels = np.arange(n_classes)
    pred = scores.argmax(axis=1)  # numpy: the first maximum, our tie rule for top-1
    assert not np.any(pred == 3) and not np.any(truth == n_classes - 1)
    close(data["accuracy"], m.accuracy_score(truth, pred))
    close(data["balanced_accuracy"], quiet(m.balanced_accuracy_score, truth, pred))
    p, r, f, s = m.precision_recall_fscore_support(truth, pred, labels=labels, zero_division=0)
    for c in range(n_classes):
        entry = data["per_class"][str(c)]
        close(entry["precision"], p[c])
        close(entry["recall"], r[c])
        close(entry["f1"], f[c])
        assert entry["support"] == s[c]
    for average in ("macro", "weighted"):
        figures = m.precision_recall_fscore_support(truth, pred, labels=labels,
                                                    average=average, zero_division=0)
        for key, value in zip(("precision", "recall", "f1"), figures[:3], strict=True):
            close(data[f"{average}_{key}"], value)
    assert data["confusion"]["matrix"] == m.confusion_matrix(truth, pred, labels=labels).tolist()
    assert data["confusion"]["labels"] == [str(c) for c in labels]
    # top-k: scikit-learn breaks ties towards the highest index, rpx towards class order
    # (the first class); mirroring the class order makes the two rules the same
    mirrored = n_classes - 1 - truth
    for k in (1, 2, 3, 10):
        expected = quiet(m.top_k_accuracy_score, mirrored, scores[:, ::-1], k=k, labels=labels)
        close(data[f"top{k}_accuracy"], expected)
        close(report["aggregate"][f"correct_top{k}"], expected)
    assert data["top10_accuracy"] == 1.0  # k larger than the class count
    aps = []
    for c in range(n_classes):
        positive = truth == c
        if positive.any():
            ap = m.average_precision_score(positive, scores[:, c])
            close(data["per_class"][str(c)]["ap"], ap)
            aps.append(ap)
        else:
            assert data["per_class"][str(c)]["ap"] is None
    close(data["mAP"], float(np.mean(aps)))


def test_top1_agrees_with_sklearn_top_k_only_off_ties(rpx, tmp_path: Path) -> None:
    """The convention difference, pinned: on a tie scikit-learn's top_k_accuracy_score(k=1)
    picks the last class, argmax (and rpx, and accuracy_score on argmax) the first."""
    m = sklearn_metrics
    truth = np.array([0, 1, 2])
    scores = np.array([[0.4, 0.4, 0.2], [0.3, 0.3, 0.4], [0.1, 0.1, 0.8]])
    pred_dir, gt_dir = write_single(tmp_path, truth, scores)
    data = rpx(f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir} --top-k 1").json["dataset"]
    assert data["top1_accuracy"] == data["accuracy"] == 2 / 3
    assert m.top_k_accuracy_score(truth, scores, k=1) == 1 / 3  # it took class 1 on row 0


def test_label_only_predictions_equal_scikit_learn(rpx, tmp_path: Path) -> None:
    m = sklearn_metrics
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 4, 50)
    labels = np.where(rng.random(50) < 0.6, truth, rng.integers(0, 6, 50))  # 4, 5: no support
    pred_dir, gt_dir = write_single(tmp_path, truth, labels=labels)
    report = rpx(f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir}").json
    data = report["dataset"]
    close(data["balanced_accuracy"], quiet(m.balanced_accuracy_score, truth, labels))
    close(data["macro_f1"], m.f1_score(truth, labels, average="macro", zero_division=0))
    close(data["macro_recall"], m.recall_score(truth, labels, average="macro", zero_division=0))
    assert data["macro_recall"] != data["balanced_accuracy"]  # 4 and 5 count in the macro mean
    assert "mAP" not in data and "ece" not in data and "top5_accuracy" not in data
    assert set(report["rows"][0]) == {"stem", "pred_path", "gt_path", "correct", "label", "predicted"}


def test_multi_label_equals_scikit_learn(rpx, tmp_path: Path) -> None:
    m = sklearn_metrics
    rng = np.random.default_rng(11)
    n, n_classes = 60, 5
    truth = rng.random((n, n_classes)) < 0.4
    truth[:, 4] = False  # no support
    scores = np.round(np.clip(rng.random((n, n_classes)) * 0.7 + truth * 0.3, 0, 1) * 8) / 8
    pred, gt = tmp_path / "pred", tmp_path / "gt"
    pred.mkdir()
    gt.mkdir()
    names = [f"c{c}" for c in range(n_classes)]
    for i in range(n):
        (gt / f"{i}.json").write_text(json.dumps({"labels": [names[c] for c in np.flatnonzero(truth[i])]}))
        (pred / f"{i}.json").write_text(json.dumps({"scores": dict(zip(names, scores[i].tolist(),
                                                                       strict=True))}))
    data = rpx(f"eval classification --pred-dir {pred} --gt-dir {gt} --multi-label").json["dataset"]
    predicted = scores >= 0.5
    close(data["hamming_loss"], m.hamming_loss(truth, predicted))
    close(data["subset_accuracy"], m.accuracy_score(truth, predicted))
    for average in ("micro", "macro", "weighted"):
        close(data[f"{average}_f1"], quiet(m.f1_score, truth, predicted, average=average,
                                           zero_division=0))
    p, r, f, s = m.precision_recall_fscore_support(truth, predicted, zero_division=0)
    aps = []
    for c, name in enumerate(names):
        entry = data["per_class"][name]
        close(entry["precision"], p[c])
        close(entry["recall"], r[c])
        close(entry["f1"], f[c])
        assert entry["support"] == s[c]
        if s[c]:
            aps.append(m.average_precision_score(truth[:, c], scores[:, c]))
            close(entry["ap"], aps[-1])
        else:
            assert entry["ap"] is None
    close(data["mAP"], float(np.mean(aps)))


def test_ece_equals_a_hand_computed_binning(rpx, tmp_path: Path) -> None:
    truth, scores = generated(4, n=120)
    scores = scores / scores.sum(axis=1, keepdims=True)
    scores[0] = [1.0, 0, 0, 0, 0, 0]  # a confidence of exactly 1 (last bin)
    scores[1] = [0.2, 0.2, 0.2, 0.2, 0.2, 0.0]  # exactly on the edge 3/15: bin (2/15, 3/15]
    pred_dir, gt_dir = write_single(tmp_path, truth, scores)
    data = rpx(f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir} --ece-bins 15").json["dataset"]
    confidence = scores.max(axis=1)
    correct = scores.argmax(axis=1) == truth
    total = 0.0
    for b in range(15):
        lower, upper = b / 15, (b + 1) / 15
        inside = [(c > lower or (b == 0 and c == 0.0)) and c <= upper for c in confidence.tolist()]
        inside = np.array(inside)
        if inside.any():
            total += inside.sum() / len(confidence) * abs(correct[inside].mean() - confidence[inside].mean())
    close(data["ece"], total)
    assert sum(data["calibration"]["count"]) == len(confidence)


def test_aquarium_zero_over_zero_is_zero(rpx, tmp_path: Path) -> None:
    """A class never predicted and without support: precision, recall, F1 all 0 (not null),
    and it counts in the macro means."""
    classes = tmp_path / "classes.txt"
    classes.write_text("a\nb\nc\n")
    pred_dir, gt_dir = tmp_path / "pred", tmp_path / "gt"
    pred_dir.mkdir()
    gt_dir.mkdir()
    for stem, gt, pred in (("1", "a", "a"), ("2", "b", "a")):
        (gt_dir / f"{stem}.txt").write_text(gt)
        (pred_dir / f"{stem}.json").write_text(json.dumps({"label": pred}))
    data = rpx(f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir} "
               f"--class-names {classes}").json["dataset"]
    assert data["per_class"]["c"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert data["per_class"]["b"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    close(data["macro_precision"], (0.5 + 0 + 0) / 3)
    close(data["balanced_accuracy"], (1.0 + 0.0) / 2)


def test_csv_and_per_stem_json_give_the_same_numbers(rpx, tmp_path: Path) -> None:
    truth, scores = generated(7, n=64)
    pred_dir, gt_dir = write_single(tmp_path / "json", truth, scores)
    pred_csv, gt_csv = write_csv(tmp_path / "csv", truth, scores)
    flags = "--top-k 1 --top-k 3"
    one = rpx(f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir} {flags}").json
    two = rpx(f"eval classification --pred-file {pred_csv} --gt-file {gt_csv} {flags}").json
    assert one["dataset"] == two["dataset"]
    assert one["aggregate"] == two["aggregate"]
    strip = ("pred_path", "gt_path")
    assert [{k: v for k, v in r.items() if k not in strip} for r in one["rows"]] == \
        [{k: v for k, v in r.items() if k not in strip} for r in two["rows"]]


def test_class_map_merges_scores_the_same_in_both_forms(rpx, tmp_path: Path) -> None:
    truth, scores = generated(8, n=30)
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"1": "0", "2": "0", "5": None}))
    pred_dir, gt_dir = write_single(tmp_path / "json", truth, scores)
    pred_csv, gt_csv = write_csv(tmp_path / "csv", truth, scores)
    one = rpx(f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir} --class-map {mapping}").json
    two = rpx(f"eval classification --pred-file {pred_csv} --gt-file {gt_csv} --class-map {mapping}").json
    assert one["dataset"] == two["dataset"]
    assert one["dataset"]["confusion"]["labels"] == ["0", "3", "4"]


def test_perfect_predictions_score_one_and_shards_agree(rpx, tmp_path: Path) -> None:
    truth, _ = generated(9, n=40)
    scores = np.eye(6)[truth] * 0.9 + 0.01
    pred_dir, gt_dir = write_single(tmp_path, truth, scores)
    command = f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir}"
    data = rpx(command).json["dataset"]
    for key in ("accuracy", "balanced_accuracy", "top5_accuracy", "mAP"):
        assert data[key] == 1.0, key
    assert_jobs_and_shards_agree(rpx, command, tmp_path / "parts", shards=3)


def test_missing_prediction_is_wrong(rpx, tmp_path: Path) -> None:
    truth, scores = generated(10, n=12)
    pred_dir, gt_dir = write_single(tmp_path, truth, scores)
    (pred_dir / "s0000.json").unlink()
    report = rpx(f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir} --missing empty").json
    row = report["rows"][0]
    assert row["correct"] == 0 and row["correct_top5"] == 0 and row["confidence"] is None
    assert report["dataset"]["n_missing"] == 1
    assert sum(report["dataset"]["confusion"]["no_prediction"]) == 1


def test_metrics_families_and_strata(rpx, tmp_path: Path) -> None:
    case = FIXTURES / "classification" / "pets"
    base = f"eval classification --pred-dir {case / 'pred'} --gt-dir {case / 'gt'}"
    data = rpx(f"{base} --metrics ranking").json
    assert set(data["dataset"]) >= {"mAP", "top5_accuracy", "per_class"}
    assert "accuracy" not in data["dataset"] and "ece" not in data["dataset"]
    assert set(data["rows"][0]) == {"stem", "pred_path", "gt_path"}
    manifest = tmp_path / "manifest.json"
    samples = [{"stem": p.stem, "phase": "clutter", "difficulty": ("easy", "hard")[i % 2]}
               for i, p in enumerate(sorted((case / "gt").iterdir()))]
    manifest.write_text(json.dumps({"schema_version": 1, "samples": samples}))
    strata = rpx(f"{base} --manifest {manifest}").json["strata"]
    assert strata["primary_metric"] == "correct" and strata["direction"] == "higher"


# --- input errors ----------------------------------------------------------------------------------


def _pair(tmp_path: Path, gt: dict[str, str], pred: dict[str, str]) -> tuple[Path, Path]:
    pred_dir, gt_dir = tmp_path / "pred", tmp_path / "gt"
    for folder, files in ((gt_dir, gt), (pred_dir, pred)):
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text)
    return pred_dir, gt_dir


ERRORS = {
    "non-finite score": ({"a.json": '{"label": "x"}'}, {"a.json": '{"scores": {"x": NaN, "y": 0.5}}'},
                         "", "a.json", "not finite"),
    "score outside [0, 1] with --threshold": (
        {"a.json": '{"labels": ["x"]}'}, {"a.json": '{"scores": {"x": 1.5, "y": 0.5}}'},
        "--multi-label", "a.json", "outside [0, 1]"),
    "GT label not in --class-names": ({"a.json": '{"label": "z"}'}, {"a.json": '{"label": "x"}'},
                                      "--class-names {names}", "gt/a.json", "not in --class-names"),
    "predicted label not in --class-names": (
        {"a.json": '{"label": "x"}'}, {"a.json": '{"label": "q"}'}, "--class-names {names}",
        "pred/a.json", "not in --class-names"),
    "score table missing a class of --class-names": (
        {"a.json": '{"label": "x"}'}, {"a.json": '{"scores": {"x": 0.5}}'},
        "--class-names {names}", "pred/a.json", "no score for class"),
    "score table missing the GT class": (
        {"a.json": '{"label": "z"}'}, {"a.json": '{"scores": {"x": 0.5, "y": 0.5}}'}, "",
        "pred/a.json", "no score for class 'z'"),
    "score tables that differ": (
        {"a.json": '{"label": "x"}', "b.json": '{"label": "x"}'},
        {"a.json": '{"scores": {"x": 0.5, "y": 0.5}}', "b.json": '{"scores": {"x": 1.0}}'}, "",
        "pred/b.json", "no score for class(es) 'y'"),
    "mixed prediction forms": (
        {"a.json": '{"label": "x"}', "b.json": '{"label": "x"}'},
        {"a.json": '{"scores": {"x": 0.5}}', "b.json": '{"label": "x"}'}, "", "pred/",
        "mix forms"),
    "several GT labels without --multi-label": (
        {"a.json": '{"labels": ["x", "y"]}'}, {"a.json": '{"label": "x"}'}, "", "gt/a.json",
        "--multi-label"),
    "not JSON": ({"a.json": '{"label": '}, {"a.json": '{"label": "x"}'}, "", "gt/a.json",
                 "not valid JSON"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_input_errors_name_the_file_and_write_no_report(rpx, tmp_path: Path, name: str) -> None:
    gt, pred, flags, where, message = ERRORS[name]
    names = tmp_path / "names.txt"
    names.write_text("x\ny\n")
    pred_dir, gt_dir = _pair(tmp_path, gt, pred)
    out = tmp_path / "report.json"
    run = rpx(f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir} -o {out} "
              + flags.format(names=names))
    assert run.exit_code == 1, run.stderr
    assert where in run.stderr and message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and not out.exists() and run.stdout == ""


CSV_ERRORS = {
    "wrong number of columns": ("stem,label\na,x\nb,y\n", "stem,x,y\na,0.5,0.5\nb,0.5\n", "",
                                "pred.csv", "line 3: 2 column(s), the header has 3"),
    "a score that is not a number": ("stem,label\na,x\nb,y\n", "stem,x,y\na,0.5,0.5\nb,0.5,abc\n",
                                     "", "pred.csv", "line 3: the score in column 3"),
    "a non-finite score": ("stem,label\na,x\nb,y\n", "stem,x,y\na,0.5,inf\nb,0.5,0.5\n", "",
                           "pred.csv", "line 2"),
    "score outside [0, 1] with --threshold": (
        "stem,x,y\na,1,0\nb,0,1\n", "stem,x,y\na,0.5,0.5\nb,0.5,2.0\n", "--multi-label",
        "pred.csv", "line 3"),
    "label not in --class-names": ("stem,label\na,x\nb,zebra\n", "stem,label\na,x\nb,y\n",
                                   "--class-names {names}", "gt.csv", "line 3: label 'zebra'"),
    "a score table missing a class": ("stem,label\na,x\nb,y\n", "stem,x\na,0.5\nb,0.5\n", "",
                                      "pred.csv", "no column for class(es) 'y'"),
    "different stems": ("stem,label\na,x\nb,y\n", "stem,label\na,x\nc,y\n", "", "pred.csv",
                        "do not hold the same stems"),
    "a repeated stem": ("stem,label\na,x\na,y\n", "stem,label\na,x\nb,y\n", "", "gt.csv",
                        "line 3: stem 'a' repeats line 2"),
}


@pytest.mark.parametrize("name", sorted(CSV_ERRORS))
def test_csv_errors_name_the_file_and_line(rpx, tmp_path: Path, name: str) -> None:
    gt_text, pred_text, flags, where, message = CSV_ERRORS[name]
    (tmp_path / "gt.csv").write_text(gt_text)
    (tmp_path / "pred.csv").write_text(pred_text)
    names = tmp_path / "names.txt"
    names.write_text("x\ny\n")
    run = rpx(f"eval classification --pred-file {tmp_path / 'pred.csv'} --gt-file "
              f"{tmp_path / 'gt.csv'} " + flags.format(names=names))
    assert run.exit_code == 1, run.stderr
    assert where in run.stderr and message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_csv_parser_equals_float_on_every_cell(tmp_path: Path) -> None:
    """The one-call score parser gives the correctly rounded double of every cell, like
    ``float`` (so CSV and JSON inputs agree bit for bit), and keeps stems with spaces."""
    from rpx_cli.io.labels import read_label_csv

    rng = np.random.default_rng(0)
    values = rng.random((50, 7)) ** 3
    cells = [[repr(float(v)) if j % 2 else f"{v:.6g}" for j, v in enumerate(row)] for row in values]
    path = tmp_path / "p.csv"
    path.write_text("id,a,b,c,d,e,f,g\r\n" + "".join(f"stem {i},{','.join(row)}\r\n"
                                                     for i, row in enumerate(cells)))
    table = read_label_csv(str(path))
    assert table.stems == [f"stem {i}" for i in range(50)]
    expected = np.array([[float(c) for c in row] for row in cells])
    assert np.array_equal(table.scores, expected)


def test_average_precision_kernel_equals_sklearn_on_ties() -> None:
    from rpx_cli.ops.classification import average_precision

    rng = np.random.default_rng(3)
    scores = rng.integers(0, 4, (200, 9)).astype(float)
    positive = rng.random((200, 9)) < 0.2
    positive[:, 8] = False
    ap = average_precision(scores, positive)
    for c in range(8):
        close(ap[c], sklearn_metrics.average_precision_score(positive[:, c], scores[:, c]))
    assert np.isnan(ap[8])


# --- the documented commands run on the committed fixtures ----------------------------------------


def documented_commands() -> list[str]:
    commands = []
    for doc in (ROOT / "docs" / "classification.md", ROOT / "README.md"):
        for block in re.findall(r"```sh\n(.*?)```", doc.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip()
                if line.startswith("rpx ") and "classification" in line:
                    commands.append(line)
    return commands


@pytest.mark.parametrize("command", documented_commands())
def test_documented_commands_run_on_the_fixtures(command: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    monkeypatch.chdir(ROOT)
    argv = shlex.split(command.split("|")[0])
    argv = [("--out" if a == "-o" else a) for a in argv]
    if "--out" in argv:
        argv[argv.index("--out") + 1] = str(tmp_path / "report.json")
    done = subprocess.run([sys.executable, "-m", "rpx_cli", *argv[1:]], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_there_are_documented_commands() -> None:
    assert len(documented_commands()) >= 4


# --- per-class precision-recall curves (dataset.curves) -------------------------------------------


def sklearn_curve(positive: np.ndarray, scores: np.ndarray) -> tuple[list[float], list[float]]:
    """The 101-point curve read from scikit-learn's ``precision_recall_curve``, one recall
    point at a time: the best precision of a point with recall >= r, and the highest
    threshold with recall >= r (its appended (precision 1, recall 0) end left out)."""
    precision, recall, thresholds = sklearn_metrics.precision_recall_curve(positive, scores)
    precision, recall = precision[:-1], recall[:-1]
    best, score = [], []
    for r in np.linspace(0, 1, 101):
        kept = recall >= r
        best.append(float(precision[kept].max()))
        score.append(float(thresholds[kept].max()))
    return best, score


def assert_curves_equal_sklearn(curves: dict, truth: np.ndarray, scores: np.ndarray) -> None:
    assert curves["recall"] == np.linspace(0, 1, 101).tolist()
    for c in range(scores.shape[1]):
        entry = curves["per_class"][str(c)]
        if not truth[:, c].any():
            assert entry is None
            continue
        precision, score = sklearn_curve(truth[:, c], scores[:, c])
        assert entry["precision"] == pytest.approx(precision, abs=TOL, rel=0), c
        assert entry["score"] == score, c


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_single_label_curves_equal_scikit_learn(rpx, tmp_path: Path, seed: int) -> None:
    truth, scores = generated(seed)
    pred_dir, gt_dir = write_single(tmp_path, truth, scores)
    curves = rpx(f"eval classification --pred-dir {pred_dir} --gt-dir {gt_dir}").json["dataset"]["curves"]
    onehot = np.eye(scores.shape[1], dtype=bool)[truth]
    assert_curves_equal_sklearn(curves, onehot, scores)
    # the area under the interpolated curve bounds AP from above (COCO's AP reads it)
    assert curves["per_class"]["0"]["precision"][0] == max(curves["per_class"]["0"]["precision"])


def test_curve_kernel_equals_scikit_learn_on_ties_and_many_classes() -> None:
    from rpx_cli.ops.classification import pr_curves

    rng = np.random.default_rng(11)
    scores = rng.integers(0, 6, (300, 40)) / 5.0
    scores[:, :20] += rng.random((300, 20))  # half the classes without ties
    positive = rng.random((300, 40)) < rng.uniform(0.01, 0.5, 40)
    positive[:, 7] = False
    positive[:, 8] = True  # every sample positive: precision 1 all along
    precision, score = pr_curves(scores, positive)
    for c in range(40):
        if c == 7:
            assert np.isnan(precision[c]).all() and np.isnan(score[c]).all()
            continue
        want_p, want_s = sklearn_curve(positive[:, c], scores[:, c])
        assert np.allclose(precision[c], want_p, rtol=0, atol=TOL), c
        assert score[c].tolist() == want_s, c
    assert (precision[8] == 1.0).all()


def test_multi_label_curves_equal_scikit_learn(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    n, n_classes = 60, 5
    truth = rng.random((n, n_classes)) < 0.35
    truth[:, 4] = False
    scores = np.round(rng.random((n, n_classes)), 2)
    for root in ("pred", "gt"):
        (tmp_path / root).mkdir()
    for i in range(n):
        (tmp_path / "gt" / f"s{i:03d}.json").write_text(json.dumps(
            {"labels": [str(c) for c in range(n_classes) if truth[i, c]]}))
        (tmp_path / "pred" / f"s{i:03d}.json").write_text(json.dumps(
            {"scores": {str(c): float(scores[i, c]) for c in range(n_classes)}}))
    report = rpx(f"eval classification --pred-dir {tmp_path / 'pred'} --gt-dir {tmp_path / 'gt'} "
                 "--multi-label --class-names " + str(_class_file(tmp_path, n_classes))).json
    assert_curves_equal_sklearn(report["dataset"]["curves"], truth, scores)


def _class_file(root: Path, n_classes: int) -> Path:
    path = root / "classes.txt"
    path.write_text("".join(f"{c}\n" for c in range(n_classes)))
    return path
