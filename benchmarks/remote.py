"""Time ``rpx eval depth`` from a local S3-compatible server against the same files on disk,
and ``--executor dask`` on a two-worker ``LocalCluster`` against ``--jobs 2``.

Data: N pairs of 480x640 float32 ``.npy`` depth maps (``benchmarks/depth.py``'s, generated
once under ``benchmarks/data/``), uploaded to moto's S3 server on 127.0.0.1 (started here,
threaded, in this process; the credentials are made up). Every command runs in a fresh
process; the commands are timed round-robin (one of each per round, ``--repeat`` rounds,
median) so that a change of the machine's load hits all of them alike. The 1-minute load
average is printed before and after.

1. S3 vs disk: ``rpx eval depth --jobs 1`` and ``--jobs 2`` with ``s3://`` folders and with
   the local folders; the floor of the S3 runs is the server's own read cost: one process
   that only lists the two prefixes and fetches every object once with s3fs (what rpx does
   per object, without evaluating anything), and the same with boto3's ``get_object``.
2. Dask vs local: ``--executor dask`` on a ``LocalCluster(n_workers=2, threads_per_worker=1)``
   started once here (its start-up not counted; the client's connection is) vs ``--jobs 2``
   (target: within 1.3x).

Usage: python benchmarks/remote.py [--pairs 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # its moto server
from _common import DATA, machine, rpx_command, timed_run
from depth import H, W, generate

FLOOR_S3FS = textwrap.dedent(
    """
    import sys, s3fs
    fs = s3fs.S3FileSystem()
    for prefix in sys.argv[1:]:
        for key in sorted(fs.find(prefix)):
            fs.cat_file(key, max_concurrency=1)
    """
)
FLOOR_BOTO3 = textwrap.dedent(
    """
    import sys, boto3
    client = boto3.client("s3")
    for url in sys.argv[1:]:
        bucket, prefix = url.removeprefix("s3://").split("/", 1)
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
    """
)


def load() -> str:
    with open("/proc/loadavg") as handle:
        return " ".join(handle.read().split()[:3])


def upload(fs, local: Path, url: str) -> None:
    base = url.removeprefix("s3://")
    for sub in ("pred", "gt"):
        files = sorted((local / sub).glob("*.npy"))
        for at in range(0, len(files), 64):  # s3fs sends a dict's objects concurrently
            fs.pipe({f"{base}/{sub}/{path.name}": path.read_bytes() for path in files[at:at + 64]})


def round_robin(commands: dict[str, tuple[list[str], dict | None]], repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, (argv, env) in commands.items():
            times[name].append(timed_run(argv, env=env))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from distributed import LocalCluster
    from s3_server import filesystem, s3_server

    root = generate(DATA / f"depth-{args.pairs}", args.pairs)
    n, py = args.pairs, sys.executable
    rpx = rpx_command() + ["eval", "depth", "-o", "/dev/null", "--quiet", "--no-digest-cache"]
    local = ["--pred-dir", str(root / "pred"), "--gt-dir", str(root / "gt")]
    print(f"machine: {machine()}")
    print(f"load average (1, 5, 15 min) at the start: {load()}")

    with s3_server() as server:
        os.environ.update(server.environ())  # this process's s3fs too (credentials are lazy)
        env = dict(os.environ)
        fs = filesystem(server.environ())
        fs.mkdir("bench")
        started = time.perf_counter()
        upload(fs, root, "s3://bench/depth")
        print(f"uploaded {2 * n} objects in {time.perf_counter() - started:.1f} s")
        remote = ["--pred-dir", "s3://bench/depth/pred", "--gt-dir", "s3://bench/depth/gt"]
        prefixes = ["s3://bench/depth/pred", "s3://bench/depth/gt"]
        timed_run([py, "-c", "import sys, numpy as np\nfrom pathlib import Path\n"
                   "[np.load(p) for d in sys.argv[1:] for p in sorted(Path(d).glob('*.npy'))]",
                   str(root / "pred"), str(root / "gt")])  # the page cache, warm
        s3 = round_robin({
            "floor_s3fs": ([py, "-c", FLOOR_S3FS, *prefixes], env),
            "floor_boto3": ([py, "-c", FLOOR_BOTO3, *prefixes], env),
            "disk1": ([*rpx, *local, "--jobs", "1"], None),
            "s3_1": ([*rpx, *remote, "--jobs", "1"], env),
            "disk2": ([*rpx, *local, "--jobs", "2"], None),
            "s3_2": ([*rpx, *remote, "--jobs", "2"], env),
        }, args.repeat)
    after_s3 = load()

    for name in server.environ():  # the local runs see no AWS variable
        os.environ.pop(name, None)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=":0") as cluster:
        dask = round_robin({
            "jobs2": ([*rpx, *local, "--jobs", "2"], None),
            "dask": ([*rpx, *local, "--executor", "dask", "--scheduler",
                      cluster.scheduler_address], None),
        }, args.repeat)

    print(f"load average after the S3 runs: {after_s3}; at the end: {load()}")
    print(f"{n} pairs of {H}x{W} float32 .npy depth maps ({2 * n} objects, "
          f"{2 * n * H * W * 4 / 1e9:.2f} GB), median of {args.repeat} round-robin, fresh "
          "process per run")
    print()
    print("| run | wall s | ms / pair | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| floor: list + s3fs `cat_file` of every object, 1 process | {s3['floor_s3fs']:.2f} | "
          f"{s3['floor_s3fs'] / n * 1e3:.2f} | 1.00x |")
    print(f"| floor: list + boto3 `get_object` of every object, 1 process | {s3['floor_boto3']:.2f} | "
          f"{s3['floor_boto3'] / n * 1e3:.2f} | {s3['floor_boto3'] / s3['floor_s3fs']:.2f}x |")
    for jobs in (1, 2):
        disk, remote_s = s3[f"disk{jobs}"], s3[f"s3_{jobs}"]
        print(f"| `rpx eval depth --jobs {jobs}`, disk | {disk:.2f} | {disk / n * 1e3:.2f} | |")
        print(f"| `rpx eval depth --jobs {jobs}`, s3:// | {remote_s:.2f} | {remote_s / n * 1e3:.2f} | "
              f"{remote_s / disk:.2f}x disk, {remote_s / s3['floor_s3fs']:.2f}x floor |")
    print()
    print("| run (disk) | wall s | ms / pair | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| `--jobs 2` | {dask['jobs2']:.2f} | {dask['jobs2'] / n * 1e3:.2f} | 1.00x |")
    ratio = dask["dask"] / dask["jobs2"]
    print(f"| `--executor dask`, LocalCluster 2 workers x 1 thread | {dask['dask']:.2f} | "
          f"{dask['dask'] / n * 1e3:.2f} | {ratio:.2f}x (target <= 1.3: "
          f"{'met' if ratio <= 1.3 else 'NOT met'}) |")


if __name__ == "__main__":
    main()
