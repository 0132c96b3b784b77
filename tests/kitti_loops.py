"""The KITTI object benchmark as plain loops over frames, GT and detections, written from
its definition (rpx_cli/ops/kitti_eval.py's docstring), for tests/test_kitti.py to compare
rpx's vectorised version with. Overlaps come from shapely (footprints) and the box formula
(2D), one pair at a time. Slow on purpose: formula-shaped, one decision per line.
"""

from __future__ import annotations

import math

import shapely

LEVELS = ((40, 0, 0.15), (25, 1, 0.3), (25, 2, 0.5))  # min height, max occlusion, max truncation
NEIGHBOURS = {"car": "van", "pedestrian": "person_sitting"}


def iou_2d(d, g, own_area: bool = False) -> float:
    iw = min(d[2], g[2]) - max(d[0], g[0])
    ih = min(d[3], g[3]) - max(d[1], g[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    area_d = (d[2] - d[0]) * (d[3] - d[1])
    if own_area:
        return iw * ih / area_d
    return iw * ih / (area_d + (g[2] - g[0]) * (g[3] - g[1]) - iw * ih)


def footprint(obj: dict) -> shapely.Polygon:
    """The ground-plane rectangle (camera x, z): length along (cos ry, −sin ry)."""
    x, _, z = obj["location"]
    _, w, length = obj["hwl"]
    ry = obj["rotation_y"]
    ux, uz = math.cos(ry), -math.sin(ry)  # along the length
    vx, vz = math.sin(ry), math.cos(ry)  # across
    corners = [(x + sl * length / 2 * ux + sw * w / 2 * vx, z + sl * length / 2 * uz + sw * w / 2 * vz)
               for sl, sw in ((1, 1), (-1, 1), (-1, -1), (1, -1))]
    return shapely.Polygon(corners)


def iou_bev(d: dict, g: dict) -> float:
    a, b = footprint(d), footprint(g)
    inter = a.intersection(b).area
    return inter / (a.area + b.area - inter) if inter > 0 else 0.0


def iou_3d(d: dict, g: dict) -> float:
    inter = footprint(d).intersection(footprint(g)).area
    if inter <= 0:
        return 0.0
    yd, yg, hd, hg = d["location"][1], g["location"][1], d["hwl"][0], g["hwl"][0]
    overlap = min(yd, yg) - max(yd - hd, yg - hg)
    if overlap <= 0:
        return 0.0
    vol = lambda o: o["hwl"][0] * o["hwl"][1] * o["hwl"][2]  # noqa: E731
    return overlap * inter / (vol(d) + vol(g) - overlap * inter)


OVERLAP = {"bbox": lambda d, g: iou_2d(d["bbox"], g["bbox"]), "bev": iou_bev, "3d": iou_3d}


def statuses(gt: list[dict], det: list[dict], cls: str, level: int):
    min_h, max_occ, max_trunc = LEVELS[level]
    gt_status, det_status = [], []
    for g in gt:
        name = g["name"].lower()
        hard = g["occluded"] > max_occ or g["truncated"] > max_trunc or \
            g["bbox"][3] - g["bbox"][1] <= min_h
        if name == cls and not hard:
            gt_status.append(0)
        elif name == cls or NEIGHBOURS.get(cls) == name:
            gt_status.append(1)
        else:
            gt_status.append(-1)
    for d in det:
        if abs(d["bbox"][3] - d["bbox"][1]) < min_h:
            det_status.append(1)
        elif d["name"].lower() == cls:
            det_status.append(0)
        else:
            det_status.append(-1)
    return gt_status, det_status


def frame_counts(gt, det, overlaps, gt_status, det_status, min_overlap, threshold, dontcare):
    """One frame at one threshold (None: the threshold-finding pass): (tp, fp, fn,
    similarity, tp scores)."""
    taken = [False] * len(det)
    tp = fp = fn = 0
    similarity, scores = 0.0, []
    for i, g in enumerate(gt):
        if gt_status[i] == -1:
            continue
        best, best_key, best_is_ignored = None, None, False
        for j, d in enumerate(det):
            if det_status[j] == -1 or taken[j]:
                continue
            if threshold is not None and d["score"] < threshold:
                continue
            if overlaps[j][i] <= min_overlap:
                continue
            if threshold is None:  # the highest score, the first among equals
                if d["score"] > -1e7 and (best is None or d["score"] > best_key):
                    best, best_key = j, d["score"]
            elif det_status[j] == 0:  # the largest overlap among valid ones
                if best is None or best_is_ignored or overlaps[j][i] > best_key:
                    best, best_key, best_is_ignored = j, overlaps[j][i], False
            elif best is None:  # else the first ignored one
                best, best_key, best_is_ignored = j, 0.0, True
        if best is None:
            fn += gt_status[i] == 0
            continue
        taken[best] = True
        if gt_status[i] == 0 and det_status[best] == 0:
            tp += 1
            scores.append(det[best]["score"])
            similarity += (1 + math.cos(g["alpha"] - det[best]["alpha"])) / 2
    if threshold is not None:
        for j, d in enumerate(det):
            if taken[j] or det_status[j] != 0 or d["score"] < threshold:
                continue
            if any(iou_2d(d["bbox"], region, own_area=True) > min_overlap for region in dontcare):
                continue
            fp += 1
    return tp, fp, fn, similarity, scores


def get_thresholds(scores, num_gt):
    scores = sorted(scores, reverse=True)
    kept, current = [], 0.0
    for i, score in enumerate(scores):
        left = (i + 1) / num_gt
        right = (i + 2) / num_gt if i < len(scores) - 1 else left
        if (right - current) < (current - left) and i < len(scores) - 1:
            continue
        kept.append(score)
        current += 1 / 40.0
    return kept


def class_ap(frames, cls, level, metric, min_overlap, recall_points, with_dontcare):
    """AP (a fraction) of one class, difficulty and metric, and the aos AP on bbox."""
    prepared = []
    num_gt = 0
    for gt, det in frames:
        gt_status, det_status = statuses(gt, det, cls, level)
        num_gt += gt_status.count(0)
        overlaps = [[OVERLAP[metric](d, g) if g["name"] != "DontCare" or metric == "bbox" else 0.0
                     for g in gt] for d in det]
        dontcare = [g["bbox"] for g in gt if g["name"] == "DontCare"] if with_dontcare else []
        prepared.append((gt, det, overlaps, gt_status, det_status, dontcare))
    scores = []
    for gt, det, overlaps, gs, ds, dc in prepared:
        scores += frame_counts(gt, det, overlaps, gs, ds, min_overlap, None, dc)[4]
    thresholds = get_thresholds(scores, num_gt) if scores else []
    precision, aos = [0.0] * 41, [0.0] * 41
    for k, t in enumerate(thresholds):
        tp = fp = 0
        similarity = 0.0
        for gt, det, overlaps, gs, ds, dc in prepared:
            a, b, _, s, _ = frame_counts(gt, det, overlaps, gs, ds, min_overlap, t, dc)
            tp, fp, similarity = tp + a, fp + b, similarity + s
        precision[k] = tp / (tp + fp) if tp + fp else math.nan
        aos[k] = similarity / (tp + fp) if tp + fp else math.nan
    for curve in (precision, aos):
        for k in range(41):
            curve[k] = max(curve[k:]) if not any(v != v for v in curve[k:]) else math.nan
    pick = range(1, 41) if recall_points == 40 else range(0, 41, 4)
    return (sum(precision[k] for k in pick) / recall_points,
            sum(aos[k] for k in pick) / recall_points)


def objects(k) -> list[dict]:
    """A :class:`~rpx_cli.io.kitti_labels.KittiObjects` as a list of dicts."""
    return [{"name": k.names[int(k.label[i])], "truncated": float(k.truncated[i]),
             "occluded": int(k.occluded[i]), "alpha": float(k.alpha[i]),
             "bbox": k.bbox[i].tolist(), "hwl": k.hwl[i].tolist(),
             "location": k.location[i].tolist(), "rotation_y": float(k.rotation_y[i]),
             **({"score": float(k.score[i])} if k.score is not None else {})}
            for i in range(len(k))]


def benchmark(frames, classes, tables, recall_points) -> dict:
    """``{class: {metric_level: AP}}`` with ``tables[class][metric]`` the thresholds."""
    out = {}
    for cls in classes:
        entry = {}
        for level, name in enumerate(("easy", "moderate", "hard")):
            for metric in ("bbox", "bev", "3d"):
                ap, aos = class_ap(frames, cls.lower(), level, metric, tables[cls][metric],
                                   recall_points, metric == "bbox")
                entry[f"{metric}_{name}"] = ap
                if metric == "bbox":
                    entry[f"aos_{name}"] = aos
        out[cls] = entry
    return out
