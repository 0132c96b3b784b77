"""Writing COCO panoptic sets (JSON + RGB id PNGs) for the tests, the fixtures and the
benchmark: images given as id maps with their segments, and a generator of random scenes
with the cases panopticapi's rules turn on (split and merged segments, VOID, crowd regions,
IoU exactly 0.5, categories only in predictions)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

CATEGORIES = [
    {"id": 1, "name": "person", "isthing": 1},
    {"id": 3, "name": "car", "isthing": 1},
    {"id": 7, "name": "bicycle", "isthing": 1},
    {"id": 21, "name": "road", "isthing": 0},
    {"id": 23, "name": "sky", "isthing": 0},
    {"id": 27, "name": "grass", "isthing": 0},  # appears only in predictions of random sets
]


def id_rgb(ids: np.ndarray) -> np.ndarray:
    ids = ids.astype(np.uint32)
    return np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)


def write_id_png(path: Path, ids: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(id_rgb(ids), "RGB").save(path)


@dataclass
class Side:
    """One image on one side: its id map and segments ``{id: (category_id, iscrowd)}``."""

    ids: np.ndarray
    segments: dict[int, tuple[int, int]] = field(default_factory=dict)

    def info(self, *, area: bool) -> list[dict[str, Any]]:
        out = []
        for sid, (category, crowd) in self.segments.items():
            item: dict[str, Any] = {"id": int(sid), "category_id": int(category), "iscrowd": int(crowd)}
            if area:
                item["area"] = int(np.count_nonzero(self.ids == sid))
            out.append(item)
        return out


def write_set(root: Path, images: list[tuple[str, Side, Side]], *,
              categories: list[dict[str, Any]] | None = None,
              image_ids: list[Any] | None = None) -> dict[str, Path]:
    """``root/{gt.json, gt/, pred.json, pred/}`` for ``(name, gt, pred)`` images; returns the
    four paths by flag name."""
    categories = CATEGORIES if categories is None else categories
    gt_anns, pred_anns = [], []
    for i, (name, gt, pred) in enumerate(images):
        image_id = (image_ids or list(range(1, len(images) + 1)))[i]
        write_id_png(root / "gt" / f"{name}.png", gt.ids)
        write_id_png(root / "pred" / f"{name}.png", pred.ids)
        gt_anns.append({"image_id": image_id, "file_name": f"{name}.png",
                        "segments_info": gt.info(area=True)})
        pred_anns.append({"image_id": image_id, "file_name": f"{name}.png",
                          "segments_info": pred.info(area=False)})
    root.mkdir(parents=True, exist_ok=True)
    (root / "gt.json").write_text(json.dumps({
        "images": [{"id": a["image_id"], "file_name": a["file_name"]} for a in gt_anns],
        "annotations": gt_anns, "categories": categories}, indent=1))
    (root / "pred.json").write_text(json.dumps({"annotations": pred_anns}, indent=1))
    return {"gt_json": root / "gt.json", "gt_dir": root / "gt", "pred_json": root / "pred.json",
            "pred_dir": root / "pred"}


def flags(paths: dict[str, Path]) -> list[str]:
    return [word for key in ("gt_json", "gt_dir", "pred_json", "pred_dir")
            for word in (f"--{key.replace('_', '-')}", str(paths[key]))]


def random_scene(rng: np.random.Generator, height: int = 48, width: int = 64,
                 n_things: int = 6) -> tuple[Side, Side]:
    """A GT scene (sky over road, things as rectangles, a crowd region, VOID bands) and a
    prediction with the situations panopticapi's rules distinguish."""
    gt = Side(np.zeros((height, width), np.int64))
    horizon = int(rng.integers(height // 3, height // 2))
    next_id = iter(range(1000, 10 ** 6, int(rng.integers(1, 50000))))

    def add(side: Side, mask: np.ndarray, category: int, crowd: int = 0) -> int:
        sid = next(next_id)
        side.ids[mask] = sid
        side.segments[sid] = (category, crowd)
        return sid

    rows, cols = np.mgrid[0:height, 0:width]
    add(gt, rows < horizon, 23)
    add(gt, rows >= horizon, 21)
    for _ in range(n_things):
        h, w = int(rng.integers(4, 14)), int(rng.integers(4, 14))
        top, left = int(rng.integers(0, height - h)), int(rng.integers(0, width - w))
        add(gt, (rows >= top) & (rows < top + h) & (cols >= left) & (cols < left + w),
            int(rng.choice([1, 3, 7])), crowd=int(rng.random() < 0.15))
    gt.ids[rng.random((height, width)) < 0.03] = 0  # VOID speckle
    gt.ids[:, : int(rng.integers(0, 4))] = 0  # a VOID band
    gt.segments = {s: v for s, v in gt.segments.items() if np.any(gt.ids == s)}

    pred = Side(np.zeros_like(gt.ids))
    for sid, (category, crowd) in gt.segments.items():
        mask = gt.ids == sid
        kind = rng.random()
        if crowd and kind < 0.5:  # a prediction on a crowd region: ignored, not an FP
            add(pred, mask, category)
            continue
        if kind < 0.08:  # missed
            continue
        if kind < 0.16:  # split in two halves along the columns
            cut = int(np.median(cols[mask]))
            add(pred, mask & (cols < cut), category)
            add(pred, mask & (cols >= cut), category)
            continue
        if kind < 0.22:  # wrong category
            add(pred, mask, 7 if category != 7 else 1)
            continue
        grown = mask.copy()
        shift = int(rng.integers(-2, 3))
        grown = np.roll(grown, shift, axis=int(rng.integers(0, 2)))
        add(pred, grown, category)
    # merged: two GT things predicted as one segment
    things = [s for s, (c, crowd) in gt.segments.items() if c in (1, 3, 7) and not crowd]
    if len(things) >= 2 and rng.random() < 0.5:
        mask = np.isin(gt.ids, things[:2])
        add(pred, mask, gt.segments[things[0]][0])
    # a hallucination mostly on VOID (ignored) and one on grass (a category only predicted)
    add(pred, (gt.ids == 0) & (rows < horizon + 3), 1)
    top, left = int(rng.integers(0, height - 6)), int(rng.integers(0, width - 6))
    add(pred, (rows >= top) & (rows < top + 5) & (cols >= left) & (cols < left + 5), 27)
    pred.segments = {s: v for s, v in pred.segments.items() if np.any(pred.ids == s)}
    return gt, pred


def half_iou_pair() -> tuple[Side, Side]:
    """A person whose prediction covers half of it (IoU exactly 0.5: no match, strict >;
    an FN and an FP) and a car predicted but one pixel (IoU 63/64)."""
    gt = Side(np.zeros((8, 16), np.int64))
    gt.ids[:, :8] = 11  # 64 px
    gt.segments[11] = (1, 0)
    gt.ids[:, 8:] = 12
    gt.segments[12] = (3, 0)
    pred = Side(np.zeros_like(gt.ids))
    pred.ids[:4, :8] = 21  # 32 px, all inside the person: IoU = 32 / 64 = 0.5 exactly
    pred.segments[21] = (1, 0)
    pred.ids[:, 8:] = 22  # the car but one pixel: IoU 63 / 64
    pred.ids[0, 8] = 0
    pred.segments[22] = (3, 0)
    return gt, pred
