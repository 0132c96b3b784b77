"""Open Images box CSVs: one CSV for the whole set, a header row naming the columns (any
order, read by name).

GT (``*-annotations-bbox.csv``): ``ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,
IsOccluded,IsTruncated,IsGroupOf,IsDepiction,IsInside``; predictions: ``ImageID,LabelName,
Score,XMin,XMax,YMin,YMax``. Coordinates are normalised: pixel x = value × the image's
width, y = value × its height, nothing added (the sizes from image headers or
``--image-size``); the stem is ``ImageID``. ``LabelName`` is a class id (``/m/0k4j``),
named by ``--oi-class-descriptions`` (``class-descriptions-boxable.csv``: ``LabelName,
DisplayName`` rows) when given. ``IsGroupOf = 1`` marks a box around a group of objects:
kept (``Objects.group``) for a protocol that scores group-of boxes, else skipped and counted
as ``openimages_group_of``. Malformed (a missing column, a wrong field count, a non-number,
a value outside [0, 1] by more than 1e-6, ``XMax < XMin``, a class id the descriptions do
not name) is an :class:`~rpx_cli.errors.InputError` naming ``file:line``."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any

import numpy as np

from rpx_cli.errors import SWAP_HINT, InputError
from rpx_cli.io.objects import BOX, Objects, by_image
from rpx_cli.io.regular import read_bytes

TOLERANCE = 1e-6
COORDINATES = ("XMin", "XMax", "YMin", "YMax")
GROUP_OF = "openimages_group_of"


def _rows(data: Any, path: str) -> list[list[str]]:
    try:
        text = bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("an Open Images CSV must be UTF-8 text", path=path) from None
    try:
        return list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise InputError(f"not a CSV file: {exc}", path=path) from None


def header_columns(head: bytes) -> list[str]:
    """The column names of a CSV's first line (for sniffing)."""
    line = head.decode("utf-8-sig", "replace").splitlines()[:1]
    return [name.strip() for name in line[0].split(",")] if line else []


def read_openimages(data: Any, path: str, *, prediction: bool, names: dict[str, str] | None,
                    size: Callable[[str], tuple[int, int]],
                    keep_groups: bool) -> dict[str, tuple[Objects, dict[str, int]]]:
    """Every image of an Open Images box CSV: ``{ImageID: (boxes in pixels, {group-of boxes
    skipped})}``, each image's boxes in file order."""
    rows = _rows(data, path)
    if not rows:
        raise InputError("an empty CSV: expected a header row (ImageID,LabelName,...)", path=path)
    header = [name.strip() for name in rows[0]]
    wanted = ("ImageID", "LabelName", *(("Score",) if prediction else ()), *COORDINATES)
    missing = [name for name in wanted if name not in header]
    if missing:
        hint = f" (a GT file? {SWAP_HINT})" if prediction and "Score" in missing else ""
        raise InputError(f"the header has no {', '.join(missing)} column{hint}", path=f"{path}:1")
    if not prediction and "Score" in header:
        raise InputError(f"a GT file with a Score column (a prediction file? {SWAP_HINT})",
                         path=f"{path}:1")
    column = {name: header.index(name) for name in header}
    body = [(n, row) for n, row in enumerate(rows[1:], 2) if row and any(field.strip() for field in row)]
    for n, row in body:
        if len(row) != len(header):
            raise InputError(f"{len(row)} fields where the header has {len(header)}", path=f"{path}:{n}")
    lines = np.array([n for n, _ in body], np.int64)
    ids = [row[column["ImageID"]] for _, row in body]
    labels = [row[column["LabelName"]] for _, row in body]
    numbers = [name for name in (*COORDINATES, *(("Score",) if prediction else ()))]
    values = _numbers([[row[column[name]] for name in numbers] for _, row in body], lines, path)
    coords = values[:, :4]
    bad = np.flatnonzero(((coords < -TOLERANCE) | (coords > 1 + TOLERANCE)).any(axis=1))
    if bad.size:
        row = int(bad[0])
        raise InputError(f"normalised coordinate outside [0, 1]: {coords[row].tolist()} (pixels? "
                         "Open Images coordinates are divided by the image size)",
                         path=f"{path}:{lines[row]}")
    bad = np.flatnonzero((coords[:, 1] < coords[:, 0]) | (coords[:, 3] < coords[:, 2]))
    if bad.size:
        raise InputError("XMax < XMin or YMax < YMin", path=f"{path}:{lines[int(bad[0])]}")
    if names is not None:
        unknown = next((k for k, label in enumerate(labels) if label not in names), None)
        if unknown is not None:
            raise InputError(f"class id {labels[unknown]!r} is not in --oi-class-descriptions",
                             path=f"{path}:{lines[unknown]}")
        labels = [names[label] for label in labels]
    group = np.zeros(len(body), bool)
    if not prediction and "IsGroupOf" in column:
        group = np.array([row[column["IsGroupOf"]].strip() == "1" for _, row in body], bool)
    return _by_image(ids, labels, coords, values[:, 4] if prediction else None, group, lines, path,
                     size, keep_groups)


def _numbers(table: list[list[str]], lines: np.ndarray, path: str) -> np.ndarray:
    try:
        values = np.array(table, np.float64).reshape(len(table), -1)
    except ValueError:
        for n, row in zip(lines.tolist(), table, strict=True):
            try:
                [float(v) for v in row]
            except ValueError:
                raise InputError("not a number", path=f"{path}:{n}") from None
        raise
    bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
    if bad.size:
        raise InputError("not a finite number", path=f"{path}:{lines[int(bad[0])]}")
    return values


