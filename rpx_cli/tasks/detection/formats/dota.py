"""DOTA (:mod:`rpx_cli.io.dota`): one ``.txt`` per image of ``x1 y1 … x4 y4 category
difficult`` lines (pixels), read as polygons (``--geometry polygon``) or rotated boxes
(``--geometry rotated``: the four corners must form a rectangle); ``difficult`` objects are
ignored GT. A per-image prediction line ends ``category score``."""

from __future__ import annotations

from typing import Any

from rpx_cli.io.dota import read_dota
from rpx_cli.io.objects import QUAD, Objects
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.formats.labels import LabelFormat, first_line, is_number
from rpx_cli.tasks.detection.parts import register_format


@register_format
class Dota(LabelFormat):
    name, rank, title = "dota", 5, "DOTA"
    suffixes = (".txt",)
    forms = (QUAD,)

    def sniff(self, head: bytes, name: str) -> bool:
        """``.txt`` starting with DOTA's header or eight numbers then a category."""
        if not name.lower().endswith(".txt"):
            return False
        if head.lstrip().startswith((b"imagesource", b"gsd")):
            return True
        fields = first_line(head)
        return (len(fields) in (9, 10) and all(is_number(f) for f in fields[:8])
                and not is_number(fields[8]))

    def objects(self, data: Any, path: str, *, prediction: bool, form: str,
                params: Params) -> tuple[Objects, dict[str, int]]:
        return read_dota(data, path, prediction=prediction), {}
