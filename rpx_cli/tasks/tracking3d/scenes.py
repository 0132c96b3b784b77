"""tracking3d's unit, a scene: its samples in time order and their boxes.

Where a scene comes from: a folder ``<scene>/<sample>.json`` (one sample per file, combined
by :meth:`~rpx_cli.tasks.base.Task.combine`), a ``{sample: boxes}`` document in memory
(``Evaluator.update(scene, pred, gt)``), or the scenes of a submission-layout GT file.

**Time order and timestamps.** The GT side orders a scene: by the samples' timestamps when
every sample has one (a ``timestamp`` on its GT boxes, ``{"timestamp": T, "boxes": [...]}``,
or a GT file's ``timestamps``), else by name (a folder) or as given (a document, a GT file's
``scenes`` list). Interpolation weighs boxes by time, so a sample without a timestamp gets
one from its neighbours: linearly between the nearest known ones, extended with the
nearest spacing at the ends, or its position (0, 1, 2, ...) when none is known — equal
spacing, which gives the devkit's numbers whenever the real samples are equally spaced.
Timestamps must increase along the order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rpx_cli.errors import InputError
from rpx_cli.io.tracks3d import TrackSample
from rpx_cli.ops.track_scenes import TrackSide


@dataclass
class Scene:
    """One side of a scene: samples by name; the GT side also orders them in time."""

    samples: dict[str, TrackSample]
    order: list[str] | None = None  # GT: sample names in time order
    timestamps: np.ndarray | None = None  # GT: float64 per sample of ``order``

    def n_boxes(self) -> int:
        return sum(len(sample) for sample in self.samples.values())


def gt_scene(samples: Mapping[str, TrackSample], names: Sequence[str], path: str, *,
             sort_by_time: bool, stamps: Mapping[str, int] | None = None) -> Scene:
    """The GT side of a scene: ``names`` in the order given (``sort_by_time``: by timestamp
    when every sample has one) with every sample's timestamp (module doc)."""
    given = {name: (stamps or {}).get(name, samples[name].timestamp if name in samples else None)
             for name in names}
    for name in names:
        sample = samples.get(name)
        if sample is not None and sample.timestamp is not None and \
                given[name] != sample.timestamp:
            raise InputError(f"sample {name!r}: its boxes' timestamp {sample.timestamp} is not "
                             f"the one given for it ({given[name]})", path=path)
    order = list(names)
    known = [given[name] is not None for name in order]
    if sort_by_time and all(known) and order:
        order.sort(key=lambda name: (given[name], name))
    times = np.array([np.nan if given[name] is None else float(given[name]) for name in order])
    if len(order) > 1 and all(known):
        steps = np.diff(times)
        if (steps <= 0).any():
            at = int(np.flatnonzero(steps <= 0)[0])
            raise InputError(f"samples {order[at]!r} and {order[at + 1]!r} have timestamps "
                             f"{int(times[at])} and {int(times[at + 1])}: a scene's timestamps "
                             "must increase", path=path)
    return Scene(dict(samples), order, fill_timestamps(times, order, path))


def fill_timestamps(times: np.ndarray, order: Sequence[str], path: str) -> np.ndarray:
    """``times`` with every NaN filled from the known ones (module doc)."""
    known = np.flatnonzero(~np.isnan(times))
    if known.size == times.size:
        return times
    if known.size == 0:
        return np.arange(times.size, dtype=np.float64)
    if known.size == 1:
        return times[known[0]] + (np.arange(times.size) - known[0]).astype(np.float64)
    if (np.diff(times[known]) <= 0).any():
        raise InputError(f"the timestamps of the scene's samples ({', '.join(order[:3])}, ...) "
                         "must increase in time order", path=path)
    positions = np.arange(times.size, dtype=np.float64)
    filled = np.interp(positions, known.astype(np.float64), times[known])
    first, second, last, before = known[0], known[1], known[-1], known[-2]
    low = positions < first
    filled[low] = times[first] - (first - positions[low]) * \
        (times[second] - times[first]) / (second - first)
    high = positions > last
    filled[high] = times[last] + (positions[high] - last) * \
        (times[last] - times[before]) / (last - before)
    return filled


def scene_sides(pred: Scene, gt: Scene, classes: Sequence[str],
                path: str) -> tuple[TrackSide, TrackSide]:
    """Both sides as columns over the GT's time order, with class and track codes."""
    assert gt.order is not None
    index = {name: k for k, name in enumerate(gt.order)}
    extra = [name for name in pred.samples if name not in index]
    if extra:
        raise InputError(f"{len(extra)} predicted sample(s) are not among the scene's GT samples "
                         f"(e.g. {extra[0]!r})", path=path)
    codes = {name: k for k, name in enumerate(classes)}
    return _side(gt, index, codes, False), _side(pred, index, codes, True)


def _side(scene: Scene, index: Mapping[str, int], codes: Mapping[str, int],
          prediction: bool) -> TrackSide:
    parts = sorted((index[name], sample) for name, sample in scene.samples.items() if len(sample))
    if not parts:
        return TrackSide(np.zeros(0, np.int64), np.zeros((0, 2)), np.zeros(0), np.zeros(0, np.int64),
                         np.zeros(0, np.int64), np.zeros(0) if prediction else None,
                         np.zeros(0, np.int64))
    counts = [len(sample) for _, sample in parts]
    sample = np.repeat(np.array([k for k, _ in parts], np.int64), counts)
    ids = [i for _, s in parts for i in s.ids]
    _, track = np.unique(np.array(ids, dtype=object).astype(str), return_inverse=True)
    label = np.fromiter((codes[n] for _, s in parts for n in s.names), np.int64, count=len(ids))
    return TrackSide(sample, np.concatenate([s.xy for _, s in parts]),
                     np.concatenate([s.distance for _, s in parts]), label,
                     track.astype(np.int64).ravel(),
                     np.concatenate([s.score for _, s in parts]) if prediction else None,
                     np.concatenate([s.num_pts for _, s in parts]))
