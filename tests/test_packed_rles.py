"""RLE dicts kept with their strings joined (``rpx_cli/io/packed_rles.py``): the mask steps
read the joined strings and sizes of the array they were made with, and of no array derived
from it (a slice, a take, a reordering), whose dicts may be others."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from rpx_cli.io.packed_rles import PackedRles, deferred_rles, packed_rles
from rpx_cli.ops import masks
from rpx_cli.tasks.detection.instances import mask_areas, prepare_masks

STRINGS = [b"<4", b"04", b"18", b"", b"0<"]  # four of 4x4 pixels, any content
SIZES = np.array([[4, 4], [2, 2], [3, 3], [0, 0], [4, 4]], np.int64)


def made() -> PackedRles:
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in STRINGS])]).astype(np.int64)
    rles = [{"size": size, "counts": counts} for size, counts in zip(SIZES.tolist(), STRINGS, strict=True)]
    return packed_rles(rles, b"".join(STRINGS), offsets, SIZES)


def test_the_array_made_gives_its_joined_strings_and_sizes_without_joining() -> None:
    rles = made()
    text, offsets = masks.joined_counts(rles)
    assert text is rles.packed[0] and offsets is rles.packed[1]
    assert masks.sizes_of(rles) is rles.sizes
    # the same as joining the dicts' own
    plain = np.empty(len(rles), object)
    plain[:] = list(rles)
    again_text, again_offsets = masks.joined_counts(plain)
    assert again_text == text and again_offsets.tolist() == offsets.tolist()
    assert masks.sizes_of(plain).tolist() == SIZES.tolist()


KEEP = np.array([True, False, True, True, False])


@pytest.mark.parametrize("derive", [lambda a: a[::-1], lambda a: a[1:3], lambda a: a[[4, 0, 0]],
                                    lambda a: a.copy(), lambda a: a[KEEP]],
                         ids=["reversed", "slice", "take", "copy", "mask"])
def test_an_array_derived_from_it_joins_its_own_strings(derive) -> None:
    derived = derive(made())
    assert getattr(derived, "packed", None) is None and getattr(derived, "sizes", None) is None
    text, offsets = masks.joined_counts(derived)
    assert text == b"".join(rle["counts"] for rle in derived)
    assert offsets.tolist() == np.concatenate([[0], np.cumsum([len(r["counts"]) for r in derived])]).tolist()
    assert masks.sizes_of(derived).tolist() == [rle["size"] for rle in derived]


def test_a_pickled_array_keeps_its_dicts_and_joins_again() -> None:
    back = pickle.loads(pickle.dumps(made()))
    assert list(back) == list(made())
    assert masks.joined_counts(back)[0] == b"".join(STRINGS)


def test_prepare_masks_keeps_the_strings_it_checked_beside_its_dicts() -> None:
    """Polygons rasterised and RLEs read: the array prepare_masks returns holds the strings
    of its own dicts (the intersections read them), their sizes and areas."""
    segmentations = np.empty(3, object)
    segmentations[:] = [[[0.0, 0.0, 3.0, 0.0, 3.0, 3.0]], {"size": [4, 4], "counts": b"<4"},
                        {"size": [4, 4], "counts": [2, 3, 11]}]
    out, area = prepare_masks(segmentations, np.array([[4, 4]] * 3, np.int64), "f.json")
    assert (getattr(out, "packed", None) is not None) == masks.joins_strings()  # (native core)
    text, offsets = masks.joined_counts(out)
    assert text == b"".join(rle["counts"] for rle in out)
    assert offsets.tolist() == np.concatenate([[0], np.cumsum([len(r["counts"]) for r in out])]).tolist()
    assert masks.sizes_of(out).tolist() == [[4, 4]] * 3
    assert area.tolist() == [rle["area"] for rle in out] and area[2] == 3


@pytest.mark.parametrize("seed", range(5))
def test_shared_rows_are_the_rows_one_list_a_run(seed: int) -> None:
    """The reader's RLE sizes: ``tolist()``'s rows, one list object for each run of equal
    rows (image by image), none shared between runs."""
    from rpx_cli.io.packed_rles import shared_rows

    rng = np.random.default_rng(seed)
    values = rng.integers(1, 3, (int(rng.integers(0, 40)), 2)).repeat(rng.integers(1, 4), axis=0)
    rows = shared_rows(values)
    assert rows == values.tolist()
    for a, b, x, y in zip(rows, rows[1:], values.tolist(), values[1:].tolist(), strict=False):
        assert (a is b) == (x == y)


# --- dicts made only when something reads them (deferred_rles) ---------------------------------


def deferred() -> PackedRles:
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in STRINGS])]).astype(np.int64)
    return deferred_rles(b"".join(STRINGS), offsets, SIZES)


WAYS_IN = {
    "element": lambda a: [a[1]],
    "negative element": lambda a: [a[-1]],
    "slice": lambda a: list(np.ndarray.view(a[1:4], np.ndarray)),
    "iteration": list,
    "tolist": lambda a: a.tolist(),
    "view": lambda a: list(np.ndarray.view(a.view(np.ndarray), np.ndarray)),
    "take": lambda a: list(np.ndarray.view(a.take([4, 0]), np.ndarray)),
    "fancy index": lambda a: list(np.ndarray.view(a[[4, 0, 0]], np.ndarray)),
    "boolean mask": lambda a: list(np.ndarray.view(a[KEEP], np.ndarray)),
    "copy": lambda a: list(np.ndarray.view(a.copy(), np.ndarray)),
    "np.concatenate": lambda a: list(np.concatenate([a, a[:0]]).view(np.ndarray)),
    "np.take": lambda a: list(np.ndarray.view(np.take(a, [2]), np.ndarray)),
    "np.copy": lambda a: list(np.copy(a)),
    "np.where": lambda a: [x for x in np.where(KEEP, a, "not kept") if x != "not kept"],
    "pickle 2": lambda a: list(pickle.loads(pickle.dumps(a, protocol=2))),
    "pickle 5": lambda a: list(pickle.loads(pickle.dumps(a, protocol=5))),
    "deepcopy": lambda a: list(__import__("copy").deepcopy(a)),
    "ufunc": lambda a: [a[k] for k in np.flatnonzero(np.equal(a, made()))],
    "zip": lambda a: [rle for rle, _ in zip(a, range(5), strict=True)],
}


@pytest.mark.parametrize("way", list(WAYS_IN))
def test_every_way_to_a_deferred_arrays_elements_makes_its_dicts_first(way: str) -> None:
    """A default masks run never reads its 500,000 results' dicts, so they are made only
    when something reaches an element: by any way in, the dicts an eager array holds."""
    array = deferred()
    assert array.unfilled and all(item is None for item in np.ndarray.view(array, np.ndarray))
    seen = WAYS_IN[way](array)
    eager = list(made())
    assert seen and all(rle in eager for rle in seen), (way, seen)
    assert not array.unfilled and list(array) == eager
    assert all(type(rle["counts"]) is bytes for rle in array)


def test_a_deferred_array_is_read_by_the_mask_steps_without_its_dicts() -> None:
    """Strings, sizes and areas: what the mask steps read, none of them from a dict."""
    array = deferred()
    text, offsets = masks.joined_counts(array)
    assert offsets is array.packed[1]
    assert text is array.packed[0] and masks.sizes_of(array) is array.sizes
    array.set_areas(np.array([5.0, 1.0, 2.0, 0.0, 7.0]))
    assert array.unfilled
    assert mask_areas(array).tolist() == [5.0, 1.0, 2.0, 0.0, 7.0]
    assert array.unfilled


@pytest.mark.parametrize("when", ["before", "after"])
def test_areas_set_before_or_after_the_dicts_are_made_are_in_them(when: str) -> None:
    array = deferred()
    areas = np.array([5.0, 1.0, 2.0, 0.0, 7.0])
    if when == "after":
        array.fill()
    array.set_areas(areas)
    expected = [{**rle, "area": int(a)} for rle, a in zip(made(), areas, strict=True)]
    assert list(array) == expected
    assert all(type(rle["area"]) is int for rle in array)


def test_equal_sizes_in_a_run_share_one_list_in_the_dicts_made() -> None:
    """(a results file's masks come image by image: 5,000 size lists for 500,000 RLEs)"""
    strings = [b"<4", b"0<", b"04", b"<4"]
    sizes = np.array([[4, 4], [4, 4], [2, 2], [4, 4]], np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in strings])]).astype(np.int64)
    rows = [rle["size"] for rle in deferred_rles(b"".join(strings), offsets, sizes)]
    assert rows == sizes.tolist()
    assert rows[0] is rows[1] and rows[1] is not rows[3]
