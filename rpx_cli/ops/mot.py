"""CLEAR-MOT, Identity and HOTA for one sequence, as TrackEval computes them.

Input: the GT and predicted boxes of one sequence (frame, track id, ``[x1, y1, x2, y2]``),
already filtered. Output: a fixed-width vector of sufficient statistics
(:data:`STAT_NAMES`), which :func:`finalize` turns into metrics for one sequence or for the
element-wise combination of several (:func:`combine`), exactly as TrackEval's
``combine_sequences`` does.

The arithmetic follows TrackEval's ``metrics/clear.py``, ``identity.py`` and ``hota.py``
operation for operation wherever a value feeds an assignment (IoUs, the CLEAR score
matrix, HOTA's alignment scores), so the same matches are chosen and the counts are equal;
sums are taken in the same order, so ratios agree to the last bit in practice (the
contract is 1e-9). Work is vectorised over boxes; the loops are over frames, where each
frame's optimal assignment depends on the last (CLEAR) or needs a solver call.

Conventions (TrackEval's): similarity is box IoU; a CLEAR match needs IoU >= 0.5 − ε; an
ID switch is counted against the last tracker id a GT track had, any number of frames
back; MT > 80 % of a track's frames matched, ML < 20 %; Identity counts potential matches
at IoU >= 0.5; HOTA averages 19 thresholds α = 0.05 … 0.95. A frame with GT but no
prediction (or the reverse) keeps the previous frame's matches as CLEAR's continuity
preference, as TrackEval does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rpx_cli.ops.assignment import solver

EPS = float(np.finfo(float).eps)
ALPHAS = np.arange(0.05, 0.99, 0.05)  # TrackEval's HOTA thresholds (19)
N_ALPHA = len(ALPHAS)
_SCALARS = ("num_gt", "num_pred", "num_gt_ids", "num_pred_ids", "tp", "fn", "fp", "idsw", "mt",
            "pt", "ml", "frag", "motp_sum", "idtp", "idfn", "idfp")
_ARRAYS = ("hota_tp", "hota_fn", "hota_fp", "assa", "assre", "asspr", "loca")
STAT_NAMES = _SCALARS + tuple(f"{name}_{k}" for name in _ARRAYS for k in range(N_ALPHA))
WIDTH = len(STAT_NAMES)
_AT = {name: k for k, name in enumerate(_SCALARS)}
_ARRAY_AT = {name: len(_SCALARS) + k * N_ALPHA for k, name in enumerate(_ARRAYS)}


@dataclass
class Side:
    """One side (GT or prediction) of a sequence."""

    frame: np.ndarray  # (N,) int64
    ids: np.ndarray  # (N,) int64
    box: np.ndarray  # (N, 4) x1, y1, x2, y2


@dataclass
class Pairs:
    """Every (GT box, predicted box) pair that shares a frame, frame by frame, each
    frame's pairs row-major (its IoU matrix flattened)."""

    frames: np.ndarray  # (F,) frame numbers present on either side, ascending
    g_bounds: np.ndarray  # (F + 1,) slices of the frame-sorted GT
    p_bounds: np.ndarray  # (F + 1,) slices of the frame-sorted predictions
    bounds: np.ndarray  # (F + 1,) slices of ``sim``
    g: np.ndarray  # (P,) GT index of each pair
    p: np.ndarray  # (P,) prediction index of each pair
    sim: np.ndarray  # (P,) IoU

    def frame_matrices(self) -> Iterator[tuple[int, int, int, int, int, np.ndarray]]:
        """``(g0, g1, p0, p1, frame index, IoU matrix)`` of the frames with boxes on both sides."""
        g, p, b = self.g_bounds, self.p_bounds, self.bounds
        both = np.flatnonzero(np.diff(b) > 0)
        for f, g0, g1, p0, p1, s0, s1 in zip(both.tolist(), g[both].tolist(), g[both + 1].tolist(),
                                             p[both].tolist(), p[both + 1].tolist(),
                                             b[both].tolist(), b[both + 1].tolist(), strict=True):
            yield g0, g1, p0, p1, f, self.sim[s0:s1].reshape(g1 - g0, p1 - p0)


