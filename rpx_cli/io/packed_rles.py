"""Compressed RLE dicts that keep their strings joined as they were made.

A results file's 500,000 RLE strings arrive from the reader as one buffer and offsets; the
mask steps (checking every string, every frame's intersections) want them so again, and
joining half a million ``bytes`` objects costs ~0.2 s each time. A :class:`PackedRles` is
an object array of the dicts that also holds ``packed = (text, offsets)``: ``counts`` of
dict ``i`` is ``text[offsets[i]:offsets[i + 1]]``. Any array made from it (a slice, a take,
a copy) holds none — its dicts may be others, or in another order — and the steps join its
strings again (``ops.masks.joined_counts`` reads ``packed`` where it is set; ``sizes_of``
the ``sizes`` kept the same way). A results file's strings are also checked as they are read
(:func:`string_totals`, in the reader's thread while the GT file is parsed): ``totals``
holds the future of what ``ops.masks.totals`` would compute of them (its result None when
they were not checked), and ``areas`` the mask areas once ``prepare_masks`` has checked
them."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from rpx_cli import native


class PackedRles(np.ndarray):
    """An object array of compressed RLE dicts, with their strings joined (``packed``) and
    their sizes ``(h, w)`` (``sizes``, (N, 2) int64) as they were made; what was computed of
    the strings since (``totals``: the future of each one's 1-runs, all its runs summed and
    whether it is well formed; ``areas``: the masks' areas, float64); None in every array
    derived from it.
    Its elements are never assigned after it is made."""

    packed: tuple[bytes, np.ndarray] | None = None
    sizes: np.ndarray | None = None
    totals: Future | None = None
    areas: np.ndarray | None = None

    def __array_finalize__(self, obj: Any) -> None:
        self.packed = self.sizes = self.totals = self.areas = None


def packed_rles(rles: Sequence[dict[str, Any]], text: bytes, offsets: np.ndarray,
                sizes: np.ndarray) -> PackedRles:
    """``rles`` as a :class:`PackedRles` whose ``counts`` are ``text`` cut at ``offsets``
    (N + 1, int64) and whose ``size`` are the rows of ``sizes``: the caller made them so."""
    out = np.empty(len(rles), object).view(PackedRles)
    out[:] = rles
    out.packed = (text, np.asarray(offsets, np.int64))
    out.sizes = np.asarray(sizes, np.int64).reshape(len(rles), 2)
    return out


def string_totals(text: Any, offsets: np.ndarray,
                  threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``ops.masks.totals`` of the compressed strings ``text`` cut at ``offsets`` (N + 1):
    each one's area (its 1-runs), all its runs summed and whether it is well formed, decoded
    by the native core in ``threads`` threads; None without it."""
    core = native.core()
    if core is None:
        return None
    n = len(offsets) - 1
    area, total, bad = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.uint8)
    core.rle_check(text, np.asarray(offsets, np.int64), area, total, bad, threads)
    return area, total, bad == 0
