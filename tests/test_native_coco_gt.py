"""The native core's COCO GT reader (``coco_gt`` in ``rpx_cli/csrc/coco_gt.c``,
``rpx_cli/io/coco_gt_columns.py``) against its twin, the Python path of
``io.coco_files._read_gt`` (orjson, then the checks of ``io.boxes``): whenever the native
reader answers, every array and name is the Python path's bit for bit; whenever the Python
path refuses a file, the native reader declines it so that the Python path words the error
(the same message from ``_read_gt`` on either path); no input makes it crash (CI runs this
file under the sanitizers).

Generated GT documents are written by ``json.dumps`` and orjson, with keys in any order,
numbers as ints and floats, optional fields present, null or absent, unknown keys holding
nested values. The kernel is called directly where it matters (these tests run under
``RPX_NATIVE=0`` too); they skip where the extension is not built.
"""

from __future__ import annotations

import json
import os
from unittest import mock

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.errors import InputError
from rpx_cli.io.coco_files import _read_gt
from rpx_cli.io.coco_gt_columns import native_gt
from rpx_cli.io.coco_objects import BOX_FIELD, KEYPOINT_FIELD

core = pytest.importorskip("rpx_cli._native")

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def read(path, native: bool, field=BOX_FIELD):
    """``_read_gt`` of the file on one path: a comparable form of its ``_Gt``, or the
    InputError's message."""
    with mock.patch.dict(os.environ, {"RPX_NATIVE": "1" if native else "0"}):
        try:
            gt = _read_gt(str(path), field)
        except InputError as exc:
            return ("error", str(exc))
    out = {"stems": gt.stems, "names": gt.names, "size": gt.size, "dropped": gt.dropped}
    for name in ("image_ids", "category_ids", "image_size", "file_order", "zero_id"):
        value = getattr(gt, name)
        out[name] = (value.dtype.str, value.shape, value.tobytes())
    for name, value in vars(gt.table).items():
        out[f"table.{name}"] = value if not isinstance(value, np.ndarray) else \
            (value.dtype.str, value.shape, value.tobytes())
    return out


def assert_same(tmp_path, data: bytes, *, must_answer: bool = False, field=BOX_FIELD) -> None:
    """Either path reads ``data`` alike (or refuses it with the same message); the native
    scanner answers when ``must_answer``."""
    path = tmp_path / "gt.json"
    path.write_bytes(data)
    with mock.patch.dict(os.environ, {"RPX_NATIVE": "1"}):
        answered = native_gt(data, field.name) is not None
    if must_answer:
        assert answered, data[:300]
    assert read(path, True, field) == read(path, False, field), data[:300]


numbers = st.one_of(st.integers(0, 2000), st.floats(0, 2000, allow_nan=False).map(lambda x: round(x, 3)))
flags = st.sampled_from([0, 1, True, False])


@st.composite
def documents(draw, ordinary: bool = True):
    """A GT document of boxes (``ordinary``: one the native reader must answer)."""
    n_images, n_categories = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    image_ids = draw(st.lists(st.integers(-5, 10**12), min_size=n_images, max_size=n_images, unique=True))
    category_ids = draw(st.lists(st.integers(-3, 90), min_size=n_categories, max_size=n_categories,
                                 unique=True))
    images = []
    for image_id in image_ids:
        image = {"id": image_id}
        if draw(st.booleans()):
            image["file_name"] = draw(st.sampled_from(["a.jpg", "b.c.png", "noext", "", "x\"y.jpg",
                                                       "dir/z\\w.jpg", "tab\there.jpg"]))
        for key in ("height", "width"):
            value = draw(st.one_of(st.none(), st.integers(-2, 4000), st.just("absent")))
            if value != "absent":
                image[key] = value
        if draw(st.booleans()):
            image["license"] = {"nested": [1, 2.5, None, "s"]}
        images.append(image)
    categories = []
    for category_id in category_ids:
        category = {"id": category_id}
        if draw(st.booleans()):
            category["name"] = draw(st.sampled_from(["person", "car", "car", "a/b", "1"]))
        if draw(st.booleans()):
            category["supercategory"] = "thing"
        categories.append(category)
    annotations = []
    for n in range(draw(st.integers(1, 25))):
        ann = {"id": draw(st.sampled_from([n + 1, 0, 0.0, None, "s"])),
               "image_id": draw(st.sampled_from(image_ids)),
               "category_id": draw(st.sampled_from(category_ids)),
               "bbox": [draw(numbers) for _ in range(4)]}
        area = draw(st.one_of(numbers, st.none(), st.just("absent")))
        if area != "absent":
            ann["area"] = area
        for key in ("iscrowd", "ignore", "difficult"):
            if draw(st.integers(0, 3)) == 0:
                ann[key] = draw(flags)
        if draw(st.booleans()):
            ann["segmentation"] = [[1.5, 2, 3, 4e2, 5, 6]]
        keys = draw(st.permutations(list(ann)))
        annotations.append({key: ann[key] for key in keys})
    doc = {"info": {"year": 2017}, "images": images, "annotations": annotations,
           "categories": categories}
    keys = draw(st.permutations(list(doc)))
    return {key: doc[key] for key in keys}


