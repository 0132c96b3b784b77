"""``rpx eval TASK --manifest F``: the ``strata`` section of an eval report.

:func:`plan` reads the manifest and checks it against the stems being evaluated (before
any pair is evaluated, so a bad manifest costs nothing); :func:`inputs` takes each row's
primary metric with its phase and difficulty; :func:`section` computes the strata. A
``--shard`` report stores the inputs in its ``state`` and ``rpx merge`` calls
:func:`section` on all of them, so a merged report equals a single run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from rpx_cli.deploy.strata import compute_strata
from rpx_cli.errors import InputError, ParameterError
from rpx_cli.io.manifest import Manifest, read_manifest
from rpx_cli.io.regular import read_bytes


@dataclass
class StrataPlan:
    manifest: Manifest
    sha256: str
    metric: str
    direction: str
    bootstrap: int
    seed: int
    problems: list[str]

    @property
    def params(self) -> dict[str, Any]:
        return {"manifest": self.manifest.path, "primary_metric": self.metric,
                "bootstrap": self.bootstrap, "seed": self.seed}


def plan(path: str, task: Any, params: Any, stems: list[str], *, primary_metric: str | None,
         bootstrap: int, seed: int, missing: str) -> StrataPlan:
    """Read and check the manifest (the values come converted by their declarations:
    :class:`rpx_cli.run.options.Strata`). Label and pairing problems are input errors under
    ``--missing error``; otherwise they are reported under ``strata.problems``."""
    metric = primary_metric or task.primary_metric
    info = task.metric_info(params)
    if metric is None or metric not in info:
        known = ", ".join(sorted(k for k, v in info.items() if v.direction in ("higher", "lower")))
        raise ParameterError(f"primary metric {metric!r} is not a metric of {task.name} "
                             f"(known: {known})")
    for family in params.get("skipped_metrics", ()):
        if metric in task.families[family][0]:
            raise ParameterError(f"primary metric {metric!r} is computed by the metric family "
                                 f"{family!r}, which --metrics leaves out: include it, or "
                                 "choose another --primary-metric")
    manifest = read_manifest(path, load_poses=False)
    sha256 = hashlib.sha256(read_bytes(path)).hexdigest()
    problems = manifest.problems + manifest.check_stems(stems)
    if problems and missing == "error":
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(f"{problems[0]}{more}; --missing skip evaluates anyway and lists them "
                         "under strata.problems", path=path)
    return StrataPlan(manifest, sha256, metric, info[metric].direction, bootstrap, seed, problems)


def inputs(plan: StrataPlan, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Per row (stem order): the primary metric, phase and difficulty."""
    samples = plan.manifest.samples
    out: dict[str, list[Any]] = {"stems": [], "values": [], "phases": [], "difficulties": []}
    for row in rows:
        sample = samples.get(row["stem"])
        value = row.get(plan.metric)
        out["stems"].append(row["stem"])
        out["values"].append(value if isinstance(value, int | float) and not isinstance(value, bool)
                             else None)
        out["phases"].append(sample.phase if sample else None)
        out["difficulties"].append(sample.difficulty if sample else None)
    return out


def section(settings: dict[str, Any], direction: str, data: dict[str, list[Any]],
            problems: list[str]) -> dict[str, Any]:
    """The strata section from ``inputs`` (rows in stem order) and the plan's settings."""
    strata = compute_strata(data["values"], data["phases"], data["difficulties"],
                            metric=settings["primary_metric"], direction=direction,
                            bootstrap=settings["bootstrap"], seed=settings["seed"])
    strata["problems"] = list(problems)
    return strata
