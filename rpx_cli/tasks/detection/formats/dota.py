"""DOTA (:mod:`rpx_cli.io.dota`): one ``.txt`` per image of ``x1 y1 … x4 y4 category
difficult`` lines (pixels), read as polygons (``--geometry polygon``) or rotated boxes
(``--geometry rotated``: the four corners must form a rectangle); ``difficult`` objects are
ignored GT. A per-image prediction line ends ``category score``; the Task1 results files
hold the whole set: a folder of ``Task1_<class>.txt`` files of ``image score x1 y1 … x4
y4`` lines (an image no file names has no detection)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rpx_cli.io.dota import read_dota, read_task1, task1_class
from rpx_cli.io.objects import QUAD, Objects
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.formats.labels import LabelFormat, first_line, is_number
from rpx_cli.tasks.detection.formats.voc import raise_gt_results
from rpx_cli.tasks.detection.parts import register_format


@register_format
class Dota(LabelFormat):
    name, rank, title = "dota", 5, "DOTA"
    suffixes = (".txt",)
    set_suffixes = (".txt",)  # Task1_<class>.txt results
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

    def set_members(self, names: list[str]) -> list[str]:
        return [name for name in names if "task1_" in name.lower() and task1_class(name) is not None]

    def sniff_set(self, names: list[str], head: bytes) -> bool:
        """``Task1_<class>.txt`` files of ``image score x1 y1 … x4 y4`` lines."""
        fields = first_line(head)
        return bool(names) and (not fields or (len(fields) == 10
                                               and all(is_number(f) for f in fields[1:])))

    def read_set(self, files: Mapping[str, bytes], path: str, *, prediction: bool, form: str,
                 params: Params, size: Callable[[str], tuple[int, int]]
                 ) -> dict[str, tuple[Objects, dict[str, int]]]:
        if not prediction:
            raise_gt_results(path, "DOTA Task1")
        return {stem: (objects, {}) for stem, objects in read_task1(files, path).items()}
