"""The COCO files of ``rpx eval detection --coco-gt G --coco-dt D``, read and scanned by the
native core while the command line is still being imported.

Starting rpx takes ~0.2 s of one core (numpy, click, the task modules: Python holding the
GIL); reading and scanning a COCO box run's files takes about as long in C (the 28 MB results
and 9.5 MB GT of ``benchmarks/detection.py``: 0.1 s and 0.07 s) with the GIL released. So
:func:`start`, called by ``rpx_cli.cli.startup`` before anything else is imported, looks at the
arguments and, for that command, reads each named local regular file whole in one thread,
runs the scanner of its role and ``--iou-type`` (``coco_gt`` / ``coco_results`` of
``rpx_cli/csrc``) on the bytes, then hashes them (``run_provenance``'s sha256).

The readers then ask :func:`read` for a file's bytes and :func:`scanned` for what the scanner
made of them. A prefetched file is handed over only when it is still the file that was read —
its stat key (device, inode, size, mtime, ctime; the digest cache's) the same now as before
and after the read — so the bytes are those a read now would give; anything else (a file
changed, not regular, a URL, an unreadable one, ``RPX_NATIVE=0``, another command) leaves the
ordinary read to happen, and to word any error. Nothing here raises or changes a result: the
prefetched bytes and scans are what the readers would have computed themselves."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
from typing import Any

# --iou-type -> the scanners' field codes (GT, results); None: that side has no scanner. The
# readers' own tables (io/coco_gt_columns.py, io/coco_columns.py: numpy modules, not imported
# at start-up) must agree: tests/test_prefetch.py holds them equal
_CODES = {"bbox": (0, 0), "segm": (1, 1), "keypoints": (2, 3)}
MISSING = object()  # scanned(): nothing prefetched for these bytes


class _File:
    def __init__(self, path: str, kernel: str | None, code: int | None, threads: int = 1) -> None:
        self.path, self.kernel, self.code, self.threads = path, kernel, code, threads
        self.key: tuple | None = None
        self.data: bytes | None = None
        self.scan: Any = MISSING
        self.sha256: str | None = None
        self.ready = threading.Event()  # read and scanned (the digest may still be running)

    def digest(self) -> None:
        """run_provenance's sha256 of the bytes read, off the run's critical path."""
        if self.data is not None:
            self.sha256 = hashlib.sha256(self.data).hexdigest()
            with _LOCK:
                _DIGESTS[os.path.abspath(self.path)] = (self.key, self.sha256)

    def _read_and_scan(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                return
            chunks, size = [], 0
            while size < before.st_size:
                chunk = os.read(fd, before.st_size - size)
                if not chunk:
                    return
                chunks.append(chunk)
                size += len(chunk)
            after = os.fstat(fd)
        except OSError:
            return
        finally:
            os.close(fd)
        if _key(before) != _key(after):
            return
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self.key, self.data = _key(after), data
        if self.kernel is not None:
            try:
                from rpx_cli import native

                core = native.core()
                if core is not None:
                    self.scan = core.coco_gt(data, self.code) if self.kernel == "coco_gt" else \
                        core.coco_results(data, self.code, self.threads)
            except Exception:  # the reader scans again and words what went wrong
                self.scan = MISSING


def _run(files: list[_File]) -> None:
    """One thread for every file (the imports keep the other core busy): each read and
    scanned in turn, then their digests. Whatever goes wrong leaves the reader to read the
    file itself; no file is left waited for."""
    try:
        for file in files:
            try:
                file._read_and_scan()
            except Exception:  # (the reader reads it again and words what is wrong)
                file.data, file.scan = None, MISSING
            finally:
                file.ready.set()
        for file in files:
            with contextlib.suppress(Exception):  # (run_provenance hashes it itself)
                file.digest()
    finally:
        for file in files:
            file.ready.set()


_FILES: dict[str, _File] = {}
_DIGESTS: dict[str, tuple[tuple, str]] = {}  # absolute path -> (stat key, sha256 hex)
_THREADS: dict[str, threading.Thread] = {}  # absolute path -> the thread reading it
_LOCK = threading.Lock()


def _key(st: os.stat_result) -> tuple:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _option(argv: list[str], name: str) -> str | None:
    """The last value of ``--name value`` / ``--name=value`` in ``argv`` (click's last wins)."""
    value = None
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(name + "="):
            value = arg[len(name) + 1:]
    return value


def start(argv: list[str]) -> None:
    """Start reading and scanning the COCO files of ``argv`` (``sys.argv[1:]``) when it is
    ``eval detection`` with both ``--coco-gt`` and ``--coco-dt`` and the native core is in
    use; otherwise do nothing."""
    if "--" in argv:
        argv = argv[:argv.index("--")]
    if argv[:2] != ["eval", "detection"] or "--help" in argv:
        return
    gt, dt = _option(argv, "--coco-gt"), _option(argv, "--coco-dt")
    if not gt or not dt or "://" in gt or "://" in dt:
        return
    if os.environ.get("RPX_NATIVE", "").strip().lower() in ("0", "false", "no", "off"):
        return
    codes = _CODES.get(_option(argv, "--iou-type") or "bbox")
    if codes is None or _option(argv, "--geometry") not in (None, "box") or \
            _option(argv, "--on-error") == "skip" or "--lvis" in argv:  # (read record by record)
        codes = (None, None)
    files = [_File(gt, None if codes[0] is None else "coco_gt", codes[0]),
             _File(dt, None if codes[1] is None else "coco_results", codes[1], _scan_threads(argv))]
    with _LOCK:
        files = [file for file in files if _FILES.setdefault(os.path.abspath(file.path), file) is file]
    thread = threading.Thread(target=_run, args=(files,), daemon=True, name="rpx-prefetch")
    with _LOCK:
        _THREADS.update((os.path.abspath(file.path), thread) for file in files)
    # a small stack (the scanners nest at most 64 deep): less of a capped address space
    previous = threading.stack_size(1 << 20)
    try:
        thread.start()
    finally:
        threading.stack_size(previous)


def _scan_threads(argv: list[str]) -> int:
    """Two threads for the results file's scan (halves of a large list) where the process
    may run on two CPUs and ``--jobs`` does not say one."""
    try:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    except OSError:
        cpus = 1
    jobs = _option(argv, "--jobs") or _option(argv, "-j")
    return 1 if cpus < 2 or (jobs is not None and jobs.strip() == "1") else 2


def _taken(path: str) -> _File | None:
    """The prefetched file of ``path`` (waiting for its thread), once: None when there is
    none or it is no longer the file on disk."""
    with _LOCK:
        file = _FILES.pop(os.path.abspath(path), None) if _FILES else None
    if file is None:
        return None
    file.ready.wait()
    if file.data is None:
        return None
    try:
        if _key(os.stat(path)) != file.key:
            return None
    except OSError:
        return None
    return file


_SCANNED: dict[int, tuple[bytes, str, Any, Any]] = {}


def read(path: str) -> bytes:
    """``path``'s bytes: the prefetched ones when they are still the file's, else read now
    (:func:`rpx_cli.io.regular.read_bytes`, with its errors)."""
    file = _taken(path)
    if file is None:
        from rpx_cli.io.regular import read_bytes

        return read_bytes(path)
    if file.scan is not MISSING:
        _SCANNED[id(file.data)] = (file.data, file.kernel, file.code, file.scan)
    return file.data


def scanned(data: Any, kernel: str, code: int) -> Any:
    """What ``kernel`` (``coco_gt`` or ``coco_results``) with field ``code`` made of exactly
    these bytes while rpx started (handed over once), or :data:`MISSING`."""
    entry = _SCANNED.get(id(data)) if _SCANNED else None
    if entry is None or entry[0] is not data or entry[1] != kernel or entry[2] != code:
        return MISSING
    del _SCANNED[id(data)]
    return entry[3]


def sha256_of(path: str, st: os.stat_result) -> str | None:
    """The sha256 (hex) computed at start-up of the file ``path`` whose stat is now ``st``
    (once), waiting for it when it is being computed; None when there is none for that
    file as it is now."""
    if not _DIGESTS and not _THREADS:
        return None
    thread = _THREADS.get(os.path.abspath(path))
    if thread is not None:
        thread.join()
    with _LOCK:
        found = _DIGESTS.pop(os.path.abspath(path), None)
    if found is None or found[0] != _key(st):
        return None
    return found[1]


def settle() -> None:
    """Wait for the thread started here to finish, keeping what it found: a process about
    to fork its workers must have no other thread."""
    for thread in list(_THREADS.values()):
        thread.join()
