"""What every task provides to the engine and the report.

A task is a stateless object. The engine calls, per pair and inside a worker process:
``read`` (which readers the task uses; the only method that sees a path), then
``evaluate`` (a pure function of the loaded data returning one row of metrics; keys
starting with ``_`` are private and never reach the report), then ``row_stats`` (the row's
sufficient statistics as a fixed-width vector of numbers). After all pairs, ``summarize``
turns the statistics of every row (a float64 matrix, one row per pair in stem order) into
the report's metric keys. Rows themselves are kept only when the report includes them, so
``--no-rows`` runs in memory proportional to the statistics (a few numbers per pair).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rpx_cli.io.filebuffer import FileBuffer

if TYPE_CHECKING:
    import numpy as np

Params = Mapping[str, Any]
Warn = Callable[[str, str], None]  # (warning kind, path)


@dataclass(frozen=True)
class Option:
    """A task parameter as a command-line flag (the CLI builds click options from these).

    ``kind``: ``float``, ``int``, ``str``, ``flag``, ``file`` (an existing file), ``choice``
    (one of ``choices``) or ``parsed``
    (``parse`` turns the text into the value and raises ``ValueError`` with a message for a
    bad one). ``multiple`` flags repeat and give a tuple. ``minimum`` (with ``open_min``)
    bounds numbers.
    """

    param: str
    flag: str
    kind: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    multiple: bool = False
    minimum: float | None = None
    open_min: bool = False
    parse: Callable[[str], Any] | None = None
    metavar: str | None = None


def probability(name: str) -> Callable[[str], float]:
    """A ``parse`` for an :class:`Option` whose value must lie in [0, 1]."""
    def parse(text: str) -> float:
        value = float(text)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {text}")
        return value
    return parse


@dataclass(frozen=True)
class MetricInfo:
    """How to read a metric: which way is better, and what it is."""

    direction: str  # "higher" | "lower" | "none"
    description: str

    def as_dict(self) -> dict[str, str]:
        return {"direction": self.direction, "description": self.description}


class Task:
    """Base class of the built-in tasks (and of third-party ones)."""

    name: ClassVar[str]
    report_schema: ClassVar[str]  # the report's ``schema`` value, e.g. "rpx.saliency-mb"
    suffixes: ClassVar[tuple[str, ...]]
    metrics: ClassVar[Mapping[str, MetricInfo]]
    default_missing: ClassVar[str] = "error"
    default_params: ClassVar[Mapping[str, Any]] = {}
    options: ClassVar[tuple[Option, ...]] = ()
    # how run_provenance names the two folders (coherence: mask_dir, depth_dir)
    input_names: ClassVar[tuple[str, str]] = ("pred_dir", "gt_dir")
    # input files that replace --pred-dir/--gt-dir (detection: --coco-gt/--coco-dt)
    file_inputs: ClassVar[tuple[Option, ...]] = ()
    help: ClassVar[str] = ""
    # --metrics: family -> (row/aggregate keys it holds, report sections it holds). A
    # skipped family's keys are left out of the report; a task may also skip its work.
    families: ClassVar[Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    # True: row_stats is a fixed-width vector of numbers, kept as one float64 matrix;
    # False: any picklable object per row, kept in a list (e.g. a sparse confusion matrix).
    vector_stats: ClassVar[bool] = True

    def normalise_params(self, params: Params) -> dict[str, Any]:
        """Parameters in the form recorded in the report's ``params`` (JSON types)."""
        return dict(params)

    def validate_params(self, params: Params) -> None:
        """Raise :class:`rpx_cli.errors.ParameterError` for a value the task cannot use."""

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Any:
        """Load one file (``role`` is ``"gt"`` or ``"pred"``)."""
        raise NotImplementedError

    def empty_prediction(self, gt: Any, params: Params) -> Any:
        """The prediction used for a missing file under ``--missing empty``."""
        raise NotImplementedError

    def evaluate(self, pred: Any, gt: Any, params: Params, *, pred_path: str | None,
                 gt_path: str) -> dict[str, Any]:
        """One row of metrics. Paths are for error messages only."""
        raise NotImplementedError

    def summarize_rows(self, stats: Any, params: Params) -> tuple[dict[str, Any], list[dict] | None]:
        """``(summary, per-row values)``: a task whose row values need every frame (vectorised
        matching across images) returns them here, in stem order; the default has none."""
        return self.summarize(stats, params), None

    def row_stats(self, row: dict[str, Any], params: Params) -> Sequence[float] | Any:
        """The row's sufficient statistics: with ``vector_stats``, numbers of one length for
        every row of a run; otherwise any picklable object."""
        raise NotImplementedError

    def summarize(self, stats: np.ndarray | list[Any], params: Params) -> dict[str, Any]:
        """Report keys from the statistics of all rows in stem order: a float64 matrix
        (n_rows, width) with ``vector_stats``, else the list of row objects."""
        raise NotImplementedError

    def encode_stats(self, stats: Any) -> Any:
        """Row statistics as JSON (a shard report's ``state``); exact for float64."""
        return stats.tolist() if hasattr(stats, "tolist") else list(stats)

    def decode_stats(self, encoded: Any) -> Any:
        """The inverse of :meth:`encode_stats`, for ``rpx merge``."""
        if self.vector_stats:
            import numpy as np

            array = np.asarray(encoded, dtype=np.float64)
            return array.reshape(len(encoded), -1) if len(encoded) else np.empty((0, 0))
        return list(encoded)

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        """Directions of every metric key the report will hold (band keys included)."""
        return dict(self.metrics)

    def warning_text(self, kind: str, paths: list[str]) -> str:
        return f"{kind}: {len(paths)} file(s), e.g. {paths[0]}"
