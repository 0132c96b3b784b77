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
them.

The dicts themselves may be made later than the array (:func:`deferred_rles`), or never: a
default masks run reads none of them (its steps read ``packed``, ``sizes`` and ``areas``),
and half a million take 0.2 s of the main thread and 150 MB. Until they are made the
elements are None, and whatever could reach them makes them first (:meth:`PackedRles.fill`):
an element or a slice, iteration, ``tolist``, a view, any array derived from it (a take, a
copy, ``__array_finalize__``), any numpy function given it (``__array_function__``:
``np.concatenate``, ``np.take``, ...) and its pickle. Only ``np.asarray`` and ``np.array``
(a plain ndarray of the same memory, made in C) would see the Nones: fill first where one
may be given such an array (``tests/test_packed_rles.py`` checks every way in)"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from itertools import chain, repeat
from typing import Any

import numpy as np

from rpx_cli import native


class PackedRles(np.ndarray):
    """An object array of compressed RLE dicts, with their strings joined (``packed``) and
    their sizes ``(h, w)`` (``sizes``, (N, 2) int64) as they were made; what was computed of
    the strings since (``totals``: the future of each one's 1-runs, all its runs summed and
    whether it is well formed; ``areas``: the masks' areas, float64); None in every array
    derived from it. Its elements are made once (with the array, or by :meth:`fill`) and
    never assigned after."""

    packed: tuple[bytes, np.ndarray] | None = None
    sizes: np.ndarray | None = None
    totals: Future | None = None
    areas: np.ndarray | None = None
    unfilled: bool = False  # the dicts not made yet (deferred_rles): every element None

    def __array_finalize__(self, obj: Any) -> None:
        if isinstance(obj, PackedRles) and obj.unfilled:  # (a view, a take, a copy of it)
            obj.fill()
        self.packed = self.sizes = self.totals = self.areas = None
        self.unfilled = False

    def fill(self) -> None:
        """Make the dicts of an array :func:`deferred_rles` made (with ``area`` once
        ``areas`` are known); nothing when they are made."""
        if not self.unfilled:
            return
        text, offsets = self.packed
        bounds = offsets.tolist()
        rows = zip(shared_rows(self.sizes), bounds, bounds[1:], strict=False)
        if self.areas is None:
            dicts = [{"size": hw, "counts": text[a:b]} for hw, a, b in rows]
        else:
            dicts = [{"size": hw, "counts": text[a:b], "area": area}
                     for (hw, a, b), area in zip(rows, self.areas.astype(np.int64).tolist(), strict=True)]
        np.ndarray.view(self, np.ndarray)[:] = dicts
        self.unfilled = False  # (after: another thread reading meanwhile makes its own, equal)

    def set_areas(self, areas: np.ndarray) -> None:
        """``areas`` (float64) kept, and each dict's ``area`` (an int) set or, for dicts not
        made yet, made with it."""
        self.areas = areas
        if not self.unfilled:
            for rle, area in zip(np.ndarray.view(self, np.ndarray), areas.astype(np.int64).tolist(),
                                 strict=True):
                rle["area"] = area

    # every way to its elements but np.asarray / np.array makes them first
    def __getitem__(self, key: Any) -> Any:
        self.fill()
        return super().__getitem__(key)

    def __iter__(self) -> Any:
        self.fill()
        return super().__iter__()

    def tolist(self) -> Any:
        self.fill()
        return super().tolist()

    def view(self, *args: Any, **kwargs: Any) -> Any:
        self.fill()
        return super().view(*args, **kwargs)

    def __reduce__(self) -> Any:  # (numpy's __reduce_ex__ calls it for an object array)
        self.fill()
        return super().__reduce__()

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            for item in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(item, PackedRles):
                    item.fill()
        return super().__array_function__(func, types, args, kwargs)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        def plain(item: Any) -> Any:
            if not isinstance(item, PackedRles):
                return item
            item.fill()
            return np.ndarray.view(item, np.ndarray)
        if "out" in kwargs:
            kwargs["out"] = tuple(map(plain, kwargs["out"]))
        return getattr(ufunc, method)(*map(plain, inputs), **kwargs)


def packed_rles(rles: Sequence[dict[str, Any]], text: bytes, offsets: np.ndarray,
                sizes: np.ndarray) -> PackedRles:
    """``rles`` as a :class:`PackedRles` whose ``counts`` are ``text`` cut at ``offsets``
    (N + 1, int64) and whose ``size`` are the rows of ``sizes``: the caller made them so."""
    out = np.empty(len(rles), object).view(PackedRles)
    out[:] = rles
    out.packed = (text, np.asarray(offsets, np.int64))
    out.sizes = np.asarray(sizes, np.int64).reshape(len(rles), 2)
    return out


def deferred_rles(text: bytes, offsets: np.ndarray, sizes: np.ndarray) -> PackedRles:
    """The :class:`PackedRles` of the compressed strings ``text`` cut at ``offsets`` (N + 1,
    int64) of sizes ``sizes`` (N, 2), its dicts made by :meth:`PackedRles.fill` (every
    element None until then)."""
    out = np.empty(len(sizes), object).view(PackedRles)
    out.packed = (text, np.asarray(offsets, np.int64))
    out.sizes = np.asarray(sizes, np.int64).reshape(len(sizes), 2)
    out.unfilled = True
    return out


def shared_rows(values: np.ndarray) -> list[list[int]]:
    """The rows of ``values`` (N, k) as lists, one list for each run of equal rows (a
    results file's masks come image by image: 5,000 lists for 500,000 RLEs, not 500,000).
    Nothing assigns into an RLE's ``size``."""
    n = len(values)
    if not n:
        return []
    starts = np.concatenate(([0], np.flatnonzero((values[1:] != values[:-1]).any(axis=1)) + 1))
    counts = np.diff(np.append(starts, n)).tolist()
    return list(chain.from_iterable(map(repeat, values[starts].tolist(), counts)))


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
