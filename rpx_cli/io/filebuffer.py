"""Whole-file reads into a reused buffer, with the file's sha256 computed alongside.

Every evaluated file is read exactly once: the bytes that are parsed are the bytes that are
digested for ``run_provenance``. Reading into a buffer that is kept between files avoids the
page-fault cost of a fresh multi-megabyte allocation per file (measured: ~1,200 minor page
faults per 480x640 depth pair), and the digest runs on a helper thread (``hashlib``
releases the GIL) while the metric runs. The buffer starts on a page boundary: the kernel
copies from page-aligned page-cache pages, and a destination 16 bytes past a page boundary
(where glibc puts a large ``malloc``) makes that copy ~5x slower on this machine (4K
aliasing: 1.1-1.8 ms instead of 0.3 ms for a 3 MB lidar scan; benchmarks/RESULTS.md).

Arrays parsed from a buffer are views into it: they are valid until the next ``read`` into
the same :class:`FileBuffer`.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io import prefetch
from rpx_cli.io.digest_cache import DigestCache, Key, stat_key
from rpx_cli.io.local_files import open_regular
from rpx_cli.io.remote import is_url
from rpx_cli.io.remote import read as read_object

# Below this size a file is digested inline: handing it to the helper thread (submit, wake,
# wait, GIL hand-off) costs ~65 us a file, sha256 of 1 KiB ~2 us (10,000 pose files: 0.65 s).
INLINE_DIGEST_BYTES = 256 * 1024
PAGE_BYTES = 4096

T = TypeVar("T")

_executor: ThreadPoolExecutor | None = None
_executor_pid: int | None = None
_executor_lock = threading.Lock()


def _digest_executor() -> ThreadPoolExecutor:
    """One digest thread per process, created after any fork."""
    global _executor, _executor_pid
    with _executor_lock:
        if _executor is None or _executor_pid != os.getpid():
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rpx-digest")
            _executor_pid = os.getpid()
        return _executor


def in_digest_thread(fn: Callable[..., T], *args: Any) -> Future[T]:
    """``fn(*args)`` on this process's digest thread: hashing off the caller's thread
    (hashlib releases the GIL over large buffers)."""
    return _digest_executor().submit(fn, *args)


def _sha256(view: memoryview) -> bytes:
    return hashlib.sha256(view).digest()


def sha256_file(path: str) -> str:
    """Digest a file without keeping it (for files read by a third-party parser); an
    object given by URL is not fetched again when it was read whole already."""
    return cached_sha256_file(path, None)[0]


def cached_sha256_file(path: str, cache: DigestCache | None) -> tuple[str, bool, Key | None]:
    """``(hex sha256, reused, key to store it under)`` of a file read in chunks: the
    digest cache's entry for the open file's stat key when there is one (``reused``), else
    computed; the key is None when the digest may not be stored (see
    :meth:`DigestCache.storable`) or there is no cache."""
    if "://" in path and is_url(path):  # objects have no stat key: never cached here
        from rpx_cli.io.remote import sha256_of

        return sha256_of(path), False, None
    with open_regular(path) as handle:
        key = None
        st = os.fstat(handle.fileno())
        if cache is not None and cache.usable_for(os.path.dirname(os.path.abspath(path))):
            found = cache.lookup(stat_key(st))
            if found is not None:
                return found.hex(), True, None
            key = stat_key(st) if cache.storable(st) else None
        computed = prefetch.sha256_of(path, st)  # (hashed at start-up: rpx_cli.io.prefetch)
        if computed is not None:
            return computed, False, key
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest(), False, key


class FileBuffer:
    """A growable byte buffer that one file at a time is read into."""

    def __init__(self, *, digest: bool = True) -> None:
        self._array = np.empty(0, dtype=np.uint8)
        self._digest = digest
        self._pending: Future[bytes] | None = None
        self._inline: bytes | None = None
        # the last file's digest came from the cache; the key under which a computed
        # digest of it may be stored (None: not storable)
        self.reused = False
        self.store_key: Key | None = None
        # set by the caller for the files it reads next: a digest stored for a file's stat
        # key is then reused instead of hashing the bytes again
        self.cache: DigestCache | None = None

    def read(self, path: str) -> np.ndarray:
        """Read all of ``path``; returns a uint8 view valid until the next ``read``."""
        self._settle()
        if "://" in path and is_url(path):  # an object: fetched whole, digested the same way
            data = read_object(path)
            view = self._reserve(len(data))
            view[:] = np.frombuffer(data, np.uint8)
            if self._digest:
                self._hash(view)
            return view
        cache = self.cache
        try:
            with open_regular(path, buffering=0) as handle:
                st = os.fstat(handle.fileno())
                size = st.st_size
                view = self._reserve(size)
                got = handle.readinto(memoryview(view)) if size else 0
                while got < size:  # readinto may return short counts
                    more = handle.readinto(memoryview(view[got:]))
                    if not more:
                        raise InputError(f"file shrank while being read ({got} of {size} bytes)",
                                         path=path)
                    got += more
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
        if self._digest:
            if cache is not None:
                key = stat_key(st)
                self._inline = cache.lookup(key)
                if self._inline is not None:
                    self.reused = True
                    return view
                self.store_key = key if cache.storable(st) else None
            self._hash(view)
        return view

    def _reserve(self, size: int) -> np.ndarray:
        if size > self._array.size:
            self._array = page_aligned(max(size, self._array.size * 5 // 4))
        return self._array[:size]

    def _hash(self, view: np.ndarray) -> None:
        if view.size < INLINE_DIGEST_BYTES:
            self._inline = _sha256(memoryview(view))
        else:
            self._pending = _digest_executor().submit(_sha256, memoryview(view))

    def digest(self) -> bytes | None:
        """The sha256 (32 raw bytes) of the last file read (waits for the helper thread)."""
        if self._pending is None:
            return self._inline
        return self._pending.result()

    def _settle(self) -> None:
        # The buffer is about to be overwritten: the previous digest must be finished.
        self._inline = None
        self.reused = False
        self.store_key = None
        if self._pending is not None:
            self._pending.result()
            self._pending = None


def page_aligned(size: int) -> np.ndarray:
    """``size`` uninitialised bytes starting on a page boundary (a view into a slightly
    larger allocation)."""
    raw = np.empty(size + PAGE_BYTES, np.uint8)
    start = -raw.ctypes.data % PAGE_BYTES
    return raw[start:start + size]


def shutdown_digest_thread() -> None:
    """Stop this process's digest thread (before forking workers: fork a single thread)."""
    global _executor, _executor_pid
    with _executor_lock:
        if _executor is not None:
            _executor.shutdown(wait=True)
        _executor = None
        _executor_pid = None
