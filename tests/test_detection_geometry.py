"""``rpx eval detection --geometry rotated|polygon|cuboid``.

- detectron2's own rotated-box IoU cases (``tests/structures/test_rotated_boxes.py``), the
  angle sign among them (the issue-1207 pairs are exactly 0 with detectron2's sign);
- the IoU against shapely (test-only) on generated rotated boxes, cuboids and polygons
  (repairs included), to 1e-9;
- whole reports: rows, pooled and the confusion matrix against the plain loops of
  ``test_detection_reference.py`` with shapely's IoU, COCO AP/AR against pycocotools'
  COCOeval with shapely's IoU put in ``computeIoU``; ``--geometry rotated`` (and cuboids) on
  axis-aligned boxes equal to ``--geometry box`` in every view;
- repairs, input errors, the missing extra, shards and jobs, a 500 x 500 frame.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import shapely
import test_detection_reference as reference
from helpers import (
    ROOT,
    assert_jobs_and_shards_agree,
    dirs,
    generated_detections,
    shell_commands,
    write_json_pair,
)
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from rpx_cli.io.box_table import FrameTable
from rpx_cli.ops import rectangles
from rpx_cli.ops.boxes3d import convex_intersection_area
from rpx_cli.tasks.detection.parts import KINDS

STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")


# --- the IoU as rpx computes it, through the reader and the per-frame overlaps -----------


def rpx_iou(geometry: str, pred: list[dict], gt: list[dict], angle_unit: str = "deg") -> np.ndarray:
    """(len(pred), len(gt)) IoU: parsed as from files, evaluated as a pair, looked up as the
    views do."""
    def parse(objects: list[dict], prediction: bool):
        if prediction:
            objects = [{**o, "score": o.get("score", 0.5)} for o in objects]
        return kind.read_rpx(json.dumps(objects).encode(), "mem.json", prediction=prediction,
                             params={"angle_unit": angle_unit})

    kind = KINDS[geometry]
    frame = kind.pair(parse(pred, True), parse(gt, False), None, pred_path=None, gt_path="")[0]["frame"]
    labels = sorted({*frame.gt.labels, *frame.pred.labels})
    geometry_table = kind.overlaps([frame], FrameTable.from_frames([frame], labels))
    return geometry_table.matrix(np.arange(len(pred)), np.arange(len(gt)))


def rotated(*boxes: tuple[float, ...]) -> list[dict]:
    return [{"bbox": list(b), "label": "a"} for b in boxes]


# --- shapely references (written from each format's definition, not from rpx) --------------


def rotated_polygon(xc: float, yc: float, w: float, h: float, angle: float, unit: str = "deg"):
    """detectron2's corners (``get_rotated_vertices``): x = xc + u cos θ + v sin θ,
    y = yc − u sin θ + v cos θ for u = ±w/2, v = ±h/2."""
    theta = math.radians(angle) if unit == "deg" else angle
    c, s = math.cos(theta), math.sin(theta)
    corners = [(u, v) for u, v in ((w / 2, h / 2), (w / 2, -h / 2), (-w / 2, -h / 2), (-w / 2, h / 2))]
    return shapely.Polygon([(xc + u * c + v * s, yc - u * s + v * c) for u, v in corners])


def footprint(center, size, yaw: float):
    """A cuboid's footprint: (±l/2, ±w/2) turned by yaw counter-clockwise about +z."""
    c, s = math.cos(yaw), math.sin(yaw)
    half_l, half_w = size[0] / 2, size[1] / 2
    corners = [(half_l, half_w), (-half_l, half_w), (-half_l, -half_w), (half_l, -half_w)]
    return shapely.Polygon([(center[0] + u * c - v * s, center[1] + u * s + v * c) for u, v in corners])


def repaired(polygons: list) -> shapely.Geometry:
    """A multi-polygon as the docs define it: each part made valid, its polygonal pieces
    kept, everything unioned."""
    pieces = []
    for part in polygons:
        exterior, holes = (part["exterior"], part.get("holes", [])) if isinstance(part, dict) else (part, [])
        polygon = shapely.Polygon(exterior, holes)
        if not polygon.is_valid:
            polygon = shapely.make_valid(polygon)
        pieces += [p for p in shapely.get_parts(polygon) if p.geom_type in ("Polygon", "MultiPolygon")]
        pieces += [q for p in shapely.get_parts(polygon) if p.geom_type == "GeometryCollection"
                   for q in shapely.get_parts(p) if q.geom_type in ("Polygon", "MultiPolygon")]
    return shapely.union_all(pieces) if pieces else shapely.Polygon()


def shapely_iou(a, b, crowd: bool = False) -> float:
    inter = a.intersection(b).area
    if crowd:
        return inter / a.area if a.area else 0.0
    union = a.union(b).area
    return inter / union if union else 0.0


def shape_of(geometry: str, item: dict, unit: str = "deg"):
    if geometry == "rotated":
        return rotated_polygon(*item["bbox"], unit=unit)
    if geometry == "cuboid":
        return footprint(item["center"], item["size"], item["yaw"])
    return repaired(item["polygons"])


# --- detectron2's cases ---------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b", "expected"), [
    ((0.5, 0.5, 1, 1, 0), (0.25, 0.5, 0.5, 1, 0), 0.5),  # test_iou_half_overlap
    ((5, 5, 10, 6, 55), (5, 5, 10, 6, -35), 36 / 84),  # test_pairwise_iou_orthogonal
    ((1, 1, math.sqrt(2), math.sqrt(2), 45), (1, 1, 2, 2, 0), 0.5),  # test_pairwise_iou_45_degrees
    ((1, 1, 2 * math.sqrt(2), 2 * math.sqrt(2), -45), (1, 1, 2, 2, 0), 0.5),
    ((565, 565, 10, 10, 0), (565, 565, 10, 8.3, 0), 0.83),  # test_iou_precision
    ((299.5, 417.370422, 600, 364.259186, 27.1828), (299.5, 417.370422, 600, 364.259155, 27.1828),
     364.259155 / 364.259186),  # test_pairwise_iou_large_close_boxes
    ((296.6620178222656, 458.73883056640625, 23.515729904174805, 47.677001953125, 0.08795166015625),
     (296.66201, 458.73882000000003, 23.51573, 47.67702, 0.087951), 1.0),  # issue 2154
    ((2563.74462890625, 1436.7901611328125, 2174.703369140625, 214.09500122070312, 115.11834716796875),
     (2563.74462890625, 1436.790283203125, 2174.702880859375, 214.09495544433594, 115.11835479736328),
     1.0),  # issue 2167
])
def test_detectron2_rotated_iou_cases(a, b, expected: float) -> None:
    # detectron2 asserts torch.allclose in float32 (rtol 1e-5, atol 1e-8)
    assert rpx_iou("rotated", rotated(a), rotated(b))[0, 0] == pytest.approx(expected, rel=1e-5, abs=1e-8)


