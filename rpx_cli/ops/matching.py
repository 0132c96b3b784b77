"""One-to-one matching of detections to ground truth under a similarity and a comparison rule.

Two matchers, one vocabulary:

- a **similarity** is any number per (detection, GT) pair: IoU of boxes, polygons or rotated
  boxes, a centre distance in metres, ...;
- a **rule** says which values pass a threshold and which direction is better:

  ======  =============================  ==================  ===============================
  rule    passes                         better              used by
  ======  =============================  ==================  ===============================
  ``>=``  ``value >= threshold``         higher              COCO / pycocotools IoU, polygons
  ``>``   ``value > threshold``          higher
  ``<``   ``value < threshold``          lower               nuScenes centre distance
  ``<=``  ``value <= threshold``         lower               autoware-ml centre distance
  ======  =============================  ==================  ===============================

:func:`passes` applies a rule, :func:`better` turns values so that larger is better
(``-value`` for ``<``/``<=``; negation is exact, so orders, ties and threshold tests are
unchanged: ``value < t`` ⇔ ``-value > -t``). Both matchers work on :func:`better` values.

:func:`greedy_match` is pycocotools' greedy matcher generalised, vectorised over every group
(image × class) and every threshold at once, with its readable reference beside it
(:func:`reference_greedy`, the plain walk over one matrix its tests compare it with);
:func:`optimal_match` is one frame's optimal assignment (scipy's ``linear_sum_assignment``)
with the pairs that fail the rule dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from rpx_cli.ops.assignment import solver

Rule = Literal[">=", ">", "<", "<="]
TieOrder = Literal["first", "last"]
Similarity = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""``similarity(det_indices (n,), gt_slots (n, width), crowd (n, width)) -> (n, width)``."""

RULES: tuple[Rule, ...] = (">=", ">", "<", "<=")
_COMPARE = {">=": np.greater_equal, ">": np.greater, "<": np.less, "<=": np.less_equal}


