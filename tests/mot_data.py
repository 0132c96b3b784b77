"""Generated tracking sequences and TrackEval's view of them (tests only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def generate(seed: int, *, n_frames: int = 60, n_tracks: int = 12, p_miss: float = 0.15,
             p_fp: float = 0.1, jitter: float = 3.0, p_swap: float = 0.05,
             p_double: float = 0.0, gap: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """GT and predicted MOT rows ``(frame, id, x, y, w, h)``: tracks that start and end,
    drift, are missed (fragmentations), change predicted id (switches), spurious boxes,
    with ``p_double`` a second, competing prediction near a GT box (so CLEAR's preference
    for continuing a track decides matches), and with ``gap`` a run of frames with no
    prediction at all."""
    rng = np.random.default_rng(seed)
    starts = rng.integers(1, n_frames, n_tracks)
    lengths = rng.integers(3, n_frames, n_tracks)
    pos = rng.uniform(0, 400, (n_tracks, 2))
    vel = rng.normal(0, 3, (n_tracks, 2))
    size = rng.uniform(20, 60, (n_tracks, 2))
    pid = np.arange(n_tracks) + 100
    gt, pred = [], []
    for f in range(1, n_frames + 1):
        for k in range(n_tracks):
            if not starts[k] <= f < starts[k] + lengths[k]:
                continue
            x, y = pos[k] + vel[k] * f
            w, h = size[k]
            gt.append((f, k + 1, x, y, w, h))
            if rng.random() < p_swap:
                pid[k] = rng.integers(100, 100 + 2 * n_tracks)
            if rng.random() > p_miss and not (gap and gap[0] <= f < gap[1]):
                pred.append((f, pid[k], x + rng.normal(0, jitter), y + rng.normal(0, jitter),
                             w * rng.uniform(0.8, 1.2), h * rng.uniform(0.8, 1.2)))
                if rng.random() < p_double:
                    pred.append((f, 300 + k + 20 * int(rng.integers(0, 2)), x + rng.normal(0, 2),
                                 y + rng.normal(0, 2), w, h))
        if not (gap and gap[0] <= f < gap[1]):
            for _ in range(rng.poisson(p_fp * n_tracks)):
                pred.append((f, rng.integers(500, 520), *rng.uniform(0, 400, 2),
                             *rng.uniform(10, 60, 2)))
    gt_rows = np.array(gt, float).reshape(-1, 6)
    pred_rows = np.array(pred, float).reshape(-1, 6)
    _, first = np.unique(pred_rows[:, :2], axis=0, return_index=True)  # one box per id and frame
    return gt_rows, pred_rows[np.sort(first)]


def write_mot(path: Path, rows: np.ndarray, *, gt: bool) -> None:
    """MOTChallenge text: GT ``frame,id,x,y,w,h,flag,class,visibility`` (flag and class
    taken from columns 6, 7 when given, else 1), results ``frame,id,x,y,w,h,conf,-1,-1,-1``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = len(rows)
    if gt:
        extra = rows[:, 6:8] if rows.shape[1] >= 8 else np.ones((n, 2))
        table = np.c_[rows[:, :6], extra, np.ones(n)]
    else:
        table = np.c_[rows[:, :6], np.ones(n), -np.ones((n, 3))]
    lines = [",".join(repr(float(v)) if j >= 2 and j < 6 else str(int(v)) for j, v in enumerate(r))
             for r in table]
    path.write_text("".join(line + "\n" for line in lines))


def trackeval_sequence(gt: np.ndarray, pred: np.ndarray) -> dict:
    """The ``data`` dict TrackEval's metric classes take, built as its MOTChallenge loader
    does (ids relabelled in sorted order, boxes in file order per frame, IoU from xywh)."""
    from trackeval.datasets._base_dataset import _BaseDataset

    frames = int(max(gt[:, 0].max(initial=0), pred[:, 0].max(initial=0)))
    gt_ids, pred_ids = np.unique(gt[:, 1]), np.unique(pred[:, 1])
    data: dict = {"gt_ids": [], "tracker_ids": [], "similarity_scores": []}
    for f in range(1, frames + 1):
        g, p = gt[gt[:, 0] == f], pred[pred[:, 0] == f]
        data["gt_ids"].append(np.searchsorted(gt_ids, g[:, 1]).astype(int))
        data["tracker_ids"].append(np.searchsorted(pred_ids, p[:, 1]).astype(int))
        data["similarity_scores"].append(_BaseDataset._calculate_box_ious(
            g[:, 2:6].copy(), p[:, 2:6].copy(), box_format="xywh"))
    data.update(num_gt_ids=len(gt_ids), num_tracker_ids=len(pred_ids), num_gt_dets=len(gt),
                num_tracker_dets=len(pred), num_timesteps=frames, seq="seq")
    return data


def trackeval_metrics(results: tuple[dict, dict, dict]) -> dict[str, float]:
    """rpx's keys from TrackEval's (CLEAR, Identity, HOTA) result dicts."""
    clear, identity, hota = results
    return {"mota": clear["MOTA"], "moda": clear["MODA"], "motp": clear["MOTP"],
            "idsw": clear["IDSW"], "fp": clear["CLR_FP"], "fn": clear["CLR_FN"],
            "tp": clear["CLR_TP"], "mt": clear["MT"], "pt": clear["PT"], "ml": clear["ML"],
            "frag": clear["Frag"], "idf1": identity["IDF1"], "idp": identity["IDP"],
            "idr": identity["IDR"], "idtp": identity["IDTP"], "idfp": identity["IDFP"],
            "idfn": identity["IDFN"], "hota": float(np.mean(hota["HOTA"])),
            "deta": float(np.mean(hota["DetA"])), "assa": float(np.mean(hota["AssA"])),
            "loca": float(np.mean(hota["LocA"]))}
