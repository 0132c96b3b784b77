"""Running temporal stability over a manifest's frames (``rpx stability``): planning
(which frames, in which order, with which warp), the engine job that reads the prediction
and depth files of a run of frames and scores its consecutive pairs (on the same workers,
buffers and digests as ``rpx eval``), and the ``rpx.stability`` report. The per-pair and
per-sequence metric, and its conventions, are in :mod:`rpx_cli.deploy.stability`.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rpx_cli.deploy.stability import (
    DEPTH_SUFFIXES,
    LABEL_SUFFIXES,
    METRIC_INFO,
    OCCLUSION_ABSOLUTE_M,
    OCCLUSION_RELATIVE,
    SCHEMA,
    SCHEMA_VERSION,
    Intrinsics,
    PairScore,
    Progress,
    ShapeMismatch,
    _wh,
    depth_pair,
    mean_score,
    segmentation_pair,
)
from rpx_cli.engine import CacheTally, Digests, Worker, pair_error, run_units
from rpx_cli.errors import EvaluationFailed, InputError, PairError, ParameterError
from rpx_cli.io.arrays import read_array
from rpx_cli.io.depth_maps import to_depth
from rpx_cli.io.digest_cache import DigestCache
from rpx_cli.io.discover import list_stems
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.io.label_images import read_label_image
from rpx_cli.io.manifest import Manifest, ManifestEntry, read_manifest

SINGLE_SEQUENCE = "all"  # the name of the one sequence of a manifest without sequences


@dataclass(frozen=True)
class SequenceFrame:
    """One frame to read: its prediction (and GT depth) relative to the folders."""

    stem: str
    frame: int
    pred_rel: str
    depth_rel: str | None
    pose: np.ndarray | None
    intrinsics: Intrinsics | None


@dataclass
class StabilityPlan:
    """What :func:`run_stability` will read, in which order, with which warp."""

    task: str
    requested_warp: str
    warp: str
    pred_dir: str
    manifest: str
    depth_dir: str | None
    missing: str
    sequences: dict[str, list[SequenceFrame]]
    labels: dict[str, dict[str, str | None]]  # sequence -> {scene, phase}
    pred_only: list[str] = field(default_factory=list)
    manifest_only: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def n_frames(self) -> int:
        return sum(len(frames) for frames in self.sequences.values())


def plan_stability(task: str, pred_dir: str, manifest_path: str, *, warp: str = "auto",
                   depth_dir: str | None = None, missing: str = "error") -> StabilityPlan:
    """Pair the manifest with the prediction files, group and order the frames, pick the
    warp. Problems (a stem on one side only, a frame that cannot be ordered, two frames
    with one number, a frame without GT depth) are input errors under ``missing="error"``;
    under ``"skip"`` those frames are left out and listed. The values are converted by their
    declarations (:data:`rpx_cli.params.workflows.STABILITY_OPTIONS`) before they come here
    (:func:`rpx_cli.run.stability.run_stability_report`)."""
    if depth_dir is not None and task == "depth":
        raise ParameterError("--depth-dir (GT depth) is for --task segmentation: the depth task "
                             "reprojects with its own predictions")
    if warp == "reproject" and task == "segmentation" and depth_dir is None:
        raise ParameterError("--warp reproject for segmentation needs --depth-dir (GT depth of "
                             "the frames)")
    manifest = read_manifest(manifest_path)
    preds = list_stems(pred_dir, DEPTH_SUFFIXES if task == "depth" else LABEL_SUFFIXES)
    problems: list[PairError] = [PairError("", manifest_path, text) for text in manifest.problems]
    skipped: list[dict[str, str]] = [{"stem": "", "reason": text} for text in manifest.problems]

    def reject(stem: str, path: str, reason: str) -> None:
        problems.append(PairError(stem, path, reason))
        skipped.append({"stem": stem, "reason": reason})

    manifest_only = sorted(stem for stem in manifest.samples if stem not in preds)
    pred_only = sorted(stem for stem in preds if stem not in manifest.samples)
    for stem in manifest_only:
        problems.append(PairError(stem, manifest_path, f"{stem}: no prediction with this stem in "
                                                       f"{pred_dir}"))
    for stem in pred_only:
        problems.append(PairError(stem, os.path.join(pred_dir, preds[stem]),
                                  f"no entry for this stem in {manifest_path}"))
    samples = [manifest.samples[stem] for stem in sorted(preds) if stem in manifest.samples]
    groups: dict[str, list[ManifestEntry]] = {}
    # a manifest that names no sequence, scene or phase at all describes one sequence
    single = not any(sample.group for sample in samples)
    for sample in samples:
        if sample.frame is None:
            reject(sample.stem, manifest_path, f"{sample.stem}: no 'frame' number: the frame "
                                               "cannot be ordered in its sequence")
        elif not sample.group and not single:
            reject(sample.stem, manifest_path, f"{sample.stem}: no 'sequence' (nor scene/phase), "
                                               "unlike other frames: it belongs to no sequence")
        else:
            groups.setdefault(sample.group or SINGLE_SEQUENCE, []).append(sample)
    for name, members in groups.items():
        by_frame: dict[int, list[str]] = {}
        for sample in members:
            by_frame.setdefault(sample.frame, []).append(sample.stem)
        clashes = {n: stems for n, stems in by_frame.items() if len(stems) > 1}
        for number, stems in sorted(clashes.items()):
            for stem in stems:
                reject(stem, manifest_path, f"{stem}: frame {number} of sequence {name!r} is also "
                                            f"given by {', '.join(s for s in stems if s != stem)}")
        groups[name] = sorted((s for s in members if s.frame not in clashes), key=lambda s: s.frame)

    kept = [sample for members in groups.values() for sample in members]
    used, warnings = _choose_warp(task, warp, kept, depth_dir, manifest)
    depth_files: dict[str, str] = {}
    if used == "reproject" and task == "segmentation":
        depth_files = list_stems(depth_dir, DEPTH_SUFFIXES)
        for name, members in groups.items():
            for sample in members:
                if sample.stem not in depth_files:
                    reject(sample.stem, depth_dir, f"{sample.stem}: no GT depth with this stem in "
                                                   f"{depth_dir}")
            groups[name] = [s for s in members if s.stem in depth_files]
    elif depth_dir is not None:
        warnings.append(f"--depth-dir is not used by --warp {used}")
    if problems and missing == "error":
        raise EvaluationFailed(problems, len(problems),
                               f"{len(problems)} problem(s) pairing {manifest_path} with {pred_dir}; "
                               "no report written (--missing skip leaves those frames out and "
                               "lists them)")
    if problems:
        warnings.append(f"{len(problems)} problem(s) pairing {manifest_path} with {pred_dir} "
                        "(--missing skip): the frames that cannot be used are left out and listed "
                        "under 'unpaired' and 'skipped'")
    sequences = {
        name: [SequenceFrame(s.stem, s.frame, preds[s.stem], depth_files.get(s.stem), s.pose, s.intrinsics)
               for s in members]
        for name, members in sorted(groups.items()) if members
    }
    labels = {name: {"scene": _uniform([s.scene for s in groups[name]]),
                     "phase": _uniform([s.phase for s in groups[name]])} for name in sequences}
    if not sequences:
        raise InputError(f"no frame to evaluate: {pred_dir} and {manifest_path} share no usable "
                         "stem", path=manifest_path)
    return StabilityPlan(task, warp, used, pred_dir, manifest_path, depth_dir, missing, sequences, labels,
                pred_only=pred_only, manifest_only=manifest_only,
                skipped=[s for s in skipped if s["stem"]], warnings=warnings)


def _uniform(values: list[str | None]) -> str | None:
    return values[0] if values and all(v == values[0] for v in values) else None


def _choose_warp(task: str, warp: str, samples: list[ManifestEntry], depth_dir: str | None,
                 manifest: Manifest) -> tuple[str, list[str]]:
    no_pose = [s.stem for s in samples if s.pose is None]
    no_intrinsics = [s.stem for s in samples if s.intrinsics is None]
    if warp == "reproject":
        lacking = sorted(set(no_pose) | set(no_intrinsics))
        if lacking:
            raise InputError(f"{len(lacking)} sample(s) have no pose or no intrinsics, which "
                             f"--warp reproject needs, e.g. {lacking[0]!r}", path=manifest.path)
        return warp, []
    if warp == "inplane":
        if no_pose:
            raise InputError(f"{len(no_pose)} sample(s) have no pose, which --warp inplane needs, "
                             f"e.g. {no_pose[0]!r}", path=manifest.path)
        return warp, []
    if warp == "none":
        return warp, []
    depth_source = task == "depth" or depth_dir is not None
    if not no_pose and not no_intrinsics and depth_source:
        return "reproject", []
    if no_pose or no_intrinsics:
        why = (f"{len(no_pose)} sample(s) of {manifest.path} have no pose" if no_pose else
               f"{len(no_intrinsics)} sample(s) of {manifest.path} have no intrinsics")
    else:
        why = "segmentation needs --depth-dir (GT depth) to reproject"
    used = "inplane" if not no_pose else "none"
    return used, [f"--warp reproject is not possible ({why}): using --warp {used}"]


@dataclass(frozen=True)
class Settings:
    """Everything a worker needs besides its frames."""

    task: str
    warp: str
    pred_dir: str
    depth_dir: str | None
    depth_scale: float
    ignore_index: tuple[int, ...]


@dataclass
class UnitResult:
    scores: list[PairScore]
    errors: list[PairError]
    digests: Digests
    tally: CacheTally


@dataclass
class StabilityRun:
    """The report body (no ``run_provenance``), the digests of the files read (role
    ``pred`` and ``depth``: relative path -> sha256), how many were computed or reused from
    the digest cache, and the warnings for stderr."""

    report: dict[str, Any]
    digests: Digests
    warnings: list[str]
    tally: CacheTally


def _no_warning(kind: str, path: str) -> None:
    pass


def _check_finite(values: np.ndarray, path: str) -> None:
    """A predicted depth map must be finite (one reduction; a precise count only when the
    sum is not finite)."""
    with np.errstate(all="ignore"):
        total = float(np.add.reduce(values, axis=None))
    if not math.isfinite(total):
        bad = values.size - int(np.count_nonzero(np.isfinite(values)))
        if bad:
            raise InputError(f"{bad} non-finite predicted depth value(s); mark pixels without a "
                             "prediction with 0", path=path)


def _depth_reader(depth_scale: float) -> Callable[[str, FileBuffer], np.ndarray]:
    def parse(path: str, buffer: FileBuffer) -> np.ndarray:
        loaded = read_array(path, buffer, npz_key="depth")
        return to_depth(loaded.array, loaded.format, depth_scale, path).metres(np.float32)
    return parse


@dataclass
class FrameRunJob:
    """The engine's job for stability: read a run of consecutive frames (alternating two
    buffers, so frame t stays valid while t+1 is read) and score each consecutive pair."""

    settings: Settings

    def _read(self, worker: Worker, frame: SequenceFrame, slot: int) -> tuple[np.ndarray, np.ndarray | None]:
        settings = self.settings
        path = os.path.join(settings.pred_dir, frame.pred_rel)
        if settings.task == "depth":
            values = worker.read("pred", path, frame.pred_rel, _depth_reader(settings.depth_scale),
                                 slot=slot)
            _check_finite(values, path)
        else:
            values = worker.read("pred", path, frame.pred_rel,
                                 lambda p, b: read_label_image(p, b).array, slot=slot)
        depth = None
        if frame.depth_rel is not None and settings.depth_dir is not None:
            depth_path = os.path.join(settings.depth_dir, frame.depth_rel)
            depth = worker.read("depth", depth_path, frame.depth_rel,
                                _depth_reader(settings.depth_scale), slot=slot)
            if depth.shape != values.shape:
                raise InputError(f"label map and GT depth differ in size: {path} is {_wh(values)}, "
                                 f"{depth_path} is {_wh(depth)}", path=depth_path)
        return values, depth

    def __call__(self, worker: Worker, frames: Sequence[SequenceFrame]) -> UnitResult:
        settings = self.settings
        scores: list[PairScore] = []
        errors: list[PairError] = []
        previous: tuple[np.ndarray, np.ndarray | None] | None = None
        for k, frame in enumerate(frames):
            try:
                current = self._read(worker, frame, k % 2)
            except InputError as exc:
                errors.append(pair_error(exc, frame.stem,
                                         os.path.join(settings.pred_dir, frame.pred_rel)))
                current = None
            if k > 0:
                score = PairScore(None, 0)
                if previous is not None and current is not None:
                    try:
                        score = _score_pair(settings, frames[k - 1], frame, previous, current)
                    except ShapeMismatch as exc:
                        first = os.path.join(settings.pred_dir, frames[k - 1].pred_rel)
                        second = os.path.join(settings.pred_dir, frame.pred_rel)
                        errors.append(PairError(frame.stem, second, f"{exc} ({first} and {second})"))
                scores.append(score)
            previous = current
        return UnitResult(scores, errors, worker.take_digests(), worker.take_tally())


def _score_pair(settings: Settings, first: SequenceFrame, second: SequenceFrame,
                a: tuple[np.ndarray, np.ndarray | None],
                b: tuple[np.ndarray, np.ndarray | None]) -> PairScore:
    geometry: dict[str, Any] = {}
    if settings.warp != "none":
        geometry = {"pose_t": first.pose, "pose_t1": second.pose}
    if settings.warp == "reproject":
        geometry.update(intrinsics_t=first.intrinsics, intrinsics_t1=second.intrinsics)
    if settings.task == "depth":
        return depth_pair(a[0], b[0], warp=settings.warp, **geometry)
    if settings.warp == "reproject":
        geometry.update(depth_t=a[1], depth_t1=b[1])
    return segmentation_pair(a[0], b[0], warp=settings.warp, ignore_index=settings.ignore_index,
                             **geometry)


def _units(plan: StabilityPlan, jobs: int) -> list[tuple[str, list[SequenceFrame]]]:
    """Contiguous runs of frames (overlapping by one frame, so every pair is in exactly one
    run): one per sequence with one job, about 4 per job otherwise."""
    if jobs <= 1:
        return list(plan.sequences.items())
    n_pairs = sum(max(len(f) - 1, 0) for f in plan.sequences.values())
    size = max(4, math.ceil(n_pairs / (jobs * 4)))
    units = []
    for name, frames in plan.sequences.items():
        if len(frames) < 2:
            units.append((name, frames))
            continue
        for start in range(0, len(frames) - 1, size):
            units.append((name, frames[start:start + size + 1]))
    return units


def run_stability(plan: StabilityPlan, *, depth_scale: float = 1000.0, ignore_index: Sequence[int] = (-1,),
                  jobs: int = 1, progress: Callable[[int], Progress | None] | None = None,
                  cache: DigestCache | None = None) -> StabilityRun:
    """Score every consecutive pair of every sequence of ``plan`` on the engine's workers;
    raises :class:`EvaluationFailed` listing every file that could not be used."""
    ignore = tuple(sorted(set(ignore_index)))
    settings = Settings(plan.task, plan.warp, plan.pred_dir, plan.depth_dir, depth_scale, ignore)
    units = _units(plan, jobs)
    n_pairs = sum(max(len(f) - 1, 0) for f in plan.sequences.values())
    advance = progress(n_pairs) if progress is not None else None
    scores: dict[str, list[PairScore]] = {name: [] for name in plan.sequences}
    errors: list[PairError] = []
    digests: Digests = {}
    tally = CacheTally()
    results = run_units(FrameRunJob(settings), [frames for _, frames in units], jobs=jobs,
                        cache=cache, progress=advance,
                        weight=lambda frames: max(len(frames) - 1, 0))
    with contextlib.closing(results):  # stops the workers at once on an error or a signal
        for (name, _), result in zip(units, results, strict=True):
            tally.add(result.tally)
            scores[name].extend(result.scores)
            errors.extend(e for e in result.errors if e not in errors)  # a shared frame: once
            for role, found in result.digests.items():
                digests.setdefault(role, {}).update(found)
    if errors:
        raise EvaluationFailed(errors, n_pairs,
                               f"{len(errors)} file(s) or pair(s) could not be used; no report "
                               "written")
    params: dict[str, Any] = {"warp": plan.requested_warp, "missing": plan.missing,
                              "occlusion": {"relative": OCCLUSION_RELATIVE,
                                            "absolute_m": OCCLUSION_ABSOLUTE_M}}
    if plan.task == "depth" or plan.warp == "reproject":
        params["depth_scale"] = float(depth_scale)
    if plan.task == "segmentation":
        params["ignore_index"] = list(ignore)
    report = stability_report(plan, scores, params)
    return StabilityRun(report, digests, list(plan.warnings), tally)


def stability_report(plan: StabilityPlan, scores: Mapping[str, list[PairScore]],
                     params: dict[str, Any]) -> dict[str, Any]:
    """The ``rpx.stability`` report body (``run_provenance`` is added by the caller)."""
    sequences: dict[str, Any] = {}
    every: list[float | None] = []
    for name, frames in plan.sequences.items():
        values = [s.value for s in scores[name]]
        every.extend(values)
        sequences[name] = {
            "ts_score": mean_score(values),
            "num_pairs": len(values),
            "n_null_pairs": sum(v is None for v in values),
            "n_frames": len(frames),
            "per_pair": values,
            "n_valid": [s.n_valid for s in scores[name]],
            "pairs": [[a.stem, b.stem] for a, b in itertools.pairwise(frames)],
            "frames": [f.frame for f in frames],
            **plan.labels[name],
        }
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "task": plan.task,
        "warp": plan.warp,
        "params": params,
        "ts_score": mean_score(every),
        "num_pairs": len(every),
        "n_null_pairs": sum(v is None for v in every),
        "n_frames": plan.n_frames,
        "n_sequences": len(sequences),
        "sequences": sequences,
        "unpaired": {"pred_only": plan.pred_only, "manifest_only": plan.manifest_only},
        "skipped": plan.skipped,
        "metric_info": METRIC_INFO,
    }
