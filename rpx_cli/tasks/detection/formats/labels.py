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

from rpx_cli.io.boxes import Boxes
from rpx_cli.io.image_size import image_sizes
from rpx_cli.io.objects import Objects
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
