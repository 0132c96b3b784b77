"""YOLO (Ultralytics): one ``.txt`` per image (:mod:`rpx_cli.io.yolo` reads it), normalised
coordinates; the line's layout follows the run's kind: detect for boxes, segment for masks
(``--iou-type segm``), pose for keypoints (``--iou-type keypoints``; ``kpt_shape`` from
``--data-yaml`` or ``--kpt-shape``), obb for rotated boxes and polygons. Class names from
``--data-yaml`` (``names``) or ``--class-names`` (else the index is the label). The image
size comes from ``--image-size W,H`` or the image's header under ``--images-dir``. A pose
GT's area (COCO's area ranges and OKS scale) is ``0.53 · w · h`` of its box, as
Ultralytics computes it."""

from __future__ import annotations

from typing import Any

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.class_names import read_class_names
from rpx_cli.io.image_size import image_sizes
from rpx_cli.io.objects import BOX, KEYPOINTS, POLYGON, QUAD, Objects
from rpx_cli.io.yolo import TOLERANCE, read_data_yaml, read_yolo, read_yolo_boxes
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.formats.labels import LabelFormat, first_line, is_number, size_source
from rpx_cli.tasks.detection.parts import register_format

POSE_AREA = 0.53  # Ultralytics' OKS scale: area = 0.53 * w * h of the box

_NAMES: dict[tuple, tuple[list[str] | None, tuple[int, int] | None]] = {}


def names_and_shape(params: Params) -> tuple[list[str] | None, tuple[int, int] | None]:
    """The class names and ``kpt_shape`` of ``--data-yaml`` / ``--class-names`` /
    ``--kpt-shape`` (read once per process)."""
    key = (params.get("data_yaml"), params.get("class_names"), params.get("kpt_shape"))
    if key not in _NAMES:
        names = shape = None
        if key[0]:
            names, shape = read_data_yaml(key[0])
        if key[1]:
            names = read_class_names(key[1])
        if key[2]:
            shape = tuple(key[2])
        _NAMES[key] = (names, shape)
    return _NAMES[key]


@register_format
class Yolo(LabelFormat):
    name, rank, title = "yolo", 2, "YOLO"
    suffixes = (".txt",)
    forms = (BOX, POLYGON, KEYPOINTS, QUAD)
    needs_sizes = True

    def sniff(self, head: bytes, name: str) -> bool:
        """``.txt`` whose first line is an integer class id then numbers, the first four in
        [0, 1] (a pose line's visibilities reach 2)."""
        fields = first_line(head)
        if not name.lower().endswith(".txt") or len(fields) < 5 or not fields[0].isdigit():
            return False
        if not all(is_number(f) for f in fields[1:]):
            return False
        values = np.array(fields[1:5], np.float64)
        return bool(((values >= -TOLERANCE) & (values <= 1 + TOLERANCE)).all())

    def objects(self, data: Any, path: str, *, prediction: bool, form: str,
                params: Params) -> tuple[Objects, dict[str, int]]:
        names, kpt_shape = names_and_shape(params)
        objects = read_yolo(data, path, prediction=prediction, form=form,
                            size=size_source(params, path), names=names, kpt_shape=kpt_shape)
        if form == KEYPOINTS and not prediction and len(objects):
            width = objects.boxes[:, 2] - objects.boxes[:, 0]
            height = objects.boxes[:, 3] - objects.boxes[:, 1]
            objects.area = POSE_AREA * width * height
        return objects, {}

    def read_many(self, datas: list[bytes], paths: list[str], *, prediction: bool, form: str,
                  params: Params) -> tuple[Objects, np.ndarray, list[dict[str, int]]] | None:
        """Detect lines of every file at once (:func:`~rpx_cli.io.yolo.read_yolo_boxes`);
        other forms, and anything that reader leaves to a closer look, file by file."""
        if form == BOX:
            names, _ = names_and_shape(params)
            sizes = np.zeros((len(datas), 2))
            source = image_sizes(params.get("images_dir"), params.get("image_size"))
            try:
                if source.fixed is not None:
                    sizes[:] = source.fixed
                else:
                    for k, (data, path) in enumerate(zip(datas, paths, strict=True)):
                        if data.strip():  # read_yolo asks for the size of a file with objects
                            sizes[k] = source.of(path)
            except InputError:
                sizes = None
            found = None if sizes is None else read_yolo_boxes(
                datas, prediction=prediction, sizes=sizes, names=names)
            if found is not None:
                return found[0], found[1], [{} for _ in datas]
        return super().read_many(datas, paths, prediction=prediction, form=form, params=params)
