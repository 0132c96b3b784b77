"""``rpx_cli.Evaluator.update`` against the file path's per-pair work (issue 29's cost).

Issue 29 asks that a detection3d ``update`` of one sample with 200 predictions cost no more
than the file path's per-pair work minus reading. On the nuScenes-scale samples of
``benchmarks/detection3d.py`` (~40 GT and 200 predictions per sample, generated once), in
one process, best of ``--repeat``:

- **update**: ``Evaluator("detection3d").update(key, pred, gt)`` with the samples as Python
  lists of dicts (what ``json.loads`` gives, i.e. what a training loop holds);
- **file path**: the engine's per-pair job over the same samples as files
  (``run_pairs(..., jobs=1, digest=False)``: open, read, parse, score) — the work
  ``rpx eval`` does per pair in a worker;
- **reading**: the same files only read into a reused buffer (``FileBuffer.read``), the
  part of the file path an in-memory sample does not need.

The target is ``update <= file path - reading``. Also timed: ``state()`` and
``Evaluator.merged([state]).report()`` for the whole set.

Usage: python benchmarks/evaluator.py [--samples 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, machine
from detection3d import generate


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = generate(DATA / f"detection3d-{args.samples}", args.samples)

    from rpx_cli import Evaluator
    from rpx_cli.engine.pairs import run_pairs
    from rpx_cli.io.discover import pair_dirs
    from rpx_cli.io.filebuffer import FileBuffer
    from rpx_cli.params import resolve
    from rpx_cli.tasks import TASKS

    task = TASKS["detection3d"]
    params = {**resolve(task, {}), "missing": "error", "on_error": "fail"}
    pairing = pair_dirs(str(root / "pred"), str(root / "gt"), task.suffixes, missing="error")
    pairs = pairing.pairs
    samples = [(pair.stem, json.loads(Path(pair.pred_path).read_bytes()),
                json.loads(Path(pair.gt_path).read_bytes())) for pair in pairs]
    n_pred = sum(len(pred) for _, pred, _ in samples) / len(samples)

    def updates() -> None:
        evaluator = Evaluator("detection3d")
        for key, pred, gt in samples:
            evaluator.update(key, pred, gt)

    def file_path() -> None:
        run_pairs(task, pairs, params, jobs=1, digest=False)

    buffer = FileBuffer(digest=False)

    def reading() -> None:
        for pair in pairs:
            buffer.read(pair.gt_path)
            buffer.read(pair.pred_path)

    t_update = best(args.repeat, updates)
    t_files = best(args.repeat, file_path)
    t_read = best(args.repeat, reading)
    evaluator = Evaluator("detection3d")
    for key, pred, gt in samples:
        evaluator.update(key, pred, gt)
    t_state = best(args.repeat, evaluator.state)
    state = evaluator.state()
    t_report = best(max(1, args.repeat // 2), lambda: Evaluator.merged([state]).report())

    n = len(samples)
    per = 1e3 / n
    print(f"# {machine()}")
    print(f"samples {n}, {n_pred:.0f} predictions per sample on average; state {len(state) / 1e6:.2f} MB")
    print("| step | total s | per sample ms |")
    print("|---|---:|---:|")
    for name, value in (("update (in memory)", t_update), ("file path: read + parse + score", t_files),
                        ("reading only", t_read), ("file path minus reading", t_files - t_read),
                        ("state() of all samples", t_state), ("merged([state]).report()", t_report)):
        print(f"| {name} | {value:.3f} | {value * per:.3f} |")
    ratio = t_update / (t_files - t_read)
    print(f"update / (file path - reading) = {ratio:.2f} ({'met' if ratio <= 1 else 'missed'}: target <= 1)")


if __name__ == "__main__":
    main()
