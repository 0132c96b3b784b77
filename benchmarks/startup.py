"""Start-up: ``rpx --version``, ``rpx --help`` and a task's ``--help`` against ``python -c
"import click"``.

Each command runs ``--repeat`` times in a fresh process; medians are compared.

Usage: python benchmarks/startup.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, rpx_command, timed_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    py = sys.executable
    rows = {
        "python -c pass": [py, "-c", "pass"],
        'python -c "import click"': [py, "-c", "import click"],
        "rpx --version": rpx_command() + ["--version"],
        "rpx --help": rpx_command() + ["--help"],
        "rpx saliency-mb --help": rpx_command() + ["saliency-mb", "--help"],
        # a task's command imports numpy and that task's module only (registry.find_task)
        "rpx eval depth --help": rpx_command() + ["eval", "depth", "--help"],
        "rpx eval --help (every task)": rpx_command() + ["eval", "--help"],
    }
    times = {name: timed_run(argv, repeat=args.repeat) for name, argv in rows.items()}
    click = times['python -c "import click"']
    print(f"machine: {machine()}")
    print(f"fresh processes, median of {args.repeat}")
    print("| command | ms | vs import click |")
    print("|---|---:|---:|")
    for name, seconds in times.items():
        print(f"| `{name}` | {seconds * 1e3:.0f} | {seconds / click:.2f}x |")


if __name__ == "__main__":
    main()
