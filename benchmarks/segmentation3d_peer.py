"""``rpx eval segmentation3d`` against semantic-kitti-api's evaluation loop, like for like
(issue 33).

On the SemanticKITTI-sized scans of ``benchmarks/segmentation3d.py`` (generated once),
each command in a fresh process, round-robin, median of ``--repeat``:

- **semantic-kitti-api**: ``evaluate_semantics.py``'s loop, as written there — per scan
  ``np.fromfile`` of both ``.label`` files (int32), ``& 0xFFFF``, the learning map as a
  lookup table, ``np_ioueval.iouEval.addBatch`` (``np.add.at`` into the confusion matrix),
  then ``getIoU`` and ``getacc``: the script is inlined below (the loop and the class,
  without the argument parsing and printing);
- **rpx like for like**: ``rpx eval segmentation3d --label-map --num-classes 20
  --ignore-index 0 --protocol semantickitti`` (no points, no ranges), the default
  ``--jobs``, as a first run (every input hashed: an empty digest cache) and a re-run (the
  GT's digests reused, predictions renewed); the two mIoUs are compared;
- **rpx with points and three ranges** (``--points-dir``, ``--range 0:20 --range 20:50
  --range 50:``): what the ranges cost on top.

Targets: first run >= 2x the loop, re-run >= 2.5x.

``--split``: where a like-for-like run's CPU goes instead, in this process (one job,
``time.process_time`` over every scan, best of ``--repeat``): reading the two files, their
sha256, the counts by the native pass and by its numpy twin, the row scores, the engine's
whole pair loop with and without digests, and the start-up of a fresh process.

Usage: python benchmarks/segmentation3d_peer.py [--scans 500] [--repeat 3] [--split]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _common import DATA, DigestRuns, machine, measure, rpx_command, spread_line
from segmentation3d import LEARNING_MAP, RANGES, generate

PEER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import numpy as np

    class iouEval:  # semantic-kitti-api auxiliary/np_ioueval.py
        def __init__(self, n_classes, ignore=None):
            self.n_classes = n_classes
            self.ignore = np.array(ignore, dtype=np.int64)
            self.include = np.array([n for n in range(self.n_classes) if n not in self.ignore],
                                    dtype=np.int64)
            self.reset()

        def reset(self):
            self.conf_matrix = np.zeros((self.n_classes, self.n_classes), dtype=np.int64)

        def addBatch(self, x, y):  # x=preds, y=targets
            x_row = x.reshape(-1)
            y_row = y.reshape(-1)
            assert x_row.shape == y_row.shape
            idxs = tuple(np.stack((x_row, y_row), axis=0))
            np.add.at(self.conf_matrix, idxs, 1)

        def getStats(self):
            conf = self.conf_matrix.copy()
            conf[:, self.ignore] = 0
            tp = np.diag(conf)
            fp = conf.sum(axis=1) - tp
            fn = conf.sum(axis=0) - tp
            return tp, fp, fn

        def getIoU(self):
            tp, fp, fn = self.getStats()
            intersection = tp
            union = tp + fp + fn + 1e-15
            iou = intersection / union
            iou_mean = (intersection[self.include] / union[self.include]).mean()
            return iou_mean, iou

        def getacc(self):
            tp, fp, fn = self.getStats()
            total_tp = tp.sum()
            total = tp[self.include].sum() + fp[self.include].sum() + 1e-15
            return total_tp / total

    pred_dir, gt_dir, mapping = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
    maxkey = max(int(k) for k in mapping)
    remap_lut = np.zeros((maxkey + 100), dtype=np.int32)
    remap_lut[[int(k) for k in mapping]] = list(mapping.values())
    evaluator = iouEval(20, [0])
    for label_file in sorted(gt_dir.glob("*.label")):
        label = np.fromfile(label_file, dtype=np.int32).reshape((-1))
        label = remap_lut[label & 0xFFFF]
        pred = np.fromfile(pred_dir / label_file.name, dtype=np.int32).reshape((-1))
        pred = remap_lut[pred & 0xFFFF]
        evaluator.addBatch(pred, label)
    m_jaccard, _ = evaluator.getIoU()
    print(json.dumps({"miou": float(m_jaccard), "acc": float(evaluator.getacc())}))
""")


