"""Write every report the committed fixtures produce, byte for byte, for a before/after check.

    python tools/fixture_reports.py OUT_DIR [--rpx PATH]
    diff -r BEFORE_DIR AFTER_DIR        # a refactor must leave this empty

Each golden case (``fixtures/<command>/<case>/args``) is run in a copy of ``fixtures/`` outside
any git checkout (so ``run_provenance.git`` is null) with ``SOURCE_DATE_EPOCH=0`` (so times are
fixed), in several variants: ``--jobs 1``, ``--jobs 2``, ``--no-rows``, two ``--shard`` parts and
their ``rpx merge``, ``rpx show`` (table and Markdown). Then the deployment workflow on the
kitchen fixture (``--manifest`` strata with a bootstrap, stability, coherence, readiness) and
``rpx compare``. Every output file and every command's exit code and stderr are written to
OUT_DIR; two runs of the same code give identical folders.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rpx", default=str(Path(sys.executable).parent / "rpx"))
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": "0", "COLUMNS": "120", "NO_COLOR": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        fixtures = Path(tmp) / "fixtures"
        shutil.copytree(ROOT / "fixtures", fixtures)
        log: list[str] = []

        def run(name: str, argv: list[str], cwd: Path, *, stdout_file: str | None = None) -> None:
            done = subprocess.run([args.rpx, *argv], cwd=cwd, env=env, capture_output=True)
            log.append(f"== {name}: rpx {shlex.join(argv)} -> {done.returncode}\n"
                       f"{done.stderr.decode(errors='replace')}")
            if stdout_file:
                (out / stdout_file).write_bytes(done.stdout)

        for args_file in sorted(fixtures.glob("*/*/args")):
            case = args_file.parent
            command, label = case.parent.name, f"{case.parent.name}__{case.name}"
            words = shlex.split(args_file.read_text())
            if not {"--pred-dir", "--coco-gt", "--mask-dir"} & set(words):
                words = ["--pred-dir", "pred", "--gt-dir", "gt", *words]
            base = (["eval", command] if command not in ("saliency-mb", "coherence", "stability")
                    else [command]) + words
            run(f"{label}.jobs1", [*base, "--jobs", "1", "-o", str(out / f"{label}.jobs1.json")], case)
            run(f"{label}.jobs2", [*base, "--jobs", "2", "-o", str(out / f"{label}.jobs2.json")], case)
            if command == "stability":
                continue
            run(f"{label}.norows", [*base, "--jobs", "1", "--no-rows",
                                    "-o", str(out / f"{label}.norows.json")], case)
            parts = [str(out / f"{label}.part{k}.json") for k in (1, 2)]
            for k, part in enumerate(parts, 1):
                run(f"{label}.part{k}", [*base, "--jobs", "1", "--shard", f"{k}/2", "-o", part], case)
            run(f"{label}.merged", ["merge", *parts, "-o", str(out / f"{label}.merged.json")], case)
            for fmt in ("table", "markdown"):
                run(f"{label}.show-{fmt}", ["show", str(out / f"{label}.jobs1.json"), "--format", fmt],
                    case, stdout_file=f"{label}.show-{fmt}.txt")

        kitchen = fixtures / "stability" / "kitchen"
        deploy = [
            ("eval-strata", ["eval", "depth", "--pred-dir", "pred/depth", "--gt-dir", "gt/depth",
                             "--manifest", "manifest.json", "--bootstrap", "50", "--seed", "3",
                             "--jobs", "1", "-o", str(out / "deploy.eval.json")]),
            ("eval-strata-seg", ["eval", "segmentation", "--pred-dir", "pred/labels", "--gt-dir",
                                 "gt/labels", "--manifest", "manifest.json", "--jobs", "1",
                                 "-o", str(out / "deploy.eval-seg.json")]),
            ("stability", ["stability", "--task", "depth", "--pred-dir", "pred/depth", "--manifest",
                           "manifest.json", "--jobs", "1", "-o", str(out / "deploy.ts.json")]),
            ("coherence", ["coherence", "--mask-dir", "pred/labels", "--depth-dir", "pred/depth",
                           "--jobs", "1", "-o", str(out / "deploy.sgc.json")]),
            ("readiness", ["readiness", "--eval", str(out / "deploy.eval.json"), "--stability",
                           str(out / "deploy.ts.json"), "--coherence", str(out / "deploy.sgc.json"),
                           "--latency-ms", "12", "-o", str(out / "deploy.readiness.json")]),
        ]
        for name, argv in deploy:
            run(name, argv, kitchen)
        for fmt in ("table", "markdown"):
            run(f"readiness-show-{fmt}", ["show", str(out / "deploy.readiness.json"), "--format", fmt],
                kitchen, stdout_file=f"deploy.readiness.show-{fmt}.txt")
        run("compare", ["compare", str(out / "depth__indoor.jobs1.json"),
                        str(out / "depth__indoor.jobs2.json"), "--bootstrap", "100",
                        "-o", str(out / "compare.json")], fixtures)
        run("compare-md", ["compare", str(out / "segmentation__street.jobs1.json"),
                           str(out / "segmentation__street.norows.json"), "--format", "markdown"],
            fixtures, stdout_file="compare.md")
        run("metrics", ["metrics", "--json"], fixtures, stdout_file="metrics.json")
        (out / "log.txt").write_text("".join(log).replace(tmp, "<tmp>").replace(str(out), "<out>"))
    for path in out.glob("*.json"):  # report paths name OUT_DIR: make them comparable
        path.write_bytes(path.read_bytes().replace(str(out).encode(), b"<out>"))
    for path in out.glob("*.txt"):
        path.write_bytes(path.read_bytes().replace(str(out).encode(), b"<out>"))
    print(f"wrote {len(list(out.iterdir()))} files to {out}")


if __name__ == "__main__":
    main()
