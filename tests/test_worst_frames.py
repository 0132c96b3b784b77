"""``--keep-worst N`` and ``--images-dir DIR``: the worst frames in the report, for the page.

The frames are the rows worst by the task's rank metric (as the page's worst rows are
ordered); detection and detection3d draw their boxes with the matches the rows counted;
segmentation and depth draw overlays from the frames' files; ``--images-dir`` embeds each
frame's image, shrunk. Nothing changes a number; a missing or unreadable image is a
warning; shards merged, ``--jobs`` and the in-memory Evaluator give the same frames.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXTURES, box, dirs, generated_detections, write_json_pair, write_npy, write_png

from rpx_cli import Evaluator
from rpx_cli.io.pictures import MAX_PICTURE_BYTES, MAX_SIDE
from rpx_cli.ops.pictures import WRONG
from rpx_cli.params.pictures import WORST_DEFAULT

STREET = FIXTURES / "detection3d" / "street"
SHELF = FIXTURES / "detection" / "shelf"


def decode(uri: str) -> np.ndarray:
    from PIL import Image

    head, data = uri.split(",", 1)
    assert head in ("data:image/png;base64", "data:image/jpeg;base64")
    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        return np.asarray(image.convert("RGBA"))


def worst_by(rows: list[dict], metric: str, lower_is_better: bool = False) -> list[str]:
    """The rows' stems, worst first: a stable sort by the metric (rows are in stem order)."""
    ranked = [r for r in rows if r.get(metric) is not None]
    return [r["stem"] for r in sorted(ranked, key=lambda r: -r[metric] if lower_is_better else r[metric])]


def test_detection3d_frames_are_the_worst_rows_with_their_matches(rpx) -> None:
    report = rpx(f"eval detection3d {dirs(STREET)} --keep-worst 3 --conf-threshold 0.3").json
    worst = report["worst_frames"]
    assert worst["metric"] == "f1" and worst["direction"] == "higher" and worst["match"] == "2 m"
    rows = {row["stem"]: row for row in report["rows"]}
    assert [f["stem"] for f in worst["frames"]] == worst_by(report["rows"], "f1")[:3]
    for frame in worst["frames"]:
        row = rows[frame["stem"]]
        assert frame["value"] == row["f1"]
        assert frame["gt_path"] == row["gt_path"] and frame["pred_path"] == row["pred_path"]
        pred, gt = frame["pred"], frame["gt"]
        counted = [m and s >= 0.3 for m, s in zip(pred["matched"], pred["score"], strict=True)]
        assert sum(counted) == row["tp"] == sum(gt["matched"])
        assert len(gt["box"]) == row["n_gt"] and sum(s >= 0.3 for s in pred["score"]) == row["n_pred"]
        assert pred["score"] == sorted(pred["score"], reverse=True)
        assert all(len(b) == 5 for b in gt["box"] + pred["box"])


def test_detection3d_by_hand(rpx, tmp_path: Path) -> None:
    """A car found 0.3 m off, a pedestrian missed, a false cone: F1 = 2·1/(2·1 + 1 + 1)."""
    gt = [{"box": [10.0, 0.0, 0.0, 4.0, 2.0, 1.5, 0.5], "label": "car"},
          {"box": [0.0, 5.0, 0.0, 0.5, 0.5, 1.8, 0.0], "label": "pedestrian"}]
    pred = [{"box": [10.3, 0.0, 0.0, 4.0, 2.0, 1.5, 0.5], "label": "car", "score": 0.9},
            {"box": [-3.0, -3.0, 0.0, 0.3, 0.3, 0.8, 0.0], "label": "cone", "score": 0.4}]
    good = [{"box": [1.0, 1.0, 0.0, 4.0, 2.0, 1.5, 0.0], "label": "car"}]
    write_json_pair(tmp_path, "a", gt, pred)
    write_json_pair(tmp_path, "b", good, [{**good[0], "score": 0.8}])
    frames = rpx(f"eval detection3d {dirs(tmp_path)} --keep-worst 1").json["worst_frames"]["frames"]
    assert len(frames) == 1
    frame = frames[0]
    assert frame["stem"] == "a" and frame["value"] == 2 * 1 / (2 * 1 + 1 + 1)
    assert frame["gt"] == {"label": ["car", "pedestrian"], "matched": [True, False],
                           "box": [[10.0, 0.0, 2.0, 4.0, 0.5], [0.0, 5.0, 0.5, 0.5, 0.0]]}
    assert frame["pred"]["label"] == ["car", "cone"] and frame["pred"]["matched"] == [True, False]
    assert frame["pred"]["box"][0] == pytest.approx([10.3, 0.0, 2.0, 4.0, 0.5])


