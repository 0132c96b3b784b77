"""``--shard K/N`` + ``rpx merge``: the merged report equals one run over everything, for
every task (hypothesis over random datasets and shard counts), and bad merges are refused."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from helpers import dirs, parse_report, without_provenance, write_json, write_npy
from hypothesis import given, settings
from hypothesis import strategies as st

from rpx_cli.api import Invocation, RunOptions, merge_reports, run_evaluation
from rpx_cli.io.discover import shard_of


def make_saliency(root: Path, rng, stems) -> dict:
    for stem in stems:
        write_npy(root / "pred" / f"{stem}.npy", rng.random((8, 12)).astype(np.float32))
        write_npy(root / "gt" / f"{stem}.npy", (rng.random((8, 12)) > 0.5).astype(np.float32))
    return {"block_size": 2, "threshold": 0.5, "mask_scale": None}


def make_depth(root: Path, rng, stems) -> dict:
    for stem in stems:
        gt = rng.uniform(0.5, 9, (6, 7)).astype(np.float32)
        gt[rng.random(gt.shape) < 0.2] = 0
        write_npy(root / "pred" / f"{stem}.npy", (gt * rng.uniform(0.8, 1.2, gt.shape)).astype(np.float32))
        write_npy(root / "gt" / f"{stem}.npy", gt)
    return {"depth_scale": 1000.0, "min_depth": None, "max_depth": 8.0, "ranges": [[0, 3], [3, None]],
            "align": "none", "resize_pred": None}


def make_segmentation(root: Path, rng, stems) -> dict:
    for stem in stems:
        gt = rng.integers(0, 5, (6, 7)).astype(np.uint8)
        write_npy(root / "pred" / f"{stem}.npy", np.where(rng.random(gt.shape) < 0.6, gt,
                                                          rng.integers(0, 7, gt.shape)).astype(np.uint8))
        write_npy(root / "gt" / f"{stem}.npy", gt)
    return {"ignore_index": [4], "num_classes": None, "class_names": None}


def make_nvs(root: Path, rng, stems) -> dict:
    for stem in stems:
        gt = (rng.random((12, 13, 3)) * 255).astype(np.uint8)
        noisy = np.clip(gt + rng.integers(-9, 10, gt.shape), 0, 255).astype(np.uint8)
        write_npy(root / "pred" / f"{stem}.npy", noisy)
        write_npy(root / "gt" / f"{stem}.npy", gt)
    return {"data_range": None}


def make_sparse(root: Path, rng, stems) -> dict:
    for stem in stems:
        gt = np.column_stack([rng.uniform(0, 20, (9, 2)), rng.uniform(1, 9, 9)])
        pred = np.column_stack([gt[:, :2] + rng.normal(0, 1, (9, 2)), gt[:, 2] * 1.1])
        write_npy(root / "pred" / f"{stem}.npy", pred[rng.random(9) < 0.8])
        write_npy(root / "gt" / f"{stem}.npy", gt)
    return {"radius": 2.0, "depth_scale": 1000.0, "pred_kind": "auto"}


def make_detection(root: Path, rng, stems) -> dict:
    for stem in stems:
        gt, pred = [], []
        for _ in range(int(rng.integers(0, 5))):
            x, y, w, h = rng.uniform(1, 50, 4)
            label = f"c{rng.integers(0, 3)}"
            gt.append({"bbox": [x, y, x + w, y + h], "label": label, "iscrowd": int(rng.random() < 0.1)})
            pred.append({"bbox": [x + 1, y, x + w, y + h + 1], "label": label,
                         "score": round(float(rng.random()), 1)})
        pred.append({"bbox": [0, 0, 5, 5], "label": "c1", "score": 0.3})
        for role, objects in (("gt", gt), ("pred", pred)):
            write_json(root / role / f"{stem.replace('/', '_')}.json", objects)
    return {"box_format": "xyxy", "iou_threshold": 0.5, "conf_threshold": 0.2, "class_map": None,
            "skip_empty_gt": False}


def make_tracking(root: Path, rng, stems) -> dict:
    from mot_data import generate, write_mot

    for stem in stems:
        gt, pred = generate(int(rng.integers(0, 2**31)), n_frames=12, n_tracks=4, p_double=0.2)
        write_mot(root / "gt" / f"{stem}.txt", gt, gt=True)
        write_mot(root / "pred" / f"{stem}.txt", pred[rng.random(len(pred)) < 0.9], gt=False)
    return {"iou_threshold": 0.5, "box_format": "xyxy", "benchmark": "none"}


def make_pose(root: Path, rng, stems) -> dict:
    for stem in stems:
        for role in ("gt", "pred"):
            q = rng.normal(size=4)
            write_json(root / role / f"{stem.replace('/', '_')}.json",
                       {"quaternion_wxyz": q.tolist(), "t": rng.normal(size=3).tolist()})
    return {"translation_sign_ambiguous": bool(rng.random() < 0.5)}


def make_keypoints(root: Path, rng, stems) -> dict:
    for stem in stems:
        n = int(rng.integers(0, 6))
        p0 = rng.uniform(0, 20, (n, 2))
        gt = {"points0": p0.tolist(), "points1": (p0 + 3).tolist(),
              "visibility": (rng.random(n) < 0.8).tolist()}
        m = int(rng.integers(0, 6))
        pred = {"points0": rng.uniform(0, 20, (m, 2)).tolist(),
                "points1": rng.uniform(0, 25, (m, 2)).tolist()}
        for role, document in (("gt", gt), ("pred", pred)):
            write_json(root / role / f"{stem.replace('/', '_')}.json", document)
    return {"px_threshold": 3.0}


def make_coherence(root: Path, rng, stems) -> dict:
    for stem in stems:
        mask = rng.integers(0, 3, (6, 7)).astype(np.uint8)
        write_npy(root / "pred" / f"{stem}.npy", mask)
        write_npy(root / "gt" / f"{stem}.npy", (1 + mask * rng.uniform(0.05, 0.3)).astype(np.float32))
    return {"tau": 0.1, "dilation": 1, "depth_scale": 1000.0}


MAKERS = {"detection": make_detection, "pose": make_pose, "keypoints": make_keypoints,
          "coherence": make_coherence, "tracking": make_tracking, "saliency-mb": make_saliency,
          "depth": make_depth, "segmentation": make_segmentation, "nvs": make_nvs,
          "sparse-depth": make_sparse}


def evaluate(task, root, params, **kwargs):
    return run_evaluation(task, str(root / "pred"), str(root / "gt"), params,
                          RunOptions.of(jobs=1, **kwargs)).report


def merged(task, root, params, count, **kwargs):
    parts = []
    for index in range(1, count + 1):
        part = evaluate(task, root, params, shard=(index, count), **kwargs)
        data = json.dumps(part).encode()
        parse_report(data)  # partial reports are valid reports too
        parts.append((f"part{index}.json", json.loads(data), hashlib.sha256(data).hexdigest()))
    return merge_reports(parts, invocation=Invocation("rpx merge", [], {}))


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(MAKERS))
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31), n_stems=st.integers(1, 9), count=st.integers(1, 5),
       rows=st.booleans())
def test_merge_of_shards_equals_a_single_run(task, seed, n_stems, count, rows) -> None:
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        stems = [f"scene{i % 3}/{i:04d}" for i in range(n_stems)]
        params = MAKERS[task](root, rng, stems)
        write_npy(root / "gt" / "extra_gt.npy", np.zeros((1, 1)))  # unpaired, listed either way
        single = evaluate(task, root, params, missing="skip", include_rows=rows)
        combined = merged(task, root, params, count, missing="skip", include_rows=rows)
        assert without_provenance(combined) == without_provenance(single)
        parse_report(json.dumps(combined))
        from rpx_cli.tasks import get_task

        for role in get_task(task).input_names:
            assert combined["run_provenance"]["inputs"][role]["sha256"] == \
                single["run_provenance"]["inputs"][role]["sha256"]


def _rows_section(data: bytes) -> bytes:
    start = data.index(b'\n  "rows": ')
    return data[start:data.index(b'\n  "', start + 1)]


@pytest.mark.parametrize("task", sorted(MAKERS))
def test_merged_rows_are_written_as_a_single_run_writes_them(task, tmp_path: Path) -> None:
    """Parts as rpx writes them (indented): their rows are copied as written, byte for byte
    the rows of a single run; compact parts, and a task filling rows from all pairs at once
    (detection), go through parse and dumps, to the same bytes."""
    from rpx_cli.report.serialize import dumps
    from rpx_cli.run.merge import merge_files
    from rpx_cli.tasks import get_task
    from rpx_cli.tasks.base import Task

    rng = np.random.default_rng(7)
    params = MAKERS[task](tmp_path, rng, [f"scene{i % 3}/{i:04d}" for i in range(7)])
    single = dumps(evaluate(task, tmp_path, params))
    copies = type(get_task(task)).summarize_rows is Task.summarize_rows
    for compact in (False, True):
        paths = []
        for k in (1, 2, 3):
            path = tmp_path / f"part{k}-{compact}.json"
            path.write_bytes(dumps(evaluate(task, tmp_path, params, shard=(k, 3)), compact=compact))
            paths.append(str(path))
        report = merge_files(paths)
        assert (type(report["rows"]).__name__ == "Fragment") == (copies and not compact)
        data = dumps(report, parsed=("rows",))
        assert _rows_section(data) == _rows_section(single)
        assert without_provenance(json.loads(data)) == without_provenance(json.loads(single))


def test_shards_partition_the_stems() -> None:
    """A stable hash of the stem (the same in every process and run), not Python's hash()."""
    stems = [f"s{i}" for i in range(500)] + ["scene1/clutter/000120"]
    for count in (1, 2, 4, 7):
        shards = [shard_of(stem, count) for stem in stems]
        assert shards == [1 + int.from_bytes(hashlib.sha256(stem.encode()).digest()[:8], "big") % count
                          for stem in stems]
        assert set(shards) == set(range(1, count + 1))  # no shard is empty


