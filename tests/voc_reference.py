"""Test-only references for the VOC-style protocols, written line for line after the code
users run (read, not copied): the devkit's ``voc_eval`` / ``voc_ap`` as py-faster-rcnn and
detectron2's ``PascalVOCDetectionEvaluator`` ship them (``detectron2/evaluation/
pascal_voc_evaluation.py``), and DOTA_devkit's ``dota_evaluation_task1.py`` (the same walk
on polygon IoU; shapely computes the polygon IoU where the devkit calls its compiled
``polyiou``). Files are replaced by in-memory records: ``recs`` maps an image name to its
objects ``{"name", "difficult", "bbox"}`` (VOC: ``[xmin, ymin, xmax, ymax]`` 1-based
inclusive; DOTA: eight corner coordinates) and ``lines`` holds a class's results file lines
``"image score coords..."`` in the order the evaluator writes them (image by image)."""

from __future__ import annotations

import numpy as np


def voc_ap(rec, prec, use_07_metric=False):
    if use_07_metric:
        ap = 0.0
        for t in np.arange(0.0, 1.1, 0.1):
            if np.sum(rec >= t) == 0:  # noqa: SIM108 (the devkit's lines)
                p = 0
            else:
                p = np.max(prec[rec >= t])
            ap = ap + p / 11.0
    else:
        mrec = np.concatenate(([0.0], rec, [1.0]))
        mpre = np.concatenate(([0.0], prec, [0.0]))
        for i in range(mpre.size - 1, 0, -1):
            mpre[i - 1] = np.maximum(mpre[i - 1], mpre[i])
        i = np.where(mrec[1:] != mrec[:-1])[0]
        ap = np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1])
    return ap


def _class_recs(recs, imagenames, classname):
    class_recs = {}
    npos = 0
    for imagename in imagenames:
        R = [obj for obj in recs[imagename] if obj["name"] == classname]
        bbox = np.array([x["bbox"] for x in R])
        difficult = np.array([x["difficult"] for x in R]).astype(bool)
        det = [False] * len(R)
        npos = npos + sum(~difficult)
        class_recs[imagename] = {"bbox": bbox, "difficult": difficult, "det": det}
    return class_recs, npos


def _read(lines, width):
    splitlines = [x.strip().split(" ") for x in lines]
    image_ids = [x[0] for x in splitlines]
    confidence = np.array([float(x[1]) for x in splitlines])
    BB = np.array([[float(z) for z in x[2:]] for x in splitlines]).reshape(-1, width)
    sorted_ind = np.argsort(-confidence)
    BB = BB[sorted_ind, :]
    image_ids = [image_ids[x] for x in sorted_ind]
    return image_ids, BB


def _finish(tp, fp, npos, use_07_metric):
    fp = np.cumsum(fp)
    tp = np.cumsum(tp)
    rec = tp / float(npos)
    prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    ap = voc_ap(rec, prec, use_07_metric)
    return rec, prec, ap


def voc_eval(lines, recs, imagenames, classname, ovthresh=0.5, use_07_metric=False):
    """detectron2's ``voc_eval`` (the devkit's, with the "+1" pixel)."""
    class_recs, npos = _class_recs(recs, imagenames, classname)
    image_ids, BB = _read(lines, 4)
    nd = len(image_ids)
    tp = np.zeros(nd)
    fp = np.zeros(nd)
    for d in range(nd):
        R = class_recs[image_ids[d]]
        bb = BB[d, :].astype(float)
        ovmax = -np.inf
        BBGT = R["bbox"].astype(float)
        if BBGT.size > 0:
            ixmin = np.maximum(BBGT[:, 0], bb[0])
            iymin = np.maximum(BBGT[:, 1], bb[1])
            ixmax = np.minimum(BBGT[:, 2], bb[2])
            iymax = np.minimum(BBGT[:, 3], bb[3])
            iw = np.maximum(ixmax - ixmin + 1.0, 0.0)
            ih = np.maximum(iymax - iymin + 1.0, 0.0)
            inters = iw * ih
            uni = ((bb[2] - bb[0] + 1.0) * (bb[3] - bb[1] + 1.0)
                   + (BBGT[:, 2] - BBGT[:, 0] + 1.0) * (BBGT[:, 3] - BBGT[:, 1] + 1.0) - inters)
            overlaps = inters / uni
            ovmax = np.max(overlaps)
            jmax = np.argmax(overlaps)
        if ovmax > ovthresh:
            if not R["difficult"][jmax]:
                if not R["det"][jmax]:
                    tp[d] = 1.0
                    R["det"][jmax] = 1
                else:
                    fp[d] = 1.0
        else:
            fp[d] = 1.0
    return _finish(tp, fp, npos, use_07_metric)


