"""A stat-keyed cache of file sha256s, so unchanged files (the ground truth, usually) are
not hashed again on every run.

A file's digest is reused when its ``(st_dev, st_ino, size, mtime_ns, ctime_ns)`` equals a
stored entry's — git's index and DVC trust the same key. ``ctime`` cannot be set by a user
(``touch -d`` and ``os.utime`` restore mtime only), so a file rewritten with its old mtime
put back is still re-hashed. An entry is stored only for a file whose mtime and ctime are at
least :data:`RACY_SECONDS` older than the run's start (git's "racy" rule): a file written
during or just before the run could change again within the clock's resolution without
changing its key, so it is never trusted. The cache is off for files on network and FUSE
filesystems (their inode numbers and times are not trustworthy).

Store: a folder of segment files, each written whole by one run (temporary file + rename,
so a reader never sees half of one) — a header, fixed 72-byte records (the five key
numbers and the digest) and a trailing sha256 of everything before it. Runs never lock:
each adds its own segment; a run that finds many segments merges them into one and deletes
the ones it merged (a concurrent reader that loses a segment just hashes those files). A
segment that fails its checksum is reported once, deleted and its files hashed again.

Reports are the same with or without the cache; ``run_provenance.digests`` says how many
digests were computed and how many reused.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from rpx_cli.errors import InputError
from rpx_cli.io.local_files import open_regular

MAGIC = b"RPXDGST1"
RECORD = struct.Struct("<5Q32s")  # st_dev, st_ino, size, mtime_ns, ctime_ns, sha256
HEADER = struct.Struct("<8sQ")  # magic, record count
RACY_SECONDS = 2.0
MERGE_AT = 16  # segments: more than this and a run merges them into one
MAX_ENTRIES = 4_000_000  # a merge keeps the newest this many (about 290 MB)
# a segment file past this is not a segment (a run adds at most its own files; a merge keeps
# MAX_ENTRIES): it is ignored, never read into memory
MAX_SEGMENT_BYTES = HEADER.size + 2 * MAX_ENTRIES * RECORD.size + 32
NETWORK_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs",
                       "lustre", "afs", "davfs", "ncpfs", "gpfs", "beegfs", "sshfs", "fuse")

Key = bytes  # RECORD's first 40 bytes


def stat_key(st: os.stat_result) -> Key:
    return struct.pack("<5Q", st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def default_dir(environ: dict[str, str] | None = None) -> str:
    """``RPX_DIGEST_CACHE``, else ``$XDG_CACHE_HOME/rpx``, else ``~/.cache/rpx``."""
    environ = os.environ if environ is None else environ
    if environ.get("RPX_DIGEST_CACHE"):
        return environ["RPX_DIGEST_CACHE"]
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rpx")


@dataclass
class DigestCache:
    """The entries of every readable segment in ``folder``, and the ones this run adds."""

    folder: str
    started_ns: int = field(default_factory=time.time_ns)
    entries: dict[Key, bytes] = field(default_factory=dict)
    new: dict[Key, bytes] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    segments: list[str] = field(default_factory=list)
    _local: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def open(cls, folder: str) -> DigestCache:
        """Load every segment (unreadable ones are skipped, corrupt ones reported and
        removed). Never raises for a problem with the cache itself: rpx then hashes."""
        cache = cls(os.path.join(folder, "digests-v1"))
        try:
            names = sorted(name for name in os.listdir(cache.folder) if name.endswith(".seg"))
        except OSError:
            return cache
        for name in names:
            path = os.path.join(cache.folder, name)
            try:  # a regular file of at most a segment's size: a FIFO or /dev/zero is skipped
                with open_regular(path) as handle:
                    # what the file holds (read(n) would set n bytes aside first: 576 MB,
                    # against a capped address space)
                    size = os.fstat(handle.fileno()).st_size
                    data = handle.read(min(size, MAX_SEGMENT_BYTES) + 1)
            except InputError as exc:
                if "file not found" not in str(exc):  # not deleted by a concurrent merge
                    cache.warnings.append(f"digest cache: {path} {str(exc).split(': ', 1)[-1]}; "
                                          "ignored")
                continue
            except OSError:  # unreadable: hash instead
                continue
            if len(data) > MAX_SEGMENT_BYTES:
                cache.warnings.append(f"digest cache: {path} is larger than a segment can be; "
                                      "ignored")
                continue
            records = _parse(data)
            if records is None:
                cache.warnings.append(f"digest cache: {path} is corrupt; removed (its files are "
                                      "hashed again)")
                _remove(path)
                continue
            cache.entries.update(records)
            cache.segments.append(path)
        return cache

    def lookup(self, key: Key) -> bytes | None:
        return self.entries.get(key)

    def storable(self, st: os.stat_result) -> bool:
        """A digest of this file may be stored: unchanged for :data:`RACY_SECONDS` before
        the run started (mtime and ctime)."""
        limit = self.started_ns - int(RACY_SECONDS * 1e9)
        return st.st_mtime_ns <= limit and st.st_ctime_ns <= limit

    def usable_for(self, folder: str) -> bool:
        """False for a folder on a network or FUSE filesystem (decided once per folder)."""
        if folder not in self._local:
            self._local[folder] = not is_network_filesystem(folder)
        return self._local[folder]

    def add(self, entries: Iterable[tuple[Key, bytes]]) -> None:
        for key, digest in entries:
            if key not in self.entries:
                self.new[key] = digest

    def save(self) -> None:
        """Write this run's new entries as one segment; merge when there are many.
        Problems writing (read-only, full disk) are warnings, never errors."""
        try:
            os.makedirs(self.folder, exist_ok=True)
            if len(self.segments) + bool(self.new) > MERGE_AT:
                merged = {**self.entries, **self.new}
                _write(self.folder, list(merged.items())[-MAX_ENTRIES:])
                for path in self.segments:
                    _remove(path)
            elif self.new:
                _write(self.folder, self.new.items())
        except OSError as exc:
            self.warnings.append(f"digest cache: not saved in {self.folder} "
                                 f"({exc.strerror or exc})")


def _parse(data: bytes) -> dict[Key, bytes] | None:
    if len(data) < HEADER.size + 32 or data[:8] != MAGIC:
        return None
    _, count = HEADER.unpack_from(data)
    body = HEADER.size + count * RECORD.size
    if len(data) != body + 32 or hashlib.sha256(data[:body]).digest() != data[body:]:
        return None
    view = memoryview(data)
    return {bytes(view[at:at + 40]): bytes(view[at + 40:at + 72])
            for at in range(HEADER.size, body, RECORD.size)}


def _write(folder: str, records: Iterable[tuple[Key, bytes]]) -> None:
    records = list(records)
    payload = b"".join([HEADER.pack(MAGIC, len(records)), *(key + digest for key, digest in records)])
    name = f"{time.time_ns():020d}-{uuid.uuid4().hex}.seg"
    temporary = os.path.join(folder, f".{name}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(payload + hashlib.sha256(payload).digest())
    os.replace(temporary, os.path.join(folder, name))


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def is_network_filesystem(path: str, mountinfo: str | None = None) -> bool:
    """The filesystem holding ``path`` is remote or FUSE (Linux ``/proc/self/mountinfo``, or
    the ``mountinfo`` text given; elsewhere False)."""
    if mountinfo is None:
        try:
            with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
                mountinfo = handle.read()
        except OSError:
            return False
    lines = mountinfo.splitlines()
    target = os.path.realpath(path)
    best, fstype = "", ""
    for line in lines:
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        mount = fields[4].replace("\\040", " ")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, fstype = mount, line.split(" - ", 1)[1].split()[0]
    return fstype.split(".")[0] in NETWORK_FILESYSTEMS
