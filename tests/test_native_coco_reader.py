"""The native core's COCO results reader (``coco_results`` in ``rpx_cli/csrc/coco_json.c``,
``rpx_cli/io/coco_columns.py``) against its twin, the Python path (orjson, then
``coco_results._results_of``): whenever the native reader answers, every array is the
Python path's bit for bit; whenever the Python path refuses a file, the native reader
declines it (None) so that the Python path words the error; no input makes it crash.

Generated results lists (boxes, compressed RLEs, keypoints) are written by ``json.dumps``,
orjson and by hand (numbers as any JSON text: exponents, negative zero, long mantissas; any
white space; unknown keys holding nested values and escaped unicode). The kernel is called
directly (these tests run under ``RPX_NATIVE=0`` too, and under the sanitizer build in CI);
they skip where the extension is not built.
"""

from __future__ import annotations

import json
import os
import struct
from unittest import mock

import numpy as np
import orjson
import pytest
from coco_family_data import box_set_lvis, keypoint_set, segm_set
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpx_cli.errors import InputError
from rpx_cli.io import coco_results
from rpx_cli.io.coco_columns import native_columns
from rpx_cli.io.coco_objects import BOX_FIELD, KEYPOINT_FIELD, MASK_FIELD
from rpx_cli.io.json import loads_json

core = pytest.importorskip("rpx_cli._native")

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIELDS = {"bbox": BOX_FIELD, "segmentation": MASK_FIELD, "keypoints": KEYPOINT_FIELD}


def python_path(data: bytes, field_name: str):
    """The Python path's Results, or the InputError it raises."""
    field = FIELDS[field_name]
    try:
        results = loads_json(data, "r.json")
        if not isinstance(results, list):
            raise InputError("not a list", path="r.json")
        no_literals = field.instances is not None and b"true" not in data and b"false" not in data
        return coco_results._results_of(results, "r.json", field, no_literals)
    except InputError as exc:
        return exc


