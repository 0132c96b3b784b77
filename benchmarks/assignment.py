"""What ``from scipy.optimize import linear_sum_assignment`` costs a real run, against
loading scipy's compiled solver ``scipy.optimize._lsap`` by its file path.

rpx imports the solver in one place (``rpx_cli/ops/assignment.py``, ``solver()``). This
script runs rpx through a small wrapper that replaces ``solver`` before any task module
imports it, with either:

- **private**: ``scipy/optimize/_lsap*.so`` loaded by file path (numpy only; the loader
  rpx used until issue 26, kept here so the comparison can be repeated);
- **public**: ``from scipy.optimize import linear_sum_assignment`` (all of
  ``scipy.optimize``).

Workers are forked, so they inherit the replacement. Both variants run end to end in
fresh processes, round-robin, median of ``--repeat``, on generated data of realistic
size (warm digest cache, predictions renewed before each run: the usual re-run):

- ``rpx eval tracking --benchmark mot17`` on MOT17-like sequences (``tracking.py``'s
  generator; by default 7 sequences x 760 frames, about MOT17 train's 5,316 frames):
  the MOTChallenge preprocessing and CLEAR / Identity / HOTA solve assignments in the
  workers, so each worker imports the solver;
- ``rpx eval detection --metrics confusion`` on per-stem JSON (``detection.py``'s
  generator; by default 5,000 images, ~15 GT and 60 detections each): Aquarium's
  confusion matrix solves one optimal assignment per image in the summary (main process).

Then the import alone, in fresh processes: ``import numpy`` with nothing else, with the
private loader, and with the public import (the differences are the import costs).
Both variants' reports are checked to be equal (provenance aside).

Usage: python benchmarks/assignment.py [--sequences 7] [--frames 760] [--images 5000]
       [--repeat 5] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import detection
import tracking
from _common import DATA, DigestRuns, load, machine, measure, rpx_command, spread_line

PRIVATE = textwrap.dedent("""
    def solver():
        import importlib.machinery, importlib.util
        from pathlib import Path
        import scipy
        folder = Path(scipy.__file__).parent / "optimize"
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = folder / f"_lsap{suffix}"
            if path.is_file():
                break
        else:
            raise ImportError("scipy.optimize._lsap not found")
        spec = importlib.util.spec_from_file_location("scipy.optimize._lsap", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.linear_sum_assignment
""")
PUBLIC = textwrap.dedent("""
    def solver():
        from scipy.optimize import linear_sum_assignment
        return linear_sum_assignment
""")
VARIANTS = {"private": PRIVATE, "public": PUBLIC}

# python -c WRAPPER: rpx's CLI with solver() replaced (cached, as rpx caches it)
WRAPPER = """
import functools, sys
import rpx_cli.ops.assignment as assignment
{solver}
assignment.solver = functools.cache(solver)
sys.argv[0] = "rpx"
from rpx_cli.cli.main import main
main()
"""
IMPORT_ONLY = "import numpy\n{solver}\nsolver()([[1.0]], False)\n"


def wrapped(variant: str) -> list[str]:
    rpx_command()  # compiles rpx's bytecode once
    return [sys.executable, "-c", WRAPPER.format(solver=VARIANTS[variant])]


def summary(report: str) -> dict:
    """The report without what differs between two runs of the same data."""
    body = json.loads(report)
    body.pop("run_provenance", None)
    return body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=7)
    parser.add_argument("--frames", type=int, default=760)
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--jobs", default="2")
    args = parser.parse_args()
    mot = DATA / f"tracking-{args.sequences}x{args.frames}"
    tracking.generate(mot, args.sequences, args.frames)
    det = detection.generate(DATA / f"detection-{args.images}", args.images)
    workloads = {
        "tracking": (["eval", "tracking", "--pred-dir", str(mot / "rpx" / "pred"), "--gt-dir",
                      str(mot / "rpx" / "gt"), "--benchmark", "mot17"],
                     DigestRuns("assignment-tracking", predictions=[mot / "rpx" / "pred"],
                                ground_truth=[mot / "rpx" / "gt"]), args.sequences),
        "detection --metrics confusion": (
            ["eval", "detection", "--pred-dir", str(det / "pred"), "--gt-dir", str(det / "gt"),
             "--metrics", "confusion"],
            DigestRuns("assignment-detection", predictions=[det / "pred"],
                       ground_truth=[det / "gt"]), args.images),
    }
    common = ["--quiet", "--no-progress", "--jobs", args.jobs]
    commands = {}
    for name, (argv, runs, n_gt) in workloads.items():
        runs.warm(wrapped("private") + argv + common, expect_reused=n_gt)
        for variant in VARIANTS:
            commands[f"{name}, {variant}"] = (
                lambda argv=argv, runs=runs, variant=variant:
                wrapped(variant) + argv + common + runs.rerun())
    py = sys.executable
    commands["import numpy"] = lambda: [py, "-c", "import numpy"]
    for variant, code in VARIANTS.items():
        commands[f"import numpy + {variant} solver"] = (
            lambda code=code: [py, "-c", IMPORT_ONLY.format(solver=code)])
    load_before = load()
    timings = measure(commands, repeat=args.repeat, capture=True)
    for _, runs, _ in workloads.values():
        runs.cleanup()
    for name in workloads:
        if summary(timings[f"{name}, private"].stdout) != summary(timings[f"{name}, public"].stdout):
            raise SystemExit(f"{name}: the two variants' reports differ")
    median = {name: timing.median for name, timing in timings.items()}
    print(f"machine: {machine()}")
    print(f"load: {load_before} before, {load()} after")
    print(f"tracking: {args.sequences} sequences x {args.frames} frames; "
          f"{(mot / 'DONE').read_text().strip()}")
    print(f"detection: {args.images} images; {(det / 'DONE').read_text().strip()}")
    print(f"--jobs {args.jobs}, re-runs (warm digest cache, predictions renewed); fresh process "
          f"per run, round-robin, median of {args.repeat}; reports equal in both variants")
    print(spread_line(timings))
    print("| run | private s | public s | public - private s | of the private run |")
    print("|---|---:|---:|---:|---:|")
    for name in workloads:
        private, public = median[f"{name}, private"], median[f"{name}, public"]
        pairs = [b - a for a, b in zip(timings[f"{name}, private"].times,
                                       timings[f"{name}, public"].times, strict=True)]
        print(f"| `rpx eval {name}` | {private:.3f} | {public:.3f} | "
              f"{statistics.median(pairs):+.3f} | {statistics.median(pairs) / private:+.1%} |")
    base = median["import numpy"]
    print("| import | ms | over `import numpy`, ms |")
    print("|---|---:|---:|")
    for name in ("import numpy", *(f"import numpy + {v} solver" for v in VARIANTS)):
        print(f"| `{name}` | {median[name] * 1e3:.0f} | {(median[name] - base) * 1e3:+.0f} |")


if __name__ == "__main__":
    main()
