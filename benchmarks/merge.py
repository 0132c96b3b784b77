"""``rpx merge`` of many shard reports, against only reading them with orjson.

Builds (once) 64 partial reports of a 100,000-row depth evaluation: a real ``--shard``
report of the committed depth fixture is the template; its rows, statistics and digests
are replicated under 100,000 distinct stems (each stem in the shard its hash names), so
every part has exactly the layout ``rpx eval depth --shard K/64`` writes. Then times, in
fresh processes, round-robin, median of ``--repeat``: a script that ``orjson.loads`` the
64 files, and ``rpx merge`` of them (reading, checking, re-sorting 100,000 rows,
summarising, writing); the same for the parts without rows. Target (issue 18): within 3x
the bare read. ``rpx merge`` reads no file through the digest cache (it hashes the parts it
reads whole), so a first run and a re-run are the same. Also times ``rpx compare`` with
``--bootstrap 1000`` on 10,000 shared rows.

Usage: python benchmarks/merge.py [--rows 100000] [--shards 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, load, machine, measure, rpx_command, spread_line, timed_run, verdict

from rpx_cli.io.discover import layout_digest, lines_digest, pair_line, shard_of
from rpx_cli.report.serialize import dumps
from rpx_cli.run.state import part_seal

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "depth" / "indoor"

READ = textwrap.dedent(
    """
    import sys, orjson
    for path in sys.argv[1:]:
        with open(path, "rb") as handle:
            orjson.loads(handle.read())
    """
)


def template() -> dict:
    out = subprocess.run(rpx_command() + ["eval", "depth", "--pred-dir", str(FIXTURE / "pred"),
                                          "--gt-dir", str(FIXTURE / "gt"), "--shard", "1/1",
                                          "--jobs", "1", "--quiet"],
                         check=True, capture_output=True).stdout
    return json.loads(out)


def generate(root: Path, rows: int, shards: int) -> list[Path]:
    paths = [root / f"part{k:03d}.json" for k in range(1, shards + 1)]
    if (root / "DONE").exists():
        return paths
    root.mkdir(parents=True, exist_ok=True)
    base = template()
    rng = np.random.default_rng(0)
    row0, stats0 = base["rows"][0], base["state"]["stats"]
    sums0, capped0 = stats0["sums"][0], stats0["n_capped"][0]
    parts = {k: {"rows": [], "stems": [], "sums": [], "capped": [], "pred": {}, "gt": {}}
             for k in range(1, shards + 1)}
    for index in range(rows):
        stem = f"scene{index % 97:02d}/{index:07d}"
        part = parts[shard_of(stem, shards)]
        jitter = float(rng.uniform(0.5, 1.5))
        row = {k: (v * jitter if isinstance(v, float) else v) for k, v in row0.items()}
        row.update(stem=stem, pred_path=f"runs/depth/{stem}.npy", gt_path=f"data/depth/{stem}.png")
        part["rows"].append(row)
        part["stems"].append(stem)
        # DepthSums: n, five sums, the centred moment, three delta counts (counts kept)
        part["sums"].append([v * jitter if i not in (0, 7, 8, 9) else v
                             for i, v in enumerate(sums0)])
        part["capped"].append(capped0)
        part["pred"][f"{stem}.npy"] = f"{rng.integers(1 << 62):064x}"[-64:]
        part["gt"][f"{stem}.png"] = f"{rng.integers(1 << 62):064x}"[-64:]
    # what lets `rpx merge` verify a part (issue 31.2): its pairs, their digest, every
    # shard's digest (the run's layout), and its seal
    pairs = {k: [[stem, f"{stem}.npy", f"{stem}.png"] for stem in part["stems"]]
             for k, part in parts.items()}
    digests = [lines_digest(pair_line(pair) for pair in pairs[k]) for k in range(1, shards + 1)]
    layout = layout_digest(digests)
    for k, path in enumerate(paths, start=1):
        report = json.loads(json.dumps(base))
        part = parts[k]
        report["rows"] = part["rows"]
        report["n_pairs"] = len(part["rows"])
        report["state"].update(shard={"index": k, "count": shards}, stems=part["stems"],
                               stats={"sums": part["sums"], "n_capped": part["capped"]},
                               extras=[], digests={"pred_dir": part["pred"], "gt_dir": part["gt"]},
                               pairs=pairs[k], shard_digest=digests[k - 1], layout=layout)
        report["state"]["seal"] = part_seal(report)
        path.write_bytes(dumps(report))  # as rpx writes a report: sorted keys, 2-space indent
    (root / "DONE").write_text("ok\n")
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = DATA / f"merge-v2-{args.rows}-{args.shards}"  # v2: parts carry their seal
    paths = [str(p) for p in generate(root, args.rows, args.shards)]
    size = sum(Path(p).stat().st_size for p in paths) / 1e6
    lean_paths = []
    for path in paths:  # the same parts as --no-rows writes them (statistics, no rows)
        lean = Path(path).with_name(Path(path).stem + "-norows.json")
        if not lean.exists():
            report = json.loads(Path(path).read_text())
            report.pop("rows")
            report["state"]["seal"] = part_seal(report)
            lean.write_bytes(dumps(report))
        lean_paths.append(str(lean))
    lean_size = sum(Path(p).stat().st_size for p in lean_paths) / 1e6
    rpx = rpx_command()
    load_before = load()
    timings = measure({
        "read": lambda: [sys.executable, "-c", READ, *paths],
        "merge": lambda: rpx + ["merge", *paths, "-o", str(root / "merged.json")],
        "read lean": lambda: [sys.executable, "-c", READ, *lean_paths],
        "merge lean": lambda: rpx + ["merge", *lean_paths, "-o", str(root / "lean.json")],
    }, repeat=args.repeat)
    t = {name: timing.median for name, timing in timings.items()}
    read, merge, read_lean, merge_lean = t["read"], t["merge"], t["read lean"], t["merge lean"]
    # compare: two 10,000-row reports (the first 10,000 merged rows, and a perturbed copy)
    merged = json.loads((root / "merged.json").read_text())
    merged["rows"] = merged["rows"][:10_000]
    base_path, new_path = root / "base.json", root / "new.json"
    base_path.write_text(json.dumps(merged))
    for row in merged["rows"]:
        row["absrel"] *= 1.01
    new_path.write_text(json.dumps(merged))
    compare = timed_run(rpx_command() + ["compare", str(base_path), str(new_path), "--bootstrap",
                                         "1000", "-q", "-o", "/dev/null"], repeat=args.repeat)
    no_boot = timed_run(rpx_command() + ["compare", str(base_path), str(new_path), "--bootstrap",
                                         "0", "-q", "-o", "/dev/null"], repeat=args.repeat)
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"{args.shards} shard reports, {args.rows} rows in all ({size:.0f} MB of JSON), "
          f"fresh process per run, round-robin, median of {args.repeat}")
    print(spread_line(timings))
    print("| run | wall s | ratio |")
    print("|---|---:|---:|")
    print(f"| read the {args.shards} files with orjson | {read:.2f} | 1.00x |")
    print(f"| `rpx merge` | {merge:.2f} | {merge / read:.2f}x, "
          f"{verdict(merge / read, 3, at_most=True)} |")
    print(f"| read the {args.shards} `--no-rows` parts ({lean_size:.0f} MB) with orjson | "
          f"{read_lean:.2f} | 1.00x |")
    print(f"| `rpx merge` of the `--no-rows` parts | {merge_lean:.2f} | "
          f"{merge_lean / read_lean:.2f}x, {verdict(merge_lean / read_lean, 3, at_most=True)} |")
    print(f"| `rpx compare --bootstrap 0`, 10,000 shared rows | {no_boot:.2f} | |")
    print(f"| `rpx compare --bootstrap 1000`, 10,000 shared rows | {compare:.2f} | "
          f"bootstrap: {compare - no_boot:.2f} s |")


if __name__ == "__main__":
    main()