def split(root: Path, repeat: int) -> None:
    """CPU per scan of each phase of a like-for-like run, in this process (see the module)."""
    import hashlib
    import os
    import time

    from rpx_cli.engine.pairs import run_pairs
    from rpx_cli.io.discover import pair_dirs
    from rpx_cli.io.filebuffer import FileBuffer
    from rpx_cli.ops.lidar import LabelMap
    from rpx_cli.ops.point_counts import reference_word_confusions, word_confusions
    from rpx_cli.tasks.registry import get_task
    from rpx_cli.tasks.segmentation3d.scores import scan_scores

    task = get_task("segmentation3d")
    params = task.normalise_params({"label_map": str(root / "learning_map.json"),
                                    "num_classes": 20, "ignore_index": [0],
                                    "protocol": "semantickitti"})
    label_map = LabelMap({int(k): v for k, v in params["label_map"].items()})
    pairs = pair_dirs(str(root / "pred"), str(root / "gt"), task.suffixes, missing="error").pairs
    paths = [(os.path.join(p.gt_dir, p.gt_rel), os.path.join(p.pred_dir, p.pred_rel)) for p in pairs]
    words = [tuple(np.fromfile(path, np.uint32) for path in pair) for pair in paths]
    counted = [word_confusions(g, p, label_map, None, 1, (0,)) for g, p in words]

    def best(step) -> float:
        times = []
        for _ in range(repeat):
            start = time.process_time()
            step()
            times.append(time.process_time() - start)
        return min(times) / len(pairs) * 1e3

    buffers = FileBuffer(digest=False), FileBuffer(digest=False)

    def read() -> None:
        for pair in paths:
            for buffer, path in zip(buffers, pair, strict=True):
                buffer.read(path)

    def digest() -> None:
        for pair in paths:
            for path in pair:
                with open(path, "rb") as handle:
                    hashlib.sha256(handle.read())

    def engine(digest: bool) -> None:
        run_pairs(task, pairs, params, jobs=1, digest=digest)

    import subprocess

    startups = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(rpx_command() + ["eval", "segmentation3d", "--help"], check=True,
                       stdout=subprocess.DEVNULL)
        startups.append(time.perf_counter() - start)
    startup = min(startups) * 1e3
    phases = {
        "read both files (FileBuffer, no digest)": best(read),
        "sha256 of both files (read + hashlib)": best(digest),
        "counts, native pass (word_confusions)": best(
            lambda: [word_confusions(g, p, label_map, None, 1, (0,)) for g, p in words]),
        "counts, numpy twin (LabelMap.apply x 2 + interval_confusions)": best(
            lambda: [reference_word_confusions(g, p, label_map, None, 1, (0,)) for g, p in words]),
        "row scores (scan_scores)": best(
            lambda: [scan_scores(g, p, c, params) for g, p, c in counted]),
        "engine, whole pair loop, no digests (run_pairs --jobs 1)": best(lambda: engine(False)),
        "engine, whole pair loop, first run (every file hashed)": best(lambda: engine(True)),
    }
    print(f"machine: {machine()}; {len(pairs)} scans, CPU ms a scan, best of {repeat}")
    print("| phase | CPU ms / scan |")
    print("|---|---:|")
    for name, value in phases.items():
        print(f"| {name} | {value:.3f} |")
    print(f"| start-up: `rpx eval segmentation3d --help`, wall ms a process (best) | {startup:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scans", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--split", action="store_true")
    args = parser.parse_args()
    root = generate(DATA / f"segmentation3d-{args.scans}", args.scans)
    if args.split:
        split(root, args.repeat)
        return
    pred, gt, velodyne = (str(root / name) for name in ("pred", "gt", "velodyne"))
    mapping = json.dumps({str(k): v for k, v in LEARNING_MAP.items()})
    like = rpx_command() + [
        "eval", "segmentation3d", "--pred-dir", pred, "--gt-dir", gt,
        "--label-map", str(root / "learning_map.json"), "--num-classes", "20",
        "--ignore-index", "0", "--protocol", "semantickitti", "--quiet"]
    ranged = like + ["--points-dir", velodyne, *(f"--range={r}" for r in RANGES)]
    digests = DigestRuns("seg3d-peer", predictions=[pred], ground_truth=[gt, velodyne])
    digests.warm(ranged, expect_reused=2 * args.scans)
    report = digests.root / "r.json"
    commands = {
        "semantic-kitti-api loop (np_ioueval)": lambda: [sys.executable, "-c", PEER, pred, gt, mapping],
        "rpx like for like, first run": lambda: like + digests.first() + ["-o", str(report)],
        "rpx like for like, re-run": lambda: like + digests.rerun() + ["-o", str(report)],
        "rpx + points + 3 ranges, first run": lambda: ranged + digests.first() + ["-o", "/dev/null"],
        "rpx + points + 3 ranges, re-run": lambda: ranged + digests.rerun() + ["-o", "/dev/null"],
    }
    timings = measure(commands, repeat=args.repeat)
    import subprocess

    peer = json.loads(subprocess.run(commands["semantic-kitti-api loop (np_ioueval)"](),
                                     check=True, capture_output=True, text=True).stdout)
    subprocess.run(like + ["-o", str(report)], check=True)
    ours = json.loads(report.read_text())
    executor = ours["run_provenance"]["executor"]
    digests.cleanup()
    print(f"machine: {machine()}")
    print(f"{args.scans} scans of ~123k points; fresh process per run, round-robin, median of "
          f"{args.repeat}; rpx's default --jobs chose {executor.get('jobs')} "
          f"({json.dumps(executor)})")
    print(spread_line(timings))
    base = timings["semantic-kitti-api loop (np_ioueval)"].median
    print("| run | wall s | ms / scan | loop / run |")
    print("|---|---:|---:|---:|")
    for name, timing in timings.items():
        print(f"| {name} | {timing.median:.2f} | {timing.median / args.scans * 1e3:.2f} | "
              f"{base / timing.median:.2f}x |")
    print(f"mIoU: loop {peer['miou']!r}, rpx {ours['dataset']['miou']!r} "
          f"(|diff| {abs(peer['miou'] - ours['dataset']['miou']):.1e}); acc: loop "
          f"{peer['acc']!r}, rpx {ours['dataset']['acc']!r}")


if __name__ == "__main__":
    main()
