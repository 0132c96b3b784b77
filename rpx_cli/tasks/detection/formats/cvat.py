"""CVAT for images 1.1 (:mod:`rpx_cli.io.cvat`): one XML for the whole set, ``--gt-dir
annotations.xml`` (or the export's folder holding it; several XML files are one set).
Every ``<image>`` is an image of the set (stem: ``name`` without its suffix), with or
without shapes; ``<box>`` (``rotation`` honoured) and ``<polygon>`` are read in pixels, the
other shapes skipped and counted (``cvat_points``, ...). A prediction's shape carries
``<attribute name="score">``. Boxes (a polygon or a rotated box as its bounding box),
rotated boxes (a box's corners, a four-point polygon), polygons and masks (a box as its four
corners)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rpx_cli.errors import InputError
from rpx_cli.io.cvat import read_cvat
from rpx_cli.io.objects import BOX, POLYGON, QUAD, Objects
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import DetectionFormat, SimilarityKind, register_format


@register_format
class Cvat(DetectionFormat):
    name, rank, title = "cvat", 7, "CVAT"
    set_suffixes = (".xml",)
    forms = (BOX, QUAD, POLYGON)

    def sniff(self, head: bytes, name: str) -> bool:
        return False  # no file of one image

    def sniff_set(self, names: list[str], head: bytes) -> bool:
        """XML whose root is ``<annotations>`` (VOC's is ``<annotation>``)."""
        return bool(names) and b"<annotations" in head

    def form_for(self, kind: SimilarityKind) -> str:
        """Polygons for a kind built from them (a box as its corners), else the four corners
        of a rotated box (a kind built from quads: rotated boxes), else boxes."""
        for form in (POLYGON, QUAD, BOX):
            if form in kind.forms:
                return form
        return super().form_for(kind)

    def read_set(self, files: Mapping[str, bytes], path: str, *, prediction: bool, form: str,
                 params: Params, size: Callable[[str], tuple[int, int]]
                 ) -> dict[str, tuple[Objects, dict[str, int]]]:
        out: dict[str, Any] = {}
        for rel, data in sorted(files.items()):
            at = path if len(files) == 1 and path.endswith(rel) else f"{path}/{rel}"
            for stem, record in read_cvat(data, at, prediction=prediction, form=form).items():
                if stem in out:
                    raise InputError(f"the image of stem '{stem}' is in two CVAT files", path=at)
                out[stem] = record
        return out
