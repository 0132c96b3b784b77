"""Generated COCO-format sets for masks, keypoints and LVIS (tests and benchmarks): crowd
regions, score ties, empty images, GT areas that differ from the mask areas, polygons of
several parts, uncompressed and compressed RLE."""

from __future__ import annotations

import numpy as np


def _polygon(rng, cx, cy, r, n=None):
    n = n or int(rng.integers(3, 9))
    angles = np.sort(rng.uniform(0, 2 * np.pi, n))
    radii = r * rng.uniform(0.5, 1.0, n)
    xs, ys = cx + radii * np.cos(angles), cy + radii * np.sin(angles)
    return [round(float(v), 2) for pair in zip(xs, ys, strict=True) for v in pair]


def _rle(mask: np.ndarray, compressed: bool):
    import pycocotools.mask as mask_utils

    if compressed:
        rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
        return {"size": rle["size"], "counts": rle["counts"].decode("ascii")}
    flat = mask.flatten(order="F").astype(np.int64)
    change = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.concatenate(([0], change, [flat.size]))
    runs = np.diff(bounds).tolist()
    if flat.size and flat[0] == 1:
        runs = [0, *runs]
    return {"size": list(mask.shape), "counts": runs}


def _mask_of(rng, h, w, cx, cy, r):
    yy, xx = np.mgrid[0:h, 0:w]
    return ((xx - cx) ** 2 / max(r, 1) ** 2 + (yy - cy) ** 2 / max(r * rng.uniform(0.5, 1.5), 1) ** 2) <= 1


def segm_set(seed: int, n_images: int = 12, n_categories: int = 3, size=(48, 64),
             lvis: bool = False):
    """(GT dict, results list) for ``iouType="segm"`` (LVIS fields when ``lvis``)."""
    import pycocotools.mask as mask_utils

    rng = np.random.default_rng(seed)
    h, w = size
    images = [{"id": i + 1, "file_name": f"im{i:03d}.jpg", "height": h, "width": w}
              for i in range(n_images)]
    categories = [{"id": k + 1, "name": f"c{k}"} for k in range(n_categories)]
    anns, results = [], []
    for image in images:
        if image["id"] % 5 == 0:
            continue  # an empty image
        for _ in range(int(rng.integers(1, 5))):
            cx, cy, r = rng.uniform(5, w - 5), rng.uniform(5, h - 5), rng.uniform(3, 14)
            k = int(rng.integers(1, n_categories + 1))
            kind = rng.integers(0, 4)
            crowd = int(rng.random() < 0.12) if not lvis else 0
            if crowd or kind == 0:
                seg = _rle(_mask_of(rng, h, w, cx, cy, r), compressed=False)
            elif kind == 1:
                seg = _rle(_mask_of(rng, h, w, cx, cy, r), compressed=True)
            else:
                seg = [_polygon(rng, cx, cy, r)]
                if kind == 3:
                    seg.append(_polygon(rng, cx + r, cy, r / 2))
            if isinstance(seg, list):
                rle = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
            elif isinstance(seg["counts"], str):
                rle = {"size": seg["size"], "counts": seg["counts"].encode()}
            else:
                rle = mask_utils.frPyObjects(seg, h, w)
            area = float(mask_utils.area(rle))
            if rng.random() < 0.3:
                area = float(area * rng.uniform(0.3, 3.0))  # a GT area that differs from the mask's
            x, y, bw, bh = mask_utils.toBbox(rle).tolist()
            anns.append({"id": len(anns) + 1, "image_id": image["id"], "category_id": k,
                         "segmentation": seg, "area": area, "bbox": [x, y, bw, bh], "iscrowd": crowd})
            for _ in range(int(rng.integers(0, 4))):
                m = _mask_of(rng, h, w, cx + rng.normal(0, 2), cy + rng.normal(0, 2),
                             r * rng.uniform(0.7, 1.3))
                kk = k if rng.random() < 0.8 else int(rng.integers(1, n_categories + 1))
                results.append({"image_id": image["id"], "category_id": kk,
                                "segmentation": _rle(m, True),
                                "score": float(rng.choice([0.3, 0.5, 0.9, round(rng.random(), 3)]))})
        for _ in range(int(rng.integers(0, 3))):  # false positives
            m = _mask_of(rng, h, w, rng.uniform(0, w), rng.uniform(0, h), rng.uniform(2, 10))
            results.append({"image_id": image["id"],
                            "category_id": int(rng.integers(1, n_categories + 1)),
                            "segmentation": _rle(m, True),
                            "score": float(rng.choice([0.5, round(rng.random(), 3)]))})
    gt = {"images": images, "annotations": anns, "categories": categories}
    if lvis:
        _lvis_fields(rng, gt)
    return gt, results


def _lvis_fields(rng, gt) -> None:
    n_categories = len(gt["categories"])
    for category in gt["categories"]:
        category["frequency"] = "rcf"[int(rng.integers(0, 3))]
    present: dict[int, set[int]] = {}
    for ann in gt["annotations"]:
        present.setdefault(ann["image_id"], set()).add(ann["category_id"])
    for image in gt["images"]:
        have = present.get(image["id"], set())
        others = [k for k in range(1, n_categories + 1) if k not in have]
        image["neg_category_ids"] = [k for k in others if rng.random() < 0.5]
        image["not_exhaustive_category_ids"] = [k for k in have if rng.random() < 0.3]