def test_detection_frames_match_the_rows(rpx, tmp_path: Path) -> None:
    for stem, gt, pred in generated_detections(5, 20):
        write_json_pair(tmp_path, stem, gt, pred)
    report = rpx(f"eval detection {dirs(tmp_path)} --keep-worst 6 --conf-threshold 0.3").json
    worst = report["worst_frames"]
    rows = {row["stem"]: row for row in report["rows"]}
    assert [f["stem"] for f in worst["frames"]] == worst_by(report["rows"], "f1")[:6]
    for frame in worst["frames"]:
        row, pred, gt = rows[frame["stem"]], frame["pred"], frame["gt"]
        counted = [m and s >= 0.3 for m, s in zip(pred["matched"], pred["score"], strict=True)]
        assert sum(counted) == row["tp"] == sum(gt["matched"])
        assert row["fn"] == sum(1 for m, c in zip(gt["matched"], gt["crowd"], strict=True) if not m and not c)
        assert all(len(b) == 4 for b in gt["box"] + pred["box"])


def test_no_frames_unless_asked_and_html_asks_for_ten(rpx, tmp_path: Path) -> None:
    plain = rpx(f"eval detection {dirs(SHELF)}").json
    assert "worst_frames" not in plain and plain["params"]["keep_worst"] == 0
    with_page = rpx(f"eval detection {dirs(SHELF)} --html {tmp_path / 'page.html'}").json
    assert with_page["params"]["keep_worst"] == WORST_DEFAULT
    assert len(with_page["worst_frames"]["frames"]) == min(WORST_DEFAULT, with_page["n_pairs"])
    told = rpx(f"eval detection {dirs(SHELF)} --keep-worst 0 --html {tmp_path / 'page.html'}").json
    assert "worst_frames" not in told
    # the numbers never change
    for key in ("aggregate", "dataset", "rows"):
        assert with_page[key] == plain[key]
    bad = rpx(f"eval detection {dirs(SHELF)} --keep-worst 51")
    assert bad.exit_code == 2 and "--keep-worst" in bad.stderr


def write_image(path: Path, width: int, height: int, seed: int = 0) -> None:
    from PIL import Image

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    rgb = np.stack([xx * 255 // max(width - 1, 1), yy * 255 // max(height - 1, 1),
                    rng.integers(0, 40, (height, width))], axis=-1).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rgb).save(path)


def test_images_are_found_by_stem_shrunk_and_embedded(rpx, tmp_path: Path) -> None:
    images = tmp_path / "images"
    write_image(images / "shelf_00.JPG", 1280, 960)  # the suffix matched as pairing matches it
    write_image(images / "shelf_01.png", 200, 100)  # small: kept at its size
    (images / "shelf_02.jpg").write_bytes(b"not an image")
    done = rpx(f"eval detection {dirs(SHELF)} --images-dir {images}")
    assert done.exit_code == 0
    assert "worst frames: no image: 3 frame(s)" in done.stderr
    assert "worst frames: unreadable image: 1 frame(s)" in done.stderr and "shelf_02.jpg" in done.stderr
    report = done.json
    assert report["params"]["keep_worst"] == WORST_DEFAULT and report["params"]["images_dir"] == str(images)
    frames = {f["stem"]: f for f in report["worst_frames"]["frames"]}
    assert set(frames) == {f"shelf_0{i}" for i in range(6)}
    big, small = frames["shelf_00"]["image"], frames["shelf_01"]["image"]
    assert (big["width"], big["height"]) == (MAX_SIDE, 240) and big["scale"] == MAX_SIDE / 1280
    assert (small["width"], small["height"], small["scale"]) == (200, 100, 1.0)
    for picture in (big, small):
        assert len(base64.b64decode(picture["data"].split(",", 1)[1])) <= MAX_PICTURE_BYTES
        assert decode(picture["data"]).shape[:2] == (picture["height"], picture["width"])
    assert frames["shelf_02"]["image"] is None and frames["shelf_03"]["image"] is None
    # the numbers do not depend on it
    plain = rpx(f"eval detection {dirs(SHELF)}").json
    assert report["dataset"] == plain["dataset"] and report["rows"] == plain["rows"]


