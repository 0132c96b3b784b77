"""Open Images box CSVs (:mod:`rpx_cli.io.openimages`): one CSV for the whole set,
``--gt-dir validation-annotations-bbox.csv`` / ``--pred-dir predictions.csv`` (or a folder
holding it); columns by header name, coordinates normalised (image sizes from
``--images-dir`` or ``--image-size``), the stem ``ImageID``, class ids named by
``--oi-class-descriptions``. A group-of box (``IsGroupOf = 1``) is kept for a protocol that
scores them (``DetectionProtocol.group_of``), else skipped and counted
(``openimages_group_of``). Boxes only (and the kinds built from boxes)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rpx_cli.errors import InputError
from rpx_cli.io.objects import BOX, Objects
from rpx_cli.io.openimages import header_columns, read_class_descriptions, read_openimages
from rpx_cli.tasks.base import Params
from rpx_cli.tasks.detection.parts import DetectionFormat, register_format

_NAMES: dict[str, dict[str, str]] = {}


def class_descriptions(path: str | None) -> dict[str, str] | None:
    """``--oi-class-descriptions`` (read once per process)."""
    if path is None:
        return None
    if path not in _NAMES:
        _NAMES[path] = read_class_descriptions(path)
    return _NAMES[path]


@register_format
class OpenImages(DetectionFormat):
    name, rank, title = "openimages", 8, "Open Images"
    set_suffixes = (".csv",)
    forms = (BOX,)
    needs_sizes = True

    def sniff(self, head: bytes, name: str) -> bool:
        return False  # no file of one image

    def sniff_set(self, names: list[str], head: bytes) -> bool:
        """A CSV whose header names ``ImageID``, ``LabelName`` and ``XMin``."""
        return bool(names) and {"ImageID", "LabelName", "XMin"} <= set(header_columns(head))

    def read_set(self, files: Mapping[str, bytes], path: str, *, prediction: bool, form: str,
                 params: Params, size: Callable[[str], tuple[int, int]]
                 ) -> dict[str, tuple[Objects, dict[str, int]]]:
        from rpx_cli.tasks.detection.parts import protocol_of  # registered after the formats

        names = class_descriptions(params.get("oi_class_descriptions"))
        keep = protocol_of(params).group_of
        out: dict[str, tuple[Objects, dict[str, int]]] = {}
        for rel, data in sorted(files.items()):
            at = path if len(files) == 1 and path.endswith(rel) else f"{path}/{rel}"
            for stem, record in read_openimages(data, at, prediction=prediction, names=names,
                                                size=size, keep_groups=keep).items():
                if stem in out:
                    raise InputError(f"the image '{stem}' is in two Open Images CSV files", path=at)
                out[stem] = record
        return out
