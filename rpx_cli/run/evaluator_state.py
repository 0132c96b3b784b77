"""An ``Evaluator``'s state as bytes, and what a state must be before it is trusted.

``MAGIC``, a version byte, the length of the JSON the state holds (8 bytes, big-endian),
its sha256 (32 bytes), then that JSON compressed with zlib. :func:`decode_state` checks a
state as strictly as a file is checked (issue 39 #7), and any problem is one
:class:`~rpx_cli.errors.InputError` naming it — never a raw Python exception:

- inflation is bounded by what the state claims: a claim beyond :data:`MAX_RATIO` times
  the compressed bytes (real states: 2 to 40×) is refused before anything is inflated, and
  inflating stops at the claimed length;
- the sha256 must match (a state changed after ``Evaluator.state()`` made it does not
  verify);
- the document's structure: exactly the keys an ``Evaluator`` writes, of their types; the
  stems non-empty strings, each once; rows, when kept, one per stem and naming it; no
  files, digests, errors or unpaired stems (samples in memory have none);
- the parameters: the task registered, each option's value checked by its declaration's
  converter where the report keeps the option's own form (numbers, flags, choices), and
  the pairing the digest of the task and parameters;
- the statistics decoded by the task's declarations (lengths, shapes, bounds of numeric
  statistics declared with a ``minimum``, objects by their decoders).
"""

from __future__ import annotations

import hashlib
import math
import zlib
from collections.abc import Mapping
from typing import Any

from rpx_cli.errors import InputError, ParameterError, first_line
from rpx_cli.report.serialize import dumps

MAGIC = b"rpx-state\n"
VERSION = 2
HEADER = len(MAGIC) + 1 + 8 + 32
MAX_RATIO = 256  # the most a state may inflate relative to its compressed bytes
KEYS = {"task", "params", "pairing", "inputs", "stems", "stats", "rows", "include_rows",
        "extras", "errors", "unpaired", "digests", "strata"}
OPTIONAL = {"skipped": {}, "whole": []}  # keys a state may hold, empty in an Evaluator's
EMPTY = {"inputs": {}, "errors": [], "digests": {}, "strata": None,
         "unpaired": {"pred_only": [], "gt_only": []}}


def encode_state(document: Mapping[str, Any]) -> bytes:
    """The bytes of an encoded :class:`~rpx_cli.run.state.State` (``State.encode()``)."""
    payload = dumps(dict(document), compact=True)
    return (MAGIC + bytes([VERSION]) + len(payload).to_bytes(8, "big") +
            hashlib.sha256(payload).digest() + zlib.compress(payload, 1))


def pairing_of(task: str, params: Mapping[str, Any]) -> str:
    """What states of one evaluation share: the digest of the task and its parameters."""
    return "in-memory:" + hashlib.sha256(task.encode() + dumps(dict(params), compact=True)).hexdigest()


def decode_state(data: Any) -> Any:
    """The :class:`~rpx_cli.run.state.State` in ``data`` (bytes from ``Evaluator.state()``),
    checked as described above."""
    from rpx_cli.report.serialize import loads
    from rpx_cli.run.state import State

    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ParameterError(f"a state is bytes from Evaluator.state(), got {type(data).__name__}")
    data = bytes(data)
    if not data.startswith(MAGIC) or len(data) <= len(MAGIC):
        raise InputError("not an rpx Evaluator state (bytes from Evaluator.state())")
    version = data[len(MAGIC)]
    if version != VERSION:
        raise InputError(f"an Evaluator state of version {version}; this rpx reads version "
                         f"{VERSION}: produce the states with the same rpx version")
    if len(data) < HEADER:
        raise InputError("a damaged Evaluator state (shorter than its header)")
    claimed = int.from_bytes(data[len(MAGIC) + 1:len(MAGIC) + 9], "big")
    seal = data[len(MAGIC) + 9:HEADER]
    compressed = data[HEADER:]
    if claimed > MAX_RATIO * len(compressed):
        raise InputError(f"a damaged Evaluator state: it claims {claimed:,} bytes from "
                         f"{len(compressed):,} compressed, more than {MAX_RATIO}× (states "
                         "inflate 2 to 40×)")
    inflater = zlib.decompressobj()
    try:
        payload = inflater.decompress(compressed, claimed + 1)
    except zlib.error as exc:
        raise InputError(f"a damaged Evaluator state ({first_line(exc)})") from None
    if len(payload) != claimed or not inflater.eof or inflater.unused_data:
        raise InputError(f"a damaged Evaluator state: it does not inflate to the {claimed:,} "
                         "bytes it claims")
    if hashlib.sha256(payload).digest() != seal:
        raise InputError("an Evaluator state that does not verify: its contents changed after "
                         "Evaluator.state() made it")
    try:
        document = loads(payload)
    except Exception as exc:  # orjson's refusal, whatever its type
        raise InputError(f"a damaged Evaluator state ({first_line(exc)})") from None
    task = check_document(document)
    try:
        state = State.decode(document)
    except InputError:
        raise
    except Exception as exc:  # a task's decoder on edited values: any exception is the state's
        raise InputError(f"an Evaluator state whose statistics cannot be read "
                         f"({type(exc).__name__}: {first_line(exc)})") from None
    check_params(task, state.params)
    return state


