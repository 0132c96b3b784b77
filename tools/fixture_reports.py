"""Write every report the committed fixtures produce, byte for byte, for a before/after check.

    python tools/fixture_reports.py OUT_DIR [--rpx PATH]
    diff -r BEFORE_DIR AFTER_DIR        # a refactor must leave this empty

Each golden case (``fixtures/<command>/<case>/args``) is run in a copy of ``fixtures/`` outside
any git checkout (so ``run_provenance.git`` is null) with ``SOURCE_DATE_EPOCH=0`` (so times are
fixed), in several variants: ``--jobs 1``, ``--jobs 2``, ``--no-rows``, two ``--shard`` parts and
their ``rpx merge``, ``rpx show`` (table and Markdown). Then the deployment workflow on the
kitchen fixture (``--manifest`` strata with a bootstrap, stability, coherence, readiness) and
``rpx compare``. Every output file and every command's exit code and stderr are written to
OUT_DIR; two runs of the same code give identical folders, whatever OUT_DIR is (the commands
write their outputs under the temporary copy by relative paths, so no report — nor the digest
of a ``--shard`` part that ``rpx merge`` records — holds OUT_DIR's name).
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
        written = Path(tmp) / "out"
        written.mkdir()
        log: list[str] = []

        def at(cwd: Path, name: str) -> str:
            """Where a command run in ``cwd`` writes ``name``: a path relative to ``cwd``."""
            return os.path.relpath(written / name, cwd)

        def run(name: str, argv: list[str], cwd: Path, *, stdout_file: str | None = None) -> None:
            done = subprocess.run([args.rpx, *argv], cwd=cwd, env=env, capture_output=True)
            log.append(f"== {name}: rpx {shlex.join(argv)} -> {done.returncode}\n"
                       f"{done.stderr.decode(errors='replace')}")
            if stdout_file:
                (written / stdout_file).write_bytes(done.stdout)

        for args_file in sorted(fixtures.glob("*/*/args")):
            case = args_file.parent
            command, label = case.parent.name, f"{case.parent.name}__{case.name}"
            words = shlex.split(args_file.read_text())
            if not {"--pred-dir", "--coco-gt", "--mask-dir"} & set(words):
                words = ["--pred-dir", "pred", "--gt-dir", "gt", *words]
            base = (["eval", command] if command not in ("saliency-mb", "coherence", "stability")
                    else [command]) + words
            run(f"{label}.jobs1", [*base, "--jobs", "1", "-o", at(case, f"{label}.jobs1.json")], case)
            run(f"{label}.jobs2", [*base, "--jobs", "2", "-o", at(case, f"{label}.jobs2.json")], case)
            if command == "stability":
                continue
            run(f"{label}.norows", [*base, "--jobs", "1", "--no-rows",
                                    "-o", at(case, f"{label}.norows.json")], case)
            parts = [at(case, f"{label}.part{k}.json") for k in (1, 2)]
            for k, part in enumerate(parts, 1):
                run(f"{label}.part{k}", [*base, "--jobs", "1", "--shard", f"{k}/2", "-o", part], case)
            run(f"{label}.merged", ["merge", *parts, "-o", at(case, f"{label}.merged.json")], case)
            for fmt in ("table", "markdown"):
                run(f"{label}.show-{fmt}", ["show", at(case, f"{label}.jobs1.json"), "--format", fmt],
                    case, stdout_file=f"{label}.show-{fmt}.txt")

        kitchen = fixtures / "stability" / "kitchen"
        deploy = [
            ("eval-strata", ["eval", "depth", "--pred-dir", "pred/depth", "--gt-dir", "gt/depth",
                             "--manifest", "manifest.json", "--bootstrap", "50", "--seed", "3",
                             "--jobs", "1", "-o", at(kitchen, "deploy.eval.json")]),
            ("eval-strata-seg", ["eval", "segmentation", "--pred-dir", "pred/labels", "--gt-dir",
                                 "gt/labels", "--manifest", "manifest.json", "--jobs", "1",
                                 "-o", at(kitchen, "deploy.eval-seg.json")]),
            ("stability", ["stability", "--task", "depth", "--pred-dir", "pred/depth", "--manifest",
                           "manifest.json", "--jobs", "1", "-o", at(kitchen, "deploy.ts.json")]),
            ("coherence", ["coherence", "--mask-dir", "pred/labels", "--depth-dir", "pred/depth",
                           "--jobs", "1", "-o", at(kitchen, "deploy.sgc.json")]),
            ("readiness", ["readiness", "--eval", at(kitchen, "deploy.eval.json"), "--stability",
                           at(kitchen, "deploy.ts.json"), "--coherence", at(kitchen, "deploy.sgc.json"),
                           "--latency-ms", "12", "-o", at(kitchen, "deploy.readiness.json")]),
        ]
        for name, argv in deploy:
            run(name, argv, kitchen)
        for fmt in ("table", "markdown"):
            run(f"readiness-show-{fmt}", ["show", at(kitchen, "deploy.readiness.json"), "--format", fmt],
                kitchen, stdout_file=f"deploy.readiness.show-{fmt}.txt")
        run("compare", ["compare", at(fixtures, "depth__indoor.jobs1.json"),
                        at(fixtures, "depth__indoor.jobs2.json"), "--bootstrap", "100",
                        "-o", at(fixtures, "compare.json")], fixtures)
        run("compare-md", ["compare", at(fixtures, "segmentation__street.jobs1.json"),
                           at(fixtures, "segmentation__street.norows.json"), "--format", "markdown"],
            fixtures, stdout_file="compare.md")
        run("metrics", ["metrics", "--json"], fixtures, stdout_file="metrics.json")
        (written / "log.txt").write_text("".join(log).replace(tmp, "<tmp>"))
        for path in written.iterdir():  # (a message may name the copy's absolute path)
            out.joinpath(path.name).write_bytes(path.read_bytes().replace(tmp.encode(), b"<tmp>"))
    print(f"wrote {len(list(out.iterdir()))} files to {out}")


if __name__ == "__main__":
    main()
