"""``examples/semantickitti_layout.py``: SemanticKITTI's own layout (``sequences/XX/labels``,
``XX/velodyne``, predictions in ``XX/predictions``, several sequences pooled) evaluated through
a view of links gives exactly the figures of the same scans laid out flat (issue 30)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from helpers import FIXTURES, ROOT

KITTI = FIXTURES / "segmentation3d" / "kitti"
FLAGS = (f"--label-map {KITTI / 'learning_map.json'} --class-names {KITTI / 'names.txt'} "
         "--ignore-index 0 --range 0:20 --range 20:50 --range 50: --protocol semantickitti")
# (sequence, frame) of each fixture scan in the SemanticKITTI tree
PLACES = {"000000": ("08", "000000"), "000001": ("08", "000001"), "000002": ("11", "000000")}


def _script():
    spec = importlib.util.spec_from_file_location("semantickitti_layout",
                                                  ROOT / "examples" / "semantickitti_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_semantickitti_layout_pools_sequences_like_a_flat_run(rpx, tmp_path: Path) -> None:
    dataset, predictions = tmp_path / "dataset" / "sequences", tmp_path / "predictions" / "sequences"
    for scan, (sequence, frame) in PLACES.items():
        for root, folder, source, suffix in ((dataset, "labels", "gt", ".label"),
                                             (dataset, "velodyne", "velodyne", ".bin"),
                                             (predictions, "predictions", "pred", ".label")):
            target = root / sequence / folder
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(KITTI / source / f"{scan}{suffix}", target / f"{frame}{suffix}")
    (dataset / "08" / "poses.txt").write_text("")  # SemanticKITTI's other files are left alone
    view = tmp_path / "view"
    assert _script().main(["--dataset", str(dataset), "--predictions", str(predictions),
                           "--out", str(view)]) == 0
    pooled = rpx(f"eval segmentation3d --gt-dir {view / 'gt'} --pred-dir {view / 'pred'} "
                 f"--points-dir {view / 'points'} {FLAGS}")
    assert pooled.exit_code == 0, pooled.stderr
    flat = rpx(f"eval segmentation3d --gt-dir {KITTI / 'gt'} --pred-dir {KITTI / 'pred'} "
               f"--points-dir {KITTI / 'velodyne'} {FLAGS}")
    assert pooled.json["dataset"] == flat.json["dataset"]
    assert [row["stem"] for row in pooled.json["rows"]] == ["08/000000", "08/000001", "11/000000"]
    # one sequence alone
    single = tmp_path / "single"
    _script().main(["--dataset", str(dataset), "--predictions", str(predictions), "--sequences",
                    "11", "--out", str(single)])
    only = rpx(f"eval segmentation3d --gt-dir {single / 'gt'} --pred-dir {single / 'pred'} "
               f"--points-dir {single / 'points'} {FLAGS}")
    assert [row["stem"] for row in only.json["rows"]] == ["11/000000"]
