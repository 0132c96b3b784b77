"""Where each of many ids stands among a file's sorted ids: COCO annotations' and
detections' image and category ids, 1.2 million of them at Objects365 scale."""

from __future__ import annotations

import numpy as np

# ids spread over at most this many values per id (or 65,536) are looked up in a table
DENSE = 8


def positions(sorted_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(len(values),) int64: the index of each of ``values`` (numbers) in ``sorted_ids``
    (int64, unique, ascending), -1 where absent. Ids that span a range not much wider than their
    count (COCO's: 1 .. a few times their number) go through a table of the range, one
    gather instead of a binary search each (~5x at 1.2M values); others by
    ``np.searchsorted``. The same answer either way."""
    n = sorted_ids.size
    if n == 0:
        return np.full(values.size, -1, np.int64)
    lo, hi = int(sorted_ids[0]), int(sorted_ids[-1])
    if values.dtype.kind in "iu" and hi - lo < max(DENSE * n, 1 << 16):
        table = np.full(hi - lo + 1, -1, np.int64)
        table[sorted_ids - lo] = np.arange(n)
        inside = (values >= lo) & (values <= hi)
        return np.where(inside, table[np.clip(values, lo, hi) - lo], -1)
    at = np.searchsorted(sorted_ids, values)
    found = at < n
    found[found] = sorted_ids[at[found]] == values[found]
    return np.where(found, at, -1)