def test_a_large_noisy_image_is_capped(tmp_path: Path) -> None:
    from PIL import Image

    from rpx_cli.io.pictures import thumbnail

    noise = np.random.default_rng(1).integers(0, 256, (2000, 3000, 3)).astype(np.uint8)
    Image.fromarray(noise).save(tmp_path / "noise.png")
    picture = thumbnail(str(tmp_path / "noise.png"))
    assert max(picture.width, picture.height) <= MAX_SIDE
    assert len(base64.b64decode(picture.uri.split(",", 1)[1])) <= MAX_PICTURE_BYTES
    assert picture.scale == picture.width / 3000


def test_segmentation_overlays_show_the_wrong_pixels(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    for i in range(4):
        gt = rng.integers(0, 4, (30, 40)).astype(np.uint8)
        gt[:3] = 255
        pred = gt.copy()
        wrong = rng.random(gt.shape) < 0.1 * (i + 1)
        pred[wrong] = (pred[wrong] + 1) % 4
        write_png(tmp_path / "gt" / f"f{i}.png", gt)
        write_png(tmp_path / "pred" / f"f{i}.png", pred)
    report = rpx(f"eval segmentation {dirs(tmp_path)} --ignore-index 255 --keep-worst 2").json
    frames = report["worst_frames"]["frames"]
    assert [f["stem"] for f in frames] == worst_by(report["rows"], "miou")[:2] == ["f3", "f2"]
    for frame in frames:
        gt = np.asarray(decode_png(tmp_path / "gt" / f"{frame['stem']}.png"))
        pred = np.asarray(decode_png(tmp_path / "pred" / f"{frame['stem']}.png"))
        errors = decode(frame["overlays"]["errors"]["data"])  # 40 x 30: drawn at its size
        assert errors.shape == (30, 40, 4)
        wrong = (pred != gt) & (gt != 255)
        assert (np.all(errors == WRONG, axis=-1) == wrong).all()
        assert (errors[gt == 255, 3] > 0).all() and (errors[~wrong & (gt != 255), 3] == 0).all()
        assert decode(frame["overlays"]["classes"]["data"]).shape == (30, 40, 4)


def decode_png(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image)


def test_depth_overlay_covers_the_valid_pixels(rpx, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    for i in range(3):
        gt = rng.uniform(1, 5, (24, 32)).astype(np.float32)
        gt[:, :4] = 0  # no measurement
        write_npy(tmp_path / "gt" / f"f{i}.npy", gt)
        write_npy(tmp_path / "pred" / f"f{i}.npy", gt * np.float32(1 + 0.1 * i))
    report = rpx(f"eval depth {dirs(tmp_path)} --keep-worst 3").json
    frames = report["worst_frames"]["frames"]
    assert report["worst_frames"]["direction"] == "lower"
    assert [f["stem"] for f in frames] == ["f2", "f1", "f0"]
    overlay = decode(frames[0]["overlays"]["absrel"]["data"])
    assert overlay.shape == (24, 32, 4)
    assert (overlay[:, :4, 3] == 0).all() and (overlay[:, 4:, 3] > 0).all()


def test_frames_survive_shards_jobs_and_memory(rpx, tmp_path: Path) -> None:
    command = f"eval detection3d {dirs(STREET)} --keep-worst 4"
    one = rpx(command).json["worst_frames"]
    assert rpx(f"{command} --jobs 2").json["worst_frames"] == one
    parts = []
    for k in (1, 2):
        parts.append(tmp_path / f"part{k}.json")
        part = rpx(f"{command} --shard {k}/2 -o {parts[-1]}")
        assert part.exit_code == 0 and "worst_frames" not in json.loads(parts[-1].read_text())
    assert rpx(["merge", *map(str, parts), "-o", str(tmp_path / "merged.json")]).exit_code == 0
    assert json.loads((tmp_path / "merged.json").read_text())["worst_frames"] == one
    evaluator = Evaluator("detection3d", keep_worst=4)
    for path in sorted((STREET / "gt").glob("*.json")):
        evaluator.update(path.stem, json.loads((STREET / "pred" / path.name).read_text()),
                         json.loads(path.read_text()))
    memory = evaluator.report()["worst_frames"]
    strip = [{k: v for k, v in f.items() if not k.endswith("_path")} for f in one["frames"]]
    assert [{k: v for k, v in f.items() if not k.endswith("_path")} for f in memory["frames"]] == strip


def test_segmentation_frames_survive_a_merge_with_their_overlays(rpx, tmp_path: Path) -> None:
    case = FIXTURES / "segmentation" / "street"
    command = f"eval segmentation {dirs(case)} --ignore-index 255 --keep-worst 2"
    one = rpx(command).json["worst_frames"]
    parts = []
    for k in (1, 2):
        parts.append(str(tmp_path / f"p{k}.json"))
        assert rpx(f"{command} --shard {k}/2 -o {parts[-1]}").exit_code == 0
    assert rpx(["merge", *parts, "-o", str(tmp_path / "m.json")]).exit_code == 0
    assert json.loads((tmp_path / "m.json").read_text())["worst_frames"] == one
    assert all(set(f["overlays"]) == {"errors", "classes"} for f in one["frames"])


def test_boxes_per_frame_are_capped(rpx, tmp_path: Path) -> None:
    from rpx_cli.params.pictures import MAX_FRAME_BOXES

    gt = [box("a", [i, 0, i + 5, 5]) for i in range(MAX_FRAME_BOXES + 20)]
    pred = [box("a", [i, 0, i + 5, 5], score=i / 1000) for i in range(MAX_FRAME_BOXES + 40)]
    write_json_pair(tmp_path, "many", gt, pred)
    frame = rpx(f"eval detection {dirs(tmp_path)} --keep-worst 1").json["worst_frames"]["frames"][0]
    assert len(frame["gt"]["box"]) == len(frame["pred"]["box"]) == MAX_FRAME_BOXES
    assert frame["pred"]["score"][0] == (MAX_FRAME_BOXES + 39) / 1000  # the highest kept


def test_no_rows_still_ranks_the_frames(rpx) -> None:
    case = FIXTURES / "segmentation" / "street"
    command = f"eval segmentation {dirs(case)} --ignore-index 255 --keep-worst 2"
    with_rows = rpx(command).json
    without = rpx(f"{command} --no-rows").json
    assert "rows" not in without and without["worst_frames"] == with_rows["worst_frames"]


def test_compare_reads_no_frame_or_curve_as_a_metric(rpx, tmp_path: Path) -> None:
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    command = (f"eval detection3d {dirs(STREET)} --protocol autoware --range 0:20 "
               "--class-names barrier,car,pedestrian,traffic_cone,truck,bus")
    assert rpx(f"{command} -o {base}").exit_code == 0
    assert rpx(f"{command} --keep-worst 3 --conf-threshold 0.5 -o {new}").exit_code == 0
    report = json.loads(rpx(f"compare {base} {new} --force").stdout)
    names = [m["metric"] for m in report["metrics"]]
    assert not [n for n in names if n.startswith(("worst_frames", "dataset.curves"))]
    assert "dataset.mAP" in names


def test_show_lists_no_curve(rpx, tmp_path: Path) -> None:
    names = "--class-names barrier,car,pedestrian,traffic_cone,truck,bus"
    out = tmp_path / "r.json"
    assert rpx(f"eval detection3d {dirs(STREET)} --protocol autoware {names} -o {out}").exit_code == 0
    shown = rpx(f"show {out} --format csv --table metrics").stdout
    assert "curves" not in shown and "dataset.mAP" in shown


def test_an_images_dir_that_is_not_there_is_one_warning(rpx, tmp_path: Path) -> None:
    done = rpx(f"eval detection {dirs(SHELF)} --images-dir {tmp_path / 'nowhere'}")
    assert done.exit_code == 0
    assert f"worst frames: --images-dir {tmp_path / 'nowhere'} is not a folder: no image embedded" \
        in done.stderr
    frames = done.json["worst_frames"]["frames"]
    assert len(frames) == 6 and all("image" not in f for f in frames)


MASKS = FIXTURES / "detection" / "masks"
HANDS = FIXTURES / "detection" / "hands"
COCO_KEYPOINTS = Path(__file__).parent / "fixtures" / "coco_family"


def assert_matches_rows(report: dict) -> None:
    """Each frame's matched flags are the rows' counts (the run's similarity, not boxes)."""
    rows = {row["stem"]: row for row in report["rows"]}
    for frame in report["worst_frames"]["frames"]:
        row, pred, gt = rows[frame["stem"]], frame["pred"], frame["gt"]
        assert sum(pred["matched"]) == row["tp"] == sum(gt["matched"]), frame["stem"]


def test_mask_frames_hold_each_mask_matched_by_mask_iou(rpx) -> None:
    report = rpx(f"eval detection --iou-type segm --coco-gt {MASKS / 'instances.json'} "
                 f"--coco-dt {MASKS / 'results.json'} --keep-worst 4").json
    assert_matches_rows(report)
    gt_file = json.loads((MASKS / "instances.json").read_text())
    sizes = {image["id"]: [image["height"], image["width"]] for image in gt_file["images"]}
    for frame in report["worst_frames"]["frames"]:
        for side in ("gt", "pred"):
            objects = frame[side]
            assert len(objects["mask"]) == len(objects["box"]) == len(objects["label"])
            assert all(m["size"] in sizes.values() and isinstance(m["counts"], str) for m in objects["mask"])


def test_the_page_decodes_rle_as_the_native_core(rpx) -> None:
    """The page's pure-Python decoder of compressed counts against rpx's numpy one."""
    from rpx_cli.ops.rle import decode_counts
    from rpx_cli.report.svg_frames import rle_counts

    report = rpx(f"eval detection --iou-type segm --coco-gt {MASKS / 'instances.json'} "
                 f"--coco-dt {MASKS / 'results.json'} --keep-worst 6").json
    strings = [m["counts"] for f in report["worst_frames"]["frames"] for side in ("gt", "pred")
               for m in f[side]["mask"]]
    assert strings
    decoded = decode_counts([s.encode() for s in strings])
    for i, text in enumerate(strings):
        assert rle_counts(text) == decoded.counts[decoded.start[i]:decoded.start[i + 1]].tolist()


def test_a_mask_is_drawn_on_its_pixels() -> None:
    """A mask of h 4, w 3 whose 1s are column 1's rows 1-3 and column 2's row 0 (COCO's runs
    are column-major: 5 zeros, 4 ones, 3 zeros): one stroke per column, through the middle
    of the column. Without an image the picture is the mask's 3 x 4 pixels grown to
    40 px (at least), x 6 to reach 240 px: each pixel 6 px; the legend takes two rows
    above it (240 px is too narrow for one), so the picture starts at y = 18 + 15."""
    from rpx_cli.report.svg_frames import frame_picture

    counts = "".join(chr(48 + v) for v in (5, 4, 3))  # runs below 16: one character each
    frame = {"stem": "a", "gt": {"label": ["cell"], "box": [[1, 0, 2, 4]], "mask": [{"size": [4, 3],
             "counts": counts}], "matched": [False], "crowd": [False]}, "pred": {}}
    svg = frame_picture(frame, title="t")
    pixel, top = 6.0, 18.0 + 15.0
    expected = (f"M{1.5 * pixel:.1f},{top + 1 * pixel:.1f}v{3 * pixel:.1f}"
                f"M{2.5 * pixel:.1f},{top:.1f}v{1 * pixel:.1f}")
    assert f'<path d="{expected}"' in svg and 'data-mask="0"' in svg


def test_keypoint_frames_hold_points_and_coco_skeleton(rpx) -> None:
    report = rpx(f"eval detection --iou-type keypoints --coco-gt {COCO_KEYPOINTS / 'keypoints_gt.json'} "
                 f"--coco-dt {COCO_KEYPOINTS / 'keypoints_dt.json'} --keep-worst 1").json
    assert_matches_rows(report)
    worst = report["worst_frames"]
    from rpx_cli.ops.oks import COCO_SKELETON

    assert worst["skeleton"] == [list(pair) for pair in COCO_SKELETON]
    gt_file = json.loads((COCO_KEYPOINTS / "keypoints_gt.json").read_text())
    one_based = gt_file["categories"][0]["skeleton"]
    assert sorted(map(sorted, worst["skeleton"])) == sorted(sorted([a - 1, b - 1]) for a, b in one_based)
    frame = worst["frames"][0]
    given = sorted(a["keypoints"] for a in gt_file["annotations"] if not a.get("iscrowd"))
    assert sorted(frame["gt"]["points"]) == given[:len(frame["gt"]["points"])] or \
        all(p in given for p in frame["gt"]["points"])
    assert all(len(p) == 51 for p in frame["gt"]["points"] + frame["pred"]["points"])


def test_hands_frames_have_points_and_no_skeleton(rpx, tmp_path: Path) -> None:
    words = (HANDS / "args").read_text().split()
    report = rpx(f"eval detection {dirs(HANDS)} {' '.join(words)} --keep-worst 3 "
                 f"--html {tmp_path / 'p.html'}").json
    assert_matches_rows(report)
    assert "skeleton" not in report["worst_frames"]
    page = (tmp_path / "p.html").read_text()
    frame = report["worst_frames"]["frames"][0]
    n_points = sum(sum(1 for k in range(2, len(p), 3) if p[k] > 0) for p in frame["gt"]["points"]) + \
        sum(len(p) // 3 for p in frame["pred"]["points"])
    first = page.split('data-name="frame"')[1].split("</svg>")[0]
    assert first.count("data-point=") == n_points
    assert "keypoints: GT as rings" in page


def test_masks_whose_counts_hold_markup_characters_draw_as_given() -> None:
    """COCO's RLE alphabet holds '<' and '>', which the page escapes with every string of
    the report: the drawing decodes the counts as written. Counts "5<3": runs 5, 12 ('<' is
    48 + 12), 3 of a 4 x 5 mask: column 1 rows 1-3, columns 2 and 3 whole, column 4 row 0."""
    from rpx_cli.report.html_frames import frames_section
    from rpx_cli.report.markup import escaped_document
    from rpx_cli.report.svg_frames import frame_picture

    frame = {"stem": "a", "value": 0.0, "gt": {"label": ["cell"], "box": [[1, 0, 4, 4]], "matched": [False],
             "crowd": [False], "mask": [{"size": [4, 5], "counts": "5<3"}]}, "pred": {}}
    page = frames_section(escaped_document({"worst_frames": {"metric": "f1", "direction": "higher",
                                                             "frames": [frame]}}))
    drawn = frame_picture(frame, title="t")
    path = drawn.split('<path d="')[1].split('"')[0]
    assert f'<path d="{path}"' in page
    assert path.count("M") == 4  # columns 1 to 4
