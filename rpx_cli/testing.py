"""Conformance checks for third-party metric calculators (use them in a plugin's tests).

    from rpx_cli.testing import check_calculator

    def test_my_calculator():
        check_calculator(MyMetric(), samples=[(pred, gt), ...],
                         perfect=(gt, gt), ideal={"my_metric": 0.0},
                         undefined=(pred, empty_gt))

Each check raises ``AssertionError`` saying what is wrong. :func:`summarize_samples` runs a
task's ``summarize`` on samples built in a test (no files), as the engine would.
"""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

from rpx_cli.tasks.base import Params, Sample, Task
from rpx_cli.tasks.calculators import MetricCalculator
from rpx_cli.tasks.stats import Collector, StatTable


def stat_table(task: Task, samples: Sequence[Sample], params: Params) -> StatTable:
    """The statistics table the engine would build from ``samples`` (in order)."""
    collector = Collector(task.statistics(params))
    for sample in samples:
        collector.add(sample.values)
    return collector.table()


def summarize_samples(task: Task, samples: Sequence[Sample], params: Params) -> dict[str, Any]:
    """``task.summarize`` of the statistics of ``samples`` (in order)."""
    return task.summarize(stat_table(task, samples, params), params)


def check_calculator(calculator: MetricCalculator, samples: Sequence[tuple[Any, Any]], *,
                     perfect: tuple[Any, Any] | None = None,
                     ideal: Mapping[str, float] | None = None,
                     undefined: tuple[Any, Any] | None = None,
                     tolerance: float = 1e-12) -> None:
    """What rpx relies on when it runs a calculator on every pair:

    - ``compute`` returns a dict of metric -> number or None, never NaN or infinity
      (undefined is None), with the same keys for every sample;
    - every metric has a direction (``higher``/``lower``/``none``) in ``directions``;
    - it is pure: the same values twice, inputs left unchanged; and picklable (rpx runs it
      in worker processes);
    - the mean over rows does not depend on how rows are split (shards) or ordered;
    - a perfect prediction scores ``ideal``; an undefined case gives None for every metric.
    """
    assert samples, "give at least one (prediction, ground_truth) sample"
    assert isinstance(getattr(calculator, "name", None), str), "calculator needs a str 'name'"
    pickle.loads(pickle.dumps(calculator))
    keys = None
    rows = []
    for index, (prediction, truth) in enumerate(samples):
        before = (copy.deepcopy(prediction), copy.deepcopy(truth))
        first = calculator.compute(prediction, truth)
        second = calculator.compute(prediction, truth)
        _check_values(first, f"sample {index}")
        assert first == second, f"sample {index}: compute is not deterministic"
        assert _same(before, (prediction, truth)), f"sample {index}: compute changed its inputs"
        if keys is None:
            keys = set(first)
        assert set(first) == keys, f"sample {index}: keys {sorted(first)} differ from {sorted(keys)}"
        rows.append(first)
    for key in keys or ():
        way = calculator.directions.get(key)
        assert way in ("higher", "lower", "none"), f"{key}: directions must say higher/lower/none"
        values = [row[key] for row in rows if row[key] is not None]
        if values:
            whole = math.fsum(values) / len(values)
            half = len(values) // 2
            parts = math.fsum([math.fsum(values[:half]), math.fsum(values[half:])]) / len(values)
            reverse = math.fsum(reversed(values)) / len(values)
            assert whole == parts == reverse, f"{key}: the mean depends on splitting or order"
    if perfect is not None:
        assert ideal is not None, "give ideal= with perfect="
        got = calculator.compute(*perfect)
        for key, value in ideal.items():
            assert got.get(key) is not None and abs(got[key] - value) <= tolerance, (
                f"perfect prediction: {key} = {got.get(key)}, expected {value}")
    if undefined is not None:
        got = calculator.compute(*undefined)
        _check_values(got, "undefined case")
        assert all(value is None for value in got.values()), (
            f"undefined case must give None for every metric, got {got}")


def _check_values(values: Any, where: str) -> None:
    assert isinstance(values, Mapping), f"{where}: compute must return a dict"
    for key, value in values.items():
        assert isinstance(key, str), f"{where}: metric names must be str"
        if value is None:
            continue
        assert isinstance(value, (int, float)) and not isinstance(value, bool), (
            f"{where}: {key} = {value!r} is not a number or None")
        assert math.isfinite(value), f"{where}: {key} = {value} (undefined must be None, not NaN)"


def _same(a: Any, b: Any) -> bool:
    try:
        import numpy as np

        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
                np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    except ImportError:  # pragma: no cover
        pass
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if hasattr(a, "_asdict") and hasattr(b, "_asdict"):
        return _same(tuple(a), tuple(b))
    return a == b
