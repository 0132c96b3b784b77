"""Evaluator states are checked as strictly as a file before they are trusted (issue 39 #7):
edited contents, params out of their declarations, a stem listed twice, negative counts and
a state that inflates far beyond its size are one clear ``InputError`` each — never a raw
AttributeError/TypeError/ValueError, never a count counted twice."""

from __future__ import annotations

import copy
import hashlib
import zlib
from typing import Any

import numpy as np
import orjson
import pytest

from rpx_cli import Evaluator
from rpx_cli.errors import InputError, ParameterError, RpxError
from rpx_cli.run.evaluator_state import HEADER, MAGIC, MAX_RATIO, VERSION, encode_state, pairing_of


def payload(state: bytes) -> dict[str, Any]:
    return orjson.loads(zlib.decompress(state[HEADER:]))


def resealed(document: dict[str, Any], *, repair_pairing: bool = True) -> bytes:
    """An edited state with a valid seal (as an attacker who read rpx's source could make):
    what is left to stop it is the content checks."""
    document = copy.deepcopy(document)
    if repair_pairing:
        document["pairing"] = pairing_of(document["task"], document["params"])
    return encode_state(document)


def header(claimed: int, body: bytes, seal: bytes = b"\0" * 32) -> bytes:
    return MAGIC + bytes([VERSION]) + claimed.to_bytes(8, "big") + seal + zlib.compress(body, 9)


def depth_state(n: int = 3, **options: Any) -> bytes:
    rng = np.random.default_rng(1)
    evaluator = Evaluator("depth", **options)
    for i in range(n):
        gt = rng.uniform(0.5, 8, (6, 7)).astype(np.float32)
        evaluator.update(f"f{i}", gt * 1.05, gt)
    return evaluator.state()


def test_a_state_reads_back_and_merges() -> None:
    state = depth_state()
    assert state.startswith(MAGIC) and state[len(MAGIC)] == VERSION
    assert Evaluator.merged([state]).report()["n_pairs"] == 3


def test_an_edited_state_does_not_verify() -> None:
    state = depth_state()
    document = payload(state)
    document["stats"]["n_capped"][0] = -5
    body = orjson.dumps(document)
    edited = state[:len(MAGIC) + 1] + len(body).to_bytes(8, "big") + state[len(MAGIC) + 9:HEADER] + \
        zlib.compress(body)
    with pytest.raises(InputError, match="does not verify: its contents changed"):
        Evaluator.merged([edited])


def test_inflation_is_bounded_by_what_the_state_claims() -> None:
    """A zlib bomb: 64 MB of zeros in ~65 KB. A claim beyond MAX_RATIO × the compressed size
    is refused before inflating; a smaller claim stops inflation at the claim."""
    bomb = b"0" * (64 << 20)
    compressed_size = len(zlib.compress(bomb, 9))
    with pytest.raises(InputError, match=rf"claims {len(bomb):,} bytes .* more than {MAX_RATIO}×"):
        Evaluator.merged([header(len(bomb), bomb)])
    with pytest.raises(InputError, match="does not inflate to the 1,000 bytes it claims"):
        Evaluator.merged([header(1000, bomb)])
    assert compressed_size * MAX_RATIO < len(bomb)


def test_a_stem_listed_twice_is_refused_not_counted_twice() -> None:
    document = payload(depth_state(2))
    document["stems"][1] = document["stems"][0]
    with pytest.raises(InputError, match="'stems' lists the key 'f0' twice"):
        Evaluator.merged([resealed(document)])


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["stats"]["n_capped"].__setitem__(0, -1), "n_capped.*below its least value 0"),
    (lambda d: d["params"].__setitem__("max_depth", -5.0), "bad 'max_depth': --max-depth"),
    (lambda d: d["params"].__setitem__("max_depth", "far"), "bad 'max_depth': 'far' is not a float"),
    (lambda d: d["params"].__setitem__("align", "sideways"), "bad 'align'"),
    (lambda d: d["stats"].__setitem__("n_capped", [1, 2]), "statistics cannot be read"),
    (lambda d: d["stats"].__setitem__("sums", "x"), "statistics cannot be read"),
    (lambda d: d.__setitem__("rows", d["rows"][:1]), "'rows' are not one object per stem"),
    (lambda d: d["rows"][0].__setitem__("stem", "zz"), "'rows' name other stems"),
    (lambda d: d.__setitem__("errors", [{"stem": "x"}]), "'errors' is not"),
    (lambda d: d.__setitem__("inputs", {"pred_dir": "/etc"}), "'inputs' is not"),
    (lambda d: d.__setitem__("task", "nope"), "task 'nope' is not a registered task"),
    (lambda d: d.__setitem__("surprise", 1), "keys are not an Evaluator state's"),
    (lambda d: d.pop("stats"), "keys are not an Evaluator state's"),
    (lambda d: d.__setitem__("stems", [1, 2, 3]), "'stems' is not a list of non-empty strings"),
    (lambda d: d.__setitem__("include_rows", "yes"), "'include_rows' is not true or false"),
])
def test_edited_contents_are_one_input_error_naming_what_is_wrong(edit, message) -> None:
    document = payload(depth_state())
    edit(document)
    with pytest.raises(InputError, match=message):
        Evaluator.merged([resealed(document)])