@SETTINGS
@given(documents(), st.sampled_from(["json", "json-indent", "orjson"]))
def test_generated_documents_read_alike(tmp_path_factory, doc, writer) -> None:
    data = orjson.dumps(doc) if writer == "orjson" else \
        json.dumps(doc, indent=2 if writer == "json-indent" else None).encode()
    # duplicate category names and names that stay ASCII: the native reader answers
    assert_same(tmp_path_factory.mktemp("gt"), data, must_answer=True)


def test_the_benchmark_layout_reads_alike(tmp_path) -> None:
    """A document as ``benchmarks/detection.py`` writes it (COCO's own key order)."""
    rng = np.random.default_rng(0)
    images = [{"id": i, "file_name": f"img{i:06d}.jpg", "width": 640, "height": 480} for i in range(1, 41)]
    anns = [{"id": n + 1, "image_id": int(rng.integers(1, 41)), "category_id": int(rng.integers(1, 6)),
             "bbox": [round(float(v), 2) for v in rng.uniform(0, 300, 4)],
             "area": round(float(rng.uniform(0, 9e4)), 2), "iscrowd": int(rng.random() < 0.05)}
            for n in range(600)]
    doc = {"images": images, "annotations": anns,
           "categories": [{"id": k, "name": f"class{k}"} for k in range(1, 6)]}
    assert_same(tmp_path, json.dumps(doc).encode(), must_answer=True)


BASE = {"images": [{"id": 1, "file_name": "a.jpg", "height": 10, "width": 20},
                   {"id": 2, "file_name": "b.jpg"}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 3, "bbox": [1, 2, 3, 4], "area": 12.0,
                         "iscrowd": 0},
                        {"id": 2, "image_id": 2, "category_id": 3, "bbox": [0.5, 0, 2, 2.25]}],
        "categories": [{"id": 3, "name": "cat"}]}


def changed(path: tuple, value) -> bytes:
    """BASE with the value at ``path`` replaced (``...``: the key removed)."""
    doc = json.loads(json.dumps(BASE))
    *parents, last = path
    holder = doc
    for key in parents:
        holder = holder[key]
    if value is ...:
        del holder[last]
    else:
        holder[last] = value
    return json.dumps(doc).encode()


DEEP = [1]
for _ in range(70):
    DEEP = [DEEP]