def test_detectron2_angle_sign_issue_1207_pairs_are_exactly_zero() -> None:
    """With detectron2's sign these thin boxes are parallel neighbours; read with the other
    sign they would cross."""
    for a, b in (((3, 3, 8, 2, -45), (6, 0, 8, 2, -45)),
                 ((160, 153, 230, 23, -37), (190, 127, 80, 21, -46))):
        assert rpx_iou("rotated", rotated(a), rotated(b))[0, 0] == 0.0
        flipped = [(*a[:4], -a[4])], [(*b[:4], -b[4])]
        assert rpx_iou("rotated", rotated(*flipped[0]), rotated(*flipped[1]))[0, 0] > 0.1


def test_detectron2_pairwise_iou_0_degree_and_many_boxes() -> None:
    boxes1 = [(0.5, 0.5, 1.0, 1.0, 0.0)] * 2
    boxes2 = [(0.5, 0.5, 1.0, 1.0, 0.0), (0.25, 0.5, 0.5, 1.0, 0.0), (0.5, 0.25, 1.0, 0.5, 0.0),
              (0.25, 0.25, 0.5, 0.5, 0.0), (0.75, 0.75, 0.5, 0.5, 0.0), (1.0, 1.0, 1.0, 1.0, 0.0)]
    expected = [1.0, 0.5, 0.5, 0.25, 0.25, 0.25 / (2 - 0.25)]
    assert rpx_iou("rotated", rotated(*boxes1), rotated(*boxes2)) == pytest.approx(
        np.array([expected, expected]), abs=1e-12)
    n1, n2 = 100, 200
    many1 = [(5 + 20 * i, 5 + 20 * i, 10, 10, 0) for i in range(n1)]
    many2 = [(5 + 20 * i, 5 + 20 * i, 10, 1 + 9 * i / n2, 0) for i in range(n2)]
    want = np.zeros((n1, n2))
    want[np.arange(n1), np.arange(n1)] = (1 + 9 * np.arange(n1) / n2) / 10
    assert rpx_iou("rotated", rotated(*many1), rotated(*many2)) == pytest.approx(want, abs=1e-12)


def test_angle_unit_rad_reads_radians() -> None:
    deg = rpx_iou("rotated", rotated((5, 5, 10, 6, 55)), rotated((5, 5, 10, 6, -35)))
    rad = rpx_iou("rotated", rotated((5, 5, 10, 6, math.radians(55))),
                  rotated((5, 5, 10, 6, math.radians(-35))), angle_unit="rad")
    assert rad[0, 0] == pytest.approx(deg[0, 0], abs=1e-15)


# --- against shapely --------------------------------------------------------------------------


def random_rotated(rng, n: int) -> list[dict]:
    out = []
    for _ in range(n):
        xc, yc = rng.uniform(0, 40, 2)
        w, h = rng.uniform(0.5, 25, 2)
        angle = float(rng.choice([0.0, 90.0, -180.0, float(rng.uniform(-360, 360))]))
        out.append({"bbox": [float(xc), float(yc), float(w), float(h), angle], "label": "a"})
    return out


