"""Comparing two reports: every shared metric with its direction, a paired bootstrap over
the shared stems, and no-regression gates."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from rpx_cli.params.parsers import NoRegression, parse_no_regression  # noqa: F401 (re-exported)
from rpx_cli.report.gates import resolve, suggestions

_SKIP_SECTIONS = {"run_provenance", "metric_info", "params", "rows", "state", "statistics", "gates",
                  "unpaired", "errors", "confusion", "worst_frames"}


def flatten(report: Mapping[str, Any]) -> dict[str, float | None]:
    """Every numeric (or null) scalar of the report by dotted path, provenance and
    bookkeeping excluded: ``aggregate.absrel``, ``dataset.per_class.car.iou``, ``micro_iou``."""
    out: dict[str, float | None] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key in _SKIP_SECTIONS or str(key).startswith("curves"):  # chart data
                    continue
                walk(f"{prefix}.{key}" if prefix else str(key), value)
        elif node is None or (isinstance(node, (int, float)) and not isinstance(node, bool)):
            out[prefix] = node

    walk("", report)
    for key in ("schema_version",):
        out.pop(key, None)
    return out


def direction(report: Mapping[str, Any], path: str) -> str:
    """``higher`` / ``lower`` / ``none`` from ``metric_info`` (full key, else last part)."""
    info = report.get("metric_info") or {}
    name = path.rsplit(".", 1)[-1]
    for key in (name, re.sub(r"^(n_)", "", name)):
        if key in info:
            return info[key].get("direction", "none")
    return "none"


NO_CHANGE = "no significant change"
"""The status of a change whose paired-bootstrap 95 % interval contains 0 (docs/ci.md): the
point estimate moved, but the interval says the data cannot tell; ``point_status`` keeps
which way the estimate moved."""


def status(base: float | None, new: float | None, way: str) -> str:
    """How ``new`` differs from ``base`` given the direction ``way``: ``improved``,
    ``regressed``, ``changed`` (no direction), ``unchanged`` or ``n/a`` (a value is null) —
    the point estimate alone; :func:`compare_reports` turns a change its interval does not
    support into :data:`NO_CHANGE`."""
    if base is None or new is None:
        return "n/a"
    if new == base:
        return "unchanged"
    if way == "none":
        return "changed"
    better = new > base if way == "higher" else new < base
    return "improved" if better else "regressed"


def paired_bootstrap(base_rows: list[dict[str, Any]], new_rows: list[dict[str, Any]],
                     metrics: list[str], *, resamples: int, seed: int) -> dict[str, dict[str, Any]]:
    """95% interval of the mean per-row delta (new − base) over the stems both reports have,
    resampling stems with replacement (the same resamples for every metric), and from the
    same resamples each model's own mean with its interval (``base_ci95``, ``new_ci95``:
    the page draws both models on one chart). Vectorised: blocks of resamples are index
    matrices, no Python loop over rows."""
    base_by_stem = {row["stem"]: row for row in base_rows}
    shared = [(base_by_stem[row["stem"]], row) for row in new_rows if row["stem"] in base_by_stem]
    n = len(shared)
    if n == 0 or resamples <= 0:
        return {}
    deltas, valid, sides = {}, {}, {}
    for metric in metrics:
        values = np.array([[_num(b.get(metric)), _num(r.get(metric))] for b, r in shared], float)
        ok = np.isfinite(values).all(axis=1)
        if ok.any():
            deltas[metric] = np.where(ok, values[:, 1] - values[:, 0], 0.0)
            valid[metric] = ok.astype(np.float64)
            sides[metric] = np.where(ok[:, None], values, 0.0)
    rng = np.random.default_rng(seed)
    means = {metric: [] for metric in deltas}
    side_means = {metric: ([], []) for metric in deltas}
    block = max(1, min(resamples, 2_000_000 // n))
    for start in range(0, resamples, block):
        index = rng.integers(0, n, size=(min(block, resamples - start), n))
        for metric, delta in deltas.items():
            counts = valid[metric][index].sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                means[metric].append(delta[index].sum(axis=1) / counts)
                for side in (0, 1):
                    side_means[metric][side].append(sides[metric][index, side].sum(axis=1) / counts)
    out = {}
    for metric, delta in deltas.items():
        sample = np.concatenate(means[metric])
        kept = np.isfinite(sample)
        k = int(valid[metric].sum())
        low, high = (float(v) for v in np.percentile(sample[kept], [2.5, 97.5]))
        own = [[float(v) for v in np.percentile(np.concatenate(side_means[metric][side])[kept], [2.5, 97.5])]
               for side in (0, 1)]
        out[metric] = {"n_shared": k, "mean_delta": float(delta.sum() / k), "ci95": [low, high],
                       "significant": bool(low > 0 or high < 0), "resamples": resamples,
                       "seed": seed, "base_mean": float(sides[metric][:, 0].sum() / k),
                       "new_mean": float(sides[metric][:, 1].sum() / k),
                       "base_ci95": own[0], "new_ci95": own[1]}
    return out


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def check_no_regression(base: Mapping[str, Any], new: Mapping[str, Any],
                        gates: list[NoRegression]) -> list[dict[str, Any]]:
    results = []
    for gate in gates:
        where = ".".join(gate.path)
        found_b, value_b, _ = resolve(base, gate.path)
        found_n, value_n, _ = resolve(new, gate.path)
        way = direction(new, where)
        entry: dict[str, Any] = {"expr": gate.text, "value": None, "passed": False}
        if not (found_b and found_n):
            side, document = ("BASE", base) if not found_b else ("NEW", new)
            near = suggestions(document, where)
            hint = f"; did you mean {' or '.join(near)}?" if near else ""
            entry.update({"missing": True, "message": f"no such key {where} in {side}{hint}"})
        elif not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (value_b, value_n)):
            entry["message"] = f"{where} is null or not a number in one of the reports"
        elif way == "none":
            entry["message"] = f"{where} has no direction (higher or lower is better) in metric_info"
        else:
            tolerance = gate.tolerance * abs(value_b) if gate.relative else gate.tolerance
            worse_by = (value_b - value_n) if way == "higher" else (value_n - value_b)
            entry.update({"value": value_n - value_b, "passed": worse_by <= tolerance,
                          "message": f"{where}: {value_b:g} -> {value_n:g} ({way} is better), "
                                     f"{'within' if worse_by <= tolerance else 'beyond'} tolerance "
                                     f"{tolerance:g}"})
        results.append(entry)
    return results


def compare_reports(base: Mapping[str, Any], new: Mapping[str, Any], *, bootstrap: int,
                    seed: int, pooled: Mapping[str, dict[str, Any]] | None = None
                    ) -> list[dict[str, Any]]:
    """One entry per metric present in either report, shared ones first. ``significant``:
    whether the change's paired-bootstrap 95 % interval excludes 0 (None: the metric has no
    interval — a pooled figure of reports without statistics, or ``--bootstrap 0``). A
    change whose interval contains 0 has the status :data:`NO_CHANGE`, and ``point_status``
    says which way its estimate moved; significant changes and those without an interval
    keep their status. ``pooled``: the intervals of pooled figures by path
    (:func:`rpx_cli.run.pooled.pooled_bootstrap`), judged as the row metrics' are."""
    flat_base, flat_new = flatten(base), flatten(new)
    row_metrics = sorted({k for row in (base.get("rows") or [])[:1] for k, v in row.items()
                          if isinstance(v, (int, float)) and not isinstance(v, bool)})
    boot = paired_bootstrap(base.get("rows") or [], new.get("rows") or [], row_metrics,
                            resamples=bootstrap, seed=seed) if bootstrap else {}
    entries = []
    shared_first = sorted(set(flat_base) | set(flat_new),
                          key=lambda p: (p not in flat_base or p not in flat_new, p))
    for path in shared_first:
        b, n = flat_base.get(path), flat_new.get(path)
        way = direction(new if path in flat_new else base, path)
        entry: dict[str, Any] = {
            "metric": path, "base": b, "new": n,
            "delta": None if b is None or n is None else n - b,
            "rel_delta": None if b in (None, 0) or n is None else (n - b) / abs(b),
            "direction": way, "status": status(b, n, way),
        }
        name = path.split(".", 1)[1] if path.startswith("aggregate.") else None
        entry["significant"] = None
        interval = boot.get(name) if name is not None else (pooled or {}).get(path)
        if interval is not None:
            entry["bootstrap"] = interval
            moved = entry["status"] in MOVED
            entry["significant"] = interval["significant"] and moved
            if moved and not entry["significant"]:
                entry["point_status"], entry["status"] = entry["status"], NO_CHANGE
        entries.append(entry)
    return entries


