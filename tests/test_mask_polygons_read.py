"""GT polygons read at once (``rpx_cli/io/instances.py: _fast_polygons``) against the
per-object read of ``_segmentation`` it stands for: the same shapes and areas for files of
polygons (with crowd RLEs among them), and for every form the per-object checks refuse the
same error, named by the same object (the fast path steps aside)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.errors import InputError
from rpx_cli.io import instances

COORD = st.one_of(st.integers(-5, 700), st.floats(-5, 700, allow_nan=False))


@st.composite
def gt_objects(draw):
    objects = []
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.integers(0, 5)) == 0:  # a crowd region as uncompressed runs
            segmentation = {"size": [2, 3], "counts": [1, 2, 3]}
        else:
            segmentation = [draw(st.lists(COORD, min_size=3, max_size=8))
                            for _ in range(draw(st.integers(1, 3)))]
            segmentation = [part + part[:1] if len(part) % 2 else part for part in segmentation]
            segmentation = [part + [1.5, 2.5] * 3 if len(part) < 6 else part for part in segmentation]
        objects.append({"segmentation": segmentation})
    return objects


def read(objects, *, fast: bool, monkeypatch=None):
    area = np.arange(len(objects), dtype=np.float64)
    if fast:
        return instances.masks(objects, "gt.json", prediction=False, box_format="xywh",
                               given_area=area, what="annotation")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(instances, "_fast_polygons", lambda *args: None)
        return instances.masks(objects, "gt.json", prediction=False, box_format="xywh",
                               given_area=area, what="annotation")


@settings(max_examples=200, deadline=None)
@given(gt_objects())
def test_polygons_read_at_once_equal_the_per_object_read(objects) -> None:
    fast, slow = read(objects, fast=True), read(objects, fast=False)
    assert fast.shape.tolist() == slow.shape.tolist()
    assert fast.area.tolist() == slow.area.tolist() and fast.crowd.tolist() == slow.crowd.tolist()


def test_a_file_of_polygons_takes_the_fast_path() -> None:
    objects = [{"segmentation": [[0, 0, 4, 0, 4, 4]]}, {"segmentation": {"size": [2, 2], "counts": [4]}}]
    assert instances._fast_polygons(objects, np.zeros(2), "annotation", "gt.json") is not None


SQUARE = [[0, 0, 4, 0, 4, 4]]


@pytest.mark.parametrize("bad, message", [
    ([], "annotation 1: 'segmentation' is an empty list of polygons"),
    ([[0, 0, 4, 0]], "annotation 1: polygon 0 must be [x1, y1, x2, y2, ...] with at least 3 points"),
    ([[0, 0, 4, 0, 4]], "annotation 1: polygon 0 must be"),
    ([[0, 0, 4, 0, 4, True]], "annotation 1: polygon 0 must be"),
    ([[0, 0, 4, 0, 4, "4"]], "annotation 1: polygon 0 must be"),
    ([[0, 0, 4, 0, 4, 10**400]], "annotation 1: polygon 0 must be"),
    ([[0, 0, 4, 0, 4, 1e13]], "annotation 1: polygon 0 must be"),
    ([[0, 0, 4, 0, 4, float("nan")]], "annotation 1: polygon 0 must be"),
    ([SQUARE[0], [1, 2]], "annotation 1: polygon 1 must be"),
    ([[0, 1, 0, 1, 1, 0], [1, 1, 0, 0, 1, 1]], "annotation 1: 'segmentation' looks like a binary mask"),
    ([7], "annotation 1: polygon 0 must be"),
])
def test_every_bad_polygon_is_worded_as_before(bad, message) -> None:
    objects = [{"segmentation": SQUARE}, {"segmentation": bad}, {"segmentation": {"size": [1], "counts": []}}]
    assert instances._fast_polygons(objects, np.zeros(3), "annotation", "gt.json") is None
    for fast in (True, False):
        with pytest.raises(InputError) as caught:
            read(objects, fast=fast)
        assert message in str(caught.value) and "gt.json" in str(caught.value)


def test_a_bad_rle_after_good_polygons_is_its_own_error() -> None:
    objects = [{"segmentation": SQUARE}, {"segmentation": {"size": [1], "counts": []}}]
    for fast in (True, False):
        with pytest.raises(InputError, match="annotation 1: RLE 'size' must be"):
            read(objects, fast=fast)


def test_0_1_polygons_that_are_not_rows_stay_polygons() -> None:
    """A polygon of 0s and 1s only that is no binary mask (rows of unequal length) is read
    one by one, as before: a polygon."""
    objects = [{"segmentation": [[0, 0, 1, 0, 1, 1], [0, 1, 1, 1, 0, 0, 1, 0]]}]
    assert read(objects, fast=True).shape.tolist() == read(objects, fast=False).shape.tolist()


def test_sizes_of_reads_every_rle_size_at_once() -> None:
    from rpx_cli.ops.masks import sizes_of

    rles = np.empty(3, object)
    rles[:] = [{"size": [2, 3], "counts": b""}, {"size": (4, 5), "counts": b""},
               {"size": np.array([6, 7]), "counts": b""}]
    assert sizes_of(rles).tolist() == [[2, 3], [4, 5], [6, 7]] and sizes_of(rles).dtype == np.int64
    assert sizes_of([]).shape == (0, 2)