HOSTILE = [
    changed(("images", 1, "id"), 1),  # image ids given twice
    changed(("categories", 0, "id"), "3"),  # a string id
    changed(("categories", 0, "id"), 3.0),  # a float id
    changed(("images", 0, "id"), True),
    changed(("images", 0, "id"), ...),  # no id
    changed(("images", 0, "id"), 2**63),  # beyond int64
    changed(("images", 0, "file_name"), 7),  # a number as a name
    changed(("images", 0, "file_name"), None),
    changed(("images", 0, "file_name"), "é.jpg"),  # non-ASCII: declined, read by Python
    changed(("images", 0, "height"), 10.0),  # a float height (Python: -1)
    changed(("images", 0, "height"), "10"),
    changed(("images", 0, "height"), 2**70),
    changed(("categories", 0, "name"), None),  # str(None)
    changed(("categories", 0, "name"), 5),
    changed(("annotations", 0, "image_id"), 9),  # not an image of the file
    changed(("annotations", 0, "category_id"), 4),
    changed(("annotations", 0, "image_id"), ...),
    changed(("annotations", 0, "bbox"), ...),
    changed(("annotations", 0, "bbox"), [1, 2, 3]),
    changed(("annotations", 0, "bbox"), [1, 2, 3, 4, 5]),
    changed(("annotations", 0, "bbox"), [1, 2, -3, 4]),  # a negative width
    changed(("annotations", 0, "bbox"), [1, 2, 3e12, 4]),  # beyond 1e12
    changed(("annotations", 0, "bbox"), [1, 2, 3, True]),
    changed(("annotations", 0, "bbox"), [1, 2, 3, "4"]),
    changed(("annotations", 0, "bbox"), None),
    changed(("annotations", 0, "area"), -1),
    changed(("annotations", 0, "area"), "12"),
    changed(("annotations", 0, "area"), True),
    changed(("annotations", 0, "iscrowd"), 2),
    changed(("annotations", 0, "iscrowd"), 1.0),
    changed(("annotations", 0, "iscrowd"), None),
    changed(("annotations", 0, "ignore"), None),
    changed(("annotations", 0, "ignore"), 2),
    changed(("annotations", 0, "difficult"), "yes"),
    changed(("annotations", 0), [1, 2]),  # not an object
    changed(("annotations", 0), {}),
    changed(("images", 0), "a.jpg"),
    changed(("annotations",), []),  # no annotation at all
    changed(("annotations",), {}),
    changed(("images",), ...),
    changed(("categories",), ...),
    changed(("categories",), None),
    b"[]",
    b"null",
    b"",
    b"\xef\xbb\xbf" + json.dumps(BASE).encode(),  # a byte order mark
    json.dumps(BASE).encode() + b" x",
    json.dumps(BASE).encode()[:-1] + b', "images": []}',  # a list given twice
    json.dumps(BASE).encode().replace(b'"iscrowd"', b'"iscrowd": 1, "iscrowd"'),  # a key twice
    json.dumps(BASE).encode().replace(b'"bbox"', b'"bb\\u006fx"'),  # an escaped key
    json.dumps(BASE).encode().replace(b"12.0", b"NaN"),
    json.dumps(BASE).encode().replace(b"12.0", b"1e400"),
    json.dumps(BASE).encode().replace(b"12.0", b"012"),
    json.dumps(BASE).encode().replace(b'"a.jpg"', b'"a\\u00e9.jpg"'),  # an escaped non-ASCII name
    json.dumps(BASE).encode().replace(b'"a.jpg"', b'"a\\/b.jpg"'),
    json.dumps(BASE).encode().replace(b'"cat"', b'"\\ud800"'),  # a lone surrogate
    json.dumps({**BASE, "info": {"deep": DEEP}}).encode(),  # nested past MAX_DEPTH
]


@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_documents_read_alike_or_fail_alike(tmp_path, data: bytes) -> None:
    assert_same(tmp_path, data)


def test_every_truncation_is_declined_and_never_crashes() -> None:
    data = json.dumps(BASE).encode()
    assert core.coco_gt(data, 0) is not None
    for end in range(len(data)):
        assert core.coco_gt(data[:end], 0) is None
        assert core.coco_gt(data[:end] + b"\x00" * 3, 0) is None
    data = json.dumps(KEYPOINT_BASE).encode()
    assert core.coco_gt(data, 2) is not None
    for end in range(len(data)):
        assert core.coco_gt(data[:end], 2) is None


def test_the_columns_by_hand() -> None:
    """BASE: two images (the second without a size), two annotations (the second without
    an area: its box's, 2 * 2.25); no ignore key."""
    with mock.patch.dict(os.environ, {"RPX_NATIVE": "1"}):
        gt = native_gt(json.dumps(BASE).encode())
    assert gt.stems == ["a", "b"] and gt.names == ["cat"]
    assert gt.image_size.tolist() == [[10, 20], [-1, -1]]
    assert gt.boxes.area.tolist() == [12.0, 2 * 2.25]
    assert gt.boxes.crowd.tolist() == [False, False] and gt.boxes.ignore is None
    assert gt.image.tolist() == [0, 1] and gt.category.tolist() == [0, 0]


def test_the_kernel_takes_bytes_and_a_known_field_only() -> None:
    with pytest.raises(TypeError):
        core.coco_gt("text", 0)
    with pytest.raises(TypeError):
        core.coco_gt(np.zeros(3, np.int64), 0)
    with pytest.raises(ValueError, match="field"):
        core.coco_gt(b"{}", 3)