def native_path(data: bytes, field_name: str):
    with mock.patch.dict(os.environ, {"RPX_NATIVE": "1"}):
        return native_columns(data, field_name)


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def assert_same(data: bytes, field_name: str, *, must_answer: bool = False) -> None:
    """The native reader's columns equal the Python path's bit for bit, or it declines; it
    declines every file the Python path refuses."""
    want, got = python_path(data, field_name), native_path(data, field_name)
    if must_answer:
        assert got is not None, data[:300]
    if got is None:
        return
    assert not isinstance(want, InputError), (str(want), data[:300])
    image, category, boxes = got
    assert bits(image) == bits(want.image) and image.dtype == want.image.dtype == np.int64
    assert bits(category) == bits(want.category) and want.usable.all()
    b = want.boxes
    for name in ("scores", "crowd", "area"):
        x, y = getattr(boxes, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and bits(x) == bits(y), name
    assert np.asarray(boxes.labels).tolist() == np.asarray(b.labels).tolist()
    if b.shape.dtype == object:
        assert boxes.shape.tolist() == b.shape.tolist()
        assert all(type(s["counts"]) is bytes for s in boxes.shape)
    else:
        assert boxes.shape.dtype == b.shape.dtype and boxes.shape.shape == b.shape.shape
        assert bits(boxes.shape) == bits(b.shape)
        assert boxes.shape.flags.writeable


# --- numbers as JSON text -----------------------------------------------------------------

DIGITS = st.text("0123456789", min_size=1, max_size=30)


@st.composite
def number_text(draw, small: bool = True) -> str:
    """Any JSON number's text: Python's repr, %e with long mantissas, or digits at random."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return repr(draw(st.floats(-1e12 if small else None, 1e12 if small else None,
                                   allow_nan=False, allow_infinity=False)))
    if kind == 1:
        value = draw(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12))
        return format(value, f".{draw(st.integers(0, 25))}{draw(st.sampled_from('eEf'))}")
    if kind == 2:
        return str(draw(st.integers(-10**13, 10**13)))
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(st.sampled_from(["0", "1", "9"])) if draw(st.booleans()) else \
        draw(st.sampled_from("123456789")) + draw(DIGITS)[: draw(st.integers(0, 12))]
    frac = "." + draw(DIGITS) if draw(st.booleans()) else ""
    exp = ""
    if draw(st.booleans()):
        exp = draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "+", "-"])) + \
            str(draw(st.integers(0, 30 if small else 400)))
    return sign + whole + frac + exp


def python_float(text: str) -> float:
    return float(text) if any(c in text for c in ".eE") else float(int(text))


@SETTINGS
@given(st.lists(number_text(small=False), min_size=1, max_size=20))
def test_numbers_convert_as_python_float(texts: list[str]) -> None:
    """Every number's double is Python's ``float()`` of its text (an integer token's the
    int's), bit for bit: the fast path and strtod alike."""
    records = ",".join(f'{{"image_id":1,"category_id":1,"score":{t},"bbox":[0,0,0,0]}}' for t in texts)
    read = core.coco_results(f"[{records}]".encode(), 0)
    assert read is not None
    got = np.frombuffer(read[3], np.float64)
    for text, value in zip(texts, got.tolist(), strict=True):
        assert struct.pack("<d", value) == struct.pack("<d", python_float(text)), text


@settings(max_examples=1000, deadline=None)
@given(st.text("0123456789", min_size=16, max_size=19), st.integers(0, 19), st.integers(-30, 30),
       st.booleans())
def test_long_mantissas_convert_as_python_float(digits: str, point: int, exponent: int,
                                                negative: bool) -> None:
    """16 to 19 significant digits (Python's repr writes 17) and powers of ten near the
    extended-precision path's limits: Python's ``float()``, bit for bit."""
    digits = digits.lstrip("0") or "0"
    point = min(point, len(digits) - 1)
    text = ("-" if negative else "") + digits[:len(digits) - point] + \
        ("." + digits[len(digits) - point:] if point else "") + f"e{exponent}"
    record = f'{{"image_id":1,"category_id":1,"score":{text},"bbox":[0,0,0,0]}}'
    value = np.frombuffer(core.coco_results(f"[{record}]".encode(), 0)[3], np.float64)[0]
    assert struct.pack("<d", value) == struct.pack("<d", float(text)), text


@pytest.mark.parametrize("text", ["9007199254740993.0", "9007199254740993e0", "9007199254740995.0",
                                  "-9007199254740993.0", "18014398509481986e0", "0.1e-27", "1e27",
                                  "1234567890123456789e-27", "-0", "-0.0", "0e5", "-0e-5", "1e-400",
                                  "4.9e-324", "2.5e-324",
                                  "1.7976931348623157e308", "9007199254740993", "0.1", "123456789012345678",
                                  "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                                  "2.2250738585072011e-308", "1" + "0" * 22 + ".5",
                                  "0." + "0" * 300 + "1"])
def test_edge_numbers(text: str) -> None:
    record = f'{{"image_id":1,"category_id":1,"score":{text},"bbox":[0,0,0,0]}}'
    read = core.coco_results(f"[{record}]".encode(), 0)
    value = np.frombuffer(read[3], np.float64)[0]
    assert struct.pack("<d", value) == struct.pack("<d", python_float(text))


# --- generated results files --------------------------------------------------------------

JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                      st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)
WS = st.text(" \t\n\r", max_size=3)
EXTRA_KEYS = st.text(max_size=8).filter(lambda k: k not in ("image_id", "category_id", "score", "bbox",
                                                             "segmentation", "keypoints"))
RLE_TEXT = st.text(st.characters(min_codepoint=48, max_codepoint=111), min_size=1, max_size=12)


@st.composite
def results_file(draw, field_name: str) -> bytes:
    """A results list written by hand: numbers as any JSON text, random white space, keys
    in any order, unknown keys with nested values (escaped or raw unicode)."""
    n = draw(st.integers(1, 6))
    width = 3 * draw(st.integers(1, 4))
    with_box = draw(st.booleans())
    ws = draw(WS)
    records = []
    for _ in range(n):
        fields = {"image_id": str(draw(st.integers(-2**63, 2**63 - 1))),
                  "category_id": str(draw(st.integers(-2**63, 2**63 - 1))),
                  "score": draw(number_text())}
        box = [draw(number_text()) for _ in range(2)] + \
            [draw(number_text()).lstrip("-") for _ in range(2)]
        if field_name == "bbox" or with_box:
            fields["bbox"] = "[" + ",".join(ws + t for t in box) + ws + "]"
        if field_name == "keypoints":
            fields["keypoints"] = "[" + f",{ws}".join(draw(number_text()) for _ in range(width)) + "]"
        if field_name == "segmentation":
            h, w = draw(st.integers(1, 1000)), draw(st.integers(1, 1000))
            counts = json.dumps(draw(RLE_TEXT), ensure_ascii=draw(st.booleans()))
            fields["segmentation"] = f'{{"size":{ws}[{h},{ws}{w}],"counts":{ws}{counts}}}'
        for key, value in draw(st.dictionaries(EXTRA_KEYS, JSON_VALUE, max_size=3)).items():
            raw = draw(st.booleans())
            fields[json.dumps(key, ensure_ascii=raw)[1:-1]] = json.dumps(value, ensure_ascii=raw)
        items = list(fields.items())
        order = draw(st.permutations(range(len(items))))
        pairs = (f'{ws}"{items[k][0]}"{ws}:{ws}{items[k][1]}' for k in order)
        records.append("{" + f",{ws}".join(pairs) + ws + "}")
    return (ws + "[" + ws + f"{ws},".join(records) + "]" + ws).encode()


@pytest.mark.parametrize("field_name", ["bbox", "segmentation", "keypoints"])
@SETTINGS
@given(data=st.data())
def test_hand_written_files_equal_the_python_path(field_name: str, data) -> None:
    assert_same(data.draw(results_file(field_name)), field_name)


@pytest.mark.parametrize(("field_name", "make"), [
    ("bbox", lambda seed: box_set_lvis(seed)[1]),
    ("segmentation", lambda seed: segm_set(seed)[1]),
    ("keypoints", lambda seed: keypoint_set(seed)[1]),
])
@pytest.mark.parametrize("seed", [0, 1])
def test_generated_sets_by_every_writer(field_name: str, make, seed: int) -> None:
    """Ordinary files (json.dumps compact and indented, orjson) are read natively and equal
    the Python path."""
    results = [r for r in make(seed) if isinstance(r.get("segmentation", {}), dict)]
    for data in (json.dumps(results).encode(), json.dumps(results, indent=2).encode(),
                 orjson.dumps(results)):
        assert_same(data, field_name, must_answer=True)


# --- hostile inputs -----------------------------------------------------------------------

GOOD = (b'[{"image_id": 1, "category_id": 2, "bbox": [1.5, 2, 3e1, 4], "score": 0.5, '
        b'"note": {"a": ["\\u00e9\\ud83d\\ude00", true, null, -0.0]}}, '
        b'{"image_id": 3, "category_id": 4, "bbox": [0, 0, 1, 1], "score": 1}]')
RECORD = '{{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": {score}{extra}}}'


def one(score: str = "0.5", extra: str = "") -> bytes:
    return ("[" + RECORD.format(score=score, extra=extra) + "]").encode()


HOSTILE = [
    one("NaN"), one("Infinity"), one("-Infinity"), one("01"), one("1."), one(".5"), one("1e"), one("+1"),
    one("true"), one("null"), one('"0.5"'), one("1e999"), one("-1e999"), one("1" * 500),
    one("0." + "1" * 500), one(extra=', "x": "\x01"'), one(extra=', "x": "\\ud800"'),
    one(extra=', "x": "\\udc00\\ud800"'), one(extra=', "x": "\\ud800\\u0041"'), one(extra=', "x": "\\x"'),
    one(extra=', "x": "\\u12g4"'), one(extra=', "x": [1,]'), one(extra=', "x": {"a":1,}'),
    one(extra=', "x": ' + "[" * 100 + "]" * 100), one(extra=', "x": ' + '{"a":' * 100 + "1" + "}" * 100),
    one(extra=', "x": ' + "[" * 100000), one(extra=', "score": 0.5'), one(extra=', "image\\u005fid": 1'),
    one(extra=', "x": tru'), one(extra=', "x": nul'), one(extra=', "x": "\\u00"'),
    b"[" + RECORD.format(score="0.5", extra="").encode() + b",]", b"\xef\xbb\xbf" + one(), one() + b" x",
    one() + b"]", b"[1]", b"[[]]", b'{"annotations": []}', b"[]", b"", b" ", b"[", b"[{", b"[{}]",
    b'[{"image_id": 1.0, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1}]',
    b'[{"image_id": true, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1}]',
    b'[{"image_id": 9223372036854775808, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1}]',
    b'[{"image_id": 1, "category_id": "cat", "bbox": [1, 2, 3, 4], "score": 1}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3], "score": 1}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4, 5], "score": 1}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, -3, 4], "score": 1}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 1e6, 1e6], "score": 1}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1e13}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": null, "score": 1}]',
    b'[{"image_id": 1, "category_id": 2, "score": 1}]',
    '[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1, "x": "\u00e9"}]'.encode(),
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1, "x": "\xc3"}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1, "x": "\xed\xa0\x80"}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1, "x": "\xc0\xaf"}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1, "x": "\xf4\x90\x80\x80"}]',
    b'[{"image_id": 1, "category_id": 2, "bbox": [-0, -0.0, 0, 0], "score": -0}]',
]
SEGM = '[{{"image_id": 1, "category_id": 2, "score": 1, "segmentation": {seg}}}]'
HOSTILE_SEGM = [SEGM.format(seg=s).encode() for s in [
    '{"size": [2, 2], "counts": "04"}', '{"counts": "04", "size": [2, 2], "x": [1, {"y": null}]}',
    '{"size": [2, 2], "counts": "\\u0030\\/4"}', '{"size": [2, 2], "counts": "0\u00e9"}',
    '{"size": [2, 2], "counts": "\\u00e9"}', '{"size": [2, 2], "counts": [4]}',
    '[[0, 0, 1, 0, 1, 1]]',
    '{"size": [2, 2]}', '{"counts": "04"}', '{"size": [2, 2], "counts": "04", "size": [2, 2]}',
    '{"size": [2], "counts": "04"}', '{"size": [2, 2, 2], "counts": "04"}',
    '{"size": [0, 2], "counts": "04"}',
    '{"size": [2.0, 2], "counts": "04"}', '{"size": [2000000, 2], "counts": "04"}', 'null', '{}']]
