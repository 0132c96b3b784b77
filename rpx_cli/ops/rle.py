"""COCO's compressed RLE strings decoded for every mask at once (numpy, no per-mask loop).

A mask of ``h × w`` pixels is run-length encoded in column-major order: ``counts`` alternate
runs of 0s and 1s, starting with 0s, and sum to ``h · w``. The compressed form
(pycocotools' ``rleToString``) writes each count as a LEB128-like group of characters
``48 + 6 bits`` (5 value bits, ``0x20`` = more follows, ``0x10`` in the last character =
negative), and counts from the fourth on as the difference to the count two before.

:func:`decode_counts` undoes this for many strings in one pass of array operations and
:func:`reference_decode` is the readable per-character loop it is tested against (the C
``rleFrString`` transcribed). The decoded counts give each mask's area (the 1-runs) and the
checks pycocotools leaves out: a negative run and counts that do not sum to ``h · w`` are
malformed masks, not numbers to evaluate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class DecodedCounts:
    """``counts[start[i]:start[i + 1]]`` are mask ``i``'s runs; ``problem[i]`` says what is
    wrong with it (``""`` for a well-formed string)."""

    counts: np.ndarray  # (C,) int64
    start: np.ndarray  # (N + 1,) int64
    total: np.ndarray  # (N,) int64: the sum of the runs
    area: np.ndarray  # (N,) int64: the sum of the 1-runs
    problem: list[str]


def decode_counts(strings: list[bytes]) -> DecodedCounts:
    """Decode compressed RLE ``counts`` strings (bytes), all at once."""
    n = len(strings)
    lengths = np.fromiter(map(len, strings), np.int64, count=n)
    text = np.frombuffer(b"".join(strings), np.uint8).astype(np.int64) - 48
    problem = [""] * n
    bad = np.zeros(n, bool)
    owner = np.repeat(np.arange(n), lengths)
    invalid = (text < 0) | (text > 63)
    if invalid.any():
        for i in np.unique(owner[invalid]).tolist():
            problem[i] = "a character outside COCO's RLE alphabet ('0' to 'o')"
            bad[i] = True
        text = np.where(invalid, 0, text)
    more = (text & 0x20) != 0
    # the last character of a string must end its count
    ends_string = np.cumsum(lengths) - 1
    nonempty = lengths > 0
    cut = ends_string[nonempty]
    open_end = more[cut]
    if open_end.any():
        for i in np.flatnonzero(nonempty)[open_end].tolist():
            problem[i] = problem[i] or "the string ends inside a count"
            bad[i] = True
        more[cut] = False
    ends = ~more
    group = np.cumsum(ends) - ends  # index of each character's count
    group_start = np.flatnonzero(np.concatenate(([True], ends[:-1]))) if text.size else \
        np.zeros(0, np.int64)
    k = np.arange(text.size) - group_start[group] if text.size else np.zeros(0, np.int64)
    too_long = k >= 12  # 60 bits: no count of a real mask needs more
    if too_long.any():
        for i in np.unique(owner[too_long]).tolist():
            problem[i] = problem[i] or "a count too large to be a mask's"
            bad[i] = True
        k = np.minimum(k, 11)
    values = np.add.reduceat((text & 0x1F) << (5 * k), group_start) if text.size else \
        np.zeros(0, np.int64)
    last = np.flatnonzero(ends)
    negative = (text[last] & 0x10) != 0
    values[negative] -= np.int64(1) << (5 * (k[last][negative] + 1))
    # per string: the counts it holds
    group_owner = owner[last] if last.size else np.zeros(0, np.int64)
    per_string = np.bincount(group_owner, minlength=n)
    start = np.concatenate(([0], np.cumsum(per_string)))
    index = np.arange(values.size) - start[group_owner]
    # counts[m] = x[m] + counts[m - 2] for m >= 3: running sums over odd places from 1 and
    # over even places from 2, restarted at every string
    counts = values.copy()
    for parity, first in ((1, 1), (0, 2)):
        place = (index % 2 == parity) & (index >= first)
        running = np.cumsum(np.where(place, values, 0))
        base = running[start[:-1] - 1] if values.size else np.zeros(n, np.int64)
        base = np.where(start[:-1] > 0, base, 0)
        counts = np.where(place, running - base[group_owner], counts)
    negative_run = counts < 0
    if negative_run.any():
        for i in np.unique(group_owner[negative_run]).tolist():
            problem[i] = problem[i] or "a negative run length"
            bad[i] = True
    total = _sums(counts, start)
    area = _sums(np.where(index % 2 == 1, counts, 0), start)
    return DecodedCounts(counts, start.astype(np.int64), total, area, problem)


def _sums(values: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Exact int64 sums of ``values[start[i]:start[i + 1]]``."""
    running = np.concatenate(([0], np.cumsum(values, dtype=np.int64)))
    return running[start[1:]] - running[start[:-1]]