def evaluate(rpx, monkeypatch, tmp_path, native: bool, answers: list):
    """``rpx eval detection --coco-gt --coco-dt`` on one path; ``answers`` gets whether the
    native GT reader answered, each time it is asked."""
    import rpx_cli.io.coco_files as coco_files

    def spy(data, field_name):
        out = native_gt(data, field_name)
        answers.append(out is not None)
        return out

    monkeypatch.setattr(coco_files, "native_gt", spy)
    monkeypatch.setenv("RPX_NATIVE", "1" if native else "0")
    return rpx(f"eval detection --coco-gt {tmp_path / 'gt.json'} --coco-dt {tmp_path / 'dt.json'} "
               "--iou-type bbox --metrics coco")


def test_the_cli_reads_a_box_gt_natively_with_the_same_report(rpx, monkeypatch, tmp_path) -> None:
    """The box kind's field (whose ``fill`` serves results) takes the native reader; the
    report is the numpy path's, number for number."""
    rng = np.random.default_rng(1)
    images = [{"id": i, "file_name": f"im{i}.jpg", "height": 300, "width": 400} for i in range(1, 9)]
    anns = [{"id": n + 1, "image_id": int(rng.integers(1, 9)), "category_id": int(rng.integers(1, 4)),
             "bbox": [round(float(v), 2) for v in rng.uniform(5, 120, 4)], "iscrowd": int(n % 17 == 0)}
            for n in range(80)]
    dets = [{"image_id": a["image_id"], "category_id": a["category_id"],
             "score": round(float(rng.random()), 3),
             "bbox": [round(abs(v + float(rng.normal(0, 4))), 2) for v in a["bbox"]]} for a in anns]
    (tmp_path / "gt.json").write_text(json.dumps({"images": images, "annotations": anns, "categories": [
        {"id": k, "name": f"c{k}"} for k in range(1, 4)]}))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    on, off = [], []
    run = evaluate(rpx, monkeypatch, tmp_path, True, on)
    assert run.exit_code == 0, run.stderr
    native_report = run.json
    numpy_report = evaluate(rpx, monkeypatch, tmp_path, False, off).json
    assert on == [True] and off == [False]
    for key in ("aggregate", "dataset", "rows"):
        assert native_report[key] == numpy_report[key], key


def test_the_cli_words_a_bad_gt_alike_on_both_paths(rpx, monkeypatch, tmp_path) -> None:
    (tmp_path / "gt.json").write_bytes(changed(("annotations", 1, "image_id"), 7))
    (tmp_path / "dt.json").write_text("[]")
    on, off = [], []
    native_run = evaluate(rpx, monkeypatch, tmp_path, True, on)
    numpy_run = evaluate(rpx, monkeypatch, tmp_path, False, off)
    assert on == [False]
    assert native_run.exit_code == numpy_run.exit_code == 1
    assert native_run.stderr == numpy_run.stderr
    assert "annotation 1: image_id 7 is not an image of this file" in native_run.stderr


@st.composite
def keypoint_documents(draw):
    """A keypoints GT document: every annotation the same number of points, visibilities
    0/1/2, the bbox and num_keypoints on all annotations or none."""
    doc = draw(documents())
    k = draw(st.integers(1, 4))
    with_box, with_count = draw(st.booleans()), draw(st.booleans())
    for ann in doc["annotations"]:
        ann["keypoints"] = [draw(st.one_of(st.integers(0, 640), st.floats(0, 640).map(lambda x: round(x, 2))))
                            if i % 3 < 2 else draw(st.sampled_from([0, 1, 2])) for i in range(3 * k)]
        if not with_box:
            ann.pop("bbox")
            if draw(st.booleans()):
                ann["bbox"] = None
        if with_count:
            ann["num_keypoints"] = draw(st.integers(0, k))
        elif draw(st.booleans()):
            ann["num_keypoints"] = None
    return doc


@SETTINGS
@given(keypoint_documents())
def test_generated_keypoint_documents_read_alike(tmp_path_factory, doc) -> None:
    assert_same(tmp_path_factory.mktemp("gt"), json.dumps(doc).encode(), must_answer=True,
                field=KEYPOINT_FIELD)


KEYPOINT_BASE = {
    "images": [{"id": 1, "file_name": "a.jpg"}],
    "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "keypoints": [10, 20, 2, 0, 0, 0],
                     "num_keypoints": 1, "bbox": [5, 5, 20, 30], "area": 300, "iscrowd": 0},
                    {"id": 2, "image_id": 1, "category_id": 1, "keypoints": [1.5, 2, 1, 8, 9, 2],
                     "num_keypoints": 2, "bbox": [0, 0, 10, 10]}],
    "categories": [{"id": 1, "name": "person", "keypoints": ["a", "b"], "skeleton": [[1, 2]]}]}


