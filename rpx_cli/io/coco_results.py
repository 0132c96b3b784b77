"""A COCO results file (a list of ``{image_id, category_id, <shape>, score}``) read into
arrays: in pieces cut between top-level objects when it is large (:class:`PendingResults`),
side by side in worker processes when the run lends them (:mod:`rpx_cli.io.pieces`)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from itertools import pairwise
from operator import itemgetter
from typing import Any

import numpy as np

from rpx_cli import native
from rpx_cli.errors import SWAP_COCO_HINT, InputError, PairError
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.coco_columns import FIELD_CODES, columns, mask_totals, scan
from rpx_cli.io.coco_objects import ObjectField, read_objects
from rpx_cli.io.coco_records import set_aside_detections
from rpx_cli.io.json import loads_json
from rpx_cli.io.pieces import elsewhere, run_pieces


@dataclass
class Results:
    objects: list[Any]
    image: np.ndarray  # raw COCO image ids
    category: np.ndarray  # raw category ids; ``usable`` False where not an integer
    usable: np.ndarray
    boxes: Boxes


def read_results(path: str, shape_field: ObjectField, gt: Any = None,
                  errors: list[PairError] | None = None) -> Results:
    pending = PendingResults(path, shape_field, pieces=errors is None)
    try:
        return pending.collect(gt, errors)
    finally:
        pending.close()


INT64 = (-(1 << 63), (1 << 63) - 1)

# a results file is parsed in pieces of about this size: the Python objects of one piece at a
# time, not the whole file's (keypoints: 25 million floats, ~1 GB, for 5,000 images)
CHUNK_BYTES = 16 << 20
_BETWEEN_OBJECTS = re.compile(rb"\}\s*,\s*\{")


class PendingResults:
    """A results file being read. A list larger than :data:`CHUNK_BYTES` is parsed as
    consecutive sub-lists cut between two objects (``}, {``), each turned into arrays on
    its own; :meth:`collect` joins them. When the run lends worker processes
    (:mod:`rpx_cli.io.pieces`), the pieces start at once and are parsed there while the
    caller reads the GT file — each worker reads its piece of a local file again from the
    page cache, so that this process holds no copy of the file meanwhile; otherwise the
    file is read in :meth:`collect`, after the GT file, and its pieces parsed here one after
    the other. When the file is small, not a list, or any piece does not parse or holds a
    bad record, the whole file is read at once instead (its error names the record's index
    in the file). A cut inside a string or a nested value leaves a piece that is not valid
    JSON, so pieces that all parse are the file's top-level objects, in order. A file that
    cannot be read is the error of :meth:`collect`, after whatever the caller read."""

    def __init__(self, path: str, shape_field: ObjectField, *, pieces: bool) -> None:
        self.path, self.shape_field, self.pieces = path, shape_field, pieces
        self.failure: BaseException | None = None
        self.data: bytes | None = None
        self.no_literals = False
        self.running: Iterator[Results | None] | None = None
        # the native reader goes first where it can: one pass in C beats pieces in workers;
        # with pieces allowed, a thread reads and scans the file while the caller parses the
        # GT file (the scan releases the GIL)
        self.columns_first = shape_field.name in FIELD_CODES and native.core() is not None
        self.scanned: tuple | None = None
        # masks: their strings checked in the thread too, after the scan (collect() goes on
        # once the scan is done; the check is waited for where the masks are checked)
        self.totals: Future | None = None
        self.scan_done = threading.Event()
        self.threads = native.threads()  # (the run's, read in its own thread)
        self.scanning: threading.Thread | None = None
        if pieces and self.columns_first:
            self.totals = Future()
            self.totals.set_running_or_notify_cancel()
            self.scanning = threading.Thread(target=self._scan, daemon=True,
                                             name="rpx-coco-results")
            self.scanning.start()
        elif pieces and elsewhere():
            try:
                self._read()
            except Exception as exc:  # raised by collect(), after the GT file's errors
                self.failure = exc
                return
            self._start()

    def _scan(self) -> None:
        try:
            self._read()
            self.scanned = scan(self.data, self.shape_field.name, self.threads)
        except Exception as exc:  # raised by collect(), after the GT file's errors
            self.failure = exc
        finally:
            self.scan_done.set()
        try:
            self.totals.set_result(None if self.failure else mask_totals(self.scanned, self.shape_field.name))
        except BaseException as exc:  # (raised where the masks are checked)
            self.totals.set_exception(exc)

    def _read(self) -> None:
        from rpx_cli.io import prefetch

        self.data = prefetch.read(self.path)  # (read while rpx started, when named)

    def _literals(self) -> None:
        # no JSON true/false anywhere: a list of numbers holds no bool (numpy would take one
        # as 1); masks and keypoints read their number lists with numpy (boxes check types)
        self.no_literals = self.shape_field.instances is not None and self.data.find(b"true") < 0 and \
            self.data.find(b"false") < 0

    def _start(self) -> None:
        self._literals()
        bounds = _piece_bounds(self.data) if self.pieces and self.data is not None else None
        if not bounds:
            return
        path, shape_field, no_literals = self.path, self.shape_field, self.no_literals
        data = self.data if "://" in path or not elsewhere() else None
        self.running = run_pieces(
            lambda ab: _piece(path, data, ab, shape_field, no_literals), bounds)
        if data is None:
            self.data = None  # the workers read their pieces; the fallback reads it again

    def collect(self, gt: Any = None, errors: list[PairError] | None = None, *,
                deferred: bool = False) -> Results:
        """The results as arrays. ``deferred``: a masks column the native reader made has
        its dicts made later, by the caller (``PackedRles.fill``)."""
        if self.scanning is not None:
            self.scan_done.wait()
            self.scanning = None
        if self.failure is not None:
            raise self.failure
        fresh = self.data is None and self.running is None
        if fresh:  # not read yet: read it now
            self._read()
            # (--on-error skip sets bad records aside: the Python path, record by record)
            if self.columns_first and errors is None:
                self.scanned = scan(self.data, self.shape_field.name)
        if self.scanned is not None:
            read = columns(self.scanned, self.shape_field.name, self.totals, deferred=deferred)
            self.scanned = self.totals = None
            if read is not None:
                self.data = None
                image, category, boxes = read
                return Results([], image, category, np.ones(len(image), bool), boxes)
        if fresh or (self.columns_first and self.running is None and self.data is not None):
            self._start()  # (declined by the native reader: pieces, as on the numpy path)
        if self.running is not None:
            parts = list(self.running)
            self.running = None
            if all(part is not None for part in parts):
                self.data = None  # the caller goes on with the arrays only
                return Results([], np.concatenate([p.image for p in parts]),
                                np.concatenate([p.category for p in parts]),
                                np.concatenate([p.usable for p in parts]),
                                _concatenate([p.boxes for p in parts]))
        if self.data is None:
            self._read()
            self._literals()
        results = loads_json(self.data, self.path)
        self.data = None
        if isinstance(results, dict) and "images" in results:
            raise InputError("this is a COCO GT file (images, annotations), not a results list "
                             f"({SWAP_COCO_HINT})", path=self.path)
        if isinstance(results, dict) and "annotations" in results:
            results = results["annotations"]
        if not isinstance(results, list):
            raise InputError("a COCO results file is a list of {image_id, category_id, bbox, "
                             "score}", path=self.path)
        if gt is not None and errors is not None:
            results = set_aside_detections(results, gt, self.path, errors, self.shape_field)
        return _results_of(results, self.path, self.shape_field, self.no_literals)

    def close(self) -> None:
        """Stop pieces still running (the caller failed before collecting them)."""
        running, self.running = self.running, None
        close = getattr(running, "close", None)
        if close is not None:
            close()


def _piece_bounds(data: bytes) -> list[tuple[int, int]] | None:
    """``(start, end)`` of each piece's objects in ``data`` (the separating comma left out),
    or None when the file is one piece or not a list."""
    if len(data) <= CHUNK_BYTES:
        return None
    head, tail = data[:4096], data[-4096:]  # (stripping the whole file would copy it)
    start = len(head) - len(head.lstrip())
    end = len(data) - len(tail) + len(tail.rstrip())
    if data[start:start + 1] != b"[" or data[end - 1:end] != b"]":
        return None
    cuts, at = [start + 1], start + 1
    while (found := _BETWEEN_OBJECTS.search(data, at + CHUNK_BYTES)) is not None:
        cuts.append(found.start() + 1)  # a piece ends after "}", the next starts at ","
        at = found.start() + 1
    if len(cuts) == 1:
        return None
    cuts.append(end - 1)
    bounds = [(cuts[0], cuts[1])]
    for a, b in pairwise(cuts[1:]):
        bounds.append((data.index(b",", a) + 1, b))
    return bounds


def _piece(path: str, data: bytes | None, bounds: tuple[int, int], shape_field: ObjectField,
           no_literals: bool) -> Results | None:
    """One piece's objects as arrays (its bytes from ``data``, else read again from the
    local file ``path``); None when it does not parse as a list or holds a bad record, or
    the file no longer holds it (the caller then reads the whole file)."""
    a, b = bounds
    try:
        if data is None:
            with open(path, "rb") as handle:
                handle.seek(a)
                piece = handle.read(b - a)
        else:
            piece = data[a:b]
        results = loads_json(b"[" + piece + b"]", path)
        if not isinstance(results, list):
            return None
        return _results_of(results, path, shape_field, no_literals)
    except (InputError, OSError):
        return None


def _concatenate(parts: list[Boxes]) -> Boxes:
    labels = parts[0].labels
    return Boxes(np.concatenate([p.shape for p in parts]),
                 np.concatenate([p.labels for p in parts]) if isinstance(labels, np.ndarray)
                 else [label for p in parts for label in p.labels],
                 None if parts[0].scores is None else np.concatenate([p.scores for p in parts]),
                 np.concatenate([p.crowd for p in parts]), np.concatenate([p.area for p in parts]))


def _results_of(results: list[Any], path: str, shape_field: ObjectField, no_literals: bool) -> Results:
    """A parsed results list as arrays (an :class:`InputError` naming the first bad record)."""
    if results and set(map(type, results)) != {dict}:
        n = next(n for n, item in enumerate(results) if not isinstance(item, dict))
        raise InputError(f"detection {n}: expected an object", path=path)
    try:
        image = list(map(itemgetter("image_id"), results))
        category = list(map(itemgetter("category_id"), results))
    except KeyError as exc:
        n = next(n for n, item in enumerate(results) if exc.args[0] not in item)
        raise InputError(f"detection {n}: missing '{exc.args[0]}'", path=path) from None
    if not set(map(type, image)) <= {int}:
        n = next(n for n, value in enumerate(image) if type(value) is not int)
        raise InputError(f"detection {n}: image_id {image[n]!r} is not an integer", path=path)
    if min(image, default=0) < INT64[0] or max(image, default=0) > INT64[1]:
        n = next(n for n, value in enumerate(image) if not INT64[0] <= value <= INT64[1])
        raise InputError(f"detection {n}: image_id {image[n]} is beyond 64-bit integers (no GT "
                         f"image has it)", path=path)
    usable = np.ones(len(results), bool)
    if not set(map(type, category)) <= {int} or \
            min(category, default=0) < INT64[0] or max(category, default=0) > INT64[1]:
        # another type, or an integer beyond 64 bits, names no GT category
        usable = np.array([type(value) is int and INT64[0] <= value <= INT64[1]
                           for value in category], bool)
        category = [value if ok else 0 for value, ok in zip(category, usable.tolist(), strict=True)]
    boxes = read_objects(results, path, shape_field, prediction=True, no_literals=no_literals)
    # the parsed objects are not kept: a results file's Python objects are most of the
    # memory a run needs (5,000 images of keypoints: ~1 GB), and everything is in arrays now
    return Results([], np.array(image, np.int64), np.array(category, np.int64), usable, boxes)
