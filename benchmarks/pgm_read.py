"""PGM P5 parsing cost against the raw cost of getting the bytes (``np.fromfile``).

Writes N 1080x1920 16-bit (big-endian) and 8-bit P5 PGMs under ``$RPX_BENCH_DATA`` once,
then times, in one process and warm cache, median of ``--repeat`` passes over all files:

- ``np.fromfile`` of each file (the bytes only: no header, no shape);
- rpx's reader: ``FileBuffer.read`` + ``parse_pgm`` (header, size check, zero-copy view),
  with the digest thread off and on;
- Pillow (``Image.open`` + ``np.asarray``), what most scripts use.

Usage: python benchmarks/pgm_read.py [--files 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, machine

from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.pgm import parse_pgm


def generate(root: Path, files: int, maxval: int) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    dtype = np.dtype(">u2") if maxval > 255 else np.dtype(np.uint8)
    paths = []
    for index in range(files):
        path = root / f"{index:05d}.pgm"
        if not path.exists():
            data = rng.integers(0, maxval + 1, size=(1080, 1920)).astype(dtype)
            path.write_bytes(f"P5\n# rpx benchmark\n1920 1080\n{maxval}\n".encode() + data.tobytes())
        paths.append(path)
    return paths


def best(fn, paths: list[Path], repeat: int) -> float:
    fn(paths)  # warm the page cache and the buffers
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(paths)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fromfile(paths):
    for path in paths:
        np.fromfile(path, dtype=np.uint8)


def rpx_reader(digest: bool):
    buffer = FileBuffer(digest=digest)

    def run(paths):
        for path in paths:
            parse_pgm(buffer.read(str(path)), str(path))
            buffer.digest()
    return run


def pillow(paths):
    from PIL import Image

    for path in paths:
        with Image.open(path) as image:
            np.asarray(image)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(f"{args.files} P5 PGMs of 1920x1080 per depth, warm cache, median of {args.repeat}")
    print("| depth | np.fromfile s | rpx parse s | ratio | rpx parse + sha256 s | Pillow s |")
    print("|---|---:|---:|---:|---:|---:|")
    for maxval, name in ((65535, "16-bit"), (255, "8-bit")):
        paths = generate(DATA / f"pgm-{name}", args.files, maxval)
        raw = best(fromfile, paths, args.repeat)
        ours = best(rpx_reader(False), paths, args.repeat)
        hashed = best(rpx_reader(True), paths, args.repeat)
        pil = best(pillow, paths, args.repeat)
        print(f"| {name} | {raw:.3f} | {ours:.3f} | {ours / raw:.2f}x (target <= 1.5) | "
              f"{hashed:.3f} | {pil:.3f} |")


if __name__ == "__main__":
    main()
