"""The detection parts' registries (``rpx_cli/tasks/detection/parts.py``): the names the
command line knows before any part is imported are the parts' own, every module of the three
folders is listed, and a run imports only the parts it asks for."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

from rpx_cli.tasks.detection import parts
from rpx_cli.tasks.detection.parts import (
    FORMAT_NAMES,
    FORMATS,
    GEOMETRIES,
    IOU_TYPES,
    KIND_CHOICES,
    KINDS,
    PROTOCOL_SECTIONS,
    PROTOCOLS,
    Registry,
    register_kind,
)

REGISTRIES = [(KINDS, tuple(KIND_CHOICES)), (PROTOCOLS, tuple(PROTOCOL_SECTIONS)),
              (FORMATS, FORMAT_NAMES)]


def folder_modules(registry: Registry) -> set[str]:
    package = importlib.import_module(f"rpx_cli.tasks.detection.{registry.folder}")
    return {module.name for module in pkgutil.iter_modules(package.__path__)}


@pytest.mark.parametrize(("registry", "names"), REGISTRIES, ids=lambda r: getattr(r, "folder", ""))
def test_every_part_is_listed_in_rank_order_under_its_module_name(registry, names):
    parts.load_parts()
    for module in folder_modules(registry):  # a module that is not a part registers none
        importlib.import_module(f"rpx_cli.tasks.detection.{registry.folder}.{module}")
    assert set(registry.parts) == set(names) and list(registry) == list(names)  # nothing unlisted
    assert set(names) <= folder_modules(registry)
    for name in names:
        assert type(registry[name]).__module__ == f"rpx_cli.tasks.detection.{registry.folder}.{name}"
    ranks = [registry[name].rank for name in names]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)


def test_the_choices_are_the_parts_own():
    assert {name: (KINDS[name].iou_type, KINDS[name].geometry) for name in KINDS} == KIND_CHOICES
    assert {name: PROTOCOLS[name].section for name in PROTOCOLS} == PROTOCOL_SECTIONS
    assert IOU_TYPES == ("bbox", "segm", "keypoints")
    assert GEOMETRIES == ("box", "rotated", "polygon", "cuboid")
    assert list(FORMATS.values()) == [FORMATS[name] for name in FORMAT_NAMES]


def test_an_unlisted_part_is_refused_naming_the_list():
    class Sphere(parts.SimilarityKind):
        name, rank, iou_type, geometry = "sphere", 9, "bbox", "sphere"

    with pytest.raises(ValueError, match=r"'sphere' is not listed in rpx_cli/tasks/detection/parts\.py"):
        register_kind(Sphere)
    assert "sphere" not in KINDS and "sphere" not in KINDS.parts
    with pytest.raises(KeyError):
        KINDS["sphere"]


def test_a_name_registered_twice_is_refused():
    box = type(KINDS["box"])
    impostor = type("Box2", (box,), {"__module__": "elsewhere"})
    impostor.name = "box"
    with pytest.raises(ValueError, match="'box' is registered twice"):
        register_kind(impostor)
    assert type(KINDS["box"]) is box


def test_a_run_imports_only_the_parts_it_asks_for():
    """A COCO box run reads COCO files and rpx's (the folder format's fallback); it never
    imports the other formats' readers, the other protocols or the other kinds."""
    code = (
        "import sys\n"
        "from rpx_cli.tasks.registry import get_task\n"
        "from rpx_cli.tasks.detection.parts import kind_of, protocol_of, files_format, folder_format\n"
        "task = get_task('detection')\n"
        "task.options, task.families\n"
        "kind_of({}), protocol_of({}), files_format({'coco_gt': 1, 'coco_dt': 2}), folder_format({}, 'gt')\n"
        "print(' '.join(sorted(m.split('.', 3)[3] for m in sys.modules\n"
        "                      if m.startswith(('rpx_cli.tasks.detection.kinds.',\n"
        "                                       'rpx_cli.tasks.detection.protocols.',\n"
        "                                       'rpx_cli.tasks.detection.formats.')))))\n")
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                            text=True).stdout.split()
    assert loaded == ["formats.coco", "formats.rpx", "kinds.box", "protocols.coco"]
