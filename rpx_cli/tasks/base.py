"""The task protocol: everything a task may provide, declared here with its default.

A task is a stateless object registered in :mod:`rpx_cli.tasks.registry`. The engine calls,
per pair and inside a worker process:

1. :meth:`Task.read` for the ground truth and the prediction (the only method that sees a
   path; it uses the readers in :mod:`rpx_cli.io`), or :meth:`Task.empty_prediction` for a
   missing prediction under ``--missing empty`` and for one that cannot be read;
2. :meth:`Task.evaluate`, a pure function of the loaded data returning a :class:`Sample`:
   the public row of metrics and the values of the statistics the task declared by name
   (:meth:`Task.statistics`, :class:`~rpx_cli.tasks.stats.Stat`).

After all pairs, :meth:`Task.summarize` turns the :class:`~rpx_cli.tasks.stats.StatTable`
of every evaluated pair (rows in stem order) into the report's sections (``aggregate``,
``dataset``, or the task's own top-level keys). Because the statistics are all the summary
needs, ``--shard`` parts, ``rpx merge`` and ``--jobs`` give the same numbers, and rows are
kept only when the report includes them (``--no-rows`` memory is the statistics').

Everything else (flags, metric directions, metric families, the primary metric of strata,
the report kind and its JSON Schema additions, input files that replace the folders, what
people see first: headline figures, the metric the worst rows are ranked by, the metrics
charted per band) is declared as class attributes; the CLI, the schemas, ``rpx metrics``,
the golden tests and the human views (:mod:`rpx_cli.report.declared`) are generated from
them. ``docs/architecture.md`` walks through adding a task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rpx_cli.errors import SWAP_HINT, PairError
from rpx_cli.io.discover import Pair, Pairing
from rpx_cli.io.filebuffer import FileBuffer
from rpx_cli.params.option import Option
from rpx_cli.params.parsers import parse_band, probability
from rpx_cli.params.values import Band, Threshold
from rpx_cli.tasks.stats import Stat, StatTable

# Option and probability are re-exported: a plugin task declares its options from here
__all__ = ["SWAP_HINT", "Band", "Evaluated", "FileInput", "Listing", "MetricInfo", "Option", "PairsRead",
           "Params", "Sample", "SetInput", "Task", "Warn", "probability", "shape_text"]

Params = Mapping[str, Any]
Warn = Callable[[str, str], None]  # (warning kind, path)

@dataclass(frozen=True)
class Evaluated:
    """What a run evaluated, as every human view names it (the page's title, the stderr
    summary line, ``rpx show``, Markdown): ``title`` (``detection · masks ·
    LVIS``), the similarity its match thresholds are thresholds of (``measure``: ``IoU``,
    ``OKS``) and the detections per image its AP curves count (``max_dets``; None: the
    task has no such cap)."""

    title: str
    measure: str = "IoU"
    max_dets: int | None = None
    # a protocol's own AP view beside the COCO one (detection --protocol voc07): its
    # dataset section, its name, what its curves are drawn at, the per-class AP it charts
    view: str | None = None
    view_label: str = ""
    view_at: str = ""
    view_ap: str = "AP"


@dataclass(frozen=True)
class MetricInfo:
    """How to read a metric: which way is better, and what it is."""

    direction: str  # "higher" | "lower" | "none"
    description: str
    unit: str = ""  # "m", "rad", "m/s", "deg", "px", "dB" (pages label axes with it); "" unitless

    def as_dict(self) -> dict[str, str]:
        return {"direction": self.direction, "description": self.description}



@dataclass
class Sample:
    """What :meth:`Task.evaluate` returns for one pair: the public ``row`` (metric name ->
    number, None when undefined) and the values of the declared statistics by name
    (``stats``; None: they are keys of the row)."""

    row: dict[str, Any]
    stats: Mapping[str, Any] | None = None

    @property
    def values(self) -> Mapping[str, Any]:
        return self.row if self.stats is None else self.stats


@dataclass
class FileInput:
    """Inputs a task read from files that replace the two folders (:attr:`Task.file_inputs`,
    e.g. COCO files), one entry per stem. Either ``samples`` — (prediction, GT) pairs in the
    form ``read`` returns, evaluated like pairs read from folders — or, when the task can
    build its statistics faster in bulk, ``stats`` with the public ``rows`` values, and
    ``sample``: sample i's (prediction, GT) in the form ``read`` returns, built on demand,
    for the plugin calculators (a task that cannot give it refuses a run with plugins). A
    bad record is not the whole file's error: it is listed in ``errors`` (a bad prediction
    record scored as the sample's empty prediction, a bad GT record's sample left out), and
    ``--on-error`` decides (:func:`rpx_cli.run.files.run_file_evaluation`)."""

    stems: list[str]
    samples: list[tuple[Any, Any]] | None = None
    stats: StatTable | None = None
    rows: list[dict[str, Any]] | None = None
    sample: Callable[[int], tuple[Any, Any]] | None = None  # bulk: stem i's (pred, gt)
    params: dict[str, Any] | None = None  # added to the report's params (e.g. categories)
    warnings: list[str] | None = None
    # the files the rows name as pred_path/gt_path (default: the last and the first of
    # the task's file_inputs)
    pred_path: str | None = None
    gt_path: str | None = None
    # records that could not be read (the --on-error rule of folders, docs/usage.md): a sample
    # whose prediction record is bad is in ``stems`` with the empty prediction (its error
    # side "pred"); a sample whose GT record is bad is left out of ``stems`` (side "gt");
    # a record that names no sample has the stem "" (it is not evaluated)
    errors: list[PairError] = field(default_factory=list)


@dataclass
class SetInput:
    """One side of the pairs held by files of the whole set (detection's CVAT XML, Open
    Images CSV, VOC's per-class results files), read once before pairing
    (:meth:`Task.read_sets`): what the set says of each stem (``records``: stem -> a record
    :meth:`Task.given` turns into what :meth:`Task.read` returns) and the files read
    (``digests``: relative path -> sha256 hex when the side is a folder, the file's hex when
    it is one file) — what ``run_provenance`` digests for the side; ``path``: what rows name
    as the side's file (the one file read, else the folder; None: the path given)."""

    records: dict[str, Any]
    digests: dict[str, str] | str
    path: str | None = None


@dataclass
class PairsRead:
    """Every pair of a batch read at once in this process (:meth:`Task.read_pairs`), as
    the pair-by-pair path would have left them: the declared statistics (pair order), each
    pair's public row (``stem``, ``pred_path``, ``gt_path`` and the task's row values),
    the warnings the readers noted (kind -> paths) and the sha256 of every file read
    (role -> relative path -> 32 raw bytes)."""

    stats: StatTable
    rows: list[dict[str, Any]]
    warnings: dict[str, list[str]]
    digests: dict[str, dict[str, bytes]]


@dataclass
class Listing:
    """The pairs a task's input files list in its two folders (:meth:`Task.list_pairs`):
    ``pairing`` (stem order; each :class:`~rpx_cli.io.discover.Pair` carries its ``entry``,
    what the files say about it, handed to :meth:`Task.join` in the worker) and ``params``
    added to the report's params (e.g. the categories the files define)."""

    pairing: Pairing
    params: dict[str, Any] | None = None


class Task:
    """Base class of every task: each hook has its default here, so the engine, the run
    layer and the CLI never probe for attributes."""

    # --- identity and report kind ------------------------------------------------------
    name: ClassVar[str]
    help: ClassVar[str] = ""  # one line: rpx eval --help, rpx --help, the schema's description
    details: ClassVar[str] = ""  # more paragraphs for the command's --help
    formats: ClassVar[str] = ""
    """The input files in a few lines, shown under "Input formats" by ``rpx eval TASK
    --help``: what one file per stem holds on each side (suffixes, JSON fields, columns,
    units), and any input flags that replace the folders. Every ``rpx eval`` task declares
    it (a test checks); lines of at most ~100 characters, no blank line."""
    example: ClassVar[str] = ""
    """The ``--help`` examples, one command line per line (a trailing backslash continues
    one): they must run as written from the repository root on the committed fixtures, and
    a test runs every one of them (``| jq ...`` welcome). A task without one has none."""
    # the report's ``schema`` value: "rpx.eval" (an ``rpx eval`` subcommand) or a kind of
    # its own (then a top-level command of the same name, e.g. "rpx.saliency-mb")
    report_schema: ClassVar[str] = "rpx.eval"
    # JSON Schema additions for this task's reports: top-level properties, the ones always
    # present in a full (not --shard) report, and the properties of a row
    report_properties: ClassVar[Mapping[str, Any]] = {}
    report_required: ClassVar[tuple[str, ...]] = ()
    row_properties: ClassVar[Mapping[str, Any]] = {}
    row_required: ClassVar[tuple[str, ...]] = ()
    # every key a full report always writes, by section: "rows" (every row), "aggregate",
    # "dataset" ("" for the section itself, e.g. {"dataset": ("", "miou")}); a key a
    # --metrics family holds is required only when the family ran. The schema requires them.
    always: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    # --- inputs -------------------------------------------------------------------------
    suffixes: ClassVar[tuple[str, ...]] = ()
    # the file an array given to Evaluator.update stands for (tracking: MOT text's rows)
    array_suffix: ClassVar[str] = ".npy"
    default_missing: ClassVar[str] = "error"
    # how run_provenance names the two folders (coherence: mask_dir, depth_dir)
    input_names: ClassVar[tuple[str, str]] = ("pred_dir", "gt_dir")
    # the --help of the two folder flags (named from input_names: --pred-dir, --mask-dir, ...)
    input_help: ClassVar[tuple[str, str]] = ("Folder of predictions.", "Folder of ground truth.")
    # input files that replace --pred-dir/--gt-dir (detection: --coco-gt/--coco-dt); the
    # task reads them in :meth:`read_files`
    file_inputs: ClassVar[tuple[Option, ...]] = ()
    # folders read besides the two, paired by the same stems (kind "dir" options, e.g. point
    # clouds for per-point labels): each stem's file is read with ``role`` = the option's
    # param and handed to :meth:`attach`; provenance digests them like the two folders
    aux_inputs: ClassVar[tuple[Option, ...]] = ()
    # --pred-dir/--gt-dir may name a file: a file that holds the whole set (detection's CVAT
    # XML, Open Images CSV), read by read_sets
    inputs_may_be_files: ClassVar[bool] = False
    # the file_inputs list the pairs of the two folders instead of replacing them (panoptic:
    # the JSON files name each image's PNG on each side and hold its segments): the run
    # pairs with :meth:`list_pairs` instead of by stem, and :meth:`join` gives each pair its
    # entry once its files are read — in the worker, like any pair of files
    files_list_pairs: ClassVar[bool] = False
    # a pair is a folder of files on each side (tracking3d: a scene's samples,
    # <scene>/<sample>.json): the stem is the folder's path, every file is read with read()
    # (and digested like any file) and each side's values handed to combine()
    folder_pairs: ClassVar[bool] = False

    # --- parameters ---------------------------------------------------------------------
    # the task's parameters, one declaration each (rpx_cli.params.Option): the CLI flags,
    # the Python API keywords, the Evaluator's arguments, rpx.toml keys and default_params
    # all come from them, and every value is checked by Option.convert
    options: ClassVar[tuple[Option, ...]] = ()

    # --- metrics ------------------------------------------------------------------------
    metrics: ClassVar[Mapping[str, MetricInfo]] = {}
    # the metric `--manifest` strata use unless --primary-metric says otherwise
    primary_metric: ClassVar[str | None] = None
    # the figures a reader looks at first, most important first, as dotted report paths
    # ("dataset.coco.AP"): the summary line, the page's headline cards, and first among the
    # top-level figures of `rpx show` (empty: the report's own order)
    headline: ClassVar[tuple[str, ...]] = ()
    # the row metric the page's worst rows are ranked by, worst first by its direction in
    # `metric_info` (rows with a `confidence` break ties most confident first: the mistakes a
    # model is surest of); None: primary_metric (else the first row metric with a direction)
    rank_metric: ClassVar[str | None] = None
    # the metrics the page charts per range band (`bands`), one chart each, in this order
    band_metrics: ClassVar[tuple[str, ...]] = ()
    # the row keys holding a row's true and predicted label (text), when rows have them: the
    # page's worst rows show them as "true → predicted"
    row_labels: ClassVar[tuple[str, str] | None] = None
    # the pictures `rpx report` draws for this task's reports: a view of
    # rpx_cli/report/html_task_views.py by name (None: the generic view, which draws
    # per-class bars, a confusion matrix, the bands and the rank metric's distribution
    # wherever the report has them)
    page_view: ClassVar[str | None] = None
    # --metrics: family -> (row/aggregate keys it holds, report sections it holds). A
    # skipped family's keys are left out of the report; a task may also skip its work.
    families: ClassVar[Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    # families that run only when ``--metrics`` names them (costly views nobody needs by default)
    optional_families: ClassVar[tuple[str, ...]] = ()
    # the statistics kept per pair (see rpx_cli.tasks.stats); statistics() may vary them
    stats: ClassVar[tuple[Stat, ...]] = ()
    # a pair typically takes tens of milliseconds or more (a sequence, a large image): the
    # default --jobs then starts its workers at once instead of timing the first pairs
    heavy_pairs: ClassVar[bool] = False
    # summarize an empty --shard part too (a kind whose schema requires its keys)
    summarize_empty: ClassVar[bool] = False

    @property
    def default_params(self) -> dict[str, Any]:
        """Every option at its default (the declarations' defaults)."""
        return {option.param: option.default for option in self.options}

    def normalise_params(self, params: Params) -> dict[str, Any]:
        """Parameters in the form recorded in the report's ``params`` (JSON types), from the
        options' converted values (every option present): what depends on several options
        (a protocol's conventions, class names read from a file) is settled here."""
        return dict(params)

    def validate_params(self, params: Params) -> None:
        """Raise :class:`rpx_cli.errors.ParameterError` for a value the task cannot use."""

    def check_in_memory(self, params: Params) -> None:
        """Raise :class:`rpx_cli.errors.ParameterError` for parameters that samples given in
        memory (the ``Evaluator``) cannot serve — before any sample. Default: none."""

    def settle_inputs(self, params: Params, inputs: Mapping[str, str | None]) -> dict[str, Any]:
        """``params`` with what the inputs decide, before they are paired: ``inputs`` is
        ``{"pred": folder, "gt": folder}`` (None for in-memory samples, the ``Evaluator``).
        Detection decides ``--pred-format``/``--gt-format auto`` here by sniffing each
        folder's files. Default: ``params`` as they are."""
        return dict(params)

    def read_sets(self, params: Params, inputs: Mapping[str, str]) -> dict[str, SetInput]:
        """The sides (``"pred"``, ``"gt"``) of ``inputs`` (role -> the path given, a folder
        or a file) held by files of the whole set, read now, before pairing (under
        ``params`` settled by :meth:`settle_inputs`): the run pairs their stems with the
        other side's files (a GT set lists the images; a prediction set covers every image,
        so an image it has nothing on has no detection) and hands each pair its records
        (:meth:`given`). Default: none (every side a folder of one file per stem)."""
        return {}

    def read_pairs(self, pairs: Sequence[Pair], params: Params) -> PairsRead | None:
        """Every pair of ``pairs`` (local files, stem order) read and scored at once in this
        process, when the task does it faster so than pair by pair (detection: thousands of
        small label files parsed together into one table); the same statistics, rows,
        warnings and digests as :meth:`read` and :meth:`evaluate` pair by pair. None (the
        default, and whenever a file needs a closer look — a malformed one's error is the
        pair-by-pair path's): the engine reads pair by pair."""
        return None

    def given(self, record: Any, path: str, params: Params, warn: Warn, *, role: str = "gt",
              stem: str = "") -> Any:
        """What :meth:`read` returns for ``record``, what a side read by :meth:`read_sets`
        says of the pair's ``stem`` (``path``: that side's file or folder, for messages);
        ``warn`` as for :meth:`read`. Default: the record as it is."""
        return record

    def suffixes_for(self, params: Params, role: str) -> tuple[str, ...]:
        """The suffixes of the files read on side ``role`` (``"pred"`` or ``"gt"``) under
        ``params`` (settled by :meth:`settle_inputs`): each side is paired by its own
        (detection: the side's format's). Default: :attr:`suffixes`."""
        return tuple(self.suffixes)

    def bands(self, params: Params) -> list[Band]:
        """The range bands of ``params`` (the values of the option parsed as bands,
        ``--range``), in the order given; every banded key is ``band.key(name)``."""
        for option in self.options:
            if option.parse is parse_band:
                return [Band.of(value) for value in params.get(option.param) or ()]
        return []

    def thresholds(self, params: Params) -> list[Threshold]:
        """The match thresholds whose keys the report holds (``AP_0p5m``, the curves of
        ``dataset.curves.<class>.<token>``), in order; the page labels them by these."""
        return []

    def operating_threshold(self, params: Params) -> Threshold | None:
        """The threshold the rows and the per-class errors are taken at (the page draws the
        errors against recall there), when it is one of :meth:`thresholds`."""
        return None

    def family_choice(self, params: Params) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(the --metrics families a run with these options can choose, those it runs by
        default)``; ``params``: the options' converted values. Default: every family, all
        but :attr:`optional_families` by default (detection: its protocol decides)."""
        names = tuple(self.families)
        return names, tuple(name for name in names if name not in self.optional_families)

    def accepts_family(self, family: str, params: Params) -> bool:
        """Whether a run with these ``params`` (a report's) could add metric family
        ``family`` with ``--metrics``: what a page may suggest. Default: it is one of
        :meth:`family_choice`'s."""
        return family in self.family_choice(params)[0]

    def evaluated(self, params: Mapping[str, Any]) -> Evaluated:
        """What a run with these ``params`` (a report's) evaluated, as the views name it
        (default: the task's name; detection adds its similarity kind and protocol)."""
        return Evaluated(self.name)

    def headline_for(self, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The :attr:`headline` of a report whose ``params`` are these (detection: its
        protocol's figures first). Default: :attr:`headline`."""
        return self.headline

    def headline_variants(self) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        """Every headline a report can have, each with the ``params`` values that choose it
        (``{}``: any report): what the schema requires of a full report."""
        return [({}, self.headline)]

    def family_keys(self, family: str, params: Params) -> set[str]:
        """The row and ``aggregate`` keys of metric family ``family`` under ``params``: its
        declared keys, and each of them per band (``absrel`` and ``absrel_0m_2m``)."""
        keys = self.families[family][0]
        return {*keys, *(band.key(key) for band in self.bands(params) for key in keys)}

    def metric_info(self, params: Params) -> dict[str, MetricInfo]:
        """Directions of every metric key the report will hold (band keys included)."""
        return dict(self.metrics)

    def statistics(self, params: Params) -> tuple[Stat, ...]:
        """The statistics kept per pair under ``params`` (default: :attr:`stats`)."""
        return self.stats

    # --- per pair (in a worker process) ---------------------------------------------------

    def read(self, path: str, buffer: FileBuffer, params: Params, warn: Warn, *,
             role: str = "gt") -> Any:
        """Load one file (``role`` is ``"gt"`` or ``"pred"``); ``warn(kind, path)`` notes a
        warning for stderr (see :meth:`warning_text`)."""
        raise NotImplementedError

    def empty_prediction(self, gt: Any, params: Params) -> Any:
        """The prediction that predicts nothing, for ``gt``: a missing file under ``--missing
        empty``, and a prediction that cannot be read or evaluated (``--on-error skip``
        scores it so: a model never gains by breaking a prediction). Every task needs it."""
        raise NotImplementedError(f"task {self.name} defines no empty_prediction (needed by "
                                  "--missing empty and for a prediction that cannot be read)")

    def prediction_size(self, gt: Any, params: Params) -> tuple[tuple[int, int], int] | None:
        """How large a prediction map of ``gt`` may be: the GT map's ``(H, W)`` and how many
        times its pixels (1: the GT's size), or None. The engine reads the prediction within
        that budget, and a decoder whose header declares more refuses it before inflating
        anything (:mod:`rpx_cli.io.budget`)."""
        return None

    def evaluate(self, pred: Any, gt: Any, params: Params, *, pred_path: str | None,
                 gt_path: str) -> Sample:
        """One pair's row and statistics. Paths are for error messages only."""
        raise NotImplementedError

    def attach(self, gt: Any, aux: Mapping[str, Any], params: Params) -> Any:
        """The ground truth with the pair's auxiliary inputs (``aux_inputs`` param -> what
        :meth:`read` returned for it) joined, as :meth:`evaluate` wants it."""
        return gt

    def list_pairs(self, files: Mapping[str, str], pred_dir: str, gt_dir: str, params: Params, *,
                   missing: str) -> Listing:
        """With :attr:`files_list_pairs`: the pairs the :attr:`file_inputs` (option name ->
        path) list in the two folders, under ``--missing`` (``error``: raise
        :class:`~rpx_cli.errors.EvaluationFailed` naming every unpaired entry)."""
        raise NotImplementedError(f"{self.name} pairs folders by stem")

    def join(self, pred: Any, gt: Any, entry: Any, params: Params, *,
             prediction: bool = True) -> tuple[Any, Any]:
        """A listed pair's prediction and GT (as :meth:`read` returned them, or
        :meth:`empty_prediction`) with its ``entry`` from :meth:`list_pairs`, as
        :meth:`evaluate` wants them. ``prediction`` False: ``pred`` is the empty prediction
        (a missing or unreadable file): the entry's prediction side is not joined to it."""
        return pred, gt

    def combine(self, values: list[tuple[str, Any]], params: Params, *, role: str,
                path: str) -> Any:
        """With :attr:`folder_pairs`: one side of a pair from what :meth:`read` returned for
        each of its files (``(name within the folder, value)``, in name order; ``path`` is
        the folder, for messages)."""
        raise NotImplementedError(f"{self.name} pairs files, not folders")

    def read_files(self, files: Mapping[str, str], params: Params) -> FileInput:
        """Read the :attr:`file_inputs` (option name -> path) given instead of folders."""
        raise NotImplementedError(f"{self.name} reads folders only")

    # --- the page's pictures of a worst frame (--keep-worst; rpx_cli/run/pictures.py) ---------

    # frame_overlays draws something: the worst frames' files are read again for it
    draws_overlays: ClassVar[bool] = False

    def frame_overlays(self, pred: Any, gt: Any, params: Params) -> dict[str, tuple[Any, bool]]:
        """What the page lays over one of the worst frames (its image, when
        ``--images-dir`` has one): name -> ``(rgba, smooth)``, an ``uint8`` H x W x 4 array
        at the frame's resolution (transparent where there is nothing to say) and whether
        it is shrunk smoothly (an error map) or by nearest neighbour (labels)."""
        return {}

    # --- over all pairs -----------------------------------------------------------------------

    def summarize(self, stats: StatTable, params: Params) -> dict[str, Any]:
        """Report sections from the statistics of every pair (rows in stem order)."""
        raise NotImplementedError

    def summarize_rows(self, stats: StatTable,
                       params: Params) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
        """``(sections, per-row values)``: a task whose row values need every pair at once
        (detection matches all images in one vectorised pass) returns them here, in stem
        order, to be merged into the rows; the default has none."""
        return self.summarize(stats, params), None

    def warning_text(self, kind: str, paths: list[str]) -> str:
        """One stderr line for the files that raised warning ``kind``."""
        return f"{kind}: {len(paths)} file(s), e.g. {paths[0]}"

    def warning_lines(self, warnings: Mapping[str, list[str]]) -> list[str]:
        """The stderr lines of a run's per-file warnings (kind -> files, every kind the
        pairs raised): one :meth:`warning_text` per kind. A task whose kinds only mean
        something together (GT that looks like predictions *and* predictions that look
        like GT) combines them here."""
        return [self.warning_text(kind, paths) for kind, paths in sorted(warnings.items())]

    # --- derived ------------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        """The report kind (``rpx schema KIND``): ``eval`` or the task's own."""
        return self.report_schema.removeprefix("rpx.")

    @property
    def command(self) -> tuple[str, ...]:
        """How the task is run: ``("eval", name)`` or its own top-level command."""
        return ("eval", self.name) if self.report_schema == "rpx.eval" else (self.kind,)


def shape_text(array: Any) -> str:
    """``WxH`` (or ``WxHxC``) for messages about image-like arrays."""
    shape = tuple(array.shape)
    if len(shape) == 2:
        return f"{shape[1]}x{shape[0]}"
    if len(shape) == 3:
        return f"{shape[1]}x{shape[0]}x{shape[2]}"
    return str(shape)
