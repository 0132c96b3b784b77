"""Plain helpers shared by the test modules: paths, file writers, report checks.

Fixtures live in conftest.py; data generators with a life outside the tests live in
mot_data.py and stability_scene.py (fixtures/ and benchmarks/ use them too).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from rpx_cli.report.schemas import detect_kind, validation_errors

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# golden cases: the product's fixtures, and those of tasks defined only in the test suite
FIXTURE_ROOTS = (FIXTURES, ROOT / "tests" / "fixtures")


# --- golden reports ---------------------------------------------------------------------

# numpy's float32 log and BLAS dot products take CPU-specific SIMD paths (AVX-512 or AVX2),
# which move the last digits of a report between machines: measured up to 1.6e-8 relative
# in depth's log metrics (float32 arithmetic, ~1e-7 of float64 by design), ~1e-15 in
# detection3d and nvs. A golden report is compared at a relative 1e-6; runs on one machine
# (shards, --jobs, executors) are compared with each other exactly.
GOLDEN_RELATIVE = 1e-6


def golden_differences(got: Any, expected: Any, path: str = "") -> list[str]:
    """Where ``got`` differs from a golden ``expected`` report: every key, list item, string,
    integer, bool and null exactly; floats to a relative :data:`GOLDEN_RELATIVE`."""
    if isinstance(got, dict) and isinstance(expected, dict):
        out = [f"{path}.{key}: missing" for key in expected if key not in got]
        out += [f"{path}.{key}: not expected" for key in got if key not in expected]
        for key in got.keys() & expected.keys():
            out += golden_differences(got[key], expected[key], f"{path}.{key}")
        return out
    if isinstance(got, list) and isinstance(expected, list):
        if len(got) != len(expected):
            return [f"{path}: {len(got)} items, expected {len(expected)}"]
        return [d for k, (a, b) in enumerate(zip(got, expected, strict=True))
                for d in golden_differences(a, b, f"{path}[{k}]")]
    if isinstance(got, float) and isinstance(expected, float | int) and \
            not isinstance(expected, bool):
        close = math.isclose(got, expected, rel_tol=GOLDEN_RELATIVE, abs_tol=1e-12)
        return [] if close else [f"{path}: {got!r}, expected {expected!r}"]
    if type(got) is not type(expected) or got != expected:
        return [f"{path}: {got!r}, expected {expected!r}"]
    return []


def assert_matches_golden(got: dict[str, Any], expected: dict[str, Any]) -> None:
    differences = golden_differences(got, expected)
    assert not differences, "differs from expected.json:\n" + "\n".join(differences[:20])


# --- command lines ------------------------------------------------------------------------


def golden_cases() -> list[Path]:
    """Every golden case folder (``<root>/<name>/<case>/args``), by name then case."""
    return sorted((p.parent for root in FIXTURE_ROOTS for p in root.glob("*/*/args")),
                  key=lambda case: (case.parent.name, case.name))


def command_of(case: Path) -> list[str]:
    """The command a case runs, and its input flags when ``args`` gives none."""
    from rpx_cli.tasks import TASKS

    name = case.parent.name
    args = shlex.split((case / "args").read_text())
    task = TASKS.get(name)
    if task is None:  # a workflow command (stability): args say everything
        return [name, *args]
    given = {"--pred-dir", "--gt-dir", *(option.flag for option in task.file_inputs),
             *(f"--{name.replace('_', '-')}" for name in task.input_names)}
    if not given & set(args):
        flags = [f"--{name.replace('_', '-')}" for name in task.input_names]
        if task.input_names == ("pred_dir", "gt_dir"):
            args = [flags[0], "pred", flags[1], "gt", *args]
        else:  # a task that names its folders (coherence: --mask-dir/--depth-dir)
            args = [flags[0], task.input_names[0].removesuffix("_dir"), flags[1],
                    task.input_names[1].removesuffix("_dir"), *args]
    return [*task.command, *args]


def golden_inputs() -> list[tuple[str, str, Path, dict[str, Any]]]:
    """Every input file the registered tasks' golden cases read, as ``(task, role, path,
    params)``: the files of each folder a case's command names (``--pred-dir`` is role
    ``pred``, ``--gt-dir`` ``gt``, or a task's own two folders in that order; an auxiliary
    folder is the role of its option, e.g. ``points_dir``) whose suffix the role reads, with
    the parameters the case ran with (its ``expected.json``'s ``params``), by case, then path.
    A newly registered task's golden cases bring its inputs here without editing a table."""
    from rpx_cli.tasks import TASKS

    found = []
    for case in golden_cases():
        task = TASKS.get(case.parent.name)
        if task is None:  # a workflow command (stability)
            continue
        roles = {f"--{name.replace('_', '-')}": (role, task.suffixes)
                 for name, role in zip(task.input_names, ("pred", "gt"), strict=True)}
        roles.update({option.flag: (option.param, option.suffixes) for option in task.aux_inputs})
        params = json.loads((case / "expected.json").read_text())["params"]
        argv = command_of(case)
        for flag, value in itertools.pairwise(argv):
            if flag not in roles:
                continue
            role, suffixes = roles[flag]
            wanted = {suffix.lower() for suffix in suffixes}
            found += [(task.name, role, path, params) for path in sorted((case / value).resolve().rglob("*"))
                      if path.is_file() and path.suffix.lower() in wanted]
    return found


def dirs(root: Path) -> str:
    """``--pred-dir root/pred --gt-dir root/gt``."""
    return f"--pred-dir {root / 'pred'} --gt-dir {root / 'gt'}"


# --- writing inputs -----------------------------------------------------------------------


def write_npy(path: Path, array: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, array)
    return path


def write_png(path: Path, array: np.ndarray) -> Path:
    import imageio.v3 as iio

    path.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(path, array)
    return path


def write_pgm(path: Path, array: np.ndarray, maxval: int | None = None, *, ascii: bool = False,
              header: str | None = None) -> Path:
    """Write a PGM; 16-bit samples big-endian as the format requires."""
    path.parent.mkdir(parents=True, exist_ok=True)
    height, width = array.shape
    maxval = maxval if maxval is not None else (255 if array.dtype == np.uint8 else 65535)
    head = header if header is not None else f"P{'2' if ascii else '5'}\n{width} {height}\n{maxval}\n"
    if ascii:
        body = "\n".join(" ".join(str(int(v)) for v in row) for row in array) + "\n"
        path.write_bytes(head.encode() + body.encode())
    else:
        dtype = np.uint8 if maxval < 256 else np.dtype(">u2")
        path.write_bytes(head.encode() + array.astype(dtype).tobytes())
    return path


def png_rgb16(path: Path, array: np.ndarray) -> Path:
    """A 16-bit RGB PNG written by hand (Pillow cannot write one)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    path.parent.mkdir(parents=True, exist_ok=True)
    height, width, _ = array.shape
    raw = b"".join(b"\x00" + row.astype(">u2").tobytes() for row in array)
    ihdr = struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return path


def write_json(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def write_json_pair(root: Path, stem: str, gt: Any, pred: Any) -> None:
    """``root/gt/<stem>.json`` and ``root/pred/<stem>.json``; a side given as None gets
    its folder but no file (a missing prediction)."""
    for role, document in (("gt", gt), ("pred", pred)):
        (root / role).mkdir(parents=True, exist_ok=True)
        if document is not None:
            write_json(root / role / f"{stem}.json", document)


# --- geometry -------------------------------------------------------------------------------


def rz(degrees: float) -> np.ndarray:
    """The rotation by ``degrees`` about z."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


# --- detection inputs ---------------------------------------------------------------------


def box(label, xyxy, score=None, **extra) -> dict[str, Any]:
    """One object of a per-stem detection file."""
    out = {"bbox": list(xyxy), "label": label, **extra}
    if score is not None:
        out["score"] = score
    return out


def generated_detections(seed: int, n_images: int = 25) -> list[tuple[str, list, list]]:
    """``(stem, gt, pred)`` frames: clusters of jittered detections around GT boxes, crowd
    boxes, free false positives, images without detections, scores rounded (ties), and a
    class ``c4`` that appears only in predictions."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(n_images):
        gt, pred = [], []
        for _ in range(rng.integers(0, 9)):
            label = f"c{rng.integers(0, 4)}"  # c4 appears only in predictions
            x, y = rng.uniform(0, 300, 2)
            w, h = rng.uniform(3, 150, 2)
            gt.append(box(label, [x, y, x + w, y + h], iscrowd=int(rng.random() < 0.08)))
            for _ in range(rng.integers(0, 3)):
                j = rng.normal(0, 6, 4)
                x1, y1 = x + j[0], y + j[1]
                pred.append(box(label, [x1, y1, max(x1 + 1, x + w + j[2]), max(y1 + 1, y + h + j[3])],
                                round(float(rng.random()), 1)))  # ties
        if rng.random() < 0.8:
            for _ in range(rng.integers(0, 5)):
                x, y = rng.uniform(0, 300, 2)
                pred.append(box(f"c{rng.integers(1, 5)}", [x, y, x + 40, y + 30],
                                round(float(rng.random()), 1)))
        frames.append((f"img{i:03d}", gt, pred))
    return frames


# --- depth inputs with a manifest -------------------------------------------------------


def depth_pairs(root: Path, n: int = 9) -> list[str]:
    """``n`` small float32 depth pairs ``s00``, ``s01``, ... under root/pred and root/gt."""
    rng = np.random.default_rng(3)
    stems = [f"s{i:02d}" for i in range(n)]
    for stem in stems:
        gt = rng.uniform(1, 5, (6, 8)).astype(np.float32)
        write_npy(root / "gt" / f"{stem}.npy", gt)
        write_npy(root / "pred" / f"{stem}.npy", (gt * rng.uniform(0.8, 1.2, gt.shape)).astype(np.float32))
    return stems


def write_manifest(path: Path, stems: list[str], *, key: str = "stem", phases=None) -> None:
    """A manifest cycling phases over the stems and difficulties over groups of three."""
    phases = phases or ["clutter", "interaction", "clean"]
    samples = [{key: s, "phase": phases[i % 3], "difficulty": ["easy", "medium", "hard"][i // 3 % 3]}
               for i, s in enumerate(stems)]
    path.write_text(json.dumps({"schema_version": 1, "samples": samples}))


# --- checking reports and runs --------------------------------------------------------------


def assert_finite(value: Any, path: str = "$") -> None:
    """No NaN or infinity anywhere in a parsed report."""
    if isinstance(value, dict):
        for key, item in value.items():
            assert_finite(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            assert_finite(item, f"{path}[{index}]")
    elif isinstance(value, float):
        assert math.isfinite(value), f"non-finite number at {path}"


def parse_report(text: str | bytes) -> dict[str, Any]:
    """Parse strictly (NaN/Infinity tokens are rejected) and validate against the schema."""
    def refuse(token: str) -> None:
        raise AssertionError(f"report contains the non-JSON token {token}")

    report = json.loads(text, parse_constant=refuse)
    assert_finite(report)
    problems = validation_errors(report, detect_kind(report))
    assert not problems, "report does not match its schema:\n" + "\n".join(problems)
    return report


def without_provenance(report: dict) -> dict:
    """A copy of ``report`` without ``run_provenance`` (which names paths, times, argv)."""
    return {key: value for key, value in report.items() if key != "run_provenance"}


def assert_one_line_error(run, path: Path, message: str) -> None:
    """Exit 1, no report, and exactly one stderr line names ``path`` and says ``message``."""
    assert run.exit_code == 1, run.stdout
    assert "Traceback" not in run.stderr and run.stdout == ""
    naming = [line for line in run.stderr.splitlines() if str(path) in line]
    assert len(naming) == 1 and message in naming[0].replace(str(path), ""), run.stderr


def assert_jobs_and_shards_agree(rpx, command: str, tmp_path: Path, *, shards: int = 3) -> None:
    """``command`` (an ``rpx eval ...`` line) gives the same numbers with --jobs 1, --jobs 2
    and as --shard parts merged with ``rpx merge``."""
    one = rpx(f"{command} --jobs 1").json
    two = rpx(f"{command} --jobs 2").json
    parts = []
    for k in range(1, shards + 1):
        out = tmp_path / f"part{k}.json"
        assert rpx(f"{command} --shard {k}/{shards} -o {out}").exit_code == 0
        parts.append(str(out))
    merged_path = tmp_path / "merged.json"
    assert rpx(["merge", *parts, "-o", str(merged_path)]).exit_code == 0
    merged = json.loads(merged_path.read_text())
    for report in (two, merged):
        for key in ("aggregate", "dataset", "rows", "params", "metric_info"):
            assert report[key] == one[key], key


# --- running documented command lines ------------------------------------------------------

JQ = shutil.which("jq")


def shell_commands(text: str) -> list[str]:
    """The command lines of a shell snippet: ``\\`` continuations joined, comments and blank
    lines dropped."""
    joined = re.sub(r"\s*\\\n\s*", " ", text)
    lines = [line.split(" #")[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def run_shell_line(rpx, line: str, cwd: Path) -> list[tuple[str, int]]:
    """Run one documented command line as a shell would, rpx in-process: ``a && b`` and
    ``a; b`` in sequence (``&&`` stops at a failure), ``| jq FILTER`` through jq when it is
    installed (dropped otherwise), ``> FILE`` / ``>> FILE``, ``$VARS``, ``~/`` and globs
    expanded in ``cwd``. Lines of other programs than rpx and jq are skipped. Returns ``(command, exit
    code)`` for every command run; a failing jq filter raises."""
    results: list[tuple[str, int]] = []
    lexer = shlex.shlex(os.path.expandvars(line), posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    tokens = list(lexer)
    segments: list[tuple[list[str], str]] = [([], "")]
    for token in tokens:
        if token in ("&&", ";"):
            segments.append(([], token))
        else:
            segments[-1][0].append(token)
    segments = [([os.path.expanduser(w) if w.startswith("~/") else w for w in words], joiner)
                for words, joiner in segments]
    for words, joiner in segments:
        if joiner == "&&" and results and results[-1][1] != 0:
            break
        if not words:
            continue
        command, pipes, redirect = _split_pipeline(words)
        if command[0] not in ("rpx", "jq"):
            continue
        if command[0] == "jq":
            if JQ is not None:
                subprocess.run([JQ, *command[1:]], cwd=cwd, check=True, capture_output=True)
            results.append((" ".join(command), 0))
            continue
        argv = []
        for word in command[1:]:
            matches = sorted(str(p.relative_to(cwd)) for p in cwd.glob(word)) if "*" in word else []
            argv += matches or [word]
        run = rpx(argv)
        output = run.stdout
        for pipe in pipes:
            if pipe[0] == "jq" and JQ is not None and run.exit_code in (0, 3):
                done = subprocess.run([JQ, *pipe[1:]], cwd=cwd, input=output, text=True,
                                      capture_output=True)
                assert done.returncode == 0, f"{line}: jq failed: {done.stderr}"
                output = done.stdout
        if redirect:
            mode, target = redirect
            with open(cwd / target, "a" if mode == ">>" else "w") as handle:
                handle.write(output)
        results.append((" ".join(command), run.exit_code))
        assert "Traceback" not in run.stderr, run.stderr
    return results


def _split_pipeline(words: list[str]) -> tuple[list[str], list[list[str]], tuple[str, str] | None]:
    stages: list[list[str]] = [[]]
    redirect = None
    iterator = iter(words)
    for word in iterator:
        if word == "|":
            stages.append([])
        elif word in (">", ">>"):
            redirect = (word, next(iterator))
        else:
            stages[-1].append(word)
    return stages[0], stages[1:], redirect
