"""Compressed RLE dicts that keep their strings joined as they were made.

A results file's 500,000 RLE strings arrive from the reader as one buffer and offsets; the
mask steps (checking every string, every frame's intersections) want them so again, and
joining half a million ``bytes`` objects costs ~0.2 s each time. A :class:`PackedRles` is
an object array of the dicts that also holds ``packed = (text, offsets)``: ``counts`` of
dict ``i`` is ``text[offsets[i]:offsets[i + 1]]``. Any array made from it (a slice, a take,
a copy) holds none — its dicts may be others, or in another order — and the steps join its
strings again (``ops.masks.joined_counts`` reads ``packed`` where it is set; ``sizes_of``
the ``sizes`` kept the same way)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class PackedRles(np.ndarray):
    """An object array of compressed RLE dicts, with their strings joined (``packed``) and
    their sizes ``(h, w)`` (``sizes``, (N, 2) int64) as they were made; None in every array
    derived from it. Its elements are never assigned after it is made."""

    packed: tuple[bytes, np.ndarray] | None = None
    sizes: np.ndarray | None = None

    def __array_finalize__(self, obj: Any) -> None:
        self.packed = self.sizes = None


def packed_rles(rles: Sequence[dict[str, Any]], text: bytes, offsets: np.ndarray,
                sizes: np.ndarray) -> PackedRles:
    """``rles`` as a :class:`PackedRles` whose ``counts`` are ``text`` cut at ``offsets``
    (N + 1, int64) and whose ``size`` are the rows of ``sizes``: the caller made them so."""
    out = np.empty(len(rles), object).view(PackedRles)
    out[:] = rles
    out.packed = (text, np.asarray(offsets, np.int64))
    out.sizes = np.asarray(sizes, np.int64).reshape(len(rles), 2)
    return out
