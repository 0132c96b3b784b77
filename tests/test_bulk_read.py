"""Reading every pair at once (``Detection.read_pairs``, ``tasks/detection/bulk.py``) gives
what reading pair by pair gives — statistics, rows, warnings, digests, skip counts — and
the many-file readers agree with the one-file readers object for object on what they
accept, leaving everything else (malformed, unusual) to them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.errors import InputError
from rpx_cli.io.voc import read_voc, read_voc_many
from rpx_cli.io.yolo import read_yolo, read_yolo_boxes
from rpx_cli.run.evaluate import run_evaluation
from rpx_cli.run.options import RunOptions
from rpx_cli.tasks.detection import bulk
from tests import format_data as fd


def _both(monkeypatch, pred, gt, params, **run) -> tuple:
    """The evaluation read at once and pair by pair: (report, warnings) of each."""
    options = RunOptions(jobs=1, digest_cache=False, **run)
    calls = []
    real = bulk.read_pairs

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(bulk, "read_pairs", counted)
    at_once = run_evaluation("detection", str(pred), str(gt), params, options)
    assert calls, "read_pairs was not asked"
    monkeypatch.setattr(bulk, "read_pairs", lambda *args, **kwargs: None)
    by_pair = run_evaluation("detection", str(pred), str(gt), params, options)
    return at_once, by_pair


def _same(a, b) -> None:
    ra, rb = a.report, b.report
    for key in ("params", "aggregate", "dataset", "rows", "unpaired", "errors", "n_pairs"):
        assert ra.get(key) == rb.get(key), key
    ia, ib = ra["run_provenance"]["inputs"], rb["run_provenance"]["inputs"]
    assert ia == ib
    assert sorted(a.warnings) == sorted(b.warnings)


def _read_at_once(monkeypatch, pred, gt, params, **run):
    """That the bulk path produced the report (not its fallback)."""
    results = []
    real = bulk.read_pairs

    def kept(*args, **kwargs):
        results.append(real(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(bulk, "read_pairs", kept)
    run_evaluation("detection", str(pred), str(gt), params, RunOptions(jobs=1, digest_cache=False, **run))
    return results[-1] is not None


@pytest.mark.parametrize("fmt", ["yolo", "voc", "kitti", "labelme"])
def test_at_once_equals_pair_by_pair(monkeypatch, tmp_path, fmt):
    images = fd.dataset(51, n=20, difficult=fmt == "voc")
    writer = {"yolo": fd.write_yolo, "voc": fd.write_voc, "kitti": fd.write_kitti,
              "labelme": fd.write_labelme}[fmt]
    pred, gt = writer(images, tmp_path / "p", "pred"), writer(images, tmp_path / "g", "gt")
    (pred / f"{images[3].stem}.{next(pred.iterdir()).suffix[1:]}").unlink()  # --missing empty
    params = {}
    if fmt == "yolo":
        params = {"data_yaml": str(fd.write_data_yaml(tmp_path / "d.yaml")), "image_size": (512, 512)}
    assert _read_at_once(monkeypatch, pred, gt, params, missing="empty")
    _same(*_both(monkeypatch, pred, gt, params, missing="empty"))


def test_at_once_with_a_class_map_and_skips(monkeypatch, tmp_path):
    """--class-map (renaming, dropping, a GT file emptied: its warning) and LabelMe shapes
    skipped: the same warnings and counts."""
    images = fd.dataset(52, n=12)
    pred = fd.write_labelme(images, tmp_path / "p", "pred")
    gt = fd.write_labelme(images, tmp_path / "g", "gt")
    document = json.loads((gt / f"{images[0].stem}.json").read_text())
    document["shapes"].append({"label": "cat", "points": [[1, 1], [3, 3]], "shape_type": "circle"})
    (gt / f"{images[0].stem}.json").write_text(json.dumps(document))
    only = next(image for image in images if image.gt and {o.label for o in image.gt} == {image.gt[0].label})
    dropped = fd.NAMES[only.gt[0].label]
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({dropped: None, "cat" if dropped != "cat" else "dog": "pet"}))
    params = {"class_map": str(mapping)}
    assert _read_at_once(monkeypatch, pred, gt, params)
    at_once, by_pair = _both(monkeypatch, pred, gt, params)
    _same(at_once, by_pair)
    assert any("--class-map removed every GT box" in line for line in at_once.warnings)
    assert at_once.report["run_provenance"]["inputs"]["gt_dir"]["skipped"] == {"labelme_circle": 1}


def test_a_malformed_file_is_read_pair_by_pair(monkeypatch, tmp_path):
    images = fd.dataset(53, n=6)
    pred, gt = fd.write_voc(images, tmp_path / "p", "pred"), fd.write_voc(images, tmp_path / "g", "gt")
    (gt / f"{images[2].stem}.xml").write_text("<annotation><object><name>cat</name></object></annotation>")
    assert not _read_at_once(monkeypatch, pred, gt, {}, on_error="skip")
    at_once, by_pair = _both(monkeypatch, pred, gt, {}, on_error="skip")
    _same(at_once, by_pair)
    assert at_once.report["errors"][0]["stem"] == images[2].stem


def test_pieces_in_worker_processes(monkeypatch, tmp_path):
    """Pieces of a side read side by side in two processes: the same report."""
    images = fd.dataset(54, n=30)
    monkeypatch.setattr(bulk, "PIECE", 7)
    pred, gt = fd.write_yolo(images, tmp_path / "p", "pred"), fd.write_yolo(images, tmp_path / "g", "gt")
    params = {"image_size": (512, 512)}
    one = run_evaluation("detection", str(pred), str(gt), params, RunOptions(jobs=1, digest_cache=False))
    two = run_evaluation("detection", str(pred), str(gt), params, RunOptions(jobs=2, digest_cache=False))
    _same(one, two)
    assert two.report["run_provenance"]["executor"]["jobs"] == 2


# --- the many-file readers against the one-file readers ----------------------------------------

_NUMBER_TEXT = st.one_of(
    st.floats(-0.2, 1.2, allow_nan=False).map(repr),
    st.sampled_from(["0", "1", ".5", "0.25", "1e-1", "+0.5", "-0.0", "5E-1", "1.", "nan", "1e999",
                     "0x1", "x", "1,5", "--1"]))
_CLASS_TEXT = st.sampled_from(["0", "1", "2", "3", "1.0", "01", "1.5", "-1", "7", ".0", "1e0", "a"])
_LINE = st.tuples(_CLASS_TEXT, st.lists(_NUMBER_TEXT, min_size=3, max_size=6),
                  st.sampled_from([" ", "  ", "\t"]))
_FILE = st.tuples(st.lists(st.one_of(_LINE, st.just(None)), max_size=4),
                  st.sampled_from(["\n", "\r\n"]), st.booleans())


def _text(spec) -> bytes:
    lines, end, final = spec
    out = [("" if line is None else line[2].join([line[0], *line[1]])) for line in lines]
    return (end.join(out) + (end if final and out else "")).encode()


@settings(max_examples=200, deadline=None)
@given(st.lists(_FILE, min_size=1, max_size=5), st.booleans())
def test_yolo_lines_at_once_agree(files, prediction):
    datas = [_text(spec) for spec in files]
    names = ["a", "b", "c", "d"]
    sizes = np.array([[64.0, 128.0]] * len(datas))
    at_once = read_yolo_boxes(datas, prediction=prediction, sizes=sizes, names=names)
    one = []
    try:
        for k, data in enumerate(datas):
            one.append(read_yolo(data, f"f{k}.txt", prediction=prediction, form="box",
                                 size=lambda: (64, 128), names=names))
    except InputError:
        assert at_once is None  # an error is the one-file reader's to name
        return
    if at_once is None:
        return  # left to the one-file reader (which accepts it)
    objects, image = at_once
    assert objects.labels == [label for part in one for label in part.labels]
    assert np.array_equal(objects.boxes, np.concatenate([part.boxes for part in one]).reshape(-1, 4))
    assert image.tolist() == [k for k, part in enumerate(one) for _ in part.labels]
    if prediction:
        assert np.array_equal(objects.scores, np.concatenate([part.scores for part in one]))


_XML_TEXT = st.sampled_from(["1", " 12 ", "3.5", "", " ", "x", "1e3", "inf"])
_OBJECT = st.fixed_dictionaries({
    "name": st.sampled_from(["cat", " dog ", "", None]),
    "difficult": st.sampled_from(["0", "1", " 1 ", "2", "", None]),
    "score": st.sampled_from(["0.5", "1", "", None]),
    "corners": st.lists(_XML_TEXT, min_size=4, max_size=4),
    "shuffle": st.booleans(),
    "bndbox": st.booleans(),
})
_DOC = st.tuples(st.lists(_OBJECT, max_size=3), st.booleans(), st.booleans(),
                 st.sampled_from(["", '<?xml version="1.0"?>', '<?xml version="1.0" encoding="utf-8"?>',
                                  '<?xml version="1.0" encoding="ISO-8859-1"?>', "<!-- c -->"]))


def _document(spec) -> bytes:
    objects, size, trailing, head = spec
    parts = [head, "<annotation>"]
    if size:
        parts.append("<size><width>64</width><height> 32 </height></size>")
    for obj in objects:
        parts.append("<object>")
        if obj["name"] is not None:
            parts.append(f"<name>{obj['name']}</name>")
        if obj["difficult"] is not None:
            parts.append(f"<difficult>{obj['difficult']}</difficult>")
        if obj["score"] is not None:
            parts.append(f"<score>{obj['score']}</score>")
        if obj["bndbox"]:
            keys = ["xmin", "ymin", "xmax", "ymax"]
            order = keys[::-1] if obj["shuffle"] else keys
            values = dict(zip(keys, obj["corners"], strict=True))
            parts.append("<bndbox>" + "".join(f"<{k}>{values[k]}</{k}>" for k in order) + "</bndbox>")
        parts.append("</object>")
    parts.append("</annotation>")
    if trailing:
        parts.append("\n<!-- after -->\n")
    return "".join(parts).encode()


@settings(max_examples=200, deadline=None)
@given(st.lists(_DOC, min_size=1, max_size=4), st.booleans())
def test_voc_documents_at_once_agree(docs, prediction):
    datas = [_document(spec) for spec in docs]
    at_once = read_voc_many(datas, prediction=prediction)
    one = []
    try:
        for k, data in enumerate(datas):
            one.append(read_voc(data, f"f{k}.xml", prediction=prediction))
    except InputError:
        assert at_once is None
        return
    if at_once is None:
        return
    objects, image = at_once
    assert objects.labels == [label for part in one for label in part.labels]
    assert np.array_equal(objects.boxes, np.concatenate([part.boxes for part in one]).reshape(-1, 4))
    assert image.tolist() == [k for k, part in enumerate(one) for _ in part.labels]
    if prediction:
        assert np.array_equal(objects.scores, np.concatenate([part.scores for part in one]))
    else:
        assert objects.ignore.tolist() == [bool(v) for part in one for v in part.ignore]


_ATTRIBUTE = st.sampled_from(["1", "2.5", " 3 ", "1e1", "-4", "x", "", "nan", "1e999", None])
_SHAPE = st.fixed_dictionaries({
    "tag": st.sampled_from(["box", "box", "box", "points", "tag", "polygon"]),
    "label": st.sampled_from(["cat", "", None]),
    "xtl": _ATTRIBUTE, "ytl": _ATTRIBUTE, "xbr": st.sampled_from(["5", "9.5", "0", None]),
    "ybr": st.sampled_from(["5", "9.5", "0"]),
    "rotation": st.sampled_from([None, "0", "30", "-45.5", "x"]),
})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_SHAPE, max_size=3), min_size=1, max_size=4),
       st.sampled_from(["box", "quad", "polygon"]))
def test_cvat_boxes_at_once_agree(images, form):
    """CVAT GT boxes gathered for every image at once equal the image-by-image reading
    (shape for shape, to 1e-12 for turned corners), or are left to it."""
    from rpx_cli.io import cvat

    parts = ["<annotations>"]
    for k, shapes in enumerate(images):
        parts.append(f'<image id="{k}" name="i{k}.jpg" width="64" height="32">')
        for shape in shapes:
            attributes = " ".join(f'{key}="{shape[key]}"' for key in ("label", "xtl", "ytl", "xbr", "ybr",
                                                                      "rotation")
                                  if shape[key] is not None)
            if shape["tag"] == "polygon":
                attributes += ' points="1,1;5,1;5,5"'
            parts.append(f"<{shape['tag']} {attributes}/>")
        parts.append("</image>")
    parts.append("</annotations>")
    data = "".join(parts).encode()
    root = cvat.parse_xml(data, "a.xml")
    try:
        one = [cvat._image(image, "image", "a.xml", False, form) for image in root.findall("image")]
    except InputError:
        with pytest.raises(InputError):
            cvat.read_cvat(data, "a.xml", prediction=False, form=form)
        return
    fast = cvat._boxes_at_once(root.findall("image"), form)
    if fast is None:
        return
    for (a, skipped_a), (b, skipped_b) in zip(fast, one, strict=True):
        assert a.labels == b.labels and a.size == b.size and skipped_a == skipped_b
        if form == "quad":
            assert np.allclose(a.quads, b.quads, rtol=1e-12, atol=1e-12)
        else:
            assert np.allclose(a.boxes.reshape(-1, 4), b.boxes.reshape(-1, 4), rtol=1e-12, atol=1e-12)