@pytest.mark.parametrize("seed", range(4))
def test_rotated_iou_equals_shapely(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pred, gt = random_rotated(rng, 40), random_rotated(rng, 30)
    # identical, nested, edge-touching and corner-touching pairs
    gt[0]["bbox"] = list(pred[0]["bbox"])
    gt[1]["bbox"] = [*pred[1]["bbox"][:2], pred[1]["bbox"][2] / 2, pred[1]["bbox"][3] / 3, pred[1]["bbox"][4]]
    pred[2]["bbox"], gt[2]["bbox"] = [0, 0, 2, 2, 0], [2, 0, 2, 2, 0]
    pred[3]["bbox"], gt[3]["bbox"] = [0, 0, 2, 2, 30], [2, 0, 2, 2, 30]
    got = rpx_iou("rotated", pred, gt)
    want = np.array([[shapely_iou(shape_of("rotated", p), shape_of("rotated", g)) for g in gt] for p in pred])
    assert got == pytest.approx(want, abs=1e-9)
    assert got[0, 0] == pytest.approx(1.0, abs=1e-12) and got[2, 2] == 0.0
    assert (got > 0).sum() > 50  # the data overlaps


def test_fast_rectangle_kernel_equals_the_clipper_and_shapely() -> None:
    """ops.rectangles' Green's-theorem kernel against its reference, detection3d's
    Sutherland-Hodgman clipper, and shapely — on random pairs and on the configurations
    that are hard for it: edges parallel or collinear (same angle, 90 and 180 degrees
    apart, 1e-7 or 1e-5 rad apart: routed to the clipper) or 1e-3 rad from parallel (not
    routed), identical, nested and touching rectangles."""
    rng = np.random.default_rng(7)
    n = 4000
    a = np.column_stack([rng.uniform(0, 20, (n, 2)), rng.uniform(0.5, 10, (n, 2)), rng.uniform(-4, 4, n)])
    b = np.column_stack([a[:, :2] + rng.normal(0, 3, (n, 2)), rng.uniform(0.5, 10, (n, 2)),
                         rng.uniform(-4, 4, n)])
    turn = np.array([0.0, np.pi / 2, np.pi, -np.pi / 2, 1e-7, 1e-5, -1e-5, 1e-3, -1e-3])
    b[: n // 2, 4] = a[: n // 2, 4] + turn[np.arange(n // 2) % turn.size]
    b[:50] = a[:50]  # identical
    b[50:100, :2] = a[50:100, :2] + rng.uniform(-1, 1, (50, 1)) * np.column_stack(  # along the axis
        [np.cos(a[50:100, 4]), np.sin(a[50:100, 4])])
    b[50:100, 2:4] = a[50:100, 2:4]
    b[100:150, :2], b[100:150, 2:4] = a[100:150, :2], a[100:150, 2:4] / 3  # nested
    b[150:200, :2] = a[150:200, :2] + np.column_stack([np.cos(a[150:200, 4]), np.sin(a[150:200, 4])]) * (
        a[150:200, 2:3] / 2 + b[150:200, 2:3] / 2)  # touching along an edge (same angle)
    b[150:200, 4] = a[150:200, 4]
    fast, parallel = rectangles.rectangle_intersection(a, b)
    clipper = convex_intersection_area(rectangles.corners(a), rectangles.corners(b))
    scale = np.maximum(a[:, 2] * a[:, 3], b[:, 2] * b[:, 3])
    ok = ~parallel
    assert np.abs(fast[ok] - clipper[ok]).max() <= 1e-12 * scale[ok].max()
    kind = np.arange(n // 2) % turn.size
    assert parallel[: n // 2][kind < 7].all() and not parallel[200: n // 2][kind[200:] >= 7].any()
    got = rectangles.intersection_areas(a, b)
    want = shapely.area(shapely.intersection(shapely.polygons(rectangles.corners(a)),
                                             shapely.polygons(rectangles.corners(b))))
    assert got == pytest.approx(want, abs=1e-9 * scale.max())
    assert got[:50] == pytest.approx(a[:50, 2] * a[:50, 3], rel=1e-12)
    assert (got[150:200] <= 1e-9 * scale[150:200]).all()


def random_cuboids(rng, n: int) -> list[dict]:
    out = []
    for i in range(n):
        center = [float(v) for v in (*rng.uniform(0, 30, 2), rng.uniform(-1, 2))]
        size = [float(v) for v in rng.uniform(0.5, 8, 3)]
        yaw = float(rng.uniform(-math.pi, math.pi)) if i % 4 else 0.0
        out.append({"center": center, "size": size, "yaw": yaw, "label": "car"})
    return out


@pytest.mark.parametrize("seed", range(3))
def test_cuboid_iou_equals_shapely_on_the_footprints(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pred, gt = random_cuboids(rng, 40), random_cuboids(rng, 30)
    want = np.array([[shapely_iou(shape_of("cuboid", p), shape_of("cuboid", g)) for g in gt] for p in pred])
    assert rpx_iou("cuboid", pred, gt) == pytest.approx(want, abs=1e-9)
    # the same cuboids as quaternions [w, x, y, z] about +z
    as_quaternions = [{**{k: v for k, v in o.items() if k != "yaw"},
                       "rotation": [math.cos(o["yaw"] / 2), 0.0, 0.0, math.sin(o["yaw"] / 2)]} for o in gt]
    assert rpx_iou("cuboid", pred, as_quaternions) == pytest.approx(want, abs=1e-9)
    assert (want > 0).sum() > 20


def test_cuboid_pitch_and_roll_are_ignored() -> None:
    yaw, pitch, roll = 0.7, 0.3, -0.2
    cy, sy, cp, sp, cr, sr = (f(a / 2) for a in (yaw, pitch, roll) for f in (math.cos, math.sin))
    q = [cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
         cr * cp * sy - sr * sp * cy]  # z-y-x (yaw, pitch, roll)
    gt = [{"center": [1.0, 2.0, 0.5], "size": [4.0, 2.0, 1.5], "yaw": yaw, "label": "car"}]
    pred = [{"center": [1.0, 2.0, 0.5], "size": [4.0, 2.0, 1.5], "rotation": q, "label": "car"}]
    assert rpx_iou("cuboid", pred, gt)[0, 0] == pytest.approx(1.0, abs=1e-12)


def star(rng, center, radius: float, n: int) -> list[list[float]]:
    angles = np.sort(rng.uniform(0, 2 * np.pi, n))
    radii = radius * rng.uniform(0.4, 1.0, n)
    return [[float(center[0] + r * math.cos(a)), float(center[1] + r * math.sin(a))]
            for a, r in zip(angles, radii, strict=True)]


def random_polygon(rng, center, radius: float) -> list:
    """A multi-polygon of 8-30 vertex star-shaped rings; sometimes a hole, a second part
    (overlapping or not), a bowtie, a ring collapsed to a line, a closed ring."""
    kind = int(rng.integers(0, 7))
    ring = star(rng, center, radius, int(rng.integers(8, 31)))
    if kind == 1:  # a hole
        return [{"exterior": ring, "holes": [star(rng, center, radius * 0.25, 6)]}]
    if kind == 2:  # a second part, maybe overlapping
        shift = rng.uniform(-1.5, 1.5, 2) * radius
        return [ring, star(rng, (center[0] + shift[0], center[1] + shift[1]), radius * 0.6, 10)]
    if kind == 3:  # a bowtie
        x, y = center
        return [[[x - radius, y - radius], [x + radius, y + radius], [x + radius, y - radius],
                 [x - radius, y + radius]]]
    if kind == 4:  # a part collapsed to a line, beside a real one
        x, y = center
        return [ring, [[x, y], [x + radius, y], [x + 2 * radius, y]]]
    if kind == 5:  # closed ring (the first point repeated)
        return [[*ring, ring[0]]]
    return [ring]


@pytest.mark.parametrize("seed", range(4))
def test_polygon_iou_equals_shapely(seed: int) -> None:
    rng = np.random.default_rng(seed)
    centers = rng.uniform(0, 60, (12, 2))
    gt = [{"polygons": random_polygon(rng, c, float(rng.uniform(3, 15))), "label": "a"} for c in centers]
    pred = [{"polygons": random_polygon(rng, c + rng.normal(0, 3, 2), float(rng.uniform(3, 15))),
             "label": "a"} for c in np.concatenate([centers, rng.uniform(0, 60, (8, 2))])]
    pred.append({"polygons": gt[0]["polygons"], "label": "a"})  # an exact copy
    got = rpx_iou("polygon", pred, gt)
    want = np.array([[shapely_iou(shape_of("polygon", p), shape_of("polygon", g)) for g in gt] for p in pred])
    assert got == pytest.approx(want, abs=1e-9)
    assert got[-1, 0] == pytest.approx(1.0, abs=1e-12) and (got > 0).sum() > 15


def test_bowtie_has_area_2_after_repair() -> None:
    bowtie = [[0, 0], [2, 2], [2, 0], [0, 2]]
    square = [[0, 0], [2, 0], [2, 2], [0, 2]]
    assert shapely.Polygon(bowtie).area == 0.0  # the shoelace of the raw ring: lobes cancel
    assert shapely.Polygon(bowtie).buffer(0).area == 1.0  # buffer(0) drops a lobe
    # both lobes kept: IoU with the 2 x 2 square = 2 / 4
    assert rpx_iou("polygon", [{"polygons": [square], "label": "a"}],
                   [{"polygons": [bowtie], "label": "a"}])[0, 0] == 0.5
    polygon = KINDS["polygon"]
    values, _ = polygon.pair(
        polygon.read_rpx(json.dumps([{"polygons": [bowtie], "label": "a", "score": 1}]).encode(),
                         "p", prediction=True, params={}),
        polygon.read_rpx(b"[]", "g", prediction=False, params={}), None, pred_path=None, gt_path="")
    frame, n_repaired = values["frame"], values["n_repaired"]
    assert frame.pred.area.tolist() == [2.0] and n_repaired == 1


def test_repairs_are_counted_per_row_and_in_aggregate(rpx, tmp_path: Path) -> None:
    square = [[0, 0], [4, 0], [4, 4], [0, 4]]
    gt = [{"polygons": [[[0, 0], [2, 2], [2, 0], [0, 2]]], "label": "a"},  # bowtie: repaired
          {"polygons": [square, [[2, 2], [6, 2], [6, 6], [2, 6]]], "label": "a"},  # overlap: unioned
          {"polygons": [[[10, 10], [12, 10], [12, 12]], [[20, 20], [21, 20], [22, 20]]],
           "label": "a"},  # a collapsed ring dropped
          {"polygons": [[[30, 30], [31, 30], [31, 31]], [[40, 40], [41, 40], [41, 41]]],
           "label": "a"}]  # two valid parts: not a repair
    pred = [{"polygons": [[[0, 0], [4, 0], [4, 4], [2, 4]]], "label": "a", "score": 0.9}]
    write_json_pair(tmp_path, "a", gt, pred)
    write_json_pair(tmp_path, "b", [{"polygons": [square], "label": "a"}], pred)
    report = rpx(f"eval detection {dirs(tmp_path)} --geometry polygon").json
    assert [row["n_repaired"] for row in report["rows"]] == [3, 0]
    assert report["aggregate"]["n_repaired"] == 3
    assert report["metric_info"]["n_repaired"]["direction"] == "none"


def test_a_polygon_collapsed_entirely_has_no_area(rpx, tmp_path: Path) -> None:
    line = [[0, 0], [1, 1], [2, 2]]
    write_json_pair(tmp_path, "a", [{"polygons": [line], "label": "a"}],
                    [{"polygons": [line], "label": "a", "score": 0.9}])
    report = rpx(f"eval detection {dirs(tmp_path)} --geometry polygon").json
    assert report["rows"][0]["tp"] == 0 and report["rows"][0]["n_repaired"] == 2


# --- whole reports ---------------------------------------------------------------------------


def dyadic_frames(seed: int) -> list[tuple[str, list, list]]:
    """generated_detections (crowd regions, ties, a class only predicted, empty frames) on
    a grid of 0.5: centres and sizes are then exact in both forms."""
    frames = []
    for stem, gt, pred in generated_detections(seed, n_images=20):
        def snap(objects):
            out = []
            for o in objects:
                x1, y1, x2, y2 = (round(v * 2) / 2 for v in o["bbox"])
                out.append({**o, "bbox": [x1, y1, max(x2, x1 + 0.5), max(y2, y1 + 0.5)]})
            return out
        frames.append((stem, snap(gt), snap(pred)))
    return frames


def as_rotated(objects: list[dict]) -> list[dict]:
    out = []
    for o in objects:
        x1, y1, x2, y2 = o["bbox"]
        out.append({**o, "bbox": [(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1, 0]})
    return out


def as_cuboids(objects: list[dict]) -> list[dict]:
    out = []
    for o in objects:
        x1, y1, x2, y2 = o["bbox"]
        rest = {k: v for k, v in o.items() if k != "bbox"}
        out.append({**rest, "center": [(x1 + x2) / 2, (y1 + y2) / 2, 0.0], "size": [x2 - x1, y2 - y1, 1.0],
                    "yaw": 0.0})
    return out


SAME = ("aggregate", "dataset", "rows", "metric_info", "n_pairs", "unpaired", "errors")


@pytest.mark.parametrize(("geometry", "convert"), [("rotated", as_rotated), ("cuboid", as_cuboids)])
@pytest.mark.parametrize("flags", ["", "--iou-threshold 0.3 --conf-threshold 0.5 --skip-empty-gt"])
def test_axis_aligned_rotated_boxes_and_cuboids_equal_boxes_in_every_view(
        rpx, tmp_path: Path, geometry: str, convert, flags: str) -> None:
    for stem, gt, pred in dyadic_frames(3):
        write_json_pair(tmp_path / "box", stem, gt, pred)
        write_json_pair(tmp_path / geometry, stem, convert(gt), convert(pred))
    box = rpx(f"eval detection {dirs(tmp_path / 'box')} {flags}").json
    other = rpx(f"eval detection {dirs(tmp_path / geometry)} --geometry {geometry} {flags}").json
    for key in SAME:
        if key == "rows":
            for a, b in zip(box["rows"], other["rows"], strict=True):
                assert {k: v for k, v in a.items() if not k.endswith("_path")} == \
                    {k: v for k, v in b.items() if not k.endswith("_path")}
        else:
            assert box[key] == other[key], key
    assert box["dataset"]["coco"]["AP"] > 0.1 and box["dataset"]["pooled"]["tp"] > 10
    assert other["params"]["geometry"] == geometry and "geometry" not in box["params"]


def shaped_frames(geometry: str, seed: int, n_images: int = 16) -> list[tuple[str, list, list]]:
    """Frames in ``geometry``: up to 5 GT (one crowd region now and then), detections
    jittered around them (sometimes another class), free false positives, scores with ties;
    every object also carries its shape under "bbox" for the reference loops."""
    rng = np.random.default_rng(seed)
    labels = reference.LABELS

    def jitter(base: dict, label, **extra) -> dict:
        """A detection near ``base``: moved, resized and turned a little."""
        k = float(rng.uniform(0.85, 1.15))
        if geometry == "rotated":
            xc, yc, w, h, angle = base["bbox"]
            dx, dy, da = rng.normal(0, 1, 3)
            obj = {"bbox": [xc + float(dx), yc + float(dy), w * k, h * k, angle + 8 * float(da)]}
        elif geometry == "cuboid":
            (x, y, z), (length, width, height) = base["center"], base["size"]
            dx, dy, da = rng.normal(0, 1, 3)
            obj = {"center": [x + float(dx), y + float(dy), z], "size": [length * k, width * k, height],
                   "yaw": base["yaw"] + 0.15 * float(da)}
        else:
            shift = rng.normal(0, 1, 2)
            first = base["polygons"][0]
            cx, cy = np.mean(first["exterior"] if isinstance(first, dict) else first, axis=0)

            def moved(ring):  # scaled about the first ring's mean point, moved, vertices jittered
                noise = rng.normal(0, 0.3, (len(ring), 2)) + shift
                return [[float(cx + (x - cx) * k + e), float(cy + (y - cy) * k + f)]
                        for (x, y), (e, f) in zip(ring, noise, strict=True)]

            obj = {"polygons": [{"exterior": moved(p["exterior"]), "holes": [moved(h) for h in p["holes"]]}
                                if isinstance(p, dict) else moved(p) for p in base["polygons"]]}
        return {**obj, "label": label, **extra}

    def make(center, scale, label, **extra) -> dict:
        if geometry == "rotated":
            obj = {"bbox": [float(center[0]), float(center[1]), float(scale * rng.uniform(0.6, 1.6)),
                            float(scale * rng.uniform(0.4, 1.2)), float(rng.uniform(-90, 90))]}
        elif geometry == "cuboid":
            obj = {"center": [float(center[0]), float(center[1]), 0.0],
                   "size": [float(scale * rng.uniform(0.6, 1.6)), float(scale * rng.uniform(0.4, 1.2)), 1.5],
                   "yaw": float(rng.uniform(-math.pi, math.pi))}
        else:
            obj = {"polygons": random_polygon(rng, center, scale)}
        return {**obj, "label": label, **extra}

    frames = []
    for index in range(n_images):
        kind = index % 6  # 0: an empty GT file; 1: no detection
        gt, pred = [], []
        for _ in range(0 if kind == 0 else int(rng.integers(1, 6))):
            center, scale = rng.uniform(0, 60, 2), float(rng.uniform(5, 14))
            gt.append(make(center, scale, str(rng.choice(labels))))
            if kind != 1:
                for _ in range(int(rng.integers(0, 3))):
                    label = gt[-1]["label"] if rng.random() < 0.7 else str(rng.choice(labels))
                    pred.append(jitter(gt[-1], label, score=round(float(rng.random()), 1)))
        if kind != 1:
            for _ in range(int(rng.integers(0, 3))):
                pred.append(make(rng.uniform(0, 60, 2), float(rng.uniform(4, 12)), str(rng.choice(labels)),
                                 score=round(float(rng.random()), 1)))
        if index % 5 == 2:
            gt.append(make(rng.uniform(10, 50, 2), 25.0, str(rng.choice(labels)), iscrowd=1))
        rng.shuffle(pred)
        frames.append((f"img{index:03d}", gt, pred[:6]))
    return frames


def with_shape_keys(geometry: str, frames) -> list:
    """The reference loops read an object's geometry from "bbox": put an index there."""
    shapes: list = []
    out = []
    for stem, gt, pred in frames:
        def keyed(objects):
            items = []
            for o in objects:
                shapes.append(shape_of(geometry, o))
                items.append({**o, "bbox": len(shapes) - 1})
            return items
        out.append((stem, keyed(gt), keyed(pred)))
    return out, shapes


@pytest.mark.parametrize("geometry", ["rotated", "polygon", "cuboid"])
@pytest.mark.parametrize(("seed", "iou_t", "conf", "skip"), [(0, 0.5, 0.0, False), (1, 0.3, 0.4, True)])
def test_rows_pooled_and_confusion_equal_the_plain_loops(rpx, tmp_path: Path, monkeypatch, geometry: str,
                                                         seed: int, iou_t: float, conf: float,
                                                         skip: bool) -> None:
    """The loops of test_detection_reference.py with shapely's IoU: every row, the pooled
    figures and the confusion matrix on frames without crowd regions, and the confusion
    matrix (where the loops' crowd rule lives) on the same frames with them."""
    frames = shaped_frames(geometry, seed)
    no_crowd = [(stem, [g for g in gt if not g.get("iscrowd")], pred) for stem, gt, pred in frames]
    keyed, shapes = with_shape_keys(geometry, frames)
    monkeypatch.setattr(reference, "iou", lambda a, b: shapely_iou(shapes[a], shapes[b]))
    monkeypatch.setattr(reference, "ioa", lambda d, r: shapely_iou(shapes[d], shapes[r], crowd=True))
    flags = f"--geometry {geometry} --iou-threshold {iou_t} --conf-threshold {conf}" + \
        (" --skip-empty-gt" if skip else "")

    keyed_no_crowd = [(stem, [g for g in gt if not g.get("iscrowd")], pred) for stem, gt, pred in keyed]
    report = reference.run_detection(rpx, tmp_path / "plain", no_crowd, flags)
    reference.assert_matches_reference(report, reference.reference_report(keyed_no_crowd, iou_t, conf, skip))

    cells: dict = {}
    for _, gt, pred in keyed:
        if skip and not gt:  # a GT file holding only a crowd region is not empty
            continue
        for cell, n in reference.confusion_cells(gt, pred, iou_t, conf).items():
            cells[cell] = cells.get(cell, 0) + n
    confusion = reference.run_detection(rpx, tmp_path / "crowd", frames, flags)["dataset"]["confusion"]
    labels, matrix = confusion["labels"], np.array(confusion["matrix"])
    got = {(labels[r], labels[c]): int(matrix[r, c]) for r, c in zip(*np.nonzero(matrix), strict=True)}
    assert got == cells
    assert any(g.get("iscrowd") for _, gt, _ in frames for g in gt)


@pytest.mark.parametrize("seed", range(3))
def test_the_confusion_needs_only_the_pairs_it_settles(rpx, tmp_path: Path, monkeypatch, seed: int) -> None:
    """Polygon frames keep the pairs of different classes only where the class-agnostic
    assignment needs them: on crowded frames where most detections take another class
    (so the assignment crosses classes often), the confusion matrix equals the brute-force
    loop's with every IoU exact."""
    rng = np.random.default_rng(seed)
    frames = []
    for index in range(10):
        gt = [{"polygons": random_polygon(rng, rng.uniform(0, 30, 2), float(rng.uniform(6, 12))),
               "label": str(rng.choice(reference.LABELS))} for _ in range(5)]
        pred = [{"polygons": random_polygon(rng, rng.uniform(0, 30, 2), float(rng.uniform(6, 12))),
                 "label": str(rng.choice(reference.LABELS)), "score": round(float(rng.random()), 2)}
                for _ in range(6)]
        frames.append((f"f{index:02d}", gt, pred))
    keyed, shapes = with_shape_keys("polygon", frames)
    monkeypatch.setattr(reference, "iou", lambda a, b: shapely_iou(shapes[a], shapes[b]))
    monkeypatch.setattr(reference, "ioa", lambda d, r: shapely_iou(shapes[d], shapes[r], crowd=True))
    cells: dict = {}
    for _, gt, pred in keyed:
        for cell, n in reference.confusion_cells(gt, pred, 0.3, 0.2).items():
            cells[cell] = cells.get(cell, 0) + n
    report = reference.run_detection(rpx, tmp_path, frames, "--geometry polygon --iou-threshold 0.3 "
                                     "--conf-threshold 0.2")
    confusion = report["dataset"]["confusion"]
    labels, matrix = confusion["labels"], np.array(confusion["matrix"])
    got = {(labels[r], labels[c]): int(matrix[r, c]) for r, c in zip(*np.nonzero(matrix), strict=True)}
    assert got == cells
    assert sum(n for (a, b), n in cells.items() if a != b and "background" not in (a, b)) >= 3


def test_settled_entries_reach_the_exact_optimum() -> None:
    """Random matrices with upper bounds in place of some IoUs: the settled assignment's
    total equals the exact matrix's optimum, with the unsettled entries read as 0 too."""
    from scipy.optimize import linear_sum_assignment

    from rpx_cli.ops.geometry import settled_entries

    rng = np.random.default_rng(0)
    for _ in range(80):
        d, g = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        truth = np.where(rng.random((d, g)) < 0.5, rng.random((d, g)), 0.0)
        rows, cols = np.nonzero(truth)
        exact = rng.random(rows.size) < 0.4
        bounds = np.minimum(truth[rows, cols] * rng.uniform(1, 3, rows.size), 1.0)
        iou = np.where(exact, truth[rows, cols], bounds)
        values = truth[rows, cols]
        settled = settled_entries(rows, cols, (d, g), iou, exact, values.__getitem__)
        zeroed = np.zeros((d, g))
        zeroed[rows[settled], cols[settled]] = truth[rows[settled], cols[settled]]
        best = truth[linear_sum_assignment(truth, maximize=True)].sum()
        r, c = linear_sum_assignment(zeroed, maximize=True)
        assert zeroed[r, c].sum() == pytest.approx(best, abs=1e-12)
        assert truth[r, c].sum() == pytest.approx(best, abs=1e-12)


def pycoco_with_shapes(frames, shapes_of) -> dict:
    """pycocotools' COCOeval on per-stem frames (images 1..N in stem order) with its
    ``computeIoU`` replaced by shapely IoU of the objects' shapes (intersection over the
    detection's area for a crowd region, as pycocotools does for boxes and masks) and the
    areas by the shapes' areas."""
    labels = sorted({o["label"] for _, gt, pred in frames for o in gt + pred})
    cat = {label: i + 1 for i, label in enumerate(labels)}
    images, anns, dets = [], [], []
    for image_id, (_, gt, pred) in enumerate(sorted(frames, key=lambda f: f[0]), start=1):
        images.append({"id": image_id})
        for o in gt:
            shape = shapes_of(o)
            x1, y1, x2, y2 = shape.bounds
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": cat[o["label"]],
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "iscrowd": o.get("iscrowd", 0),
                         "area": shape.area, "shape": shape})
        for o in pred:
            shape = shapes_of(o)
            x1, y1, x2, y2 = shape.bounds
            dets.append({"image_id": image_id, "category_id": cat[o["label"]], "score": o["score"],
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "shape": shape})
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = {"images": images, "annotations": anns,
                        "categories": [{"id": i, "name": n} for n, i in cat.items()]}
        coco.createIndex()
        results = coco.loadRes(dets)
        for ann in results.dataset["annotations"]:
            ann["area"] = ann["shape"].area  # loadRes set the bounding box's
        evaluator = COCOeval(coco, results, "bbox")

        def compute_iou(image_id, category_id):
            gt = evaluator._gts[image_id, category_id]
            dt = evaluator._dts[image_id, category_id]
            if not gt or not dt:
                return []
            order = np.argsort([-d["score"] for d in dt], kind="mergesort")
            dt = [dt[i] for i in order][:evaluator.params.maxDets[-1]]
            return np.array([[shapely_iou(d["shape"], g["shape"], crowd=bool(g["iscrowd"])) for g in gt]
                             for d in dt])

        evaluator.computeIoU = compute_iou
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    out = {name: (None if value == -1 else value) for name, value in zip(STAT_NAMES, evaluator.stats,
                                                                          strict=True)}
    precision = evaluator.eval["precision"]
    for k, label in enumerate(labels):
        values = precision[:, :, k, 0, 2]
        out[f"class:{label}"] = float(values[values > -1].mean()) if (values > -1).any() else None
    return out


@pytest.mark.parametrize("geometry", ["rotated", "polygon", "cuboid"])
@pytest.mark.parametrize("seed", range(2))
def test_coco_equals_pycocotools_with_the_geometry_iou(rpx, tmp_path: Path, geometry: str, seed: int) -> None:
    frames = shaped_frames(geometry, seed + 10, n_images=24)
    if geometry == "polygon":  # polygons in pixels: every COCO area range gets objects
        frames = [(stem, [scale_polygon(o, 6) for o in gt], [scale_polygon(o, 6) for o in pred])
                  for stem, gt, pred in frames]
    for stem, gt, pred in frames:
        write_json_pair(tmp_path, stem, gt, pred)
    expected = pycoco_with_shapes(frames, lambda o: shape_of(geometry, o))
    report = rpx(f"eval detection {dirs(tmp_path)} --geometry {geometry} --metrics coco").json
    coco = report["dataset"]["coco"]
    for name in STAT_NAMES:
        assert coco[name] == pytest.approx(expected[name], abs=1e-9), name
    for label, entry in coco["per_class"].items():
        assert entry["AP"] == pytest.approx(expected[f"class:{label}"], abs=1e-9), label
    assert coco["AP"] > 0.05


def scale_polygon(o: dict, k: float) -> dict:
    def ring(points):
        return [[x * k, y * k] for x, y in points]

    parts = [{"exterior": ring(p["exterior"]), "holes": [ring(h) for h in p.get("holes", [])]}
             if isinstance(p, dict) else ring(p) for p in o["polygons"]]
    return {**o, "polygons": parts}


@pytest.mark.parametrize("geometry", ["rotated", "polygon", "cuboid"])
def test_jobs_and_shards_agree(rpx, tmp_path: Path, geometry: str) -> None:
    for stem, gt, pred in shaped_frames(geometry, 5, n_images=9):
        write_json_pair(tmp_path, stem, gt, pred)
    assert_jobs_and_shards_agree(rpx, f"eval detection {dirs(tmp_path)} --geometry {geometry}", tmp_path)


def test_class_map_and_missing_predictions_with_polygons(rpx, tmp_path: Path) -> None:
    square = [[0, 0], [4, 0], [4, 4], [0, 4]]
    far = [[10, 10], [14, 10], [14, 14], [10, 14]]
    write_json_pair(tmp_path, "a",
                    [{"polygons": [square], "label": "car"}, {"polygons": [far], "label": "tree"}],
                    [{"polygons": [far], "label": "tree", "score": 0.5},
                     {"polygons": [square], "label": "automobile", "score": 0.9}])
    write_json_pair(tmp_path, "b", [{"polygons": [square], "label": "car"}], None)
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"automobile": "car", "tree": None}))
    report = rpx(f"eval detection {dirs(tmp_path)} --geometry polygon --class-map {mapping} "
                 "--missing empty").json
    assert [(r["tp"], r["fp"], r["fn"]) for r in report["rows"]] == [(1, 0, 0), (0, 0, 1)]
    assert report["dataset"]["confusion"]["labels"] == ["car", "background"]


def test_params_record_the_geometry(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", [{"bbox": [1, 1, 2, 2, 10], "label": "a"}],
                    [{"bbox": [1, 1, 2, 2, 10], "label": "a", "score": 1}])
    run = rpx(f"eval detection {dirs(tmp_path)} --geometry rotated --angle-unit rad")
    rotated_params = run.json["params"]
    assert rotated_params["geometry"] == "rotated" and rotated_params["angle_unit"] == "rad"
    assert "box_format" not in rotated_params


# --- errors ----------------------------------------------------------------------------------


def det(**fields) -> dict:
    return {**fields, "label": "a", "score": 1}


NAN, INF = float("nan"), float("inf")
TRIANGLE = [[0, 0], [1, 0], [1, 1]]


@pytest.mark.parametrize(("geometry", "objects", "message"), [
    ("rotated", [det(bbox=[0, 0, 1, 1])], "object 0: 'bbox' must be five numbers"),
    ("rotated", [det(bbox=[0, 0, 1, 1, 0]), det(bbox=[0, 0, 0, 1, 0])],
     "object 1: the width and height must be at least 1e-06"),
    ("rotated", [det(bbox=[0, 0, 1, NAN, 0])], "object 0: 'bbox' has a non-finite"),
    ("rotated", [{"label": "a", "score": 1}], "object 0: missing 'bbox'"),
    ("cuboid", [det(center=[0, 0], size=[1, 1, 1], yaw=0)], "object 0: 'center' must be three numbers"),
    ("cuboid", [det(center=[0, 0, 0], size=[1, 0, 1], yaw=0)], "object 0: every size must be at least 1e-06"),
    ("cuboid", [det(center=[0, 0, 0], size=[1, 1, 1])], "object 0: give 'yaw' (radians) or 'rotation'"),
    ("cuboid", [det(center=[0, 0, 0], size=[1, 1, 1], yaw=INF)], "object 0: 'yaw' must be a finite number"),
    ("cuboid", [det(center=[0, 0, 0], size=[1, 1, 1], rotation=[0, 0, 0, 0])],
     "object 0: 'rotation' must be a finite non-zero quaternion"),
    ("polygon", [det(polygons=[TRIANGLE]), det(polygons=[TRIANGLE, [[0, 0], [1, 0], [0, 0]]])],
     "object 1: ring 0 of polygon 1 has 2 point(s)"),
    ("polygon", [det(polygons=[[[0, 0], [1, NAN], [1, 1]]])],
     "object 0: ring 0 of polygon 0 has a non-finite coordinate"),
    ("polygon", [det(polygons=[[[0, 0, 0], [1, 0, 0], [1, 1, 0]]])],
     "object 0: ring 0 of polygon 0: points must be [x, y]"),
    ("polygon", [det(polygons=[])], "object 0: 'polygons' must be a non-empty list"),
    ("polygon", [det(polygons=[{"exterior": TRIANGLE, "holes": [[[0, 0], [1, 1]]]}])],
     "object 0: ring 1 of polygon 0 has 2 point(s)"),
    ("polygon", [det(polygons=[{"outer": []}])], 'object 0: polygon 0 must be {"exterior"'),
])
def test_input_errors_name_the_file_and_the_object(rpx, tmp_path: Path, geometry: str, objects,
                                                   message: str) -> None:
    write_json_pair(tmp_path, "a", [], objects)
    run = rpx(f"eval detection {dirs(tmp_path)} --geometry {geometry}")
    assert run.exit_code == 1 and "Traceback" not in run.stderr, run.stderr
    lines = [line for line in run.stderr.splitlines() if "pred/a.json" in line]
    assert lines and message in lines[0], run.stderr


def test_gt_area_and_crowd_flags_are_checked(rpx, tmp_path: Path) -> None:
    for extra, message in (({"area": float("nan")}, "object 0: 'area' must be a finite number >= 0"),
                           ({"area": -1}, "object 0: 'area' must be a finite number >= 0"),
                           ({"iscrowd": "yes"}, "object 0: 'iscrowd' must be 0, 1, true or false"),
                           ({"iscrowd": 2}, "object 0: 'iscrowd' must be 0, 1, true or false")):
        write_json_pair(tmp_path, "a", [{"bbox": [1, 1, 2, 2, 0], "label": "a", **extra}], [])
        run = rpx(f"eval detection {dirs(tmp_path)} --geometry rotated")
        assert run.exit_code == 1 and message in run.stderr and "gt/a.json" in run.stderr, run.stderr


def test_box_geometry_with_five_numbers_hints_at_rotated(rpx, tmp_path: Path) -> None:
    write_json_pair(tmp_path, "a", [], [{"bbox": [0, 0, 1, 1, 30], "label": "a", "score": 1}])
    run = rpx(f"eval detection {dirs(tmp_path)}")
    assert run.exit_code == 1 and "need --geometry rotated" in run.stderr


def test_polygon_without_shapely_is_one_line_naming_the_extra(rpx, tmp_path: Path, monkeypatch) -> None:
    write_json_pair(tmp_path, "a", [{"polygons": [[[0, 0], [1, 0], [1, 1]]], "label": "a"}], [])
    monkeypatch.setitem(sys.modules, "shapely", None)  # import shapely -> ImportError
    run = rpx(f"eval detection {dirs(tmp_path)} --geometry polygon")
    assert run.exit_code == 1 and run.stdout == "" and "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'rpx-eval[geometry]'" in lines[0], run.stderr
    # rotated boxes and cuboids never need it
    write_json_pair(tmp_path / "r", "a", [{"bbox": [0, 0, 1, 1, 10], "label": "a"}], [])
    assert rpx(f"eval detection {dirs(tmp_path / 'r')} --geometry rotated").exit_code == 0


def test_polygon_shards_merge_without_shapely(rpx, tmp_path: Path, monkeypatch) -> None:
    """A --shard part carries each frame's intersections: merging needs no shapely."""
    for stem, gt, pred in shaped_frames("polygon", 3, n_images=6):
        write_json_pair(tmp_path, stem, gt, pred)
    whole = rpx(f"eval detection {dirs(tmp_path)} --geometry polygon").json
    parts = [tmp_path / f"part{k}.json" for k in (1, 2)]
    for k, part in enumerate(parts, 1):
        run = rpx(f"eval detection {dirs(tmp_path)} --geometry polygon --shard {k}/2 -o {part}")
        assert run.exit_code == 0, run.stderr
    monkeypatch.setitem(sys.modules, "shapely", None)
    merged = rpx(["merge", *parts])
    assert merged.exit_code == 0, merged.stderr
    for key in ("aggregate", "dataset", "rows"):
        assert merged.json[key] == whole[key], key


def test_coco_files_are_boxes_only(rpx, tmp_path: Path) -> None:
    gt = {"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": [], "categories": [{"id": 1}]}
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text("[]")
    run = rpx(f"eval detection --coco-gt {tmp_path / 'gt.json'} --coco-dt {tmp_path / 'dt.json'} "
              "--geometry rotated")
    assert run.exit_code == 2 and "reads per-stem files" in run.stderr


def test_tide_errors_are_boxes_only(rpx, tmp_path: Path) -> None:
    for stem, gt, pred in dyadic_frames(1):
        write_json_pair(tmp_path, stem, gt, pred)
    assert rpx(f"eval detection {dirs(tmp_path)} --metrics errors").exit_code == 0
    run = rpx(f"eval detection {dirs(tmp_path)} --metrics errors --geometry rotated")
    assert run.exit_code == 2 and "--metrics errors (TIDE) is for axis-aligned boxes" in run.stderr
    assert not run.stdout


# --- scale -----------------------------------------------------------------------------------


def test_a_frame_of_500_by_500_rotated_boxes(rpx, tmp_path: Path) -> None:
    """No Python loop over pairs: 250,000 pairs of one frame screened and clipped at once
    (a loop over pairs in Python would take minutes)."""
    rng = np.random.default_rng(0)
    gt = random_rotated(rng, 500)
    for o in gt:
        o["bbox"][:2] = [float(v) for v in rng.uniform(0, 400, 2)]
    pred = [{**o, "bbox": [o["bbox"][0] + float(rng.normal(0, 2)), o["bbox"][1] + float(rng.normal(0, 2)),
                           *o["bbox"][2:]], "score": 0.5} for o in gt]
    start = time.perf_counter()
    matrix = rpx_iou("rotated", pred, gt)
    assert time.perf_counter() - start < 10
    sample = rng.choice(500, 40, replace=False)
    want = np.array([[shapely_iou(shape_of("rotated", pred[i]), shape_of("rotated", gt[j])) for j in sample]
                     for i in sample])
    assert matrix[np.ix_(sample, sample)] == pytest.approx(want, abs=1e-9)
    write_json_pair(tmp_path, "big", gt, pred)
    start = time.perf_counter()
    report = rpx(f"eval detection {dirs(tmp_path)} --geometry rotated").json
    assert time.perf_counter() - start < 30
    assert report["rows"][0]["tp"] > 250


# --- the documented commands ------------------------------------------------------------------


def _documented() -> list[str]:
    """Every ``rpx eval detection`` line of docs/detection.md, and those of the README with
    ``--geometry``."""
    lines = []
    for doc in (ROOT / "docs" / "detection.md", ROOT / "README.md"):
        for block in re.findall(r"```sh\n(.*?)```", doc.read_text(), re.S):
            lines += [line for line in shell_commands(block) if line.startswith("rpx eval detection ")
                      and (doc.name == "detection.md" or "--geometry" in line)]
    return lines


def test_the_docs_show_every_geometry() -> None:
    lines = _documented()
    assert all(any(f"--geometry {g}" in line for line in lines) for g in ("rotated", "polygon", "cuboid"))

# (tests/test_docs_commands.py runs every one of them, in a scratch folder)
