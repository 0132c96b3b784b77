"""What the labelling tools' formats share (YOLO, VOC, KITTI, DOTA, LabelMe; their own
modules register them): a file is read by its io reader into
:class:`~rpx_cli.io.objects.Objects` in the form the run's kind takes
(:func:`~rpx_cli.tasks.detection.parts.form_for`), its image size filled in where the kind
or the coordinates need one (``--image-size W,H``, else the image's header under
``--images-dir``), and the kind builds its shapes (``SimilarityKind.build``). Shapes the
run cannot express are skipped and counted (``skipped``: a warning per kind of shape)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.boxes import Boxes
from rpx_cli.io.image_size import image_sizes
from rpx_cli.io.objects import Objects, concat_objects
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import DetectionFormat, SimilarityKind

Skipped = Callable[[str, int], None]  # (what was skipped, how many)


def size_source(params: Params, path: str) -> Callable[[], tuple[int, int]]:
    """The image's ``(height, width)`` for the file ``path``, looked up when called."""
    sizes = image_sizes(params.get("images_dir"), params.get("image_size"))
    return lambda: sizes.of(path)


class LabelFormat(DetectionFormat):
    """A format of one file per image read into :class:`Objects`."""

    def objects(self, data: Any, path: str, *, prediction: bool, form: str,
                params: Params) -> tuple[Objects, dict[str, int]]:
        """One file's objects in ``form`` and ``{what was skipped: count}``."""
        raise NotImplementedError

    def read(self, data: Any, path: str, *, prediction: bool, kind: SimilarityKind,
             params: Params, skipped: Skipped | None = None) -> Boxes:
        objects, skips = self.objects(data, path, prediction=prediction,
                                      form=self.form_for(kind), params=params)
        for what, count in skips.items():
            if count and skipped is not None:
                skipped(what, count)
        if objects.size is None and (params.get("image_size") or params.get("images_dir")):
            objects.size = size_source(params, path)()
        return kind.build(objects, path, prediction=prediction, params=params)


    def read_many(self, datas: list[bytes], paths: list[str], *, prediction: bool, form: str,
                  params: Params) -> tuple[Objects, np.ndarray, list[dict[str, int]]] | None:
        """Many files' objects as one record: ``(objects in form, each object's file index,
        each file's {what was skipped: count})``; None when a file needs reading alone (a
        malformed one: its error is then the file's own, on the pair-by-pair path). Each
        file read by :meth:`objects` (a format overrides it where a vectorised reader of
        many files pays)."""
        parts, skipped = [], []
        for data, path in zip(datas, paths, strict=True):
            try:
                objects, skips = self.objects(data, path, prediction=prediction, form=form,
                                              params=params)
            except InputError:
                return None
            parts.append(objects)
            skipped.append(skips)
        counts = np.fromiter(map(len, parts), np.int64, count=len(parts))
        return (concat_objects(parts, form, prediction=prediction),
                np.repeat(np.arange(len(parts)), counts), skipped)


def first_line(head: bytes) -> list[str]:
    """The fields of the first non-empty line of ``head``."""
    for line in head.decode("utf-8", "replace").splitlines():
        if line.split():
            return line.split()
    return []


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
