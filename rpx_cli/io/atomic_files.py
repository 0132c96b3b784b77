"""Files written whole: a temporary file beside the target, then a rename, so a reader (or
a failed or stopped run) never sees a partial file and no temporary file is left behind.

The temporary file's name is chosen, and held by the cleanup, *before* the file is created:
a stop signal's :class:`~rpx_cli.errors.Interrupted` is raised at whatever bytecode Python
is at, and with ``tempfile.mkstemp`` it could land after the file was created but before
its name reached the caller (measured: a stop delivered again from another thread lands
just after the ``open`` that released the GIL), leaving a ``.rpx-*.tmp`` file.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["write_atomic"]

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def write_atomic(path: str, data: bytes, *, suffix: str = ".tmp") -> None:
    """Write ``data`` to ``path`` via ``.rpx-<random><suffix>`` in the same directory, fsync
    and a rename; the file gets the mode a new file gets (``0o666 & ~umask``). A path that
    exists and is not a regular file (``/dev/null``, a FIFO) is written directly. OSError
    propagates, the temporary file removed."""
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "wb") as handle:
            handle.write(data)
        return
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    # 64 random bits: another run's name is never taken (O_EXCL would refuse it anyway)
    temporary = os.path.join(directory, f".rpx-{os.urandom(8).hex()}{suffix}")
    try:
        with os.fdopen(os.open(temporary, _CREATE, 0o600), "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except FileExistsError:
        raise  # the name was another file's: it is not ours to remove
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
