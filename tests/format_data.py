"""One generated detection dataset written in every format rpx reads (the equality rule of
docs/formats.md): random boxes, rotated boxes, polygons and keypoints on images of a few
sizes, several classes, difficult GT, empty images; coordinates are dyadic (quarters of a
pixel on images whose sides are powers of two) so that normalising and converting them is
exact, and every format holds exactly the same objects as the COCO files."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

NAMES = ["bird", "car", "cat", "dog"]  # sorted: the vocabulary order of every format
SIZES = [(512, 256), (256, 256), (512, 512)]  # (W, H)
K = 5  # keypoints per object (pose)


@dataclass
class Obj:
    label: int
    box: tuple[float, float, float, float]  # x1 y1 x2 y2 pixels
    score: float | None = None
    difficult: bool = False
    angle: float = 0.0  # degrees, counter-clockwise on screen (rotated / obb)
    keypoints: np.ndarray | None = None  # (K, 3)

    def quad(self) -> np.ndarray:
        x1, y1, x2, y2 = self.box
        cx, cy, w, h = (x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1
        t = math.radians(self.angle)
        ux, uy = math.cos(t), -math.sin(t)  # w axis on screen (y down)
        vx, vy = math.sin(t), math.cos(t)
        corners = [(-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2)]
        return np.array([[cx + a * ux + b * vx, cy + a * uy + b * vy] for a, b in corners])


@dataclass
class Image:
    stem: str
    size: tuple[int, int]
    gt: list[Obj] = field(default_factory=list)
    pred: list[Obj] = field(default_factory=list)
    # KITTI DontCare regions (x1 y1 x2 y2): crowd regions of every class
    regions: list[tuple[float, float, float, float]] = field(default_factory=list)


def quarter(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.round(rng.uniform(low, high) * 4) / 4)


def dataset(seed: int = 0, n: int = 12, *, difficult: bool = False, rotated: bool = False,
            keypoints: bool = False, regions: bool = False) -> list[Image]:
    """``regions``: DontCare regions (KITTI) with detections of several classes on and
    around them."""
    rng = np.random.default_rng(seed)
    images = []
    for i in range(n):
        w, h = SIZES[i % len(SIZES)]
        image = Image(f"img{i:03d}", (w, h))
        n_gt = 0 if i % 5 == 4 else int(rng.integers(1, 5))
        for _ in range(n_gt):
            if rotated:  # away from the edges: corners stay inside the image at any angle
                x1, y1 = quarter(rng, w / 4, w / 2), quarter(rng, h / 4, h / 2)
                x2, y2 = x1 + quarter(rng, 8, w / 6), y1 + quarter(rng, 8, h / 6)
            else:
                x1, y1 = quarter(rng, 8, w / 2), quarter(rng, 8, h / 2)
                x2, y2 = x1 + quarter(rng, 8, w / 3), y1 + quarter(rng, 8, h / 3)
            angle = float(rng.choice([0, 15, 30, 45, 90, -20])) if rotated else 0.0
            obj = Obj(int(rng.integers(0, len(NAMES))), (x1, y1, x2, y2),
                      difficult=difficult and bool(rng.random() < 0.25), angle=angle)
            if keypoints:
                obj.keypoints = _points(rng, obj.box)
            image.gt.append(obj)
            for _ in range(int(rng.integers(0, 3))):  # detections near it
                dx, dy = quarter(rng, -4, 4), quarter(rng, -4, 4)
                box = (max(x1 + dx, 0.0), max(y1 + dy, 0.0), min(x2 + dx, w - 1.0), min(y2 + dy, h - 1.0))
                label = obj.label if rng.random() < 0.8 else int(rng.integers(0, len(NAMES)))
                det = Obj(label, box, score=float(np.round(rng.random(), 3)), angle=angle)
                if keypoints:
                    det.keypoints = _points(rng, box, predicted=True)
                image.pred.append(det)
        if rng.random() < 0.5:  # a background detection
            x1, y1 = quarter(rng, w / 4, w / 2), quarter(rng, h / 4, h / 2)
            det = Obj(int(rng.integers(0, len(NAMES))), (x1, y1, x1 + 16, y1 + 16),
                      score=float(np.round(rng.random(), 3)))
            if keypoints:
                det.keypoints = _points(rng, det.box, predicted=True)
            image.pred.append(det)
        if regions and rng.random() < 0.7:
            x1, y1 = quarter(rng, w / 2, w - 40), quarter(rng, h / 2, h - 40)
            region = (x1, y1, x1 + quarter(rng, 12, 36), y1 + quarter(rng, 12, 36))
            image.regions.append(region)
            for _ in range(int(rng.integers(1, 4))):  # detections of any class, in and out
                dx, dy = quarter(rng, -8, 16), quarter(rng, -8, 16)
                box = (region[0] + dx, region[1] + dy, region[0] + dx + 8, region[1] + dy + 8)
                image.pred.append(Obj(int(rng.integers(0, len(NAMES))), box,
                                      score=float(np.round(rng.random(), 3))))
        images.append(image)
    return images


def _points(rng, box, predicted: bool = False) -> np.ndarray:
    x1, y1, x2, y2 = box
    points = np.zeros((K, 3))
    for k in range(K):
        points[k] = (quarter(rng, x1, x2), quarter(rng, y1, y2), 2.0)
        if not predicted and rng.random() < 0.2:
            points[k] = (0.0, 0.0, 0.0)
    return points


# --- writers ------------------------------------------------------------------------------------


def _folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return root


def _num(value: float) -> str:
    return repr(float(value))


def write_yolo(images: list[Image], root: Path, side: str, form: str = "box") -> Path:
    """``form``: box (detect), polygon (segment: the box's four corners), quad (obb),
    keypoints (pose)."""
    folder = _folder(root)
    for image in images:
        w, h = image.size
        lines = []
        for obj in getattr(image, side):
            x1, y1, x2, y2 = obj.box
            if form == "box" or form == "keypoints":
                fields = [(x1 + x2) / 2 / w, (y1 + y2) / 2 / h, (x2 - x1) / w, (y2 - y1) / h]
                if form == "keypoints":
                    for px, py, v in obj.keypoints:
                        fields += [px / w, py / h, v]
            elif form == "quad":
                fields = [c for x, y in obj.quad() for c in (x / w, y / h)]
            else:
                fields = [c for x, y in ((x1, y1), (x2, y1), (x2, y2), (x1, y2)) for c in (x / w, y / h)]
            if obj.score is not None:
                fields.append(obj.score)
            lines.append(" ".join([str(obj.label), *map(_num, fields)]))
        (folder / f"{image.stem}.txt").write_text("\n".join(lines) + ("\n" if lines else ""))
    return folder


def write_data_yaml(path: Path, kpt: bool = False) -> Path:
    text = "path: .\nnames:\n" + "".join(f"  {i}: {name}\n" for i, name in enumerate(NAMES))
    if kpt:
        text += f"kpt_shape: [{K}, 3]\n"
    path.write_text(text)
    return path


def write_voc(images: list[Image], root: Path, side: str) -> Path:
    folder = _folder(root)
    for image in images:
        w, h = image.size
        parts = [f"<annotation><filename>{image.stem}.jpg</filename><size><width>{w}</width>"
                 f"<height>{h}</height><depth>3</depth></size>"]
        for obj in getattr(image, side):
            x1, y1, x2, y2 = obj.box
            score = "" if obj.score is None else f"<score>{_num(obj.score)}</score>"
            parts.append(f"<object><name>{NAMES[obj.label]}</name><difficult>{int(obj.difficult)}"
                         f"</difficult>{score}<bndbox><xmin>{_num(x1 + 1)}</xmin><ymin>{_num(y1 + 1)}"
                         f"</ymin><xmax>{_num(x2)}</xmax><ymax>{_num(y2)}</ymax></bndbox></object>")
        parts.append("</annotation>\n")
        (folder / f"{image.stem}.xml").write_text("".join(parts))
    return folder


def write_kitti(images: list[Image], root: Path, side: str) -> Path:
    folder = _folder(root)
    for image in images:
        lines = []
        for obj in getattr(image, side):
            x1, y1, x2, y2 = obj.box
            fields = [NAMES[obj.label], "0.00", "0", "-1.5", *map(_num, (x1, y1, x2, y2)),
                      "1.5", "1.6", "3.9", "1.0", "1.7", "20.0", "0.1"]
            if obj.score is not None:
                fields.append(_num(obj.score))
            lines.append(" ".join(fields))
        if side == "gt":
            for x1, y1, x2, y2 in image.regions:
                lines.append(" ".join(["DontCare", "-1", "-1", "-10", *map(_num, (x1, y1, x2, y2)),
                                       "-1", "-1", "-1", "-1000", "-1000", "-1000", "-10"]))
        (folder / f"{image.stem}.txt").write_text("\n".join(lines) + ("\n" if lines else ""))
    return folder


def write_dota(images: list[Image], root: Path, side: str) -> Path:
    folder = _folder(root)
    for image in images:
        lines = ["imagesource:generated", "gsd:0.5"]
        for obj in getattr(image, side):
            tail = str(int(obj.difficult)) if obj.score is None else _num(obj.score)
            lines.append(" ".join([*map(_num, obj.quad().reshape(-1)), NAMES[obj.label], tail]))
        (folder / f"{image.stem}.txt").write_text("\n".join(lines) + "\n")
    return folder


def write_labelme(images: list[Image], root: Path, side: str) -> Path:
    folder = _folder(root)
    for image in images:
        w, h = image.size
        shapes = []
        for obj in getattr(image, side):
            x1, y1, x2, y2 = obj.box
            shape = {"label": NAMES[obj.label], "points": [[x2, y2], [x1, y1]],
                     "shape_type": "rectangle", "flags": {}}
            if obj.score is not None:
                shape["score"] = obj.score
            shapes.append(shape)
        document = {"version": "5.4.1", "flags": {}, "shapes": shapes, "imagePath": f"{image.stem}.jpg",
                    "imageData": None, "imageWidth": w, "imageHeight": h}
        (folder / f"{image.stem}.json").write_text(json.dumps(document))
    return folder


def write_rpx(images: list[Image], root: Path, side: str, form: str = "box") -> Path:
    """rpx per-stem JSON: boxes, ``rotated`` [xc, yc, w, h, angle], or ``polygon`` quads."""
    folder = _folder(root)
    for image in images:
        objects = []
        for obj in getattr(image, side):
            x1, y1, x2, y2 = obj.box
            item = {"label": NAMES[obj.label]}
            if form == "rotated":
                item["bbox"] = [(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1, obj.angle]
            elif form == "polygon":
                item["polygons"] = [obj.quad().tolist()]
            else:
                item["bbox"] = [x1, y1, x2, y2]
            if obj.score is not None:
                item["score"] = obj.score
            if obj.difficult:
                item["ignore"] = 1
            objects.append(item)
        if side == "gt":
            for x1, y1, x2, y2 in image.regions:
                objects.append({"label": "DontCare", "bbox": [x1, y1, x2, y2], "every_class": 1})
        (folder / f"{image.stem}.json").write_text(json.dumps(objects))
    return folder


def write_coco(images: list[Image], root: Path, form: str = "box") -> tuple[Path, Path]:
    """COCO instances (with ``ignore`` on difficult GT) and results. ``form``: box,
    polygon (segm: the box's corners) or keypoints (GT area 0.53 · w · h, as YOLO pose)."""
    root.mkdir(parents=True, exist_ok=True)
    gt = {"images": [], "annotations": [],
          "categories": [{"id": i + 1, "name": name} for i, name in enumerate(NAMES)]}
    results = []
    for image_id, image in enumerate(images, 1):
        w, h = image.size
        gt["images"].append({"id": image_id, "file_name": f"{image.stem}.jpg", "width": w, "height": h})
        for side in ("gt", "pred"):
            for obj in getattr(image, side):
                x1, y1, x2, y2 = obj.box
                item = {"image_id": image_id, "category_id": obj.label + 1,
                        "bbox": [x1, y1, x2 - x1, y2 - y1]}
                if form == "polygon":
                    item["segmentation"] = [[x1, y1, x2, y1, x2, y2, x1, y2]]
                    if side == "pred":
                        del item["bbox"]
                if form == "keypoints":
                    item["keypoints"] = obj.keypoints.reshape(-1).tolist()
                if side == "gt":
                    item.update(id=len(gt["annotations"]) + 1, iscrowd=0)
                    if form == "keypoints":
                        item["area"] = 0.53 * (x2 - x1) * (y2 - y1)
                        item["num_keypoints"] = int((obj.keypoints[:, 2] > 0).sum())
                    elif form == "box":
                        item["area"] = (x2 - x1) * (y2 - y1)
                    if obj.difficult:
                        item["ignore"] = 1
                    gt["annotations"].append(item)
                else:
                    item["score"] = obj.score
                    results.append(item)
        for x1, y1, x2, y2 in image.regions:  # DontCare: a crowd region in every category
            for category in range(1, len(NAMES) + 1):
                gt["annotations"].append({"id": len(gt["annotations"]) + 1, "image_id": image_id,
                                          "category_id": category, "iscrowd": 1,
                                          "bbox": [x1, y1, x2 - x1, y2 - y1],
                                          "area": (x2 - x1) * (y2 - y1)})
    (root / "instances.json").write_text(json.dumps(gt))
    (root / "results.json").write_text(json.dumps(results))
    return root / "instances.json", root / "results.json"


# --- files of the whole set ---------------------------------------------------------------------


def write_cvat(images: list[Image], path: Path, side: str, form: str = "box") -> Path:
    """One CVAT for images 1.1 XML: every image (``name`` = stem + ``.jpg``) with its
    objects as ``<box>`` (``form`` box; ``rotated``: the box turned by the object's angle,
    CVAT's ``rotation`` clockwise on screen) or ``<polygon>`` of the box's corners
    (``polygon``); a prediction's score as ``<attribute name="score">``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = ['<?xml version="1.0" encoding="utf-8"?>\n<annotations><version>1.1</version>'
             '<meta><task><name>generated</name></task></meta>']
    for index, image in enumerate(images):
        w, h = image.size
        parts.append(f'<image id="{index}" name="{image.stem}.jpg" width="{w}" height="{h}">')
        for obj in getattr(image, side):
            x1, y1, x2, y2 = obj.box
            score = "" if obj.score is None else f'<attribute name="score">{_num(obj.score)}</attribute>'
            label = NAMES[obj.label]
            if form == "polygon":
                points = ";".join(f"{_num(x)},{_num(y)}" for x, y in ((x1, y1), (x2, y1), (x2, y2), (x1, y2)))
                parts.append(f'<polygon label="{label}" source="manual" occluded="0" points="{points}" '
                             f'z_order="0">{score}</polygon>')
                continue
            rotation = f' rotation="{_num(-obj.angle)}"' if form == "rotated" and obj.angle else ""
            parts.append(f'<box label="{label}" source="manual" occluded="0" xtl="{_num(x1)}" '
                         f'ytl="{_num(y1)}" xbr="{_num(x2)}" ybr="{_num(y2)}"{rotation} z_order="0">'
                         f'{score}</box>')
        parts.append("</image>")
    parts.append("</annotations>\n")
    path.write_text("".join(parts))
    return path


OI_IDS = {name: f"/m/0{name}" for name in NAMES}  # Open Images class ids of the names


def write_openimages(images: list[Image], path: Path, side: str,
                     groups: list[tuple[str, int, tuple[float, float, float, float]]] = ()) -> Path:
    """An Open Images box CSV (normalised coordinates, class ids ``/m/0<name>``): GT with
    the challenge's columns, ``groups`` (stem, label, box) appended as IsGroupOf boxes;
    predictions with their columns in another order than the GT's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if side == "gt":
        lines = ["ImageID,Source,LabelName,Confidence,XMin,XMax,YMin,YMax,IsOccluded,IsTruncated,"
                 "IsGroupOf,IsDepiction,IsInside"]
    else:
        lines = ["XMin,ImageID,YMin,XMax,Score,YMax,LabelName"]
    sizes = {image.stem: image.size for image in images}
    rows = [(image.stem, obj.label, obj.box, obj.score, 0) for image in images
            for obj in getattr(image, side)]
    rows += [(stem, label, box, None, 1) for stem, label, box in groups]
    for stem, label, (x1, y1, x2, y2), score, group in rows:
        w, h = sizes[stem]
        xmin, xmax, ymin, ymax = (_num(v) for v in (x1 / w, x2 / w, y1 / h, y2 / h))
        if side == "gt":
            lines.append(f"{stem},xclick,{OI_IDS[NAMES[label]]},1,{xmin},{xmax},{ymin},{ymax},0,0,"
                         f"{group},0,0")
        else:
            lines.append(f"{xmin},{stem},{ymin},{xmax},{_num(score)},{ymax},{OI_IDS[NAMES[label]]}")
    path.write_text("\n".join(lines) + "\n")
    return path


def write_class_descriptions(path: Path) -> Path:
    path.write_text("".join(f"{OI_IDS[name]},{name}\n" for name in NAMES))
    return path


def write_voc_results(images: list[Image], root: Path, prefix: str = "comp4_det_test_") -> Path:
    """The devkit's per-class results files: ``image_id score xmin ymin xmax ymax``, 1-based."""
    folder = _folder(root)
    for label, name in enumerate(NAMES):
        lines = [" ".join([image.stem, _num(obj.score), _num(obj.box[0] + 1), _num(obj.box[1] + 1),
                           _num(obj.box[2]), _num(obj.box[3])])
                 for image in images for obj in image.pred if obj.label == label]
        (folder / f"{prefix}{name}.txt").write_text("".join(line + "\n" for line in lines))
    return folder


def write_task1(images: list[Image], root: Path) -> Path:
    """DOTA Task1 results: ``Task1_<class>.txt`` of ``image score x1 y1 ... x4 y4``."""
    folder = _folder(root)
    for label, name in enumerate(NAMES):
        lines = [" ".join([image.stem, _num(obj.score), *map(_num, obj.quad().reshape(-1))])
                 for image in images for obj in image.pred if obj.label == label]
        (folder / f"Task1_{name}.txt").write_text("".join(line + "\n" for line in lines))
    return folder


def by_class(images: list[Image]) -> list[Image]:
    """The same images with each one's detections in class order (stable): the order a
    per-class results set hands them over in."""
    return [Image(image.stem, image.size, image.gt, sorted(image.pred, key=lambda obj: obj.label),
                  image.regions) for image in images]