def polygon_iou(a, b) -> float:
    """What DOTA_devkit's ``polyiou.iou_poly`` computes for two quadrilaterals."""
    from shapely.geometry import Polygon

    pa, pb = Polygon(np.reshape(a, (4, 2))), Polygon(np.reshape(b, (4, 2)))
    inter = pa.intersection(pb).area
    return inter / (pa.area + pb.area - inter)


def dota_eval(lines, recs, imagenames, classname, ovthresh=0.5, use_07_metric=True):
    """DOTA_devkit task 1's ``voc_eval``: the horizontal-box prefilter (with its "+1"), then
    polygon IoU."""
    class_recs, npos = _class_recs(recs, imagenames, classname)
    image_ids, BB = _read(lines, 8)
    nd = len(image_ids)
    tp = np.zeros(nd)
    fp = np.zeros(nd)
    for d in range(nd):
        R = class_recs[image_ids[d]]
        bb = BB[d, :].astype(float)
        ovmax = -np.inf
        BBGT = R["bbox"].astype(float)
        if BBGT.size > 0:
            BBGT_xmin = np.min(BBGT[:, 0::2], axis=1)
            BBGT_ymin = np.min(BBGT[:, 1::2], axis=1)
            BBGT_xmax = np.max(BBGT[:, 0::2], axis=1)
            BBGT_ymax = np.max(BBGT[:, 1::2], axis=1)
            bb_xmin = np.min(bb[0::2])
            bb_ymin = np.min(bb[1::2])
            bb_xmax = np.max(bb[0::2])
            bb_ymax = np.max(bb[1::2])
            ixmin = np.maximum(BBGT_xmin, bb_xmin)
            iymin = np.maximum(BBGT_ymin, bb_ymin)
            ixmax = np.minimum(BBGT_xmax, bb_xmax)
            iymax = np.minimum(BBGT_ymax, bb_ymax)
            iw = np.maximum(ixmax - ixmin + 1.0, 0.0)
            ih = np.maximum(iymax - iymin + 1.0, 0.0)
            inters = iw * ih
            uni = ((bb_xmax - bb_xmin + 1.0) * (bb_ymax - bb_ymin + 1.0)
                   + (BBGT_xmax - BBGT_xmin + 1.0) * (BBGT_ymax - BBGT_ymin + 1.0) - inters)
            overlaps = inters / uni
            BBGT_keep = BBGT[overlaps > 0, :]
            BBGT_keep_index = np.where(overlaps > 0)[0]
            if len(BBGT_keep) > 0:
                overlaps = [polygon_iou(BBGT_keep[index], bb) for index in range(len(BBGT_keep))]
                ovmax = np.max(overlaps)
                jmax = np.argmax(overlaps)
                jmax = BBGT_keep_index[jmax]
        if ovmax > ovthresh:
            if not R["difficult"][jmax]:
                if not R["det"][jmax]:
                    tp[d] = 1.0
                    R["det"][jmax] = 1
                else:
                    fp[d] = 1.0
        else:
            fp[d] = 1.0
    return _finish(tp, fp, npos, use_07_metric)


def detectron2_figures(lines_by_class, recs, imagenames, classnames, use_07_metric):
    """``PascalVOCDetectionEvaluator.evaluate``'s figures (as fractions, not percent):
    per class AP at each ``thresh / 100.0``, ``AP50``, ``AP75`` and ``AP`` (the mean over
    thresholds of the mean over classes)."""
    aps = {}
    for thresh in range(50, 100, 5):
        aps[thresh] = [voc_eval(lines_by_class.get(name, []), recs, imagenames, name,
                                ovthresh=thresh / 100.0, use_07_metric=use_07_metric)[2]
                       for name in classnames]
    mAP = {iou: np.mean(x) for iou, x in aps.items()}
    return {"AP": np.mean(list(mAP.values())), "AP50": mAP[50], "AP75": mAP[75],
            "per_class50": dict(zip(classnames, aps[50], strict=True)),
            "per_class75": dict(zip(classnames, aps[75], strict=True))}