@pytest.fixture
def parts(rpx, tmp_path: Path):
    rng = np.random.default_rng(0)
    root = tmp_path / "data"
    make_depth(root, rng, [f"s{i}" for i in range(8)])
    paths = []
    for k in (1, 2, 3):
        out = tmp_path / f"part{k}.json"
        run = rpx(f"eval depth {dirs(root)} --shard {k}/3 -o {out}")
        assert run.exit_code == 0, run.stderr
        paths.append(out)
    return root, paths


def test_cli_merge_equals_single_run(rpx, parts, tmp_path: Path) -> None:
    root, paths = parts
    merged_run = rpx(["merge", *paths])
    assert merged_run.exit_code == 0, merged_run.stderr
    single = rpx(f"eval depth {dirs(root)}").json
    combined = merged_run.json
    assert without_provenance(combined) == without_provenance(single)
    assert combined["run_provenance"]["command"] == "rpx merge"
    assert {k for k in combined["run_provenance"]["inputs"] if k.startswith("shard_")} == \
        {"shard_1", "shard_2", "shard_3"}
    assert "state" not in combined


def test_merge_refuses_missing_and_repeated_shards(rpx, parts) -> None:
    _, paths = parts
    run = rpx(["merge", paths[0], paths[2]])
    assert run.exit_code == 1 and "shard(s) 2/3 missing" in run.stderr
    run = rpx(["merge", paths[0], paths[1], paths[2], paths[1]])
    assert run.exit_code == 1 and "shard 2/3 is given twice" in run.stderr


def test_merge_refuses_parts_of_other_evaluations(rpx, parts, tmp_path: Path) -> None:
    root, paths = parts
    other = tmp_path / "other.json"
    rpx(f"eval depth {dirs(root)} --shard 2/3 "
        f"--max-depth 5 -o {other}")
    run = rpx(["merge", paths[0], other, paths[2]])
    assert run.exit_code == 1 and "params differs" in run.stderr and str(other) in run.stderr
    full = tmp_path / "full.json"
    rpx(f"eval depth {dirs(root)} -o {full}")
    run = rpx(["merge", paths[0], full])
    assert run.exit_code == 1 and "not a --shard partial report" in run.stderr


def test_bad_shard_flag_is_a_usage_error(rpx, parts) -> None:
    root, _ = parts
    for bad in ("0/3", "4/3", "2", "a/b", "1/0"):
        run = rpx(f"eval depth {dirs(root)} --shard {bad}")
        assert run.exit_code == 2, bad