def empty_flags(n_dets: int, ranges: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``(matched, ignored)`` arrays a native greedy walk fills: (detections, areas *
    thresholds) bool, column ``a * T + t``, as :func:`greedy_match` returns them."""
    columns = len(ranges) * thresholds.size
    return np.empty((n_dets, columns), bool), np.empty((n_dets, columns), bool)


def higher_is_better(rule: Rule) -> bool:
    """True for ``>=`` and ``>`` (IoU-like), False for ``<`` and ``<=`` (distance-like)."""
    if rule in (">=", ">"):
        return True
    if rule in ("<", "<="):
        return False
    raise ValueError(f"comparison rule must be one of {', '.join(RULES)}, got {rule!r}")


def passes(values: np.ndarray, threshold: np.ndarray | float, rule: Rule) -> np.ndarray:
    """``values <rule> threshold`` element-wise (broadcasting), e.g. ``IoU >= 0.5`` or
    ``distance < 2.0``. NaN never passes."""
    higher_is_better(rule)  # validates the rule
    return _COMPARE[rule](values, threshold)


def better(values: np.ndarray, rule: Rule) -> np.ndarray:
    """``values`` turned so that larger is better: themselves for ``>=``/``>`` (no copy),
    ``-values`` for ``<``/``<=``. Exact, so ``passes(better(v), better(t), strict(rule))``
    equals ``passes(v, t, rule)`` where ``strict(rule)`` is ``>`` for ``>``/``<`` and ``>=``
    for ``>=``/``<=`` (the form both matchers use internally)."""
    return values if higher_is_better(rule) else np.negative(values)


def _oriented_rule(rule: Rule) -> Rule:
    """The rule on :func:`better` values: strict stays strict."""
    return ">" if rule in (">", "<") else ">="


# --- optimal ---------------------------------------------------------------------------------


def optimal_match(similarity: np.ndarray, threshold: float,
                  rule: Rule = ">=") -> tuple[np.ndarray, np.ndarray]:
    """One frame's optimal one-to-one matching, then the threshold.

    ``similarity`` is (detections, GT). The assignment maximises the total similarity for
    ``>=``/``>`` and minimises it for ``<``/``<=`` over all ``min(D, G)``-pair matchings
    (``scipy.optimize.linear_sum_assignment`` — the Hungarian/Jonker–Volgenant solver,
    loaded by :func:`rpx_cli.ops.assignment.solver`); afterwards the pairs whose value fails
    ``value <rule> threshold`` are dropped (Aquarium's confusion matrix: assign first, then
    threshold — not an assignment restricted to passing pairs). Entries must be finite.

    Returns ``(rows, cols)``: detection and GT indices of the kept pairs, rows increasing;
    empty int64 arrays when either side is empty.
    """
    similarity = np.asarray(similarity)
    if similarity.ndim != 2:
        raise ValueError(f"similarity must be a (detections, GT) matrix, got shape {similarity.shape}")
    if similarity.size == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty.copy()
    # maximise better(): for a lower-is-better rule that is minimising the values themselves
    # (scipy's maximize negates the matrix, so this is the very same problem)
    rows, cols = solver()(better(similarity, rule), maximize=True)
    keep = passes(similarity[rows, cols], threshold, rule)
    return rows[keep], cols[keep]


# --- greedy ----------------------------------------------------------------------------------


class GreedyMatches(NamedTuple):
    """:func:`greedy_match`'s result; columns are ``a * T + t`` (area range ``a``, threshold
    ``t``)."""

    matched: np.ndarray  # (D, A * T) bool: the detection took a GT
    ignored: np.ndarray  # (D, A * T) bool: ... and that GT is ignored (crowd or area outside)
    gt: np.ndarray | None  # (D, A * T) int64 index of the GT taken, -1 if none (return_gt only)


@dataclass(frozen=True)
class _Problem:
    dt_group: np.ndarray
    similarity: Similarity
    rule: Rule
    cut: np.ndarray  # (T,) thresholds as better() values
    loosest: float  # the lowest cut: a value failing it fails every threshold
    strict: Rule  # ">" or ">=" on better() values
    last: bool  # ties to the last GT (else the first)
    present: np.ndarray  # (P,) the groups that have detections, ascending
    gt_start: np.ndarray  # (P,) each present group's first GT
    gt_count: np.ndarray  # (P,) and its number of GT
    gt_crowd: np.ndarray | None
    gt_area: np.ndarray | None
    ranges: np.ndarray | None
    n_ranges: int
    matched: np.ndarray
    ignored: np.ndarray
    gt_out: np.ndarray | None


def greedy_match(dt_group: np.ndarray, gt_group: np.ndarray, similarity: Similarity,
                 thresholds: np.ndarray | float, rule: Rule = ">=", *, ties: TieOrder = "last",
                 gt_crowd: np.ndarray | None = None, gt_area: np.ndarray | None = None,
                 area_ranges: np.ndarray | None = None, return_gt: bool = False) -> GreedyMatches:
    """Greedy one-to-one matching in every group at once, at every threshold at once.

    The rule, per group (an image × class) and per threshold ``t``: detections are walked
    best first; each takes, among the GT of its group it *passes* (``value <rule> t``) that no
    earlier detection took, the one with the best value (highest for ``>=``/``>``, lowest
    for ``<``/``<=``); ties go to the ``"last"`` GT in order (pycocotools) or the
    ``"first"`` (``numpy.argmin``/``argmax``, as nuScenes' ``accumulate``). A detection that
    passes no free GT stays unmatched and takes nothing.

    COCO's extras, all optional:

    - ``gt_crowd`` (G,) bool: a crowd GT can be taken again by any number of detections and
      is *ignored*; the similarity is handed the crowd flag of every slot (pycocotools'
      crowd IoU is intersection over the detection's area);
    - ``gt_area`` (G,) with ``area_ranges`` (A, 2): per range, a GT whose area is outside
      ``[low, high]`` is ignored too. An ignored GT is only chosen when no regular GT
      passes (pycocotools sorts ignored GT last and stops at them once it has a match).

    Without them there is no crowd and one unbounded range (A = 1).

    Inputs: ``dt_group`` (D,) sorted, detections of a group in rank order (best score
    first, the caller's tie-break); ``gt_group`` (G,) sorted, GT of a group in tie order.
    ``similarity(det_indices, gt_slots, crowd)`` receives detection indices (n,), GT
    indices (n, width) and their crowd flags (n, width) and returns a new float array of
    values (n, width) (the matcher writes into it); slots past a group's GT count hold
    index 0 and their values are replaced by the worst value (``-inf`` on the better()
    scale, i.e. -inf for IoU and +inf for distances), which passes no finite threshold.
    ``thresholds`` (T,) must be finite: use a large finite one to accept everything.
    NaN values never pass.

    Returns :class:`GreedyMatches` ``(matched, ignored, gt)``, each (D, A * T), column
    ``a * T + t``; ``gt`` (index into the GT arrays, -1 when unmatched) only with
    ``return_gt``.

    Speed: the walk is a loop over detection *rank* only, vectorised over groups with
    padding; groups are bucketed by GT count (1, 2–3, 4–7, ...) so padding at most
    doubles. A detection passing no GT of its group at the loosest threshold is dropped
    before the walk, and a group where every remaining detection passes exactly one GT is
    solved in closed form ("the best-ranked detection passing at t takes the GT").
    """
    thresholds = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
    higher_is_better(rule)
    if ties not in ("first", "last"):
        raise ValueError(f"ties must be 'first' or 'last', got {ties!r}")
    if thresholds.ndim != 1 or not np.isfinite(thresholds).all():
        raise ValueError("thresholds must be a 1-D array of finite numbers")
    if (gt_area is None) != (area_ranges is None):
        raise ValueError("gt_area and area_ranges go together")
    dt_group, gt_group = np.asarray(dt_group), np.asarray(gt_group)
    for name, groups in (("dt_group", dt_group), ("gt_group", gt_group)):
        if groups.size > 1 and (groups[1:] < groups[:-1]).any():
            raise ValueError(f"{name} must be sorted")
    ranges = None if area_ranges is None else np.asarray(area_ranges, dtype=np.float64).reshape(-1, 2)
    A, T, D = 1 if ranges is None else len(ranges), thresholds.size, dt_group.size
    # the groups with detections only (a group id may run to images x classes: 29 million
    # at Objects365's scale, while 1.2 million detections occupy far fewer)
    first = np.ones(D, bool)
    first[1:] = dt_group[1:] != dt_group[:-1]
    present = dt_group[first]
    gt_start = np.searchsorted(gt_group, present, side="left")
    gt_count = np.searchsorted(gt_group, present, side="right") - gt_start
    cut = better(thresholds, rule)
    problem = _Problem(
        dt_group=dt_group, similarity=similarity, rule=rule, cut=cut, loosest=float(cut.min()),
        strict=_oriented_rule(rule), last=ties == "last", present=present, gt_start=gt_start,
        gt_count=gt_count,
        gt_crowd=None if gt_crowd is None else np.asarray(gt_crowd, bool),
        gt_area=gt_area, ranges=ranges, n_ranges=A,
        matched=np.zeros((D, A * T), bool), ignored=np.zeros((D, A * T), bool),
        gt_out=np.full((D, A * T), -1, np.int64) if return_gt else None)
    det_gt_count = gt_count[np.cumsum(first) - 1] if D else np.zeros(0, np.int64)
    for low, high in _buckets(int(det_gt_count.max(initial=0))):
        dets = np.flatnonzero((det_gt_count >= low) & (det_gt_count <= high))
        if dets.size:
            _match_bucket(problem, dets, high)
    return GreedyMatches(problem.matched, problem.ignored, problem.gt_out)


def reference_greedy(values: np.ndarray, dt_group: np.ndarray, gt_group: np.ndarray,
                     thresholds: Sequence[float], rule: Rule, ties: TieOrder,
                     crowd: np.ndarray | None = None, area: np.ndarray | None = None,
                     ranges: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The readable form of :func:`greedy_match`, a plain Python walk its tests compare it
    with: on the (D, G) matrix ``values``, per group, threshold and area range, walk the
    detections in order, scan the GTs of the group that are free (or crowd), keep those
    passing the rule; regular ones first, ignored ones (crowd, or area outside the range)
    only if no regular one passes; the best value wins, ties to the first or last. Returns
    ``(matched GT or -1, ignored)``, each (D, ranges × thresholds)."""
    D, G = values.shape
    ranges = [(-np.inf, np.inf)] if ranges is None else [tuple(r) for r in ranges]
    crowd = [False] * G if crowd is None else [bool(c) for c in crowd]
    T = len(thresholds)
    taken_gt = np.full((D, len(ranges) * T), -1, np.int64)
    ignored = np.zeros((D, len(ranges) * T), bool)
    higher = higher_is_better(rule)
    for a, (low, high) in enumerate(ranges):
        is_ignored = [crowd[j] or (area is not None and (area[j] < low or area[j] > high))
                      for j in range(G)]
        for t, threshold in enumerate(thresholds):
            column = a * T + t
            for group in sorted(set(dt_group.tolist())):
                gts = [j for j in range(G) if gt_group[j] == group]
                taken: set[int] = set()
                for i in (i for i in range(D) if dt_group[i] == group):
                    free = [j for j in gts
                            if (j not in taken or crowd[j]) and passes(values[i, j], threshold, rule)]
                    candidates = [j for j in free if not is_ignored[j]] or free
                    best = None
                    for j in candidates:
                        if best is None:
                            best = j
                        elif values[i, j] == values[i, best]:
                            best = j if ties == "last" else best
                        elif (values[i, j] > values[i, best]) == higher:
                            best = j
                    if best is not None:
                        taken.add(best)
                        taken_gt[i, column] = best
                        ignored[i, column] = is_ignored[best]
    return taken_gt, ignored


def _buckets(largest: int) -> list[tuple[int, int]]:
    """GT-count ranges [0, 0], [1, 1], [2, 3], [4, 7], ...: padding at most doubles."""
    out, low = [(0, 0)], 1
    while low <= largest:
        out.append((low, 2 * low - 1))
        low *= 2
    return out


def _match_bucket(p: _Problem, dets: np.ndarray, width: int) -> None:
    """Greedy matching of the detections ``dets`` (their groups have <= ``width`` GTs).

    A detection that passes no GT of its group at the loosest threshold can match nothing
    and takes nothing away from the others, so only the rest are walked, round by round
    (the r-th such detection of every group in round r), with areas and thresholds on one
    axis."""
    if width == 0:
        return  # no GT: nothing to match
    groups, local = np.unique(p.dt_group[dets], return_inverse=True)
    cols = np.arange(width)
    at = np.searchsorted(p.present, groups)
    valid = cols[None, :] < p.gt_count[at][:, None]
    slots = np.where(valid, p.gt_start[at][:, None] + cols[None, :], 0)
    crowd = p.gt_crowd[slots] & valid if p.gt_crowd is not None else np.zeros(valid.shape, bool)
    values = np.asarray(p.similarity(dets, slots[local], crowd[local]), dtype=np.float64)
    if values.shape != (dets.size, width):
        raise ValueError(f"similarity returned shape {values.shape}, expected {(dets.size, width)}")
    score = better(values, p.rule)
    score[~valid[local]] = -np.inf  # padding: worse than any finite threshold
    passing = passes(score, p.loosest, p.strict)
    hopeful = passing.any(axis=1)
    if not hopeful.any():
        return
    dets, local, score, passing = dets[hopeful], local[hopeful], score[hopeful], passing[hopeful]
    A, T = p.n_ranges, p.cut.size
    # (groups, A, width): ignored GT per area range
    gt_ig = crowd[:, None, :]
    if p.ranges is not None:
        area = p.gt_area[slots]
        gt_ig = gt_ig | (area[:, None, :] < p.ranges[None, :, :1]) | \
            (area[:, None, :] > p.ranges[None, :, 1:])
    contested = np.zeros(groups.size, bool)
    contested[local[passing.sum(axis=1) > 1]] = True
    simple = ~contested[local]
    if simple.any():
        _match_simple(p, dets[simple], local[simple], score[simple], passing[simple], slots, crowd, gt_ig)
        if simple.all():
            return
        dets, local, score = dets[~simple], local[~simple], score[~simple]
    gt_ig = np.repeat(gt_ig, T, axis=1)  # (groups, A * T, width)
    cut = np.tile(p.cut, A)[None, :, None]
    crowd_taken_ok = crowd[:, None, :]
    taken = np.zeros((groups.size, A * T, width), bool)
    # round of each detection: its position among its group's hopeful detections (dets
    # are sorted by group, then rank)
    start = np.searchsorted(local, local, side="left")
    rounds = np.arange(local.size) - start
    order = np.argsort(rounds, kind="stable")
    bounds = np.searchsorted(rounds[order], np.arange(int(rounds.max()) + 2))
    for r in range(bounds.size - 1):
        at = order[bounds[r]:bounds[r + 1]]
        g = local[at]
        value = score[at][:, None, :]  # (n, 1, width)
        eligible = passes(value, cut, p.strict) & ~(taken[g] & ~crowd_taken_ok[g])
        ig = gt_ig[g]
        regular = eligible & ~ig
        has_regular = regular.any(axis=2, keepdims=True)
        candidates = np.where(has_regular, regular, eligible & ig)
        # candidates pass a finite cut, so they are > -inf: the others never win
        ranked = np.where(candidates, value, -np.inf)
        best = width - 1 - np.argmax(ranked[:, :, ::-1], axis=2) if p.last else np.argmax(ranked, axis=2)
        rows, cs = np.nonzero(candidates.any(axis=2))
        chosen = best[rows, cs]
        who = dets[at][rows]
        p.matched[who, cs] = True
        p.ignored[who, cs] = ig[rows, cs, chosen]
        taken[g[rows], cs, chosen] = True
        if p.gt_out is not None:
            p.gt_out[who, cs] = slots[g[rows], chosen]


def _match_simple(p: _Problem, dets: np.ndarray, local: np.ndarray, score: np.ndarray,
                  passing: np.ndarray, slots: np.ndarray, crowd: np.ndarray, gt_ig: np.ndarray) -> None:
    """Groups where every detection passes a single GT at the loosest threshold: there the
    greedy walk reduces to "the best-ranked detection passing at t takes the GT" (every one
    does, for a crowd GT), the same in every area range and for either tie order."""
    width = score.shape[1]
    column = np.argmax(passing, axis=1)
    value = score[np.arange(dets.size), column]
    target = local * width + column
    # dets are increasing, and within a group index order is rank order
    order = np.argsort(target, kind="stable")
    target, value, column, local, dets = (x[order] for x in (target, value, column, local, dets))
    over = passes(value[None, :], p.cut[:, None], p.strict)  # (T, n)
    seen = np.cumsum(over, axis=1)
    start = np.searchsorted(target, target, side="left")
    before = np.where(start > 0, seen[:, np.maximum(start - 1, 0)], 0)
    first = over & (seen - before == 1)
    hit = np.where(crowd[local, column][None, :], over, first)
    A, T = p.n_ranges, p.cut.size
    hit = np.tile(hit.T, A)  # (n, A * T)
    p.matched[dets] = hit
    p.ignored[dets] = hit & np.repeat(gt_ig[local, :, column], T, axis=1)
    if p.gt_out is not None:
        p.gt_out[dets] = np.where(hit, slots[local, column][:, None], -1)
