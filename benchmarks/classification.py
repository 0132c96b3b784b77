"""Classification speed at ImageNet-val scale: ``rpx eval classification`` against
pandas + scikit-learn (the CSV form) and against reading the per-stem JSON with orjson.

Generates (once, under ``$RPX_BENCH_DATA/classification``) N stems × C classes of scores
(default 50,000 × 1,000, probabilities written with six decimals as ``%.6f`` exports do):
``gt.csv`` (``stem,label``), ``pred.csv`` (``stem,<one column per class>``), and the same
as per-stem JSON (``gt/<stem>.json`` ``{"label": L}``, ``pred/<stem>.json``
``{"scores": {L: s, ...}}``). Then, in fresh processes, median of ``--repeat``:

1. the reference script: pandas ``read_csv`` of both files, then scikit-learn's functions
   on the in-memory arrays for the same figures rpx reports (accuracy, balanced accuracy,
   top-5, per-class and macro/weighted P/R/F1, confusion matrix, per-class AP and mAP) and
   a numpy ECE;
2. ``rpx eval classification --pred-file pred.csv --gt-file gt.csv`` (rows included);
3. the floor of the per-stem form: one process reading every JSON file with orjson;
4. ``rpx eval classification --pred-dir pred --gt-dir gt`` (default ``--jobs``).

Targets: (2) at least 3x faster than (1); (4) within 2x of (3). pandas is needed only
here (``pip install pandas``). ``--clean`` deletes the generated data afterwards.

Usage: python benchmarks/classification.py [--stems 50000] [--classes 1000] [--repeat 1] [--clean]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, machine, rpx_command, timed_output, timed_run

SKLEARN_SCRIPT = textwrap.dedent(
    """
    import sys, warnings
    import numpy as np, pandas as pd
    from sklearn.metrics import (accuracy_score, average_precision_score,
        balanced_accuracy_score, confusion_matrix, precision_recall_fscore_support,
        top_k_accuracy_score)
    from sklearn.preprocessing import label_binarize
    warnings.simplefilter("ignore")
    gt = pd.read_csv(sys.argv[1], dtype={"label": str})
    pred = pd.read_csv(sys.argv[2])
    pred = pred.set_index(pred.columns[0]).loc[gt.iloc[:, 0]]
    classes = np.array(sorted(pred.columns))
    scores = pred[classes].to_numpy(np.float64)
    y = np.searchsorted(classes, gt["label"].to_numpy())
    labels = np.arange(classes.size)
    top1 = scores.argmax(axis=1)
    out = {"accuracy": accuracy_score(y, top1),
           "balanced_accuracy": balanced_accuracy_score(y, top1),
           "top5_accuracy": top_k_accuracy_score(y, scores, k=5, labels=labels)}
    precision_recall_fscore_support(y, top1, labels=labels, zero_division=0)
    for average in ("macro", "weighted"):
        p, r, f, _ = precision_recall_fscore_support(y, top1, labels=labels, average=average,
                                                     zero_division=0)
        out[average + "_f1"] = f
    confusion_matrix(y, top1, labels=labels)
    ap = average_precision_score(label_binarize(y, classes=labels), scores, average=None)
    out["mAP"] = float(np.mean(ap[np.bincount(y, minlength=classes.size) > 0]))
    confidence = scores.max(axis=1)
    edges = np.arange(16) / 15
    which = np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, 14)
    count = np.bincount(which, minlength=15)
    hits = np.bincount(which, weights=(top1 == y).astype(float), minlength=15)
    conf = np.bincount(which, weights=confidence, minlength=15)
    keep = count > 0
    out["ece"] = float(np.sum(np.abs(hits[keep] - conf[keep])) / y.size)
    print(out)
    """
)

FLOOR_SCRIPT = textwrap.dedent(
    """
    import os, sys, orjson
    for folder in sys.argv[1:]:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            with open(entry.path, "rb") as handle:
                orjson.loads(handle.read())
    """
)


def generate(root: Path, n: int, n_classes: int) -> None:
    """Scores as fixed-width text built with numpy (seconds, not minutes)."""
    import orjson

    marker = root / f"done-{n}-{n_classes}"
    if marker.exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    (root / "pred").mkdir(parents=True)
    (root / "gt").mkdir()
    rng = np.random.default_rng(0)
    classes = [f"n{10000000 + 7919 * c:08d}" for c in range(n_classes)]
    stems = [f"ILSVRC2012_val_{i + 1:08d}" for i in range(n)]
    truth = rng.integers(0, n_classes, n)
    micro = rng.integers(0, 2000, (n, n_classes))  # scores in millionths
    boost = np.where(rng.random(n) < 0.75, truth, rng.integers(0, n_classes, n))
    micro[np.arange(n), boost] += rng.integers(200_000, 900_000, n)
    (root / "gt.csv").write_text("ImageId,label\n" + "".join(
        f"{s},{classes[t]}\n" for s, t in zip(stems, truth, strict=True)))
    # "0.dddddd," per cell, a fixed width: one uint8 matrix
    cells = np.empty((n, n_classes, 9), dtype=np.uint8)
    cells[:, :, 0], cells[:, :, 1], cells[:, :, 8] = ord("0"), ord("."), ord(",")
    value = micro.copy()
    for place in range(7, 1, -1):
        cells[:, :, place] = ord("0") + value % 10
        value //= 10
    lines = cells.reshape(n, -1)
    lines[:, -1] = ord("\n")
    stem_bytes = np.frombuffer("".join(s + "," for s in stems).encode(), np.uint8).reshape(n, -1)
    with open(root / "pred.csv", "wb") as handle:
        handle.write(("ImageId," + ",".join(classes) + "\n").encode())
        handle.write(np.concatenate([stem_bytes, lines], axis=1).tobytes())
    scores = micro / 1e6
    for i, stem in enumerate(stems):
        (root / "gt" / f"{stem}.json").write_bytes(orjson.dumps({"label": classes[truth[i]]}))
        (root / "pred" / f"{stem}.json").write_bytes(
            orjson.dumps({"scores": dict(zip(classes, scores[i].tolist(), strict=True))}))
    marker.touch()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stems", type=int, default=50_000)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--clean", action="store_true")
    args = parser.parse_args()
    root = DATA / "classification"
    generate(root, args.stems, args.classes)
    rpx = rpx_command()
    print(machine())
    sizes = {name: (root / name).stat().st_size / 1e6 for name in ("gt.csv", "pred.csv")}
    print(f"{args.stems} stems x {args.classes} classes; pred.csv {sizes['pred.csv']:.0f} MB")
    reference, printed = timed_output([sys.executable, "-c", SKLEARN_SCRIPT, str(root / "gt.csv"),
                                       str(root / "pred.csv")], repeat=args.repeat)
    print(f"pandas + scikit-learn: {reference:.2f} s  {printed.strip()}")
    csv_run, out = timed_output([*rpx, "eval", "classification", "--pred-file",
                                 str(root / "pred.csv"), "--gt-file", str(root / "gt.csv"),
                                 "--quiet"], repeat=args.repeat)
    data = json.loads(out)["dataset"]
    print(f"rpx CSV: {csv_run:.2f} s ({reference / csv_run:.2f}x faster; target >= 3)  "
          f"accuracy {data['accuracy']} top5 {data['top5_accuracy']} mAP {data['mAP']} "
          f"ece {data['ece']}")
    floor = timed_run([sys.executable, "-c", FLOOR_SCRIPT, str(root / "gt"), str(root / "pred")],
                      repeat=args.repeat)
    print(f"orjson floor, per-stem JSON: {floor:.2f} s")
    per_stem = timed_run([*rpx, "eval", "classification", "--pred-dir", str(root / "pred"),
                          "--gt-dir", str(root / "gt"), "--quiet", "-o", "/dev/null"],
                         repeat=args.repeat)
    print(f"rpx per-stem: {per_stem:.2f} s ({per_stem / floor:.2f}x the floor; target <= 2)")
    if args.clean:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