def keypoints_changed(path: tuple, value) -> bytes:
    doc = json.loads(json.dumps(KEYPOINT_BASE))
    *parents, last = path
    holder = doc
    for key in parents:
        holder = holder[key]
    if value is ...:
        del holder[last]
    else:
        holder[last] = value
    return json.dumps(doc).encode()


KEYPOINT_HOSTILE = [
    keypoints_changed(("annotations", 0, "keypoints"), [10, 20, 2]),  # ragged
    keypoints_changed(("annotations", 0, "keypoints"), [10, 20, 3, 0, 0, 0]),  # visibility 3
    keypoints_changed(("annotations", 0, "keypoints"), [10, 20, 2, 0, 0]),  # not triplets
    keypoints_changed(("annotations", 0, "keypoints"), []),
    keypoints_changed(("annotations", 0, "keypoints"), None),
    keypoints_changed(("annotations", 0, "keypoints"), ...),
    keypoints_changed(("annotations", 0, "keypoints"), [10, 20, True, 0, 0, 0]),
    keypoints_changed(("annotations", 0, "keypoints"), [1e13, 20, 2, 0, 0, 0]),
    keypoints_changed(("annotations", 0, "bbox"), None),  # a box on one annotation only
    keypoints_changed(("annotations", 0, "bbox"), ...),
    keypoints_changed(("annotations", 0, "bbox"), [1, 2, -3, 4]),
    keypoints_changed(("annotations", 0, "num_keypoints"), None),  # a count on one only
    keypoints_changed(("annotations", 0, "num_keypoints"), -1),
    keypoints_changed(("annotations", 0, "num_keypoints"), 1.0),
    keypoints_changed(("annotations", 0, "area"), -5),
    keypoints_changed(("annotations", 0, "area"), None),
    keypoints_changed(("annotations", 0, "iscrowd"), 2),
]


@pytest.mark.parametrize("data", KEYPOINT_HOSTILE, ids=range(len(KEYPOINT_HOSTILE)))
def test_hostile_keypoint_documents_read_alike_or_fail_alike(tmp_path, data: bytes) -> None:
    assert_same(tmp_path, data, field=KEYPOINT_FIELD)


def test_the_keypoint_columns_by_hand() -> None:
    """KEYPOINT_BASE: rows [x1, y1, v1, x2, y2, v2, bx, by, bw, bh, num_keypoints]; the
    first area given (300), the second its box's (10 * 10)."""
    with mock.patch.dict(os.environ, {"RPX_NATIVE": "1"}):
        gt = native_gt(json.dumps(KEYPOINT_BASE).encode(), "keypoints")
    assert gt.boxes.shape.tolist() == [[10, 20, 2, 0, 0, 0, 5, 5, 20, 30, 1],
                                       [1.5, 2, 1, 8, 9, 2, 0, 0, 10, 10, 2]]
    assert gt.boxes.area.tolist() == [300.0, 100.0]


def test_the_cli_reads_a_keypoint_gt_natively_with_the_same_report(rpx, monkeypatch, tmp_path) -> None:
    (tmp_path / "gt.json").write_text(json.dumps(KEYPOINT_BASE))
    dets = [{"image_id": 1, "category_id": 1, "score": 0.9, "keypoints": [10, 21, 1, 1, 1, 1]},
            {"image_id": 1, "category_id": 1, "score": 0.4, "keypoints": [2, 2, 1, 8, 8, 1]}]
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    import rpx_cli.io.coco_files as coco_files

    reports, answers = [], []
    for native in (True, False):
        monkeypatch.setattr(coco_files, "native_gt",
                            lambda data, name: answers.append(native_gt(data, name) is not None) or
                            native_gt(data, name))
        monkeypatch.setenv("RPX_NATIVE", "1" if native else "0")
        run = rpx(f"eval detection --coco-gt {tmp_path / 'gt.json'} --coco-dt {tmp_path / 'dt.json'} "
                  "--iou-type keypoints --oks-sigmas 0.5,0.1 --metrics coco")
        assert run.exit_code == 0, run.stderr
        reports.append(run.json)
    assert answers == [True, False]
    for key in ("aggregate", "dataset", "rows"):
        assert reports[0][key] == reports[1][key], key