def reference_decode(string: bytes) -> list[int]:
    """pycocotools' ``rleFrString``, one character at a time (the test reference)."""
    counts: list[int] = []
    p = 0
    while p < len(string):
        x, k, more = 0, 0, True
        while more:
            c = string[p] - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def encode_values(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``rleToString``'s character groups of int64 ``values`` (each one count, already
    differenced), vectorised: ``(chars (N, 13) uint8, lengths (N,))``."""
    v = np.asarray(values, np.int64).copy()
    out = np.zeros((v.size, 13), np.uint8)
    length = np.zeros(v.size, np.int64)
    active = np.ones(v.size, bool)
    for k in range(13):
        c = v & 0x1F
        v >>= 5
        more = np.where((c & 0x10) != 0, v != -1, v != 0)
        c = np.where(more, c | 0x20, c) + 48
        out[active, k] = c[active]
        length += active
        active &= more
        if not active.any():
            break
    return out, length


_POW32 = np.int64(32) ** np.arange(14, dtype=np.int64)


def head_groups(strings: list[bytes], n_groups: int = 3, width: int = 16):
    """The first ``n_groups`` counts of each compressed string (``rleFrString``'s values,
    before the differences from the fourth count on matter) and the character offset after
    them: ``(values (N, n_groups) int64, found (N,) groups present, cut (N,), ok (N,))``;
    ``ok`` is False where those groups do not end within ``width`` characters (or a string
    ends inside a count). One pass over the first ``width`` characters of every string,
    character position by position (each step an operation over all the strings)."""
    n = len(strings)
    lengths = np.fromiter(map(len, strings), np.int64, count=n)
    shown = np.minimum(lengths, width)
    head = np.full((n, width), 48, np.uint8)
    head[np.arange(width)[None, :] < shown[:, None]] = np.frombuffer(
        b"".join(s[:width] for s in strings), np.uint8)
    chars = np.ascontiguousarray(head.T).astype(np.int64) - 48  # (width, N)
    values = np.zeros((n, n_groups), np.int64)
    group = np.zeros(n, np.int64)
    k = np.zeros(n, np.int64)
    x = np.zeros(n, np.int64)
    cut = np.zeros(n, np.int64)
    ok = np.ones(n, bool)
    rows = np.arange(n)
    for j in range(width):
        c = chars[j]
        active = (j < shown) & (group < n_groups)
        ok &= ~(active & (k >= 12))
        place = np.minimum(k, 12)
        x += np.where(active, (c & 0x1F) * _POW32[place], 0)
        end = active & ((c & 0x20) == 0)
        x -= np.where(end & ((c & 0x10) != 0), _POW32[place + 1], 0)  # |= -1 << 5(k + 1)
        values[rows[end], group[end]] = x[end]
        cut = np.where(active, j + 1, cut)
        group += end
        k = np.where(end, 0, k + active)
        x = np.where(end, 0, x)
    ok &= (group >= n_groups) | ((lengths <= width) & (k == 0))
    return values, np.minimum(group, n_groups), cut, ok