def sort_by_frame(side: Side) -> Side:
    """Stable: boxes of one frame keep their file order (which breaks assignment ties)."""
    order = np.argsort(side.frame, kind="stable")
    return Side(side.frame[order], side.ids[order], side.box[order])


def iou_pairs_xyxy(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of ``a[i]`` with ``b[i]``: TrackEval's ``_calculate_box_ious`` element by element
    (zero-area boxes and empty unions give 0)."""
    inter = (np.maximum(np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0)
             * np.maximum(np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0))
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a + area_b - inter
    inter[(area_a <= EPS) | (area_b <= EPS) | (union <= EPS)] = 0
    union[union <= EPS] = 1
    return inter / union


def pair_up(gt: Side, pred: Side) -> Pairs:
    """All same-frame pairs of two frame-sorted sides, with their IoUs, in one pass."""
    frames = np.union1d(gt.frame, pred.frame)
    g_bounds = np.searchsorted(gt.frame, frames, "left")
    g_bounds = np.append(g_bounds, len(gt.frame))
    p_bounds = np.append(np.searchsorted(pred.frame, frames, "left"), len(pred.frame))
    n_pred = np.diff(p_bounds)
    frame_of_gt = np.searchsorted(frames, gt.frame)
    per_gt = n_pred[frame_of_gt]  # pairs each GT box takes part in
    g = np.repeat(np.arange(len(gt.frame)), per_gt)
    run_start = np.cumsum(per_gt) - per_gt
    p = p_bounds[frame_of_gt][g] + (np.arange(len(g)) - run_start[g])
    bounds = np.concatenate([[0], np.cumsum(np.diff(g_bounds) * n_pred)])
    return Pairs(frames, g_bounds, p_bounds, bounds, g, p, iou_pairs_xyxy(gt.box[g], pred.box[p]))


def keep_pairs(pairs: Pairs, keep_g: np.ndarray, keep_p: np.ndarray) -> Pairs:
    """The pairs of the boxes kept (boolean masks over the frame-sorted sides ``pairs``
    was made of): exactly :func:`pair_up` of the kept boxes, in the same order, without
    computing an IoU again."""
    g_at = np.concatenate([[0], np.cumsum(keep_g)])  # a kept box's new index
    p_at = np.concatenate([[0], np.cumsum(keep_p)])
    kept = keep_g[pairs.g] & keep_p[pairs.p]
    s_at = np.concatenate([[0], np.cumsum(kept)])
    return Pairs(pairs.frames, g_at[pairs.g_bounds], p_at[pairs.p_bounds], s_at[pairs.bounds],
                 g_at[pairs.g[kept]], p_at[pairs.p[kept]], pairs.sim[kept])


def sequence_stats(gt: Side, pred: Side, threshold: float = 0.5, *,
                   pairs: Pairs | None = None) -> np.ndarray:
    """The :data:`STAT_NAMES` vector of one sequence. ``pairs``: the sides' pairs when the
    caller has them (:func:`keep_pairs`; both sides then frame-sorted already)."""
    if pairs is None:
        gt, pred = sort_by_frame(gt), sort_by_frame(pred)
    gt_ids, gid = np.unique(gt.ids, return_inverse=True)
    pred_ids, pid = np.unique(pred.ids, return_inverse=True)
    n_g, n_p = len(gt_ids), len(pred_ids)
    out = np.zeros(WIDTH)
    out[:4] = len(gt.frame), len(pred.frame), n_g, n_p
    gt_count = np.bincount(gid, minlength=n_g).astype(np.float64)
    pred_count = np.bincount(pid, minlength=n_p).astype(np.float64)
    if pairs is None:
        pairs = pair_up(gt, pred)
    if len(pairs.sim) == 0:  # no frame has boxes on both sides: nothing can match
        _fill_unmatched(out, gt_count)
        return out
    _identity(out, pairs, gid, pid, n_g, n_p, threshold)
    pm = _clear(out, pairs, gid, pid, n_g, n_p, gt_count, threshold)
    _hota(out, pairs, gid, pid, n_g, n_p, gt_count, pred_count, pm)
    return out


def _fill_unmatched(out: np.ndarray, gt_count: np.ndarray) -> None:
    """Nothing to match: every box is a miss or a false alarm (TrackEval's early return
    when a side is empty, and what its loops give when no frame has both sides)."""
    num_gt, num_pred = out[0], out[1]
    out[_AT["fn"]], out[_AT["fp"]] = num_gt, num_pred
    out[_AT["ml"]] = len(gt_count)
    out[_AT["idfn"]], out[_AT["idfp"]] = num_gt, num_pred
    out[_ARRAY_AT["hota_fn"]:][:N_ALPHA] = num_gt
    out[_ARRAY_AT["hota_fp"]:][:N_ALPHA] = num_pred
    out[_ARRAY_AT["loca"]:][:N_ALPHA] = 1.0


def _identity(out: np.ndarray, pairs: Pairs, gid: np.ndarray, pid: np.ndarray, n_g: int,
              n_p: int, threshold: float) -> None:
    """IDF1's optimal one-to-one id assignment: maximising the frames two ids overlap is
    TrackEval's minimum of IDFN + IDFP (their sum is constant minus twice that)."""
    hit = pairs.sim >= threshold
    potential = np.bincount(gid[pairs.g[hit]] * n_p + pid[pairs.p[hit]],
                            minlength=n_g * n_p).reshape(n_g, n_p)
    rows, cols = solver()(potential, True)
    idtp = int(potential[rows, cols].sum())
    out[_AT["idtp"]] = idtp
    out[_AT["idfn"]] = out[0] - idtp
    out[_AT["idfp"]] = out[1] - idtp


def _clear(out: np.ndarray, pairs: Pairs, gid: np.ndarray, pid: np.ndarray, n_g: int,
           n_p: int, gt_count: np.ndarray, threshold: float) -> np.ndarray:
    """CLEAR-MOT frame by frame; also returns HOTA's potential-match weights (pass 1),
    which need the same per-frame matrices."""
    lsa = solver()
    prev_id = np.full(n_g, np.nan)  # last tracker id of each GT track (ID switches)
    prev_step = np.full(n_g, np.nan)  # its tracker id in the previous matched frame
    matched_count = np.zeros(n_g)
    frag_count = np.zeros(n_g)
    sim_iou = np.zeros(len(pairs.sim))
    tp = idsw = 0
    frame_sums = []
    floor = threshold - EPS
    for g0, g1, p0, p1, f, sim in pairs.frame_matrices():
        gids, tids = gid[g0:g1], pid[p0:p1]
        score = (tids[np.newaxis, :] == prev_step[gids[:, np.newaxis]]) * 1000 + sim
        score[sim < floor] = 0
        rows, cols = lsa(-score)
        keep = score[rows, cols] > EPS
        rows, cols = rows[keep], cols[keep]
        matched_g, matched_t = gids[rows], tids[cols]
        before = prev_id[matched_g]
        idsw += int(np.count_nonzero(~np.isnan(before) & (matched_t != before)))
        matched_count[matched_g] += 1
        was_untracked = np.isnan(prev_step)
        prev_id[matched_g] = matched_t
        prev_step[:] = np.nan
        prev_step[matched_g] = matched_t
        frag_count += was_untracked & ~np.isnan(prev_step)
        tp += len(rows)
        if len(rows):
            frame_sums.append(sim[rows, cols].cumsum()[-1])  # sequential, as TrackEval's sum()
        # HOTA pass 1: similarities normalised by the frame's row and column sums
        denom = sim.sum(0)[np.newaxis, :] + sim.sum(1)[:, np.newaxis] - sim
        normalised = np.zeros_like(sim)
        ok = denom > EPS
        normalised[ok] = sim[ok] / denom[ok]
        s0 = pairs.bounds[f]
        sim_iou[s0:s0 + normalised.size] = normalised.ravel()
    ratio = matched_count / gt_count
    mt = int(np.count_nonzero(ratio > 0.8))
    pt = int(np.count_nonzero(ratio >= 0.2)) - mt
    out[_AT["tp"]], out[_AT["idsw"]] = tp, idsw
    out[_AT["fn"]], out[_AT["fp"]] = out[0] - tp, out[1] - tp
    out[_AT["mt"]], out[_AT["pt"]], out[_AT["ml"]] = mt, pt, n_g - mt - pt
    out[_AT["frag"]] = float(np.sum(frag_count[frag_count > 0] - 1))
    out[_AT["motp_sum"]] = np.cumsum(frame_sums)[-1] if frame_sums else 0.0
    # bincount adds in pair order, i.e. frame by frame: TrackEval's order of +=
    return np.bincount(gid[pairs.g] * n_p + pid[pairs.p], weights=sim_iou,
                       minlength=n_g * n_p).reshape(n_g, n_p)


def _hota(out: np.ndarray, pairs: Pairs, gid: np.ndarray, pid: np.ndarray, n_g: int, n_p: int,
          gt_count: np.ndarray, pred_count: np.ndarray, potential: np.ndarray) -> None:
    lsa = solver()
    gt_col, pred_row = gt_count[:, np.newaxis], pred_count[np.newaxis, :]
    alignment = potential / (gt_col + pred_row - potential)
    match_g, match_t, match_sim, match_frame = [], [], [], []
    for g0, g1, p0, p1, _, sim in pairs.frame_matrices():
        gids, tids = gid[g0:g1], pid[p0:p1]
        rows, cols = lsa(-(alignment[gids[:, np.newaxis], tids[np.newaxis, :]] * sim))
        match_g.append(gids[rows])
        match_t.append(tids[cols])
        match_sim.append(sim[rows, cols])
        match_frame.append(np.full(len(rows), len(match_frame)))
    g, t, s = np.concatenate(match_g), np.concatenate(match_t), np.concatenate(match_sim)
    frame = np.concatenate(match_frame)
    passes = s[np.newaxis, :] >= ALPHAS[:, np.newaxis] - EPS  # (alpha, match)
    tp = np.count_nonzero(passes, axis=1).astype(np.float64)
    loc_sum = _frame_sequential_sums(np.where(passes, s, 0.0), frame, len(match_frame))
    at = _ARRAY_AT
    out[at["hota_tp"]:][:N_ALPHA] = tp
    out[at["hota_fn"]:][:N_ALPHA] = out[0] - tp
    out[at["hota_fp"]:][:N_ALPHA] = out[1] - tp
    cell = g * n_p + t
    for a in range(N_ALPHA):  # 19 thresholds, each a few whole-matrix operations
        counts = np.bincount(cell[passes[a]], minlength=n_g * n_p).reshape(n_g, n_p)
        counts = counts.astype(np.float64)
        denominator = np.maximum(1, tp[a])
        ass_a = counts / np.maximum(1, gt_col + pred_row - counts)
        out[at["assa"] + a] = np.sum(counts * ass_a) / denominator
        out[at["assre"] + a] = np.sum(counts * (counts / np.maximum(1, gt_col))) / denominator
        out[at["asspr"] + a] = np.sum(counts * (counts / np.maximum(1, pred_row))) / denominator
    out[at["loca"]:][:N_ALPHA] = np.maximum(1e-10, loc_sum) / np.maximum(1e-10, tp)


def _frame_sequential_sums(values: np.ndarray, frame: np.ndarray, n_frames: int) -> np.ndarray:
    """Per row of ``values`` (alpha, match): the sum within each frame, left to right, then
    over frames in order — TrackEval's ``res[a] += sum(...)`` per frame, bit for bit."""
    if values.shape[1] == 0:
        return np.zeros(values.shape[0])
    start = np.searchsorted(frame, np.arange(n_frames))
    width = int(np.diff(np.append(start, len(frame))).max())
    column = np.arange(len(frame)) - start[frame]
    padded = np.zeros((n_frames, width))
    out = np.empty(values.shape[0])
    for a, row in enumerate(values):
        padded[frame, column] = row
        per_frame = np.cumsum(padded, axis=1)[:, -1]  # trailing zeros change nothing
        out[a] = np.cumsum(per_frame)[-1]
    return out


# --------------------------------------------------------------------------- finalize


def combine(stats: np.ndarray) -> np.ndarray:
    """Statistics of several sequences (rows, in order) as one vector: counts summed,
    HOTA's association and localisation scores weighted by each sequence's matches —
    TrackEval's ``combine_sequences``."""
    stats = np.asarray(stats, np.float64).reshape(-1, WIDTH)
    out = np.cumsum(stats, axis=0)[-1] if len(stats) else np.zeros(WIDTH)
    at = _ARRAY_AT
    tp = stats[:, at["hota_tp"]:at["hota_tp"] + N_ALPHA]
    total_tp = out[at["hota_tp"]:at["hota_tp"] + N_ALPHA]
    for name in ("assa", "assre", "asspr"):
        weighted = np.cumsum(stats[:, at[name]:at[name] + N_ALPHA] * tp, axis=0)
        out[at[name]:at[name] + N_ALPHA] = (weighted[-1] if len(stats) else 0.0) / np.maximum(
            1.0, total_tp)
    weighted = np.cumsum(stats[:, at["loca"]:at["loca"] + N_ALPHA] * tp, axis=0)
    loc = weighted[-1] if len(stats) else np.zeros(N_ALPHA)
    out[at["loca"]:at["loca"] + N_ALPHA] = np.maximum(1e-10, loc) / np.maximum(1e-10, total_tp)
    return out


def alpha_arrays(stats: np.ndarray) -> dict[str, np.ndarray]:
    """HOTA's per-threshold arrays (DetA, AssA, HOTA, LocA, ...) from one statistics vector."""
    arrays = {name: stats[_ARRAY_AT[name]:_ARRAY_AT[name] + N_ALPHA] for name in _ARRAYS}
    tp, fn, fp = arrays["hota_tp"], arrays["hota_fn"], arrays["hota_fp"]
    det_a = tp / np.maximum(1, tp + fn + fp)
    return {"deta": det_a, "assa": arrays["assa"], "hota": np.sqrt(det_a * arrays["assa"]),
            "loca": arrays["loca"], "detre": tp / np.maximum(1, tp + fn),
            "detpr": tp / np.maximum(1, tp + fp), "assre": arrays["assre"],
            "asspr": arrays["asspr"]}


def finalize(stats: np.ndarray) -> dict[str, float | int | None]:
    """Metrics from one statistics vector (a sequence, or :func:`combine` of several).
    Without GT every ratio is None; counts are always given."""
    s = {name: float(stats[k]) for name, k in _AT.items()}
    counts = {"idsw": s["idsw"], "fp": s["fp"], "fn": s["fn"], "mt": s["mt"], "pt": s["pt"],
              "ml": s["ml"], "frag": s["frag"], "num_gt": s["num_gt"], "num_pred": s["num_pred"],
              "num_gt_ids": s["num_gt_ids"], "num_pred_ids": s["num_pred_ids"], "tp": s["tp"],
              "idtp": s["idtp"], "idfp": s["idfp"], "idfn": s["idfn"]}
    out: dict[str, float | int | None] = {key: int(value) for key, value in counts.items()}
    ratios = ("mota", "moda", "motp", "idf1", "idp", "idr", "hota", "deta", "assa", "loca")
    if s["num_gt"] == 0:
        return {**out, **dict.fromkeys(ratios)}
    tp, fn, fp = s["tp"], s["fn"], s["fp"]
    arrays = alpha_arrays(stats)
    idtp, idfn, idfp = s["idtp"], s["idfn"], s["idfp"]
    out.update({
        "mota": (tp - fp - s["idsw"]) / max(1.0, tp + fn),
        "moda": (tp - fp) / max(1.0, tp + fn),
        "motp": s["motp_sum"] / max(1.0, tp),
        "idf1": idtp / max(1.0, idtp + 0.5 * idfp + 0.5 * idfn),
        "idp": idtp / max(1.0, idtp + idfp),
        "idr": idtp / max(1.0, idtp + idfn),
        **{key: float(np.mean(arrays[key])) for key in ("hota", "deta", "assa", "loca")},
    })
    return out