def test_params_edited_without_their_pairing_are_refused() -> None:
    document = payload(depth_state())
    document["params"]["max_depth"] = 3.0
    with pytest.raises(InputError, match="'pairing' is not the digest of its task and params"):
        Evaluator.merged([resealed(document, repair_pairing=False)])


def test_negative_counts_of_objects_are_refused() -> None:
    evaluator = Evaluator("segmentation")
    evaluator.update("a", np.array([[0, 1], [1, 1]]), np.array([[0, 1], [0, 1]]))
    document = payload(evaluator.state())
    confusion = document["stats"]["confusion"]
    assert confusion[0][2] == [[1, 1], [0, 2]]  # GT 0 and 1 against predictions 0 and 1
    confusion[0][2][1][1] = -3
    with pytest.raises(InputError, match="not an integer >= 0"):
        Evaluator.merged([resealed(document)])


def samples() -> dict[str, tuple[Evaluator, Any, Any]]:
    box = {"translation": [1.0, 2.0, 0.0], "size": [2.0, 4.0, 1.5], "rotation": [1, 0, 0, 0],
           "detection_name": "car"}
    return {
        "depth": (np.ones((3, 4), np.float32), np.ones((3, 4), np.float32)),
        "segmentation": (np.array([[0, 1], [1, 1]]), np.array([[0, 1], [0, 1]])),
        "detection": ([{"bbox": [0, 0, 4, 4], "label": "a", "score": 0.5}],
                      [{"bbox": [0, 0, 4, 5], "label": "a"}]),
        "detection3d": ([{**box, "detection_score": 0.5}], [box]),
        "tracking": ("1,1,0,0,4,4,1,-1,-1,-1\n", "1,1,0,0,4,5,1,-1,-1,-1\n"),
        "classification": ({"label": "a"}, {"label": "b"}),
        "keypoints": ({"points0": [[1, 2]], "points1": [[3, 4]]},
                      {"points0": [[1, 2]], "points1": [[3, 5]]}),
    }


def mutations(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every place of a JSON document with each hostile replacement."""
    out = [(path, replacement) for replacement in (None, "x", -1, [None], {"a": []})]
    if isinstance(value, dict):
        for key, item in value.items():
            out += mutations(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            out += mutations(item, (*path, index))
    return out


def replaced(document: Any, path: tuple, value: Any) -> Any:
    document = copy.deepcopy(document)
    if not path:
        return value
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


@pytest.mark.parametrize("task", sorted(samples()))
def test_no_edit_of_a_state_is_a_raw_exception(task) -> None:
    """Each place of each task's state replaced by each hostile value, resealed (and the
    pairing repaired): merged() and report() either work or raise one RpxError."""
    pred, gt = samples()[task]
    evaluator = Evaluator(task)
    evaluator.update("k", pred, gt)
    document = payload(evaluator.state())
    for path, value in mutations(document):
        edited = replaced(document, path, value)
        if isinstance(edited, dict) and isinstance(edited.get("params"), dict) and \
                isinstance(edited.get("task"), str):
            state = resealed(edited)
        else:
            body = orjson.dumps(edited)
            state = header(len(body), body, hashlib.sha256(body).digest())
        try:
            Evaluator.merged([state]).report()
        except RpxError:
            pass
        except Exception as exc:
            raise AssertionError(f"{task} {path} = {value!r}: {type(exc).__name__}: {exc}") from exc


def test_the_header_is_checked() -> None:
    state = depth_state()
    with pytest.raises(InputError, match="not an rpx Evaluator state"):
        Evaluator.merged([b"garbage"])
    with pytest.raises(InputError, match="version 1"):
        Evaluator.merged([MAGIC + b"\x01" + state[len(MAGIC) + 1:]])
    with pytest.raises(InputError, match="shorter than its header"):
        Evaluator.merged([state[:HEADER - 1]])
    with pytest.raises(InputError, match="damaged"):
        Evaluator.merged([state[:HEADER] + b"\x78\x01garbage"])
    with pytest.raises(ParameterError, match="a state is bytes"):
        Evaluator.merged(["text"])
    body = orjson.dumps([1, 2])
    with pytest.raises(InputError, match="content is list, not an object"):
        Evaluator.merged([header(len(body), body, hashlib.sha256(body).digest())])
