"""How a run was asked for, and the one place ``run_provenance`` is stamped on a report.

Every workflow (evaluate folders or files, merge, stability, readiness, compare) starts a
:class:`~rpx_cli.report.provenance.Stopwatch`, does its work, and ends with :func:`stamp`,
which adds ``run_provenance`` (schema ``rpx-run-provenance-v1``) from the
:class:`Invocation` (what the CLI parsed, or the API call) and the inputs the workflow read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rpx_cli.io.digest_cache import DigestCache, default_dir
from rpx_cli.io.remote import is_url
from rpx_cli.report.provenance import (
    Stopwatch,
    build_provenance,
    collect_environment,
    collect_git,
    directory_input,
)


@dataclass(frozen=True)
class Invocation:
    """How the run was asked for: the command, its argv and resolved arguments, and where
    the report goes."""

    command: str
    argv: list[str] = field(default_factory=list)
    args: Mapping[str, Any] = field(default_factory=dict)
    out: str = "-"


@dataclass
class Evaluation:
    """A finished run: the report and what the user should be told on stderr."""

    report: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


class ProgressHooks:
    """Progress callbacks; the CLI passes a progress bar, the API nothing."""

    def start(self, total: int) -> Callable[[int], None] | None:
        return None

    def stop(self) -> None:
        pass


def file_input(path: str, sha256: str, *, exists: bool | None = None) -> dict[str, Any]:
    """A provenance input that is one file (an object given by URL: with its ETag)."""
    entry = {"path": path, "kind": "file",
             "exists": os.path.isfile(path) if exists is None else exists, "n_files": 1,
             "sha256": sha256}
    return _remote(entry) if is_url(path) else entry


def input_entry(path: str, digests: Mapping[str, str] | str) -> dict[str, Any]:
    """A provenance input from its digests: a folder's (relative path -> sha256) or a
    file's hex sha256 (hex digests; a URL's entry adds the objects' ETags)."""
    if isinstance(digests, str):
        return file_input(path, digests)
    entry = directory_input(path, digests)
    return _remote(entry, digests) if is_url(path) else entry


def _remote(entry: dict[str, Any], rels: Mapping[str, Any] | None = None) -> dict[str, Any]:
    from rpx_cli.io import remote

    return remote.describe_file(entry) if rels is None else remote.describe_folder(entry, rels)


def stamp(report: dict[str, Any], invocation: Invocation, inputs: Mapping[str, Any],
          stopwatch: Stopwatch, *, digests: Mapping[str, int] | None = None,
          executor: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Add ``run_provenance`` to ``report`` (last, so ``finished_at`` is the end of the
    work) and return the report. ``digests``: ``{computed, reused}`` input digests;
    ``executor``: where the pairs were evaluated (``{name: local|dask, ...}``)."""
    report["run_provenance"] = build_provenance(
        command=invocation.command, argv=list(invocation.argv), args=invocation.args,
        inputs=inputs, outputs={"report": {"path": invocation.out}}, clock=stopwatch.stop(),
        environment=collect_environment(), git=collect_git(os.getcwd()), digests=digests,
        executor=executor,
    )
    return report


def open_digest_cache(setting: str | bool | None) -> DigestCache | None:
    """The digest cache a run uses: ``None`` the default folder (``RPX_DIGEST_CACHE``, else
    the user cache directory), a folder, or ``False`` for none."""
    if setting is False:
        return None
    return DigestCache.open(default_dir() if setting in (None, True) else str(setting))
