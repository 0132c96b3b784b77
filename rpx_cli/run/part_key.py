"""The keyed seal of ``--shard`` parts (issue 39.8).

A part's ``seal`` (:func:`part_seal`) is a plain digest of what ``rpx
merge`` takes from it: it finds a part changed by accident or by a careless hand, but anyone
who edits a part can recompute it. Where parts travel through shared storage (a CI bucket,
an artifact store), set a secret in the environment variable ``RPX_PART_KEY`` of both the
jobs that write parts and the job that merges them: each part is then signed when written
(``state.signature``: HMAC-SHA256 of its seal under the key) and ``rpx merge`` refuses a
part that is unsigned or signed with another key (compared in constant time). Without the
variable, parts are written and merged as before (a signature present is not checked)."""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from typing import Any

from rpx_cli.errors import InputError, ParameterError

ENV = "RPX_PART_KEY"
SCHEME = "hmac-sha256:"


def part_key(environ: Mapping[str, str] | None = None) -> bytes | None:
    """The key in ``RPX_PART_KEY`` (of ``environ``, default the process's), or None when it
    is not set. Set but empty is a usage error: an unset CI secret expands to nothing, and
    would silently turn the check off."""
    value = (os.environ if environ is None else environ).get(ENV)
    if value is None:
        return None
    if not value:
        raise ParameterError(f"{ENV} is set but empty: give the key parts are signed with, or "
                             "unset it")
    return value.encode("utf-8", "surrogateescape")


def signature(seal: str, key: bytes) -> str:
    """``hmac-sha256:<hex>`` of ``seal`` under ``key``."""
    return SCHEME + hmac.new(key, seal.encode("utf-8"), hashlib.sha256).hexdigest()


def check_signature(state: Mapping[str, Any], path: str, key: bytes | None) -> None:
    """With a key: the part's ``signature`` is its seal's under ``key``, else an
    :class:`InputError` naming the part (its seal is checked against its content first)."""
    if key is None:
        return
    given = state.get("signature")
    if given is None:
        raise InputError(f"is not signed, and {ENV} is set: only parts written with the key "
                         "are merged; re-run that shard with it", path=path)
    expected = signature(str(state["seal"]), key)
    if not isinstance(given, str) or not hmac.compare_digest(given.encode("utf-8", "replace"),
                                                             expected.encode("utf-8")):
        raise InputError(f"its signature does not verify with {ENV} (signed with another key, "
                         "or changed after it was written); re-run that shard", path=path)


def part_seal(report: Mapping[str, Any], *, parsed: bool = False) -> str:
    """The ``seal`` of a ``--shard`` part: the digest of what ``rpx merge`` takes from it —
    its task, parameters, counts, unpaired stems, errors, the stems of its rows and its
    ``state`` (statistics, stems, pairs, digests, shard index, the run's pairing and layout),
    so a part edited after it was written (a statistic, a stem, its shard index) does not
    verify. ``parsed``: ``report`` was read back from JSON."""
    from rpx_cli.report.serialize import content_digest

    state = {key: value for key, value in report["state"].items()
             if key not in ("seal", "signature")}
    sealed = {key: report.get(key) for key in SEALED}
    sealed["state"] = state
    sealed["row_stems"] = [row.get("stem") if isinstance(row, Mapping) else None
                           for row in report.get("rows") or ()]
    return content_digest(sealed, parsed=parsed)


SEALED = ("schema", "schema_version", "task", "params", "n_pairs", "unpaired", "errors")