def check_document(document: Any) -> Any:
    """The structure of an Evaluator state's JSON (see the module docstring); its task."""
    from rpx_cli.tasks.registry import get_task

    def wrong(what: str) -> InputError:
        return InputError(f"an Evaluator state whose {what}")

    if not isinstance(document, dict):
        raise wrong(f"content is {type(document).__name__}, not an object")
    keys = set(document)
    if not keys >= KEYS or not keys <= KEYS | set(OPTIONAL):
        odd = sorted(keys - KEYS - set(OPTIONAL)) or sorted(KEYS - keys)
        raise wrong(f"keys are not an Evaluator state's ({', '.join(map(repr, odd))})")
    try:
        task = get_task(document["task"]) if isinstance(document["task"], str) else None
    except KeyError:
        task = None
    if task is None:
        raise wrong(f"task {document['task']!r} is not a registered task")
    for key, empty in {**EMPTY, **OPTIONAL}.items():
        if key in document and document[key] != empty:
            raise wrong(f"'{key}' is not {empty!r} (samples in memory have no files)")
    if not isinstance(document["params"], dict) or not isinstance(document["pairing"], str):
        raise wrong("'params' is not an object or 'pairing' not a string")
    stems = document["stems"]
    if not isinstance(stems, list) or not all(type(stem) is str and stem for stem in stems):
        raise wrong("'stems' is not a list of non-empty strings")
    if len(set(stems)) != len(stems):
        seen: set[str] = set()
        twice = next(stem for stem in stems if stem in seen or seen.add(stem))
        raise wrong(f"'stems' lists the key {twice!r} twice")
    if type(document["include_rows"]) is not bool:
        raise wrong("'include_rows' is not true or false")
    rows = document["rows"]
    if rows is not None:
        if not isinstance(rows, list) or len(rows) != len(stems) or not all(
                isinstance(row, dict) and type(row.get("stem")) is str for row in rows):
            raise wrong("'rows' are not one object per stem, each with its 'stem'")
        if {row["stem"] for row in rows} != set(stems):
            raise wrong("'rows' name other stems than 'stems'")
        bad = [key for row in rows for key, value in row.items()
               if isinstance(value, float) and not math.isfinite(value)]
        if bad:
            raise wrong(f"rows hold a non-finite {bad[0]!r}")
    elif document["include_rows"]:
        raise wrong("'rows' are null though 'include_rows' is true")
    extras = document["extras"]
    if not isinstance(extras, list) or len(extras) not in (0, len(stems)) or not all(
            isinstance(extra, dict) and all(value is None or type(value) in (int, float)
                                            for value in extra.values()) for extra in extras):
        raise wrong("'extras' are not one object of plugin values (numbers) per stem")
    if not isinstance(document["stats"], dict):
        raise wrong("'stats' is not an object")
    if document["pairing"] != pairing_of(task.name, document["params"]):
        raise wrong("'pairing' is not the digest of its task and params (edited params?)")
    return task


def check_params(task: Any, params: Mapping[str, Any]) -> None:
    """Each option in ``params`` whose report form is the option's own value (a number, a
    flag, a choice) through its declaration's converter; an :class:`InputError` naming the
    parameter and the converter's reason otherwise."""
    for option in task.options:
        if option.param not in params or option.multiple:
            continue
        value = params[option.param]
        if option.kind in ("int", "float"):
            keeps_form = value is None or (type(value) in (int, float))
        elif option.kind == "flag":
            keeps_form = True
        elif option.kind == "choice" and isinstance(value, str):
            keeps_form = True  # (a choice the task normalises to another type is its own)
        else:
            continue
        if value is None and option.default is None:
            continue
        problem = None
        if not keeps_form:
            problem = f"{value!r} is not a {option.kind}"
        else:
            try:
                converted = option.convert(value)
            except ParameterError as exc:
                problem = first_line(exc)
            else:
                if option.kind == "flag" and type(value) is not bool:
                    problem = f"{value!r} is not true or false"
                elif option.kind != "flag" and converted != value:
                    problem = f"{value!r} is not in its checked form {converted!r}"
        if problem is not None:
            raise InputError(f"an Evaluator state whose params hold a bad '{option.param}': "
                             f"{problem}")
