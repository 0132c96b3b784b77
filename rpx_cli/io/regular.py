"""Reading an input file whole, wherever it is: a regular file on disk
(:mod:`rpx_cli.io.local_files`: never a FIFO, a socket or a device) or an object given by
URL (:mod:`rpx_cli.io.remote`; only then is fsspec imported). No numpy: the CLI's config
loader and `rpx report` use it at start-up.

:func:`open_regular` and :func:`relative_to` are :mod:`rpx_cli.io.local_files`' own, named
here too for the modules that open inputs through this one.
"""

from __future__ import annotations

from rpx_cli.io.local_files import open_regular, read_local, relative_to

__all__ = ["open_regular", "read_bytes", "relative_to"]


def read_bytes(path: str) -> bytes:
    """All of a regular file (:func:`open_regular`): for files read whole outside a
    :class:`FileBuffer` (manifests, class lists, COCO files, reports). A URL is fetched
    through :mod:`rpx_cli.io.remote` (only then is fsspec imported)."""
    if "://" in path:
        from rpx_cli.io import remote

        if remote.is_url(path):
            return remote.read_whole(path)
    return read_local(path)