def box_set_lvis(seed: int, n_images: int = 15, n_categories: int = 6, per_image: int = 30):
    """(GT dict, results list) of boxes with LVIS fields; more detections than a small cap."""
    rng = np.random.default_rng(seed)
    images = [{"id": i + 1, "file_name": f"im{i:03d}.jpg", "height": 100, "width": 100}
              for i in range(n_images)]
    categories = [{"id": k + 1, "name": f"c{k}"} for k in range(n_categories)]
    anns, results = [], []
    for image in images:
        if image["id"] % 6 == 0:
            pass  # no GT, still negatives and detections
        else:
            for _ in range(int(rng.integers(1, 6))):
                x, y = rng.uniform(0, 80, 2)
                bw, bh = rng.uniform(2, 30, 2)
                k = int(rng.integers(1, n_categories + 1))
                area = float(bw * bh) if rng.random() > 0.1 else 0.0
                anns.append({"id": len(anns) + 1, "image_id": image["id"], "category_id": k,
                             "bbox": [float(x), float(y), float(bw), float(bh)], "area": area})
        for _ in range(per_image):
            x, y = rng.uniform(0, 80, 2)
            bw, bh = rng.uniform(0, 30, 2) if rng.random() > 0.05 else (0.0, 5.0)
            results.append({"image_id": image["id"], "category_id": int(rng.integers(1, n_categories + 1)),
                            "bbox": [float(x), float(y), float(bw), float(bh)],
                            "score": float(rng.choice([0.5, round(rng.random(), 2)]))})
    for ann in list(anns):
        if rng.random() < 0.5:  # a good detection of it
            x, y, bw, bh = ann["bbox"]
            results.append({"image_id": ann["image_id"], "category_id": ann["category_id"],
                            "bbox": [x + rng.normal(0, 1), y + rng.normal(0, 1), bw, bh],
                            "score": float(round(rng.random(), 2))})
    gt = {"images": images, "annotations": anns, "categories": categories}
    _lvis_fields(rng, gt)
    return gt, results


def keypoint_set(seed: int, n_images: int = 14, n_points: int = 17, n_categories: int = 1):
    """(GT dict, results list) for ``iouType="keypoints"``: GT with and without visible
    points (num_keypoints 0), crowd regions, detections with and without a bbox."""
    rng = np.random.default_rng(seed)
    images = [{"id": i + 1, "file_name": f"im{i:03d}.jpg", "height": 200, "width": 300}
              for i in range(n_images)]
    categories = [{"id": k + 1, "name": f"p{k}", "keypoints": [f"k{j}" for j in range(n_points)]}
                  for k in range(n_categories)]
    anns, results = [], []
    for image in images:
        if image["id"] % 7 == 0:
            continue
        for _ in range(int(rng.integers(1, 5))):
            x, y = rng.uniform(0, 250), rng.uniform(0, 150)
            bw, bh = rng.uniform(5, 120), rng.uniform(5, 120)
            px, py = x + rng.uniform(0, bw, n_points), y + rng.uniform(0, bh, n_points)
            v = rng.choice([0, 1, 2], n_points, p=[0.3, 0.2, 0.5])
            if rng.random() < 0.15:
                v[:] = 0
            if rng.random() < 0.15:
                v[:] = 2
            kps = []
            for j in range(n_points):
                kps += ([round(float(px[j]), 2), round(float(py[j]), 2), int(v[j])] if v[j] > 0
                        else [0.0, 0.0, 0])
            k = int(rng.integers(1, n_categories + 1))
            crowd = int(rng.random() < 0.1)
            anns.append({"id": len(anns) + 1, "image_id": image["id"], "category_id": k,
                         "keypoints": kps, "num_keypoints": int((v > 0).sum()),
                         "bbox": [float(x), float(y), float(bw), float(bh)],
                         "area": float(bw * bh * rng.uniform(0.4, 1.0)), "iscrowd": crowd})
            for _ in range(int(rng.integers(0, 4))):
                noise = rng.normal(0, rng.uniform(1, 15))
                d = []
                for j in range(n_points):
                    d += [round(float(px[j] + noise * rng.normal()), 2),
                          round(float(py[j] + noise * rng.normal()), 2), 1]
                item = {"image_id": image["id"], "category_id": k, "keypoints": d,
                        "score": float(rng.choice([0.4, 0.8, round(rng.random(), 3)]))}
                results.append(item)
        for _ in range(int(rng.integers(0, 3))):
            d = []
            for _j in range(n_points):
                d += [round(float(rng.uniform(0, 300)), 2), round(float(rng.uniform(0, 200)), 2), 1]
            results.append({"image_id": image["id"], "category_id": int(rng.integers(1, n_categories + 1)),
                            "keypoints": d, "score": float(round(rng.random(), 3))})
    return {"images": images, "annotations": anns, "categories": categories}, results
