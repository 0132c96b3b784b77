"""``rpx eval tracking`` against TrackEval and motrics on the same MOTChallenge files.

Generates (once) S sequences of F frames in MOT17 layout: ~15 pedestrians alive per frame
(tracks start and end, drift, are missed, switch predicted ids), a few distractor-class
and zero-marked GT boxes, spurious predictions. Each tool runs in a fresh process on the
same files, end to end (read, MOTChallenge preprocessing, CLEAR + Identity + HOTA),
round-robin, median of ``--repeat``; then the per-sequence MOTA / IDF1 / HOTA of every
tool are compared with rpx's. rpx runs as a first run (empty digest cache) and a re-run
(warm cache, unchanged GT, new predictions). The floor is a process that only reads the
text files into numpy arrays; the provenance floor also sha256s them.

Usage: python benchmarks/tracking.py [--sequences 4] [--frames 600] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, DigestRuns, floor_command, load, machine, measure, rpx_command, spread_line

FLOOR = textwrap.dedent("""
    import sys, json, numpy as np
    out = {}
    for seq in sys.argv[2:]:
        gt = np.loadtxt(f"{sys.argv[1]}/rpx/gt/{seq}.txt", delimiter=",", ndmin=2)
        pred = np.loadtxt(f"{sys.argv[1]}/rpx/pred/{seq}.txt", delimiter=",", ndmin=2)
        out[seq] = [len(gt), len(pred)]
    print(json.dumps(out))
""")
TRACKEVAL = textwrap.dedent("""
    import sys, json, contextlib, io
    import trackeval
    root, seqs = sys.argv[1], sys.argv[2:]
    quiet = {"PRINT_CONFIG": False}
    with contextlib.redirect_stdout(io.StringIO()):
        dataset = trackeval.datasets.MotChallenge2DBox({
            "GT_FOLDER": f"{root}/trackeval/gt", "TRACKERS_FOLDER": f"{root}/trackeval/trackers",
            "SKIP_SPLIT_FOL": True, "SEQ_INFO": {s: None for s in seqs},
            "TRACKERS_TO_EVAL": ["mine"], **quiet})
        evaluator = trackeval.Evaluator({"USE_PARALLEL": False, "PRINT_RESULTS": False,
            "TIME_PROGRESS": False, "OUTPUT_SUMMARY": False, "OUTPUT_DETAILED": False,
            "PLOT_CURVES": False, "PRINT_CONFIG": False, "DISPLAY_LESS_PROGRESS": True})
        metrics = [trackeval.metrics.CLEAR(quiet), trackeval.metrics.Identity(quiet),
                   trackeval.metrics.HOTA(quiet)]
        res, _ = evaluator.evaluate([dataset], metrics)
    res = res["MotChallenge2DBox"]["mine"]
    print(json.dumps({s: [res[s]["pedestrian"]["CLEAR"]["MOTA"], res[s]["pedestrian"]["Identity"]["IDF1"],
                          float(res[s]["pedestrian"]["HOTA"]["HOTA"].mean())] for s in seqs}))
""")
MOTRICS = textwrap.dedent("""
    import sys, json
    import motrics
    root, seqs = sys.argv[1], sys.argv[2:]
    out = {}
    for seq in seqs:
        gt = motrics.load_motchallenge_gt(f"{root}/rpx/gt/{seq}.txt")
        pred = motrics.load_motchallenge(f"{root}/rpx/pred/{seq}.txt")
        gi, gb, pi, pb = motrics.preprocess_motchallenge(gt, pred, benchmark="MOT17")
        r = motrics.evaluate(motrics.Frames(ids=gi, boxes=gb), motrics.Frames(ids=pi, boxes=pb))
        out[seq] = [r.clear.mota, r.identity.idf1, r.hota.hota]
    print(json.dumps(out))