KEYPOINTS = '[{{"image_id": 1, "category_id": 2, "score": 1, "keypoints": {k}{extra}}}]'
HOSTILE_KEYPOINTS = [KEYPOINTS.format(k=k, extra=e).encode() for k, e in [
    ("[1, 2, 2]", ""), ("[1, 2, 2]", ', "bbox": [0, 0, 3, 4]'), ("[1, 2, 2]", ', "bbox": null'),
    ("[1, 2]", ""), ("[]", ""), ("[1, 2, true]", ""), ("[1, 2, null]", ""), ('[1, 2, "2"]', ""),
    ("[1, 2, 1e13]", ""), ("[[1, 2, 2]]", ""), ("null", ""), ("[1, 2, 2]", ', "bbox": [0, 0, -3, 4]'),
    ("[1, 2, 2]", ', "keypoints": [1, 2, 2]')]]


@pytest.mark.parametrize("data", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_box_files(data: bytes) -> None:
    assert_same(data, "bbox")
    assert_same(data, "keypoints")


@pytest.mark.parametrize("data", HOSTILE_SEGM, ids=range(len(HOSTILE_SEGM)))
def test_hostile_rle_files(data: bytes) -> None:
    assert_same(data, "segmentation")


@pytest.mark.parametrize("data", HOSTILE_KEYPOINTS, ids=range(len(HOSTILE_KEYPOINTS)))
def test_hostile_keypoint_files(data: bytes) -> None:
    assert_same(data, "keypoints")


@pytest.mark.parametrize("points", [
    "[0.0, 0.0, 1, -0.0, -0.0, 1, 0.0, 0.0, 1]", "[-0.0, -0.0, 0, 0.0, 0.0, 0, -0.0, -0.0, 1]",
    "[0, 0, 1, -0.0, 0.0, 1]", "[3, 4, 0]", "[5, 1, 2, 5, 1, 2, 2.5, 9, 0, 7, -1, 1]"])
def test_keypoint_rows_equal_keypoint_boxes(points: str) -> None:
    """The scanner writes each result's keypoint row whole — the values, their extent, the
    count of ``v > 0`` (``instances.keypoint_boxes``), signed zeros and ties as numpy's
    reductions keep them — bit for bit; with a box given, the box is the file's."""
    assert_same(KEYPOINTS.format(k=points, extra="").encode(), "keypoints", must_answer=True)
    assert_same(KEYPOINTS.format(k=points, extra=', "bbox": [-0.0, 1, 2, 3]').encode(), "keypoints",
                must_answer=True)


@pytest.mark.parametrize("data", [
    one(extra=', "x": "\\ud800"'), one("01"), one(extra=', "x": [1,]'), one("1" * 500), one("NaN"),
    one(extra=', "image\\u005fid": 1'), one(extra=', "score": 0.5'), b"\xef\xbb\xbf" + one(),
    one(extra=', "x": ' + "[" * 65 + "]" * 65)])
def test_what_it_declines(data: bytes) -> None:
    """Strict JSON, no key twice or escaped, nothing deeper than 64: declined."""
    assert core.coco_results(data, 0) is None


def test_what_it_reads() -> None:
    read = native_path(GOOD, "bbox")
    assert read is not None
    assert native_path(one(extra=', "x": ' + "[" * 61 + "]" * 61), "bbox") is not None
    assert native_path(b'[{"image_id": 1, "category_id": 2, "bbox": [-0, -0.0, 0, 0], "score": -0}]',
                       "bbox") is not None


@pytest.mark.parametrize("field_name", ["bbox", "segmentation", "keypoints"])
def test_truncated_at_every_byte(field_name: str) -> None:
    data = {"bbox": GOOD, "segmentation": HOSTILE_SEGM[1], "keypoints": HOSTILE_KEYPOINTS[1]}[field_name]
    assert native_path(data, field_name) is not None
    for end in range(len(data)):
        assert_same(data[:end], field_name)
        assert_same(data[:end] + b"]", field_name)


def test_every_byte_replaced() -> None:
    for at in range(len(GOOD)):
        for byte in (b"\x00", b"\xff", b"\\", b'"', b"}", b"]", b"9", b"-"):
            assert_same(GOOD[:at] + byte + GOOD[at + 1:], "bbox")


def test_arguments_checked() -> None:
    with pytest.raises(ValueError, match="field"):
        core.coco_results(GOOD, 4)
    with pytest.raises(TypeError):
        core.coco_results("text", 0)
    with pytest.raises(TypeError):
        core.coco_results(np.zeros(3, np.float64), 0)
    assert core.coco_results(np.frombuffer(GOOD, np.uint8), 0) is not None
    from rpx_cli.io.memory import InMemory

    assert native_path(InMemory([]), "bbox") is None  # a document given parsed: Python's


def test_the_numpy_path_reads_the_same(tmp_path) -> None:
    """RPX_NATIVE=0 rules the reader out; read_results gives the same arrays either way."""
    path = tmp_path / "r.json"
    path.write_bytes(json.dumps(keypoint_set(3)[1]).encode())
    with mock.patch.dict(os.environ, {"RPX_NATIVE": "0"}):
        assert native_columns(path.read_bytes(), "keypoints") is None
        slow = coco_results.read_results(str(path), KEYPOINT_FIELD)
    with mock.patch.dict(os.environ, {"RPX_NATIVE": "1"}):
        fast = coco_results.read_results(str(path), KEYPOINT_FIELD)
    assert bits(fast.boxes.shape) == bits(slow.boxes.shape) and bits(fast.image) == bits(slow.image)
    assert bits(fast.boxes.area) == bits(slow.boxes.area)
    assert bits(fast.boxes.scores) == bits(slow.boxes.scores)


@pytest.mark.parametrize(("data", "message"), [
    (one("1" * 500), "'score' must be a finite number"),
    (b'[{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 1' + b"0" * 400 + b'], "score": 1}]',
     "'bbox' must be four finite numbers"),
    (b'[{"image_id": 9223372036854775808, "category_id": 2, "bbox": [1, 2, 3, 4], "score": 1}]',
     "detection 0: image_id 9223372036854775808 is beyond 64-bit integers"),
    (KEYPOINTS.format(k="[1, 2, 1" + "0" * 400 + "]", extra="").encode(), "'keypoints' must be"),
    (KEYPOINTS.format(k="[1, 2, 2]", extra=', "score": 1' + "0" * 400).encode(), "'score' must be"),
])
def test_integers_beyond_float64_are_input_errors(data: bytes, message: str) -> None:
    """The Python path words an integer too large for a double (it raised OverflowError);
    the native reader declines it."""
    field_name = "keypoints" if b"keypoints" in data else "bbox"
    got = python_path(data, field_name)
    assert isinstance(got, InputError) and message in str(got)
    assert native_path(data, field_name) is None


def test_a_category_beyond_64_bits_names_no_category() -> None:
    data = b'[{"image_id": 1, "category_id": 9223372036854775808, "bbox": [1, 2, 3, 4], "score": 1}]'
    got = python_path(data, "bbox")
    assert got.usable.tolist() == [False] and native_path(data, "bbox") is None


# --- inside load_coco: a thread scans while the GT file is read ---------------------------


def test_the_thread_reads_and_a_gt_error_comes_first(tmp_path) -> None:
    """With the native core the results file is scanned in a thread while the GT file is
    read: the same arrays as the numpy path; a GT error is still the error, also when the
    results file cannot be read."""
    from rpx_cli.io import coco_files

    gt, results = box_set_lvis(3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(results))
    read = {}
    for flag in ("1", "0"):
        with mock.patch.dict(os.environ, {"RPX_NATIVE": flag}):
            read[flag] = coco_files.load_coco(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"))
    for name in ("frame", "label", "shape", "area", "score"):
        assert bits(getattr(read["1"].pred, name)) == bits(getattr(read["0"].pred, name)), name
    gt["annotations"][0]["category_id"] = 999
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    with mock.patch.dict(os.environ, {"RPX_NATIVE": "1"}):
        for dt in ("dt.json", "missing.json"):
            with pytest.raises(InputError, match="category_id 999"):
                coco_files.load_coco(str(tmp_path / "gt.json"), str(tmp_path / dt))


def test_a_declined_file_is_read_in_pieces(tmp_path, monkeypatch) -> None:
    """A file the reader declines (a category id that is not an integer) goes the numpy
    path's way: in pieces, with the same arrays as the whole file."""
    results = box_set_lvis(3)[1]
    results[5]["category_id"] = "cat"
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(results))
    calls = []
    real = coco_results.loads_json
    monkeypatch.setattr(coco_results, "loads_json", lambda data, p: calls.append(len(data)) or real(data, p))
    with mock.patch.dict(os.environ, {"RPX_NATIVE": "1"}):
        whole = coco_results.read_results(str(path), BOX_FIELD)
        monkeypatch.setattr(coco_results, "CHUNK_BYTES", 2000)
        calls.clear()
        pieces = coco_results.read_results(str(path), BOX_FIELD)
    assert len(calls) > 5
    assert not whole.usable[5] and bits(pieces.usable) == bits(whole.usable)
    assert bits(pieces.boxes.shape) == bits(whole.boxes.shape)
    assert bits(pieces.image) == bits(whole.image) and bits(pieces.category) == bits(whole.category)


def test_the_columns_are_the_scanners_own_memory() -> None:
    """The scanner hands its columns over without a copy (``_native.Buffer``): writable,
    sized, read as bytes, and alive as long as an array views them."""
    read = core.coco_results(KEYPOINTS.format(k="[1, 2, 1, 3, 5, 0]", extra="").encode(), 3)
    _, image, *_, shape, offsets, sizes = read
    assert type(image).__name__ == "Buffer" and len(image) == 8 and len(sizes) == 0
    assert bytes(image) == np.array([1], np.int64).tobytes() and bytes(sizes) == b""
    rows = np.frombuffer(shape, np.float64)
    del read, shape
    assert rows.flags.writeable and rows.tolist() == [1, 2, 1, 3, 5, 0, 1, 2, 2, 3, 1]
    rows[0] = 7.0  # (writable: the Python path's arrays are too)
    assert np.frombuffer(offsets, np.int64).tolist() == [0, 11]


# --- a large list scanned in two halves (coco_results' threads) ----------------------------------

def scanned_alike(text: bytes, code: int) -> None:
    """One piece and two halves (cut at any size: min_split 0) give the same columns, or
    both decline."""
    whole, halves = core.coco_results(text, code, 1), core.coco_results(text, code, 2, 0)
    assert (whole is None) == (halves is None)
    if whole is not None:
        assert whole[0] == halves[0]
        assert [bytes(a) for a in whole[1:]] == [bytes(b) for b in halves[1:]]


@pytest.mark.parametrize("field_name", ["bbox", "segmentation", "keypoints"])
@SETTINGS
@given(data=st.data())
def test_a_list_scanned_in_two_halves_equals_one_piece(field_name: str, data) -> None:
    text = data.draw(results_file(field_name))
    for code in {"bbox": (0,), "segmentation": (1,), "keypoints": (2, 3)}[field_name]:
        scanned_alike(text, code)


MIDDLE = [
    # "}, {" inside a string at the middle: the head then ends inside the string
    '"note": "' + "x" * 40 + '}, {' + "y" * 40 + '"',
    # a list of objects inside a record at the middle: the head ends inside the record
    '"parts": [' + ", ".join(['{"a": 1}'] * 12) + ']',
]


@pytest.mark.parametrize("extra", MIDDLE, ids=["in a string", "in a nested list"])
@pytest.mark.parametrize("where", [0.3, 0.5, 0.7])
def test_a_cut_that_is_not_between_two_records_reads_the_list_whole(extra: str, where: float) -> None:
    records = [f'{{"image_id": {i}, "category_id": 1, "score": 0.5, "bbox": [1, 2, 3, 4]}}'
               for i in range(20)]
    k = int(where * len(records))
    records[k] = records[k][:-1] + ", " + extra + "}"
    text = ("[" + ", ".join(records) + "]").encode()
    scanned_alike(text, 0)
    assert core.coco_results(text, 0, 2, 0)[0] == 20


ONE = b'{"image_id": 1, "category_id": 1, "score": 1, "bbox": [0, 0, 1, 1]}'


@pytest.mark.parametrize("text", [b"[]", b"[" + ONE + b"]", b'[{"image_id": 1}, {"image_id": 2}]',
                                  b"[1, 2]", b'{"a": 1}, {"b": 2}', b"[" + ONE + b", " + ONE + b"] x",
                                  b"[" + ONE + b", " + ONE + b", ]", b"[" + ONE + b",, " + ONE + b"]"])
def test_small_and_broken_lists_in_two_halves(text: bytes) -> None:
    scanned_alike(text, 0)