CHANGED = ("improved", "regressed")
MOVED = (*CHANGED, "changed")  # the point estimate differs (with or without a direction)


def figure_name(path: str) -> str:
    """A metric as counted once: ``aggregate.absrel`` and ``dataset.absrel`` are one figure
    (``absrel``, the mean of rows and the pooled value), other paths are themselves."""
    for section in ("aggregate.", "dataset."):
        if path.startswith(section):
            return path[len(section):]
    return path


def summary(metrics: list[dict[str, Any]]) -> dict[str, int]:
    """Counts of figures (:func:`figure_name`: a metric's mean and pooled value count once)
    that improved, regressed, moved within their interval (``no_significant_change``) or
    stayed unchanged, and of those whose change is significant (95 % interval excludes 0).
    A figure that moved and has an interval (its mean of rows; its pooled value too, from
    ``--keep-state`` reports) takes the verdict of its entries with one — regressed if
    either regressed, then improved — over those without; otherwise a figure whose two
    values moved apart counts as regressed."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for m in metrics:
        by_name.setdefault(figure_name(m["metric"]), []).append(m)
    counts = {"improved": 0, "regressed": 0, "no_significant_change": 0, "unchanged": 0,
              "significant_improved": 0, "significant_regressed": 0}
    for entries in by_name.values():
        judged = [m for m in entries if m["status"] in (*CHANGED, NO_CHANGE)
                  and m.get("significant") is not None]
        statuses = {m["status"] for m in (judged or entries)}
        status = next((s for s in ("regressed", "improved") if s in statuses), None)
        if status is None:
            if NO_CHANGE in statuses:
                counts["no_significant_change"] += 1
            elif statuses == {"unchanged"}:
                counts["unchanged"] += 1
            continue
        counts[status] += 1
        if any(m.get("significant") and m["status"] == status for m in entries):
            counts[f"significant_{status}"] += 1
    return counts


def summary_text(counts: Mapping[str, Any]) -> str:
    """``2 regressed (1 significant), 3 improved (0 significant), 4 no significant change,
    9 unchanged``."""
    parts = [f"{counts.get(s, 0)} {s} ({counts.get('significant_' + s, 0)} significant)"
             for s in ("regressed", "improved")]
    return ", ".join([*parts, f"{counts.get('no_significant_change', 0)} {NO_CHANGE}",
                      f"{counts.get('unchanged', 0)} unchanged"])


def verdict(metric: Mapping[str, Any], words: Mapping[str, str] | None = None) -> str:
    """A metric's change as every view writes it: ``regressed`` and ``improved`` (or
    ``words`` for them, e.g. worse/better) qualified as significant (the 95 % interval
    excludes 0) or without an interval (``no CI``); a change whose interval contains 0 is
    :data:`NO_CHANGE` (also in a comparison written before that status existed)."""
    status = str(metric.get("status"))
    significant = metric.get("significant")
    if status not in CHANGED:
        return status
    if significant is False:
        return NO_CHANGE
    word = (words or {}).get(status, status)
    return f"{word} (no CI)" if significant is None else f"{word} (significant)"


def order_key(metric: Mapping[str, Any]) -> tuple[int, str]:
    """Significant regressions first, then regressions without an interval, significant
    improvements, improvements without one, changes within their interval, the rest; by
    name within each."""
    status, significant = metric.get("status"), metric.get("significant")
    rank = {("regressed", True): 0, ("regressed", None): 1, ("improved", True): 2,
            ("improved", None): 3}.get((status, significant), 4)
    if rank == 4 and verdict(metric) != NO_CHANGE:
        rank = 5
    return rank, str(metric.get("metric"))