def _by_image(ids: list[str], labels: list[str], coords: np.ndarray, scores: np.ndarray | None,
              group: np.ndarray, lines: np.ndarray, path: str,
              size: Callable[[str], tuple[int, int]],
              keep_groups: bool) -> dict[str, tuple[Objects, dict[str, int]]]:
    out: dict[str, tuple[Objects, dict[str, int]]] = {}
    for stem, rows in by_image(ids):
        skipped = {}
        if not keep_groups and group[rows].any():
            skipped[GROUP_OF] = int(group[rows].sum())
            rows = rows[~group[rows]]
        height, width = size(stem)
        x1, x2, y1, y2 = (coords[rows, j] for j in range(4))
        boxes = np.stack([x1 * width, y1 * height, x2 * width, y2 * height], axis=1)
        objects = Objects(BOX, [labels[i] for i in rows.tolist()],
                          None if scores is None else scores[rows], boxes=boxes,
                          lines=[str(n) for n in lines[rows].tolist()], size=(height, width))
        if keep_groups and group[rows].any():
            objects.group = group[rows]
        out[stem] = (objects, skipped)
    return out


def read_class_descriptions(path: str) -> dict[str, str]:
    """``--oi-class-descriptions``: ``LabelName,DisplayName`` rows (a header row of those two
    names is skipped) as ``{class id: name}``."""
    rows = _rows(read_bytes(path), path)
    out: dict[str, str] = {}
    for n, row in enumerate(rows, 1):
        if not row or not any(field.strip() for field in row):
            continue
        if len(row) != 2:
            raise InputError(f"{len(row)} fields where a class description has 2 (LabelName,"
                             "DisplayName)", path=f"{path}:{n}")
        if n == 1 and [field.strip() for field in row] == ["LabelName", "DisplayName"]:
            continue
        label, name = row[0].strip(), row[1].strip()
        if label in out:
            raise InputError(f"class id {label!r} is described twice", path=f"{path}:{n}")
        out[label] = name
    if not out:
        raise InputError("no class description (LabelName,DisplayName rows)", path=path)
    return out


def read_hierarchy(path: str, names: dict[str, str] | None) -> tuple[str, dict[str, list[str]]]:
    """``--oi-hierarchy``: the challenge's class tree (``{"LabelName": ..., "Subcategory":
    [...]}``, nested; other keys such as ``Part`` are not read) as ``(root, {class: its
    direct parents})``, every class below the root listed, in the order first met; a class
    met under two parents has both. Class ids are named by ``names`` (the class
    descriptions) where they name them."""
    import json

    try:
        tree = json.loads(read_bytes(path).decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not an Open Images hierarchy (JSON): {exc}", path=path) from None

    def label(node: Any) -> str:
        if not isinstance(node, dict) or not isinstance(node.get("LabelName"), str):
            raise InputError("not an Open Images hierarchy: a node without a LabelName string "
                             f"({str(node)[:60]})", path=path)
        children = node.get("Subcategory", [])
        if not isinstance(children, list):
            raise InputError(f"not an Open Images hierarchy: the Subcategory of "
                             f"{node['LabelName']!r} is not a list", path=path)
        name = node["LabelName"]
        return names.get(name, name) if names else name

    root = label(tree)
    parents: dict[str, list[str]] = {}
    stack = [(tree, root)]
    while stack:
        node, name = stack.pop()
        for child in reversed(node.get("Subcategory", [])):
            child_name = label(child)
            if child_name == root:
                raise InputError(f"class {child_name!r} is the hierarchy's root and a "
                                 "subcategory", path=path)
            own = parents.setdefault(child_name, [])
            if name != root and name not in own:
                own.append(name)
            stack.append((child, child_name))
    return root, parents


def read_image_labels(path: str, names: dict[str, str] | None
                      ) -> dict[str, tuple[list[str], list[str]]]:
    """``--oi-image-labels``: the image-level labels CSV (``ImageID,Source,LabelName,
    Confidence``, columns by header name) as ``{ImageID: (classes verified present
    (Confidence 1), classes verified absent (Confidence 0))}``, class ids named by
    ``names`` where they name them. Another confidence is an error naming ``file:line``."""
    rows = _rows(read_bytes(path), path)
    if not rows:
        raise InputError("an empty CSV: expected a header row (ImageID,Source,LabelName,"
                         "Confidence)", path=path)
    header = [name.strip() for name in rows[0]]
    missing = [name for name in ("ImageID", "LabelName", "Confidence") if name not in header]
    if missing:
        raise InputError(f"the header has no {', '.join(missing)} column (image-level labels: "
                         "ImageID,Source,LabelName,Confidence)", path=f"{path}:1")
    at = {name: header.index(name) for name in ("ImageID", "LabelName", "Confidence")}
    out: dict[str, tuple[list[str], list[str]]] = {}
    for n, row in enumerate(rows[1:], 2):
        if not row or not any(field.strip() for field in row):
            continue
        if len(row) != len(header):
            raise InputError(f"{len(row)} fields where the header has {len(header)}",
                             path=f"{path}:{n}")
        confidence = row[at["Confidence"]].strip()
        try:
            value = float(confidence)
        except ValueError:
            value = np.nan
        if value not in (0.0, 1.0):
            raise InputError(f"Confidence {confidence!r}: an image-level label is 1 (verified "
                             "present) or 0 (verified absent)", path=f"{path}:{n}")
        name = row[at["LabelName"]].strip()
        name = names.get(name, name) if names else name
        out.setdefault(row[at["ImageID"]].strip(), ([], []))[value == 0.0].append(name)
    return out