""")


def generate(root: Path, n_seq: int, n_frames: int) -> list[str]:
    seqs = [f"MOT17-{k + 2:02d}" for k in range(n_seq)]
    if (root / "DONE").exists():
        return seqs
    rng = np.random.default_rng(0)
    for seq in seqs:
        gt, pred = [], []
        n_tracks = 60
        starts = rng.integers(1, n_frames, n_tracks)
        lengths = rng.integers(n_frames // 8, n_frames // 2, n_tracks)
        pos, vel = rng.uniform(0, 1700, (n_tracks, 2)), rng.normal(0, 1.5, (n_tracks, 2))
        size = rng.uniform([20, 50], [80, 200], (n_tracks, 2))
        cls = rng.choice([1] * 18 + [2, 7, 8, 12], n_tracks)
        pid = np.arange(n_tracks) + 1
        for f in range(1, n_frames + 1):
            alive = np.flatnonzero((starts <= f) & (f < starts + lengths))
            for k in alive.tolist():
                x, y = pos[k] + vel[k] * f
                w, h = size[k]
                flag = int(cls[k] == 1 and rng.random() > 0.05)
                gt.append(f"{f},{k + 1},{x:.2f},{y:.2f},{w:.2f},{h:.2f},{flag},{cls[k]},1\n")
                if rng.random() < 0.01:
                    pid[k] = rng.integers(1, 3 * n_tracks)
                if rng.random() < 0.9:
                    j = rng.normal(0, 0.05, 4) * [w, h, w, h]
                    pred.append((f, pid[k], x + j[0], y + j[1], w + j[2], h + j[3]))
            for _ in range(rng.poisson(1.5)):
                pred.append((f, 1000 + int(rng.integers(0, 50)), *rng.uniform(0, 1700, 2),
                             *rng.uniform(20, 150, 2)))
        seen, lines = set(), []
        for f, track, x, y, w, h in pred:
            if (f, track) not in seen:
                seen.add((f, track))
                lines.append(f"{f},{track},{x:.2f},{y:.2f},{w:.2f},{h:.2f},1,-1,-1,-1\n")
        gt.sort(key=lambda line: tuple(int(v) for v in line.split(",")[1::-1]))  # by id, frame
        for folder, name in ((root / "trackeval" / "gt" / seq / "gt", "gt.txt"),
                             (root / "rpx" / "gt", f"{seq}.txt")):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text("".join(gt))
        (root / "trackeval" / "gt" / seq / "seqinfo.ini").write_text(
            f"[Sequence]\nname={seq}\nseqLength={n_frames}\n")
        for folder, name in ((root / "trackeval" / "trackers" / "mine" / "data", f"{seq}.txt"),
                             (root / "rpx" / "pred", f"{seq}.txt")):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text("".join(lines))
    n_gt = sum(len((root / "rpx" / "gt" / f"{s}.txt").read_text().splitlines()) for s in seqs)
    n_pred = sum(len((root / "rpx" / "pred" / f"{s}.txt").read_text().splitlines()) for s in seqs)
    (root / "DONE").write_text(f"{n_gt} GT boxes, {n_pred} predicted boxes\n")
    return seqs


def rpx_values(report: str) -> dict[str, list[float]]:
    rows = json.loads(report)["rows"]
    return {row["stem"]: [row["mota"], row["idf1"], row["hota"]] for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=4)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = DATA / f"tracking-{args.sequences}x{args.frames}"
    seqs = generate(root, args.sequences, args.frames)
    py = sys.executable
    rpx = rpx_command() + ["eval", "tracking", "--pred-dir", str(root / "rpx" / "pred"),
                           "--gt-dir", str(root / "rpx" / "gt"), "--benchmark", "mot17",
                           "--quiet", "--no-progress"]
    runs = DigestRuns("tracking", predictions=[root / "rpx" / "pred"],
                      ground_truth=[root / "rpx" / "gt"])
    checks = runs.warm(rpx + ["--jobs", "1"], expect_reused=args.sequences)
    load_before = load()
    commands = {
        "floor: np.loadtxt of the files": lambda: [py, "-c", FLOOR, str(root), *seqs],
        "provenance floor: read once, sha256, parse": lambda: floor_command(
            hashed=[root / "rpx" / "gt", root / "rpx" / "pred"]),
        "TrackEval (trackeval package)": lambda: [py, "-c", TRACKEVAL, str(root), *seqs],
        "motrics": lambda: [py, "-c", MOTRICS, str(root), *seqs],
    }
    for jobs in ("default", "1", "2"):
        flag = [] if jobs == "default" else ["--jobs", jobs]
        label = "rpx (default --jobs)" if jobs == "default" else f"rpx --jobs {jobs}"
        for mode, extra in (("first run", runs.first), ("re-run", runs.rerun)):
            commands[f"{label}, {mode}"] = (
                lambda flag=flag, extra=extra: rpx + [*flag, *extra()])
    timings = measure(commands, repeat=args.repeat, capture=True)
    runs.cleanup()
    reference = rpx_values(timings["rpx --jobs 1, first run"].stdout)
    trackeval_s = timings["TrackEval (trackeval package)"].median
    motrics_s = timings["motrics"].median
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"{args.sequences} sequences x {args.frames} frames; {(root / 'DONE').read_text().strip()}; "
          f"fresh process per run, round-robin, median of {args.repeat}; digests {checks}")
    print(spread_line(timings))
    for mode in ("first run", "re-run"):
        report = json.loads(timings[f"rpx (default --jobs), {mode}"].stdout)
        print(f"default --jobs, {mode} (last run): {report['run_provenance']['executor']}")
    print("| tool | wall s | TrackEval / tool | tool / motrics | max abs diff of MOTA, IDF1, HOTA vs rpx |")
    print("|---|---:|---:|---:|---:|")
    for name, timing in timings.items():
        seconds, out = timing.median, timing.stdout
        diff = ""
        if name in ("TrackEval (trackeval package)", "motrics") or name.startswith("rpx"):
            values = rpx_values(out) if name.startswith("rpx") else json.loads(out)
            gap = max(abs(a - b) for s in seqs for a, b in zip(values[s], reference[s], strict=True))
            diff = f"{gap:.1e}"
        print(f"| {name} | {seconds:.3f} | {trackeval_s / seconds:.1f}x | {seconds / motrics_s:.2f}x "
              f"| {diff} |")


if __name__ == "__main__":
    main()
